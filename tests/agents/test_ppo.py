"""PPO agent: GAE step against a float64 reference, truncation bootstrapping, smoke training on both network
backends, checkpoints (and their exchange between torch and numpy networks).

The fast tests take a few seconds each; ``slow`` are the learning tests (CartPole-v1 solved within 300k steps).
"""

import csv
import json
import os
from dataclasses import asdict

import gymnasium as gym
import numpy as np
import pytest

from pynq_rl.host.agents.common.checks import FieldValueError
from pynq_rl.host.agents.common.envs import make_envs
from pynq_rl.host.agents.common.run import torch_available
from pynq_rl.host.agents.nets.learners import make_actor_critic
from pynq_rl.host.agents.ppo import (
    Args,
    check_args,
    collect_rollout,
    compute_gae,
    load_checkpoint,
    save_checkpoint,
    train,
)
from pynq_rl.host.agents.ppo import training as ppo_module
from pynq_rl.host.agents.ppo.standardize import RewardStandardizer

NN_BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.skipif(not torch_available(), reason="no torch"))]


def assert_same_tree(a, b):
    """Two nested state dicts hold the same keys and bit-identical arrays."""
    if isinstance(a, dict):
        assert set(a) == set(b)
        for key in a:
            assert_same_tree(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_tree(x, y)
    else:
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


# ---------------------------------------------------------------------------------------------------------------------
# float64 references
# ---------------------------------------------------------------------------------------------------------------------
def gae_reference(rewards, values, dones, gamma, lam):
    """Textbook GAE in float64, element by element (d_t = 1: the episode ended at step t)."""
    rewards, values, dones = (np.asarray(x, dtype=np.float64) for x in (rewards, values, dones))
    num_steps, num_envs = rewards.shape
    advantages = np.zeros((num_steps, num_envs))
    for n in range(num_envs):
        last = 0.0
        for t in reversed(range(num_steps)):
            nonterminal = 1.0 - dones[t, n]
            delta = rewards[t, n] + gamma * nonterminal * values[t + 1, n] - values[t, n]
            last = delta + gamma * lam * nonterminal * last
            advantages[t, n] = last
    return advantages, advantages + values[:-1]


def discounted_return_reference(rewards, values, dones, gamma):
    """Sum of gamma**k r_{t+k} up to the episode end, bootstrapped with V_T if the rollout ends first."""
    num_steps, num_envs = rewards.shape
    out = np.zeros((num_steps, num_envs))
    for n in range(num_envs):
        for t in range(num_steps):
            total, discount = 0.0, 1.0
            for k in range(t, num_steps):
                total += discount * rewards[k, n]
                discount *= gamma
                if dones[k, n]:
                    break
            else:
                total += discount * values[num_steps, n]
            out[t, n] = total
    return out


class ReferenceGae:
    """Fake GAE core: the driver's ``compute`` signature, float64 numpy inside, float32 out; records its calls."""

    def __init__(self):
        self.calls = []

    def compute(self, rewards, values, dones, *, gamma, lam, quantize):
        self.calls.append(
            dict(
                shapes=(rewards.shape, values.shape, dones.shape),
                dtypes=(rewards.dtype, values.dtype, dones.dtype),
                gamma=gamma,
                lam=lam,
                quantize=quantize,
            )
        )
        advantages, returns = gae_reference(rewards, values, dones, gamma, lam)
        return advantages.astype(np.float32), returns.astype(np.float32)


class HostLoopGae:
    """Fake GAE core that runs exactly the host loop: offloading through it must change nothing."""

    def compute(self, rewards, values, dones, *, gamma, lam, quantize):
        return compute_gae(rewards, values, dones, gamma, lam)


def random_rollout(num_steps=123, num_envs=7, seed=42):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(num_steps, num_envs))
    values = rng.normal(size=(num_steps + 1, num_envs))
    dones = (rng.random((num_steps, num_envs)) < 0.05).astype(np.float64)
    dones[-1, 0] = 1.0  # a done on the last step: the bootstrap value must not leak in
    dones[:, 1] = 0.0  # a lane with no done at all: bootstrapped from V_T
    return rewards, values, dones


