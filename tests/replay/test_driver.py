"""Rung 6: the ReplayCore driver through the real PYNQ path (Overlay -> VLNV binding -> MMIO + stock DMA), per backend.

``emu`` runs the default board's build (capacity 2**16); ``rtl`` a small build (64 leaves) of the same core.
"""

import warnings

import numpy as np
import pytest
from pynq.lib.dma import DMA

from pynq_rl.host.drivers import ReplayCore, ReplaySaturationWarning
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import replay as model
from tests.common.boards import RTL_REPLAY_TEST_BOARD, make_overlay

REPLAY_BACKENDS = ["emu", "rtl", "verilator", "board"]


@pytest.fixture(params=REPLAY_BACKENDS)
def overlay(request):
    """An overlay with a replay core on each backend (the small build on rtl)."""
    return make_overlay(request.param, RTL_REPLAY_TEST_BOARD if request.param == "rtl" else None)


@pytest.fixture
def replay(overlay) -> ReplayCore:
    core = overlay.replay
    core.clear()
    core.seed = 2024
    return core


def model_of(core: ReplayCore) -> model.SumTree:
    """A fresh model of the same build, seeded like the core."""
    tree = model.SumTree(core.spec)
    tree.reseed(core.seed)
    return tree


def random_priorities(rng, n):
    return rng.gamma(1.0, 2.0, n) * (rng.random(n) < 0.9)


def test_overlay_binds_the_replay_core_by_vlnv(overlay):
    core = overlay.replay
    assert isinstance(core, ReplayCore) and isinstance(core.dma, DMA)
    assert overlay.ip_dict["replay/core"]["type"] == S.REPLAY_VLNV
    built = overlay.board_spec.slot("replay").spec
    assert (core.spec.k, core.spec.levels, core.spec.leaf) == (built.k, built.levels, built.leaf)
    assert core.capacity == built.capacity == int(core.register_map.CAPACITY)
    assert overlay.info()["cores"]["replay"]["capacity"] == built.capacity


def test_update_then_sample_is_the_model_bit_for_bit(replay):
    rng = np.random.default_rng(0)
    tree = model_of(replay)
    for _ in range(3):
        n = 40
        indices = rng.integers(0, replay.capacity, n)
        indices[1] = indices[0]  # back-to-back writes to one leaf: the later wins
        priorities = random_priorities(rng, n)
        replay.update(indices, priorities)
        tree.set(indices, model.encode_priorities(priorities**replay.alpha, replay.spec.leaf)[0])
        assert replay.total_code == tree.total and replay.nonzero == tree.nonzero
        got, probabilities, weights = replay.sample(16, beta=0.5)
        expected, codes = tree.sample(16)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_allclose(probabilities, codes / tree.total)
        expected_w = (tree.nonzero * codes / tree.total) ** -0.5
        np.testing.assert_allclose(weights, expected_w / expected_w.max(), rtol=1e-6)
        assert replay.seed == tree.prng_state
    assert 1 <= replay.cycles <= 16 + replay.spec.sample_depth + 16


def test_host_uniforms_give_the_model_samples(replay):
    rng = np.random.default_rng(1)
    replay.update(np.arange(50), random_priorities(rng, 50) + 0.1)
    tree = model_of(replay)
    tree.set(
        np.arange(50),
        model.encode_priorities(
            (random_priorities(np.random.default_rng(1), 50) + 0.1) ** replay.alpha, replay.spec.leaf
        )[0],
    )
    uniforms = rng.integers(0, 2**32, 24, dtype=np.uint64)
    seed_before = replay.seed
    got, _, _ = replay.sample(24, uniforms=uniforms)
    np.testing.assert_array_equal(got, tree.sample(24, uniforms)[0])
    assert replay.seed == seed_before  # host uniforms do not advance the core's PRNG


def test_only_nonzero_priorities_are_sampled_and_zero_removes(replay):
    replay.update([3, 5, 7], [1.0, 0.0, 2.0])
    replay.update([3], [0.0])
    indices, probabilities, _ = replay.sample(32)
    assert set(indices.tolist()) == {7} and np.allclose(probabilities, 1.0)
    assert replay.nonzero == 1


