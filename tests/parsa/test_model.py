"""The ParSa core's bit-exact model: tiling schedule, tile coding vs float64, Sarsa semantics, both code paths."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pynq_rl.host.drivers.tiling_config import opal_ddos_layout
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as P

SMALL = S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4)
ONE = 1 << 16


def small_layout():
    return P.TilingLayout((P.TilingSet((), 2, 3), P.TilingSet((0,), 2, 3), P.TilingSet((1, 2), 2, 3)), 3)


def configured(spec=SMALL, layout=None, use_numba=None, **registers):
    layout = layout or small_layout()
    model = P.ParsaModel(spec, use_numba=use_numba)
    model.n_dims, model.n_actions = layout.n_dims, registers.pop("n_actions", min(3, spec.max_actions))
    for name, value in registers.items():
        setattr(model, name, value)
    offsets, scales = P.dimension_codes(np.full(layout.n_dims, -1.0), np.full(layout.n_dims, 1.0))
    assert model.configure(offsets, scales, P.schedule(layout, spec))
    return model


def test_schedule_is_heaviest_first_and_balanced():
    spec = S.BOARDS["ZCU106"].slot("parsa").spec
    descriptors = P.schedule(opal_ddos_layout(), spec)
    assert len(descriptors) == 136
    per_worker = np.bincount([d.worker for d in descriptors], minlength=spec.workers)
    rows = [max((d.base + d.rows for d in descriptors if d.worker == w), default=0) for w in range(spec.workers)]
    assert per_worker.max() == -(-136 // spec.workers)  # tilings balanced: the busiest sets the cycles
    assert 7**4 <= max(rows) <= spec.tiles_per_worker
    for w in range(spec.workers):  # a worker's tilings tile its bank without gaps or overlaps
        mine = sorted((d.base, d.rows) for d in descriptors if d.worker == w)
        assert all(b0 + r0 == b1 for (b0, r0), (b1, _) in zip(mine, mine[1:])) and mine[0][0] == 0


def test_schedule_falls_back_to_balancing_rows_when_tilings_first_runs_out_of_room():
    """Sizes 5, 2, 2, 2, 1, 1 on 2 workers x 7 rows x 3 tilings: balancing tilings leaves a 1-row tiling no
    worker with room; balancing rows (OPaL's rule) packs all 13 rows."""
    sets = (P.TilingSet((0,), 1, 5), *[P.TilingSet((0,), 1, 2)] * 3, *[P.TilingSet((), 1, 2)] * 2)
    spec = S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=7, max_tilings=3, keys=4)
    descriptors = P.schedule(P.TilingLayout(sets, 1), spec)
    assert [(d.worker, d.rows, d.base) for d in descriptors] == [
        (0, 5, 0),
        (0, 1, 5),
        (0, 1, 6),
        (1, 2, 0),
        (1, 2, 2),
        (1, 2, 4),
    ]


def test_schedule_names_the_limit_it_breaks():
    with pytest.raises(ValueError, match="policy rows"):
        P.schedule(opal_ddos_layout(), S.BOARDS["Pynq-Z2"].slot("parsa").spec)
    with pytest.raises(ValueError, match="4 per set"):
        P.schedule(P.TilingLayout((P.TilingSet((0, 1, 2, 3, 4), 1, 2),), 5), S.ParsaSpec())
    with pytest.raises(ValueError, match="tilings exceed"):
        P.schedule(P.TilingLayout((P.TilingSet((0,), 20, 2),), 1), SMALL)


@settings(max_examples=200, deadline=None)
@given(state=st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3))
def test_tile_rows_match_the_float64_tile_coder_away_from_edges(state):
    layout = small_layout()
    model = configured(layout=layout)
    lows, highs = np.full(3, -1.0), np.full(3, 1.0)
    codes = np.floor(np.asarray(state) * 65536 + 0.5).astype(np.int64)
    rows = model.rows(model.positions(codes))
    # the same tiles, by global index, as the float reference (descriptor -> global tile offset)
    offsets, offset = {}, 0
    for set_index, s in enumerate(layout.sets):
        for copy in range(s.tilings):
            offsets[(set_index, copy)] = offset
            offset += s.tiles_per_tiling
    got = [offsets[(d.set_index, d.copy)] + row - d.base for d, row in zip(model.descriptors, rows)]
    order = np.argsort([offsets[(d.set_index, d.copy)] for d in model.descriptors])
    expected = P.float_tile_indices(layout, lows, highs, state)
    u = np.clip((np.asarray(state) + 1) / 2, 0, 1)
    near_edge = np.any(np.abs(u * 3 * 2 - np.round(u * 3 * 2)) < 2e-4)  # 3 tiles, shifts of 1/2 tile
    if not near_edge:
        assert [got[i] for i in order] == expected


