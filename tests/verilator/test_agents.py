"""The agents learning with their core on the ``verilator`` backend (the shipped Pynq-Z2 build's converted Verilog).

* The backends are bit-exact by design, so a run on ``verilator`` is the same run as on ``emu``: short DQN runs
  (priorities in the replay core: sampling from the core's PRNG, updates) and Sarsa runs (the whole learner in the
  ParSa core; with exploration too, from the core's PRNG) must give identical episodes, identical logged metrics
  (losses, replay totals, the core's cycle counts) and identical checkpoints (networks, replay leaves and PRNG state,
  the Sarsa policy).
* ``benchmarks/verilator_agents.py`` runs end to end at a tiny size and writes complete results.
* PPO with q8 GAE on the verilated core (the default 8-bit mode), with and without dynamic reward standardization:
  the same run as on ``emu`` over 4 rollouts. Learning itself is checked once, on ``emu`` (``tests/agents/test_ppo.py``
  trains the q8 configuration to CartPole's threshold, >= 475 after 299,008 steps); ``benchmarks/verilator_agents.py``
  trains on both backends for the 300k-step figures.
"""

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.agents import dqn, ppo, sarsa
from tests.common.boards import require_verilator

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "verilator_agents.py"
UNTIMED = {"charts/SPS"}
"""logged columns that measure the host's speed, not the run (besides ``time/...``)"""


@pytest.fixture(autouse=True)
def _verilator():
    require_verilator()


def logged_rows(run_dir: str) -> list[dict]:
    """A run's ``metrics.csv`` without the columns that time the host."""
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        return [
            {k: v for k, v in row.items() if not k.startswith("time/") and k not in UNTIMED}
            for row in csv.DictReader(f)
        ]


def episodes(run_dir: str) -> list[list[str]]:
    """A run's ``episodes.csv``: global step, return and length of every episode."""
    with open(os.path.join(run_dir, "episodes.csv"), newline="") as f:
        return list(csv.reader(f))


