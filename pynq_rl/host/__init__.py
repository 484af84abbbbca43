"""The runtime on the board's ARM cores: overlay, drivers, backends and agents."""
