"""The agents' shared run scaffold: backends, schedules and checkpoint periods, checkpoints without pickle,
TensorBoard event files, learning-curve plots."""

import dataclasses
import importlib.util
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.common import checkpoints, checks, run, rundir
from pynq_rl.host.agents.distributed import apex_args
from pynq_rl.host.agents.plot import chain_resumed, group_label, group_runs, load_run, plot_runs


# ---------------------------------------------------------------------------------------------------------------------
# One backend field, one checkpoint unit, shared schedules
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args_cls", [ppo.Args, dqn.Args, sarsa.Args, apex_args.Args], ids=["ppo", "dqn", "sarsa", "apex"]
)
def test_every_agent_names_its_offload_target_backend_with_the_same_default(args_cls):
    fields = {f.name for f in dataclasses.fields(args_cls)}
    assert "backend" in fields and not fields & {"gae_backend", "replay_backend"}
    assert args_cls().backend == "emu"  # the command line's default too (tests/test_cli.py)


@pytest.mark.parametrize("args_cls, old", [(ppo.Args, "gae_backend"), (dqn.Args, "replay_backend")])
def test_the_former_backend_fields_are_gone(args_cls, old):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{old}'"):
        args_cls(**{old: "emu"})


@pytest.mark.parametrize("backend", ["numpy", "float"])
def test_the_former_host_names_are_refused_with_the_new_one(backend):
    message = rf"^backend must be one of .*, not '{backend}' \(the host reference, formerly .* is 'host'\)$"
    with pytest.raises(ValueError, match=message):
        checks.check_backend(backend)


def test_linear_schedule():
    assert run.linear_schedule(1.0, 0.05, 100, 0) == 1.0
    assert run.linear_schedule(1.0, 0.05, 100, 50) == pytest.approx(0.525)
    assert run.linear_schedule(1.0, 0.05, 100, 500) == 0.05
    assert run.linear_schedule(0.4, 1.0, 10, 20) == 1.0
    assert run.linear_schedule(1.0, 0.05, 0, 0) == 0.05


def test_checkpoint_due_counts_environment_steps_whatever_the_stride():
    # one step at a time (DQN with 1 env): exactly at the multiples
    assert [t for t in range(1, 1001) if run.checkpoint_due(t - 1, t, 250)] == [250, 500, 750, 1000]
    # 192 steps at a time (a PPO iteration): once per multiple, at the first iteration that reaches it
    assert [t for t in range(192, 1153, 192) if run.checkpoint_due(t - 192, t, 250)] == [384, 576, 768, 1152]
    # a stride longer than the period saves once, not once per multiple crossed; 0 never saves
    assert run.checkpoint_due(0, 1000, 250) and not run.checkpoint_due(1000, 1100, 250)
    assert not any(run.checkpoint_due(t - 1, t, 0) for t in range(1, 100))


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def test_checkpoint_round_trips_nested_state_without_pickle(tmp_path):
    state = {
        "a": np.arange(6, dtype=np.int32).reshape(2, 3),
        "nested": {"x": [np.ones(2), 3, "text", None]},
        "flag": True,
        "f": 0.5,
        "scalar": np.float32(2.5),
    }
    path = tmp_path / "c.npz"
    checkpoints.save_checkpoint(path, "unit", state)
    back = checkpoints.load_checkpoint(path, "unit")
    np.testing.assert_array_equal(back["a"], state["a"])
    assert back["a"].dtype == np.int32
    np.testing.assert_array_equal(back["nested"]["x"][0], np.ones(2))
    assert back["nested"]["x"][1:] == [3, "text", None] and back["flag"] is True and back["scalar"] == 2.5
    with pytest.raises(ValueError, match=r"is not a pynq-rl other checkpoint of format 2: it holds agent 'unit'"):
        checkpoints.load_checkpoint(path, "other")


@pytest.mark.parametrize(
    "state, error, message",
    [
        ({"x": object()}, TypeError, r"^a checkpoint holds arrays, numbers, strings, lists and dicts, not object"),
        ({"a/b": 1}, ValueError, r"^checkpoint keys must be strings without '/', not 'a/b'"),
        ({1: 1}, ValueError, r"^checkpoint keys must be strings without '/', not 1"),
        ({"x": np.array([object()])}, TypeError, r"^a checkpoint cannot hold object arrays$"),
    ],
)
def test_checkpoint_refuses_what_it_cannot_store_and_writes_nothing(tmp_path, state, error, message):
    with pytest.raises(error, match=message):
        checkpoints.save_checkpoint(tmp_path / "c.npz", "unit", state)
    assert os.listdir(tmp_path) == []


