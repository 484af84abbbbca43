"""Bit-exact numpy models of the cores: the arithmetic contract (import only numpy)."""
