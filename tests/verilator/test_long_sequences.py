"""Rung 11 at the boards' shipped builds: long random sequences of driver calls, verilated Verilog == emulation.

The builds the boards get (GAE 8 x 1024 on the Pynq-Z2 and 64 x 1024 on the ZCU106, the 2**16-leaf replay tree, the
ParSa core in OPaL's policy shape on the ZCU106) are too big for the MyHDL simulation; under Verilator they answer
whole driver sessions. Hypothesis draws sequences of operations (thousands in all: T up to and past T_MAX, chained
chunks, many lane-batches, a full tree, policy dumps and loads, state round trips), which run on a ``verilator`` and
an ``emu`` overlay side by side; every output, every CYCLES reading, and the state read back at the end must be equal
bit for bit. ``doctor --backend verilator`` passes on both boards.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.host import doctor
from pynq_rl.host.drivers.tiling_config import OPAL_DDOS_TILING
from tests.common.boards import make_overlay, require_verilator


def long_sessions(examples: int) -> settings:
    """Hypothesis settings of a test whose every example is a whole driver session on two overlays."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(autouse=True)
def _verilator():
    require_verilator()


def pair(core: str, board: str):
    """The driver of ``core`` on a verilator and an emu overlay of ``board``'s shipped build (that core alone)."""
    return (
        getattr(make_overlay("verilator", board, cores=(core,)), core),
        getattr(make_overlay("emu", board, cores=(core,)), core),
    )


def same(a, b, what: str) -> None:
    """Equal bit for bit: arrays by dtype, shape and bytes; anything else by ==."""
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), f"{what}: {a} != {b}"
    else:
        assert a == b, f"{what}: {a!r} != {b!r}"


def same_calls(calls, run_call, verilated, emulated) -> None:
    """Each call of a session made on both cores in turn (``run_call(core, call) -> results``): equal bit for bit."""
    for step, call in enumerate(calls):
        for a, b in zip(run_call(verilated, call), run_call(emulated, call)):
            same(a, b, f"call {step} {call}")


# -- GAE ------------------------------------------------------------------------------------------------------------
gae_calls = st.tuples(
    st.integers(1, 2600),
    st.integers(1, 25),
    st.booleans(),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 0.01, 0.2]),
    st.integers(0, 2**32 - 1),
)


@pytest.mark.parametrize("board", ["Pynq-Z2"])
def test_gae_sessions_are_the_model_bit_for_bit(board):
    """T from 1 past 2.5 x T_MAX (chained chunks), up to three lane-batches plus one, raw and q8, any gamma and
    lambda, episode ends."""
    verilated, emulated = pair("gae", board)

    @long_sessions(60)
    @given(calls=st.lists(gae_calls, min_size=1, max_size=6))
    def session(calls):
        for step, (n_steps, n_envs, quantize, gamma, lam, done_rate, seed) in enumerate(calls):
            rng = np.random.default_rng(seed)
            rewards = rng.normal(0, 3, (n_steps, n_envs)).astype(np.float32)
            values = np.cumsum(rng.normal(size=(n_steps + 1, n_envs)), axis=0).astype(np.float32)
            dones = rng.random((n_steps, n_envs)) < done_rate
            got = verilated.compute(rewards, values, dones, gamma=gamma, lam=lam, quantize=quantize)
            want = emulated.compute(rewards, values, dones, gamma=gamma, lam=lam, quantize=quantize)
            for name, a, b in zip(("advantages", "returns"), got, want):
                same(a, b, f"call {step} (T={n_steps}, N={n_envs}, q8={quantize}) {name}")
            same(verilated.cycles, emulated.cycles, f"call {step} CYCLES")

    session()


def test_zcu106_gae_computes_64_lanes_at_full_length():
    """The ZCU106 build: 64 lanes x T_MAX 1,024 and past it, 128-bit stream words, two lane-batches."""
    verilated, emulated = pair("gae", "ZCU106")
    assert verilated.spec.lanes == 64 and verilated.spec.stream_bytes == 16
    rng = np.random.default_rng(5)
    for n_steps, n_envs, quantize in ((1024, 64, True), (1500, 100, False), (7, 3, True)):
        rewards, values = rng.normal(size=(n_steps, n_envs)), rng.normal(size=(n_steps + 1, n_envs))
        dones = rng.random((n_steps, n_envs)) < 0.01
        got = verilated.compute(rewards, values, dones, quantize=quantize)
        want = emulated.compute(rewards, values, dones, quantize=quantize)
        for name, a, b in zip(("advantages", "returns"), got, want):
            same(a, b, f"T={n_steps} N={n_envs} {name}")
        same(verilated.cycles, emulated.cycles, "CYCLES")


# -- replay ---------------------------------------------------------------------------------------------------------
replay_calls = st.one_of(
    st.tuples(st.just("update"), st.integers(1, 3000), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("sample"), st.integers(1, 600), st.floats(0.0, 1.0)),
    st.tuples(st.just("uniforms"), st.integers(1, 300), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("alpha"), st.sampled_from([0.0, 0.4, 0.6, 1.0])),
    st.tuples(st.just("seed"), st.integers(1, 2**32 - 1)),
    st.tuples(st.just("state")),
    st.tuples(st.just("clear")),
)


