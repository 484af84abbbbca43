"""The ParSa throughput benchmark runs end to end at a tiny size and writes complete results (no timing asserted)."""

import importlib.util
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "parsa_emu.py"
KEYS = ["model_numba", "driver_act_batch", "driver_act", "float_reference", "tiles3_python"]
SHAPES = ["mountaincar", "opal"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--batch",
            "48",
            "--keys",
            "5",
            "--repeats",
            "2",
            "--min-time",
            "0",
            "--python-max-steps",
            "16",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads((out / "parsa_emu.json").read_text()), (out / "parsa_emu.md").read_text(), proc.stdout


def test_every_implementation_and_shape_has_positive_numbers(results):
    data, _, _ = results
    rows = {(row["key"], row["shape"]): row for row in data["rows"]}
    assert sorted(rows) == sorted((key, shape) for key in KEYS for shape in SHAPES)
    for (key, _shape), row in rows.items():
        assert row["status"] == "ok", row
        assert len(row["samples[steps/s]"]) == 2 and all(x > 0 for x in row["samples[steps/s]"])
        assert math.isfinite(row["median[steps/s]"]) and row["ratio_vs_tiles3_python"] > 0
        expected = 48 if key in ("model_numba", "driver_act_batch") else 16
        assert row["steps_per_call"] == expected, row
    for shape in SHAPES:
        assert rows[("tiles3_python", shape)]["ratio_vs_tiles3_python"] == pytest.approx(1.0)
        assert rows[("driver_act_batch", shape)]["check_passed"] is True
        assert rows[("driver_act", shape)]["check_passed"] is True  # act() (the mailbox) == the model
        for key in ("driver_act", "tiles3_python"):
            assert 0 < rows[(key, shape)]["p50[us]"] <= rows[(key, shape)]["p99[us]"]
        assert rows[("model_numba", shape)]["modeled_core[steps/s]"] > 0
    assert rows[("model_numba", "opal")]["board"] == "ZCU106"


def test_environment_goal_and_markdown(results):
    data, markdown, stdout = results
    env = data["environment"]
    for name in ("date", "git_commit", "python", "numpy", "numba", "cpu_count"):
        assert env[name], name
    assert env["numba_threads"] == 1
    assert data["arguments"]["batch"] == 48 and data["goal"]["ratio"] == 10.0
    assert data["goal"]["met"] == (data["goal"]["lowest_ratio"] >= 10.0)
    assert data["goal_act"]["met"] == (data["goal_act"]["lowest_ratio"] >= 1.0)
    assert "| p50 [us] | p99 [us] |" in markdown and "Goal: `driver_act` (one act() per record)" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ") and "`" in line]
    assert len(table) == len(KEYS) * len(SHAPES)
    assert "| implementation | shape | median steps/s | ratio vs tiles3 Python | note |" in markdown
    assert markdown.strip() in stdout


def test_tiles3_is_sutton_s_algorithm():
    """The benchmark's tiles3 reproduces the published behaviour: num-tilings indices, displacement 1, 3, 5, ..."""
    spec = importlib.util.spec_from_file_location("parsa_emu", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    sys.modules["parsa_emu"] = bench  # dataclasses look their module up
    try:
        spec.loader.exec_module(bench)
    finally:
        del sys.modules["parsa_emu"]
    iht = bench.IHT(1024)
    first = bench.tiles(iht, 8, [3.6, 7.21])
    assert first == list(range(8))  # fresh table: indices handed out in order
    assert bench.tiles(iht, 8, [3.6, 7.21]) == first  # the same point hits the same tiles
    moved = bench.tiles(iht, 8, [3.6 + 1.0, 7.21])
    assert len(set(moved) & set(first)) == 0  # one tile width apart: all tilings change
    # tiling k offsets dimension j by (2j + 1) k / numtilings of a tile: 1/8 of a tile in dim 0 changes one tiling,
    # and in dim 1 (offsets 3k/8, the same residues mod 8) also exactly one
    assert len(set(bench.tiles(iht, 8, [3.6 + 1 / 8, 7.21])) - set(first)) == 1
    assert len(set(bench.tiles(iht, 8, [3.6, 7.21 + 1 / 8])) - set(first)) == 1
    assert bench.tiles(None, 2, [0.0, 0.0]) == [[0, 0, 0], [1, 0, 1]]  # raw: tiling, (0+1)//2, (0+3)//2
    rng = random.Random(0)
    agent = bench.Tiles3Sarsa([((0, 1), 8, 8)], [-1.2, -0.07], [0.6, 0.07], 3, 0.1, 1.0, 0.0)
    for _ in range(50):
        agent.step([rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07)], -1.0, 0)
    assert min(min(w) for w in agent.weights) < 0  # Sarsa updates were applied


def test_bad_shapes_are_refused():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--shapes", "cartpole"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "shapes must be a comma-separated subset" in proc.stderr
