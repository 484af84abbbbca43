"""The ``verilator`` backend: the converted Verilog of each core, compiled by Verilator, behind the emulated device.

What Vivado turns into the bitstream is the Verilog ``pynq-rl build verilog`` writes; this backend runs exactly that
file, at the board's build sizes, about a thousand times faster than the MyHDL simulation of ``rtl``. Each core's
Verilog is compiled with a C++ harness (``verilator_harness.cpp``) into a shared library (:mod:`.verilator_build`:
built on first use, cached), loaded here with :mod:`ctypes`. The harness owns the clock: an AXI4-Lite access, or a
whole AXI4-Stream transfer in both directions, is one call from Python, however many cycles it takes.

The semantics are the ``rtl`` backend's (:mod:`.rtl`, :mod:`.clocked`), cycle for cycle: the harness replays the
same bus handshakes, the board's cores share one clock (each model is kept in step lazily: before any call, a core
idles up to the board's cycle count, which is what it would have done while another core's bus was busy), one
reset line reaches every core, and deadlines are counted in simulated cycles. So for the same driver calls on the
same build, CYCLES and every output equal ``rtl``'s. Unlike MyHDL, any number of ``verilator`` devices may live in
one process.

Programming the PL again (``RLOverlay.download()``) pulses the reset every core shares, as on ``rtl``: registers go
back to their reset values, block RAM keeps its contents (as on ``emu``; a board's new bitstream would clear them).

``vcd="wave"`` writes ``wave_<core>.vcd`` per core (a separate model with tracing compiled in; slower).

Memories without initial contents (the UltraRAM ones of a build for a part with UltraRAM: the converter drops their
initial loops) start at 0, as Verilator leaves them by default; with ``PYNQ_RL_VERILATOR_GARBAGE_SEED=<n>`` (n > 0) in
the environment they start at random values of seed ``n`` instead (Verilator's random reset), which is how the tests
check that a core's behaviour does not depend on what UltraRAM holds at power-up.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import weakref
from pathlib import Path

import numpy as np

from ...overlay import spec as S
from .clocked import ClockedDevice
from .regfile import RegisterFile
from .verilator_build import ModelBuild, build_model

__all__ = ["VerilatorDevice", "VerilatorSimulation", "VerilatorCoreIP", "VerilatedCore"]

_serial = itertools.count()

#: Cycles the reset is held low, then high, when a simulation starts and when a core is programmed again (as ``rtl``
#: holds its reset, so the board's clock stays the same as there).
START_RESET, PROGRAM_RESET = (4, 1), (2, 1)
#: Cycles an AXI-Lite handshake may wait (a slave may hold a read with wait states: ParSa's MBOX_ACTION).
_AXI_TIMEOUT_CYCLES = 1024
_BUS_ERRORS = {1: "write address", 2: "write response", 3: "read address", 4: "read data"}

_u64, _u32, _p = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p
#: Environment variable: a seed > 0 starts memories without initial contents at random values (module docstring).
GARBAGE_SEED_VARIABLE = "PYNQ_RL_VERILATOR_GARBAGE_SEED"


def garbage_seed() -> int:
    """The seed of :data:`GARBAGE_SEED_VARIABLE` (0: memories without initial contents start at 0).

    Raises
    ------
    ValueError
        The variable is set to something other than an integer in [0, 2**31).
    """
    text = os.environ.get(GARBAGE_SEED_VARIABLE, "0").strip() or "0"
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed < 1 << 31:
        raise ValueError(f"{GARBAGE_SEED_VARIABLE} must be an integer in [0, 2**31), not {text!r}")
    return seed


@functools.cache
def _load(library: Path) -> ctypes.CDLL:
    """Load a model library once per process and declare its interface (``verilator_harness.cpp``)."""
    lib = ctypes.CDLL(str(library))
    signatures = {
        "vcore_stream_bytes": (_u32, []),
        "vcore_traced": (ctypes.c_int, []),
        "vcore_new": (_p, [ctypes.c_char_p, _u64, _u32, _u32, _u64]),
        "vcore_free": (None, [_p]),
        "vcore_cycle": (_u64, [_p]),
        "vcore_idle": (None, [_p, _u64]),
        "vcore_reset": (None, [_p, _u64, _u32, _u32]),
        "vcore_write": (ctypes.c_int, [_p, _u64, _u32, _u32, _u32]),
        "vcore_read": (ctypes.c_int, [_p, _u64, _u32, ctypes.POINTER(_u32), _u32]),
        "vcore_duplex": (
            None,
            [
                _p,
                _u64,
                _p,
                _u64,
                ctypes.c_int,
                _p,
                _u64,
                _u64,
                _u64,
                ctypes.POINTER(_u64),
                ctypes.POINTER(_u64),
                ctypes.POINTER(ctypes.c_int),
            ],
        ),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


class VerilatedCore:
    """One verilated core: its model's handle and the bus calls of its harness.

    Parameters
    ----------
    build : ModelBuild
        The compiled model (:func:`~.verilator_build.build_model`).
    name : str
        The core's slot name (for messages).
    vcd : str or None
        Trace every signal to this VCD file (the model must have been built with ``trace=True``).
    start : int
        The board's cycle at which the model starts (its own clock starts there).
    reset : (int, int)
        Cycles the reset is held low, then released, before the model is ready.
    """

    def __init__(
        self, build: ModelBuild, name: str, vcd: str | None = None, start: int = 0, reset: tuple[int, int] = START_RESET
    ) -> None:
        self.build, self.name = build, name
        self._lib = lib = _load(build.library)
        if vcd and not lib.vcore_traced():
            raise ValueError(f"the {name} model {build.library} was built without tracing: build it with trace=True")
        self.stream_bytes = lib.vcore_stream_bytes()
        self._handle = lib.vcore_new(vcd.encode() if vcd else None, start, *reset, garbage_seed())
        self._finalizer = weakref.finalize(self, lib.vcore_free, self._handle)
        self._value, self._moved, self._received, self._last = _u32(), _u64(), _u64(), ctypes.c_int()
        self._out = np.zeros(0, np.uint8)

    @property
    def cycle(self) -> int:
        """Clock cycles this core has run since it was made."""
        return self._lib.vcore_cycle(self._live())

    def _live(self) -> int:
        if not self._finalizer.alive:
            raise RuntimeError(f"the verilated {self.name} core has been freed")
        return self._handle

    def free(self) -> None:
        """Release the model (its VCD file is closed); idempotent."""
        self._finalizer()

    def idle(self, until: int) -> None:
        """Run with idle buses up to cycle ``until``."""
        self._lib.vcore_idle(self._live(), until)

    def reset(self, start: int, low: int, high: int) -> None:
        """From cycle ``start``: hold the reset ``low`` cycles, then release it for ``high``."""
        self._lib.vcore_reset(self._live(), start, low, high)

    def _check(self, status: int, what: str) -> None:
        if status:
            raise TimeoutError(
                f"AXI-Lite {_BUS_ERRORS[status]} of the {self.name} core's {what} not answered within "
                f"{_AXI_TIMEOUT_CYCLES} cycles"
            )

    def write(self, start: int, address: int, value: int) -> None:
        """One AXI4-Lite write at ``address``, from cycle ``start``."""
        self._check(
            self._lib.vcore_write(self._live(), start, address, value, _AXI_TIMEOUT_CYCLES), f"write at {address:#x}"
        )

    def read(self, start: int, address: int) -> int:
        """One AXI4-Lite read at ``address``, from cycle ``start``."""
        self._check(
            self._lib.vcore_read(self._live(), start, address, ctypes.byref(self._value), _AXI_TIMEOUT_CYCLES),
            f"read at {address:#x}",
        )
        return self._value.value

    def duplex(
        self, start: int, data: np.ndarray | None, last: bool, max_bytes: int, idle_until: int = 0, max_cycles: int = 0
    ) -> tuple[int, np.ndarray, bool]:
        """Both stream channels from cycle ``start`` (the harness's ``vcore_duplex``): returns (bytes of ``data``
        accepted, bytes received, TLAST received)."""
        handle = self._live()
        if data is None or len(data) == 0:
            in_pointer, n_in = None, 0
        else:
            data = np.ascontiguousarray(data, dtype=np.uint8)
            in_pointer, n_in = data.ctypes.data, len(data)
        if len(self._out) < max_bytes:
            self._out = np.zeros(max(max_bytes, 2 * len(self._out)), np.uint8)
        self._lib.vcore_duplex(
            handle,
            start,
            in_pointer,
            n_in,
            int(last),
            self._out.ctypes.data,
            max_bytes,
            idle_until,
            max_cycles,
            ctypes.byref(self._moved),
            ctypes.byref(self._received),
            ctypes.byref(self._last),
        )
        received = self._received.value
        return self._moved.value, self._out[:received].copy(), bool(self._last.value)


class VerilatorSimulation:
    """A board's cores as verilated models on one shared clock.

    Each model keeps its own cycle count; :attr:`cycle` is the board's. A core's model idles up to it before it
    acts (nothing reaches a core's ports while another core's bus is busy, so running it then is the same), and
    advancing the board's clock alone (:meth:`tick`) costs nothing.

    Parameters
    ----------
    board_spec : BoardSpec
    vcd : str or None
        Trace each core's signals to ``<vcd>_<core>.vcd`` (models built with tracing).
    """

    def __init__(self, board_spec: S.BoardSpec, vcd: str | None = None) -> None:
        self.board = board_spec
        self.builds: dict[str, ModelBuild] = {}
        self.cores: dict[str, VerilatedCore] = {}
        for slot in board_spec.cores:
            build = build_model(slot.name, slot.spec, trace=bool(vcd))
            trace = None if not vcd else str(Path(vcd).with_suffix("").with_name(f"{Path(vcd).stem}_{slot.name}.vcd"))
            self.builds[slot.name] = build
            self.cores[slot.name] = VerilatedCore(build, slot.name, trace)
        self.cycle = sum(START_RESET)
        self.ended: str | None = None

    def tick(self, cycles: int = 1) -> None:
        """Advance the board's clock ``cycles`` cycles with every bus idle."""
        self.cycle += int(cycles)

    def reset(self) -> None:
        """Pulse the reset every core shares (``PROGRAM_RESET``, as on ``rtl``)."""
        start = self.cycle
        for core in self.cores.values():
            core.reset(start, *PROGRAM_RESET)
        self.cycle = start + sum(PROGRAM_RESET)

    def end(self, reason: str) -> None:
        """Free every model (VCD files are closed); idempotent."""
        if not self.ended:
            self.ended = reason
            for core in self.cores.values():
                core.free()