def test_replay_sessions_on_the_full_tree_are_the_model_bit_for_bit():
    """Every one of the Pynq-Z2 build's 2**16 leaves set, then random updates (repeats, zeros), PRNG and
    host-uniform samples, alpha and seed changes, state round trips and clears."""
    verilated, emulated = pair("replay", "Pynq-Z2")
    assert verilated.capacity == 2**16
    fill = np.random.default_rng(0).gamma(1.0, 2.0, verilated.capacity)
    for core in (verilated, emulated):
        core.seed = 12345
        core.update(np.arange(core.capacity), fill)
    same(verilated.dump_codes(), emulated.dump_codes(), "the full tree")
    same(verilated.total_code, emulated.total_code, "TOTAL")

    @long_sessions(50)
    @given(calls=st.lists(replay_calls, min_size=1, max_size=60))
    def session(calls):
        same_calls(calls, run_replay_call, verilated, emulated)
        same(verilated.dump_codes(), emulated.dump_codes(), "the leaves after the session")

    session()


def run_replay_call(core, call) -> list:
    kind = call[0]
    if kind == "update":
        rng = np.random.default_rng(call[2])
        core.update(rng.integers(0, core.capacity, call[1]), rng.gamma(1.0, 2.0, call[1]) * (rng.random(call[1]) < 0.9))
    elif kind == "sample" and core.nonzero:
        indices, probabilities, weights = core.sample(call[1], beta=call[2])
        return [indices, probabilities, weights, core.cycles, core.seed]
    elif kind == "uniforms" and core.nonzero:
        uniforms = np.random.default_rng(call[2]).integers(0, 2**32, call[1], dtype=np.uint64)
        return [core.sample(call[1], uniforms=uniforms)[0], core.cycles]
    elif kind == "alpha":
        core.alpha = call[1]
    elif kind == "seed":
        core.seed = call[1]
    elif kind == "state":
        state = core.state_dict()
        core.clear()
        core.load_state_dict(state)
    elif kind == "clear":
        core.clear()
    return [core.total_code, core.nonzero, core.seed]


# -- ParSa ----------------------------------------------------------------------------------------------------------
OPAL_BOUNDS = (np.zeros(20), np.ones(20))
parsa_calls = st.one_of(
    st.tuples(st.just("batch"), st.integers(1, 64), st.integers(0, 2**32 - 1), st.booleans()),
    st.tuples(st.just("act"), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("reward"), st.integers(0, 255), st.floats(-4.0, 4.0)),
    st.tuples(st.just("epsilon"), st.sampled_from([0.0, 0.05, 0.5])),
    st.tuples(st.just("dump")),
    st.tuples(st.just("load"), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("state")),
)


@pytest.mark.filterwarnings("ignore:ParSa core. a state, reward")  # large rewards clip alike on both backends
def test_parsa_in_opals_shape_on_the_zcu106_build_is_the_model_bit_for_bit():
    """OPaL's DDoS policy (20 dims, 136 tilings, 10 actions) on the ZCU106 build: batches over 256 keys with rewards
    and terminals, mailbox steps, pending rewards, epsilon changes, policy dumps and loads, state round trips."""
    verilated, emulated = pair("parsa", "ZCU106")
    for core in (verilated, emulated):
        config = core.configure(
            OPAL_DDOS_TILING,
            10,
            OPAL_BOUNDS,
            alpha=0.1,
            gamma=0.9,
            epsilon=0.1,
            epsilon_decay=0.999,
            frac_bits=8,
            seed=9,
        )
        assert len(config.descriptors) == 136
    same(verilated.cycles, emulated.cycles, "CONFIG cycles")

    @long_sessions(20)
    @given(calls=st.lists(parsa_calls, min_size=1, max_size=15))
    def session(calls):
        same_calls(calls, run_parsa_call, verilated, emulated)
        same(verilated.dump_banks(), emulated.dump_banks(), "the policy banks after the session")

    session()


def run_parsa_call(core, call) -> list:
    kind = call[0]
    keys = core.spec.keys
    if kind == "batch":
        rng = np.random.default_rng(call[2])
        n = call[1]
        rewards = np.where(rng.random(n) < 0.8, rng.normal(size=n), np.nan)
        actions, values = core.act_batch(
            rng.random((n, 20)), rewards, rng.integers(0, keys, n), rng.random(n) < 0.05, return_values=True
        )
        return [actions, values if call[3] else None, core.cycles, core.cycles_act, core.cycles_update]
    if kind == "act":
        rng = np.random.default_rng(call[1])
        return [core.act(rng.random(20), float(rng.normal()), key=int(rng.integers(0, keys))), core.cycles]
    if kind == "reward":
        core.set_reward(call[1], call[2])
    elif kind == "epsilon":
        core.epsilon = call[1]
    elif kind == "dump":
        return [core.dump_policy()]
    elif kind == "load":
        weights = np.random.default_rng(call[1]).normal(0, 0.5, (core.config.layout.n_tiles, 10)).round(2)
        core.load_policy(weights)
    elif kind == "state":
        state = core.state_dict()
        core.load_state_dict(state)
    return [core.epsilon, core.seed]


# -- the doctor -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("board", ["Pynq-Z2", "ZCU106"])
def test_doctor_passes_on_the_verilated_shipped_builds(board):
    lines = []
    results = doctor.run_doctor(["verilator"], board, echo=lines.append)
    assert [(r.core, r.status) for r in results] == [("gae", "PASS"), ("replay", "PASS"), ("parsa", "PASS")], lines
