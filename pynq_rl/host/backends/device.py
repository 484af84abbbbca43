"""The emulated PYNQ device: a ``pynq.Device`` that serves an overlay's register and DMA traffic in software.

Like a board's device it has the ``MEMORY_MAPPED`` capability: ``pynq.MMIO`` asks it to ``mmap`` each IP's window
and gets a ``RegisterWindow`` (``register_window.py``), a word view whose every access is one call to
:meth:`EmulatedDevice.read_words` / :meth:`EmulatedDevice.write_words`, so the drivers run the board's MMIO code
(``mmio.array`` indexing, burst slice assignments). ``read_registers`` / ``write_registers``, the ``REGISTER_RW``
hook PYNQ's own test suite mocks hardware with (``tests/mock_devices.py``), serve the same traffic. Above it,
``pynq.Overlay`` parses the generated ``.hwh`` with the parser the board uses, binds drivers by VLNV, and the
stock ``pynq.lib.dma.DMA`` drives the AXI DMA register model; below it, each AXI-Lite window of the board's address
map (``spec.py``) is routed to an emulated IP. Backends differ only in the core IPs they plug in (``emu``: the
numpy models; ``rtl``: the MyHDL simulation).

Works with pynq 3.0.1, 3.1.2 and 4.0.0 (all three checked): metadata comes from
``pynq.metadata.runtime_metadata_parser`` where it exists (pynq 3.x carries its own views) and
``pynqmetadata.views.runtime`` otherwise, and ``pynq.ps.Clocks`` gets a
stand-in that accepts both the 3.x (dividers) and the 4.0 (``clk_mhz``) calls.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from pathlib import Path

import pynq
from pynq.ps import Clocks

from ...overlay import spec as S
from ...overlay.build import hwh as hwh_build
from .axi_dma import AxiDmaModel, StreamEndpoint
from .bus import BusStats
from .memory import DDR_WINDOWS, EmulatedMemory
from .regfile import RegisterFile
from .register_window import RegisterWindow

__all__ = ["EmulatedDevice", "EmulatedClocks"]


def _metadata_parser(hwh_path: Path):
    """Parse a ``.hwh`` with the runtime parser of whichever pynq/pynqmetadata is installed."""
    from pynqmetadata.frontends import Metadata

    try:
        from pynq.metadata.runtime_metadata_parser import RuntimeMetadataParser
    except ImportError:  # pynq 4.0 moved the views into pynqmetadata
        from pynqmetadata.views.runtime import RuntimeMetadataParser
    return RuntimeMetadataParser(Metadata(input=str(hwh_path)))


class EmulatedClocks:
    """Stand-in for ``pynq.ps.Clocks``' per-architecture instance: remembers the PL clocks it is asked for."""

    def __init__(self, fclk_mhz: float, source_mhz: float = 1000.0) -> None:
        self.pl_mhz = {0: fclk_mhz, 1: 100.0, 2: 100.0, 3: 100.0}
        self.source_mhz = source_mhz

    def set_pl_clk(self, clk_idx: int, div0=None, div1=None, clk_mhz=None) -> None:
        """Record clock ``clk_idx``'s new rate (dividers of the ``source_mhz`` PLL, or ``clk_mhz``)."""
        if div0 is not None and div1 is not None:
            self.pl_mhz[clk_idx] = self.source_mhz / (div0 * div1)
        elif clk_mhz is not None:
            self.pl_mhz[clk_idx] = float(clk_mhz)

    def get_pl_clk(self, clk_idx: int) -> float:
        """Rate of PL clock ``clk_idx`` in MHz."""
        return self.pl_mhz[clk_idx]

    def get_cpu_mhz(self) -> float:
        """The emulated CPU clock (the Zynq-7020's 650 MHz)."""
        return 650.0


