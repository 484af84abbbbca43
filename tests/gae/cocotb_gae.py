"""Rung 4 testbench: the converted Verilog of the GAE core, driven over AXI by cocotb, against model vectors.

The pytest wrapper (``tests/gae/test_verilog.py``) converts the MyHDL core, computes the vectors with the model
(register writes, input stream, expected output bytes, STATUS and CYCLES per operation) and writes them to the JSON
file named by the environment variable ``PYNQ_RL_GAE_VECTORS``. This module replays them on the simulated DUT:

* AXI4-Lite master on ``s_axi_control``, AXI4-Stream source on ``s_axis`` and sink on ``m_axis`` (cocotbext-axi,
  bound with ``from_prefix``), clock on ``aclk``, active-low synchronous reset ``aresetn``;
* each cocotb test resets the core, reads the build-parameter registers back, then runs every operation of the
  file back to back (no reset in between, exactly as the model ran them), optionally with idle cycles on the
  master side (``idle_inserter``) and back-pressure on the slave side (``backpressure_inserter``);
* the output bytes, the TLAST position, STATUS and CYCLES must equal the model's exactly (a case may name a
  subset in ``compare``).

As a script (from the repository root), it builds the vectors itself and dumps a waveform::

    python -m tests.gae.cocotb_gae --trace [--k 2] [--out build/cocotb_gae]
"""

from __future__ import annotations

import sys
from pathlib import Path

import cocotb
from cocotbext.axi import AxiStreamFrame

from pynq_rl.overlay import spec as S
from tests.common.axi_bench import AxiCoreBench, cycle_pause, load_vectors, tlast_problem

#: Environment variable holding the path of the vectors file.
VECTORS_ENV = "PYNQ_RL_GAE_VECTORS"
VECTORS = load_vectors(VECTORS_ENV, {"cases": [], "parameters": {}, "timeout_us": 1000})


class TB(AxiCoreBench):
    """The GAE core with its AXI bus functional models."""

    def __init__(self, dut) -> None:
        super().__init__(dut, S.GAE_REGISTERS)

    async def run_operation(self, writes: list, stream: bytes) -> tuple[bytes, list[bool], int, int]:
        """The register writes (ending with CTRL.START), the input stream, then poll STATUS until DONE.

        Returns the output bytes, the TLAST flag of each output beat, STATUS and CYCLES.
        """
        self.beats.clear()
        for name, value in writes:
            await self.write(name, value)
        if stream:
            await self.source.send(AxiStreamFrame(stream))  # TLAST on the last beat
        status = await self.poll_done()
        cycles = await self.read("CYCLES")
        await self.source.wait()
        self.discard_sink_frames()
        return self.output_bytes(), self.output_lasts(), status, cycles


def _first_difference(got: bytes, expected: bytes) -> str:
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            return f"first difference at byte {i}: {g:#04x} != model {e:#04x}"
    return f"lengths differ: {len(got)} bytes != model {len(expected)}"


@cocotb.test(timeout_time=VECTORS["timeout_us"], timeout_unit="us")
@cocotb.parametrize(idle_inserter=[None, cycle_pause], backpressure_inserter=[None, cycle_pause])
async def run_vectors(dut, idle_inserter, backpressure_inserter):
    """Every operation of the vectors file, output bytes / TLAST / STATUS / CYCLES equal to the model's."""
    tb = TB(dut)
    await tb.start(idle_inserter, backpressure_inserter)

    failures = await tb.check_parameters(VECTORS["parameters"])  # build parameters read back from the DUT

    for case in VECTORS["cases"]:
        expected = case["expected"]
        out, lasts, status, cycles = await tb.run_operation(case["writes"], bytes.fromhex(case["stream"]))
        want = bytes.fromhex(expected["output"])
        compare = case.get("compare", ("output", "status", "cycles"))
        problems = []
        if "output" in compare:
            if out != want:
                problems.append(f"output stream differs ({_first_difference(out, want)})")
            beats = len(want) // (len(dut.m_axis_tdata) // 8)
            if out == want and (tlast := tlast_problem(lasts, beats)):
                problems.append(tlast)
        if "status" in compare and status != expected["status"]:
            problems.append(f"STATUS {S.Status(status)!r} != model {S.Status(expected['status'])!r}")
        if "cycles" in compare and cycles != expected["cycles"]:
            problems.append(f"CYCLES {cycles} != model {expected['cycles']}")
        if problems:
            failures.append(f"{case['name']}: " + "; ".join(problems))
        tb.log.debug("%s: %d output bytes, STATUS %#x, CYCLES %d", case["name"], len(out), status, cycles)

    assert not failures, f"{len(failures)} mismatch(es) with the model:\n  " + "\n  ".join(failures)
    tb.log.info("%d operations equal the model", len(VECTORS["cases"]))


def main(argv: list[str] | None = None) -> int:
    """Script mode: convert a small build, compute vectors with the model, run this testbench (``--trace``: FST)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for ``tests.gae``
    from tests.common.cocotb_run import run_outside_pytest, script_arguments
    from tests.gae import test_verilog as wrapper

    args = script_arguments(__doc__.splitlines()[0], argv, k=2, k_help="lookahead of the build", out="build/cocotb_gae")
    spec = wrapper.small_spec(args.k)
    verilog = wrapper.convert("gae", spec, args.out / "rtl")
    vectors = wrapper.make_vectors(spec, wrapper.random_cases(spec, wrapper.SEEDS[args.k][:2]))
    results = run_outside_pytest(wrapper.run_cocotb, spec, verilog, vectors, args.out, waves=args.trace)
    if args.trace:
        for wave in sorted(args.out.glob("**/*.fst")):
            print(f"waveform: {wave}")
    print(f"results: {results or 'FAILED'}")
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
