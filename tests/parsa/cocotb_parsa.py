"""Rung 4 testbench: the converted Verilog of the ParSa core, driven over AXI by cocotb, against model vectors.

The pytest wrapper (``tests/parsa/test_verilog.py``) converts the MyHDL core, records with the model every register
write, input stream, output stream and observed register of a sequence of operations, and writes them to the JSON
file named by ``PYNQ_RL_PARSA_VECTORS``. This module replays them on the simulated DUT (AXI4-Lite master on
``s_axi_control``, AXI4-Stream source on ``s_axis`` and sink on ``m_axis``, cocotbext-axi), back to back after one
reset, with and without idle cycles and back-pressure; the output words, their TLAST, STATUS, CYCLES, CYCLES_ACT,
CYCLES_UPDATE, EPSILON and SEED must equal the model's after every operation.
"""

from __future__ import annotations

import cocotb
from cocotbext.axi import AxiStreamFrame

from pynq_rl.overlay import spec as S
from tests.common.axi_bench import AxiCoreBench, cycle_pause, load_vectors, tlast_problem

VECTORS_ENV = "PYNQ_RL_PARSA_VECTORS"
VECTORS = load_vectors(VECTORS_ENV, {"operations": [], "parameters": {}, "observed": [], "timeout_us": 1000})


class TB(AxiCoreBench):
    """The ParSa core with its AXI bus functional models (writes by address: the vectors record offsets)."""

    def __init__(self, dut) -> None:
        super().__init__(dut, S.PARSA_REGISTERS)

    async def run_operation(self, writes: list, stream: bytes) -> tuple[list[int], list[bool], dict]:
        """The register writes (the last one START), the input stream, STATUS polled to DONE, registers read."""
        self.beats.clear()
        for address, value in writes:
            await self.write_offset(address, value)
        if stream:
            await self.source.send(AxiStreamFrame(stream))
        await self.poll_done()
        observed = {name: await self.read(name) for name in VECTORS["observed"]}
        await self.source.wait()
        self.discard_sink_frames()
        return self.output_words(), self.output_lasts(), observed


@cocotb.test(timeout_time=VECTORS["timeout_us"], timeout_unit="us")
@cocotb.parametrize(idle_inserter=[None, cycle_pause], backpressure_inserter=[None, cycle_pause])
async def run_vectors(dut, idle_inserter, backpressure_inserter):
    """Every recorded operation: output words, TLAST, observed registers equal to the model's."""
    tb = TB(dut)
    await tb.start(idle_inserter, backpressure_inserter)
    failures = await tb.check_parameters(VECTORS["parameters"])
    for index, op in enumerate(VECTORS["operations"]):
        tb.log.info("operation %d: %d writes, %d stream bytes", index, len(op["writes"]), len(op["stream"]) // 2)
        out, lasts, observed = await tb.run_operation(op["writes"], bytes.fromhex(op["stream"]))
        expected = op["expected"]
        problems = []
        if out != expected["out"]:
            problems.append(
                f"output {out[:8]}... != model {expected['out'][:8]}... ({len(out)} vs {len(expected['out'])} words)"
            )
        elif tlast := tlast_problem(lasts, len(out)):
            problems.append(tlast)
        for name, value in observed.items():
            if value != expected[name]:
                problems.append(f"{name} {value:#x} != model {expected[name]:#x}")
        if problems:
            failures.append(f"operation {index}: " + "; ".join(problems))
            tb.log.warning("%s", failures[-1])
    assert not failures, f"{len(failures)} mismatch(es) with the model:\n  " + "\n  ".join(failures)
    tb.log.info("%d operations equal the model", len(VECTORS["operations"]))
