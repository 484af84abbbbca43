"""Deadlines of the drivers' waits: wall-clock seconds on a board and ``emu``, simulated cycles on ``rtl``.

The rtl backend's PL is a MyHDL simulation that advances only while the driver polls, at a speed set by the host's
load; its waits must end after the same simulated time however slow the host is, and a hung core must still report.
"""

import json
import math
import os
import re
import types

import numpy as np
import pytest

from pynq_rl.host.drivers import polling
from pynq_rl.host.drivers.polling import CycleDeadline, WallClockDeadline, check_timeout, wait_until
from pynq_rl.host.drivers.stream_core import StreamCore
from pynq_rl.overlay import spec as S
from tests.common.boards import RTL_REPLAY_TEST_BOARD, make_overlay


def rollout(seed: int, n_steps: int, n_envs: int):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n_steps, n_envs)).astype(np.float32),
        rng.normal(size=(n_steps + 1, n_envs)).astype(np.float32),
        (rng.random((n_steps, n_envs)) < 0.1).astype(np.float32),
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0.0, "abc", None])
def test_a_timeout_must_be_a_finite_positive_number(bad):
    with pytest.raises(ValueError, match="timeout_s must be a"):
        check_timeout(bad)
    assert check_timeout("0.25") == 0.25


def test_driver_timeout_is_validated_before_use():
    overlay = make_overlay("emu")
    with pytest.raises(ValueError, match="finite number of seconds > 0, not nan"):
        overlay.gae.timeout_s = math.nan
    with pytest.raises(ValueError, match="not -1"):
        overlay.gae.compute(*rollout(0, 4, 2), timeout_s=-1)
    assert overlay.gae.timeout_s == 5.0
    with pytest.raises(ValueError, match="timeout_s must be"):
        type(overlay)(backend="emu", timeout_s=0)
    assert type(overlay)(backend="emu", timeout_s=2.5).replay.timeout_s == 2.5


def test_the_message_shows_the_value_the_wait_last_saw():
    """A core that finishes between the last poll and the message must not be reported as DONE-but-not-done."""
    clock = iter(range(0, 1000, 7))
    reads = iter([S.Status.BUSY, S.Status.BUSY, S.Status.DONE])
    deadline = CycleDeadline(lambda: next(clock), 10)
    with pytest.raises(TimeoutError, match=re.escape("timed out after 10 simulated cycles: STATUS=<Status.BUSY: 1>")):
        wait_until(
            lambda: next(reads),
            lambda status: bool(status & S.Status.DONE),
            deadline,
            lambda status: f"STATUS={status!r}",
        )
    assert next(reads) == S.Status.DONE  # the register was not read again to write the message


def test_a_cycle_deadline_counts_cycles_not_seconds(monkeypatch):
    cycle = [0]

    def poll():
        cycle[0] += 5
        return cycle[0]

    monkeypatch.setattr(polling, "time", types.SimpleNamespace(monotonic=lambda: 1e12, sleep=lambda s: None))
    deadline = CycleDeadline(lambda: cycle[0], 100)
    assert wait_until(poll, lambda c: c >= 95, deadline, str) == 95  # a wall clock 1e12 s on changes nothing
    deadline = CycleDeadline(lambda: cycle[0], 100)
    with pytest.raises(TimeoutError, match="after 100 simulated cycles: 200"):
        wait_until(poll, lambda c: False, deadline, str)
    assert cycle[0] == 200  # gave up at the first poll past the budget, not before
    with pytest.raises(ValueError):
        CycleDeadline(lambda: 0, 0)