def test_missing_checkpoint_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        checkpoints.load_checkpoint(tmp_path / "nothing.npz", "ppo")


# ---------------------------------------------------------------------------------------------------------------------
# Run directories
# ---------------------------------------------------------------------------------------------------------------------
def test_runs_started_in_the_same_second_get_directories_of_their_own(tmp_path, monkeypatch):
    """CleanRL's run name has one-second resolution: two runs of one seed started together (two scripts, two jobs
    of an experiment) must not write into one directory."""
    monkeypatch.setattr(rundir.time, "time", lambda: 1_700_000_000.5)
    args = ppo.Args(env_id="CartPole-v1", seed=3, out_dir=str(tmp_path / "runs"))
    runs = [rundir.Run(args, ("global_step",)) for _ in range(3)]
    try:
        names = [r.name for r in runs]
        base = "CartPole-v1__ppo__3__1700000000"
        assert names == [base, f"{base}__2", f"{base}__3"]
        assert sorted(os.listdir(tmp_path / "runs")) == sorted(names)
        assert all(json.loads(Path(r.dir, "args.json").read_text())["seed"] == 3 for r in runs)
    finally:
        for r in runs:
            r.abandon()
    assert os.listdir(tmp_path / "runs") == []  # nothing recorded: every one removed its own directory only


# ---------------------------------------------------------------------------------------------------------------------
# TensorBoard
# ---------------------------------------------------------------------------------------------------------------------
def read_scalars(run_dir: str) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the run's TensorBoard event files (TFRecord framing parsed here, events by tensorboardX)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(os.listdir(run_dir)):
        if not name.startswith("events.out.tfevents"):
            continue
        data = Path(run_dir, name).read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            event = event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


needs_tensorboardx = pytest.mark.skipif(importlib.util.find_spec("tensorboardX") is None, reason="no tensorboardX")


@needs_tensorboardx
@pytest.mark.parametrize("agent", ["ppo", "dqn", "sarsa"])
def test_every_agent_writes_tensorboard_scalars(tmp_path, agent):
    if agent == "ppo":
        summary = ppo.train(
            ppo.Args(
                total_timesteps=256,
                num_envs=2,
                num_steps=64,
                num_minibatches=2,
                update_epochs=1,
                nn="numpy",
                tensorboard=True,
                out_dir=str(tmp_path),
                progress=False,
            )
        )
        expected = {"losses/value_loss", "losses/policy_loss", "charts/SPS"}
    elif agent == "dqn":
        summary = dqn.train(
            dqn.Args(
                total_timesteps=300,
                learning_starts=100,
                batch_size=16,
                buffer_size=500,
                hidden_sizes=(16,),
                log_every=10,
                nn="numpy",
                tensorboard=True,
                out_dir=str(tmp_path),
                progress=False,
            )
        )
        expected = {"losses/td_loss", "charts/epsilon", "replay/total"}
    else:
        summary = sarsa.train(
            sarsa.Args(episodes=2, backend="host", tensorboard=True, out_dir=str(tmp_path), progress=False)
        )
        expected = {"charts/epsilon", "charts/return_mean20"}
    scalars = read_scalars(summary["run_dir"])
    assert expected <= set(scalars), sorted(scalars)
    episodes = scalars["charts/episodic_return"]
    assert [r for _, r in episodes] == pytest.approx(summary["episode_returns"])
    assert all(step > 0 for step, _ in episodes)


def test_tensorboard_without_tensorboardx_is_refused_before_the_run_starts(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorboardX" else real(name, *a)
    )
    with pytest.raises(ValueError, match=r"^tensorboard needs tensorboardX \(pip install 'pynq-rl\[tensorboard\]'\)"):
        ppo.train(ppo.Args(total_timesteps=256, num_envs=2, num_steps=64, tensorboard=True, out_dir=str(tmp_path)))
    assert os.listdir(tmp_path) == []  # no run directory was created


# ---------------------------------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------------------------------
def fake_run(root: Path, name: str, args: dict, returns: list[float], step: int = 10, first: int = 0) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "args.json").write_text(json.dumps(args))
    lines = ["global_step,charts/episodic_return,charts/episodic_length"]
    lines += [f"{first + step * (i + 1)},{r},{int(r)}" for i, r in enumerate(returns)]
    (path / "episodes.csv").write_text("\n".join(lines) + "\n")
    return path


def test_load_run_smooths_over_the_last_episodes(tmp_path):
    path = fake_run(tmp_path, "r", {"exp_name": "ppo", "env_id": "E", "seed": 0}, [1, 2, 3, 4, 5, 6])
    curve = load_run(path, smooth=3)
    np.testing.assert_allclose(curve.returns, [1, 1.5, 2, 3, 4, 5])
    np.testing.assert_array_equal(curve.steps, [10, 20, 30, 40, 50, 60])
    with pytest.raises(ValueError, match=r"is not a run directory \(needs args.json and episodes.csv\)$"):
        load_run(tmp_path)


