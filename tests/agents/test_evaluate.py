"""``pynq-rl eval`` and :mod:`pynq_rl.host.agents.evaluate`: a trained agent's checkpoint played with its policy.

Every agent trains a tiny run once (a module fixture, seconds each); the tests evaluate it from the run directory and
from the checkpoint, check the policy against the checkpoint's own weights, and that evaluation learns nothing.
"""

import json
import re
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from pynq_rl.cli import main
from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.common.checkpoints import save_checkpoint
from pynq_rl.host.agents.common.checks import FieldValueError
from pynq_rl.host.agents.evaluate import (
    VideoUnavailable,
    check_video_recording,
    evaluate,
    load_policy,
    read_checkpoint,
    run_episodes,
)

PIXEL_CARTPOLE = "EvalPixelCartPole-v1"
"""CartPole rendering its frames with numpy (classic control's renderer needs pygame): the recorded videos' env"""
NO_FRAMES_CARTPOLE = "EvalNoFramesCartPole-v1"
"""CartPole that declares no rgb_array render mode"""


class PixelCartPole(CartPoleEnv):
    """CartPole whose ``rgb_array`` frame is a white bar at the cart's position on black (64 x 96)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def render(self):
        frame = np.zeros((64, 96, 3), np.uint8)
        x = 0.0 if self.state is None else float(self.state[0])
        column = int(np.clip((x + 2.4) / 4.8 * 95, 0, 95))
        frame[20:44, max(column - 4, 0) : column + 4] = 255
        return frame


class NoFramesCartPole(CartPoleEnv):
    metadata = {"render_modes": [], "render_fps": 50}


gym.register(PIXEL_CARTPOLE, entry_point=PixelCartPole, max_episode_steps=60)
gym.register(NO_FRAMES_CARTPOLE, entry_point=NoFramesCartPole, max_episode_steps=60)


def tiny_ppo(out, **kw):
    base = dict(total_timesteps=1024, num_envs=2, num_steps=64, num_minibatches=2, update_epochs=2, backend="host")
    return ppo.train(ppo.Args(**{**base, **kw, "out_dir": str(out), "progress": False}))


def tiny_dqn(out, **kw):
    base = dict(total_timesteps=600, learning_starts=200, batch_size=32, buffer_size=1000, hidden_sizes=(32,))
    base.update(target_network_frequency=100, backend="host", nn="numpy")
    return dqn.train(dqn.Args(**{**base, **kw, "out_dir": str(out), "progress": False}))


def tiny_sarsa(out, **kw):
    return sarsa.train(sarsa.Args(**{"episodes": 3, "backend": "emu", **kw, "out_dir": str(out), "progress": False}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run directories of tiny trainings, by name."""
    out = tmp_path_factory.mktemp("runs")
    summaries = {
        "ppo-numpy": tiny_ppo(out, nn="numpy"),
        "ppo-torch": tiny_ppo(out, nn="torch"),
        "ppo-box": ppo.train(
            ppo.args_for(
                "Pendulum-v1", total_timesteps=2048, backend="host", nn="numpy", out_dir=str(out), progress=False
            )
        ),
        "dqn": tiny_dqn(out),
        "dqn-explores": tiny_dqn(out, start_e=1.0, end_e=1.0),
        "sarsa-emu": tiny_sarsa(out, epsilon=0.3),
        "sarsa-host": tiny_sarsa(out, backend="host"),
    }
    return {name: summary["run_dir"] for name, summary in summaries.items()}


def checkpoint_of(run_dir):
    return f"{run_dir}/checkpoint.npz"


def mlp(params, x, activation):
    """The float64 forward pass of a checkpoint's ``nn.Sequential`` parameters (``0.weight``, ``0.bias``, ...)."""
    layers = sorted({int(name.split(".")[0]) for name in params})
    h = np.asarray(x, np.float64)
    for i, layer in enumerate(layers):
        h = h @ params[f"{layer}.weight"].astype(np.float64).T + params[f"{layer}.bias"]
        if i < len(layers) - 1:
            h = activation(h)
    return h


# ---------------------------------------------------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------------------------------------------------
AGENT_OF = {"ppo-numpy": "ppo", "ppo-torch": "ppo", "ppo-box": "ppo", "dqn": "dqn", "sarsa-emu": "sarsa"}