def test_wall_clock_deadline_expires_in_seconds(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(polling, "time", types.SimpleNamespace(monotonic=lambda: now[0], sleep=lambda s: None))
    deadline = WallClockDeadline(2.0)
    now[0] = 1.9
    assert not deadline.expired()
    now[0] = 2.1
    assert deadline.expired() and deadline.describe() == "2.0 s"


def test_rtl_operations_finish_however_slow_the_host(monkeypatch):
    """On rtl a wall clock racing ahead (a loaded host) does not end a wait; on emu the same clock would."""
    overlay = make_overlay("rtl")
    rewards, values, dones = rollout(1, 12, 3)
    reference = make_overlay("emu").gae.compute(rewards, values, dones)
    now = [0.0]

    def monotonic():
        now[0] += 1000.0  # every look at the clock: 1000 s later
        return now[0]

    monkeypatch.setattr(polling, "time", types.SimpleNamespace(monotonic=monotonic, sleep=lambda s: None))
    adv, ret = overlay.gae.compute(rewards, values, dones)
    np.testing.assert_array_equal(adv, reference[0])
    np.testing.assert_array_equal(ret, reference[1])
    with pytest.raises(TimeoutError, match=r"after 5\.0 s"):  # the check above would fail with a wall deadline
        emu = make_overlay("emu")
        core = emu.device.cores["gae"]
        monkeypatch.setattr(core, "stream_out", lambda max_bytes: (np.zeros(0, np.uint8), False))
        monkeypatch.setattr(type(core), "close_input", lambda self, data: None)  # never finishes
        emu.gae.compute(rewards, values, dones)


@pytest.mark.parametrize("backend", ["rtl", "verilator"])
def test_a_hung_simulated_core_reports_after_its_cycle_budget(backend, monkeypatch):
    """The output stream never drains: the GAE core stays BUSY; the wait ends after the derived cycle budget, the
    message says so and shows the STATUS it saw (docs/getting-started.md quotes it), and the core works again
    afterwards. The MyHDL simulation and the verilated Verilog time out after the same simulated cycles."""
    from pynq_rl.host.backends.rtl import RtlCoreIP
    from pynq_rl.host.backends.verilator import VerilatorCoreIP

    overlay = make_overlay(backend, board="Pynq-Z2", cores=("gae",))
    sim = overlay.device.simulation
    rewards, values, dones = rollout(2, 10, 2)
    spec = overlay.board_spec.cores[0].spec
    in_bytes = spec.input_batch_bytes(S.GaeMode.Q8_RUNS, 10)  # the default mode: 11 records and one run's headers
    beats = -(-in_bytes // spec.stream_bytes) + 10 * spec.output_record_bytes // 8
    budget = StreamCore.RTL_MARGIN * (10 + spec.pipeline_depth + beats) + StreamCore.RTL_SLACK_CYCLES
    assert budget == 4724
    ip_class = RtlCoreIP if backend == "rtl" else VerilatorCoreIP
    duplex = ip_class.stream_duplex  # the DMA's two channels: the input moves, the output never does
    monkeypatch.setattr(
        ip_class, "stream_duplex", lambda self, data, last, max_bytes, **waits: duplex(self, data, last, 0, **waits)
    )
    start = sim.cycle
    with pytest.raises(
        TimeoutError,
        match=re.escape(
            "timed out after 4,724 simulated cycles: GAE core not DONE "
            "(STATUS=<Status.BUSY: 1>, T=10, batches=1, "
            "lanes of the last=2)"
        ),
    ):
        overlay.gae.compute(rewards, values, dones)
    assert budget <= sim.cycle - start <= budget + 300
    monkeypatch.undo()
    adv, _ = overlay.gae.compute(rewards, values, dones)
    np.testing.assert_array_equal(adv, make_overlay("emu").gae.compute(rewards, values, dones)[0])


def test_an_overlay_can_hold_some_cores_only():
    from pynq_rl import RLOverlay

    overlay = RLOverlay(backend="emu", cores=("replay",))
    assert [slot.name for slot in overlay.board_spec.cores] == ["replay"] and overlay.replay.capacity == 65536
    with pytest.raises(AttributeError, match=r"has no gae core \(it has \['replay'\]"):
        _ = overlay.gae
    with pytest.raises(ValueError, match="cores must name some of Pynq-Z2's cores"):
        RLOverlay(backend="emu", cores=("gea",))
    with pytest.raises(ValueError, match="on a board the bitstream decides"):
        RLOverlay(backend="board", cores=("gae",))


CARTPOLE_BOUNDS = "--bounds=-4.8,-3,-0.42,-3:4.8,3,0.42,3"


@pytest.mark.parametrize(
    "command",
    [
        ["ppo", "--steps", "1024"],
        ["dqn", "--steps", "200", "--buffer-size", "64"],
        [
            "sarsa",
            "--env",
            "CartPole-v1",
            CARTPOLE_BOUNDS,
            "--episodes",
            "2",
            "--tiling",
            '{"tilings": [{"dims": [0, 1, 2, 3], "tilings": 4, "tiles": 4}]}',
        ],
    ],
    ids=["ppo", "dqn", "sarsa"],
)
def test_train_on_rtl_completes_on_an_arbitrarily_slow_host(command, tmp_path, monkeypatch, capsys):
    """``pynq-rl train ... --backend rtl`` with the wall clock racing 1000 s per look: every wait, the checkpoint's
    policy or priority dump included, is bounded in simulated cycles. PPO and Sarsa run on the Pynq-Z2 build (its core
    alone); DQN's replay core is the small rtl build (64 leaves), whose checkpoint DUMPs every leaf as the full build
    does: the full build's 65,536 leaves took 110 of the case's 140 s in MyHDL, and its dump is checked bit for bit on
    verilator (tests/verilator/test_long_sequences.py)."""
    from pynq_rl.cli import main
    from pynq_rl.host import overlay as overlay_module

    now = [0.0]

    def monotonic():
        now[0] += 1000.0
        return now[0]

    monkeypatch.setattr(polling, "time", types.SimpleNamespace(monotonic=monotonic, sleep=lambda s: None))
    full_size = overlay_module.load_core
    replay_capacities = []

    def small_replay_core(name, backend=None, board=None, timeout_s=None):
        if name != "replay":
            return full_size(name, backend, board, timeout_s)
        core = full_size(name, backend, RTL_REPLAY_TEST_BOARD, timeout_s)
        replay_capacities.append(core.capacity)
        return core

    monkeypatch.setattr(overlay_module, "load_core", small_replay_core)
    assert main(["train", *command, "--backend", "rtl", "--out", str(tmp_path), "--no-progress"]) == 0, (
        capsys.readouterr().err
    )
    summary = json.loads(capsys.readouterr().out)
    assert os.path.isfile(summary["checkpoint"])
    assert summary["run_dir"].startswith(str(tmp_path))
    assert replay_capacities == ([64] if command[0] == "dqn" else [])
    if command[0] == "dqn":
        with np.load(summary["checkpoint"]) as checkpoint:
            assert any("codes" in key for key in checkpoint.files)  # the DUMP's leaf codes reached the checkpoint


def test_timeout_option_reaches_the_driver(tmp_path, monkeypatch, capsys):
    from pynq_rl.cli import main
    from pynq_rl.host import overlay as overlay_module

    seen = []
    real = overlay_module.load_core

    def spy(*args):
        core = real(*args)
        seen.append(core.timeout_s)
        return core

    monkeypatch.setattr(overlay_module, "load_core", spy)
    assert (
        main(
            [
                "train",
                "ppo",
                "--backend",
                "emu",
                "--steps",
                "1024",
                "--timeout",
                "0.75",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    assert seen == [0.75]
    with pytest.raises(SystemExit):
        main(["train", "dqn", "--timeout", "nan", "--out", str(tmp_path)])
    assert "argument --timeout: --timeout must be a finite number of seconds > 0, not 'nan'" in capsys.readouterr().err