def test_one_sarsa_step_by_hand():
    """Bias tile only, 2 actions: q = w, so the update can be written out."""
    spec = S.ParsaSpec(max_dims=1, max_actions=2, workers=1, tiles_per_worker=4, max_tilings=1, keys=2)
    layout = P.TilingLayout((P.TilingSet((), 1, 1),), 1)
    model = configured(spec, layout, n_actions=2, alpha=ONE // 2, gamma=ONE // 4, epsilon=0, epsilon_decay=ONE)
    model.banks[0, 0, :2] = [10, 40]
    first = model.act([0], [0], [0], [[0]])
    assert first.actions[0] == 1 and first.q_chosen[0] == 40 and first.updates == 0
    second = model.act([0], [int(S.ParsaFlag.REWARD)], [-8], [[0]])
    # delta = r + rnd(gamma * q(s', a')) - q(s, a) = -8 + 10 - 40 = -38; w[1] += rnd(-38 / 2) = -19
    assert second.updates == 1 and model.banks[0, 0, 1] == 21 and second.q_chosen[0] == 40
    third = model.act([0], [int(S.ParsaFlag.REWARD | S.ParsaFlag.TERMINAL)], [5], [[0]])
    # terminal: delta = r - q(s, a) with q(s, a) = 40 stored from before the update -> -35, rnd(-17.5) = -17
    assert third.actions[0] == S.PARSA_NO_ACTION and model.banks[0, 0, 1] == 21 - 17
    assert not model.key_valid[0]


def test_pending_reward_is_used_once():
    model = configured(alpha=ONE, gamma=0, epsilon=0, epsilon_decay=ONE)
    model.act([1], [0], [0], [[0, 0, 0]])
    model.set_pending_reward(1, 7)
    result = model.act([1], [0], [0], [[0, 0, 0]])
    assert result.updates == 1 and not model.pending_valid[1]
    assert model.act([1], [0], [0], [[0, 0, 0]]).updates == 0


def test_epsilon_decays_and_explores_at_its_rate():
    model = configured(epsilon=ONE // 4, epsilon_decay=ONE, online=False)
    result = model.act(
        np.zeros(4000, dtype=int), np.zeros(4000, dtype=int), np.zeros(4000, dtype=int), np.zeros((4000, 3), dtype=int)
    )
    assert 0.22 < result.explored.mean() < 0.28
    assert set(result.actions[result.explored]) == {0, 1, 2}
    model.epsilon, model.epsilon_decay = ONE, ONE // 2
    model.act([0, 0, 0], [0, 0, 0], [0, 0, 0], np.zeros((3, 3), dtype=int))
    assert model.epsilon == ONE // 8


def test_epsilon_decay_truncates_so_a_small_epsilon_still_reaches_zero():
    """Rounding half up would stall EPSILON = 40 at 40 under a 0.99 factor (40 * 0.01 < 1/2); truncation does not."""
    decay = round(0.99 * ONE)
    model = configured(epsilon=40, epsilon_decay=decay, online=False)
    epsilons = []
    for _ in range(60):
        model.act([0], [0], [0], np.zeros((1, 3), dtype=int))
        epsilons.append(model.epsilon)
    assert epsilons[0] == (40 * decay) >> 16 == 39
    assert all(b < a for a, b in zip(epsilons, epsilons[1:]) if a > 0) and epsilons[-1] == 0


def test_rejected_keys_and_saturation_are_flagged():
    spec = S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4, value_w=8)
    model = configured(spec, alpha=ONE, gamma=ONE, epsilon=0, epsilon_decay=ONE)
    result = model.act([9], [0], [0], [[0, 0, 0]])
    assert result.rejected == 1 and result.actions[0] == S.PARSA_NO_ACTION
    model.act([0], [0], [0], [[0, 0, 0]])
    result = model.act([0], [1], [1000], [[0, 0, 0]])  # reward beyond int8
    assert result.saturated and np.all(np.abs(model.banks) <= 127)


def test_configure_refuses_what_would_corrupt_memory():
    model = P.ParsaModel(SMALL)
    model.n_dims = 3
    good = P.schedule(small_layout(), SMALL)
    offsets, scales = P.dimension_codes(np.zeros(3), np.ones(3))
    bad_cases = [
        [P.Descriptor(2, (0,), 3, 4, 0, 0)],  # worker beyond WORKERS
        [P.Descriptor(0, (5,), 3, 4, 0, 0)],  # dim beyond N_DIMS
        [P.Descriptor(0, (0, 1), 3, 4, 0, 60)],  # rows beyond the bank
        [P.Descriptor(0, (0,), 3, 5, 0, 0)],  # n_t > tiles + 1
        [P.Descriptor(0, (), 1, 1, 0, i) for i in range(9)],  # more tilings than MAX_TILINGS
    ]
    for descriptors in bad_cases:
        assert not model.configure(offsets, scales, descriptors)
        assert model.descriptors == []
    assert model.configure(offsets, scales, good)
    assert model.start_error(S.ParsaMode.ACT) is None or "coefficient" not in model.start_error(S.ParsaMode.ACT)


def test_start_error_names_the_register():
    model = P.ParsaModel(SMALL)
    assert "no tiling" in model.start_error(S.ParsaMode.ACT)
    model.n_actions = 0
    assert "N_ACTIONS" in model.start_error(S.ParsaMode.ACT)
    model.n_actions, model.alpha = 1, ONE + 1
    assert "coefficient" in model.start_error(S.ParsaMode.ACT)
    assert "unknown mode" in model.start_error(9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), value_w=st.sampled_from([8, 16, 32]))