class VerilatorCoreIP(RegisterFile):
    """A verilated core seen by the emulated device: registers over AXI-Lite, streams through the harness.

    Parameters
    ----------
    sim : VerilatorSimulation
    name : str
        The core slot's name.
    spec : object
        The core's build parameters.
    table : Mapping
        The core's register table.
    """

    def __init__(self, sim: VerilatorSimulation, name: str, spec, table) -> None:
        self.sim, self.spec, self.core = sim, spec, sim.cores[name]
        self.beat_bytes = spec.stream_bytes
        super().__init__(table)

    def reset(self) -> None:
        """'Programming' a core pulses the reset every core shares (as on ``rtl``)."""
        super().reset()
        if getattr(self, "sim", None) is not None and not self.sim.ended:
            self.sim.reset()

    def _done(self) -> None:
        self.sim.cycle = self.core.cycle

    def read(self, offset: int) -> int:
        value = self.core.read(self.sim.cycle, offset)
        self._done()
        return value

    def write(self, offset: int, value: int) -> None:
        self.core.write(self.sim.cycle, offset, value & 0xFFFF_FFFF)
        self._done()

    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Drive ``s_axis`` while the core is ready; return the bytes it took."""
        return self.stream_duplex(data, last, 0)[0]

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Take beats from ``m_axis`` while the core offers them (up to ``max_bytes``)."""
        return self.stream_duplex(None, False, max_bytes)[1:]

    def stream_duplex(
        self,
        data: np.ndarray | None,
        last: bool,
        max_bytes: int,
        max_cycles: int | None = None,
        idle_until: int | None = None,
    ) -> tuple[int, np.ndarray, bool]:
        """Both stream channels in the same cycles, as ``rtl.RtlCoreIP.stream_duplex``.

        ``idle_until``: while a channel is still open and nothing moves, let cycles pass up to this board cycle
        (what :meth:`ClockedDevice.idle` does one cycle at a time on ``rtl``), so a DMA waiting on a computing core
        costs one call, not one per cycle.
        """
        result = self.core.duplex(
            self.sim.cycle, data, last, max_bytes, idle_until=idle_until or 0, max_cycles=max_cycles or 0
        )
        self._done()
        return result