def tiny_args(tmp_path, **kw):
    base = dict(
        total_timesteps=512,
        num_envs=2,
        num_steps=64,
        num_minibatches=2,
        update_epochs=2,
        backend="host",
        out_dir=str(tmp_path),
        progress=False,
    )
    base.update(kw)
    return Args(**base)


# ---------------------------------------------------------------------------------------------------------------------
# GAE step
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gamma, lam", [(0.99, 0.95), (0.9, 0.0), (0.97, 1.0), (1.0, 1.0)])
def test_compute_gae_matches_float64_reference_at_odd_shapes(gamma, lam):
    rewards, values, dones = random_rollout()
    adv, ret = compute_gae(*(np.asarray(x, dtype=np.float32) for x in (rewards, values, dones)), gamma, lam)
    ref_adv, ref_ret = gae_reference(rewards, values, dones, gamma, lam)
    assert adv.shape == ret.shape == (123, 7) and adv.dtype == ret.dtype == np.float32
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-4, atol=1e-4)


def test_compute_gae_lambda_zero_is_td_error():
    rewards, values, dones = random_rollout()
    gamma = 0.99
    adv, _ = compute_gae(rewards, values, dones, gamma, 0.0)
    td = rewards + gamma * (1.0 - dones) * values[1:] - values[:-1]
    np.testing.assert_allclose(adv, td, rtol=1e-12, atol=1e-12)


