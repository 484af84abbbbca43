"""The compiled fast paths of the replay model (fused SET, fused PRNG SAMPLE, compiled encode) give the numpy path's
bits exactly, at edge sizes and with out-of-range records, saturating codes and totals above 32 bits."""

import numpy as np
import pytest

from pynq_rl.overlay.models import replay as R
from pynq_rl.overlay.spec import QFormat, ReplaySpec

pytestmark = pytest.mark.skipif(not R.HAVE_NUMBA, reason="numba not installed")

# K=2 depth 1 (smallest), odd mixes, a 1M-leaf tree (the ZCU106 build) and one whose root exceeds 32 bits.
SPECS = [
    ReplaySpec(k=2, levels=1),
    ReplaySpec(k=4, levels=3),
    ReplaySpec(k=2, levels=9),
    ReplaySpec(k=64, levels=2),
    ReplaySpec(k=16, levels=5),
    ReplaySpec(k=64, levels=3),
]


def _pair(spec):
    return R.SumTree(spec, use_numba=False), R.SumTree(spec, use_numba=True)


def _assert_same(trees):
    for a, b in zip(*(tree.levels for tree in trees)):
        np.testing.assert_array_equal(a, b)
    assert trees[0].nonzero == trees[1].nonzero
    assert trees[0].prng_state == trees[1].prng_state


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"k{s.k}_l{s.levels}")
def test_set_and_prng_sample_agree_with_the_numpy_path(spec):
    rng = np.random.default_rng(42)
    trees = _pair(spec)
    full = rng.integers(0, spec.leaf.max_code + 1, spec.capacity) * (rng.random(spec.capacity) < 0.7)
    if spec.capacity >= 1 << 18:  # big leaves make the root exceed 32 bits: exercises the hi/lo target split
        full[: spec.capacity // 2] = spec.leaf.max_code
    results = [tree.set(np.arange(spec.capacity), full) for tree in trees]
    assert results[0] == results[1]
    _assert_same(trees)
    for _ in range(6):
        n = int(rng.integers(1, 300))
        # Out-of-range indices (both sides), saturating codes, zeros and repeated indices, in one batch.
        indices = rng.integers(-2, spec.capacity + 2, n)
        indices[rng.random(n) < 0.2] = indices[0]
        codes = rng.integers(0, spec.leaf.max_code + 100, n) * (rng.random(n) < 0.8)
        results = [tree.set(indices, codes) for tree in trees]
        assert results[0] == results[1]
        _assert_same(trees)
        if trees[0].total == 0:
            continue
        for count in (1, 3, 256, int(rng.integers(1, 2000))):
            seed = int(rng.integers(0, 2**32))
            for tree in trees:
                tree.reseed(seed)
            (i0, c0), (i1, c1) = (tree.sample(count) for tree in trees)
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(c0, c1)
            assert i1.dtype == i0.dtype == np.int64 and np.all(c1 > 0)
            _assert_same(trees)
        stride = ReplaySpec.stride(7) // 3  # a STRIDE register below the default
        (i0, _), (i1, _) = (tree.sample(7, stride=stride) for tree in trees)
        np.testing.assert_array_equal(i0, i1)
    if spec.capacity >= 1 << 18:
        assert trees[1].total >= 1 << 32


def test_set_of_nothing_and_of_only_rejected_records():
    spec = ReplaySpec(k=4, levels=2)
    for tree in _pair(spec):
        assert tree.set([], []) == R.SetResult(False, 0)
        assert tree.set([-1, 16, 99], [5, 70000, 1]) == R.SetResult(False, 3)
        assert tree.set([2, 99], [70000, 1]) == R.SetResult(True, 1)
        assert tree.leaves[2] == spec.leaf.max_code and tree.total == spec.leaf.max_code and tree.nonzero == 1


def test_sample_refusals_are_unchanged_on_the_compiled_path():
    tree = R.SumTree(ReplaySpec(k=4, levels=2), use_numba=True)
    with pytest.raises(ValueError, match=r"^cannot sample from an empty sum tree"):
        tree.sample(4)
    tree.set([3], [9])
    with pytest.raises(ValueError, match=r"^count must be in"):
        tree.sample(0)
    with pytest.raises(ValueError, match=r"^stride .* is out of range"):
        tree.sample(4, stride=2**31)
    indices, codes = tree.sample(5)
    assert np.all(indices == 3) and np.all(codes == 9)


def _encode_numpy(priorities, leaf, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(R, "_numba", None)  # the numpy path, as on a machine without numba
        return R.encode_priorities(priorities, leaf)


@pytest.mark.parametrize(
    "leaf_spec",
    [ReplaySpec(), ReplaySpec(leaf=QFormat(8, 8, signed=False)), ReplaySpec(leaf=QFormat(32, 20, signed=False))],
    ids=lambda s: str(s.leaf),
)
def test_compiled_encode_matches_numpy(leaf_spec, monkeypatch):
    leaf = leaf_spec.leaf
    rng = np.random.default_rng(7)
    lsb = 2.0**-leaf.frac
    ties = (np.arange(200) + 0.5) * lsb  # exact half-LSB ties round up
    near = ties + rng.choice([-1, 1], 200) * np.spacing(ties)
    values = np.concatenate(
        [
            rng.random(1000) * leaf.max_value * 1.2,
            ties,
            near,
            [0.0, 1e-300, lsb / 2, lsb / 3],
            [leaf.max_value, leaf.max_value + lsb / 2, 1e300],
            rng.random(300) * 1e-3,
            rng.exponential(1.0, 500),
        ]
    )
    for shaped in (values, values[:1000].reshape(40, 25), values[::3], values[:0]):
        fast, slow = R.encode_priorities(shaped, leaf), _encode_numpy(shaped, leaf, monkeypatch)
        np.testing.assert_array_equal(fast[0], slow[0])
        assert fast[0].shape == slow[0].shape and fast[0].dtype == slow[0].dtype
        assert fast[1] == slow[1]


@pytest.mark.parametrize("bad", [-1e-12, -np.inf, np.inf, np.nan])
def test_compiled_encode_refuses_like_numpy(bad, monkeypatch):
    leaf = ReplaySpec().leaf
    priorities = np.ones((3, 4))
    priorities[1, 2] = bad
    priorities[2, 0] = bad
    messages = []
    for encode in (lambda p: R.encode_priorities(p, leaf), lambda p: _encode_numpy(p, leaf, monkeypatch)):
        with pytest.raises(ValueError, match=r"^priorities must be finite and >= 0; priorities\[6\] is ") as info:
            encode(priorities)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
