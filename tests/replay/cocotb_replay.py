"""Rung 4 testbench: the converted Verilog of the replay core, driven over AXI by cocotb, against model vectors.

The pytest wrapper (``tests/replay/test_verilog.py``) converts the MyHDL core, runs the operations through the
model (``SumTree``) and writes, per operation, the register writes, the input stream, the expected output bytes,
STATUS, CYCLES, TOTAL/TOTAL_HI, NONZERO and SEED to the JSON file named by ``PYNQ_RL_REPLAY_VECTORS``. This module
replays them on the simulated DUT:

* AXI4-Lite master on ``s_axi_control``, AXI4-Stream source on ``s_axis`` and sink on ``m_axis`` (cocotbext-axi,
  ``from_prefix``), clock on ``aclk``, active-low synchronous reset ``aresetn``;
* each cocotb test resets the core (the tree is not reset: every test starts with a CLEAR, as the vectors do),
  reads the build-parameter registers back, then runs every operation back to back, with and without idle
  cycles on the master side and back-pressure on the slave side;
* bytes, TLAST position, STATUS and the state registers must equal the model's; CYCLES must equal the model's
  figure when nothing pauses the streams and be at least that otherwise.

As a script (from the repository root)::

    python -m tests.replay.cocotb_replay --trace [--k 4] [--out build/cocotb_replay]
"""

from __future__ import annotations

import sys
from pathlib import Path

import cocotb
from cocotbext.axi import AxiStreamFrame

from pynq_rl.overlay import spec as S
from tests.common.axi_bench import AxiCoreBench, cycle_pause, load_vectors, tlast_problem

#: Environment variable holding the path of the vectors file.
VECTORS_ENV = "PYNQ_RL_REPLAY_VECTORS"
VECTORS = load_vectors(VECTORS_ENV, {"cases": [], "parameters": {}, "timeout_us": 1000})
STATE_REGISTERS = ("TOTAL", "TOTAL_HI", "NONZERO", "SEED")


class TB(AxiCoreBench):
    """The replay core with its AXI bus functional models."""

    def __init__(self, dut) -> None:
        super().__init__(dut, S.REPLAY_REGISTERS)

    async def run_operation(self, writes: list, stream: bytes, refused: bool) -> tuple[bytes, list[bool], int, int]:
        """The register writes (ending with CTRL.START), the input stream unless START is refused, STATUS polled
        until DONE; returns the output bytes, TLAST per beat, STATUS and CYCLES."""
        self.beats.clear()
        for name, value in writes:
            await self.write(name, value)
        if stream and not refused:
            await self.source.send(AxiStreamFrame(stream))  # TLAST on the last beat
        status = await self.poll_done()
        if stream and not refused:
            await self.source.wait()
        cycles = await self.read("CYCLES")
        self.discard_sink_frames()
        return self.output_bytes(), self.output_lasts(), status, cycles


@cocotb.test(timeout_time=VECTORS["timeout_us"], timeout_unit="us")
@cocotb.parametrize(idle_inserter=[None, cycle_pause], backpressure_inserter=[None, cycle_pause])
async def run_vectors(dut, idle_inserter, backpressure_inserter):
    """Every operation of the vectors file: output bytes / TLAST / STATUS / state registers / CYCLES."""
    tb = TB(dut)
    await tb.start(idle_inserter, backpressure_inserter)
    paused = idle_inserter is not None or backpressure_inserter is not None

    failures = await tb.check_parameters(VECTORS["parameters"])

    for case in VECTORS["cases"]:
        expected = case["expected"]
        out, lasts, status, cycles = await tb.run_operation(
            case["writes"],
            bytes.fromhex(case["stream"]),
            bool(expected["status"] & S.Status.ERR_CONFIG) and case["mode"] != int(S.ReplayMode.SET),
        )
        want = bytes.fromhex(expected["output"])
        problems = []
        if out != want:
            diff = [i for i in range(0, min(len(out), len(want)), 8) if out[i : i + 8] != want[i : i + 8]]
            first = (
                f"; first differing record {diff[0] // 8}: {out[diff[0] : diff[0] + 8][::-1].hex()} != model "
                f"{want[diff[0] : diff[0] + 8][::-1].hex()}"
                if diff
                else ""
            )
            problems.append(f"output stream differs ({len(out)} bytes, model {len(want)}{first})")
            tb.log.info("got   %s", [out[i : i + 8][::-1].hex() for i in range(0, len(out), 8)])
            tb.log.info("model %s", [want[i : i + 8][::-1].hex() for i in range(0, len(want), 8)])
        if out == want and (tlast := tlast_problem(lasts, len(want) // 8)):
            problems.append(tlast)
        if status != expected["status"]:
            problems.append(f"STATUS {S.Status(status)!r} != model {S.Status(expected['status'])!r}")
        if expected["cycles"] is not None:
            if (cycles != expected["cycles"]) if not paused else (cycles < expected["cycles"]):
                problems.append(f"CYCLES {cycles} vs model {expected['cycles']} (paused: {paused})")
        for name in STATE_REGISTERS:
            got = await tb.read(name)
            if got != expected[name]:
                problems.append(f"{name} {got:#x} != model {expected[name]:#x}")
        if problems:
            failures.append(f"{case['name']}: " + "; ".join(problems))

    assert not failures, f"{len(failures)} mismatch(es) with the model:\n  " + "\n  ".join(failures)
    tb.log.info("%d operations equal the model", len(VECTORS["cases"]))


def main(argv: list[str] | None = None) -> int:
    """Script mode: convert a small build, compute vectors with the model, run this testbench (``--trace``: FST)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for ``tests.replay``
    from tests.common.cocotb_run import run_outside_pytest, script_arguments
    from tests.replay import test_verilog as wrapper

    args = script_arguments(
        __doc__.splitlines()[0], argv, k=4, k_help="fan-out of the build", out="build/cocotb_replay"
    )
    spec = wrapper.small_spec(args.k)
    verilog = wrapper.convert("replay", spec, args.out / "rtl")
    vectors = wrapper.make_vectors(spec, wrapper.random_ops(spec, seed=1))
    results = run_outside_pytest(wrapper.run_cocotb, spec, verilog, vectors, args.out, waves=args.trace)
    print(f"results: {results or 'FAILED'}")
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
