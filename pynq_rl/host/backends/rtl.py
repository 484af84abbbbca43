"""The ``rtl`` backend: the MyHDL cores simulated clock by clock behind the emulated PYNQ device.

Every register access the driver makes becomes an AXI4-Lite transaction on the simulated core's ports, and every
byte the emulated AXI DMA moves becomes an AXI4-Stream beat, with back-pressure, so the driver runs unchanged
against the cycle-accurate hardware. Time advances only with bus traffic (:mod:`.clocked`): each access costs the
cycles its handshake takes, which is also what lets a polling driver watch the core compute. The ``verilator``
backend replays these bus models cycle for cycle in C++ on the converted Verilog (:mod:`.verilator`).

MyHDL allows one live simulation per process: creating a second ``rtl`` device ends the first one's simulation,
and the first device then refuses further use with a clear error. ``vcd=path`` dumps every signal.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from myhdl import ResetSignal, Signal, Simulation, block, delay, instance, traceSignals

from ...overlay import spec as S
from ...overlay.hdl.top import CORE_TOPS
from .clocked import ClockedDevice
from .regfile import RegisterFile

__all__ = ["RtlDevice", "RtlSimulation", "SimulationEnded", "clock_source", "CLOCK_PERIOD"]

_serial = itertools.count()
_active: RtlSimulation | None = None

#: Simulation time units per clock period (a tick ends on a falling edge; :meth:`RtlSimulation.settle` runs one
#: unit, up to three times a cycle, so inputs propagate before the rising edge).
CLOCK_PERIOD = 8


class SimulationEnded(RuntimeError):
    """The simulation behind an ``rtl`` device was ended (by a newer ``rtl`` device or an error)."""


class RtlSimulation:
    """One MyHDL simulation of a board's cores, stepped from Python.

    Parameters
    ----------
    board_spec : BoardSpec
        The board whose cores are simulated (their build parameters come from its core slots).
    vcd : str or None
        Write a VCD waveform of every signal to this path (``.vcd`` added by MyHDL).
    """

    def __init__(self, board_spec: S.BoardSpec, vcd: str | None = None) -> None:
        global _active
        if _active is not None:
            _active.end("a newer rtl device started its own simulation")
        self.clock = Signal(bool(0))
        self.reset = ResetSignal(0, active=0, isasync=False)
        self.ports = {}
        for slot in board_spec.cores:
            if slot.name not in CORE_TOPS:
                raise ValueError(f"the rtl backend has no HDL for core {slot.name!r} yet")
            self.ports[slot.name] = CORE_TOPS[slot.name][1](slot.spec)
        self.cycle = 0
        self._settled = 0  # time units run since the last falling edge (see settle)
        self.ended: str | None = None
        system = _system(board_spec, self.ports, self.clock, self.reset)
        if vcd:
            path = Path(vcd)
            traceSignals.directory = str(path.parent or ".")
            traceSignals.filename = path.stem
            system.config_sim(trace=True)
        self._sim = Simulation(system)
        _active = self
        self.tick(4)  # reset held low for 4 cycles
        self.reset.next = 1
        self.tick(1)

    def tick(self, cycles: int = 1) -> None:
        """Advance ``cycles`` clock cycles (inputs set before the call are sampled at the first rising edge)."""
        if self.ended:
            raise SimulationEnded(f"this rtl simulation has ended: {self.ended}")
        self._run(CLOCK_PERIOD * cycles - self._settled)
        self._settled = 0
        self.cycle += cycles

    def settle(self) -> None:
        """Let inputs set since the last edge reach the combinational outputs, without a clock edge (a bench then
        reads the handshakes the next edge will complete, as cocotb's ``ReadOnly`` does)."""
        if self.ended:
            raise SimulationEnded(f"this rtl simulation has ended: {self.ended}")
        if self._settled >= CLOCK_PERIOD // 2 - 1:
            raise RuntimeError(f"settle() called more than {CLOCK_PERIOD // 2 - 1} times in one clock cycle")
        self._run(1)
        self._settled += 1

    def _run(self, time_units: int) -> None:
        if self._sim.run(time_units, quiet=1) != 1:
            self.end("the simulation stopped (an HDL process raised)")
            raise SimulationEnded(self.ended)

    def end(self, reason: str) -> None:
        """Stop the simulation for good (idempotent)."""
        global _active
        if not self.ended:
            self.ended = reason
            try:
                self._sim.quit()
            finally:
                if _active is self:
                    _active = None


@block
def _system(board_spec, ports, clock, reset):
    """Every core's top plus the clock generator (one simulation per process, so one block holds them all)."""
    tops = []
    for slot in board_spec.cores:
        top = CORE_TOPS[slot.name][0](*ports[slot.name], clock, reset, slot.spec)
        top.name = f"{slot.name}_top"
        tops.append(top)

    clock_generator = clock_source(clock, CLOCK_PERIOD)
    return tops, clock_generator


@block
def clock_source(clock, period: int = CLOCK_PERIOD):
    """A free-running ``clock`` of ``period`` simulation time units, low for the first half (a testbench block: the
    rtl backend's and the test benches' simulations all clock their designs with it)."""

    @instance
    def toggle():
        while True:
            yield delay(period // 2)
            clock.next = 1
            yield delay(period // 2)
            clock.next = 0

    return toggle


class _AxiLiteMaster:
    """Bus-functional AXI4-Lite master (not constructed directly: :class:`RtlCoreIP` owns one)."""

    def __init__(self, sim: RtlSimulation, bus, timeout_cycles: int = 1024) -> None:
        # a slave may hold a read with wait states (ParSa's MBOX_ACTION: up to ParsaSpec.mailbox_wait <= 1,000)
        self.sim, self.bus, self.timeout_cycles = sim, bus, timeout_cycles

    def _wait(self, signal, what: str) -> None:
        for _ in range(self.timeout_cycles):
            if signal:
                return
            self.sim.tick()
        raise TimeoutError(f"AXI-Lite {what} not answered within {self.timeout_cycles} cycles")

    def write(self, address: int, value: int) -> None:
        bus = self.bus
        bus.awaddr.next, bus.wdata.next, bus.wstrb.next = address, value, 0xF
        bus.awvalid.next = bus.wvalid.next = bus.bready.next = True
        self.sim.tick()
        self._wait(bus.awready, "write address")
        self.sim.tick()  # AW/W handshake edge
        bus.awvalid.next = bus.wvalid.next = False
        self._wait(bus.bvalid, "write response")
        self.sim.tick()  # B handshake edge
        bus.bready.next = False

    def read(self, address: int) -> int:
        bus = self.bus
        bus.araddr.next = address
        bus.arvalid.next = bus.rready.next = True
        self.sim.tick()
        self._wait(bus.arready, "read address")
        self.sim.tick()  # AR handshake edge
        bus.arvalid.next = False
        self._wait(bus.rvalid, "read data")
        value = int(bus.rdata)
        self.sim.tick()  # R handshake edge
        bus.rready.next = False
        return value


class RtlCoreIP(RegisterFile):
    """A simulated core seen by the emulated device: registers over AXI-Lite, streams beat by beat.

    Parameters
    ----------
    sim : RtlSimulation
    name : str
        The core slot's name.
    spec : object
        The core's build parameters (``stream_bytes`` sets the beat width).
    table : Mapping
        The core's register table.
    """

    def __init__(self, sim: RtlSimulation, name: str, spec, table) -> None:
        self.sim, self.spec = sim, spec
        bus, self.s_axis, self.m_axis = sim.ports[name]
        self.master = _AxiLiteMaster(sim, bus)
        self.beat_bytes = spec.stream_bytes
        super().__init__(table)

    def reset(self) -> None:
        """'Programming' an rtl core pulses its reset."""
        super().reset()
        if getattr(self, "sim", None) is not None and not self.sim.ended:
            self.sim.reset.next = 0
            self.sim.tick(2)
            self.sim.reset.next = 1
            self.sim.tick(1)

    def read(self, offset: int) -> int:
        return self.master.read(offset)

    def write(self, offset: int, value: int) -> None:
        self.master.write(offset, value & 0xFFFF_FFFF)

    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Drive ``s_axis`` beat by beat while the core is ready; return the bytes it took."""
        return self.stream_duplex(data, last, 0)[0]

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Take beats from ``m_axis`` while the core offers them (up to ``max_bytes``)."""
        return self.stream_duplex(None, False, max_bytes)[1:]

    def stream_duplex(
        self, data: np.ndarray | None, last: bool, max_bytes: int, max_cycles: int | None = None
    ) -> tuple[int, np.ndarray, bool]:
        """Drive ``s_axis`` and take ``m_axis`` in the same cycles, as the DMA's two channels do on a board (a core
        that loads the next chunk while it drains the current one needs both at once), cycle by cycle for as long as
        a beat moves either way.

        ``data``: the bytes to send (None: the MM2S channel is idle), TLAST on the last beat if ``last``;
        ``max_bytes``: how much the S2MM channel takes (0: idle; it stops at TLAST). Returns (bytes sent, bytes
        received, TLAST received). ``max_cycles`` bounds the cycles spent (a bench timing beat by beat).
        """
        s_port, m_port, width = self.s_axis, self.m_axis, self.beat_bytes
        payload = np.zeros(0, np.uint8) if data is None else data
        n_in = len(payload)
        accepted = 0
        out = bytearray()
        got_last = False
        cycles = 0
        while max_cycles is None or cycles < max_cycles:
            sending = accepted < n_in and bool(s_port.tready)
            taking = not got_last and len(out) + width <= max_bytes
            receiving = taking and bool(m_port.tvalid)
            if not (sending or receiving):
                break
            if sending:
                chunk = bytes(payload[accepted : accepted + width])
                s_port.tdata.next = int.from_bytes(chunk.ljust(width, b"\0"), "little")
                s_port.tlast.next = last and accepted + width >= n_in
                accepted += len(chunk)
            s_port.tvalid.next = sending
            m_port.tready.next = taking
            if receiving:
                out += int(m_port.tdata).to_bytes(width, "little")
                got_last = bool(m_port.tlast)
            self.sim.tick()  # the beats move on this edge
            cycles += 1
        s_port.tvalid.next = False
        s_port.tlast.next = False
        m_port.tready.next = False
        return accepted, np.frombuffer(bytes(out), dtype=np.uint8), got_last


class RtlDevice(ClockedDevice):
    """An emulated ``board_spec`` whose cores run as cycle-accurate MyHDL simulations (see :class:`ClockedDevice`).

    Parameters
    ----------
    board_spec : BoardSpec
    vcd : str or None
        Dump waveforms of the whole simulation to this path.
    """

    def __init__(self, board_spec: S.BoardSpec, vcd: str | None = None) -> None:
        simulation = RtlSimulation(board_spec, vcd=vcd)
        super().__init__(
            board_spec,
            simulation,
            lambda slot: RtlCoreIP(simulation, slot.name, slot.spec, S.CORE_REGISTERS[slot.name]),
            RtlCoreIP,
            tag=f"rtl{next(_serial)}:{board_spec.name}",
        )
