"""The GAE cycle benchmark streams what a real operation streams in every mode (q8-runs: the header records of each
run) and counts the same cycles on both engines; its compute phases are the spec's, its byte counts the stream's."""

import importlib.util
from pathlib import Path

import pytest

from pynq_rl.overlay import spec as S

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gae_rtl_cycles.py"
#: a lane-batch of two q8-runs runs (41 records, runs of 32) on a small core
LANES, STEPS = 2, 40


def _script():
    spec = importlib.util.spec_from_file_location("gae_rtl_cycles", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _script()


@pytest.mark.parametrize("mode", list(S.GaeMode), ids=lambda m: m.name.lower())
def test_every_mode_runs_its_whole_stream_through_the_core(bench, mode):
    row = bench.measure(LANES, STEPS, mode, n_batches=2, engine="rtl")
    spec = S.GaeSpec(lanes=LANES, t_max=STEPS, stream_bytes=S.board(None).slot("gae").spec.stream_bytes)
    assert row["compute[cyc]"] == spec.cycles(STEPS, batches=2) == row["expected_cycles"]
    assert row["output_bytes"] == 2 * STEPS * spec.output_record_bytes
    assert row["input_beats_per_batch"] * spec.stream_bytes == spec.input_batch_bytes(mode, STEPS)
    assert row["load[cyc]"] >= row["input_beats_per_batch"]  # at most one beat a cycle


def test_q8_runs_loads_its_header_records(bench):
    spec = S.GaeSpec(lanes=LANES, t_max=STEPS)
    stream = bench.random_input(spec, S.GaeMode.Q8_RUNS, STEPS, LANES)
    headers = 2 * spec.runs(STEPS + 1) * spec.header_record_bytes
    assert len(stream) == (STEPS + 1) * spec.input_record_bytes(S.GaeMode.Q8_RUNS) + headers


def test_verilator_counts_the_cycles_myhdl_counts(bench):
    def cycles(engine):
        row = bench.measure(LANES, STEPS, S.GaeMode.Q8_RUNS, n_batches=2, engine=engine)
        return {key: row[key] for key in ("load[cyc]", "compute[cyc]", "drain[cyc]", "total[cyc]", "output_bytes")}

    assert cycles("verilator") == cycles("rtl")
