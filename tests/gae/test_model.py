"""Rung 2: the bit-exact GAE model against a float64 reference, its two implementations against each other."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pynq_rl.overlay import fixed
from pynq_rl.overlay.models import gae as model
from pynq_rl.overlay.spec import GaeMode, GaeSpec

needs_numba = pytest.mark.skipif(not model.HAVE_NUMBA, reason="numba not installed")


def rollout(rng, n_steps, n_envs, value_scale=10.0, done_prob=0.05):
    rewards = rng.normal(size=(n_steps, n_envs))
    values = np.cumsum(rng.normal(size=(n_steps + 1, n_envs)), axis=0) * value_scale / 10
    dones = (rng.random((n_steps, n_envs)) < done_prob).astype(np.int64)
    return rewards, values, dones


def coef_codes(spec, gamma, lam):
    return int(fixed.quantize(gamma, spec.coef)[0]), int(fixed.quantize(gamma * lam, spec.coef)[0])


def run_raw(spec, rewards, values, dones, gamma, lam, **kwargs):
    r, _ = fixed.quantize(rewards, spec.data)
    v, _ = fixed.quantize(values, spec.data)
    result = model.gae_fixed(spec, r, v, dones, *coef_codes(spec, gamma, lam), **kwargs)
    return result, fixed.dequantize(result.advantages, spec.data), fixed.dequantize(result.returns, spec.data)


def run_runs(spec, rewards, values, dones, gamma, lam):
    """q8-runs, as the driver encodes it: runs of RUN_LENGTH records in stream order (the chunks latest first)."""
    n_steps = rewards.shape[0]
    unit = model.choose_unit(max(np.abs(rewards).max(), np.abs(values).max()), gamma, lam, spec.data)
    rr, vr = model.encode_rollout_runs(rewards, values, unit, spec)
    run = spec.run_of_rows(n_steps)
    result = model.gae_fixed(
        spec,
        rr.codes,
        vr.codes,
        dones,
        *coef_codes(spec, gamma, lam),
        GaeMode.Q8_RUNS,
        *rr.expanded(run[:n_steps]),
        *vr.expanded(run),
    )
    scale = spec.data.lsb * unit
    return result, result.advantages * scale, result.returns * scale, unit, rr, vr


def run_q8(spec, rewards, values, dones, gamma, lam):
    unit = model.choose_unit(max(np.abs(rewards).max(), np.abs(values).max()), gamma, lam, spec.data)
    rb, vb = model.encode_q8(rewards, unit, spec), model.encode_q8(values, unit, spec)
    result = model.gae_fixed(
        spec,
        rb.codes,
        vb.codes,
        dones,
        *coef_codes(spec, gamma, lam),
        GaeMode.Q8,
        rb.scale,
        rb.offset,
        vb.scale,
        vb.offset,
    )
    scale = spec.data.lsb * unit
    return result, result.advantages * scale, result.returns * scale, unit, rb, vb


# -- the two implementations agree bit for bit ----------------------------------------------------------------------
@needs_numba
@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 6),
    st.integers(1, 3),
    st.floats(0, 1),
    st.floats(0, 1),
    st.sampled_from([1.0, 1e3, 1e5]),
    st.floats(0, 0.5),
    st.integers(0, 2**32 - 1),
)
def test_numba_and_numpy_paths_are_bit_identical(n_steps, n_envs, k, gamma, lam, scale, done_prob, seed):
    spec = GaeSpec(lookahead=k)
    rng = np.random.default_rng(seed)
    rewards, values, dones = rollout(rng, n_steps, n_envs, scale, done_prob)
    rewards *= scale  # 1e5 saturates Q15.16: the flag and the clipping must agree too
    fast, _, _ = run_raw(spec, rewards, values, dones, gamma, lam, use_numba=True)
    slow, _, _ = run_raw(spec, rewards, values, dones, gamma, lam, use_numba=False)
    assert np.array_equal(fast.advantages, slow.advantages)
    assert np.array_equal(fast.returns, slow.returns)
    assert fast.saturated == slow.saturated


# -- against float64 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_raw_mode_within_1e3_for_values_below_1000(k, seed):
    spec = GaeSpec(lookahead=k)
    rng = np.random.default_rng(seed)
    rewards, values, dones = rollout(rng, 1024, 16, value_scale=1.0, done_prob=0.01)
    values = values / np.abs(values).max() * 999.0  # |values| < 1000, smooth like a critic's output
    rewards = rewards * 10
    result, adv, ret = run_raw(spec, rewards, values, dones, 0.99, 0.95)
    ref_adv, ref_ret = model.gae_float64(rewards, values, dones, 0.99, 0.95)
    assert not result.saturated
    assert np.abs(adv - ref_adv).max() < 1e-3
    assert np.abs(ret - ref_ret).max() < 1e-3


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60),
    st.integers(1, 5),
    st.integers(1, 3),
    st.floats(0, 0.999),
    st.floats(0, 1),
    st.integers(0, 2**32 - 1),
)
def test_both_modes_within_documented_bound(n_steps, n_envs, k, gamma, lam, seed):
    spec = GaeSpec(lookahead=k, t_max=16)  # T up to 60: up to four chained chunks, one recursion, one q8 block
    rng = np.random.default_rng(seed)
    rewards, values, dones = rollout(rng, n_steps, n_envs, value_scale=50.0, done_prob=0.1)
    ref_adv, ref_ret = model.gae_float64(rewards, values, dones, gamma, lam)
    delta_max = np.abs(rewards).max() + (1 + gamma) * np.abs(values).max()
    adv_max = max(np.abs(ref_adv).max(), np.abs(values).max())
    lsb = spec.data.lsb
    _, adv, ret = run_raw(spec, rewards, values, dones, gamma, lam)
    bound = model.error_bound(spec, gamma, lam, 1.0, lsb / 2, lsb / 2, delta_max, adv_max)
    assert np.abs(adv - ref_adv).max() <= bound
    assert np.abs(ret - ref_ret).max() <= bound
    for run in (run_q8, run_runs):  # one block per operation; a block per lane and run of records
        _, adv, ret, unit, rb, vb = run(spec, rewards, values, dones, gamma, lam)
        bound = model.error_bound(spec, gamma, lam, unit, rb.error, vb.error, delta_max, adv_max)
        assert np.abs(adv - ref_adv).max() <= bound, run.__name__
        assert np.abs(ret - ref_ret).max() <= bound, run.__name__


def test_runs_follow_a_slowly_varying_reward_where_one_block_rounds_it_the_same_way():
    """An alive-bonus-like rollout (reward ~1 with a slow drift, values rising over an episode): q8-runs' advantage
    error (rms over std(A)) is at least 4x smaller than one block's, for 10 bits per element instead of 8."""
    spec = GaeSpec()
    rng = np.random.default_rng(5)
    n_steps, n_envs = 2048, 4
    t = np.arange(n_steps)[:, None]
    rewards = 1.0 + 0.3 * np.sin(t / 40.0 + rng.uniform(0, 6, n_envs)) + 0.02 * rng.normal(size=(n_steps, n_envs))
    values = np.cumsum(rng.normal(0, 0.3, (n_steps + 1, n_envs)), axis=0) + 30.0
    dones = (rng.random((n_steps, n_envs)) < 0.002).astype(np.int64)
    ref_adv, _ = model.gae_float64(rewards, values, dones, 0.99, 0.95)

    def relative_error(run):
        _, adv, *_ = run(spec, rewards, values, dones, 0.99, 0.95)
        return np.sqrt(np.mean((adv - ref_adv) ** 2)) / np.std(ref_adv)

    block, runs = relative_error(run_q8), relative_error(run_runs)
    assert runs * 4 <= block, (runs, block)
    assert spec.bits_per_element(GaeMode.Q8_RUNS) == 10.0 and spec.bits_per_element(GaeMode.Q8) == 8.0


