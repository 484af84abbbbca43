"""The continuous-control PPO experiment runs end to end at a tiny size and writes complete results (no learning or
timing asserted), and its area under the learning curve is the trapezoid it claims."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "ppo_continuous.py"


def _script():
    spec = importlib.util.spec_from_file_location("ppo_continuous", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _command(tmp_path, *options, out="out"):
    """The script on Pendulum-v1 for one 2048-step iteration (``options`` choose seeds, settings, ...; a later
    ``--steps`` overrides), runs in ``tmp_path / "runs"``, results in ``tmp_path / out``."""
    return [sys.executable, str(SCRIPT), "--tasks", "Pendulum-v1", "--steps", "Pendulum-v1=2048", "--jobs", "1"] + [
        "--runs",
        str(tmp_path / "runs"),
        "--out",
        str(tmp_path / out),
        *options,
    ]


def _pendulum(tmp_path, *options, name="ppo_continuous"):
    """Run :func:`_command` and return the JSON of the result files ``name``."""
    proc = subprocess.run(_command(tmp_path, *options), capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads((tmp_path / "out" / f"{name}.json").read_text())


def test_area_under_curve_is_the_mean_height_of_the_trapezoids():
    auc = _script().area_under_curve
    assert auc([0, 10, 30], [0.0, 10.0, 10.0]) == pytest.approx((50 + 200) / 30)
    assert auc([5, 15], [-3.0, -3.0]) == pytest.approx(-3.0)
    assert math.isnan(auc([5], [1.0]))


def test_pendulum_rows_summary_page_and_plot(tmp_path):
    data = _pendulum(tmp_path, "--seeds", "0")
    assert [(r["setting"], r["seed"], r["steps"], r["bits_per_element"]) for r in data["rows"]] == [
        ("float", 0, 2048, 64.0),
        ("raw", 0, 2048, 32.0),
        ("q8", 0, 2048, 8.0),
        ("q8-runs", 0, 2048, 10.0),
    ]
    assert all(r["episodes"] == 10 and r["final_return_last20"] < 0 and r["steps_per_s"] > 0 for r in data["rows"])
    summary = data["summaries"]["Pendulum-v1"]
    assert sorted(summary["settings"]) == ["float", "q8", "q8-runs", "raw"] and summary["q8_over_float"] is None
    page = (tmp_path / "out" / "ppo_continuous.md").read_text()
    assert "## Pendulum-v1 (2,048 steps per run)" in page and "| q8-runs | 0 |" in page
    assert "| emu core, q8-runs (the default) | 10 |" in page
    assert (tmp_path / "out" / "ppo_continuous_Pendulum-v1.png").stat().st_size > 1000
    assert data["environment"]["git_commit"]


def test_a_control_setting_writes_its_own_files(tmp_path):
    """``--settings q8-wrapper --name ...``: q8 GAE with CleanRL's reward wrapper, in files of its own."""
    data = _pendulum(tmp_path, "--seeds", "1", "--settings", "q8-wrapper", "--name", "control", name="control")
    assert [(r["setting"], r["seed"]) for r in data["rows"]] == [("q8-wrapper", 1)]
    with open(Path(data["rows"][0]["run_dir"]) / "args.json") as f:
        args = json.load(f)
    assert (args["backend"], args["quantize"], args["reward_norm"], args["norm_reward"]) == (
        "emu",
        True,
        None,
        True,
    )
    assert data["summaries"]["Pendulum-v1"]["q8_over_float"] is None
    assert "emu core, q8 block + reward wrapper" in (tmp_path / "out" / "control.md").read_text()
    assert (tmp_path / "out" / "control_Pendulum-v1.png").is_file()
    assert not (tmp_path / "out" / "ppo_continuous.json").exists()


Q8_RUNS_SEED0 = ("--seeds", "0", "--settings", "q8-runs")


def test_reuse_reads_back_a_finished_run_with_the_same_arguments(tmp_path):
    """``--reuse`` resumes an experiment: a finished run is read back, not trained again (no new run directory);
    a run with other arguments (more steps) is trained."""
    first = _pendulum(tmp_path, *Q8_RUNS_SEED0)
    run_dirs = lambda: sorted((tmp_path / "runs" / "Pendulum-v1" / "q8-runs" / "0").iterdir())  # noqa: E731
    assert len(run_dirs()) == 1
    again = _pendulum(tmp_path, *Q8_RUNS_SEED0, "--reuse")
    assert len(run_dirs()) == 1 and again["rows"] == first["rows"]
    longer = _pendulum(tmp_path, *Q8_RUNS_SEED0, "--reuse", "--steps", "Pendulum-v1=4096")
    assert len(run_dirs()) == 2 and longer["rows"][0]["steps"] == 4096


