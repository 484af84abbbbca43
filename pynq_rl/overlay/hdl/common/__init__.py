"""Building blocks every core reuses: block RAM, saturating arithmetic, the DSP-shaped multiply-add and its pipeline
stages, AXI-Lite register file, AXI-Stream ports."""