def test_encode_runs_codes_never_clip_and_each_run_has_its_own_scale():
    spec = GaeSpec(run_length=8)
    rng = np.random.default_rng(4)
    x = rng.standard_cauchy(size=(40, 3)) * np.repeat([1.0, 100.0, 0.01, 1.0, 5.0], 8)[:, None]
    run = np.arange(40) // 8
    runs = model.encode_runs(x, 4.0, spec, run, 5)
    assert runs.codes.min() >= -127 and runs.codes.max() <= 127
    scale, offset = runs.expanded(run)
    recon = (runs.codes * scale + offset) * spec.data.lsb * 4.0
    assert np.all(np.abs(recon - x) <= 0.5 * np.maximum(scale, 1) * spec.data.lsb * 4.0)
    assert np.abs(recon - x).max() <= runs.error
    assert len(np.unique(runs.scale[:, 0])) == 5  # five runs of one lane, five scales
    empty = model.encode_runs(x[:8], 4.0, spec, np.zeros(8, np.int64), 2)  # run 1 has no rows: zeros
    assert empty.scale[1].tolist() == [0, 0, 0] and empty.offset[1].tolist() == [0, 0, 0]


def _encode_runs_one_by_one(x, unit, spec, run_of_rows, n_runs):
    """encode_runs' documented rule applied to one run of one lane at a time (the reference its vectorized form
    must equal bit for bit)."""
    data, code = spec.data, spec.code
    codes = np.zeros(x.shape, np.int64)
    scale, offset = np.zeros((n_runs, x.shape[1]), np.int64), np.zeros((n_runs, x.shape[1]), np.int64)
    for run in range(n_runs):
        rows = np.flatnonzero(run_of_rows == run)
        for lane in range(x.shape[1]):
            if not len(rows):
                continue
            y = x[rows, lane] / unit
            offset[run, lane] = int(fixed.quantize((y.max() + y.min()) / 2, data)[0])
            centered = y - offset[run, lane] * data.lsb
            scale[run, lane] = int(np.ceil(np.abs(centered).max() / code.max_code / data.lsb))
            if scale[run, lane]:
                codes[rows, lane] = fixed.quantize(centered / (scale[run, lane] * data.lsb), code)[0]
    return codes, scale, offset


