"""Rung 3: the MyHDL ParSa core against the bit-exact model, transaction for transaction.

The same register writes and stream words go to the emulated IP (the model) and to the simulated HDL; the output
words, STATUS, CYCLES, CYCLES_ACT, CYCLES_UPDATE, EPSILON and SEED must be identical after every operation.
Randomized (hypothesis) over layouts, N_DIMS, N_ACTIONS, coefficients, options, seeds, keys (some >= KEYS), flags,
rewards (some saturating), pending rewards and loaded policies, for value widths 8, 16 and 32.
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
from tests.common.boards import RTL_PARSA_TEST_BOARD
from tests.parsa.harness import R, act_stream, config_stream, random_layout, run_operation, scenario


def small_board(value_w: int = 16, **changes) -> S.BoardSpec:
    slot = RTL_PARSA_TEST_BOARD.cores[0]
    spec = dataclasses.replace(slot.spec, value_w=value_w, **changes)
    return dataclasses.replace(RTL_PARSA_TEST_BOARD, cores=(dataclasses.replace(slot, spec=spec),))


def on_both(board: S.BoardSpec, body):
    """``body(ip)`` on the simulated HDL and on the emulated model; returns both results."""
    spec = board.cores[0].spec
    sim = RtlSimulation(board)
    try:
        got = body(RtlCoreIP(sim, "parsa", spec, R))
    finally:
        sim.end("test finished")
    return got, body(ParsaCoreIP(spec))


def assert_same(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for step, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"operation {step}: rtl {g} != model {e}"


@pytest.mark.parametrize("value_w", [8, 16, 32])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_rtl_equals_model_bit_for_bit(value_w, seed):
    board = small_board(value_w)
    spec = board.cores[0].spec
    got, expected = on_both(board, lambda ip: scenario(ip, seed, spec))
    assert_same(got, expected)
    assert any(r["out"] for r in expected[2:5]), "no action records: the scenario tested nothing"


def test_cycle_formulas_hold_in_hardware():
    """CYCLES_ACT = n_dims + busiest + act_depth and CYCLES_UPDATE = busiest + update_depth, measured by the HDL."""
    board = small_board(16)
    spec = board.cores[0].spec
    rng = np.random.default_rng(5)
    layout = M.TilingLayout((M.TilingSet((0, 1), 3, 2), M.TilingSet((2,), 2, 3), M.TilingSet((), 1, 1)), 3)
    descriptors = M.schedule(layout, spec)
    busiest = max(sum(d.worker == w for d in descriptors) for w in range(spec.workers))
    records = M.pack_states([1, 1], [0, 1], [0, 300], rng.integers(-1 << 16, 1 << 16, (2, 3)), 3).ravel()

    def body(ip):
        regs = {
            "N_DIMS": 3,
            "N_ACTIONS": 3,
            "N_TILINGS": len(descriptors),
            "ALPHA": 1 << 15,
            "GAMMA": 1 << 15,
            "OPTIONS": 1,
        }
        run_operation(ip, regs, S.ParsaMode.CONFIG, config_stream(rng, 3, descriptors))
        return run_operation(ip, {}, S.ParsaMode.ACT, records)

    got, expected = on_both(board, body)
    assert got == expected
    assert got["CYCLES_ACT"] == 3 + busiest + spec.act_depth
    assert got["CYCLES_UPDATE"] == busiest + spec.update_depth
    assert (
        got["CYCLES"]
        == 2 * spec.state_record_words(3) + 2 * (3 + busiest + spec.act_depth) + busiest + spec.update_depth
    )


def test_rtl_refuses_starts_like_the_model():
    """ACT before CONFIG, an unknown MODE, N_DIMS 0, N_ACTIONS 0, ALPHA > 1, N_DIMS changed since CONFIG."""
    board = small_board(16)
    spec = board.cores[0].spec
    rng = np.random.default_rng(2)
    descriptors = random_layout(rng, 2, spec)
    config = config_stream(rng, 2, descriptors)
    records = act_stream(rng, spec, 2, 2, big=False)
    good = {"N_DIMS": 2, "N_ACTIONS": 2, "N_TILINGS": len(descriptors), "ALPHA": 100, "GAMMA": 200, "OPTIONS": 1}

    def body(ip):
        seen = [
            run_operation(ip, good, S.ParsaMode.ACT, records),
            run_operation(ip, {}, 7, []),
            run_operation(ip, {"N_DIMS": 0}, S.ParsaMode.CONFIG, config),
            run_operation(ip, good, S.ParsaMode.CONFIG, config),
            run_operation(ip, {"N_ACTIONS": 0}, S.ParsaMode.ACT, records),
            run_operation(ip, {"N_ACTIONS": 2, "ALPHA": (1 << 16) + 1}, S.ParsaMode.ACT, records),
            run_operation(ip, {"ALPHA": 5, "N_DIMS": 3}, S.ParsaMode.ACT, records),
            run_operation(ip, {"N_DIMS": 2}, S.ParsaMode.ACT, records),
        ]
        return seen

    got, expected = on_both(board, body)
    assert_same(got, expected)
    for result in expected[:3] + expected[4:7]:
        assert result["STATUS"] == S.Status.DONE | S.Status.ERR_CONFIG


FAULTS = ("worker", "n_t", "rows", "dim", "per_worker", "no_tilings", "short", "long")


def bad_config(fault: str, spec: S.ParsaSpec, descriptors: list, config: np.ndarray) -> tuple[int, np.ndarray]:
    """(N_TILINGS, CONFIG stream) of a 3-dim layout broken by ``fault``."""
    d0, bad = descriptors[0], list(descriptors)
    if fault == "worker":
        bad[0] = dataclasses.replace(d0, worker=spec.workers)
    elif fault == "n_t":
        bad[0] = dataclasses.replace(d0, n_t=d0.tiles + 2)
    elif fault == "rows":
        bad[0] = dataclasses.replace(d0, base=spec.tiles_per_worker - d0.rows + 1)
    elif fault == "dim":
        bad[0] = dataclasses.replace(d0, dims=(3,), tiles=2, n_t=3)
    elif fault == "per_worker":
        bad = [dataclasses.replace(d0, worker=0, dims=(), n_t=1, tiles=1)] * (spec.max_tilings + 1)
    if fault == "no_tilings":
        return 0, config[:3]
    if fault == "short":
        return len(descriptors), config[:-1]
    if fault == "long":
        return len(descriptors), np.concatenate([config, config[-1:]])
    return len(bad), np.concatenate([config[:3], M.pack_descriptors(bad)])


def test_bad_config_changes_nothing():
    """Each refused layout (ERR_CONFIG: a worker, n_t, rows past the bank, a dim >= N_DIMS, too many tilings for one
    worker, no tilings) and each stream of the wrong length (ERR_STREAM) keeps the old configuration and the keys'
    memory: the ACT batch after each still equals the model's."""
    board = small_board(16)
    spec = board.cores[0].spec
    rng = np.random.default_rng(3)
    descriptors = random_layout(rng, 3, spec)
    good = {"N_DIMS": 3, "N_ACTIONS": 3, "N_TILINGS": len(descriptors), "ALPHA": 9000, "GAMMA": 40000, "OPTIONS": 3}
    config = config_stream(rng, 3, descriptors)
    faults = [bad_config(fault, spec, descriptors, config) for fault in FAULTS]
    batches = [act_stream(rng, spec, 3, 2, big=False) for _ in range(len(FAULTS) + 1)]

    def body(ip):
        seen = [run_operation(ip, good, S.ParsaMode.CONFIG, config), run_operation(ip, {}, S.ParsaMode.ACT, batches[0])]
        for (n_tilings, stream), batch in zip(faults, batches[1:]):
            seen.append(run_operation(ip, {"N_TILINGS": n_tilings}, S.ParsaMode.CONFIG, stream))
            seen.append(run_operation(ip, {}, S.ParsaMode.ACT, batch))
        return seen

    got, expected = on_both(board, body)
    assert_same(got, expected)
    for fault, result in zip(FAULTS, expected[2::2]):
        flag = S.Status.ERR_STREAM if fault in ("short", "long") else S.Status.ERR_CONFIG
        assert result["STATUS"] == S.Status.DONE | flag, fault


