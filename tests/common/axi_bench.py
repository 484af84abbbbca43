"""What the rung-4 cocotb testbenches share: the vectors file, the pause pattern and an AXI bench for one core.

Every core (GAE, replay, ParSa) has the same AXI face: an AXI4-Lite slave on ``s_axi_control``, an AXI4-Stream slave
on ``s_axis`` and master on ``m_axis``, clock ``aclk`` and active-low synchronous reset ``aresetn``. Each testbench
(``tests/<core>/cocotb_<core>.py``) subclasses :class:`AxiCoreBench` with the core's register table and keeps only
its own ``run_operation`` and checks. This module imports cocotb: only the simulator process imports it (as
``tests.common.axi_bench``, the repository root being on ``sys.path``), never the pytest wrappers.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink, AxiStreamSource

from pynq_rl.overlay import spec as S

CLOCK_PERIOD_NS = 10
#: STATUS polls before an operation is declared hung (the model's run_operation polls at most 4000 times).
MAX_POLLS = 4000

#: A pause pattern factory, as cocotbext-axi's ``set_pause_generator`` wants it (a fresh iterator per channel).
PauseGenerator = Callable[[], Iterator[int]]


def load_vectors(env_var: str, empty: dict) -> dict:
    """The vectors file named by ``$env_var``, or ``empty`` when it is unset (e.g. on a plain import)."""
    path = os.environ.get(env_var)
    if not path:
        return empty
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cycle_pause() -> Iterator[int]:
    """Pause 3 cycles out of 4 (cocotbext-axi's ``cycle_pause``)."""
    return itertools.cycle([1, 1, 1, 0])


def tlast_problem(lasts: list[bool], beats: int) -> str | None:
    """Why TLAST is wrong when ``beats`` output beats should carry it on the last one alone (None if it is right)."""
    if lasts == [i == beats - 1 for i in range(beats)]:
        return None
    return f"TLAST on beats {[i for i, last in enumerate(lasts) if last]}, expected {beats - 1}"


class AxiCoreBench:
    """One core with its AXI bus functional models (cocotbext-axi, bound with ``from_prefix``).

    ``registers`` is the core's register table (``S.GAE_REGISTERS`` etc.): :meth:`read` and :meth:`write` take
    register names. An independent monitor records every ``m_axis`` handshake in :attr:`beats`.
    """

    def __init__(self, dut, registers: Mapping[str, dict]) -> None:
        self.dut = dut
        self.registers = registers
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()
        self.axil = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.source = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.sink = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        for bfm in (self.axil.write_if, self.axil.read_if, self.source, self.sink):
            bfm.log.setLevel(logging.WARNING)
        self.beats: list[tuple[int, bool]] = []  # (tdata, tlast) of every m_axis handshake
        cocotb.start_soon(self._monitor_output())

    def set_idle_generator(self, generator: PauseGenerator | None = None) -> None:
        """Idle cycles on everything the test bench drives as a master (AW, W, AR, s_axis TVALID)."""
        if generator:
            self.axil.write_if.aw_channel.set_pause_generator(generator())
            self.axil.write_if.w_channel.set_pause_generator(generator())
            self.axil.read_if.ar_channel.set_pause_generator(generator())
            self.source.set_pause_generator(generator())

    def set_backpressure_generator(self, generator: PauseGenerator | None = None) -> None:
        """Back-pressure on everything the DUT drives as a master (B, R, m_axis TREADY)."""
        if generator:
            self.axil.write_if.b_channel.set_pause_generator(generator())
            self.axil.read_if.r_channel.set_pause_generator(generator())
            self.sink.set_pause_generator(generator())

    async def start(self, idle_inserter: PauseGenerator | None, backpressure_inserter: PauseGenerator | None) -> None:
        """Reset the core, then set the pauses of this cocotb test (none during the reset)."""
        await self.cycle_reset()
        self.set_idle_generator(idle_inserter)
        self.set_backpressure_generator(backpressure_inserter)

    async def cycle_reset(self) -> None:
        """Hold ``aresetn`` low for a few clocks (synchronous reset)."""
        self.dut.aresetn.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.aclk)
        self.dut.aresetn.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.aclk)

    async def _monitor_output(self) -> None:
        """Record every m_axis beat with its TLAST, independently of the sink's frame assembly."""
        dut = self.dut
        while True:
            await RisingEdge(dut.aclk)
            if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
                self.beats.append((int(dut.m_axis_tdata.value), bool(dut.m_axis_tlast.value)))

    def output_bytes(self) -> bytes:
        """The recorded beats as one byte string, each beat little-endian over the width of ``m_axis_tdata``."""
        nbytes = len(self.dut.m_axis_tdata) // 8
        return b"".join(data.to_bytes(nbytes, "little") for data, _ in self.beats)

    def output_words(self) -> list[int]:
        """The recorded beats' TDATA."""
        return [data for data, _ in self.beats]

    def output_lasts(self) -> list[bool]:
        """The recorded beats' TLAST."""
        return [last for _, last in self.beats]

    def discard_sink_frames(self) -> None:
        """Empty the sink's frame queue (the monitor has the beats; the sink is there for TREADY)."""
        while not self.sink.empty():
            self.sink.recv_nowait()

    async def read(self, name: str) -> int:
        """The register called ``name``."""
        return await self.axil.read_dword(self.registers[name]["address_offset"])

    async def write(self, name: str, value: int) -> None:
        """Write the register called ``name`` (``value`` truncated to 32 bits)."""
        await self.write_offset(self.registers[name]["address_offset"], value)

    async def write_offset(self, address: int, value: int) -> None:
        """Write the register at byte offset ``address`` (``value`` truncated to 32 bits)."""
        await self.axil.write_dword(address, value & 0xFFFF_FFFF)

    async def poll_done(self) -> int:
        """Poll STATUS until DONE, at most :data:`MAX_POLLS` times; the last STATUS read."""
        status = 0
        for _ in range(MAX_POLLS):
            status = await self.read("STATUS")
            if status & S.Status.DONE:
                break
        return status

    async def check_parameters(self, parameters: Mapping[str, int]) -> list[str]:
        """Read the build-parameter registers back; one message per register that differs from the model's value."""
        failures = []
        for name, value in parameters.items():
            got = await self.read(name)
            if got != value:
                failures.append(f"register {name}: {got:#x} != model {value:#x}")
        return failures
