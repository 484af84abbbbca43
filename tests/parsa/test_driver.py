"""Rung 6: the ParsaCore driver through the real PYNQ path, per backend (a small build on rtl)."""

import numpy as np
import pytest
from pynq.lib.dma import DMA

from pynq_rl.host.drivers import ParsaCore, ParsaSaturationWarning
from pynq_rl.host.drivers.tiling_config import (
    OPAL_DDOS_TILING,
    load_tiling,
    tiling_to_dict,
)
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as P
from tests.common.boards import RTL_PARSA_TEST_BOARD, make_overlay

PARSA_BACKENDS = ["emu", "rtl", "verilator", "board"]
LAYOUT = {"tilings_per_set": 2, "tiles_per_dim": 3, "tilings": [{"dims": []}, {"dims": [0]}, {"dims": [1, 2]}]}
BOUNDS = ([-1.0, -2.0, 0.0], [1.0, 2.0, 10.0])
#: 3 dims (within every build's MAX_DIMS) but 8 * 41**3 rows: more than any build's policy banks hold
TOO_MANY_ROWS = {"tilings_per_set": 8, "tiles_per_dim": 40, "tilings": [{"dims": [0, 1, 2]}]}


@pytest.fixture(params=PARSA_BACKENDS)
def overlay(request):
    """An overlay with a ParSa core on each backend (the small build on rtl)."""
    return make_overlay(request.param, RTL_PARSA_TEST_BOARD if request.param == "rtl" else None)


@pytest.fixture
def parsa(overlay) -> ParsaCore:
    core = overlay.parsa
    core.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.2, epsilon_decay=0.999, frac_bits=6, seed=5)
    return core


def model_of(core: ParsaCore) -> P.ParsaModel:
    """The model configured exactly as the driver configured the core."""
    cfg, spec = core.config, core.spec
    m = P.ParsaModel(spec)
    m.n_dims, m.n_actions = cfg.layout.n_dims, cfg.n_actions
    one = 1 << spec.coef.frac
    m.alpha, m.gamma = round(cfg.alpha * one), round(cfg.gamma * one)
    m.epsilon, m.epsilon_decay = round(cfg.epsilon * one), round(cfg.epsilon_decay * one)
    assert m.configure(*P.dimension_codes(*BOUNDS), list(cfg.descriptors))
    m.reseed(5)
    return m


def test_overlay_binds_the_parsa_core_by_vlnv(overlay):
    core = overlay.parsa
    assert isinstance(core, ParsaCore) and isinstance(core.dma, DMA)
    assert overlay.ip_dict["parsa/core"]["type"] == S.PARSA_VLNV
    assert core.spec == overlay.board_spec.slot("parsa").spec
    assert int(core.register_map.KEYS) == core.spec.keys


def test_act_batch_is_the_model_bit_for_bit(parsa):
    rng = np.random.default_rng(0)
    m = model_of(parsa)
    n = 40
    states = rng.uniform(-3, 12, (n, 3))
    rewards = np.where(rng.random(n) < 0.8, rng.normal(size=n), np.nan)
    keys = rng.integers(0, parsa.spec.keys, n)
    terminals = rng.random(n) < 0.1
    actions, values = parsa.act_batch(states, rewards, keys, terminals, return_values=True)
    codes = np.clip(np.floor(states * 65536 + 0.5), -(2**31), 2**31 - 1).astype(np.int64)
    flags = (~np.isnan(rewards)) * 1 + terminals * 2
    result = m.act(keys, flags, np.floor(np.nan_to_num(rewards) * 64 + 0.5).astype(np.int64), codes)
    np.testing.assert_array_equal(actions, np.where(result.actions == S.PARSA_NO_ACTION, -1, result.actions))
    np.testing.assert_array_equal(values, result.q_values / 64)
    assert parsa.cycles_act == result.cycles_act and parsa.cycles == result.cycles
    assert parsa.cycles_update == result.cycles_update
    np.testing.assert_array_equal(parsa.dump_banks(), m.banks)
    assert parsa.seed == m.prng_state and parsa.epsilon == m.epsilon / 65536


