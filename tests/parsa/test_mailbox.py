"""The register mailbox: one ParSa decision through registers, bit-exact with the stream path.

* model / emu: a MAILBOX decision equals a one-record ACT stream in everything observable (action, explored, q[a],
  STATUS, CYCLES, CYCLES_ACT, CYCLES_UPDATE, EPSILON, SEED, and the policy it leaves), hypothesis-randomized;
* MyHDL: the held MBOX_ACTION read (one read returns the decision; at most ``mailbox_wait`` wait states) and the
  cycle cost of a decision (the rung-3 scenarios in ``test_rtl.py`` and the converted Verilog in ``test_verilog.py``
  replay MAILBOX decisions against the model too);
* driver: ``act()`` (the mailbox) and ``act_batch()`` (the DMA) give the same actions and policies on emu and rtl,
  and ``act()`` makes no DMA transfer and ``n_dims + 4`` register accesses.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pynq_rl.host.backends.parsa_ip import ParsaCoreIP
from pynq_rl.host.backends.rtl import RtlCoreIP, RtlSimulation
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as M
from tests.common.boards import RTL_PARSA_TEST_BOARD, make_overlay
from tests.parsa.harness import R, config_stream, offset, random_layout, run_operation, window_writes

SPEC = RTL_PARSA_TEST_BOARD.cores[0].spec
SAME = ("STATUS", "CYCLES", "CYCLES_ACT", "CYCLES_UPDATE", "EPSILON", "SEED")
LAYOUT = {"tilings_per_set": 2, "tiles_per_dim": 3, "tilings": [{"dims": []}, {"dims": [0]}, {"dims": [1, 2]}]}
BOUNDS = ([-1.0, -2.0, 0.0], [1.0, 2.0, 10.0])


def configured(ip, rng: np.random.Generator, spec: S.ParsaSpec, n_dims: int, options: int) -> None:
    """CONFIG a random layout, LOAD a random policy, with random coefficients (the same for every ``rng`` seed)."""
    descriptors = random_layout(rng, n_dims, spec)
    one = 1 << spec.coef.frac
    regs = {
        "SEED": int(rng.integers(0, 1 << 32)),
        "N_DIMS": n_dims,
        "N_ACTIONS": int(rng.integers(1, 4)),
        "N_TILINGS": len(descriptors),
        "ALPHA": int(rng.integers(0, one + 1)),
        "GAMMA": int(rng.integers(0, one + 1)),
        "EPSILON": int(rng.integers(0, one + 1)),
        "EPSILON_DECAY": int(rng.integers(one // 2, one + 1)),
        "OPTIONS": options,
    }
    status = run_operation(ip, regs, S.ParsaMode.CONFIG, config_stream(rng, n_dims, descriptors))["STATUS"]
    assert not S.Status(status).errors
    policy = rng.integers(-1000, 1000, (spec.workers, spec.tiles_per_worker, spec.max_actions))
    run_operation(ip, {}, S.ParsaMode.LOAD_POLICY, M.pack_policy(policy))


records = st.lists(
    st.tuples(
        st.integers(0, SPEC.keys),
        st.sampled_from([0, 1, 1, 1, 2, 3]),
        st.integers(-(1 << 31), (1 << 31) - 1),
        st.integers(0, 2**32 - 1),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_dims=st.integers(1, SPEC.max_dims),
    emit=st.booleans(),
    online=st.booleans(),
    steps=records,
)
def test_a_mailbox_decision_is_a_one_record_act_stream(seed, n_dims, emit, online, steps):
    """Two emulated cores, configured alike: records one at a time as ACT streams on one, as MAILBOX decisions on
    the other. Every result and register agrees, and so does the policy they learnt."""
    streamed, mailed = ParsaCoreIP(SPEC), ParsaCoreIP(SPEC)
    options = int(online) | int(emit) << 1
    for ip in (streamed, mailed):
        configured(ip, np.random.default_rng(seed), SPEC, n_dims, options)
    n_actions = streamed.values["N_ACTIONS"]
    for key, flags, reward, state_seed in steps:
        states = np.random.default_rng(state_seed).integers(-6 << 16, 9 << 16, (1, n_dims))
        record = M.pack_states([key], [flags], [reward], states, n_dims).ravel()
        by_stream = run_operation(streamed, {}, S.ParsaMode.ACT, record)
        by_mailbox = run_operation(mailed, window_writes(record, n_dims), S.ParsaMode.MAILBOX, np.zeros(0, np.uint64))
        assert {name: by_stream[name] for name in SAME} == {name: by_mailbox[name] for name in SAME}
        assert by_mailbox["out"] == []  # nothing on the output stream
        action, explored, q, _ = M.unpack_actions(np.array([by_stream["out"]], np.uint64), n_actions)
        fields = R["MBOX_ACTION"]["fields"]
        assert by_mailbox["MBOX_ACTION"] & 0xFFFF == action[0]
        assert by_mailbox["MBOX_ACTION"] >> fields["EXPLORED"]["bit_offset"] & 1 == explored[0]
        assert all(
            bool(by_mailbox["MBOX_ACTION"] >> fields[name]["bit_offset"] & 1)
            == bool(by_mailbox["STATUS"] & S.Status[name])
            for name in S.PARSA_MBOX_FLAGS
        )
        assert np.int32(np.uint32(by_mailbox["MBOX_Q"])) == q[0]
    np.testing.assert_array_equal(streamed.core.dump_policy(), mailed.core.dump_policy())


def test_the_window_is_the_state_record_word_for_word():
    """MBOX_KEY, MBOX_REWARD, MBOX_STATE_0.. are consecutive words: the record's uint32 view, one burst."""
    offsets = [R[name]["address_offset"] for name in S.PARSA_MBOX_WINDOW]
    assert offsets == list(range(offsets[0], offsets[0] + 4 * len(offsets), 4)) and offsets[0] % 8 == 0
    assert len(S.PARSA_MBOX_WINDOW) == 2 + S.PARSA_MBOX_STATE_WORDS
    record = M.pack_states([3], [1], [-5], np.array([[7, -8, 9]]), 3).ravel()
    assert M.mailbox_window(3, 1, -5, np.array([7, -8, 9])).tolist() == record.view(np.uint32)[:5].tolist()
    with pytest.raises(ValueError, match=r"max_dims must be in \[1, 32\], not 33"):
        S.ParsaSpec(max_dims=33)


