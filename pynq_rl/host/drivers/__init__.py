"""Drivers of the pynq-rl cores (``pynq.DefaultIP`` subclasses bound by VLNV).

Importing this package registers them with PYNQ (the ``pynq.lib`` entry point points here).
"""

from .gae import GaeCore, GaeSaturationWarning
from .identity import BitstreamMismatchError
from .parsa import ParsaCore, ParsaSaturationWarning
from .replay import ReplayCore, ReplaySaturationWarning

__all__ = [
    "GaeCore",
    "GaeSaturationWarning",
    "ReplayCore",
    "ReplaySaturationWarning",
    "ParsaCore",
    "ParsaSaturationWarning",
    "BitstreamMismatchError",
]
