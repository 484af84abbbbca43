"""``RLOverlay``: the pynq-rl overlay on a board, or emulated, behind one ``pynq.Overlay`` subclass.

Backends (DESIGN.md section 1):

* ``"board"``: the real PL. Loads ``overlay/bitstreams/<board>/pynq_rl.bit`` (+ ``.hwh``) for the board PYNQ
  reports. The default on a PYNQ board.
* ``"emu"``: an :class:`~pynq_rl.host.backends.emu.EmuDevice` serves the overlay described by the ``.hwh``
  generated from ``spec.py``; cores are the bit-exact numpy models. The default everywhere else.
* ``"rtl"``: an :class:`~pynq_rl.host.backends.rtl.RtlDevice`: the same, but the cores are the MyHDL designs
  simulated cycle by cycle behind AXI-Lite / AXI-Stream bus models (slow: keep batches small).

``PYNQ_RL_BACKEND`` overrides the default. Whatever the backend, every core's ID register is checked against
``spec.py`` when the overlay loads, and a stale bitstream is refused with the command that rebuilds it.
"""
from __future__ import annotations

import os
from pathlib import Path

import pynq

try:
    from pynq.ps import ON_TARGET
except ImportError:  # pynq 3.0 lacks it; 3.1 and 4.0 define it by this same test
    ON_TARGET = os.path.isfile("/proc/device-tree/chosen/pynq_board")

from ..overlay import spec as S
from ..overlay.build.hwh import OVERLAY_STEM
from .drivers.gae import GaeCore
from .drivers.parsa import ParsaCore
from .drivers.replay import ReplayCore
from .drivers.identity import check_identity

__all__ = ["RLOverlay", "BACKENDS", "default_backend"]

BACKENDS = ("board", "emu", "rtl")
#: Where board bitstreams live: ``<board, lower case>/pynq_rl.bit`` + ``.hwh`` (shipped as package data).
BITSTREAM_DIR = Path(S.__file__).resolve().parent / "bitstreams"


#: Where a PYNQ image records its board name (the file ``pynq.ps.ON_TARGET`` tests for), e.g. ``Pynq-Z2``.
BOARD_NAME_FILE = Path("/proc/device-tree/chosen/pynq_board")


def board_name(device=None) -> str | None:
    """The name of the board PYNQ runs on, for finding its bitstream.

    ``device.name`` when it names a supported board (an emulated or remote device reports the board), else the
    image's ``/proc/device-tree/chosen/pynq_board``, else ``$BOARD`` (PYNQ images set both; a Zynq board's
    ``EmbeddedDevice.name`` is XRT's device name, not the board's). An unsupported name is returned as found, so
    ``spec.board`` can name the supported ones; None if nothing names a board.
    """
    name = getattr(device, "name", None)
    if name and any(name.lower() == key.lower() for key in S.BOARDS):
        return name
    if BOARD_NAME_FILE.is_file():
        return BOARD_NAME_FILE.read_bytes().decode(errors="replace").strip("\x00 \n") or None
    return os.environ.get("BOARD") or None


def default_backend() -> str:
    """``$PYNQ_RL_BACKEND`` if set, else ``"board"`` on a PYNQ board and ``"emu"`` elsewhere."""
    return os.environ.get("PYNQ_RL_BACKEND") or ("board" if ON_TARGET else "emu")