def test_a_mailbox_start_with_a_bad_register_is_refused_like_act():
    ip = ParsaCoreIP(SPEC)
    result = run_operation(ip, {}, S.ParsaMode.MAILBOX, np.zeros(0, np.uint64))  # nothing configured
    assert result["STATUS"] == S.Status.DONE | S.Status.ERR_CONFIG
    fields = R["MBOX_ACTION"]["fields"]
    assert result["MBOX_ACTION"] == 1 << fields["DONE"]["bit_offset"] | 1 << fields["ERR_CONFIG"]["bit_offset"]


# -- the MyHDL core --------------------------------------------------------------------------------------------------
def rtl_core(spec: S.ParsaSpec):
    board = dataclasses.replace(
        RTL_PARSA_TEST_BOARD, cores=(dataclasses.replace(RTL_PARSA_TEST_BOARD.cores[0], spec=spec),)
    )
    sim = RtlSimulation(board)
    return sim, RtlCoreIP(sim, "parsa", spec, R)


@pytest.mark.parametrize("wait", [SPEC.mailbox_wait, 3])
def test_a_read_of_mbox_action_waits_for_the_decision(wait):
    """Straight after START, one MBOX_ACTION read returns the decision when the core decides within
    ``mailbox_wait`` wait states; with fewer, the read answers with DONE = 0 after them and a later one has it."""
    spec = dataclasses.replace(SPEC, mailbox_wait=wait)
    sim, ip = rtl_core(spec)
    model = ParsaCoreIP(spec)
    rng = np.random.default_rng(4)
    try:
        for core in (ip, model):
            configured(core, np.random.default_rng(11), spec, 3, 1)
        done = 1 << R["MBOX_ACTION"]["fields"]["DONE"]["bit_offset"]
        for _ in range(4):
            record = M.pack_states(
                [1], [1], [int(rng.integers(-500, 500))], rng.integers(-1 << 16, 1 << 16, (1, 3)), 3
            ).ravel()
            writes = {**window_writes(record, 3), "CTRL": int(S.ParsaMode.MAILBOX) << 2 | S.Ctrl.START}
            for name, value in writes.items():
                model.write(offset(name), value)
                ip.write(offset(name), value)
            expected = model.read(offset("MBOX_ACTION"))
            start = sim.cycle
            first = ip.read(offset("MBOX_ACTION"))
            waited = sim.cycle - start
            if wait == SPEC.mailbox_wait:
                assert first == expected and first & done
            else:
                assert not first & done and waited <= wait + 4
                while not first & done:
                    first = ip.read(offset("MBOX_ACTION"))
                assert first == expected
            assert ip.read(offset("MBOX_Q")) == model.read(offset("MBOX_Q"))
    finally:
        sim.end("test finished")