@pytest.mark.parametrize("name", sorted(AGENT_OF))
def test_the_run_directory_and_its_checkpoint_give_the_same_consistent_result(runs, name):
    from_run = evaluate(runs[name], episodes=3, seed=5)
    from_checkpoint = evaluate(checkpoint_of(runs[name]), episodes=3, seed=5)
    assert from_run == from_checkpoint  # a deterministic policy evaluated twice: identical returns
    returns, lengths = from_run["returns"], from_run["lengths"]
    assert from_run["agent"] == AGENT_OF[name] and from_run["episodes"] == len(returns) == len(lengths) == 3
    assert from_run["env_id"] == json.load(open(f"{runs[name]}/args.json"))["env_id"]
    assert from_run["mean_return"] == pytest.approx(np.mean(returns))
    assert from_run["std_return"] == pytest.approx(np.std(returns))
    assert (from_run["min_return"], from_run["max_return"]) == (min(returns), max(returns))
    assert from_run["mean_length"] == pytest.approx(np.mean(lengths))
    assert from_run["checkpoint"] == checkpoint_of(runs[name]) and from_run["video_dir"] is None
    assert (from_run["seed"], from_run["deterministic"]) == (5, True)
    assert json.loads(json.dumps(from_run)) == from_run


@pytest.mark.parametrize("name", ["ppo-numpy", "dqn", "sarsa-emu"])
def test_episode_i_is_reset_with_seed_plus_i(runs, name):
    assert (
        evaluate(runs[name], episodes=3, seed=7)["returns"][1:] == evaluate(runs[name], episodes=2, seed=8)["returns"]
    )


def test_the_backend_is_the_runs_unless_given(runs):
    assert evaluate(runs["ppo-numpy"], episodes=1)["backend"] == "host"
    assert evaluate(runs["dqn"], episodes=1, backend="emu")["backend"] == "emu"  # recorded: no replay needed
    assert evaluate(runs["sarsa-emu"], episodes=1)["backend"] == "emu"


@pytest.mark.parametrize("name", ["ppo-numpy", "ppo-torch", "ppo-box"])
def test_a_stochastic_ppo_evaluation_samples_and_repeats_for_a_seed(runs, name):
    first = evaluate(runs[name], episodes=3, seed=1, deterministic=False)
    assert first == evaluate(runs[name], episodes=3, seed=1, deterministic=False)
    assert first["deterministic"] is False
    assert first["returns"] != evaluate(runs[name], episodes=3, seed=1)["returns"]


# ---------------------------------------------------------------------------------------------------------------------
# The policies, against the checkpoints' weights
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ppo-numpy", "ppo-torch"])
def test_ppo_acts_with_the_argmax_of_the_saved_actor(runs, name):
    actor = read_checkpoint(checkpoint_of(runs[name])).state["model"]["actor"]
    policy = load_policy(runs[name])
    observations = np.random.default_rng(0).normal(size=(64, 4)) * [1.0, 1.0, 0.1, 1.0]
    expected = mlp(actor, observations, np.tanh).argmax(axis=1)
    assert [policy.act(obs) for obs in observations] == expected.tolist()


def test_ppo_on_a_box_space_acts_with_the_mean_on_frozen_normalized_observations(runs):
    state = read_checkpoint(checkpoint_of(runs["ppo-box"])).state
    (stats,) = state["env_stats"]["obs_rms"]  # one environment: its statistics exactly
    policy = load_policy(runs["ppo-box"])
    env = policy.wrap(gym.make("Pendulum-v1"))
    raw, _ = gym.make("Pendulum-v1").reset(seed=3)
    obs, _ = env.reset(seed=3)
    np.testing.assert_allclose(obs, np.clip((raw - stats["mean"]) / np.sqrt(stats["var"] + 1e-8), -10, 10), rtol=1e-6)
    for _ in range(5):
        obs, *_ = env.step(policy.act(obs))
    np.testing.assert_array_equal(env.env.obs_rms.mean, stats["mean"])  # frozen: evaluation does not update them
    mean = mlp(state["model"]["actor"], obs[None], np.tanh)[0]
    np.testing.assert_allclose(policy.act(obs), np.clip(mean, -2.0, 2.0), rtol=1e-5, atol=1e-6)


def test_dqn_acts_greedily_on_the_saved_online_network(runs):
    q_network = read_checkpoint(checkpoint_of(runs["dqn"])).state["q_network"]
    policy = load_policy(runs["dqn"])
    observations = np.random.default_rng(1).normal(size=(64, 4))
    expected = mlp({k.removeprefix("network."): v for k, v in q_network.items()}, observations, lambda h: h * (h > 0))
    assert [policy.act(obs) for obs in observations] == expected.argmax(axis=1).tolist()