def assert_same_tree(a, b, path="checkpoint"):
    """Two nested checkpoint trees hold the same keys and identical values, arrays bit for bit."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for key in a:
            assert_same_tree(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_tree(x, y, f"{path}[{i}]")
    else:
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=path)


def without_backend(state: dict) -> dict:
    """A checkpoint without what names the backend (the args, Sarsa's ``backend``): everything else must match."""
    return {k: v for k, v in state.items() if k not in ("args", "backend")}


def assert_same_runs(runs: dict, load_checkpoint) -> None:
    """The emu and verilator runs of one agent took the same episodes, logged the same metrics, saved the same
    checkpoint."""
    emu, verilated = runs["emu"], runs["verilator"]
    assert verilated["episode_returns"] == emu["episode_returns"]
    assert verilated["episode_lengths"] == emu["episode_lengths"]
    assert episodes(verilated["run_dir"]) == episodes(emu["run_dir"])
    rows = logged_rows(emu["run_dir"])
    assert rows and logged_rows(verilated["run_dir"]) == rows
    assert_same_tree(
        without_backend(load_checkpoint(emu["checkpoint"])), without_backend(load_checkpoint(verilated["checkpoint"]))
    )


def test_dqn_with_priorities_in_the_verilated_replay_core_is_the_emu_run(tmp_path):
    """3,000 steps, 1,000 gradient steps on batches sampled by the core (a smaller network and batch than the
    defaults: the replay core is what is compared)."""
    runs = {
        backend: dqn.train(
            dqn.Args(
                total_timesteps=3_000,
                learning_starts=1_000,
                batch_size=64,
                buffer_size=4_096,
                hidden_sizes=(64, 64),
                target_network_frequency=250,
                nn="numpy",
                seed=0,
                backend=backend,
                log_every=20,
                out_dir=str(tmp_path / backend),
                progress=False,
            )
        )
        for backend in ("emu", "verilator")
    }
    assert runs["verilator"]["backend"] == "verilator" and runs["emu"]["backend"] == "emu"
    assert runs["emu"]["gradient_steps"] == 1_000
    assert_same_runs(runs, dqn.load_checkpoint)
    leaves = dqn.load_checkpoint(runs["emu"]["checkpoint"])["replay_buffer"]["priorities"]
    assert len(set(np.asarray(leaves["codes"]).ravel().tolist())) > 100  # the TD errors reached the leaves


@pytest.mark.parametrize("epsilon", [0.0, 0.1], ids=["default", "exploring"])
def test_sarsa_in_the_verilated_parsa_core_is_the_emu_run(tmp_path, epsilon):
    """MountainCar-v0, 50 episodes of the default settings (greedy from optimistic values; the goal is first reached
    in episode 39), and the same with epsilon 0.1 so that the core's PRNG picks actions too."""
    runs = {
        backend: sarsa.train(
            sarsa.Args(
                episodes=50, seed=0, epsilon=epsilon, backend=backend, out_dir=str(tmp_path / backend), progress=False
            )
        )
        for backend in ("emu", "verilator")
    }
    assert runs["verilator"]["backend"] == "verilator"
    assert_same_runs(runs, sarsa.load_checkpoint)
    assert max(runs["emu"]["episode_returns"]) > -200  # some episode reached the goal: the policy learnt


def test_the_benchmark_runs_tiny_and_writes_complete_results(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--ppo-steps",
            "2048",
            "--dqn-steps",
            "1500",
            "--dqn-learning-starts",
            "500",
            "--sarsa-episodes",
            "3",
            "--nn",
            "numpy",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    data = json.loads((tmp_path / "verilator_agents.json").read_text())
    page = (tmp_path / "verilator_agents.md").read_text()
    assert data["environment"]["git_commit"] and data["verilator_version"]
    assert data["config"] == {
        "seed": 0,
        "nn": "numpy",
        "board": "Pynq-Z2",
        "ppo_steps": 2048,
        "dqn_steps": 1500,
        "dqn_learning_starts": 500,
        "sarsa_episodes": 3,
    }
    rows = {(row["agent"], row["backend"]): row for row in data["rows"]}
    assert sorted(rows) == sorted((a, b) for a in ("ppo", "dqn", "sarsa") for b in ("emu", "verilator"))
    steps = {"ppo": 2048, "dqn": 1500, "sarsa": 600}  # Sarsa: 3 episodes of MountainCar's 200-step limit
    for (agent, backend), row in rows.items():
        assert row["status"] == "ok", row
        assert row["steps"] == steps[agent] and row["episodes"] == len(row["episode_returns"]) > 0
        assert math.isfinite(row["mean_return_last20"]) and row["wall_time_s"] > 0 and row["warm_up_s"] > 0
        assert f"| {agent} | {row['env']} | {row['offload']} | {backend} | {row['steps']:,} |" in page
        if backend == "verilator":
            assert row["identical_to_emu"] is True
            assert row["wall_time_ratio_to_emu"] == pytest.approx(
                row["wall_time_s"] / rows[(agent, "emu")]["wall_time_s"], rel=0.01
            )
    for backend in ("emu", "verilator"):
        assert rows[("sarsa", backend)]["mean_steps_last20"] == 200.0
        assert rows[("sarsa", backend)]["goal_episodes"] == 0
    assert "| backend | mean steps, last 20 |" in page


@pytest.mark.parametrize("reward_norm", [None, "dynamic"], ids=["q8", "q8-dynamic"])
def test_ppo_with_gae_in_the_verilated_core_is_the_emu_run(tmp_path, reward_norm):
    """4 rollouts of 8 x 128 steps with q8 GAE (the default mode) on the core, with and without HEPPO's dynamic reward
    standardization: the same episodes, metrics and checkpoint as on emu. The q8 run, carried on to 300k steps, is the
    one ``tests/agents/test_ppo.py`` trains on emu to CartPole's threshold (>= 475), so the verilated core solves it in
    the same steps."""
    runs = {
        backend: ppo.train(
            ppo.Args(
                total_timesteps=4 * 8 * 128,
                seed=0,
                backend=backend,
                reward_norm=reward_norm,
                out_dir=str(tmp_path / backend),
                progress=False,
            )
        )
        for backend in ("emu", "verilator")
    }
    assert runs["verilator"]["backend"] == "verilator" and runs["emu"]["backend"] == "emu"
    assert runs["emu"]["global_step"] == 4 * 8 * 128 and len(runs["emu"]["episode_returns"]) > 20
    assert_same_runs(runs, ppo.load_checkpoint)