@settings(max_examples=60, deadline=None)
@given(
    n_rows=st.integers(1, 40),
    n_lanes=st.integers(1, 4),
    n_runs=st.integers(1, 6),
    shuffled=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_encode_runs_equals_its_rule_run_by_run(n_rows, n_lanes, n_runs, shuffled, seed):
    """In stream order or interleaved, with runs that have no rows, heavy tails and constant runs."""
    spec = GaeSpec(run_length=8)
    rng = np.random.default_rng(seed)
    x = rng.standard_cauchy((n_rows, n_lanes)) * rng.choice([0.0, 0.01, 1.0, 50.0], (n_rows, 1))
    run_of_rows = np.sort(rng.integers(0, n_runs, n_rows))
    if shuffled:
        run_of_rows = rng.permutation(run_of_rows)
    unit = model.choose_unit(float(np.abs(x).max()), 0.99, 0.95, spec.data)
    got = model.encode_runs(x, unit, spec, run_of_rows, n_runs)
    codes, scale, offset = _encode_runs_one_by_one(x, unit, spec, run_of_rows, n_runs)
    assert np.array_equal(got.codes, codes) and np.array_equal(got.scale, scale)
    assert np.array_equal(got.offset, offset)


def test_runs_stream_round_trips_and_sizes_count_every_header():
    spec = GaeSpec(lanes=3, t_max=10, run_length=4)
    rng = np.random.default_rng(6)
    n_steps, n_envs = 23, 5  # 3 chunks, 2 lane-batches (the last 2 lanes wide), runs across chunk boundaries
    run = spec.run_of_rows(n_steps)
    rr, vr = model.encode_rollout_runs(
        rng.normal(size=(n_steps, n_envs)), rng.normal(size=(n_steps + 1, n_envs)), 1.0, spec
    )
    dones = rng.integers(0, 2, (n_steps, n_envs))
    stream = model.pack_input_runs(spec, rr, vr, dones)
    assert len(stream) == 2 * spec.input_batch_bytes(GaeMode.Q8_RUNS, n_steps)
    assert spec.input_batch_bytes(GaeMode.Q8_RUNS, n_steps) == (
        (n_steps + 1) * spec.input_record_bytes(GaeMode.Q8_RUNS) + 2 * 6 * spec.header_record_bytes
    )
    codes_r, codes_v, got_dones, rs, ro, vs, vo = model.unpack_input_runs(spec, stream, n_steps, 2, 2)
    assert np.array_equal(codes_r, rr.codes) and np.array_equal(codes_v, vr.codes)
    assert np.array_equal(got_dones, dones)
    for got, want in zip((rs, ro, vs, vo), (*rr.expanded(run[:n_steps]), *vr.expanded(run))):
        assert np.array_equal(got, want)


def test_q8_error_is_small_next_to_the_advantage_scale():
    """The q8 bound is a worst case (errors adding coherently over 1/(1 - C**k) steps); measured on a PPO-sized
    rollout the error is ~1% of the advantages' spread and the correlation with exact GAE is > 0.9999."""
    spec = GaeSpec()
    rewards, values, dones = rollout(np.random.default_rng(1), 128, 8, value_scale=20.0)
    _, adv, _, unit, rb, vb = run_q8(spec, rewards, values, dones, 0.99, 0.95)
    ref_adv, _ = model.gae_float64(rewards, values, dones, 0.99, 0.95)
    error = adv - ref_adv
    assert np.sqrt(np.mean(error**2)) < 0.02 * np.std(ref_adv)
    assert np.corrcoef(adv.ravel(), ref_adv.ravel())[0, 1] > 0.9999


def test_encode_q8_codes_never_clip_and_error_holds():
    spec = GaeSpec()
    x = np.random.default_rng(3).standard_cauchy(size=(50, 7))  # heavy tails: std-based scaling would clip
    block = model.encode_q8(x, 4.0, spec)
    assert block.codes.min() >= -127 and block.codes.max() <= 127
    recon = (block.codes * block.scale + block.offset) * spec.data.lsb * 4.0
    assert np.abs(recon - x).max() <= block.error


def test_constant_block_encodes_exactly_to_offset():
    block = model.encode_q8(np.full((4, 3), 1.0), 1.0, GaeSpec())
    assert block.scale == 0 and not block.codes.any() and block.offset == 1 << 16


# -- properties of GAE (SB3's docstring) ------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3])
def test_lambda_zero_gives_td_error(k):
    spec = GaeSpec(lookahead=k)
    rewards, values, dones = rollout(np.random.default_rng(5), 37, 3)
    _, adv, _ = run_raw(spec, rewards, values, dones, 0.9, 0.0)
    td = rewards + 0.9 * (1 - dones) * values[1:] - values[:-1]
    assert np.abs(adv - td).max() < 1e-4


@pytest.mark.parametrize("k", [1, 2, 3])
def test_lambda_one_gives_discounted_return_minus_value(k):
    spec = GaeSpec(lookahead=k)
    rewards, values, dones = rollout(np.random.default_rng(6), 41, 3)
    _, adv, _ = run_raw(spec, rewards, values, dones, 0.95, 1.0)
    ret = np.zeros_like(rewards)
    running = values[-1].copy()
    for t in reversed(range(len(rewards))):
        running = rewards[t] + 0.95 * (1 - dones[t]) * running
        ret[t] = running
    assert np.abs(adv - (ret - values[:-1])).max() < 1e-3


def test_done_cuts_value_and_advantage():
    spec = GaeSpec(lookahead=3)
    rewards = np.array([[1.0], [2.0], [3.0], [4.0]])
    values = np.array([[10.0], [20.0], [30.0], [40.0], [50.0]])
    dones = np.array([[0], [1], [0], [0]])
    _, adv, _ = run_raw(spec, rewards, values, dones, 1.0, 1.0)
    assert adv[1, 0] == pytest.approx(2.0 - 20.0, abs=1e-4)  # step 1 ends the episode: nothing flows back
    assert adv[0, 0] == pytest.approx(1.0 + 20.0 - 10.0 + adv[1, 0], abs=1e-4)


# -- saturation and input checks ------------------------------------------------------------------------------------
def test_saturation_clips_and_flags_instead_of_wrapping():
    spec = GaeSpec()
    rewards = np.full((64, 2), 30000.0)
    values = np.zeros((65, 2))
    result, adv, _ = run_raw(spec, rewards, values, np.zeros((64, 2), dtype=np.int64), 0.99, 0.95)
    assert result.saturated
    assert adv.max() == pytest.approx(spec.data.max_value) and adv.min() > 0


def test_cycles_are_the_counts_the_rtl_measures():
    """The model's CYCLES, pinned to numbers: 16 cycles of pipeline per chunk is what the MyHDL core measures
    (tests/gae/test_rtl.py), so a change to the model's formula or to ``pipeline_depth`` alone fails here."""
    one_chunk, _, _ = run_raw(GaeSpec(), *rollout(np.random.default_rng(0), 77, 2), 0.99, 0.95)
    assert one_chunk.cycles == 77 + 16
    chunked, _, _ = run_raw(GaeSpec(t_max=16, lanes=2), *rollout(np.random.default_rng(1), 50, 3), 0.99, 0.95)
    assert chunked.cycles == 2 * (50 + 4 * 16)  # 2 lane-batches of 4 chunks each


def test_out_of_range_codes_and_registers_raise():
    spec = GaeSpec()
    codes = np.zeros((3, 1), dtype=np.int64)
    with pytest.raises(ValueError, match=r"reward codes must lie in \[-128, 127\]"):
        model.gae_fixed(spec, codes + 200, np.zeros((4, 1)), codes, 1, 1, GaeMode.Q8, 1, 0, 1, 0)
    with pytest.raises(ValueError, match=r"GAMMA must be a coefficient code"):
        model.gae_fixed(spec, codes, np.zeros((4, 1)), codes, (1 << 23) + 1, 1)
    with pytest.raises(ValueError, match=r"expected rewards \(T, N\), values \(T \+ 1, N\)"):
        model.gae_fixed(spec, codes, np.zeros((3, 1)), codes, 1, 1)


@pytest.mark.parametrize("mode", list(GaeMode))
@pytest.mark.parametrize("lanes", [1, 7, 8, 9, 64])
def test_stream_records_round_trip(mode, lanes):
    spec = GaeSpec(lanes=lanes)
    rng = np.random.default_rng(lanes)
    n = max(1, lanes - 1)
    hi = 1 << 30 if mode == GaeMode.RAW else 127
    r, v = rng.integers(-hi, hi, (5, n)), rng.integers(-hi, hi, (6, n))
    d = rng.integers(0, 2, (5, n))
    records = model.pack_input(spec, mode, r, v, d)
    assert records.nbytes == 6 * spec.input_record_bytes(mode) and records.itemsize % spec.stream_bytes == 0
    r2, v2, d2 = model.unpack_input(spec, mode, records, n)
    assert np.array_equal(r, r2) and np.array_equal(v, v2) and np.array_equal(d, d2)
    out = model.pack_output(spec, r, r[::-1])
    a2, ret2 = model.unpack_output(spec, out, n)
    assert np.array_equal(a2, r) and np.array_equal(ret2, r[::-1])


def test_chained_chunks_are_the_one_long_recursion():
    """A lane-batch of T > T_MAX is one operation of CHUNKS chained chunks: the same bits as a build whose T_MAX
    holds all of T; only CYCLES sees the chunks (one pipeline depth each)."""
    rng = np.random.default_rng(5)
    rewards, values, dones = rollout(rng, 50, 3)
    chained, whole = GaeSpec(t_max=16, lanes=2), GaeSpec(t_max=64, lanes=2)
    a, _, _ = run_raw(chained, rewards, values, dones, 0.99, 0.95)
    b, _, _ = run_raw(whole, rewards, values, dones, 0.99, 0.95)
    assert np.array_equal(a.advantages, b.advantages) and np.array_equal(a.returns, b.returns)
    assert chained.chunking(50) == (4, 2) and whole.chunking(50) == (1, 50)
    assert a.cycles == 2 * (50 + 4 * chained.pipeline_depth) and b.cycles == 2 * (50 + whole.pipeline_depth)


@pytest.mark.parametrize("n_steps", [1, 15, 16, 17, 40, 48])
def test_stream_rows_are_the_chunks_latest_first(n_steps):
    spec = GaeSpec(t_max=16)
    rows = spec.stream_rows(n_steps)
    chunks, first = spec.chunking(n_steps)
    assert chunks == -(-n_steps // 16) and 1 <= first <= 16 and first + (chunks - 1) * 16 == n_steps
    assert sorted(rows.tolist()) == list(range(n_steps + 1))  # every time row and the bootstrap once
    assert rows[: first + 1].tolist() == list(range(n_steps - first, n_steps + 1))
    for c in range(1, chunks):  # then each earlier T_MAX, forward
        start = first + 1 + (c - 1) * 16
        assert rows[start : start + 16].tolist() == list(
            range(n_steps - first - c * 16, n_steps - first - (c - 1) * 16)
        )
    with pytest.raises(ValueError, match="n_steps must be >= 1"):
        spec.chunking(0)


@pytest.mark.parametrize("mode", list(GaeMode))
def test_chained_stream_records_round_trip(mode):
    spec = GaeSpec(lanes=3, t_max=8)
    rng = np.random.default_rng(9)
    hi = 1 << 30 if mode == GaeMode.RAW else 127
    r, v, d = rng.integers(-hi, hi, (21, 5)), rng.integers(-hi, hi, (22, 5)), rng.integers(0, 2, (21, 5))
    records = model.pack_input(spec, mode, r, v, d).reshape(2, 22)
    assert records["value"][0, :6, 0].tolist() == v[16:22, 0].tolist()  # 5 latest steps and V_21 first
    assert records["reward"][0, 5, 0] == 0  # the bootstrap row has no reward
    assert records["value"][0, 6:14, 0].tolist() == v[8:16, 0].tolist()  # then steps 8..15, no bootstrap row
    r2, v2, d2 = model.unpack_input(spec, mode, records.ravel(), 2, 2)
    assert np.array_equal(r, r2) and np.array_equal(v, v2) and np.array_equal(d, d2)
    out = model.pack_output(spec, r, -r)
    assert out.reshape(2, 21)["advantage"][0, :, 0].tolist() == r[::-1, 0].tolist()  # newest first, all chunks
    a2, ret2 = model.unpack_output(spec, out, 2, 2)
    assert np.array_equal(a2, r) and np.array_equal(ret2, -r)