class VerilatorDevice(ClockedDevice):
    """An emulated ``board_spec`` whose cores are their converted Verilog under Verilator (see :class:`ClockedDevice`).

    Parameters
    ----------
    board_spec : BoardSpec
    vcd : str or None
        Trace every core's signals to ``<vcd>_<core>.vcd``.
    """

    def __init__(self, board_spec: S.BoardSpec, vcd: str | None = None) -> None:
        simulation = VerilatorSimulation(board_spec, vcd=vcd)
        super().__init__(
            board_spec,
            simulation,
            lambda slot: VerilatorCoreIP(simulation, slot.name, slot.spec, S.CORE_REGISTERS[slot.name]),
            VerilatorCoreIP,
            tag=f"verilator{next(_serial)}:{board_spec.name}",
        )
        weakref.finalize(self, simulation.end, "device released")

    def idle(self, cycles: int) -> None:
        """Let ``cycles`` clock cycles pass (:meth:`ClockedDevice.idle`); while exactly one DMA is busy, its core's
        harness runs the whole wait in one call, moving beats and idling as the Python loop would cycle by cycle."""
        end = self.simulation.cycle + int(cycles)
        while self.simulation.cycle < end:
            busy = [dma for dma in self.dmas.values() if dma.busy]
            if len(busy) != 1:
                super().idle(end - self.simulation.cycle)
                return
            busy[0].service(idle_until=end)
            if busy[0].busy and self.simulation.cycle < end:  # the harness stops early only when the DMA is done
                super().idle(end - self.simulation.cycle)
                return