def test_compute_gae_lambda_one_is_discounted_return_minus_value():
    rewards, values, dones = random_rollout()
    gamma = 0.95
    adv, ret = compute_gae(rewards, values, dones, gamma, 1.0)
    disc = discounted_return_reference(rewards, values, dones, gamma)
    np.testing.assert_allclose(adv, disc - values[:-1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ret, disc, rtol=1e-10, atol=1e-10)


def test_compute_gae_rejects_bad_shapes():
    r = np.zeros((5, 3), np.float32)
    with pytest.raises(ValueError, match=r"^expected rewards \(T, N\), values \(T \+ 1, N\)"):
        compute_gae(r, np.zeros((5, 3), np.float32), r, 0.99, 0.95)


# ---------------------------------------------------------------------------------------------------------------------
# Rollout: truncation bootstrapping under SAME_STEP autoreset
# ---------------------------------------------------------------------------------------------------------------------
class CounterEnv(gym.Env):
    """obs = [steps taken in this episode], reward 1; terminates after ``terminate_at`` steps (None: never)."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, terminate_at=None):
        self.terminate_at = terminate_at
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return np.array([self.t], np.float32), 1.0, terminated, False, {}


class LinearValueAgent:
    """Stub agent: always action 0, V(obs) = 10 * obs + 1 (so V(final obs) and V(reset obs) differ)."""

    def value(self, x):
        return 10.0 * x[:, 0] + 1.0

    def act(self, x):
        n = x.shape[0]
        return np.zeros(n, np.int64), np.zeros(n, np.float32), self.value(x)


def test_truncated_steps_fold_gamma_v_final_obs_and_terminated_steps_do_not():
    limit, gamma, num_steps = 3, 0.9, 7
    envs = make_envs(
        [
            lambda: gym.wrappers.TimeLimit(CounterEnv(terminate_at=2), max_episode_steps=limit),  # terminates at t=2
            lambda: gym.wrappers.TimeLimit(CounterEnv(terminate_at=None), max_episode_steps=limit),  # truncated at 3
            lambda: gym.wrappers.TimeLimit(CounterEnv(terminate_at=3), max_episode_steps=limit),  # both at 3
        ]
    )
    obs, _ = envs.reset(seed=0)
    rollout, next_obs, global_step = collect_rollout(envs, LinearValueAgent(), obs, num_steps, gamma, global_step=0)
    envs.close()

    # episode counters seen by the agent: the step after a done starts from the reset observation (SAME_STEP)
    expected_obs = np.array([[0, 1, 0, 1, 0, 1, 0], [0, 1, 2, 0, 1, 2, 0], [0, 1, 2, 0, 1, 2, 0]], np.float32).T
    np.testing.assert_array_equal(rollout.observations[..., 0], expected_obs)
    expected_dones = np.zeros((num_steps, 3), np.float32)
    expected_dones[[1, 3, 5], 0] = 1
    expected_dones[[2, 5], 1] = 1
    expected_dones[[2, 5], 2] = 1
    np.testing.assert_array_equal(rollout.dones, expected_dones)
    np.testing.assert_array_equal(rollout.rewards, np.ones((num_steps, 3), np.float32))

    # only the truncated-but-not-terminated steps get gamma * V(final obs), with final obs = [limit], not [0]
    expected_boot = np.zeros((num_steps, 3), np.float32)
    expected_boot[[2, 5], 1] = gamma * (10.0 * limit + 1.0)
    np.testing.assert_allclose(rollout.truncation_bootstraps, expected_boot, rtol=1e-6)

    # values: V(obs_t) and V(next_obs) in the last row
    np.testing.assert_allclose(rollout.values[:-1], 10.0 * expected_obs + 1.0)
    np.testing.assert_allclose(rollout.values[-1], 10.0 * next_obs[:, 0] + 1.0)
    assert global_step == num_steps * 3
    assert sorted((r, n) for _, r, n in rollout.episodes) == [(2.0, 2)] * 3 + [(3.0, 3)] * 4

    # end to end: at a truncated step the advantage is r + gamma V(final) - V(obs), at a terminated one r - V(obs)
    adv, _ = compute_gae(rollout.rewards + rollout.truncation_bootstraps, rollout.values, rollout.dones, gamma, 0.0)
    assert adv[2, 1] == pytest.approx(1.0 + gamma * 31.0 - 21.0)
    assert adv[2, 2] == pytest.approx(1.0 - 21.0)


def test_collect_rollout_rejects_next_step_autoreset():
    envs = gym.vector.SyncVectorEnv([lambda: CounterEnv()])  # gymnasium's default: NEXT_STEP
    obs, _ = envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"^envs must autoreset in SAME_STEP mode .*not <AutoresetMode.NEXT_STEP"):
        collect_rollout(envs, LinearValueAgent(), obs, 4, 0.99)
    envs.close()


# ---------------------------------------------------------------------------------------------------------------------
# Training smoke tests
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nn", NN_BACKENDS)
def test_train_smoke_writes_cleanrl_metrics(tmp_path, nn):
    summary = train(tiny_args(tmp_path, nn=nn))
    assert summary["global_step"] == 512 and summary["iterations"] == 4 and summary["nn"] == nn
    assert summary["run_name"].startswith("CartPole-v1__ppo__0__")
    assert os.path.dirname(summary["run_dir"]) == str(tmp_path)
    assert len(summary["episode_returns"]) == len(summary["episode_lengths"]) > 0
    assert summary["mean_return_last20"] == pytest.approx(np.mean(summary["episode_returns"][-20:]))
    with open(os.path.join(summary["run_dir"], "metrics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    for key in (
        "charts/episodic_return",
        "charts/SPS",
        "charts/learning_rate",
        "losses/value_loss",
        "losses/policy_loss",
        "losses/entropy",
        "losses/approx_kl",
        "losses/clipfrac",
        "losses/explained_variance",
        "time/gae[ms]",
    ):
        assert key in rows[0]
    assert [int(r["global_step"]) for r in rows] == [128, 256, 384, 512]
    with open(os.path.join(summary["run_dir"], "metrics.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    assert [line["iteration"] for line in lines] == [1, 2, 3, 4]
    with open(os.path.join(summary["run_dir"], "args.json")) as f:
        saved_args = json.load(f)
    assert (saved_args["batch_size"], saved_args["minibatch_size"], saved_args["num_iterations"]) == (128, 64, 4)
    assert saved_args["nn"] == nn  # resolved, not None
    with open(os.path.join(summary["run_dir"], "episodes.csv"), newline="") as f:
        assert len(list(csv.DictReader(f))) == len(summary["episode_returns"])
    assert os.path.isfile(summary["checkpoint"])


def test_train_with_injected_gae_core(tmp_path):
    fake = ReferenceGae()
    summary = train(tiny_args(tmp_path, backend="emu", quantize=False, gamma=0.98, gae_lambda=0.9), gae=fake)
    assert summary["global_step"] == 512
    assert len(fake.calls) == 4
    call = fake.calls[0]
    assert call["shapes"] == ((64, 2), (65, 2), (64, 2))
    assert call["dtypes"] == (np.float32, np.float32, np.float32)
    assert (call["gamma"], call["lam"], call["quantize"]) == (0.98, 0.9, False)


@pytest.mark.parametrize(("encoding", "expected"), [("runs", "runs"), ("block", "block")])
def test_the_8_bit_encoding_reaches_the_gae_core(tmp_path, encoding, expected):
    """``q8_encoding`` picks the driver's 8-bit mode (q8-runs by default, HEPPO's block codes as an option)."""
    fake = ReferenceGae()
    train(tiny_args(tmp_path, backend="emu", q8_encoding=encoding, total_timesteps=128), gae=fake)
    assert {call["quantize"] for call in fake.calls} == {expected}
    with pytest.raises(FieldValueError, match="q8_encoding must be one of"):
        check_args(tiny_args(tmp_path, q8_encoding="mu-law"))


@pytest.mark.parametrize("nn", NN_BACKENDS)
def test_offloaded_path_equals_host_path_for_an_exact_core(tmp_path, nn):
    host = train(tiny_args(tmp_path / "host", nn=nn))
    offloaded = train(tiny_args(tmp_path / "offloaded", nn=nn), gae=HostLoopGae())
    assert offloaded["episode_returns"] == host["episode_returns"]
    assert_same_tree(load_checkpoint(host["checkpoint"])["model"], load_checkpoint(offloaded["checkpoint"])["model"])


def test_train_smoke_dynamic_reward_norm(tmp_path):
    with pytest.warns(RuntimeWarning, match=r"equals 1, so the standardized rewards are all 0 and carry no"):
        summary = train(tiny_args(tmp_path, reward_norm="dynamic"))
    stats = summary["reward_stats"]
    assert stats["count"] == 512  # every raw reward of every rollout
    assert (stats["mean"], stats["m2"]) == (1.0, 0.0)  # CartPole: +1 every step
    assert all(r >= 8 for r in summary["episode_returns"])  # logged returns are raw, not standardized


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            dict(backend="fpga"),
            r"^backend must be one of \('host', 'emu', 'rtl', 'verilator', 'board'\), not 'fpga'$",
        ),
        (dict(nn="jax"), r"^nn must be one of \('torch', 'numpy'\) or 'auto', not 'jax'$"),
        (dict(reward_norm="static"), r"^reward_norm must be one of \(None, 'dynamic'\), not 'static'$"),
        (dict(num_minibatches=3), r"^num_envs \* num_steps = 128 is not divisible by num_minibatches = 3$"),
        (dict(total_timesteps=100), r"^total_timesteps = 100 is smaller than one batch"),
        (dict(num_envs=0), r"^num_envs must be an integer >= 1, not 0$"),
    ],
)
def test_train_rejects_bad_args(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        train(tiny_args(tmp_path, **bad))
    assert not os.path.exists(tmp_path / "CartPole-v1")  # nothing was created


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nn", NN_BACKENDS)
def test_checkpoint_save_load_round_trip(tmp_path, nn):
    rng = np.random.default_rng(0)
    agent = make_actor_critic(nn, 4, 2, 1e-3, rng)
    obs = rng.normal(size=(8, 4)).astype(np.float32)
    actions, logprobs, values = agent.act(obs)
    agent.learn(
        obs,
        actions,
        logprobs,
        rng.normal(size=8),
        rng.normal(size=8),
        values,
        clip_coef=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        clip_vloss=False,
        norm_adv=True,
        max_grad_norm=0.5,
    )  # non-trivial Adam state
    standardizer = RewardStandardizer()
    standardizer.update(np.arange(10.0))
    args = Args(seed=3, reward_norm="dynamic", nn=nn)
    path = tmp_path / "sub" / "ckpt.npz"
    save_checkpoint(path, agent, standardizer, args, global_step=1234)
    assert not os.path.exists(f"{path}.tmp")

    state = load_checkpoint(path)
    assert state["global_step"] == 1234
    assert state["args"] == asdict(args)
    assert state["standardizer"] == standardizer.state_dict()
    assert state["optimizer"]["step"] == 1
    other = make_actor_critic(nn, 4, 2, 1e-3, np.random.default_rng(1))
    other.load_state_dict(state)
    assert_same_tree(agent.state_dict(), other.state_dict())
    with np.load(path, allow_pickle=False) as archive:  # plain arrays and a JSON header: no pickle anywhere
        assert "__header__" in archive.files and "model/actor/0.weight" in archive.files

    np.savez(tmp_path / "bad.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match=r"is not a pynq-rl ppo checkpoint of format 2"):
        load_checkpoint(tmp_path / "bad.npz")
    (tmp_path / "torch.pt").write_bytes(b"PK\x03\x04 not a zip")  # e.g. a torch pickle of format 1
    with pytest.raises(ValueError, match=r"is not a pynq-rl ppo checkpoint of format 2"):
        load_checkpoint(tmp_path / "torch.pt")


@pytest.mark.skipif(not torch_available(), reason="no torch")
def test_checkpoints_move_between_torch_and_numpy_networks():
    """A run trained on a PC with torch resumes on a PYNQ-Z2 with numpy networks: same outputs from the same state."""
    rng = np.random.default_rng(5)
    torch_agent = make_actor_critic("torch", 4, 3, 1e-3, rng)
    numpy_agent = make_actor_critic("numpy", 4, 3, 1e-3, rng)
    numpy_agent.load_state_dict(torch_agent.state_dict())
    obs = rng.normal(size=(16, 4)).astype(np.float32)
    np.testing.assert_allclose(numpy_agent.value(obs), torch_agent.value(obs), rtol=1e-5, atol=1e-6)
    back = make_actor_critic("torch", 4, 3, 1e-3, rng)
    back.load_state_dict(numpy_agent.state_dict())
    assert_same_tree(torch_agent.state_dict(), back.state_dict())


@pytest.mark.filterwarnings("ignore:reward_norm 'dynamic':RuntimeWarning")
def test_resume_continues_from_checkpoint(tmp_path):
    first = train(tiny_args(tmp_path / "a", reward_norm="dynamic"))
    saved = load_checkpoint(first["checkpoint"])
    assert saved["global_step"] == 512 and saved["standardizer"]["count"] == 512

    # resuming at the end: no update happens, the re-saved checkpoint equals the loaded one
    again = train(tiny_args(tmp_path / "b", reward_norm="dynamic", resume=first["checkpoint"]))
    assert (again["iterations"], again["global_step"], again["start_step"]) == (0, 512, 512)
    resaved = load_checkpoint(again["checkpoint"])
    assert_same_tree(saved["model"], resaved["model"])
    assert resaved["standardizer"] == saved["standardizer"]

    # resuming with a larger budget: the step counter, the reward statistics and the LR schedule continue
    more = train(tiny_args(tmp_path / "c", reward_norm="dynamic", total_timesteps=1024, resume=first["checkpoint"]))
    assert (more["iterations"], more["global_step"], more["start_step"]) == (4, 1024, 512)
    assert more["reward_stats"]["count"] == 1024
    with open(os.path.join(more["run_dir"], "metrics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [5, 6, 7, 8]
    assert float(rows[0]["charts/learning_rate"]) == pytest.approx(Args().learning_rate * (1 - 4 / 8))


def test_resume_rejects_a_checkpoint_of_another_agent(tmp_path):
    agent = make_actor_critic("numpy", 3, 2, 1e-3, np.random.default_rng(0))  # CartPole observations have 4 entries
    save_checkpoint(tmp_path / "other.npz", agent, None, Args(), 128)
    with pytest.raises(ValueError, match=r"^checkpoint .*other\.npz' does not fit this agent on CartPole-v1"):
        train(tiny_args(tmp_path, resume=str(tmp_path / "other.npz")))


def test_checkpoint_every_counts_environment_steps(tmp_path, monkeypatch):
    """Iterations of 128 steps and a period of 200 steps: saved after the iterations that reach 200 and 400 (at 256
    and 512 steps), then at the end; the same unit as DQN's and Sarsa's."""
    saved = []
    real = ppo_module.save_checkpoint
    monkeypatch.setattr(ppo_module, "save_checkpoint", lambda *a, **k: saved.append(a[4]) or real(*a, **k))
    summary = train(tiny_args(tmp_path, checkpoint_every=200))
    assert saved == [256, 512, 512] and os.path.isfile(summary["checkpoint"])


# ---------------------------------------------------------------------------------------------------------------------
# Offload on the emulated overlay
# ---------------------------------------------------------------------------------------------------------------------
def test_train_smoke_on_emulated_gae_core(tmp_path):
    for quantize in (True, False):  # train builds the overlay itself (lazy import) when no core is injected
        summary = train(tiny_args(tmp_path / str(quantize), backend="emu", quantize=quantize))
        assert summary["global_step"] == 512


# ---------------------------------------------------------------------------------------------------------------------
# Learning
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.report
@pytest.mark.slow
def test_ppo_with_host_gae_solves_cartpole_seed0(tmp_path):
    """The agent alone: float64 GAE on the host, the default networks (torch where it imports). The numpy networks
    learn in the board's configuration below (numpy networks, q8 GAE on the core)."""
    summary = train(Args(total_timesteps=300_000, seed=0, backend="host", out_dir=str(tmp_path), progress=False))
    assert summary["global_step"] >= 290_000
    assert summary["mean_return_last20"] >= 450, summary["episode_returns"][-20:]


