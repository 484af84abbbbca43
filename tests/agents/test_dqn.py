"""Double DQN with prioritized replay: the numpy sum tree against brute force, the buffer, training, checkpoints.

The fast tests take a few seconds each; ``slow`` is the learning test (CartPole-v1 solved within 150k steps with the
priorities in the emulated replay core).
"""

import csv
import json
import os
import time
import warnings

import numpy as np
import pytest

from pynq_rl.host.agents import ppo
from pynq_rl.host.agents.common.run import torch_available
from pynq_rl.host.agents.dqn import Args, load_checkpoint, train
from pynq_rl.host.agents.dqn import training as dqn
from pynq_rl.host.agents.nets.learners import make_actor_critic, make_q_learner
from pynq_rl.host.agents.replay.buffer import NumpySumTree, PrioritizedReplayBuffer, PriorityBackend
from pynq_rl.host.drivers import ReplayCore, ReplaySaturationWarning


# ---------------------------------------------------------------------------------------------------------------------
# Brute-force references
# ---------------------------------------------------------------------------------------------------------------------
def proportional_reference(priorities, alpha):
    """P(i) = p_i**alpha / sum_k p_k**alpha, element by element (0 stays 0, also for alpha = 0)."""
    powered = np.array([p**alpha if p > 0 else 0.0 for p in priorities], dtype=np.float64)
    return powered / powered.sum()


def prefix_intervals(probabilities):
    """[start, end) of every leaf on the unit interval, in index order."""
    ends = np.cumsum(probabilities)
    return ends - probabilities, ends


def random_priorities(rng, n):
    return rng.gamma(1.0, 2.0, n) * (rng.random(n) < 0.8)


@pytest.fixture(scope="module")
def emu_replay() -> ReplayCore:
    """The emulated overlay's replay core (capacity 2**16, UQ6.10 leaves), shared by the tests of this module."""
    from pynq_rl.host.overlay import RLOverlay

    return RLOverlay(backend="emu").replay


