"""Rung 4 testbench: the converted Verilog of the ParSa core, driven over AXI by cocotb, against model vectors.

The pytest wrapper (``tests/parsa/test_verilog.py``) converts the MyHDL core, records with the model every register
write, input stream, output stream and observed register of a sequence of operations, and writes them to the JSON
file named by ``PYNQ_RL_PARSA_VECTORS``. This module replays them on the simulated DUT (AXI4-Lite master on
``s_axi_control``, AXI4-Stream source on ``s_axis`` and sink on ``m_axis``, cocotbext-axi), back to back after one
reset, with and without idle cycles and back-pressure; the output words, their TLAST, STATUS, CYCLES, CYCLES_ACT,
CYCLES_UPDATE, EPSILON and SEED must equal the model's after every operation.
"""
from __future__ import annotations

import itertools
import json
import logging
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from pynq_rl.overlay import spec as S

VECTORS_ENV = "PYNQ_RL_PARSA_VECTORS"
CLOCK_PERIOD_NS = 10
MAX_POLLS = 4000


def load_vectors() -> dict:
    """The vectors file named by ``$PYNQ_RL_PARSA_VECTORS`` (empty when unset, e.g. on a plain import)."""
    path = os.environ.get(VECTORS_ENV)
    if not path:
        return {"operations": [], "parameters": {}, "observed": [], "timeout_us": 1000}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


VECTORS = load_vectors()


def cycle_pause():
    """Pause 3 cycles out of 4 (cocotbext-axi's ``cycle_pause``)."""
    return itertools.cycle([1, 1, 1, 0])


class TB:
    """The ParSa core with its AXI bus functional models."""

    def __init__(self, dut) -> None:
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn,
                                      reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        for bfm in (self.axil.write_if, self.axil.read_if, self.source, self.sink):
            bfm.log.setLevel(logging.WARNING)
        self.beats: list[tuple[int, bool]] = []
        cocotb.start_soon(self._monitor_output())

    def set_idle_generator(self, generator=None) -> None:
        if generator:
            self.axil.write_if.aw_channel.set_pause_generator(generator())
            self.axil.write_if.w_channel.set_pause_generator(generator())
            self.axil.read_if.ar_channel.set_pause_generator(generator())
            self.source.set_pause_generator(generator())

    def set_backpressure_generator(self, generator=None) -> None:
        if generator:
            self.axil.write_if.b_channel.set_pause_generator(generator())
            self.axil.read_if.r_channel.set_pause_generator(generator())
            self.sink.set_pause_generator(generator())

    async def cycle_reset(self) -> None:
        self.dut.aresetn.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.aclk)
        self.dut.aresetn.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.aclk)

    async def _monitor_output(self) -> None:
        dut = self.dut
        while True:
            await RisingEdge(dut.aclk)
            if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
                self.beats.append((int(dut.m_axis_tdata.value), bool(dut.m_axis_tlast.value)))

    async def read(self, name: str) -> int:
        return await self.axil.read_dword(S.PARSA_REGISTERS[name]["address_offset"])

    async def write_offset(self, address: int, value: int) -> None:
        await self.axil.write_dword(address, value & 0xFFFF_FFFF)

    async def run_operation(self, writes: list, stream: bytes) -> tuple[list[int], list[bool], dict]:
        """The register writes (the last one START), the input stream, STATUS polled to DONE, registers read."""
        self.beats.clear()
        for address, value in writes:
            await self.write_offset(address, value)
        if stream:
            await self.source.send(AxiStreamFrame(stream))
        for _ in range(MAX_POLLS):
            if await self.read("STATUS") & S.Status.DONE:
                break
        observed = {name: await self.read(name) for name in VECTORS["observed"]}
        await self.source.wait()
        while not self.sink.empty():
            self.sink.recv_nowait()
        return [d for d, _ in self.beats], [last for _, last in self.beats], observed


@cocotb.test(timeout_time=VECTORS["timeout_us"], timeout_unit="us")
@cocotb.parametrize(idle_inserter=[None, cycle_pause], backpressure_inserter=[None, cycle_pause])
async def run_vectors(dut, idle_inserter, backpressure_inserter):
    """Every recorded operation: output words, TLAST, observed registers equal to the model's."""
    tb = TB(dut)
    await tb.cycle_reset()
    tb.set_idle_generator(idle_inserter)
    tb.set_backpressure_generator(backpressure_inserter)
    failures = []
    for name, value in VECTORS["parameters"].items():
        got = await tb.read(name)
        if got != value:
            failures.append(f"register {name}: {got:#x} != model {value:#x}")
    for index, op in enumerate(VECTORS["operations"]):
        tb.log.info("operation %d: %d writes, %d stream bytes", index, len(op["writes"]), len(op["stream"]) // 2)
        out, lasts, observed = await tb.run_operation(op["writes"], bytes.fromhex(op["stream"]))
        expected = op["expected"]
        problems = []
        if out != expected["out"]:
            problems.append(f"output {out[:8]}... != model {expected['out'][:8]}... ({len(out)} vs "
                            f"{len(expected['out'])} words)")
        elif out and lasts != [i == len(out) - 1 for i in range(len(out))]:
            problems.append(f"TLAST on beats {[i for i, last in enumerate(lasts) if last]}, expected {len(out) - 1}")
        for name, value in observed.items():
            if value != expected[name]:
                problems.append(f"{name} {value:#x} != model {expected[name]:#x}")
        if problems:
            failures.append(f"operation {index}: " + "; ".join(problems))
            tb.log.warning("%s", failures[-1])
    assert not failures, f"{len(failures)} mismatch(es) with the model:\n  " + "\n  ".join(failures)
    tb.log.info("%d operations equal the model", len(VECTORS["operations"]))