class EmulatedDevice(pynq.Device):
    """A board of ``board_spec`` whose programmable logic is emulated by IP models.

    Parameters
    ----------
    board_spec : BoardSpec
        The board whose overlay (address map, cores) is emulated.
    make_core : callable
        ``make_core(slot) -> RegisterFile`` builds the emulated IP of one core slot; it must also implement the
        stream endpoints of ``axi_dma.StreamEndpoint``.
    tag : str
        Device tag (``pynq.Device`` requires a unique string).

    Raises
    ------
    TypeError
        If an IP ``make_core`` builds has no ``stream_in``/``stream_out``.
    """

    def __init__(self, board_spec: S.BoardSpec, make_core: Callable[[S.CoreSlot], RegisterFile], tag: str) -> None:
        super().__init__(tag)
        self.board = board_spec
        self.name = board_spec.name
        self.arch = "armv7l" if board_spec.arch == "zynq" else "aarch64"
        self.capabilities = {"MEMORY_MAPPED": True, "REGISTER_RW": True}
        self.bus = BusStats()
        """every register access and DMA transfer since the device was made (see :mod:`.bus`)"""
        self.memory = EmulatedMemory(self, *DDR_WINDOWS[board_spec.arch])
        self.timestamp = ""
        self.bitfile_name = None
        self.cores: dict[str, RegisterFile] = {}
        self.dmas: dict[str, AxiDmaModel] = {}
        self._windows: list[tuple[int, int, RegisterFile]] = []
        for slot in board_spec.cores:
            core = make_core(slot)
            if not isinstance(core, StreamEndpoint):
                raise TypeError(f"the IP of core {slot.name!r} ({type(core).__name__}) has no stream_in/stream_out")
            dma = AxiDmaModel(self.memory, core)
            self.cores[slot.name], self.dmas[slot.name] = core, dma
            self._windows.append((board_spec.gp_base + slot.core_offset, slot.window, core))
            self._windows.append((board_spec.gp_base + slot.dma_offset, slot.window, dma))
        self._windows.sort(key=lambda w: w[0])
        self._window_starts = [w[0] for w in self._windows]
        self.clocks = EmulatedClocks(board_spec.fclk_mhz, hwh_build.PL_CLOCK_SOURCE_MHZ[board_spec.arch])

    # -- files and programming ------------------------------------------------------------------------------------
    def overlay_files(self, directory: str | Path | None = None) -> Path:
        """Write this board's generated ``.hwh`` + empty ``.bit`` (to a per-user cache by default); return the .bit."""
        directory = hwh_build.emulation_directory(self.board) if directory is None else Path(directory)
        return hwh_build.write_overlay_files(self.board, directory)

    def get_bitfile_metadata(self, bitfile_name: str, partial: bool = False):
        """Parsed metadata of the ``.hwh`` beside ``bitfile_name`` (the board's path needs xclbinutil; this doesn't)."""
        hwh_path = Path(bitfile_name).with_suffix(".hwh")
        if not hwh_path.is_file():
            raise RuntimeError(f"Unable to find metadata for bitstream: no {hwh_path}")
        parser = _metadata_parser(hwh_path)
        if hasattr(parser, "refresh_hierarchy_dict"):
            parser.refresh_hierarchy_dict()
        return parser

    def download(self, bitstream, parser=None) -> None:
        """'Program' the emulated PL: every IP back to reset, then PYNQ's bookkeeping (timestamp, dictionaries)."""
        for _, _, ip in self._windows:
            ip.reset()
        self.post_download(bitstream, parser)
        bitstream.timestamp = self.timestamp

    def install_clocks(self) -> None:
        """Route ``pynq.ps.Clocks`` to :class:`EmulatedClocks` (off-board only; a board keeps its real clocks)."""
        Clocks.device = self
        Clocks._real_instance = self.clocks

    # -- memory ---------------------------------------------------------------------------------------------------
    def allocate(self, shape, dtype, **kwargs):
        """A buffer in the emulated DDR (physical address included), as ``pynq.allocate`` returns on a board."""
        return self.memory.allocate(shape, dtype, **kwargs)

    def flush(self, bo, offset, vaddr, nbytes) -> None:
        """Cache flush: nothing to do, the emulated DMA reads the host's memory directly."""

    def invalidate(self, bo, offset, vaddr, nbytes) -> None:
        """Cache invalidate: nothing to do, the emulated DMA writes the host's memory directly."""

    # -- register traffic -----------------------------------------------------------------------------------------
    def _window(self, address: int, nbytes: int) -> tuple[int, RegisterFile]:
        index = bisect.bisect_right(self._window_starts, address) - 1
        if index >= 0:
            base, size, ip = self._windows[index]
            if address + nbytes <= base + size:
                return base, ip
        raise MemoryError(f"AXI decode error: no IP at [{address:#x}, {address + nbytes:#x})")

    def mmap(self, base_addr: int, length: int) -> RegisterWindow:
        """The word view ``pynq.MMIO`` uses as its ``array`` for ``[base_addr, base_addr + length)``.

        The device has the ``MEMORY_MAPPED`` capability, as a board does, so ``MMIO`` runs the board's code path
        and each access is one call to :meth:`read_words` / :meth:`write_words` of the IP decoded here, once.
        """
        base, ip = self._window(base_addr, length)
        return RegisterWindow(self, ip, length // 4, base_addr - base)

    def read_words(self, ip: RegisterFile, offset: int, count: int) -> list[int]:
        """``count`` register words of ``ip`` from byte ``offset`` (one host call of ``count`` bus reads)."""
        self.bus.count_read(count)
        return [ip.read(offset + 4 * i) for i in range(count)]

    def write_words(self, ip: RegisterFile, offset: int, words: list[int]) -> None:
        """Write ``words`` to ``ip`` from byte ``offset`` (one burst: one host call, its words counted one by one);
        then let the DMAs move whatever can move."""
        is_dma = isinstance(ip, AxiDmaModel)
        self.bus.count_burst()
        for i, value in enumerate(words):
            ip.write(offset + 4 * i, value)
            self.bus.count_write(1, offset + 4 * i if is_dma else None, value)
        self.service()

    def read_registers(self, address: int, length: int) -> bytes:
        """Bus reads of ``length`` bytes (whole words) at ``address`` (``pynq.Device``'s ``REGISTER_RW`` call)."""
        base, ip = self._window(address, length)
        words = self.read_words(ip, address - base, -(-length // 4))
        return b"".join(w.to_bytes(4, "little") for w in words)[:length]

    def write_registers(self, address: int, data: bytes) -> None:
        """Bus writes of ``data`` (whole words) at ``address`` (``pynq.Device``'s ``REGISTER_RW`` call)."""
        if len(data) % 4:
            raise MemoryError(f"unaligned register write of {len(data)} bytes at {address:#x}")
        base, ip = self._window(address, len(data))
        self.write_words(
            ip, address - base, [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]
        )

    def service(self) -> None:
        """Advance every DMA until nothing moves (the emulated PL is infinitely fast between bus accesses)."""
        busy = [dma for dma in self.dmas.values() if dma.busy]
        while busy and any([dma.service() for dma in busy]):
            busy = [dma for dma in busy if dma.busy]