def test_priorities_alpha_and_dump(replay):
    replay.alpha = 1.0
    replay.update([0, 9], [1.5, 0.25])
    stored = replay.priorities()
    assert stored.shape == (replay.capacity,)
    assert stored[0] == pytest.approx(1.5, abs=replay.spec.leaf.lsb) and stored[9] == pytest.approx(0.25, abs=0.02)
    assert replay.total == pytest.approx(stored.sum())
    replay.alpha = 0.0  # uniform: every positive priority becomes 1, and 0 still removes (0**0 would be 1)
    replay.update([4, 9], [100.0, 0.0])
    assert replay.priorities()[4] == 1.0 and replay.priorities()[9] == 0.0
    assert 9 not in replay.sample(64)[0]


def test_state_dict_round_trips_priorities_and_the_sample_stream(replay, overlay):
    rng = np.random.default_rng(2)
    replay.update(rng.integers(0, replay.capacity, 60), random_priorities(rng, 60))
    state = replay.state_dict()
    after, _, _ = replay.sample(20)
    replay.clear()
    replay.seed = 1
    assert replay.total == 0
    replay.load_state_dict(state)
    np.testing.assert_array_equal(replay.dump_codes(), state["codes"])
    again, _, _ = replay.sample(20)
    np.testing.assert_array_equal(again, after)


def test_saturation_warns_or_raises_without_storing(replay):
    big = (replay.spec.leaf.max_value * 4) ** (1 / replay.alpha)
    with pytest.warns(ReplaySaturationWarning, match="clipped"):
        replay.update([1], [big])
    assert replay.dump_codes()[1] == replay.spec.leaf.max_code
    replay.strict = True
    with pytest.raises(ValueError, match="clipped"):
        replay.update([2], [big])
    assert replay.dump_codes()[2] == 0


@pytest.mark.parametrize(
    "indices, priorities, error, match",
    [
        ([0, 1], [1.0], ValueError, "shape"),
        ([[0, 1]], [[1.0, 1.0]], ValueError, "1-D"),
        ([0.5], [1.0], TypeError, "integers"),
        ([-1], [1.0], IndexError, "capacity"),
        ([10**9], [1.0], IndexError, "capacity"),
        ([0], [np.nan], ValueError, "finite"),
        ([0], [np.inf], ValueError, "finite"),
        ([0], [-1.0], ValueError, ">= 0"),
    ],
)
def test_bad_updates_raise_and_change_nothing(replay, indices, priorities, error, match):
    replay.update([0], [1.0])
    before = replay.total_code
    with pytest.raises(error, match=match):
        replay.update(indices, priorities)
    assert replay.total_code == before


def test_bad_samples_raise(replay):
    with pytest.raises(ValueError, match="every priority .* is 0"):
        replay.sample(4)
    replay.update([0], [1.0])
    for n in (0, -1, replay.spec.max_count + 1, 2.5):
        with pytest.raises(ValueError, match="n must be"):
            replay.sample(n)
    for beta in (-0.1, 1.5, "x"):
        with pytest.raises(ValueError, match="beta"):
            replay.sample(4, beta=beta)
    with pytest.raises(ValueError, match="uniforms"):
        replay.sample(4, uniforms=[1, 2, 3])
    with pytest.raises(ValueError, match="seed"):
        replay.seed = -3


def test_load_state_dict_for_another_build_changes_nothing(replay):
    replay.update([0], [1.0])
    state = replay.state_dict()
    before = replay.total_code
    with pytest.raises(ValueError, match="this core has"):
        replay.load_state_dict({**state, "k": replay.spec.k * 2})
    with pytest.raises(ValueError, match=r"state\[.codes.\] must have shape"):
        replay.load_state_dict({**state, "codes": state["codes"][:-1]})
    assert replay.total_code == before


def test_core_refuses_a_bad_stride_and_the_driver_decodes_it(replay):
    replay.update([0], [1.0])
    replay._write("COUNT", 4)
    replay._write("STRIDE", 2**31)
    replay._start(S.ReplayMode.SAMPLE)
    status = replay._wait_done(replay._deadline(1.0, S.ReplaySpec().sample_depth), lambda: "bad stride")
    assert status & S.Status.ERR_CONFIG
    assert "refused" in replay._describe_errors(status, "sample")
    replay.reset()
    assert replay.sample(4)[0].shape == (4,)


