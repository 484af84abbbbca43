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

import itertools
import json
import logging
import os
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from pynq_rl.overlay import spec as S

#: Environment variable holding the path of the vectors file.
VECTORS_ENV = "PYNQ_RL_GAE_VECTORS"
CLOCK_PERIOD_NS = 10
#: STATUS polls before an operation is declared hung (the model's run_operation polls at most 4000 times).
MAX_POLLS = 4000


def load_vectors() -> dict:
    """The vectors file named by ``$PYNQ_RL_GAE_VECTORS`` (an empty set when unset, e.g. on a plain import)."""
    path = os.environ.get(VECTORS_ENV)
    if not path:
        return {"cases": [], "parameters": {}, "timeout_us": 1000}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


VECTORS = load_vectors()


def cycle_pause():
    """Pause 3 cycles out of 4 (cocotbext-axi's ``cycle_pause``)."""
    return itertools.cycle([1, 1, 1, 0])


class TB:
    """The GAE core with its AXI bus functional models."""

    def __init__(self, dut) -> None:
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn,
                                      reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        for bfm in (self.axil.write_if, self.axil.read_if, self.source, self.sink):
            bfm.log.setLevel(logging.WARNING)
        self.beats: list[tuple[bytes, bool]] = []  # (tdata, tlast) of every m_axis handshake
        cocotb.start_soon(self._monitor_output())

    def set_idle_generator(self, generator=None) -> None:
        """Idle cycles on everything the test bench drives as a master (AW, W, AR, s_axis TVALID)."""
        if generator:
            self.axil.write_if.aw_channel.set_pause_generator(generator())
            self.axil.write_if.w_channel.set_pause_generator(generator())
            self.axil.read_if.ar_channel.set_pause_generator(generator())
            self.source.set_pause_generator(generator())

    def set_backpressure_generator(self, generator=None) -> None:
        """Back-pressure on everything the DUT drives as a master (B, R, m_axis TREADY)."""
        if generator:
            self.axil.write_if.b_channel.set_pause_generator(generator())
            self.axil.read_if.r_channel.set_pause_generator(generator())
            self.sink.set_pause_generator(generator())

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
        dut, nbytes = self.dut, len(self.dut.m_axis_tdata) // 8
        while True:
            await RisingEdge(dut.aclk)
            if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
                data = int(dut.m_axis_tdata.value).to_bytes(nbytes, "little")
                self.beats.append((data, bool(dut.m_axis_tlast.value)))

    async def read(self, name: str) -> int:
        return await self.axil.read_dword(S.GAE_REGISTERS[name]["address_offset"])

    async def write(self, name: str, value: int) -> None:
        await self.axil.write_dword(S.GAE_REGISTERS[name]["address_offset"], value & 0xFFFF_FFFF)

    async def run_operation(self, writes: list, stream: bytes) -> tuple[bytes, list[bool], int, int]:
        """The register writes (ending with CTRL.START), the input stream, then poll STATUS until DONE.

        Returns the output bytes, the TLAST flag of each output beat, STATUS and CYCLES.
        """
        self.beats.clear()
        for name, value in writes:
            await self.write(name, value)
        if stream:
            await self.source.send(AxiStreamFrame(stream))  # TLAST on the last beat
        status = 0
        for _ in range(MAX_POLLS):
            status = await self.read("STATUS")
            if status & S.Status.DONE:
                break
        cycles = await self.read("CYCLES")
        await self.source.wait()
        while not self.sink.empty():
            self.sink.recv_nowait()
        return b"".join(d for d, _ in self.beats), [last for _, last in self.beats], status, cycles


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
    await tb.cycle_reset()
    tb.set_idle_generator(idle_inserter)
    tb.set_backpressure_generator(backpressure_inserter)

    failures = []
    for name, value in VECTORS["parameters"].items():  # build parameters read back from the DUT
        got = await tb.read(name)
        if got != value:
            failures.append(f"register {name}: {got:#x} != model {value:#x}")

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
            if out == want and lasts != [i == beats - 1 for i in range(beats)]:
                problems.append(f"TLAST on beats {[i for i, last in enumerate(lasts) if last]}, expected {beats - 1}")
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
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for ``tests.gae``
    from tests.gae import test_verilog as wrapper

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=2, help="lookahead of the build (default 2)")
    parser.add_argument("--out", default="build/cocotb_gae", help="work directory (default build/cocotb_gae)")
    parser.add_argument("--trace", action="store_true", help="dump an FST waveform of the DUT")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    spec = wrapper.small_spec(args.k)
    verilog = wrapper.convert_gae(spec, out / "rtl")
    vectors = wrapper.make_vectors(spec, wrapper.random_cases(spec, wrapper.SEEDS[args.k][:2]))
    try:
        results = wrapper.run_cocotb(spec, verilog, vectors, out, waves=args.trace)
    except wrapper.pytest.fail.Exception as exc:
        print(exc.msg, file=sys.stderr)
        results = None
    if args.trace:
        for wave in sorted(out.glob("**/*.fst")):
            print(f"waveform: {wave}")
    print(f"results: {results or 'FAILED'}")
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
