"""Ctrl-C and SIGTERM end a ``pynq-rl train`` run with a resumable checkpoint and a summary marked interrupted, exit
status 128 + the signal; ``--resume`` continues from that checkpoint."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pynq_rl.host.agents.common.interrupts import StopOnSignal, TrainingInterrupted, finish

SETTINGS = {
    "ppo": ["--nn", "numpy", "--num-envs", "2", "--num-steps", "64", "--num-minibatches", "2"],
    "dqn": ["--nn", "numpy", "--learning-starts", "64", "--log-every", "5"],
    "sarsa": [],
}
"""small runs that write a metrics row within a few seconds"""
FOREVER = {"ppo": ["--steps", "10000000"], "dqn": ["--steps", "10000000"], "sarsa": ["--episodes", "100000"]}
"""budgets far beyond what the test waits for"""


def command(agent: str, out: Path, *extra: str) -> list[str]:
    """``pynq-rl train <agent>`` on the host, into ``out``."""
    argv = [sys.executable, "-m", "pynq_rl", "train", agent, "--backend", "host", "--out", str(out), "--no-progress"]
    return [*argv, *SETTINGS[agent], *extra]


def start_run(agent: str, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command(agent, out, *FOREVER[agent]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_rows(out: Path, process: subprocess.Popen, rows: int = 2, timeout_s: float = 120.0) -> Path:
    """The run directory, once its metrics.csv holds ``rows`` rows (the loop is running)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        for metrics in out.glob("*/metrics.csv"):
            if len(metrics.read_text().splitlines()) > rows:
                return metrics.parent
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"no metrics after {timeout_s} s: {process.communicate()}")


@pytest.mark.parametrize(
    "agent, signum",
    [("ppo", signal.SIGTERM), ("dqn", signal.SIGINT), ("sarsa", signal.SIGINT)],
    ids=["ppo-SIGTERM", "dqn-SIGINT", "sarsa-SIGINT"],
)
def test_a_signal_ends_the_run_with_a_checkpoint_and_a_summary_and_resume_continues(tmp_path, agent, signum):
    process = start_run(agent, tmp_path / "runs")
    run_dir = wait_for_rows(tmp_path / "runs", process)
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    summary = json.loads(out)  # stdout is still one JSON document
    saved = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is saved["interrupted"] is True
    assert summary["signal"] == saved["signal"] == signal.Signals(signum).name
    assert 0 < saved["global_step"] and summary["checkpoint"] == str(run_dir / "checkpoint.npz")
    assert (run_dir / "checkpoint.npz").is_file()
    last = err.strip().splitlines()[-1]
    assert f"interrupted by {signal.Signals(signum).name} after " in last and last.endswith(
        f"to continue, run the same command with --resume {run_dir / 'checkpoint.npz'}"
    ), err

    # resuming continues from the step (or episode) reached, and runs to its end
    if agent == "sarsa":
        budget = ["--episodes", str(saved["episodes"] + 1)]
    else:
        step_budget = saved["global_step"] + (128 if agent == "ppo" else 10)  # one more PPO iteration: 2 x 64 steps
        budget = ["--steps", str(step_budget)]
    argv = command(agent, tmp_path / "resumed", "--resume", str(run_dir / "checkpoint.npz"), *budget)
    resumed = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = json.loads(resumed.stdout)
    assert after["interrupted"] is False
    if agent == "sarsa":
        assert (after["start_episode"], after["episodes"]) == (saved["episodes"], saved["episodes"] + 1)
    else:
        assert (after["start_step"], after["global_step"]) == (saved["global_step"], step_budget)


def test_stop_on_signal_defers_the_first_signal_and_aborts_on_the_second():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers can only be set from the main thread")
    before = signal.getsignal(signal.SIGINT)  # Python's default, or what the test runner's worker set
    with StopOnSignal() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stop.signum == signal.SIGINT and stop.requested() and stop.stopped
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)
    assert signal.getsignal(signal.SIGINT) is before  # restored
    with pytest.raises(TrainingInterrupted) as raised:
        finish({"global_step": 7, **stop.summary_fields()}, stop)
    assert raised.value.exit_status == 130 and raised.value.summary["interrupted"] is True
    quiet = StopOnSignal()
    assert finish({"x": 1}, quiet) == {"x": 1} and quiet.summary_fields() == {"interrupted": False}
