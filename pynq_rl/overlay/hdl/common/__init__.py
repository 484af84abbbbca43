"""Building blocks every core reuses: block RAM, saturating arithmetic, AXI-Lite register file, AXI-Stream ports."""