def test_single_steps_learn_a_bandit(parsa):
    """One state, three actions, reward 1 only for action 2: the greedy action becomes 2."""
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.05, gamma=0.0, epsilon=0.5, epsilon_decay=0.99, frac_bits=6, seed=1)
    state = np.array([0.1, 0.2, 3.0])
    action = parsa.act(state)
    for _ in range(150):
        action = parsa.act(state, reward=1.0 if action == 2 else 0.0)
    parsa.epsilon = 0.0
    assert parsa.act(state, reward=1.0 if action == 2 else 0.0) == 2
    assert parsa.cycles_act > 0


def test_pending_reward_message(parsa):
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=1.0, gamma=0.0, epsilon=0.0, frac_bits=6)
    state = np.zeros(3)
    parsa.act(state, key=1)
    parsa.set_reward(1, 2.0)
    parsa.act(state, key=1)
    n_tilings = parsa.config.layout.n_tilings  # every hit tile of the previous state moves by alpha * delta
    assert parsa.dump_policy().sum() == pytest.approx(2.0 * n_tilings, abs=0.1)


def test_policy_round_trips_in_layout_order(parsa):
    cfg = parsa.config
    weights = np.random.default_rng(1).normal(size=(cfg.layout.n_tiles, 3)).round(2)
    parsa.load_policy(weights)
    np.testing.assert_allclose(parsa.dump_policy(), weights, atol=1 / 64)
    state = parsa.state_dict()
    parsa.configure(LAYOUT, 3, BOUNDS)  # clears
    assert not parsa.dump_policy().any()
    parsa.load_state_dict(state)
    np.testing.assert_allclose(parsa.dump_policy(), weights, atol=1 / 64)
    assert parsa.seed == state["seed"]


def test_saturation_warns_or_raises(parsa):
    with pytest.warns(ParsaSaturationWarning):
        parsa.act(np.zeros(3), reward=1e6)
    parsa.strict = True
    with pytest.raises(ValueError, match="clipped"):
        parsa.act(np.zeros(3), reward=1e6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_actions=0), "n_actions"),
        (dict(n_actions=99), "n_actions"),
        (dict(alpha=1.5), "alpha"),
        (dict(gamma=-0.1), "gamma"),
        (dict(frac_bits=40), "frac_bits"),
        (dict(bounds=([0, 0], [1, 1])), "bounds"),
        (dict(bounds=([0, 0, 0], [1, 1, 1e9])), "range"),
        (dict(tiling={"tilings": [{"dims": [0], "tiles": 0}]}), "set 0"),
        (dict(tiling={"tilings": [{"dim": [0]}]}), "dims"),
        (dict(tiling=TOO_MANY_ROWS), "policy rows"),
        (dict(tiling={"tilings": [{"dims": ["a"]}]}), r"^tiling set 0: dims\[0\] = 'a' is not an integer"),
    ],
)
def test_bad_configuration_raises_before_touching_the_core(parsa, kwargs, match):
    before = parsa.dump_banks()
    args = {"tiling": LAYOUT, "n_actions": 3, "bounds": BOUNDS, **kwargs}
    with pytest.raises(ValueError, match=match):
        parsa.configure(**args)
    np.testing.assert_array_equal(parsa.dump_banks(), before)


def test_bad_steps_raise(parsa):
    with pytest.raises(ValueError, match="shape"):
        parsa.act_batch(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="finite"):
        parsa.act(np.array([np.nan, 0, 0]))
    with pytest.raises(ValueError, match="keys"):
        parsa.act(np.zeros(3), key=parsa.spec.keys)
    with pytest.raises(ValueError, match="reward must be a finite number, not inf"):
        parsa.act(np.zeros(3), reward=np.inf)
    with pytest.raises(ValueError, match=r"rewards must be 1 finite floats \(NaN for none\)"):
        parsa.act_batch(np.zeros((1, 3)), rewards=[np.inf])