def test_a_stochastic_dqn_explores_with_the_runs_final_epsilon(runs):
    obs = np.zeros(4, np.float32)
    greedy = load_policy(runs["dqn-explores"])
    exploring = load_policy(runs["dqn-explores"], deterministic=False)  # epsilon 1 to the end: every action random
    assert len({greedy.act(obs) for _ in range(40)}) == 1
    assert {exploring.act(obs) for _ in range(40)} == {0, 1}


def test_sarsa_evaluation_leaves_the_cores_policy_and_the_checkpoint_as_they_were(runs):
    checkpoint = checkpoint_of(runs["sarsa-emu"])
    saved = open(checkpoint, "rb").read()
    policy = load_policy(runs["sarsa-emu"])
    learnt = policy.learner.dump_policy()
    assert np.abs(learnt).max() > 0 and policy.learner.online is False
    run_episodes(policy.wrap(gym.make("MountainCar-v0")), policy.act, 2, 0)
    np.testing.assert_array_equal(policy.learner.dump_policy(), learnt)
    evaluate(runs["sarsa-emu"], episodes=1)
    assert open(checkpoint, "rb").read() == saved


def test_greedy_sarsa_on_the_core_picks_the_best_action_of_the_learnt_weights(runs):
    policy = load_policy(runs["sarsa-emu"])
    weights = policy.learner.dump_policy()
    tiles = sarsa.FloatSarsa(sarsa.default_tiling(2), 3, ([-1.2, -0.07], [0.6, 0.07]))
    states = np.array([-1.2, -0.07]) + np.random.default_rng(2).random((50, 2)) * [1.8, 0.14]
    expected = [int(np.argmax(weights[tiles.tile_indices(s)[0]].sum(axis=0))) for s in states]
    assert [policy.act(s) for s in states] == expected


def test_sarsa_explores_with_the_runs_final_epsilon_only_when_stochastic(runs):
    final = read_checkpoint(checkpoint_of(runs["sarsa-emu"])).state["learner"]["epsilon"]
    assert final == pytest.approx(0.3, abs=1e-4)
    assert load_policy(runs["sarsa-emu"]).learner.epsilon == 0.0
    assert load_policy(runs["sarsa-emu"], deterministic=False).learner.epsilon == pytest.approx(final)
    first = evaluate(runs["sarsa-emu"], episodes=2, deterministic=False)
    assert first == evaluate(runs["sarsa-emu"], episodes=2, deterministic=False)


def test_a_host_sarsa_policy_does_not_run_on_a_core_nor_a_core_policy_on_the_host(runs):
    with pytest.raises(FieldValueError, match=r"host \(float64\) and a core policy are not interchangeable"):
        evaluate(runs["sarsa-host"], episodes=1, backend="emu")
    with pytest.raises(FieldValueError, match=r"not interchangeable"):
        evaluate(runs["sarsa-emu"], episodes=1, backend="host")
    assert evaluate(runs["sarsa-host"], episodes=1)["backend"] == "host"


# ---------------------------------------------------------------------------------------------------------------------
# What is refused
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"episodes": 0}, r"^episodes must be an integer >= 1, not 0$"),
        ({"episodes": 1.5}, r"^episodes must be an integer >= 1, not 1.5$"),
        ({"seed": -1}, r"^seed must be an integer >= 0, not -1$"),
        ({"backend": "fpga"}, r"^backend must be one of"),
    ],
)
def test_bad_values_are_refused_before_anything_is_read(kwargs, message):
    with pytest.raises(FieldValueError, match=message):
        evaluate("no/such/run", **kwargs)


def test_what_is_not_a_checkpoint_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        evaluate(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"is not a run directory \(it has no args.json\)"):
        evaluate(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"is not a pynq-rl checkpoint"):
        evaluate(tmp_path / "notes.txt")
    save_checkpoint(tmp_path / "server.npz", "replay_server", {"leaves": np.zeros(4)})
    with pytest.raises(ValueError, match=r"is a checkpoint of 'replay_server'; evaluation plays those of ppo, dqn"):
        evaluate(tmp_path / "server.npz")


def test_a_run_that_saved_no_checkpoint_is_named(tmp_path):
    run_dir = tiny_ppo(tmp_path, total_timesteps=128, num_steps=64, save_checkpoint=False)["run_dir"]
    with pytest.raises(ValueError, match=r"has no checkpoint.npz"):
        evaluate(run_dir)


