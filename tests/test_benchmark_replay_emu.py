"""The replay throughput benchmark runs end to end at a tiny size and writes complete results (no timing asserted)."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "replay_emu.py"
KEYS = [
    "model_numba",
    "model_numpy",
    "driver_zcu106",
    "driver_pynqz2",
    "cpprb",
    "cpprb_stratified",
    "torchrl",
    "numpy_sumtree",
]
UNITS = ["samples/s", "updates/s", "hot_updates/s", "inserts/s"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--k",
            "4",
            "--levels",
            "3",
            "--batch",
            "16",
            "--repeats",
            "2",
            "--min-time",
            "0",
            "--pool",
            "5",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads((out / "replay_emu.json").read_text()), (out / "replay_emu.md").read_text(), proc.stdout


HAVE_CPPRB = importlib.util.find_spec("cpprb") is not None  # the baseline: a `bench` extra, not a `test` one


def _optional(key):
    """Peers that may be absent: their rows may say 'unavailable' only where they do not import or load."""
    if key.startswith("cpprb"):
        return not HAVE_CPPRB
    if key == "model_numba":
        return importlib.util.find_spec("numba") is None
    # torchrl's C++ segment trees may not load against this torch (docs/design.md, Peer libraries for benchmarks)
    return key == "torchrl"


def test_every_implementation_has_positive_numbers_and_passes_its_check(results):
    data, _, _ = results
    rows = {row["key"]: row for row in data["rows"]}
    assert list(rows) == KEYS
    for key, row in rows.items():
        if _optional(key) and row["status"].startswith("unavailable"):
            assert len(row["status"]) > len("unavailable: "), row
            continue
        assert row["status"] == "ok", row
        assert row["check"], row
        for unit in UNITS:
            assert len(row[f"samples[{unit}]"]) == 2
            assert math.isfinite(row[f"median[{unit}]"]) and row[f"median[{unit}]"] > 0, (key, unit)
        for op in ("sample", "update", "update_hot", "insert"):
            assert row["calls_per_repeat"][op] >= 1
            assert row[f"ratio_vs_cpprb[{op}]"] > 0 if HAVE_CPPRB else f"ratio_vs_cpprb[{op}]" not in row
    if HAVE_CPPRB:
        assert rows["cpprb"]["ratio_vs_cpprb[sample]"] == pytest.approx(1.0)
    assert "the first 64 leaves" in rows["driver_zcu106"]["note"]


def test_torchrl_row_is_measured_or_says_why_not(results):
    data, markdown, _ = results
    row = next(r for r in data["rows"] if r["key"] == "torchrl")
    if row["status"] != "ok":
        assert row["status"] == f"unavailable: {data['info']['torchrl_error']}"
        assert row["status"].partition(" (cause: ")[0] in markdown and data["info"]["torchrl_error"] in markdown


def test_environment_arguments_and_goal_are_recorded(results):
    data, _, _ = results
    env = data["environment"]
    for name in ("date", "git_commit", "python", "numpy", "numba", "torch", "cpu_count", "processor"):
        assert env[name], name
    assert env["torch_threads"] == 1 and env["numba_threads"] == 1
    args = data["arguments"]
    assert (args["k"], args["levels"], args["capacity"], args["batch"], args["repeats"]) == (4, 3, 64, 16, 2)
    assert len(data["load_average_before"]) == 3 and len(data["load_average_after"]) == 3
    goal = data["goal"]
    if not HAVE_CPPRB:
        assert goal["met"] is None and "not measured" in goal["text"]
        return
    assert goal["sample_ratio_measured"] > 0 and goal["update_ratio_measured"] > 0
    assert goal["met"] in (True, False) and ("NOT met" in goal["text"]) != goal["met"]
    # the goal is the whole driver path (the first driver row measured), the model alone beside it
    assert goal["key"] == "driver_zcu106" and goal["text"].startswith("`driver_zcu106` (the whole driver path")
    rows = {row["key"]: row for row in data["rows"]}
    assert goal["update_ratio_measured"] == rows["driver_zcu106"]["ratio_vs_cpprb[update]"]
    assert "`model_numba`" in goal["text"] or rows["model_numba"]["status"] != "ok"


def test_markdown_table_lists_every_row_and_is_printed(results):
    _, markdown, stdout = results
    table = [line for line in markdown.splitlines() if line.startswith("| ") and "(`" in line]
    assert len(table) == len(KEYS)
    for key in KEYS:
        assert sum(f"(`{key}`)" in line for line in table) == 1
    assert "| implementation | samples/s | updates/s | updates/s, repeated batch | inserts/s |" in markdown
    assert "## Goal" in markdown and markdown.strip() in stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch", "0"], "--batch must be in [1, capacity=1048576], not 0"),
        (["--levels", "0"], "ReplaySpec.levels must be in [1, 16], not 0"),
        (["--repeats", "0"], "--repeats must be >= 1"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr
