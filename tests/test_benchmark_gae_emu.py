"""The GAE throughput benchmark runs end to end at a tiny size and writes complete results (no timing asserted)."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gae_emu.py"
KEYS = [
    "model_numba",
    "model_numpy",
    "driver_pynqz2_raw",
    "driver_pynqz2_q8runs",
    "driver_pynqz2_q8block",
    "driver_zcu106_raw",
    "driver_zcu106_q8runs",
    "driver_zcu106_q8block",
    "cleanrl_numpy",
    "torchrl_gae",
    "torchrl_vec_gae",
    "python_loop",
    "numba_float64",
]
SIZES = ["8x16", "7x123"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--sizes",
            ",".join(SIZES),
            "--repeats",
            "1",
            "--min-time",
            "0",
            "--python-max-elements",
            "256",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads((out / "gae_emu.json").read_text()), (out / "gae_emu.md").read_text(), proc.stdout


def _required(key):
    """torchrl is an optional peer: its rows may say 'unavailable' only where it does not import."""
    return not key.startswith("torchrl") or importlib.util.find_spec("torchrl") is not None


def test_every_implementation_has_positive_numbers_and_passes_its_check(results):
    data, _, _ = results
    rows = {(row["key"], row["size"]): row for row in data["rows"]}
    assert sorted(rows) == sorted((key, size) for key in KEYS for size in SIZES)
    for (key, _size), row in rows.items():
        if not _required(key):
            assert row["status"].startswith("unavailable"), row
            continue
        assert row["status"] == "ok", row
        assert row["check_passed"] and 0 <= row["max_abs_error"] <= row["tolerance"], row
        assert math.isfinite(row["median[elements/s]"]) and row["median[elements/s]"] > 0, row
        assert row["ratio_vs_cleanrl_numpy"] > 0, row
        assert len(row["samples[elements/s]"]) == 1 and row["calls_per_repeat"] >= 1
    assert rows[("cleanrl_numpy", "8x16")]["ratio_vs_cleanrl_numpy"] == pytest.approx(1.0)


def test_python_loop_subset_is_recorded(results):
    data, _, _ = results
    row = next(r for r in data["rows"] if r["key"] == "python_loop" and r["size"] == "7x123")
    assert row["elements_per_call"] == 2 * 123 and "first 2 of 7 envs" in row["note"]


def test_environment_and_arguments_are_recorded(results):
    data, _, _ = results
    env = data["environment"]
    for name in ("date", "git_commit", "python", "numpy", "numba", "torch", "cpu_count"):
        assert env[name], name
    assert env["torch_threads"] == 1 and env["numba_threads"] == 1
    assert data["arguments"]["sizes"] == SIZES and data["arguments"]["repeats"] == 1
    assert data["goal"]["measured_ratio"] is None  # 64x1024 was not run


def test_markdown_table_lists_every_row_and_is_printed(results):
    _, markdown, stdout = results
    table = [line for line in markdown.splitlines() if line.startswith("| ") and "`" in line]
    assert len(table) == len(KEYS) * len(SIZES)
    for key in KEYS:
        assert sum(f"(`{key}`)" in line for line in table) == len(SIZES)
    assert "| implementation | size (NxT) | median elements/s | ratio vs CleanRL numpy | max abs error |" in markdown
    assert markdown.strip() in stdout


def test_bad_sizes_are_refused():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "64by1024"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "sizes must look like 64x1024" in proc.stderr