@pytest.mark.report
@pytest.mark.slow
def test_cli_ppo_with_numpy_networks_and_gae_on_the_emulated_core_solves_cartpole(tmp_path, capsys):
    """The board's configuration (no torch): numpy networks, q8 GAE on the core."""
    from pynq_rl.cli import main

    assert (
        main(
            [
                "train",
                "ppo",
                "--env",
                "CartPole-v1",
                "--backend",
                "emu",
                "--nn",
                "numpy",
                "--steps",
                "300000",
                "--seed",
                "0",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["nn"] == "numpy" and summary["global_step"] >= 290_000
    assert summary["mean_return_last20"] >= 450


@pytest.mark.report
@pytest.mark.slow
def test_cli_ppo_with_gae_on_the_emulated_core_solves_cartpole(tmp_path, capsys):
    """The documented CartPole run: ``pynq-rl train ppo --env CartPole-v1 --backend emu`` (q8 GAE on the core)."""
    from pynq_rl.cli import main

    assert (
        main(
            [
                "train",
                "ppo",
                "--env",
                "CartPole-v1",
                "--backend",
                "emu",
                "--steps",
                "300000",
                "--seed",
                "0",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["global_step"] == 299_008  # 292 rollouts of 8 envs x 128 steps
    # CartPole-v1's reward threshold; the verilated core runs the same episodes (tests/verilator/test_agents.py)
    assert summary["mean_return_last20"] >= 475
