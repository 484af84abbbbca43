"""The replay core's bit-exact model: sum-tree invariants, sampling statistics, the two implementations, float64."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pynq_rl.overlay.models import replay as R
from pynq_rl.overlay.models.prng import xorshift32
from pynq_rl.overlay.spec import QFormat, ReplaySpec

SMALL = ReplaySpec(k=4, levels=3, leaf=QFormat(8, 4, signed=False))  # 64 leaves


def brute_force_levels(spec: ReplaySpec, leaves: np.ndarray) -> list[np.ndarray]:
    levels = [np.asarray(leaves, dtype=np.int64)]
    for _ in range(spec.levels):
        levels.insert(0, levels[0].reshape(-1, spec.k).sum(axis=1))
    return levels


def reference_sample(leaves: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """First leaf whose inclusive prefix sum exceeds the target (a flat searchsorted, no tree)."""
    return np.searchsorted(np.cumsum(leaves), targets, side="right")


ops = st.lists(st.tuples(st.integers(-3, 70), st.integers(0, 300)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(ops, min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1), use_numba=st.booleans())
def test_set_and_sample_match_a_flat_reference(batches, seed, use_numba):
    tree = R.SumTree(SMALL, use_numba=use_numba)
    tree.reseed(seed)
    leaves = np.zeros(SMALL.capacity, dtype=np.int64)
    state = seed or R.PRNG_ZERO_SEED
    for batch in batches:
        indices, codes = map(np.array, zip(*batch))
        result = tree.set(indices, codes)
        for i, c in batch:  # sequential semantics: later records win, bad indices dropped
            if 0 <= i < SMALL.capacity:
                leaves[i] = min(c, SMALL.leaf.max_code)
        valid = (indices >= 0) & (indices < SMALL.capacity)
        assert result.rejected == int(np.sum(~valid))
        assert result.saturated == bool(np.any(codes[valid] > SMALL.leaf.max_code))
        for mine, expected in zip(tree.levels, brute_force_levels(SMALL, leaves)):
            np.testing.assert_array_equal(mine, expected)
        assert tree.nonzero == np.count_nonzero(leaves)
        if tree.total:
            n = 1 + len(batch) % 7
            got, got_codes = tree.sample(n)
            uniforms = xorshift32(state, n)
            state = int(uniforms[-1])
            expected = reference_sample(leaves, R.sample_targets(tree.total, uniforms))
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(got_codes, leaves[expected])
            assert np.all(got_codes > 0)
            assert tree.prng_state == state


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_numba_and_numpy_paths_agree_bit_for_bit(data):
    if not R.HAVE_NUMBA:
        pytest.skip("numba not installed")
    spec = data.draw(st.sampled_from([SMALL, ReplaySpec(k=2, levels=6), ReplaySpec(k=16, levels=2)]))
    trees = [R.SumTree(spec, use_numba=False), R.SumTree(spec, use_numba=True)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(5):
        n = int(rng.integers(1, 200))
        indices = rng.integers(0, spec.capacity, n)
        codes = rng.integers(0, spec.leaf.max_code + 50, n) * (rng.random(n) < 0.8)
        results = [tree.set(indices, codes) for tree in trees]
        assert results[0] == results[1]
        for a, b in zip(*(tree.levels for tree in trees)):
            np.testing.assert_array_equal(a, b)
        assert trees[0].nonzero == trees[1].nonzero
        if trees[0].total:
            m = int(rng.integers(1, 64))
            uniforms = rng.integers(0, 2**32, m, dtype=np.uint64)
            (i0, c0), (i1, c1) = (tree.sample(m, uniforms) for tree in trees)
            np.testing.assert_array_equal(i0, i1)
            np.testing.assert_array_equal(c0, c1)


def test_sampling_is_proportional_chi_square():
    """64 leaves, 200k draws from the on-chip PRNG: the counts fit code_i / total (chi-square, p > 0.001)."""
    rng = np.random.default_rng(1)
    tree = R.SumTree(SMALL)
    codes = rng.integers(1, SMALL.leaf.max_code + 1, SMALL.capacity)
    codes[[3, 17, 40]] = 0  # zero-priority leaves must never be drawn
    tree.set(np.arange(SMALL.capacity), codes)
    tree.reseed(12345)
    counts = np.zeros(SMALL.capacity, dtype=np.int64)
    for _ in range(200):
        indices, _ = tree.sample(1000)
        counts += np.bincount(indices, minlength=SMALL.capacity)
    assert counts[[3, 17, 40]].sum() == 0
    live = codes > 0
    expected = counts.sum() * codes[live] / codes.sum()
    assert stats.chisquare(counts[live], expected).pvalue > 1e-3


def test_stratified_sampling_covers_every_stratum():
    """Sample j lands in the j-th slice of the total: targets are increasing and each lies in its stratum."""
    tree = R.SumTree(SMALL)
    tree.set(np.arange(SMALL.capacity), np.full(SMALL.capacity, 7))
    for n in (1, 3, 64, 100, 256):
        uniforms = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64)
        targets = R.sample_targets(tree.total, uniforms)
        lo = np.arange(n) * tree.total / n
        assert np.all(targets >= np.floor(lo) - 1) and np.all(targets < lo + tree.total / n + 1)
        assert np.all(targets < tree.total)
        # with equal priorities, n = capacity draws hit every leaf exactly once
    indices, _ = tree.sample(SMALL.capacity)
    np.testing.assert_array_equal(np.sort(indices), np.arange(SMALL.capacity))


def test_totals_stay_exact_after_millions_of_updates():
    spec = ReplaySpec(k=16, levels=4)
    tree = R.SumTree(spec)
    rng = np.random.default_rng(7)
    for _ in range(40):  # 40 x 50k = 2M random updates with duplicates
        indices = rng.integers(0, spec.capacity, 50_000)
        codes = rng.integers(0, spec.leaf.max_code + 1, 50_000)
        tree.set(indices, codes)
    assert tree.total == int(tree.levels[-1].sum())
    for mine, expected in zip(tree.levels, brute_force_levels(spec, tree.levels[-1])):
        np.testing.assert_array_equal(mine, expected)
    assert tree.nonzero == np.count_nonzero(tree.levels[-1])


def test_totals_wider_than_32_bits_sample_correctly():
    spec = ReplaySpec(k=16, levels=5)  # root is 36 bits wide
    tree = R.SumTree(spec)
    tree.set(np.arange(spec.capacity), np.full(spec.capacity, spec.leaf.max_code))
    assert tree.total > 2**32
    uniforms = np.array([0, 2**32 - 1, 2**31, 12345], dtype=np.uint64)
    indices, _ = tree.sample(4, uniforms)
    expected = reference_sample(tree.levels[-1], R.sample_targets(tree.total, uniforms))
    np.testing.assert_array_equal(indices, expected)
    assert indices[-1] < spec.capacity


def test_model_refuses_what_the_core_refuses():
    tree = R.SumTree(SMALL)
    with pytest.raises(ValueError, match="empty"):
        tree.sample(4)
    tree.set([0], [1])
    with pytest.raises(ValueError, match="count"):
        tree.sample(0)
    with pytest.raises(ValueError, match="stride"):
        tree.sample(2, stride=2**31)
    with pytest.raises(ValueError, match="uniforms"):
        tree.sample(2, np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="seed"):
        tree.reseed(-1)


def test_clear_keeps_the_prng_and_empties_the_tree():
    tree = R.SumTree(SMALL)
    tree.set(np.arange(10), np.arange(10))
    tree.reseed(99)
    tree.clear()
    assert tree.total == 0 and tree.nonzero == 0 and not tree.levels[-1].any()
    assert tree.prng_state == 99


@pytest.mark.parametrize(
    "p, code", [(0.0, 0), (1e-9, 1), (1.0, 16), (1.03125, 17), (15.9, 254), (16.0, 255), (1e9, 255)]
)
def test_encode_priorities_rounds_keeps_positives_and_saturates(p, code):
    codes, saturated = R.encode_priorities(np.array([p]), SMALL.leaf)
    assert codes[0] == code
    assert saturated == (p * 16 + 0.5 > 256)


@pytest.mark.parametrize("bad", [-0.5, np.nan, np.inf])
def test_encode_priorities_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="finite and >= 0"):
        R.encode_priorities(np.array([1.0, bad]), SMALL.leaf)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_probabilities_agree_with_float64_within_the_documented_bound(seed):
    rng = np.random.default_rng(seed)
    spec = ReplaySpec()
    priorities = rng.uniform(0.01, 60.0, 256)
    codes, saturated = R.encode_priorities(priorities, spec.leaf)
    assert not saturated
    model_p = codes / codes.sum()
    float_p = priorities / priorities.sum()
    assert np.max(np.abs(model_p - float_p)) <= R.probability_error_bound(priorities, spec.leaf)


def test_sampled_indices_match_float64_except_at_quantization_boundaries():
    """Same uniforms, float64 priorities vs leaf codes: the draws agree for the vast majority of samples."""
    spec = ReplaySpec(k=4, levels=4)
    rng = np.random.default_rng(3)
    priorities = rng.uniform(0.5, 50.0, spec.capacity)
    tree = R.SumTree(spec)
    tree.set(np.arange(spec.capacity), R.encode_priorities(priorities, spec.leaf)[0])
    uniforms = rng.integers(0, 2**32, 4096, dtype=np.uint64)
    mine, _ = tree.sample(4096, uniforms)
    reference = R.sample_float64(priorities, uniforms)
    assert np.mean(mine == reference) > 0.99
    assert np.max(np.abs(mine - reference)) <= 1  # disagreements are neighbours across a boundary


def test_records_round_trip():
    indices, codes = np.array([0, 5, 2**20 - 1]), np.array([0, 2**16 - 1, 12])
    np.testing.assert_array_equal(R.unpack_set(R.pack_set(indices, codes))[0], indices)
    np.testing.assert_array_equal(R.unpack_results(R.pack_results(indices, codes))[1], codes)
    assert R.pack_uniforms(np.array([2**32 - 1], dtype=np.uint64))[0] == 2**32 - 1
