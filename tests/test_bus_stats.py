"""Bus accounting of the emulated devices: what each driver call costs on the PS-PL bus.

The exact counts on ``emu`` are pinned: they are a driver call's fixed cost on a board (about a microsecond per
host MMIO call from Python, a few PL cycles per register word), so a change that adds accesses must show up here,
and one that removes some updates the numbers (and ``benchmarks/results/bus_costs.md``). The per-call budgets below
count host calls (``register_calls``: a burst into ``mmio.array`` is one); the word counts are pinned beside them.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pynq_rl import RLOverlay
from tests.common.boards import make_overlay, verilator_missing

MOUNTAINCAR = {"tilings": [{"dims": [0, 1], "tilings": 8, "tiles": 8}]}
SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bus_costs.py"


def steady(overlay, call):
    call()
    with overlay.bus_stats() as bus:
        call()
    return bus


def test_each_call_costs_what_it_costs():
    overlay = RLOverlay(backend="emu")
    parsa, replay = overlay.parsa, overlay.replay
    parsa.configure(MOUNTAINCAR, 3, ([-1.2, -0.07], [0.6, 0.07]), epsilon=0.0)
    replay.update(np.arange(4096), np.ones(4096))
    act = steady(overlay, lambda: parsa.act([-0.4, 0.01], -1.0))
    # the mailbox: a burst of 2 + n_dims words (the state record), START, one MBOX_ACTION read; no DMA
    assert (act.register_reads, act.register_writes, act.dma_transfers) == (1, 5, 0)
    assert act.register_calls == 3  # the burst, START, the MBOX_ACTION read
    assert (act.dma_bytes_to_pl, act.dma_bytes_from_pl) == (0, 0)
    sample = steady(overlay, lambda: replay.sample(256))
    # reads: TOTAL_HI, TOTAL (for the probabilities), STATUS at DONE, DMASR, S2MM_LENGTH; writes: DA, LENGTH, CTRL
    assert (sample.register_reads, sample.register_writes, sample.dma_transfers) == (5, 3, 1)  # COUNT cached
    assert sample.register_calls == 8  # every access a single word
    assert sample.dma_bytes_from_pl == 256 * 8 and sample.dma_bytes_to_pl == 0
    update = steady(overlay, lambda: replay.update(np.arange(256), np.full(256, 0.5)))
    assert (update.register_reads, update.register_writes, update.dma_transfers) == (2, 3, 1)
    assert update.register_accesses == 5 and update.as_dict()["register_accesses"] == 5
    assert update.register_calls == 5 and update.as_dict()["register_calls"] == 5
    assert max(sample.register_calls, update.register_calls) <= 8  # the replay calls' budget


@pytest.mark.parametrize("backend", ["emu", "rtl", "verilator"])
def test_gae_streams_every_lane_batch_in_one_operation(backend):
    """The GAE budget: all lane-batches in one operation (BATCHES), so one DMA transfer each way, and the
    same register accesses for 8 lane-batches (3 on ``rtl``) as for one, at most 12 host calls; q8-runs (the default
    8-bit mode) as many as raw (its scales travel in the stream), q8 block mode adds its four scale registers
    (R_SCALE, R_OFFSET, V_SCALE, V_OFFSET: each call's block has its own) as one burst."""
    overlay = make_overlay(backend, board="Pynq-Z2", cores=("gae",))
    lanes = overlay.gae.spec.lanes
    rng = np.random.default_rng(0)
    costs, batches = {}, 3 if backend == "rtl" else 8
    for envs, quantize in ((lanes, False), (batches * lanes, False), (lanes, "block"), (lanes, True)):
        bus = steady(
            overlay,
            lambda: overlay.gae.compute(
                rng.normal(size=(16, envs)), rng.normal(size=(17, envs)), np.zeros((16, envs)), quantize=quantize
            ),
        )
        assert bus.dma_transfers == 2
        costs[envs, quantize] = bus
    one, many, q8, runs = costs.values()
    assert many.register_writes == one.register_writes
    assert many.register_accesses == one.register_accesses  # on rtl the wait lets the known cycles pass
    assert many.register_calls == one.register_calls <= 12
    assert many.dma_bytes_from_pl == batches * one.dma_bytes_from_pl
    assert q8.register_writes == one.register_writes + 4 and q8.register_reads == one.register_reads
    assert q8.register_calls == one.register_calls + 1 <= 12
    assert runs.register_calls == one.register_calls and runs.register_writes == one.register_writes


@pytest.mark.parametrize("backend", ["emu", "rtl", "verilator"])
def test_a_parsa_decision_fits_its_budget(backend):
    """The ParSa budget: act() of one record makes no DMA transfer and at most 8 host register calls in steady state,
    on rtl too (the core holds the MBOX_ACTION read while it decides, so the driver does not poll): the record is
    one burst whatever the state's size, then START and the MBOX_ACTION read."""
    overlay = make_overlay(backend, board="Pynq-Z2", cores=("parsa",))
    parsa = overlay.parsa
    parsa.configure(MOUNTAINCAR, 3, ([-1.2, -0.07], [0.6, 0.07]), alpha=0.3 / 8, epsilon=0.1, frac_bits=6)
    for state, reward in (([-0.5, 0.0], None), ([-0.4, 0.01], -1.0), ([0.2, -0.05], -1.0)):
        bus = steady(overlay, lambda: parsa.act(state, reward))
        assert bus.dma_transfers == 0 and bus.register_calls == 3 <= 8, bus
        assert (bus.register_reads, bus.register_writes) == (1, 2 + 2 + 1)  # key, reward, 2 state words, START


def test_a_wide_state_is_still_one_burst():
    """OPaL's DDoS policy (20 state dims, 136 tilings, ZCU106 build): the record is 22 words but one burst, so a
    decision is 3 host calls, as MountainCar's; only the word count grows with the state."""
    from pynq_rl.host.drivers.tiling_config import OPAL_DDOS_TILING

    overlay = RLOverlay(backend="emu", board="ZCU106", cores=("parsa",))
    overlay.parsa.configure(OPAL_DDOS_TILING, 10, (np.zeros(20), np.ones(20)), epsilon=0.0)
    state = np.linspace(0.05, 0.95, 20)
    bus = steady(overlay, lambda: overlay.parsa.act(state, 1.0))
    assert (bus.register_calls, bus.register_reads, bus.register_writes, bus.dma_transfers) == (3, 1, 2 + 20 + 1, 0)


def test_counts_cover_only_the_block_and_rtl_makes_a_boards_accesses():
    """On rtl a wait lets the operation's known cycles pass before it polls (then one poll per microsecond of PL
    time, as a Python loop on the board's ARM manages), so the replay calls keep their budget there too; a
    simulated core that took longer than its spec's formula would show up as extra STATUS reads."""
    emu = RLOverlay(backend="emu", cores=("replay",))
    rtl = RLOverlay(backend="rtl", cores=("replay",))
    counts = []
    for overlay in (emu, rtl):
        overlay.replay.update(np.arange(64), np.ones(64))
        with overlay.bus_stats() as outer:
            bus = steady(overlay, lambda: overlay.replay.sample(32))
            update = steady(overlay, lambda: overlay.replay.update(np.arange(32), np.full(32, 0.5)))
        assert outer.register_reads >= 2 * (bus.register_reads + update.register_reads) > 0  # the block's own
        counts.append((bus, update))
    (emu_sample, emu_update), (rtl_sample, rtl_update) = counts
    assert emu_sample.dma_transfers == rtl_sample.dma_transfers == 1
    assert rtl_sample.as_dict() == emu_sample.as_dict() and rtl_update.as_dict() == emu_update.as_dict()
    assert max(rtl_sample.register_calls, rtl_update.register_calls) <= 8


def test_an_rtl_wait_polls_once_per_microsecond_of_pl_time():
    """A core slower than its formula (the output stream held back) is polled every ``poll_cycles``: a handful of
    extra STATUS reads, not one per bus turnaround."""
    from pynq_rl.host.backends.rtl import RtlCoreIP

    overlay = RLOverlay(backend="rtl", cores=("replay",))
    device = overlay.device
    assert device.poll_cycles == 100  # the Pynq-Z2's 100 MHz
    overlay.replay.update(np.arange(64), np.ones(64))
    steady(overlay, lambda: overlay.replay.sample(32))
    duplex = RtlCoreIP.stream_duplex

    def slow(self, data, last, max_bytes, max_cycles=None):  # no output for the first 1,000 cycles' worth of polls
        held = device.simulation.cycle < start + 1000
        return duplex(self, data, last, 0 if held else max_bytes, max_cycles)

    RtlCoreIP.stream_duplex = slow
    try:
        start = device.simulation.cycle
        with overlay.bus_stats() as bus:
            overlay.replay.sample(32)
    finally:
        RtlCoreIP.stream_duplex = duplex
    assert 5 + 5 <= bus.register_reads <= 5 + 15  # ~1,000 cycles of delay at one poll per 100 cycles


def test_parameters_are_written_once_and_rewritten_after_a_reset():
    overlay = RLOverlay(backend="emu", cores=("replay",))
    replay = overlay.replay
    replay.update(np.arange(64), np.ones(64))
    replay.sample(16)
    with overlay.bus_stats() as same:
        replay.sample(16)
    with overlay.bus_stats() as other:
        replay.sample(8)  # COUNT and STRIDE change: written
    assert other.register_writes == same.register_writes + 2
    replay.reset()  # forgets what it wrote: a reset may not keep it
    with overlay.bus_stats() as after_reset:
        replay.sample(8)
    assert after_reset.register_writes == same.register_writes + 2


def test_a_64_bit_dma_writes_the_upper_address_words_too():
    """The ZCU106's DMA addresses 64 bits: each transfer also writes SA_MSB / DA_MSB (the Zynq-7000's does not)."""
    overlay = RLOverlay(backend="emu", board="ZCU106", cores=("replay",))
    overlay.replay.update(np.arange(64), np.ones(64))
    bus = steady(overlay, lambda: overlay.replay.update(np.arange(8), np.ones(8)))
    assert (bus.register_reads, bus.register_writes, bus.dma_transfers) == (2, 4, 1)


def test_status_is_read_before_start_only_when_the_driver_cannot_know():
    """After its own operation the driver knows the core is idle; after a reset, or once the register map was
    handed out (anything may have been written through it), the next operation reads STATUS first, and refuses a
    busy core."""
    overlay = RLOverlay(backend="emu", cores=("replay",))
    replay = overlay.replay
    replay.update(np.arange(64), np.ones(64))
    steady_reads = steady(overlay, lambda: replay.sample(16)).register_reads
    replay.reset()
    replay.sample(16)  # COUNT/STRIDE rewritten: now only STATUS differs
    with overlay.bus_stats() as after_map:
        replay.register_map  # noqa: B018 - handing the map out is the point
        replay.sample(16)
    assert after_map.register_reads == steady_reads + 1
    core = overlay.device.cores["replay"]
    replay.register_map  # noqa: B018 - the property binds the map before the core is made busy
    core.values["STATUS"] = 1  # BUSY, as if started around the driver
    with pytest.raises(RuntimeError, match="busy before start"):
        replay.sample(16)


def test_board_backend_cannot_count():
    overlay = RLOverlay(backend="emu", cores=("gae",))
    overlay.backend = "board"
    overlay.device.bus = None
    with pytest.raises(RuntimeError, match="needs backend 'emu', 'rtl' or 'verilator', not 'board'"):
        with overlay.bus_stats():
            pass


@pytest.mark.report  # the benchmark that writes benchmarks/results/bus_costs.md, on every backend here
def test_benchmark_writes_its_table(tmp_path):
    backends = "emu" if verilator_missing() else "emu,verilator"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--backends", backends, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "bus_costs.md").read_text()
    assert "| emu | parsa.act (1 record) | 3 | 1 | 5 | 6 | 0 | 0 | 0 |" in text
    if "verilator" in backends:  # the mailbox decision polls nothing: the core holds the read while it decides
        assert "| verilator | parsa.act (1 record) | 3 | 1 | 5 | 6 | 0 | 0 | 0 |" in text