def test_two_invocations_sharing_runs_train_each_run_once(tmp_path):
    """A second ``--reuse`` invocation started while the first trains the same (task, setting, seed) waits for it
    and reads its run back instead of training it again beside it (one run directory, the same row)."""
    procs = [
        subprocess.Popen(
            _command(tmp_path, *Q8_RUNS_SEED0, "--reuse", out=out),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for out in ("out_a", "out_b")
    ]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stdout[-2000:] + stderr[-4000:]
    assert len(list((tmp_path / "runs" / "Pendulum-v1" / "q8-runs" / "0").iterdir())) == 1
    rows = [json.loads((tmp_path / out / "ppo_continuous.json").read_text())["rows"] for out in ("out_a", "out_b")]
    assert rows[0] == rows[1]


def test_every_setting_is_compared_with_float():
    """Candidate encodings get the same standing against float as q8: the ratio of final returns and the share of
    float's improvement over the first episodes."""
    rows = [
        {"setting": s, "seed": seed, "final_return_last20": f, "first_return_first20": 10.0, "auc": 1.0}
        | {"steps_per_s": 1.0, "bits_per_element": None}
        for s, f in (("float", 110.0), ("runs8x32-emulated", 105.0), ("q8", 60.0))
        for seed in (0, 1)
    ]
    summary = _script().summarize("Hopper-v5", rows)
    candidate = summary["settings"]["runs8x32-emulated"]
    assert candidate["over_float"] == pytest.approx(105 / 110)
    assert candidate["share_of_float_improvement"] == pytest.approx(95 / 100)
    assert summary["q8_over_float"] == pytest.approx(60 / 110)
    assert "over_float" not in summary["settings"]["float"]
    assert candidate["gap_to_float"] == pytest.approx(-5.0) and candidate["gap_standard_error"] == 0.0


def test_the_gap_to_float_comes_with_its_standard_error():
    """Welch's standard error of the difference of the means: the seed-to-seed spread a gap is read against."""
    gap_se = _script().gap_standard_error
    finals, float_finals = [1335.2, 1598.0, 1724.3], [2103.3, 1640.2, 1789.5]
    expected = math.sqrt(np.var(finals, ddof=1) / 3 + np.var(float_finals, ddof=1) / 3)
    assert gap_se(finals, float_finals) == pytest.approx(expected) and 150 < expected < 250
    assert gap_se([1.0], float_finals) is None


def test_an_emulated_encoding_setting_trains_through_its_injected_gae_step():
    script = _script()
    assert script.SETTINGS["runs8x32-emulated"] == {"encoding": "runs 8x32 exact"}
    sys.path.insert(0, str(SCRIPT.parent))
    from gae_encodings import EncodedGae

    with pytest.raises(ValueError, match="encoding must be one of"):
        EncodedGae("no such encoding")
    rng = np.random.default_rng(0)
    rewards = rng.standard_normal((64, 2)).astype(np.float32)
    values = rng.standard_normal((65, 2)).astype(np.float32)
    dones = np.zeros((64, 2), np.float32)
    advantages, returns = EncodedGae("runs 8x32 exact").compute(
        rewards, values, dones, gamma=0.99, lam=0.95, quantize=True
    )
    from pynq_rl.host.agents.ppo.advantages import compute_gae

    exact, _ = compute_gae(rewards, values, dones, 0.99, 0.95)
    assert advantages.shape == returns.shape == (64, 2)
    assert 0 < np.sqrt(np.mean((advantages - exact) ** 2)) < 0.05 * np.std(exact)


def test_each_committed_page_has_a_title_of_its_own():
    """The main run, the control and the ten Hopper seeds are three pages of one script: each title says what ran, so
    the docs' sidebar tells them apart."""
    script = _script()
    results = SCRIPT.parent / "results"
    titles = {}
    for name in ("ppo_continuous", "ppo_continuous_control", "ppo_continuous_hopper10"):
        page = (results / f"{name}.md").read_text().splitlines()[0]
        assert page == f"# {script.title(json.loads((results / f'{name}.json').read_text()))}", name
        titles[name] = page
    assert len(set(titles.values())) == 3, titles
    assert titles["ppo_continuous_hopper10"] == "# Continuous-control PPO on Hopper-v5, seeds 0-9: float, q8-runs"
