"""Rung 4: the converted Verilog of the GAE core against the bit-exact model (cocotb + Icarus).

For k = 1, 2, 3 a small build is converted with ``verilog.convert``, linted with Verilator (must be clean) and compiled
once with Icarus. The vectors come from the same helpers as rung 3 (``tests/gae/test_rtl.py``: raw and q8 modes,
random T, lanes used, gamma, lambda, dones, magnitudes that saturate; fixed seeds), the expectations from the model
(``GaeCoreIP``, operation after operation as the core sees them); ``tests/gae/cocotb_gae.py`` replays them over
AXI with and without idle cycles and back-pressure and compares bytes, TLAST, STATUS and CYCLES exactly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.backends.gae_ip import GaeCoreIP
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build.verilog import convert, lint, module_name
from tests.common import cocotb_run
from tests.common.cocotb_run import needs_icarus
from tests.gae.harness import operation, run_operation, small_spec

TESTBENCH = "tests.gae.cocotb_gae"
VECTORS_ENV = "PYNQ_RL_GAE_VECTORS"  # cocotb_gae.VECTORS_ENV (not imported: that module needs a running simulator)
#: cocotb tests per run: idle_inserter x backpressure_inserter
COCOTB_TESTS_PER_RUN = 4
#: fixed seeds per k; each seed draws one random operation
SEEDS = {
    1: (101, 102, 103, 104, 105, 106, 107, 108),
    2: (201, 202, 203, 204, 205, 206, 207, 208),
    3: (301, 302, 303, 304, 305, 306, 307, 308),
}
PARAMETER_REGISTERS = ("ID", "LANES", "T_MAX", "LOOKAHEAD", "FORMAT")
_MODE_SHIFT = S.GAE_REGISTERS["CTRL"]["fields"]["MODE"]["bit_offset"]


# -- vectors ----------------------------------------------------------------------------------------------------


def case(name, spec, mode, rng, n_steps, n_lanes, gamma, lam, scale, regs_update=None, cut=0):
    """One operation from the rung-3 helper; ``regs_update`` overrides registers, ``cut`` beats trim/extend."""
    regs, stream = operation(spec, mode, rng, n_steps, n_lanes, gamma, lam, scale)
    regs |= regs_update or {}
    beat = spec.stream_bytes
    if cut < 0:
        stream = stream[: cut * beat]
    elif cut > 0:
        stream = np.concatenate([stream, np.zeros(cut * beat, np.uint8)])
    desc = f"{name}: {S.GaeMode(mode).name} T={n_steps} envs={n_lanes} gamma={gamma:.4g} lambda={lam:.4g} x{scale:g}"
    return desc, regs, stream


def random_cases(spec: S.GaeSpec, seeds) -> list:
    """Edge operations (T = 1 and T_MAX, all lanes and one, gamma and lambda at 0 and 1, saturation) + random ones."""
    rng = np.random.default_rng(seeds[0])
    cases = [
        case(
            "all lanes, T_MAX, lambda=1, saturating", spec, S.GaeMode.RAW, rng, spec.t_max, spec.lanes, 1.0, 1.0, 4096.0
        ),
        case("one lane, T=1, gamma=0", spec, S.GaeMode.Q8, rng, 1, 1, 0.0, 0.0, 1.0),
        case("q8 T_MAX, lambda=0, saturating", spec, S.GaeMode.Q8, rng, spec.t_max, spec.lanes, 1.0, 0.0, 4096.0),
        case("raw T=2, small", spec, S.GaeMode.RAW, rng, 2, spec.lanes, 0.99, 0.95, 1.0),
        case("gamma = lambda = 1, unsaturated", spec, S.GaeMode.RAW, rng, 9, spec.lanes, 1.0, 1.0, 1.0),
        case("three lane-batches, q8", spec, S.GaeMode.Q8, rng, 7, 3 * spec.lanes, 0.99, 0.95, 64.0),
        case("two lane-batches, the last one lane, raw", spec, S.GaeMode.RAW, rng, 5, spec.lanes + 1, 0.9, 0.8, 1.0),
        case("two chained chunks, q8", spec, S.GaeMode.Q8, rng, spec.t_max + 7, spec.lanes, 0.97, 0.9, 64.0),
        case(
            "three chained chunks of two lane-batches, raw",
            spec,
            S.GaeMode.RAW,
            rng,
            5 * spec.t_max // 2,
            spec.lanes + 2,
            0.99,
            0.95,
            1.0,
        ),
        case("two whole chunks, saturating", spec, S.GaeMode.RAW, rng, 2 * spec.t_max, spec.lanes, 1.0, 1.0, 4096.0),
        case("q8-runs, one lane, T=1", spec, S.GaeMode.Q8_RUNS, rng, 1, 1, 0.99, 0.95, 1.0),
        case(
            "q8-runs, chained chunks of two lane-batches, saturating",
            spec,
            S.GaeMode.Q8_RUNS,
            rng,
            5 * spec.t_max // 2,
            spec.lanes + 2,
            0.99,
            0.95,
            4096.0,
        ),
    ]
    for seed in seeds:
        rng = np.random.default_rng(seed)
        n_steps, n_lanes = int(rng.integers(1, spec.t_max + 1)), int(rng.integers(1, spec.lanes + 1))
        gamma, lam = float(rng.random()), float(rng.random())
        mode = S.GaeMode(int(rng.integers(0, len(S.GaeMode))))
        scale = float(rng.choice([1.0, 64.0, 4096.0]))
        cases.append(case(f"seed {seed}", spec, mode, rng, n_steps, n_lanes, gamma, lam, scale))
    return cases


#: what an error case compares (CYCLES after an error: :func:`test_verilog_cycles_after_refused_start_like_the_model`)
ERROR_COMPARE = ("output", "status")


def refused(spec: S.GaeSpec, rng, regs_update: dict):
    """A START the core must refuse; nothing is streamed to it."""
    desc, regs, stream = case(
        f"refused {regs_update}", spec, S.GaeMode.RAW, rng, 5, 2, 0.9, 0.9, 1.0, regs_update=regs_update
    )
    return desc, regs, stream[:0]


def error_cases(spec: S.GaeSpec) -> list:
    """Misplaced TLAST (one beat short, one beat long) and refused configurations, each followed by a good one."""
    rng = np.random.default_rng(7)
    good = case("good after error", spec, S.GaeMode.RAW, rng, 6, 3, 0.9, 0.9, 1.0)
    first_batch = 7 * spec.input_record_bytes(S.GaeMode.RAW) // spec.stream_bytes
    two = case("two lane-batches", spec, S.GaeMode.RAW, rng, 6, 2 * spec.lanes, 0.9, 0.9, 1.0)
    cases = [
        (*case("TLAST one beat early", spec, S.GaeMode.RAW, rng, 6, 3, 0.9, 0.9, 1.0, cut=-1), ERROR_COMPARE),
        good,
        (
            *case(
                "TLAST at the end of the first of two lane-batches",
                spec,
                S.GaeMode.RAW,
                rng,
                6,
                2 * spec.lanes,
                0.9,
                0.9,
                1.0,
                cut=-first_batch,
            ),
            ERROR_COMPARE,
        ),
        two,
        (*case("TLAST one beat late", spec, S.GaeMode.Q8, rng, 6, 3, 0.9, 0.9, 1.0, cut=+1), ERROR_COMPARE),
        good,
        (
            *case(
                "q8-runs, TLAST on the SCALE header",
                spec,
                S.GaeMode.Q8_RUNS,
                rng,
                6,
                spec.lanes,
                0.9,
                0.9,
                1.0,
                cut=-(spec.input_batch_bytes(S.GaeMode.Q8_RUNS, 6) - spec.header_record_bytes) // spec.stream_bytes,
            ),
            ERROR_COMPARE,
        ),
        good,
        (
            *case(
                "TLAST at the end of the first of two chunks",
                spec,
                S.GaeMode.RAW,
                rng,
                spec.t_max + 4,
                2,
                0.9,
                0.9,
                1.0,
                cut=-(spec.t_max * spec.input_record_bytes(S.GaeMode.RAW) // spec.stream_bytes),
            ),
            ERROR_COMPARE,
        ),
        good,
    ]
    for regs_update in ({"T": 0}, {"LANES_USED": spec.lanes + 1}, {"GAMMA": (1 << spec.coef.frac) + 1}, {"CHUNKS": 0}):
        cases += [(*refused(spec, rng, regs_update), ERROR_COMPARE), good]
    return cases


def make_vectors(spec: S.GaeSpec, cases: list) -> dict:
    """Run ``cases`` through one model instance in order; the JSON-able vectors for the testbench.

    A case is ``(name, regs, stream)`` or ``(name, regs, stream, compare)`` with ``compare`` a subset of
    ``("output", "status", "cycles")`` (default: all three).
    """
    ip = GaeCoreIP(spec)
    vectors = {
        "module": module_name("gae", spec),
        "cases": [],
        "parameters": {name: ip.read(S.GAE_REGISTERS[name]["address_offset"]) for name in PARAMETER_REGISTERS},
    }
    beats = 0
    for name, regs, stream, *compare in cases:
        output, status, cycles = run_operation(ip, regs, stream)
        mode = regs.get("CTRL", 0)
        writes = [[reg, value & 0xFFFF_FFFF] for reg, value in regs.items()] + [["CTRL", mode | S.Ctrl.START]]
        vectors["cases"].append(
            {
                "name": name,
                "writes": writes,
                "stream": bytes(stream).hex(),
                "expected": {"output": output.hex(), "status": int(status), "cycles": int(cycles)},
                "compare": list(compare[0] if compare else ("output", "status", "cycles")),
            }
        )
        beats += (len(stream) + len(output)) // spec.stream_bytes + 20 * len(writes) + spec.pipeline_depth
    # ~4 clocks per beat or bus access with 3-in-4 pauses, 10 ns each, polling slack, a 4x margin
    vectors["timeout_us"] = 100 + beats * 4 * 10 * 4 // 1000
    return vectors


# -- running cocotb ---------------------------------------------------------------------------------------------


def run_cocotb(spec: S.GaeSpec, verilog: Path, vectors: dict, work: Path, waves: bool = False) -> Path:
    """Run this core's testbench on the build ``spec`` (:func:`tests.common.cocotb_run.run_cocotb`).

    The tests below and the script mode of ``cocotb_gae`` call it with the spec rather than the module name.
    """
    return cocotb_run.run_cocotb(
        module_name("gae", spec),
        verilog,
        vectors,
        work,
        testbench=TESTBENCH,
        vectors_env=VECTORS_ENV,
        tests_per_run=COCOTB_TESTS_PER_RUN,
        waves=waves,
    )


# -- tests ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[1, 2, 3], ids=lambda k: f"k{k}")
def converted(request, tmp_path_factory):
    """(spec, path of the converted Verilog, work directory) for one k."""
    spec = small_spec(request.param)
    work = tmp_path_factory.mktemp(f"gae_verilog_k{request.param}")
    return spec, convert("gae", spec, work / "rtl"), work


def test_converted_verilog_lints_clean(converted):
    """``verilator --lint-only -Wall -Wno-WIDTH`` reports nothing (it misses width/sign bugs: the next tests don't)."""
    _, verilog, _ = converted
    if shutil.which("verilator") is None:
        pytest.skip("verilator not found")
    lint(verilog)  # raises with Verilator's report on any warning


@needs_icarus
def test_verilog_equals_model_bit_for_bit(converted):
    """Edge and random operations, back to back: output bytes, TLAST, STATUS and CYCLES equal the model's."""
    spec, verilog, work = converted
    cases = random_cases(spec, SEEDS[spec.lookahead])
    vectors = make_vectors(spec, cases)
    statuses = [c["expected"]["status"] for c in vectors["cases"]]
    assert any(s & S.Status.SATURATED for s in statuses), "no vector saturates"
    assert any(not s & S.Status.SATURATED for s in statuses), "every vector saturates"
    assert {S.GaeMode(regs["CTRL"] >> _MODE_SHIFT) for _, regs, _ in cases} == set(S.GaeMode)
    writes = [dict(c["writes"]) for c in vectors["cases"]]
    assert all(
        c["expected"]["cycles"] == spec.cycles(w["T"] + (w["CHUNKS"] - 1) * spec.t_max, w["BATCHES"])
        for c, w in zip(vectors["cases"], writes)
    )
    assert max(w["BATCHES"] for w in writes) == 3 and max(w["CHUNKS"] for w in writes) == 3
    run_cocotb(spec, verilog, vectors, work)


@needs_icarus
@pytest.mark.parametrize("converted", [2], indirect=True, ids=["k2"])  # error handling does not depend on k
def test_verilog_flags_errors_like_the_model(converted):
    """TLAST one beat early / late / before the last lane-batch or chunk / on a q8-runs header -> ERR_STREAM, bad
    configurations (CHUNKS 0
    among them) -> ERR_CONFIG, and the next operation is good."""
    spec, verilog, work = converted
    vectors = make_vectors(spec, error_cases(spec))
    expected = [S.Status(c["expected"]["status"]) for c in vectors["cases"]]
    assert expected[0:10:2] == [S.Status.DONE | S.Status.ERR_STREAM] * 5
    assert expected[10:18:2] == [S.Status.DONE | S.Status.ERR_CONFIG] * 4
    assert all(status == S.Status.DONE for status in expected[1::2])
    run_cocotb(spec, verilog, vectors, work)


@needs_icarus
@pytest.mark.parametrize("converted", [2], indirect=True, ids=["k2"])  # error handling does not depend on k
def test_verilog_cycles_after_refused_start_like_the_model(converted):
    """START clears CYCLES: a refused START after a good operation reads CYCLES = 0, as in the model."""
    spec, verilog, work = converted
    rng = np.random.default_rng(11)
    vectors = make_vectors(
        spec, [case("good", spec, S.GaeMode.RAW, rng, 6, 3, 0.9, 0.9, 1.0), refused(spec, rng, {"T": 0})]
    )
    assert [c["expected"]["cycles"] for c in vectors["cases"]] == [6 + spec.pipeline_depth, 0]
    run_cocotb(spec, verilog, vectors, work)
