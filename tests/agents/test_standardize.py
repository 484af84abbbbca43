"""HEPPO dynamic reward standardization: running statistics equal numpy's over everything seen."""

import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pynq_rl.host.agents.ppo.standardize import RewardStandardizer

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
batches = st.lists(arrays(np.float64, st.integers(0, 40), elements=finite), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(batches)
def test_batched_updates_equal_numpy_over_concatenation(chunks):
    s = RewardStandardizer()
    for chunk in chunks:
        s.update(chunk)
    everything = np.concatenate(chunks)
    assert s.count == everything.size
    if everything.size == 0:
        assert (s.mean, s.var) == (0.0, 0.0)
        return
    scale = max(1.0, float(np.abs(everything).max()))
    assert s.mean == pytest.approx(everything.mean(), rel=1e-9, abs=1e-12 * scale)
    assert s.std == pytest.approx(everything.std(), rel=1e-7, abs=1e-6 * scale)
    probe = everything[: min(5, everything.size)]
    expected = ((probe - everything.mean()) / (everything.std() + s.eps)).astype(np.float32)
    got = s.standardize(probe)
    assert got.dtype == np.float32
    if everything.std() > 1e-6 * scale:  # well-conditioned: compare elementwise
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_shapes_and_2d_input():
    rng = np.random.default_rng(42)
    rewards = rng.normal(3.0, 2.0, size=(128, 8))
    s = RewardStandardizer()
    s.update(rewards[:64])
    s.update(rewards[64:])
    out = s.standardize(rewards)
    assert out.shape == (128, 8) and out.dtype == np.float32
    assert abs(float(out.mean())) < 1e-5
    assert float(out.std()) == pytest.approx(1.0, abs=1e-5)


def test_identity_before_any_data():
    s = RewardStandardizer()
    x = np.array([[1.5, -2.0], [0.0, 7.0]])
    out = s.standardize(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x.astype(np.float32))
    s.update(np.array([]))  # empty batch: still nothing seen
    assert s.count == 0
    np.testing.assert_array_equal(s.standardize(x), x.astype(np.float32))


def test_constant_rewards_standardize_to_zero():
    s = RewardStandardizer()
    s.update(np.ones((128, 4)))
    s.update(np.ones(7))
    assert (s.mean, s.std) == (1.0, 0.0)
    np.testing.assert_array_equal(s.standardize(np.ones(5)), np.zeros(5, np.float32))


def test_accepts_torch_tensors():
    s = RewardStandardizer()
    s.update(torch.arange(6, dtype=torch.float32))
    assert s.mean == pytest.approx(2.5)


@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "infinite"), (-np.inf, "infinite")])
@pytest.mark.parametrize("method", ["update", "standardize"])
def test_non_finite_rejected(bad, word, method):
    s = RewardStandardizer()
    s.update(np.array([1.0, 2.0]))
    before = s.state_dict()
    with pytest.raises(ValueError, match=rf"^{method}: rewards contain 1 {word} value\(s\) out of 3$"):
        getattr(s, method)(np.array([0.0, bad, 1.0]))
    assert s.state_dict() == before


def test_state_round_trip(tmp_path):
    rng = np.random.default_rng(42)
    s = RewardStandardizer(eps=1e-6)
    for _ in range(5):
        s.update(rng.normal(size=rng.integers(1, 50)))
    state = s.state_dict()
    assert {type(v) for v in state.values()} <= {int, float}
    path = tmp_path / "s.pt"
    torch.save({"standardizer": state}, path)
    loaded = torch.load(path, weights_only=True)["standardizer"]
    t = RewardStandardizer()
    t.load_state_dict(loaded)
    assert t.state_dict() == state
    x = rng.normal(size=(10, 3))
    np.testing.assert_array_equal(t.standardize(x), s.standardize(x))
    # continuing from the restored state equals never having stopped
    more = rng.normal(size=17)
    s.update(more)
    t.update(more)
    assert t.state_dict() == s.state_dict()
    assert pickle.loads(pickle.dumps(t)).state_dict() == t.state_dict()


def test_load_state_dict_validates():
    s = RewardStandardizer()
    with pytest.raises(KeyError, match="missing"):
        s.load_state_dict({"count": 1, "mean": 0.0})
    with pytest.raises(ValueError, match="count must be >= 0"):
        s.load_state_dict({"count": -1, "mean": 0.0, "m2": 0.0, "eps": 1e-8})
    with pytest.raises(ValueError, match="m2 >= 0"):
        s.load_state_dict({"count": 2, "mean": 0.0, "m2": -1.0, "eps": 1e-8})
    with pytest.raises(ValueError, match=r"eps must be a positive finite number, not 0\.0$"):
        RewardStandardizer(eps=0.0)
    assert math.isfinite(RewardStandardizer().eps)