def test_out_of_range_index_on_the_stream_is_flagged(replay):
    """The driver validates indices, but the core must not trust the stream: it drops the record, ERR_CONFIG."""
    records = model.pack_set(np.array([1, replay.capacity]), np.array([5, 5]))
    with pytest.raises(RuntimeError, match="refused"):
        replay._run(S.ReplayMode.SET, records, 0, None, "bad set", 2 + replay.spec.set_depth)
    codes = replay.dump_codes()
    assert codes[1] == 5 and codes.sum() == 5


def emulated_core(overlay):
    if overlay.backend != "emu":
        pytest.skip("fault injection needs the emulated core")
    return overlay.device.cores["replay"]


def test_hung_core_times_out_and_keeps_priorities(overlay, monkeypatch):
    core = emulated_core(overlay)
    replay = overlay.replay
    replay.update([1, 2], [1.0, 2.0])
    before = replay.dump_codes()
    monkeypatch.setattr(core, "stream_out", lambda max_bytes: (np.zeros(0, np.uint8), False))
    monkeypatch.setattr(type(core), "drain", lambda self, data, cycles, flags=None: None)
    with pytest.raises(TimeoutError, match="Replay core not DONE"):
        replay.sample(8, timeout_s=0.05)
    monkeypatch.undo()
    np.testing.assert_array_equal(replay.dump_codes(), before)  # nothing stored was lost
    assert replay.sample(8)[0].shape == (8,)


def test_large_update_is_chunked(overlay):
    if overlay.backend == "rtl":
        pytest.skip("a full-capacity update is too slow to simulate in MyHDL (verilator runs it)")
    replay = overlay.replay
    replay.clear()
    n = replay.capacity
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay.update(np.arange(n), np.ones(n))
    assert replay.nonzero == n
    assert replay.total_code == n * (1 << replay.spec.leaf.frac)


def test_update_streams_the_models_set_records(overlay, monkeypatch):
    """update() sends, in one SET, exactly ``pack_set(indices, encode_priorities(priority_powers(p, alpha)))``: the
    one-pass host encoding (``encode_set_records``) is that composition bit for bit, zeros, tiny priorities (one
    LSB), saturation and repeated indices included."""
    replay = overlay.replay
    rng = np.random.default_rng(7)
    indices = rng.integers(0, replay.capacity, 64)
    indices[5] = indices[4]
    priorities = random_priorities(rng, 64)
    priorities[:3] = [0.0, 1e-9, (replay.spec.leaf.max_value * 2) ** (1 / replay.alpha)]
    sent = []
    transfer = replay._transfer
    monkeypatch.setattr(
        replay, "_transfer", lambda mode, send, *rest: sent.append(send.copy()) or transfer(mode, send, *rest)
    )
    with pytest.warns(ReplaySaturationWarning):
        replay.update(indices, priorities)
    codes, saturated = model.encode_priorities(model.priority_powers(priorities, replay.alpha), replay.spec.leaf)
    assert saturated and len(sent) == 1
    np.testing.assert_array_equal(sent[0], model.pack_set(indices, codes))
    monkeypatch.undo()
    last = {int(index): int(code) for index, code in zip(indices, codes)}  # later records of an index win
    assert len(last) < len(indices)  # indices[5] repeats indices[4]; the small rtl build draws more repeats
    np.testing.assert_array_equal(replay.dump_codes()[list(last)], list(last.values()))


@pytest.mark.skipif(not model.HAVE_NUMBA, reason="the call count is the compiled path's")
def test_an_emulated_update_costs_few_python_calls():
    """The lean emulated bus: one steady-state ``update`` of 256 priorities on ``emu`` makes fewer than 180
    Python and C function calls (driver checks, encoding, 5 bus accesses, the emulated DMA and SET); it made about
    240 before the encoding became one compiled pass and the bus serviced only the DMA a write can set moving."""
    import sys

    replay = make_overlay("emu").replay
    rng = np.random.default_rng(0)
    indices, priorities = rng.integers(0, replay.capacity, 256), rng.uniform(0.01, 1.0, 256)
    replay.update(indices, priorities)
    calls = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1

    sys.setprofile(count)
    try:
        replay.update(indices, priorities)
    finally:
        sys.setprofile(None)
    assert calls[0] < 180, calls[0]