def test_a_mailbox_decision_costs_its_bus_accesses_plus_the_core_cycles():
    """The mailbox's RTL goal: a decision costs (n_dims + 4) bus accesses, each at most one plain access's cycles,
    plus the core's own cycles (CYCLES: the record's words, the act and the update)."""
    overlay = make_overlay("rtl", RTL_PARSA_TEST_BOARD)
    parsa, sim = overlay.parsa, overlay.device.simulation
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.0, frac_bits=6, seed=5)
    parsa.act([0.1, 0.2, 3.0])
    start = sim.cycle
    parsa._reg("ID")
    parsa._write("REWARD_KEY", 0)
    access = sim.cycle - start  # a read and a write: what two plain accesses take
    for state in ([0.3, 0.4, 5.0], [-0.5, 1.0, 9.0]):
        with overlay.bus_stats() as bus:
            start = sim.cycle
            parsa.act(state, 1.0)
            cycles = sim.cycle - start
        n_dims = 3
        assert bus.register_accesses == n_dims + 4 and bus.dma_transfers == 0
        assert bus.register_calls == 3  # the record's burst, START, the held MBOX_ACTION read
        assert parsa.cycles_update > 0  # the decision learnt: its update pass is in CYCLES
        assert cycles <= (n_dims + 4) * -(-access // 2) + parsa.cycles + 1, (cycles, access, parsa.cycles)


# -- the driver ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["emu", "rtl", "verilator"])
def test_act_is_act_batch_bit_for_bit(backend):
    """The same steps (rewards, no rewards, terminals, two keys) through act() and through act_batch() one record
    at a time on two cores configured alike: the same actions, epsilon, and learnt policy."""
    board = RTL_PARSA_TEST_BOARD if backend == "rtl" else None
    rng = np.random.default_rng(8)
    steps = [
        (
            rng.uniform(BOUNDS[0], BOUNDS[1]),
            None if rng.random() < 0.2 else float(rng.normal()),
            int(rng.integers(0, 2)),
            bool(rng.random() < 0.1),
        )
        for _ in range(25 if backend == "rtl" else 200)
    ]

    def run(by_mailbox: bool):
        parsa = make_overlay(backend, board).parsa  # one after the other: rtl runs one simulation per process
        parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.3, epsilon_decay=0.99, frac_bits=6, seed=5)
        actions = []
        for state, reward, key, terminal in steps:
            if by_mailbox:
                actions.append(parsa.act(state, reward, key=key, terminal=terminal))
            else:
                got, _ = parsa.act_batch(state[None, :], [np.nan if reward is None else reward], [key], [terminal])
                actions.append(int(got[0]))
        return actions, parsa.epsilon, parsa.dump_banks()

    mailbox, stream = run(True), run(False)
    assert mailbox[0] == stream[0] and -1 in mailbox[0] and len(set(mailbox[0])) > 2
    assert mailbox[1] == stream[1]
    np.testing.assert_array_equal(mailbox[2], stream[2])