# ---------------------------------------------------------------------------------------------------------------------
# NumpySumTree: the float64 reference priority backend
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("capacity", [1, 2, 7, 64, 1000])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_sum_tree_probabilities_match_brute_force_at_odd_sizes(capacity, alpha):
    rng = np.random.default_rng(42)
    tree = NumpySumTree(capacity, alpha=alpha, seed=1)
    priorities = np.zeros(capacity)
    for _ in range(4):  # several rounds, so updates overwrite earlier leaves
        indices = rng.integers(0, capacity, max(1, capacity // 2))
        values = random_priorities(rng, len(indices))
        tree.update(indices, values)
        for i, p in zip(indices, values):  # later duplicates win
            priorities[i] = p
    if not np.any(priorities):
        tree.update([0], [1.5])
        priorities[0] = 1.5
    expected = proportional_reference(priorities, alpha)
    powered_total = sum(p**alpha for p in priorities if p > 0)
    assert tree.total == pytest.approx(powered_total, rel=1e-12)
    assert tree.nonzero == np.count_nonzero(priorities)

    n = 33
    indices, probabilities, weights = tree.sample(n, beta=0.5)
    assert indices.dtype == np.int64 and probabilities.dtype == np.float64 and weights.dtype == np.float32
    np.testing.assert_allclose(probabilities, expected[indices], rtol=1e-12)
    assert np.all(priorities[indices] > 0)  # a zero-priority leaf is never drawn
    # stratified: draw j lies in a leaf whose prefix interval meets the j-th of n equal slices
    start, end = prefix_intervals(expected)
    j = np.arange(n)
    assert np.all(end[indices] > j / n - 1e-12) and np.all(start[indices] < (j + 1) / n + 1e-12)
    # importance weights: (N P(i))**-beta over the batch maximum
    raw = (np.count_nonzero(priorities) * expected[indices]) ** -0.5
    np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-6)


def test_sum_tree_sampling_frequencies_are_proportional():
    rng = np.random.default_rng(7)
    capacity, alpha = 50, 0.7
    priorities = random_priorities(rng, capacity)
    tree = NumpySumTree(capacity, alpha=alpha, seed=3)
    tree.update(np.arange(capacity), priorities)
    counts = np.zeros(capacity)
    draws = 0
    for _ in range(400):
        indices, _, _ = tree.sample(128)
        np.add.at(counts, indices, 1)
        draws += 128
    expected = proportional_reference(priorities, alpha)
    # stratification makes the counts tighter than multinomial: 4 multinomial standard deviations is generous
    sigma = np.sqrt(draws * expected * (1 - expected))
    assert np.all(np.abs(counts - draws * expected) <= 4 * sigma + 1)
    assert np.all(counts[expected == 0] == 0)


def test_sum_tree_total_does_not_drift_over_many_updates():
    rng = np.random.default_rng(0)
    tree = NumpySumTree(4096, alpha=1.0)
    leaves = np.zeros(4096)
    for _ in range(300):
        idx = rng.integers(0, 4096, 64)
        values = rng.random(64) * 10.0 ** rng.integers(-4, 4)
        tree.update(idx, values)
        for i, v in zip(idx, values):  # later duplicates win
            leaves[i] = v
    np.testing.assert_allclose(tree.priorities(), leaves, rtol=1e-15, atol=0)  # p**1.0 may be off by an ulp
    assert tree.total == pytest.approx(leaves.sum(), rel=1e-12)


def test_sum_tree_rejects_bad_input():
    tree = NumpySumTree(8)
    with pytest.raises(ValueError, match=r"^cannot sample: every priority is 0"):
        tree.sample(4)
    with pytest.raises(IndexError, match=r"^indices\[1\] = 8 is outside the capacity \[0, 8\)"):
        tree.update([0, 8], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"^priorities must be finite and >= 0; priorities\[0\] is nan"):
        tree.update([0], [np.nan])
    with pytest.raises(ValueError, match=r"^priorities must be finite and >= 0; priorities\[1\] is -1.0"):
        tree.update([0, 1], [1.0, -1.0])
    with pytest.raises(TypeError, match=r"^indices must be integers"):
        tree.update([0.5], [1.0])
    with pytest.raises(ValueError, match=r"^capacity must be an integer >= 1"):
        NumpySumTree(0)
    tree.update([3], [2.0])
    with pytest.raises(ValueError, match=r"^beta must be a number in \[0, 1\]"):
        tree.sample(4, beta=1.5)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1"):
        tree.sample(0)
    assert tree.total == pytest.approx(2.0**0.6)  # nothing stored was lost on the errors


def test_sum_tree_state_dict_round_trip_restores_leaves_and_sample_stream():
    rng = np.random.default_rng(5)
    tree = NumpySumTree(300, alpha=0.6, seed=9)
    tree.update(np.arange(300), random_priorities(rng, 300))
    tree.sample(16)
    state = tree.state_dict()
    other = NumpySumTree(300, alpha=0.1, seed=123)
    other.load_state_dict(state)
    assert other.alpha == 0.6 and other.nonzero == tree.nonzero
    assert other.total == pytest.approx(tree.total, rel=1e-12)
    for _ in range(3):
        a, b = tree.sample(32, 0.4), other.sample(32, 0.4)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(
        ValueError,
        match=r"'numpy' priority state of capacity 300, this is a 'numpy' sum tree of "
        r"capacity 301",
    ):
        NumpySumTree(301).load_state_dict(state)


# ---------------------------------------------------------------------------------------------------------------------
# PrioritizedReplayBuffer
# ---------------------------------------------------------------------------------------------------------------------
def transition(i, n=1, obs_dim=3):
    """n transitions whose fields all encode their sequence number i, i+1, ...: easy to check after wraparound."""
    k = np.arange(i, i + n, dtype=np.float32)
    obs = np.repeat(k[:, None], obs_dim, axis=1)
    return obs, obs + 0.5, (k % 2).astype(np.int64), k * 10, (k % 3 == 0).astype(np.float32)


def test_buffer_ring_wraps_around_and_new_transitions_get_the_max_priority():
    rb = PrioritizedReplayBuffer(5, (3,), np.float32, priorities="host", alpha=1.0, priority_eps=0.25, seed=0)
    for i in range(3):
        rb.add(*transition(i))
    assert (len(rb), rb.pos, rb.full) == (3, 3, False)
    np.testing.assert_array_equal(rb.priorities.priorities(), [1, 1, 1, 0, 0])  # max priority starts at 1
    written = rb.update_priorities(np.array([1, 2]), np.array([-4.0, 0.5]))
    np.testing.assert_allclose(written, [4.25, 0.75])
    assert rb.max_priority == 4.25
    slots = rb.add(*transition(3, n=4))  # wraps: slots 3, 4, 0, 1
    np.testing.assert_array_equal(slots, [3, 4, 0, 1])
    assert (len(rb), rb.pos, rb.full) == (5, 2, True)
    np.testing.assert_array_equal(rb.observations[:, 0], [5, 6, 2, 3, 4])  # slot 2 still holds transition 2
    np.testing.assert_array_equal(rb.next_observations[:, 0], [5.5, 6.5, 2.5, 3.5, 4.5])
    np.testing.assert_array_equal(rb.actions, [1, 0, 0, 1, 0])
    np.testing.assert_array_equal(rb.rewards, [50, 60, 20, 30, 40])
    np.testing.assert_array_equal(rb.dones, [0, 1, 0, 1, 0])
    np.testing.assert_allclose(rb.priorities.priorities(), [4.25, 4.25, 0.75, 4.25, 4.25])


def test_buffer_sample_returns_stored_transitions_with_weights():
    rb = PrioritizedReplayBuffer(100, (3,), np.float32, priorities="host", seed=0)
    rb.add(*transition(0, n=10))
    rb.update_priorities(np.arange(10), np.arange(10, dtype=np.float64))  # slot 0: priority eps only
    batch = rb.sample(64, beta=1.0)
    assert batch.observations.shape == batch.next_observations.shape == (64, 3)
    assert batch.observations.dtype == np.float32 and batch.actions.dtype == np.int64
    assert batch.rewards.shape == batch.dones.shape == batch.weights.shape == (64,)
    assert np.all((batch.indices >= 0) & (batch.indices < 10))
    # the fields belong to the sampled slots
    np.testing.assert_array_equal(batch.observations[:, 0], batch.indices.astype(np.float32))
    np.testing.assert_array_equal(batch.rewards, 10 * batch.indices.astype(np.float32))
    # beta = 1: w_i proportional to 1 / P(i), normalized by the batch maximum (the rarest sampled slot)
    p = proportional_reference(np.abs(np.arange(10.0)) + 1e-6, 0.6)[batch.indices]
    np.testing.assert_allclose(batch.weights, (1 / p) / (1 / p).max(), rtol=1e-5)
    assert batch.weights.max().item() == pytest.approx(1.0)


def test_buffer_rejects_bad_input():
    rb = PrioritizedReplayBuffer(8, (3,), np.float32, priorities="host")
    with pytest.raises(ValueError, match=r"^cannot sample from an empty replay buffer"):
        rb.sample(4)
    with pytest.raises(ValueError, match=r"^add\(\) expects a batch of n >= 1 transitions shaped"):
        rb.add(np.zeros((2, 4)), np.zeros((2, 4)), np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match=r"^add\(\) got 9 transitions at once, more than the capacity 8"):
        rb.add(*transition(0, n=9))
    rb.add(*transition(0, n=3))
    with pytest.raises(ValueError, match=r"^indices\[0\] = 3 holds no transition \(stored: 3\)"):
        rb.update_priorities(np.array([3]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"^td_errors must be finite; td_errors\[1\] is nan"):
        rb.update_priorities(np.array([0, 1]), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"^td_errors must have the shape of indices"):
        rb.update_priorities(np.array([0, 1]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1"):
        rb.sample(0)
    with pytest.raises(ValueError, match=r"^beta must be a number in \[0, 1\]"):
        rb.sample(4, beta=-0.1)
    with pytest.raises(ValueError, match=r"^priorities must be one of \('host', 'emu', 'rtl', 'verilator', 'board'\)"):
        PrioritizedReplayBuffer(8, (3,), priorities="fpga")
    assert rb.max_priority == 1.0 and len(rb) == 3  # nothing changed on the errors


def test_buffer_state_dict_round_trip_continues_identically():
    rng = np.random.default_rng(1)
    a = PrioritizedReplayBuffer(16, (3,), np.float32, priorities="host", seed=4)
    a.add(*transition(0, n=12))
    a.add(*transition(12, n=8))  # wrapped
    a.update_priorities(np.arange(16), rng.normal(size=16))
    state = a.state_dict()
    b = PrioritizedReplayBuffer(16, (3,), np.float32, priorities="host", seed=99)
    b.load_state_dict(state)
    assert (b.pos, b.full, b.max_priority) == (a.pos, a.full, a.max_priority)
    for name in ("observations", "next_observations", "actions", "rewards", "dones"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name))
    for _ in range(3):  # same priorities, same generator state: the same batches
        x, y = a.sample(8), b.sample(8)
        np.testing.assert_array_equal(x.indices, y.indices)
        np.testing.assert_array_equal(x.weights, y.weights)
    with pytest.raises(
        ValueError,
        match=r"^replay buffer state is for .*'capacity': 16.*this buffer is "
        r".*'capacity': 32",
    ):
        PrioritizedReplayBuffer(32, (3,), np.float32).load_state_dict(state)


def test_buffer_storage_allocator_is_injectable():
    made = []

    def allocator(shape, dtype):
        made.append((shape, np.dtype(dtype)))
        return np.full(shape, 7, dtype=dtype)

    rb = PrioritizedReplayBuffer(4, (2,), np.uint8, priorities="host", allocator=allocator)
    assert made == [
        ((4, 2), np.dtype(np.uint8)),
        ((4, 2), np.dtype(np.uint8)),
        ((4,), np.dtype(np.int64)),
        ((4,), np.dtype(np.float32)),
        ((4,), np.dtype(np.float32)),
    ]
    rb.add(np.ones((1, 2)), np.ones((1, 2)), np.zeros(1), np.zeros(1), np.zeros(1))
    assert rb.observations.dtype == np.uint8 and rb.observations[1, 0] == 7 and rb.observations[0, 0] == 1


# ---------------------------------------------------------------------------------------------------------------------
# The buffer on the emulated replay core
# ---------------------------------------------------------------------------------------------------------------------
def test_buffer_on_the_core_matches_the_numpy_reference_up_to_quantization(emu_replay):
    rng = np.random.default_rng(3)
    core_rb = PrioritizedReplayBuffer(1000, (3,), np.float32, priorities=emu_replay, alpha=0.6, seed=11)
    ref_rb = PrioritizedReplayBuffer(1000, (3,), np.float32, priorities="host", alpha=0.6, seed=11)
    assert emu_replay.alpha == 0.6 and emu_replay.nonzero == 0  # the buffer took the core over and cleared it
    for rb in (core_rb, ref_rb):
        rb.add(*transition(0, n=700))
    td = rng.normal(scale=3.0, size=700)
    for rb in (core_rb, ref_rb):
        rb.update_priorities(np.arange(700), td)
    assert emu_replay.nonzero == 700
    lsb = 2.0**-10  # UQ6.10
    assert abs(emu_replay.total - ref_rb.priorities.total) <= 700 * lsb / 2
    batch = core_rb.sample(256, beta=0.4)
    assert np.all((batch.indices >= 0) & (batch.indices < 700))
    np.testing.assert_array_equal(batch.observations[:, 0], batch.indices.astype(np.float32))
    # the core's probabilities are the reference ones up to the quantization of p**alpha
    reference = ref_rb.priorities.priorities() / ref_rb.priorities.total
    indices, probabilities, weights = emu_replay.sample(256, beta=0.4)
    np.testing.assert_allclose(probabilities, reference[indices], rtol=0, atol=lsb / emu_replay.total)
    assert weights.max() == pytest.approx(1.0)


def test_buffer_on_the_core_state_dict_round_trip(emu_replay):
    rb = PrioritizedReplayBuffer(64, (3,), np.float32, priorities=emu_replay, seed=5)
    rb.add(*transition(0, n=40))
    rb.update_priorities(np.arange(0, 40, 2), np.linspace(0.0, 5.0, 20))
    state = rb.state_dict()
    codes = emu_replay.dump_codes()
    first = rb.sample(16)
    rb.add(*transition(40, n=30))  # change everything: wrap, new priorities
    rb.load_state_dict(state)
    np.testing.assert_array_equal(emu_replay.dump_codes(), codes)
    assert (rb.pos, rb.full, len(rb)) == (40, False, 40)
    again = rb.sample(16)  # the core's PRNG was restored too: the same batch
    np.testing.assert_array_equal(again.indices, first.indices)
    np.testing.assert_array_equal(again.observations, first.observations)
    with pytest.raises(ValueError, match=r"^state_dict is a 'replay core' priority state"):
        PrioritizedReplayBuffer(64, (3,), np.float32, priorities="host").load_state_dict(state)


def test_buffer_larger_than_the_core_is_refused(emu_replay):
    with pytest.raises(ValueError, match=r"^buffer capacity 65537 exceeds the priority backend's capacity 65536"):
        PrioritizedReplayBuffer(emu_replay.capacity + 1, (3,), np.float32, priorities=emu_replay)


def test_backends_satisfy_the_priority_backend_protocol(emu_replay):
    assert isinstance(NumpySumTree(4), PriorityBackend)
    assert isinstance(emu_replay, PriorityBackend)


# ---------------------------------------------------------------------------------------------------------------------
# The agent
# ---------------------------------------------------------------------------------------------------------------------
def tiny_args(tmp_path, **kw):
    base = dict(
        total_timesteps=600,
        learning_starts=200,
        batch_size=32,
        buffer_size=1000,
        train_freq=2,
        target_network_frequency=100,
        hidden_sizes=(32,),
        log_every=10,
        backend="host",
        out_dir=str(tmp_path),
        progress=False,
    )
    base.update(kw)
    return Args(**base)


NN_BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.skipif(not torch_available(), reason="no torch"))]


@pytest.mark.parametrize("nn", NN_BACKENDS)
def test_q_learner_shapes(nn):
    learner = make_q_learner(nn, 4, 2, (16, 8), 1e-3, np.random.default_rng(0))
    assert learner.q_values(np.zeros((5, 4), np.float32)).shape == (5, 2)
    state = learner.state_dict()
    assert [state["q_network"][f"{i}.weight"].shape for i in (0, 2, 4)] == [(16, 4), (8, 16), (2, 8)]


@pytest.mark.parametrize("nn", NN_BACKENDS)
@pytest.mark.parametrize("backend", ["host", "emu"])
def test_train_smoke_writes_logs_and_checkpoint(tmp_path, backend, nn):
    summary = train(tiny_args(tmp_path, backend=backend, nn=nn))
    assert summary["nn"] == nn
    assert summary["global_step"] == 600 and summary["start_step"] == 0
    assert summary["gradient_steps"] == (600 - 200) // 2  # steps 202, 204, ..., 600
    assert summary["backend"] == backend
    assert len(summary["episode_returns"]) > 5 and all(r >= 8 for r in summary["episode_returns"])
    run_dir = summary["run_dir"]
    for name in ("args.json", "metrics.csv", "metrics.jsonl", "episodes.csv", "summary.json", "checkpoint.npz"):
        assert os.path.isfile(os.path.join(run_dir, name)), name
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20  # one row every 10 gradient steps
    assert {"charts/epsilon", "charts/beta", "charts/SPS", "losses/td_loss", "replay/total"} <= set(rows[0])
    assert float(rows[-1]["charts/beta"]) == pytest.approx(1.0)
    assert int(rows[-1]["replay/size"]) == 600 and int(rows[-1]["replay/nonzero"]) == 600
    with open(os.path.join(run_dir, "args.json")) as f:
        assert json.load(f)["num_iterations"] == 600
    with open(os.path.join(run_dir, "episodes.csv")) as f:
        assert len(list(csv.reader(f))) == len(summary["episode_returns"]) + 1


@pytest.mark.parametrize("nn", NN_BACKENDS)
@pytest.mark.parametrize("backend", ["host", "emu"])
def test_training_is_reproducible_for_a_seed(tmp_path, backend, nn):
    """Exploration, environments, network, and the sampler (numpy generator or the core's PRNG) are all seeded."""
    runs = [
        train(tiny_args(tmp_path / str(i), backend=backend, seed=5, nn=nn, save_checkpoint=False)) for i in range(2)
    ]
    assert runs[0]["episode_returns"] == runs[1]["episode_returns"]
    with (
        open(os.path.join(runs[0]["run_dir"], "metrics.csv")) as f0,
        open(os.path.join(runs[1]["run_dir"], "metrics.csv")) as f1,
    ):
        losses = [[row["losses/td_loss"] for row in csv.DictReader(f)] for f in (f0, f1)]
    assert losses[0] == losses[1]


@pytest.mark.parametrize("nn", NN_BACKENDS)
def test_checkpoint_resume_continues_the_run(tmp_path, nn):
    first = train(tiny_args(tmp_path, total_timesteps=600, seed=3, nn=nn))
    saved = load_checkpoint(first["checkpoint"])
    assert saved["global_step"] == 600 and saved["gradient_steps"] == 200
    buffer_state = saved["replay_buffer"]
    assert buffer_state["pos"] == 600 and buffer_state["priorities"]["kind"] == "numpy"
    assert np.count_nonzero(buffer_state["priorities"]["leaves"]) == 600

    resumed = train(tiny_args(tmp_path, total_timesteps=1000, seed=3, nn=nn, resume=first["checkpoint"]))
    assert resumed["start_step"] == 600 and resumed["global_step"] == 1000
    assert resumed["gradient_steps"] == 200 + 400 // 2  # no second warm-up: the buffer came back full
    after = load_checkpoint(resumed["checkpoint"])
    buffer_after = after["replay_buffer"]
    assert buffer_after["pos"] == 1000 - 1000 and buffer_after["full"]
    # the first run's transitions are still in their slots, the new ones follow them
    np.testing.assert_array_equal(buffer_after["observations"][:600], buffer_state["observations"])
    assert after["optimizer"]["step"] == 400  # Adam's step count carried over
    with open(os.path.join(resumed["run_dir"], "metrics.csv")) as f:
        first_row = next(csv.DictReader(f))
    assert int(first_row["gradient_steps"]) == 210  # counters continue from the checkpoint


def test_resume_refuses_foreign_checkpoints(tmp_path):
    run = train(tiny_args(tmp_path))
    with pytest.raises(ValueError, match=r"does not fit this agent on CartPole-v1 with backend emu"):
        train(tiny_args(tmp_path, backend="emu", resume=run["checkpoint"]))
    with pytest.raises(ValueError, match=r"does not fit this agent"):
        train(tiny_args(tmp_path, hidden_sizes=(16,), resume=run["checkpoint"]))
    ppo_path = os.path.join(tmp_path, "ppo.npz")
    agent = make_actor_critic("numpy", 4, 2, 1e-3, np.random.default_rng(0))
    ppo.save_checkpoint(ppo_path, agent, None, ppo.Args(), 0)
    with pytest.raises(ValueError, match=r"is not a pynq-rl dqn checkpoint of format 2: it holds agent 'ppo'"):
        load_checkpoint(ppo_path)


def test_checkpoint_every_counts_environment_steps(tmp_path, monkeypatch):
    saved = []
    real = dqn.save_checkpoint
    monkeypatch.setattr(dqn, "save_checkpoint", lambda *a, **k: saved.append(a[4]) or real(*a, **k))
    summary = train(tiny_args(tmp_path, checkpoint_every=250))
    assert saved == [250, 500, 600] and load_checkpoint(summary["checkpoint"])["global_step"] == 600


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(backend="fpga"), r"^backend must be one of"),
        (dict(backend="numpy"), r"^backend must be one of .*, not 'numpy' \(the host reference, formerly 'numpy' or"),
        (dict(batch_size=0), r"^batch_size must be an integer >= 1, not 0"),
        (dict(tau=0.0), r"^tau must be a number in \(0, 1\]"),
        (dict(per_beta=1.5), r"^per_beta must be a number in \[0, 1\], not 1.5"),
        (dict(learning_starts=-1), r"^learning_starts must be an integer >= 0"),
    ],
)
def test_bad_arguments_are_rejected(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        train(tiny_args(tmp_path, **override))


def test_a_run_shorter_than_learning_starts_is_warned_about(tmp_path):
    from pynq_rl.host.agents.common.checks import FieldWarning

    with pytest.warns(
        FieldWarning, match=r"^total_timesteps = 200 does not exceed learning_starts = 200: the run"
    ) as w:
        summary = train(tiny_args(tmp_path, total_timesteps=200, nn="numpy"))
    assert summary["gradient_steps"] == 0 and w[0].message.fields == ("total_timesteps", "learning_starts")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FieldWarning)
        assert train(tiny_args(tmp_path, total_timesteps=201, nn="numpy", train_freq=1))["gradient_steps"] == 1


def test_buffer_larger_than_the_core_is_refused_by_train(tmp_path):
    with pytest.raises(ValueError, match=r"buffer capacity 70000 exceeds the priority backend's capacity 65536"):
        train(tiny_args(tmp_path, backend="emu", buffer_size=70_000))


# ---------------------------------------------------------------------------------------------------------------------
# Learning: CartPole-v1 solved with the priorities on the emulated core
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.report
@pytest.mark.slow
def test_dqn_with_priorities_on_the_emulated_core_solves_cartpole(tmp_path):
    """The numpy networks: the ones a PYNQ-Z2 runs (no torch on its ARM), at twice torch's steps per second here;
    one torch step is the numpy step (``test_numpy_nn.py::test_dqn_step_matches_torch``)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = train(
            Args(
                seed=0,
                total_timesteps=150_000,
                backend="emu",
                nn="numpy",
                out_dir=str(tmp_path),
                progress=False,
                save_checkpoint=False,
            )
        )
    wall_time_s = time.perf_counter() - start
    print(
        f"DQN+PER (emu) CartPole-v1: last-20 mean {summary['mean_return_last20']:.1f}, best 20-episode mean "
        f"{summary['best_mean_return20']:.1f}, {summary['global_step']} steps, {wall_time_s:.0f} s"
    )
    assert summary["global_step"] == 150_000
    assert summary["best_mean_return20"] >= 450  # solved within 150k steps
    assert summary["mean_return_last20"] >= 400  # and still (nearly) solved at the end: no late collapse
    assert not [w for w in caught if issubclass(w.category, ReplaySaturationWarning)]  # every priority fit UQ6.10
