"""pynq-rl: reinforcement-learning kernels in the fabric of Zynq boards, driven from Python.

The face of the package: :class:`RLOverlay` (the overlay, on a board or emulated) and ``__version__``.
Everything else lives in :mod:`pynq_rl.overlay` (hardware side) and :mod:`pynq_rl.host` (runtime).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pynq-rl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0+unknown"

from .host.overlay import RLOverlay

__all__ = ["RLOverlay", "__version__"]
