"""Ape-X on Ray: n-step transitions, the epsilon schedule, a run that survives a killed actor, replay server and
learner, an external replay address, and (slow) learning CartPole-v1 on the emulated replay core.
"""

import csv
import dataclasses
import json
import math
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

from pynq_rl.cli import build_parser, main
from pynq_rl.host.agents.common.options import given
from pynq_rl.host.agents.distributed import apex
from pynq_rl.host.agents.distributed.client import ReplayClient
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import serve


def test_actor_epsilons_follow_apex_schedule():
    assert apex.actor_epsilon(0, 1) == pytest.approx(0.4)
    eps = [apex.actor_epsilon(i, 8) for i in range(8)]
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4**8)
    assert all(a > b for a, b in zip(eps, eps[1:]))


def test_nstep_builder_returns_discounts_and_episode_ends():
    gamma = 0.9
    builder = apex.NStepBuilder(3, gamma)
    obs = [np.full(2, k, np.float32) for k in range(6)]
    out = []
    for t in range(4):  # rewards 1, 2, 3, 4; the episode is cut by a time limit after step 4
        out += builder.step(obs[t], t % 2, float(t + 1), obs[t + 1], terminated=False, truncated=(t == 3))
    assert len(out) == 4
    first = out[0]
    np.testing.assert_array_equal(first[0], obs[0])
    assert first[2] == pytest.approx(1 + gamma * 2 + gamma**2 * 3) and first[4] == pytest.approx(gamma**3)
    np.testing.assert_array_equal(first[3], obs[3])
    # the tail of a truncated episode bootstraps from the real last observation with gamma**k, k = steps left
    assert [o[4] for o in out[1:]] == pytest.approx([gamma**3, gamma**2, gamma])
    assert all(np.array_equal(o[3], obs[4]) for o in out[1:])
    assert out[3][2] == pytest.approx(4.0)
    # a terminated episode gives discount 0
    builder = apex.NStepBuilder(3, gamma)
    tail = builder.step(obs[0], 0, 1.0, obs[1], False, False) + builder.step(obs[1], 1, 1.0, obs[2], True, False)
    assert [o[4] for o in tail] == [0.0, 0.0] and [o[2] for o in tail] == pytest.approx([1 + gamma, 1.0])


@pytest.fixture(scope="module")
def local_ray():
    """A small local Ray instance shared by this module's runs (train() leaves it running when it did not start it)."""
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024 * 1024)
    yield
    ray.shutdown()


def small_args(tmp_path, **overrides) -> apex.Args:
    """A run of a few hundred updates: no learning expected, only the machinery."""
    base = dict(
        out_dir=str(tmp_path),
        num_actors=2,
        backend="emu",
        buffer_size=4096,
        learning_starts=100,
        batch_size=32,
        learner_chunk_updates=50,
        actor_chunk_steps=100,
        actor_max_sps=300.0,
        local_buffer_size=25,
        weight_sync_steps=50,
        checkpoint_every_s=1.0,
        max_updates=400,
        max_seconds=300.0,  # a backstop: the runs end on max_updates, in well under a minute on a quiet machine
        target_return=math.inf,
        eval_episodes_per_chunk=1,
        hidden_sizes=(32, 32),
        progress=False,
        actor_max_restarts=3,
    )
    base.update(overrides)
    return apex.Args(**base)


