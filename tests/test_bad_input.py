"""Validate, then act: every bad argument to a driver's public entry point raises ``TypeError``/``ValueError``/
``IndexError`` naming the argument, and leaves the core exactly as it was (leaves, banks, configuration, PRNG).

A hypothesis fuzz over the three drivers on ``emu``, ``rtl`` and ``verilator`` (small rtl builds, few examples:
every rtl call is a simulation), plus the cases a hostile-user probe once found to change state before raising.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.common.boards import RTL_PARSA_TEST_BOARD, RTL_REPLAY_TEST_BOARD, make_overlay

BAD_ERRORS = (TypeError, ValueError, IndexError)
BACKENDS = ["emu", "rtl", "verilator"]
LAYOUT = {"tilings": [{"dims": [0, 1], "tilings": 2, "tiles": 4}]}
BOUNDS = ([0.0, 0.0], [1.0, 1.0])

junk = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.just(float("nan")),
    st.just(float("inf")),
    st.just(-1),
    st.just(2**64),
    st.just([1, "a"]),
    st.just(object()),
    st.just(0.5),
    st.just(np.array([[1.0]])),
)


def examples(backend: str) -> int:
    return 6 if backend == "rtl" else 40  # every rtl call is a MyHDL simulation


def fuzz(backend: str):
    return settings(
        max_examples=examples(backend),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# -- replay ---------------------------------------------------------------------------------------------------------
def replay_core(backend):
    replay = make_overlay(backend, RTL_REPLAY_TEST_BOARD if backend == "rtl" else None).replay
    replay.update([1, 2, 5], [1.0, 2.0, 0.5])
    return replay


def replay_state(replay):
    return replay.dump_codes().tolist(), replay.alpha, replay.seed, replay.total_code


@pytest.mark.parametrize("backend", BACKENDS)
def test_replay_refuses_bad_calls_and_keeps_its_state(backend):
    replay = replay_core(backend)
    good = replay.state_dict()

    @fuzz(backend)
    @given(
        call=st.sampled_from(
            [
                "update_indices",
                "update_priorities",
                "sample_n",
                "sample_beta",
                "uniforms",
                "alpha",
                "load_field",
                "load_codes",
            ]
        ),
        value=junk,
        field=st.sampled_from(["alpha", "seed", "codes", "k"]),
    )
    def check(call, value, field):
        before = replay_state(replay)
        calls = {
            "update_indices": lambda: replay.update(value, [1.0]),
            "update_priorities": lambda: replay.update([3], value if value is not None else [math.nan]),
            "sample_n": lambda: replay.sample(value),
            "sample_beta": lambda: replay.sample(4, beta=value),
            "uniforms": lambda: replay.sample(2, uniforms=value),
            "alpha": lambda: setattr(replay, "alpha", value),
            "load_field": lambda: replay.load_state_dict({**good, field: value}),
            "load_codes": lambda: replay.load_state_dict(
                {
                    **good,
                    "codes": np.where(np.arange(replay.capacity) == 3, np.nan if value is None else -1, good["codes"]),
                }
            ),
        }
        try:
            calls[call]()
        except BAD_ERRORS as error:
            assert str(error), "an error without a message"
            assert replay_state(replay) == before
        else:  # a junk value that is valid after all (0.5 as beta or alpha, None as uniforms): restore, go on
            replay.load_state_dict(good)

    check()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "state, message",
    [
        (None, "state must be a dict"),
        ({"alpha": "bad"}, r"state\['alpha'\] must be a finite number >= 0, not 'bad'"),
        ({"codes": "nan"}, r"state\['codes'\] must hold whole numbers"),
        ({"codes": "frac"}, r"state\['codes'\] must hold whole numbers"),
        ({"seed": 2**40}, r"state\['seed'\] must be an integer in \[0, 4294967295\], not 1099511627776"),
    ],
)
def test_replay_load_state_dict_checks_everything_before_clearing(backend, state, message):
    replay = replay_core(backend)
    good = replay.state_dict()
    before = replay_state(replay)
    if state is not None:
        codes = np.asarray(good["codes"], dtype=np.float64)
        state = {**good, **state}
        if isinstance(state["codes"], str):
            state["codes"] = np.where(codes > 0, np.nan, codes) if state["codes"] == "nan" else codes + 0.5
    with pytest.raises(BAD_ERRORS, match=message):
        replay.load_state_dict(state)
    assert replay_state(replay) == before


def test_replay_names_huge_unsigned_indices_as_they_are():
    replay = replay_core("emu")
    with pytest.raises(IndexError, match=r"indices\[0\] = 18446744073709551615 is outside"):
        replay.update(np.array([2**64 - 1], dtype=np.uint64), [1.0])
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0, not -1"):
        replay.alpha = -1
    with pytest.raises(TypeError, match="priorities must be a numeric array, not dtype"):
        replay.update([1], ["abc"])


# -- ParSa ----------------------------------------------------------------------------------------------------------
def parsa_core(backend):
    parsa = make_overlay(backend, RTL_PARSA_TEST_BOARD if backend == "rtl" else None).parsa
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.0, frac_bits=6, seed=7)
    parsa.act([0.1, 0.2])
    parsa.act([0.3, 0.4], 1.0)
    return parsa


def parsa_state(parsa):
    regs = {
        name: parsa._reg(name)
        for name in ("N_DIMS", "N_ACTIONS", "N_TILINGS", "ALPHA", "GAMMA", "EPSILON", "FRAC_BITS", "SEED")
    }
    return parsa.dump_banks().tolist(), regs, parsa.config


@pytest.mark.parametrize("backend", BACKENDS)
def test_parsa_refuses_bad_calls_and_keeps_its_state(backend):
    parsa = parsa_core(backend)
    good = parsa.state_dict()

    @fuzz(backend)
    @given(
        call=st.sampled_from(
            [
                "act_state",
                "act_reward",
                "act_key",
                "batch_states",
                "batch_rewards",
                "batch_keys",
                "configure_alpha",
                "configure_bounds",
                "configure_actions",
                "load_field",
            ]
        ),
        value=junk,
        field=st.sampled_from(["banks", "alpha", "n_actions", "bounds", "seed", "tiling"]),
    )
    def check(call, value, field):
        before = parsa_state(parsa)
        calls = {
            "act_state": lambda: parsa.act(value, 1.0),
            "act_reward": lambda: parsa.act([0.5, 0.5], value if value is not None else math.nan),
            "act_key": lambda: parsa.act([0.5, 0.5], 1.0, key=value),
            "batch_states": lambda: parsa.act_batch(value, [1.0]),
            "batch_rewards": lambda: parsa.act_batch([[0.5, 0.5]], value if value is not None else [math.inf]),
            "batch_keys": lambda: parsa.act_batch([[0.5, 0.5]], [1.0], keys=value),
            "configure_alpha": lambda: parsa.configure(LAYOUT, 3, BOUNDS, alpha=value),
            "configure_bounds": lambda: parsa.configure(LAYOUT, 3, value),
            "configure_actions": lambda: parsa.configure(LAYOUT, value, BOUNDS),
            "load_field": lambda: parsa.load_state_dict({**good, field: value}),
        }
        try:
            calls[call]()
        except BAD_ERRORS as error:
            assert str(error), "an error without a message"
            assert parsa_state(parsa) == before
        else:  # valid after all (alpha=0.5, a reward of -1, one 1x1 state array...): restore and go on
            parsa.load_state_dict(good)

    check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_parsa_strict_refuses_a_clipped_reward_before_learning_from_it(backend):
    parsa = parsa_core(backend)
    parsa.strict = True
    before = parsa_state(parsa)
    with pytest.raises(ValueError, match="a state or reward left the fixed-point range"):
        parsa.act([0.1, 0.2], 1e9)
    assert parsa_state(parsa) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_parsa_load_state_dict_checks_the_banks_before_configuring(backend):
    parsa = parsa_core(backend)
    good = parsa.state_dict()
    before = parsa_state(parsa)
    with pytest.raises(ValueError, match="banks must be integer codes of shape"):
        parsa.load_state_dict({**good, "n_actions": 2, "banks": good["banks"][:, :3]})
    with pytest.raises(TypeError, match="state must be a dict"):
        parsa.load_state_dict(None)
    with pytest.raises(ValueError, match=r"lacks \['seed'\]"):
        parsa.load_state_dict({k: v for k, v in good.items() if k != "seed"})
    assert parsa_state(parsa) == before


def test_parsa_single_step_arguments_are_named():
    parsa = parsa_core("emu")
    with pytest.raises(ValueError, match=r"state must be 1-D \(n_dims,\), not shape \(\)"):
        parsa.act(0.5)
    with pytest.raises(ValueError, match="reward must be a finite number, not nan"):
        parsa.act([0.1, 0.2], math.nan)  # None means "no reward"; NaN is a mistake
    actions, values = parsa.act_batch(np.zeros((0, 2)), return_values=True)  # nothing to do: the core is not started
    assert actions.shape == (0,) and values.shape == (0, 3)


# -- the replay server (its Python API; the gRPC service maps these errors to INVALID_ARGUMENT) ----------------------
def server_state(server):
    """What a refused call must not change: stored rows, their priorities, the log and the write position."""
    server.flush()
    stats = server.stats()
    priorities = server.priorities
    leaves = priorities.dump_codes() if hasattr(priorities, "dump_codes") else priorities.priorities()
    return (
        server.size(),
        server.pos,
        stats["log_sequence"],
        np.asarray(leaves).tolist(),
        server.rewards.tolist(),
        server.observations.tobytes(),
    )


@pytest.mark.parametrize("backend", ["host", "emu"])
def test_replay_server_refuses_bad_calls_and_keeps_its_state(backend):
    from pynq_rl.host.agents.distributed.server import ReplayServer
    from tests.agents.distributed.replay_testing import OBS, make_batch

    server = ReplayServer(256, OBS, backend, seed=3)
    a, b = server.open_session(), server.open_session()
    server.push(make_batch(0, 16), np.ones(16), actor_id=a, sequence=1)
    server.flush()
    try:

        @settings(
            max_examples=40,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(
            call=st.sampled_from(
                [
                    "push_transitions",
                    "push_priorities",
                    "push_field",
                    "push_sequence",
                    "sample_n",
                    "sample_beta",
                    "update_indices",
                    "update_priorities",
                ]
            ),
            value=junk,
            field=st.sampled_from(["observations", "actions", "rewards", "discounts"]),
        )
        def check(call, value, field):
            before = server_state(server)
            calls = {
                "push_transitions": lambda: server.push(value, np.ones(4), actor_id=b),
                "push_priorities": lambda: server.push(make_batch(100, 4), value, actor_id=b),
                "push_field": lambda: server.push({**make_batch(100, 4), field: value}, np.ones(4), actor_id=b),
                "push_sequence": lambda: server.push(make_batch(100, 4), np.ones(4), actor_id=a, sequence=value),
                "sample_n": lambda: server.sample(value),
                "sample_beta": lambda: server.sample(4, beta=value),
                "update_indices": lambda: server.update_priorities(value, np.ones(1)),
                "update_priorities": lambda: server.update_priorities(np.array([1]), value),
            }
            try:
                calls[call]()
            except BAD_ERRORS as error:
                assert str(error), "an error without a message"
                assert call != "push_transitions" or "transitions" in str(error), error
                assert server_state(server) == before
            # a junk value that is valid after all (beta = 0.5) may sample; the next example starts from there

        check()
    finally:
        server.close()


@pytest.mark.parametrize(
    "value, expected",
    [
        (5, 5),
        (np.uint32(7), 7),
        (3.0, 3),
        (2**32 - 1, 2**32 - 1),
        (True, None),
        (0.5, None),
        (math.nan, None),
        ("5", None),
        (-1, None),
        (2**32, None),
        ([1], None),
        (None, None),
    ],
)
def test_integer_argument_takes_whole_numbers_in_range_only(value, expected):
    from pynq_rl.host.drivers.arguments import integer

    if expected is None:
        with pytest.raises(ValueError, match=r"^seed must be an integer in \[0, 4294967295\], not "):
            integer("seed", value, 0, 2**32 - 1)
    else:
        assert integer("seed", value, 0, 2**32 - 1) == expected