def test_runs_differing_only_in_seed_form_one_group_and_the_plot_is_written(tmp_path):
    base = {"exp_name": "ppo", "env_id": "CartPole-v1", "nn": "numpy", "backend": "emu"}
    paths = [
        fake_run(
            tmp_path, f"s{seed}", {**base, "seed": seed, "out_dir": f"x{seed}"}, [10.0 * seed + i for i in range(30)]
        )
        for seed in range(3)
    ]
    paths.append(fake_run(tmp_path, "torch", {**base, "seed": 0, "nn": "torch"}, [5.0] * 30))
    groups = group_runs([load_run(p) for p in paths])
    assert sorted(len(g) for g in groups.values()) == [1, 3]
    out = plot_runs(paths, tmp_path / "plots" / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_an_interrupted_run_and_its_resumed_continuation_plot_as_one_run(tmp_path):
    """The continuation's ``resume`` names the first run's checkpoint: the two are one curve (the smoothing runs across
    the join), and a group with another seed still gets its band."""
    base = {"exp_name": "ppo", "env_id": "CartPole-v1", "backend": "emu"}
    first = fake_run(tmp_path, "first", {**base, "seed": 0}, [1.0, 2.0, 3.0])
    later = fake_run(
        tmp_path, "later", {**base, "seed": 0, "resume": str(first / "checkpoint.npz")}, [4.0, 5.0], first=30
    )
    other = fake_run(tmp_path, "other", {**base, "seed": 1}, [1.0] * 5)
    (joined, seed1) = chain_resumed([load_run(p, smooth=2) for p in (first, later, other)])
    np.testing.assert_array_equal(joined.steps, [10, 20, 30, 40, 50])
    np.testing.assert_allclose(joined.returns, [1.0, 1.5, 2.5, 3.5, 4.5])
    assert joined.path == first and seed1.path == other
    out = plot_runs([first, later, other], tmp_path / "curves.png")  # two seeds, one band: no "share no range"
    assert out.stat().st_size > 10_000
    resumed_from_the_directory = fake_run(tmp_path, "again", {**base, "seed": 0, "resume": str(first)}, [6.0], first=30)
    assert len(chain_resumed([load_run(first), load_run(resumed_from_the_directory)])) == 1


def test_older_run_directories_are_read_in_todays_names(tmp_path):
    """A run written when PPO said gae_backend, DQN replay_backend="numpy" and Sarsa backend="float" groups and labels
    with today's runs."""
    old = fake_run(tmp_path, "old", {"exp_name": "dqn", "env_id": "E", "seed": 0, "replay_backend": "numpy"}, [1.0] * 5)
    new = fake_run(tmp_path, "new", {"exp_name": "dqn", "env_id": "E", "seed": 1, "backend": "host"}, [2.0] * 5)
    curves = [load_run(old), load_run(new)]
    assert [c.args["backend"] for c in curves] == ["host", "host"] and len(group_runs(curves)) == 1
    assert curves[0].label == "dqn E (backend=host)"
    ppo_run = fake_run(tmp_path, "ppo", {"exp_name": "ppo", "env_id": "E", "seed": 0, "gae_backend": "emu"}, [1.0])
    assert load_run(ppo_run).args["backend"] == "emu" and "gae_backend" not in load_run(ppo_run).args
    sarsa_run = fake_run(tmp_path, "sarsa", {"exp_name": "sarsa", "env_id": "E", "seed": 0, "backend": "float"}, [1.0])
    assert load_run(sarsa_run).args["backend"] == "host"


def test_the_legend_counts_distinct_seeds(tmp_path):
    """Four runs of one setting, seed 2 run twice: three seeds, not four."""
    base = {"exp_name": "ppo", "env_id": "CartPole-v1", "backend": "emu"}
    paths = [
        fake_run(tmp_path, f"run{i}", {**base, "seed": seed}, [1.0 + i] * 10) for i, seed in enumerate((0, 1, 2, 2))
    ]
    (group,) = group_runs([load_run(p) for p in paths]).values()
    assert group_label(group) == "ppo CartPole-v1 (backend=emu), 3 seeds (4 runs)"
    assert group_label(group[:3]) == "ppo CartPole-v1 (backend=emu), 3 seeds"
    assert group_label(group[2:]) == "ppo CartPole-v1 (backend=emu), seed 2 (2 runs)"
    assert group_label(group[:1]) == "ppo CartPole-v1 (backend=emu), seed 0"