def test_training_survives_a_killed_actor_replay_server_and_learner(local_ray, tmp_path):
    killed, restarted = {}, {}

    def new_pid(handle, old: int, timeout_s: float = 120.0) -> int:
        """The handle's pid once Ray has restarted it (calls to the dying process fail and are retried)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                pid = ray.get(handle.pid.remote(), timeout=timeout_s)
                if pid != old:
                    return pid
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"not restarted within {timeout_s} s")

    def kill(state):
        # blocking here pauses the driver (no new learner chunk is handed out) until Ray has restarted the process
        if "actor" not in killed and state["updates"] >= 50 and 0 in state["actor_pids"]:
            killed["actor"] = state["actor_pids"][0]  # not asked through Ray: the kill lands in a running chunk
            os.kill(killed["actor"], signal.SIGKILL)
            restarted["actor"] = new_pid(state["actors"][0], killed["actor"])
        elif "actor" in killed and "replay" not in killed and state["updates"] >= 150:
            killed["replay"] = ray.get(state["replay_actor"].pid.remote(), timeout=30)
            os.kill(killed["replay"], signal.SIGKILL)
            restarted["replay"] = new_pid(state["replay_actor"], killed["replay"])
        elif "replay" in killed and "learner" not in killed and state["updates"] >= 200 and state["learner_pid"]:
            killed["learner"] = state["learner_pid"]  # its next chunk is already submitted: that chunk is lost
            os.kill(killed["learner"], signal.SIGKILL)
            restarted["learner"] = new_pid(state["learner"], killed["learner"])

    start = time.perf_counter()
    args = small_args(tmp_path, max_updates=300)
    assert args.sample_prefetch == 1  # the default: the learner keeps a batch in flight through all three kills
    summary = apex.train(args, on_progress=kill)
    assert set(killed) == set(restarted) == {"actor", "replay", "learner"}
    assert all(restarted[name] != killed[name] for name in killed)  # Ray restarted each in a new process
    assert summary["stop_reason"] == "max_updates" and summary["updates"] == 300  # training went on
    # the new incarnation ran chunks; its task in flight was lost and resubmitted (actor_restarts 1), unless the
    # chunk had already returned between the driver's wait and the kill (a CI run saw that: actor_restarts 0)
    assert summary["actor_incarnations"] >= args.num_actors + 1 and summary["actor_restarts"] <= 1
    assert summary["learner_restarts"] == 1  # the lost chunk was resubmitted; the learner resumed from its state
    rows = list(csv.DictReader(open(Path(summary["run_dir"]) / "metrics.csv")))
    resumed = [int(row["updates"]) for row in rows if row["resumed"] == "True"]
    assert resumed and resumed[0] > 200  # counting on from the saved chunk, not from 0
    stats = summary["replay_stats"]
    assert stats["restored"]["checkpoint"] or stats["restored"]["log_records"] > 0  # restored from its directory
    assert stats["sample_calls"] > 0 and stats["size"] >= 100  # the learner reconnected and sampled again
    assert time.perf_counter() - start < 300  # a hang detector (retries give up after 60 s): 189 s seen under 3x load


def test_the_learner_keeps_to_its_updates_per_insert(local_ray, tmp_path):
    """A learner faster than its one throttled actor is held at 0.05 updates per inserted transition: its 150
    updates wait for 3,000 inserts (7.5 s of the actor at 400 steps/s; unlimited, they take about a second)."""
    args = small_args(
        tmp_path, num_actors=1, updates_per_insert=0.05, rate_limit_tolerance=5.0, max_updates=150, actor_max_sps=400.0
    )
    threads = torch.get_num_threads()
    summary = apex.train(dataclasses.replace(args, torch_threads=threads + 1))
    assert torch.get_num_threads() == threads  # torch_threads is the Ray workers'; the caller keeps its own
    assert summary["stop_reason"] == "max_updates" and summary["updates"] == 150
    inserted = summary["replay_stats"]["inserted_transitions"]
    assert summary["updates"] <= 0.05 * (inserted - args.learning_starts) + 5
    rows = list(csv.DictReader(open(Path(summary["run_dir"]) / "metrics.csv")))
    assert sum(float(row["charts/rate_limited_s"]) for row in rows) > 0  # it did wait for the actor
    with pytest.raises(ValueError, match=r"^updates_per_insert must be a number >= 0 \(0: unlimited\), not -1.0$"):
        apex.train(small_args(tmp_path, updates_per_insert=-1.0))
    with pytest.raises(ValueError, match=r"^rate_limit_tolerance 1.0 is too small for pushes of up to 28 "):
        apex.train(small_args(tmp_path, rate_limit_tolerance=1.0))


@pytest.mark.slow  # ~30 s, mostly Ray starting worker processes on a loaded 2-core machine
def test_cli_train_apex_with_an_external_replay_address(local_ray, tmp_path, capsys):
    """The replay server runs outside Ray (as on a board): actors and learner reach it by address only."""
    replay = ReplayServer(50_000, (4,), "emu", seed=1)
    server, port = serve(replay, "127.0.0.1:0")
    try:
        assert (
            main(
                [
                    "train",
                    "apex",
                    "--replay-address",
                    f"127.0.0.1:{port}",
                    "--actors",
                    "1",
                    "--max-updates",
                    "100",
                    "--out",
                    str(tmp_path),
                    "--no-progress",
                ]
            )
            == 0
        )
        summary = json.loads(capsys.readouterr().out)
        assert summary["updates"] == 100 and summary["backend"] == "external"
        assert summary["stop_reason"] == "max_updates" and not summary["solved"]
        stats = ReplayClient(f"127.0.0.1:{port}").stats()
        assert stats["sample_calls"] >= 100 and stats["update_calls"] == 100 and stats["push_calls"] > 0
        assert stats["size"] >= 1000  # the learner waited for learning_starts
    finally:
        server.stop(0).wait()
        replay.close()


def test_cli_parses_train_apex():
    argv = ["train", "apex", "--env", "CartPole-v1", "--actors", "4", "--backend", "host"]
    argv += ["--replay-address", "board:50051", "--sample-prefetch", "2", "--hidden-sizes", "64", "64"]
    args = build_parser().parse_args(argv)
    assert args.agent == "apex"
    config = args.make_args(given(args, args.args_cls))
    assert config == apex.Args(
        env_id="CartPole-v1",
        num_actors=4,
        backend="host",
        replay_address="board:50051",
        sample_prefetch=2,
        hidden_sizes=(64, 64),
    )
    for wrong in (["--backend", "fpga"], ["--replay-backend", "emu"], ["--backend", "numpy"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["train", "apex", *wrong])
    args = build_parser().parse_args(["train", "apex"])
    assert args.make_args(given(args, args.args_cls)) == apex.Args()


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"^num_actors must be an integer >= 1, not 0$"):
        apex.train(small_args(tmp_path, num_actors=0))
    with pytest.raises(ValueError, match=r"^backend must be one of .*, not 'fpga'$"):
        apex.train(small_args(tmp_path, backend="fpga"))


def test_train_passes_the_replay_token_to_every_ray_worker(tmp_path, monkeypatch):
    """With $PYNQ_RL_REPLAY_TOKEN (and $PYNQ_RL_REPLAY_TLS_CA) set, the Ray that train() starts (or joins) gets them
    in its runtime_env, so the Ray-hosted replay server, actors and learner all use them; without, no runtime_env."""
    seen = []

    class Stop(Exception):
        pass

    def fake_init(**kwargs):
        seen.append(kwargs.get("runtime_env"))
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    monkeypatch.setenv("PYNQ_RL_REPLAY_TOKEN", "tok")
    monkeypatch.setenv("PYNQ_RL_REPLAY_TLS_CA", "/certs/replay.pem")
    for ray_address in (None, "auto"):
        with pytest.raises(Stop):
            apex.train(small_args(tmp_path, ray_address=ray_address))
    monkeypatch.delenv("PYNQ_RL_REPLAY_TLS_CA")
    with pytest.raises(Stop):
        apex.train(small_args(tmp_path))
    monkeypatch.delenv("PYNQ_RL_REPLAY_TOKEN")
    with pytest.raises(Stop):
        apex.train(small_args(tmp_path))
    both = {"PYNQ_RL_REPLAY_TOKEN": "tok", "PYNQ_RL_REPLAY_TLS_CA": "/certs/replay.pem"}
    assert seen == [{"env_vars": both}] * 2 + [{"env_vars": {"PYNQ_RL_REPLAY_TOKEN": "tok"}}, None]


@pytest.mark.report
@pytest.mark.slow
def test_apex_learns_cartpole_on_emu(tmp_path):
    """2 actors, replay core on emu, Ray started by train() itself: the mean of the last 20 greedy episodes reaches
    100, five times a random policy's (~22) and ten times the untrained network's (~9).

    What this checks is the distributed data path learning end to end (actors' n-step pushes into the core, sampling
    by priority, priority updates, weights back to the actors). Solving (450) is measured, not asserted: runs are
    asynchronous and not reproducible; seeds 0-4 solved after 11,000-35,000 updates, but one CI run of seed 0 stood at
    143 after the whole 50,000-update budget (800 s there). Every seed 0-4 had a window of 100 within 4,000 updates,
    in under half a minute here; the 600 s budget is for a loaded machine (the rate limiter makes learning per update
    machine-independent, only the wall clock stretches), and a run stops as soon as it gets there.
    """
    if ray.is_initialized():
        ray.shutdown()
    summary = apex.train(
        apex.Args(
            out_dir=str(tmp_path), num_actors=2, backend="emu", target_return=100.0, max_seconds=600.0, progress=False
        )
    )
    print({k: summary[k] for k in ("solved", "updates", "actor_steps", "wall_time_s", "eval_mean_return")})
    assert summary["solved"] and summary["eval_mean_return"] >= 100.0
    assert summary["eval_episodes"] >= 20  # a full window of greedy episodes, not one lucky episode
    assert not ray.is_initialized()  # train() shut down the Ray it started


@pytest.mark.slow  # ~40-60 s: a Ray of its own in a subprocess, on a loaded 2-core machine
def test_a_clean_cli_run_shows_a_progress_bar_and_no_ray_noise(tmp_path):
    """``pynq-rl train apex`` as a user runs it: a tqdm bar of the learner's updates, then the summary and the plain
    last line; none of Ray's start-up notes (INFO/WARNING) or its core worker's error-level line about actor
    constructor arguments."""
    import subprocess
    import sys

    small = "--max-updates 100 --learner-chunk-updates 50 --buffer-size 4096 --learning-starts 100 --batch-size 32"
    small += " --actor-chunk-steps 100 --local-buffer-size 25 --actor-max-sps 300 --eval-episodes-per-chunk 1"
    argv = [sys.executable, "-m", "pynq_rl", "train", "apex", "--backend", "host", "--actors", "1", *small.split()]
    argv += ["--hidden-sizes", "32", "32"]
    done = subprocess.run([*argv, "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["updates"] == 100 and summary["stop_reason"] == "max_updates"
    lines = [part for line in done.stderr.splitlines() for part in line.split("\r") if part.strip()]
    assert any("100/100" in part and "update" in part for part in lines), done.stderr  # the tqdm bar, at its end
    assert any(part.startswith("starting Ray, the replay server, the learner and the actors: ready") for part in lines)
    noise = [part for part in lines if re.search(r"\b(INFO|WARNING|ERROR)\b|core_worker| E \d+ \d+\]", part)]
    assert noise == [], noise
    assert lines[-1].startswith("Ape-X on CartPole-v1: final return ") and lines[-1].endswith(summary["run_dir"])
