"""Emulated PYNQ devices: ``emu`` (bit-exact numpy models) and ``rtl`` (MyHDL simulation)."""