def test_unconfigured_core_refuses(overlay):
    core = overlay.parsa
    core.config = None
    with pytest.raises(RuntimeError, match="configure"):
        core.act(np.zeros(3))


def test_tiling_json_round_trip(tmp_path):
    layout = load_tiling(OPAL_DDOS_TILING)
    assert (layout.n_dims, layout.n_tilings, layout.n_tiles) == (20, 136, 22744)
    path = tmp_path / "tiling.json"
    import json

    path.write_text(json.dumps(tiling_to_dict(layout)))
    assert load_tiling(str(path)) == layout
    with pytest.raises(ValueError, match="unknown"):
        load_tiling({"tilings": [], "colour": 1})
    for not_a_file in ("0", "", str(tmp_path), str(tmp_path / "missing.json")):  # found by test_bad_input's fuzzer
        with pytest.raises(ValueError, match="neither a JSON object nor a readable JSON file"):
            load_tiling(not_a_file)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"tilings": [{"dims": ["a"]}]}, r"tiling set 0: dims\[0\] = 'a' is not an integer"),
        ({"tilings": [{"dims": []}, {"dims": [0, 1.5]}]}, r"tiling set 1: dims\[1\] = 1\.5 is not an integer"),
        ({"tilings": [{"dims": [True]}]}, r"tiling set 0: dims\[0\] = True is not an integer"),
        ({"tilings": [{"dims": [-1]}]}, r"tiling set 0: dims\[0\] = -1 is not an integer in \[0, "),
        ({"tilings": [{"dims": [0], "tiles": "x"}]}, r"tiling set 0: tiles = 'x' is not an integer in \[1, 255\]"),
        ({"tilings": [{"dims": [0], "tilings": 2.5}]}, r"tiling set 0: tilings = 2\.5 is not an integer in \[1, 256\]"),
        ({"tilings": [{"dims": [0], "tilings": None}]}, r"tiling set 0: tilings = None is not an integer"),
        ({"tilings": [{"dims": [0]}], "n_dims": "q"}, r"n_dims = 'q' is not an integer in \[1, "),
        ({"tilings": [{"dims": [0]}], "n_dims": 2.7}, r"n_dims = 2\.7 is not an integer"),
        (
            {"tilings": [{"dims": [0]}], "tilings_per_set": None},
            r"tilings_per_set = None is not an integer in \[1, 256\]",
        ),
        ({"tilings": [{"dims": [0]}], "tiles_per_dim": "z"}, r"tiles_per_dim = 'z' is not an integer in \[1, 255\]"),
    ],
)
def test_tiling_fields_are_checked_by_name(config, message):
    """Every field is an integer (a whole float is fine; a bool, a string or 1.5 is not), named with its set."""
    with pytest.raises(ValueError, match=f"^{message}"):
        load_tiling(config)
    assert load_tiling({"tilings": [{"dims": [0.0, 1], "tilings": 2.0}], "n_dims": 3.0}).sets[0].dims == (0, 1)


def test_opal_shape_fits_the_zcu106_build():
    ol = make_overlay("emu", "ZCU106")
    config = ol.parsa.configure(OPAL_DDOS_TILING, 10, (np.zeros(20), np.ones(20)), frac_bits=8)
    assert len(config.descriptors) == 136
    actions, _ = ol.parsa.act_batch(np.random.default_rng(0).random((32, 20)), keys=np.arange(32) % 16)
    assert np.all((actions >= 0) & (actions < 10))


def test_after_programming_the_pl_again_the_driver_asks_for_a_configuration(overlay, parsa):
    """A download resets the core: the layout it held is gone, so the driver refuses to act until configure(), and
    works again after it (its DMA bound afresh)."""
    parsa.act(np.zeros(3))
    overlay.download()
    with pytest.raises(RuntimeError, match="not configured"):
        parsa.act(np.zeros(3))
    parsa.configure(LAYOUT, 3, BOUNDS, frac_bits=6, seed=5)
    actions, _ = parsa.act_batch(np.zeros((4, 3)))
    assert actions.shape == (4,) and parsa.dump_policy().shape == (parsa.config.layout.n_tiles, 3)
