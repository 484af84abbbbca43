"""The GAE core (HEPPO) in MyHDL: the processing element (``pe``) and the LANES-wide core (``core``)."""