# ---------------------------------------------------------------------------------------------------------------------
# Videos
# ---------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pixel_run(tmp_path_factory):
    return tiny_ppo(tmp_path_factory.mktemp("pixel"), env_id=PIXEL_CARTPOLE, total_timesteps=256, nn="numpy")["run_dir"]


def test_every_episode_is_recorded(pixel_run, tmp_path):
    pytest.importorskip("moviepy")
    videos = tmp_path / "videos"
    result = evaluate(pixel_run, episodes=2, video_dir=videos)
    assert result["video_dir"] == str(videos)
    assert sorted(p.name for p in videos.iterdir()) == ["eval-episode-0.mp4", "eval-episode-1.mp4"]
    assert all(p.stat().st_size > 0 for p in videos.iterdir())
    assert result["returns"] == evaluate(pixel_run, episodes=2)["returns"]  # recording changes nothing


def test_without_moviepy_the_error_names_it_before_any_episode(pixel_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "moviepy", None)
    with pytest.raises(VideoUnavailable, match=r"needs moviepy.*pynq-rl\[video\]"):
        evaluate(pixel_run, episodes=1, video_dir=tmp_path / "videos")
    assert not (tmp_path / "videos").exists()


def test_an_environment_without_frames_cannot_be_recorded():
    pytest.importorskip("moviepy")
    with pytest.raises(VideoUnavailable, match=rf"{NO_FRAMES_CARTPOLE} cannot render rgb_array frames"):
        check_video_recording(NO_FRAMES_CARTPOLE)


def test_a_missing_renderer_is_named_with_its_install_command(monkeypatch):
    pytest.importorskip("moviepy")
    monkeypatch.setitem(sys.modules, "pygame", None)  # classic control draws with pygame
    with pytest.raises(VideoUnavailable, match=r"CartPole-v1 needs its renderer: pygame is not installed"):
        check_video_recording("CartPole-v1")


def test_a_real_cartpole_run_is_recorded(runs, tmp_path):
    """CartPole itself, drawn by pygame (the video extra), one video per episode."""
    pytest.importorskip("moviepy")
    pytest.importorskip("pygame")
    result = evaluate(runs["ppo-numpy"], episodes=2, video_dir=tmp_path / "videos")
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 1000 for v in videos), videos
    assert result["returns"] == evaluate(runs["ppo-numpy"], episodes=2)["returns"]


# ---------------------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------------------
def test_cli_eval_prints_the_result_and_one_closing_line(runs, capsys):
    assert main(["eval", runs["ppo-numpy"], "--episodes", "2", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result == evaluate(runs["ppo-numpy"], episodes=2, seed=3)
    line = captured.err.strip().splitlines()[-1]
    expected = (
        rf"^PPO on CartPole-v1: mean return {result['mean_return']:.1f} \+- {result['std_return']:.1f} over 2 "
        rf"episodes \(min {result['min_return']:.1f}, max {result['max_return']:.1f}\), deterministic, seed 3; "
        rf"checkpoint {re.escape(result['checkpoint'])}$"
    )
    assert re.match(expected, line), line


def test_cli_eval_stochastic_and_backend(runs, capsys):
    assert main(["eval", checkpoint_of(runs["sarsa-emu"]), "--episodes", "1", "--stochastic", "--backend", "emu"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["deterministic"] is False
    assert ", stochastic, seed 0;" in captured.err


@pytest.mark.parametrize(
    "argv, status, message",
    [
        (["--episodes", "0"], 2, r"--episodes must be an integer >= 1, not 0$"),
        (["--seed", "-1"], 2, r"--seed must be an integer >= 0, not -1$"),
        (["--backend", "host"], 1, r".*not interchangeable \(--debug shows the traceback\)$"),
    ],
)
def test_cli_eval_refuses_bad_values_in_one_line(runs, capsys, argv, status, message):
    assert main(["eval", runs["sarsa-emu"], *argv]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"^error: " + message, err[0]), err


def test_cli_eval_refuses_what_is_not_a_run_in_one_line(tmp_path, capsys):
    save_checkpoint(tmp_path / "server.npz", "replay_server", {"leaves": np.zeros(4)})
    for source, message in (
        (tmp_path / "missing", r"No such file or directory: .*missing"),
        (tmp_path, r".* is not a run directory"),
        (tmp_path / "server.npz", r".* is a checkpoint of 'replay_server'"),
    ):
        assert main(["eval", str(source)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.match(rf"^error: {message}.* \(--debug shows the traceback\)$", err[0]), err