class RLOverlay(pynq.Overlay):
    """The pynq-rl overlay: the GAE, replay and ParSa cores of ``spec.BOARDS[board]``, each with its AXI DMA.

    Parameters
    ----------
    backend : {"board", "emu", "rtl"} or None
        Where the cores run; None picks :func:`default_backend`.
    board : str, BoardSpec or None
        Board whose overlay to load (``"Pynq-Z2"`` or ``"ZCU106"``, or a custom ``BoardSpec`` for an emulated or
        simulated build, e.g. a small one for fast ``rtl`` runs). On a board it defaults to the board PYNQ
        reports; elsewhere to ``spec.DEFAULT_BOARD``.
    bitfile : str or None
        ``board`` backend only: an explicit ``.bit`` path (its ``.hwh`` must sit beside it).
    download : bool
        Program the PL (emulated or real) on load.
    vcd : str or None
        ``rtl`` backend only: dump the simulation's waveforms to this path.

    Attributes
    ----------
    backend : str
        The backend in use.
    board_spec : BoardSpec
        The board's spec (address map, cores, build parameters).

    Raises
    ------
    ValueError
        Unknown backend or board.
    FileNotFoundError
        ``board`` backend without a bitstream for this board.
    RuntimeError
        A core's ID register does not match ``spec.py`` (a stale or foreign bitstream).
    """

    def __init__(self, backend: str | None = None, board: "str | S.BoardSpec | None" = None, bitfile: str | None = None,
                 download: bool = True, vcd: str | None = None, **kwargs) -> None:
        backend = default_backend() if backend is None else backend
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
        if backend == "board":
            try:
                device = pynq.Device.active_device
            except RuntimeError as error:  # pynq: "No Devices Found" off a board
                raise RuntimeError(f"backend 'board' needs a PYNQ board with its PL ({error}); off a board use "
                                   "backend 'emu' (bit-exact models) or 'rtl' (the MyHDL cores)") from error
            name = board or board_name(device)
            if name is None:
                raise ValueError("cannot tell which board this is (no /proc/device-tree/chosen/pynq_board, no "
                                 f"$BOARD): pass board=, one of {sorted(S.BOARDS)}")
            board_spec = S.board(name)
            if bitfile is None:
                bitfile = str(BITSTREAM_DIR / board_spec.name.lower() / f"{OVERLAY_STEM}.bit")
            if not Path(bitfile).is_file():
                raise FileNotFoundError(
                    f"no bitstream for {board_spec.name} at {bitfile}; build it on a machine with Vivado "
                    f"(overlay/bitstreams/README.md) or use backend='emu'")
        elif backend == "emu":
            from .backends.emu import EmuDevice
            board_spec = S.board(board)
            device = EmuDevice(board_spec)
            device.install_clocks()
            pynq.Device.active_device = device  # so user code's pynq.allocate() lands in the emulated DDR too
            bitfile = str(device.overlay_files())
        else:
            from .backends.rtl import RtlDevice
            board_spec = S.board(board)
            device = RtlDevice(board_spec, vcd=vcd)
            device.install_clocks()
            pynq.Device.active_device = device
            bitfile = str(device.overlay_files())
        self.backend = backend
        self.board_spec = board_spec
        super().__init__(bitfile, download=download, device=device, **kwargs)
        if download:
            for slot in board_spec.cores:
                mmio = pynq.MMIO(board_spec.gp_base + slot.core_offset, slot.window, device=device)
                check_identity(slot.name, mmio.read(S.CORE_REGISTERS[slot.name]["ID"]["address_offset"]))

    @property
    def gae(self) -> GaeCore:
        """The GAE core's driver (hierarchy ``gae``: ``gae/core`` with its DMA ``gae/dma``)."""
        return self._ip_map.gae.core

    @property
    def replay(self) -> ReplayCore:
        """The replay core's driver (hierarchy ``replay``: ``replay/core`` with its DMA ``replay/dma``)."""
        return self._ip_map.replay.core

    @property
    def parsa(self) -> ParsaCore:
        """The ParSa core's driver (hierarchy ``parsa``: ``parsa/core`` with its DMA ``parsa/dma``)."""
        return self._ip_map.parsa.core

    def info(self) -> dict:
        """Backend, board, PL clock and, per core, its ID and build parameters as the registers report them."""
        cores = {}
        for slot in self.board_spec.cores:
            driver = getattr(self, slot.name)
            cores[slot.name] = driver.info()
        return {"backend": self.backend, "board": self.board_spec.name, "fclk_mhz": self.board_spec.fclk_mhz,
                "bitfile": self.bitfile_name, "cores": cores}