def test_partial_record_clear_and_overlapping_rows():
    """A trailing partial record (ERR_STREAM, the whole records still answered, TLAST on the last), CLEAR, and
    tilings of one worker over the same rows: the update pass reads a row before the writes of the two tilings ahead
    of it reach the bank, so it forwards them (the twins are 1, 2 and 3 tilings apart in worker 0)."""
    board = small_board(16)
    rng = np.random.default_rng(4)
    twin = M.Descriptor(0, (0,), 3, 4, 0, 0)
    descriptors = [twin, twin, M.Descriptor(0, (1,), 3, 4, 0, 8), twin, M.Descriptor(1, (1,), 2, 3, 1 << 15, 5)]
    regs = {"N_DIMS": 2, "N_ACTIONS": 3, "N_TILINGS": 5, "ALPHA": 1 << 16, "GAMMA": 1 << 16, "EPSILON": 0, "OPTIONS": 1}
    config = config_stream(rng, 2, descriptors)
    states = M.pack_states(
        [0] * 6, [1] * 6, [1000, -2000, 3000, 500, 7, -9], rng.integers(-1 << 17, 1 << 17, (6, 2)), 2
    ).ravel()

    def body(ip):
        return [
            run_operation(ip, regs, S.ParsaMode.CONFIG, config),
            run_operation(ip, {}, S.ParsaMode.ACT, states),
            run_operation(ip, {}, S.ParsaMode.ACT, states[:-1]),
            run_operation(ip, {}, S.ParsaMode.DUMP_POLICY, []),
            run_operation(ip, {}, S.ParsaMode.CLEAR, []),
            run_operation(ip, {}, S.ParsaMode.DUMP_POLICY, []),
        ]

    got, expected = on_both(board, body)
    assert_same(got, expected)
    assert expected[2]["STATUS"] & (S.Status.DONE | S.Status.ERR_STREAM) == S.Status.DONE | S.Status.ERR_STREAM
    assert len(expected[2]["out"]) == 5
    assert any(expected[3]["out"]) and not any(expected[5]["out"])
