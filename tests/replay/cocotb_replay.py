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
VECTORS_ENV = "PYNQ_RL_REPLAY_VECTORS"
CLOCK_PERIOD_NS = 10
MAX_POLLS = 4000
STATE_REGISTERS = ("TOTAL", "TOTAL_HI", "NONZERO", "SEED")


def load_vectors() -> dict:
    """The vectors file named by ``$PYNQ_RL_REPLAY_VECTORS`` (an empty set when unset, e.g. on a plain import)."""
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
    """The replay core with its AXI bus functional models."""

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
        self.beats: list[tuple[bytes, bool]] = []
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
                self.beats.append((int(dut.m_axis_tdata.value).to_bytes(8, "little"), bool(dut.m_axis_tlast.value)))

    async def read(self, name: str) -> int:
        return await self.axil.read_dword(S.REPLAY_REGISTERS[name]["address_offset"])

    async def write(self, name: str, value: int) -> None:
        await self.axil.write_dword(S.REPLAY_REGISTERS[name]["address_offset"], value & 0xFFFF_FFFF)

    async def run_operation(self, writes: list, stream: bytes, refused: bool) -> tuple[bytes, list[bool], int, int]:
        """The register writes (ending with CTRL.START), the input stream unless START is refused, STATUS polled
        until DONE; returns the output bytes, TLAST per beat, STATUS and CYCLES."""
        self.beats.clear()
        for name, value in writes:
            await self.write(name, value)
        if stream and not refused:
            await self.source.send(AxiStreamFrame(stream))  # TLAST on the last beat
        status = 0
        for _ in range(MAX_POLLS):
            status = await self.read("STATUS")
            if status & S.Status.DONE:
                break
        if stream and not refused:
            await self.source.wait()
        cycles = await self.read("CYCLES")
        while not self.sink.empty():
            self.sink.recv_nowait()
        return b"".join(d for d, _ in self.beats), [last for _, last in self.beats], status, cycles


@cocotb.test(timeout_time=VECTORS["timeout_us"], timeout_unit="us")
@cocotb.parametrize(idle_inserter=[None, cycle_pause], backpressure_inserter=[None, cycle_pause])
async def run_vectors(dut, idle_inserter, backpressure_inserter):
    """Every operation of the vectors file: output bytes / TLAST / STATUS / state registers / CYCLES."""
    tb = TB(dut)
    await tb.cycle_reset()
    tb.set_idle_generator(idle_inserter)
    tb.set_backpressure_generator(backpressure_inserter)
    paused = idle_inserter is not None or backpressure_inserter is not None

    failures = []
    for name, value in VECTORS["parameters"].items():
        got = await tb.read(name)
        if got != value:
            failures.append(f"register {name}: {got:#x} != model {value:#x}")

    for case in VECTORS["cases"]:
        expected = case["expected"]
        out, lasts, status, cycles = await tb.run_operation(case["writes"], bytes.fromhex(case["stream"]),
                                                            bool(expected["status"] & S.Status.ERR_CONFIG)
                                                            and case["mode"] != int(S.ReplayMode.SET))
        want = bytes.fromhex(expected["output"])
        problems = []
        if out != want:
            diff = [i for i in range(0, min(len(out), len(want)), 8) if out[i:i + 8] != want[i:i + 8]]
            first = f"; first differing record {diff[0] // 8}: {out[diff[0]:diff[0] + 8][::-1].hex()} != model " \
                    f"{want[diff[0]:diff[0] + 8][::-1].hex()}" if diff else ""
            problems.append(f"output stream differs ({len(out)} bytes, model {len(want)}{first})")
            tb.log.info("got   %s", [out[i:i + 8][::-1].hex() for i in range(0, len(out), 8)])
            tb.log.info("model %s", [want[i:i + 8][::-1].hex() for i in range(0, len(want), 8)])
        beats = len(want) // 8
        if out == want and lasts != [i == beats - 1 for i in range(beats)]:
            problems.append(f"TLAST on beats {[i for i, last in enumerate(lasts) if last]}, expected {beats - 1}")
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
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.replay import test_verilog as wrapper

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=4, help="fan-out of the build (default 4)")
    parser.add_argument("--out", default="build/cocotb_replay", help="work directory")
    parser.add_argument("--trace", action="store_true", help="dump an FST waveform of the DUT")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    spec = wrapper.small_spec(args.k)
    verilog = wrapper.convert_replay(spec, out / "rtl")
    vectors = wrapper.make_vectors(spec, wrapper.random_ops(spec, seed=1))
    try:
        results = wrapper.run_cocotb(spec, verilog, vectors, out, waves=args.trace)
    except wrapper.pytest.fail.Exception as exc:
        print(exc.msg, file=sys.stderr)
        results = None
    print(f"results: {results or 'FAILED'}")
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