def test_compiled_and_interpreted_paths_agree(seed, value_w):
    if not P.HAVE_NUMBA:
        pytest.skip("numba not installed")
    spec = S.ParsaSpec(
        max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4, value_w=value_w
    )
    rng = np.random.default_rng(seed)
    registers = dict(
        alpha=int(rng.integers(0, ONE + 1)),
        gamma=int(rng.integers(0, ONE + 1)),
        epsilon=int(rng.integers(0, ONE + 1)),
        epsilon_decay=int(rng.integers(ONE // 2, ONE + 1)),
    )
    models = [configured(spec, use_numba=flag, **registers) for flag in (False, True)]
    for m in models:
        m.reseed(seed)
        m.set_pending_reward(2, int(rng.integers(-50, 50)))
    n = 60
    keys = rng.integers(0, 5, n)  # key 4 is beyond KEYS
    flags = rng.integers(0, 4, n)
    rewards = rng.integers(-(2**20), 2**20, n) if value_w == 32 else rng.integers(-300, 300, n)
    states = rng.integers(-70000, 70000, (n, 3))
    results = [m.act(keys, flags, rewards, states) for m in models]
    for name in ("actions", "explored", "q_values", "q_chosen"):
        np.testing.assert_array_equal(getattr(results[0], name), getattr(results[1], name))
    for name in ("saturated", "rejected", "cycles", "cycles_update", "updates"):
        assert getattr(results[0], name) == getattr(results[1], name)
    np.testing.assert_array_equal(models[0].banks, models[1].banks)
    assert (models[0].epsilon, models[0].prng_state) == (models[1].epsilon, models[1].prng_state)


def test_stream_records_round_trip():
    rng = np.random.default_rng(0)
    keys, flags = rng.integers(0, 100, 5), rng.integers(0, 4, 5)
    rewards, states = rng.integers(-(2**31), 2**31, 5), rng.integers(-(2**31), 2**31, (5, 3))
    unpacked = P.unpack_states(P.pack_states(keys, flags, rewards, states, 3), 3)
    for a, b in zip(unpacked, (keys, flags, rewards, states)):
        np.testing.assert_array_equal(a, b)
    q = rng.integers(-(2**31), 2**31, (5, 3))
    actions, explored, q_chosen, q_values = P.unpack_actions(
        P.pack_actions([1, 2, 0, 1, 2], [0, 1, 0, 0, 1], q[:, 0], q, 3), 3
    )
    np.testing.assert_array_equal(q_values, q)
    np.testing.assert_array_equal(q_chosen, q[:, 0])
    descriptors = P.schedule(small_layout(), SMALL)
    assert [
        d[:6]
        for d in map(
            lambda x: (x.worker, x.dims, x.tiles, x.n_t, x.shift, x.base),
            P.unpack_descriptors(P.pack_descriptors(descriptors)),
        )
    ] == [(d.worker, d.dims, d.tiles, d.n_t, d.shift, d.base) for d in descriptors]
    banks = rng.integers(-(2**15), 2**15, (SMALL.workers, SMALL.tiles_per_worker, SMALL.max_actions))
    np.testing.assert_array_equal(P.unpack_policy(P.pack_policy(banks), SMALL), banks)


@pytest.mark.parametrize(
    "lows, highs, match",
    [([0.0], [0.0], "range"), ([0.0], [1e6], "range"), ([np.nan], [1.0], "finite"), ([-1e5], [-9e4], "lower bounds")],
)
def test_dimension_codes_refuse_unusable_bounds(lows, highs, match):
    with pytest.raises(ValueError, match=match):
        P.dimension_codes(lows, highs)
