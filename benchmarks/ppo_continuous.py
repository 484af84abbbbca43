"""HEPPO's own experiment: continuous-control PPO with GAE on the 8-bit core against float GAE.

For each task (Pendulum-v1, and Hopper-v5 / HalfCheetah-v5 where MuJoCo is installed: ``pip install
'pynq-rl[mujoco]'``) and each seed, four settings of the same PPO (CleanRL's ``ppo_continuous_action`` defaults,
:func:`pynq_rl.host.agents.ppo.args_for`: Gaussian policy, 1 env x 2048 steps, 10 epochs of 32 minibatches, lr 3e-4
annealed, gamma 0.99, lambda 0.95, observation normalization):

``float``
    GAE in float64 on the host (``--backend host``), CleanRL's reward normalization wrapper;
``raw``
    GAE on the emulated GAE core in raw Q15.16 (``--backend emu --raw``), the same reward wrapper;
``q8``
    GAE on the emulated core in q8 block mode (HEPPO's 8-bit block codes) with HEPPO's dynamic reward
    standardization (``--backend emu --q8-encoding block --reward-norm dynamic``), which replaces the reward wrapper;
``q8-runs``
    GAE on the emulated core in its default 8-bit mode, q8-runs (a SCALE and OFFSET per lane and 32 steps), with
    the defaults of a Box task (CleanRL's reward wrapper): ``--backend emu``;
``q8-wrapper`` (only with ``--settings``)
    GAE on the emulated core in q8 block mode with CleanRL's reward wrapper instead of HEPPO's standardization
    (``--backend emu --q8-encoding block --norm-reward``): it separates the 8-bit inputs from the standardization;
``float-dynamic`` (a control, only with ``--settings``)
    GAE in float on the host with HEPPO's dynamic reward standardization (``--backend host --reward-norm dynamic``).
``runs8x32-emulated``, ``runs8x32p2-emulated`` (candidates, only with ``--settings``)
    float GAE on rewards and values encoded and decoded by a candidate encoding of ``benchmarks/gae_encodings.py``
    (8-bit codes with a per-run OFFSET and an exact or power-of-two SCALE per 32 steps of a lane), CleanRL's
    reward wrapper: what PPO would learn with that encoding in the core, before it is built.

Metrics per run: the final mean return (last 20 episodes), the area under the learning curve (the trapezoidal
integral of the episodic return over environment steps, divided by the steps: the average return over training),
steps/s and wall time; per setting, the bits a stored reward or value takes (:meth:`GaeSpec.bits_per_element
<pynq_rl.overlay.spec.GaeSpec.bits_per_element>`: every scale and offset counted; 64 for float64 on the host). Per
task: the mean over seeds per setting, each setting's final return as a fraction of float's (when float's is
positive) and its share of float's improvement over the first 20 episodes (defined for negative returns too).
Runs go to ``--runs`` (one directory per task/setting/seed); results to ``--out``: ``ppo_continuous.json``,
``ppo_continuous.md`` and ``ppo_continuous_<task>.png`` (learning curves, mean over seeds with min-max band,
:func:`pynq_rl.host.agents.plot.plot_runs`), rewritten after each task completes.

``--reuse`` resumes an interrupted experiment: a (task, setting, seed) whose run directory already holds a finished
run (``summary.json``, not interrupted) made with the same arguments is read back instead of trained again. It
trusts that the code has not changed since; after a change, give ``--runs`` a fresh directory. Each (task, setting,
seed) is trained under an exclusive lock on ``<seed>.lock`` beside its directory, so two invocations sharing
``--runs`` (a second one started by mistake, or a second ``--tasks`` list) never train it twice at once: the later
one waits and, with ``--reuse``, reads the finished run back.

Run: ``python benchmarks/ppo_continuous.py [--tasks Pendulum-v1 Hopper-v5] [--steps Pendulum-v1=300000]
[--seeds 0 1 2] [--jobs 2] [--nn numpy] [--settings float raw q8 q8-runs] [--name ppo_continuous] [--reuse]``
(``--name`` names the result files, so a control run does not overwrite the main one).
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # run as a script: its BLAS on one thread, set before numpy loads, and the run processes
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # it spawns inherit it (a test that
        os.environ.setdefault(_var, "1")  # imports the module keeps its own threads)

import argparse
import contextlib
import multiprocessing
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, write_results

if TYPE_CHECKING:
    from pynq_rl.host.agents.ppo import Args

SETTINGS = {
    "float": dict(backend="host"),
    "raw": dict(backend="emu", quantize=False),
    "q8": dict(backend="emu", quantize=True, q8_encoding="block", reward_norm="dynamic"),
    "q8-wrapper": dict(backend="emu", quantize=True, q8_encoding="block", norm_reward=True),
    "q8-runs": dict(backend="emu", quantize=True, q8_encoding="runs"),
    "float-dynamic": dict(backend="host", reward_norm="dynamic"),
    "runs8x32-emulated": dict(encoding="runs 8x32 exact"),
    "runs8x32p2-emulated": dict(encoding="runs 8x32 pow2"),
}
"""the settings, as :class:`pynq_rl.host.agents.ppo.Args` overrides"""
DEFAULT_SETTINGS = ("float", "raw", "q8", "q8-runs")
"""what runs without ``--settings``: float GAE, the core raw, HEPPO's 8-bit mode and the core's default 8-bit mode"""
SETTING_NAMES = {
    "float": "float GAE (host)",
    "raw": "emu core, raw Q15.16",
    "q8": "emu core, q8 block + dynamic std.",
    "q8-wrapper": "emu core, q8 block + reward wrapper",
    "q8-runs": "emu core, q8-runs (the default)",
    "float-dynamic": "float GAE (host) + dynamic std.",
    "runs8x32-emulated": "runs 8x32 exact (float emulation)",
    "runs8x32p2-emulated": "runs 8x32 pow2 (float emulation)",
}
DEFAULT_STEPS = {"Pendulum-v1": 300_000, "Hopper-v5": 300_000, "HalfCheetah-v5": 300_000}
"""environment steps per run by default (the experiment runs the MuJoCo tasks for at least 300k steps)"""


def bits_per_element(setting: str) -> float | None:
    """Bits a stored reward or value takes in ``setting`` (every scale and offset counted): the core's mode's
    :meth:`~pynq_rl.overlay.spec.GaeSpec.bits_per_element`, 64 for float64 on the host, None for a float emulation of
    a candidate encoding (``benchmarks/gae_encodings.py`` counts its bits)."""
    from pynq_rl.host.drivers.gae import QUANTIZE_MODES
    from pynq_rl.overlay.spec import GaeSpec

    overrides = SETTINGS[setting]
    if "encoding" in overrides:
        return None
    if overrides["backend"] == "host":
        return 64.0
    quantize = overrides["q8_encoding"] if overrides["quantize"] else False
    return GaeSpec().bits_per_element(QUANTIZE_MODES[quantize])


def area_under_curve(steps: np.ndarray, returns: np.ndarray) -> float:
    """Trapezoidal integral of the episodic return over environment steps, divided by the steps it spans (the
    average return over training; NaN with fewer than two episodes)."""
    steps, returns = np.asarray(steps, np.float64), np.asarray(returns, np.float64)
    if len(steps) < 2 or steps[-1] == steps[0]:
        return float("nan")
    area = float(np.sum((returns[1:] + returns[:-1]) / 2 * np.diff(steps)))
    return area / float(steps[-1] - steps[0])


def finished_run(out_dir: Path, args: Args) -> dict | None:
    """The ``summary.json`` of a finished, uninterrupted run under ``out_dir`` whose ``args.json`` holds what
    :func:`~pynq_rl.host.agents.ppo.train` would run ``args`` (an :class:`~pynq_rl.host.agents.ppo.Args`) with, or
    None: what ``--reuse`` reads back instead of training."""
    import dataclasses
    import json

    from pynq_rl.host.agents.ppo import resolve_args

    wanted = json.loads(json.dumps(dataclasses.asdict(resolve_args(args))))
    for summary_path in sorted(out_dir.glob("*/summary.json"), reverse=True):  # newest run name first
        summary = json.loads(summary_path.read_text())
        saved = json.loads((summary_path.parent / "args.json").read_text())
        if not summary.get("interrupted") and saved == wanted:
            return summary
    return None


@contextlib.contextmanager
def run_lock(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` + ``.lock`` (blocking until another process lets go of it): one
    invocation at a time trains or reads back one (task, setting, seed). The lock goes with the process that holds
    it, so a killed run never leaves it taken."""
    import fcntl

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.with_name(out_dir.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_one(job: tuple[str, str, int, int, str, str, bool]) -> dict:
    """Train one (task, setting, seed), or read it back with ``reuse``, and return its row (module-level: a
    multiprocessing worker)."""
    from pynq_rl.host.agents import ppo

    task, setting, seed, steps, nn, runs, reuse = job
    overrides = dict(SETTINGS[setting])
    encoding = overrides.pop("encoding", None)
    args = ppo.args_for(
        task,
        seed=seed,
        total_timesteps=steps,
        nn=nn,
        progress=False,
        save_checkpoint=False,
        out_dir=str(Path(runs) / task / setting / str(seed)),
        **overrides,
    )
    with run_lock(Path(args.out_dir)):
        summary = finished_run(Path(args.out_dir), args) if reuse else None
        if summary is None:
            from gae_encodings import EncodedGae

            summary = ppo.train(args, gae=None if encoding is None else EncodedGae(encoding, seed))
    episode_steps, returns = _episodes(Path(summary["run_dir"]))
    return {
        "task": task,
        "setting": setting,
        "seed": seed,
        "steps": int(summary["global_step"]),
        "episodes": len(returns),
        "final_return_last20": float(summary["mean_return_last20"]),
        "first_return_first20": float(np.mean(returns[:20])) if returns.size else float("nan"),
        "auc": area_under_curve(episode_steps, returns),
        "bits_per_element": bits_per_element(setting),
        "steps_per_s": float(summary["sps"]),
        "wall[s]": round(float(summary["wall_time_s"]), 1),
        "run_dir": summary["run_dir"],
    }


def _episodes(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(global_step, return)`` of every episode of a run directory's ``episodes.csv``."""
    data = np.loadtxt(run_dir / "episodes.csv", delimiter=",", skiprows=1, ndmin=2)
    return data[:, 0], data[:, 1]


def gap_standard_error(finals: list[float], float_finals: list[float]) -> float | None:
    """Standard error of the difference of two means of final returns (each setting's seeds independent, unequal
    variances: Welch's), or None with fewer than two seeds on either side. A gap to float within about two of these
    is within the seed-to-seed spread."""
    if len(finals) < 2 or len(float_finals) < 2:
        return None
    return float(np.sqrt(np.var(finals, ddof=1) / len(finals) + np.var(float_finals, ddof=1) / len(float_finals)))


def summarize(task: str, rows: list[dict]) -> dict:
    """Means over seeds per setting, each setting's standing against float (ratio of final returns, share of float's
    improvement, the gap and its standard error) and q8's on one task (None without both)."""
    out: dict = {"task": task, "settings": {}}
    finals = {}
    for setting in dict.fromkeys(r["setting"] for r in rows):
        mine = [r for r in rows if r["setting"] == setting]
        finals[setting] = [r["final_return_last20"] for r in mine]
        out["settings"][setting] = {
            "final_return_mean": float(np.mean([r["final_return_last20"] for r in mine])),
            "final_return_std": float(np.std([r["final_return_last20"] for r in mine])),
            "auc_mean": float(np.mean([r["auc"] for r in mine])),
            "bits_per_element": mine[0]["bits_per_element"],
            "steps_per_s_mean": float(np.mean([r["steps_per_s"] for r in mine])),
        }
    initial = float(np.mean([r["first_return_first20"] for r in rows]))
    out["initial_return_first20"] = initial
    if "float" in out["settings"]:
        flt = out["settings"]["float"]["final_return_mean"]
        for setting, s in out["settings"].items():
            if setting != "float":
                s["over_float"] = s["final_return_mean"] / flt if flt > 0 else None
                s["share_of_float_improvement"] = (
                    (s["final_return_mean"] - initial) / (flt - initial) if flt != initial else None
                )
                s["gap_to_float"] = s["final_return_mean"] - flt
                s["gap_standard_error"] = gap_standard_error(finals[setting], finals["float"])
    if not {"float", "q8"} <= set(out["settings"]):
        out["q8_over_float"] = out["q8_share_of_float_improvement"] = None
        return out
    flt, q8 = out["settings"]["float"]["final_return_mean"], out["settings"]["q8"]["final_return_mean"]
    out["q8_over_float"] = q8 / flt if flt > 0 else None
    out["q8_share_of_float_improvement"] = (q8 - initial) / (flt - initial) if flt != initial else None
    return out


def seed_range(seeds: list[int]) -> str:
    """``"0-9"`` for consecutive seeds, else ``"0, 3, 7"``."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def title(result: dict) -> str:
    """The page's title: what ran, so the pages of several runs (the main one, a control, more seeds) differ."""
    seeds = result["seeds"]
    return (
        f"Continuous-control PPO on {', '.join(result['tasks'])}, seed{'s' if len(seeds) > 1 else ''} "
        f"{seed_range(seeds)}: {', '.join(result['settings'])}"
    )


def markdown(result: dict) -> str:
    """The results page: per-run table, per-task means, q8 against float, and the plots."""
    lines = [
        f"# {title(result)}",
        "",
        f"Commit `{result['environment'].get('git_commit', '?')}`, network backend `{result['nn']}`, "
        f"{result['jobs']} runs in parallel on a shared 2-core machine; seeds {result['seeds']}. "
        "CleanRL `ppo_continuous_action` defaults (1 env x 2048 steps, 10 epochs x 32 minibatches, lr 3e-4 "
        "annealed, gamma 0.99, lambda 0.95, observation normalization). Settings: "
        + "; ".join(f"**{k}** = {SETTING_NAMES[k]}" for k in result["settings"])
        + ". float, raw, q8-runs, q8-wrapper and the emulated encodings use CleanRL's reward normalization wrapper; "
        "q8 and float-dynamic use HEPPO's dynamic reward standardization instead.",
        "",
        "Final = mean return of the last 20 episodes; AUC = average episodic return over training (trapezoid "
        "over steps); steps/s include the environment, the networks and the GAE step.",
        "",
    ]
    for task in result["tasks"]:
        summary = result["summaries"].get(task)
        if summary is None:
            continue
        rows = [r for r in result["rows"] if r["task"] == task]
        lines += [
            f"## {task} ({rows[0]['steps']:,} steps per run)",
            "",
            "| setting | seed | final (last 20) | AUC | steps/s | episodes |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['setting']} | {r['seed']} | {r['final_return_last20']:.1f} | {r['auc']:.1f} | "
            f"{r['steps_per_s']:.0f} | {r['episodes']} |"
            for r in rows
        ]
        lines += [
            "",
            "| setting | bits per element | final, mean over seeds (std) | AUC, mean | steps/s, mean |",
            "|---|---:|---:|---:|---:|",
        ]
        for setting, s in summary["settings"].items():
            bits = "n/a" if s["bits_per_element"] is None else f"{s['bits_per_element']:g}"
            lines.append(
                f"| {SETTING_NAMES[setting]} | {bits} | {s['final_return_mean']:.1f} ({s['final_return_std']:.1f}) | "
                f"{s['auc_mean']:.1f} | {s['steps_per_s_mean']:.0f} |"
            )
        if "float" in summary["settings"]:
            lines.append("")
        for setting, s in summary["settings"].items():
            if "over_float" not in s:
                continue
            ratio, share, se = s["over_float"], s["share_of_float_improvement"], s["gap_standard_error"]
            lines.append(
                f"- {setting} against float: final return ratio "
                f"{'n/a (negative returns)' if ratio is None else f'{ratio:.1%}'}; share of float's "
                f"improvement over the first 20 episodes ({summary['initial_return_first20']:.1f}): "
                f"{'n/a' if share is None else f'{share:.1%}'}; gap {s['gap_to_float']:+.1f}"
                + ("" if se is None else f" +- {se:.1f} (standard error over seeds)")
                + "."
            )
        lines += ["", f"![{task} learning curves]({result['name']}_{task}.png)", ""]
    missing = [t for t in result["tasks"] if t not in result["summaries"]]
    if missing:
        lines += [f"Not run: {', '.join(missing)} ({result.get('missing_reason', 'not finished')}).", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the experiment; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_STEPS))
    parser.add_argument("--steps", nargs="*", default=[], metavar="TASK=N", help="steps per run for a task")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    parser.add_argument("--nn", default="numpy", choices=("numpy", "torch"))
    parser.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--name", default="ppo_continuous", help="stem of the result files")
    parser.add_argument("--runs", default="runs/ppo_continuous")
    parser.add_argument("--out", default="benchmarks/results")
    parser.add_argument("--reuse", action="store_true", help="read back finished runs with the same arguments")
    opts = parser.parse_args(argv)
    steps = dict(DEFAULT_STEPS)
    for item in opts.steps:
        task, _, n = item.partition("=")
        steps[task] = int(n)
    tasks = []
    for task in opts.tasks:
        try:
            import gymnasium as gym

            gym.make(task).close()
            tasks.append(task)
        except Exception as exc:  # noqa: BLE001 - a task gymnasium cannot make (no mujoco extra) is skipped, not fatal
            print(f"skipping {task}: {exc!r}", file=sys.stderr)
    jobs = [
        (task, setting, seed, steps[task], opts.nn, opts.runs, opts.reuse)
        for task in tasks
        for seed in opts.seeds
        for setting in opts.settings
    ]
    start = time.perf_counter()
    result = {
        "name": opts.name,
        "tasks": opts.tasks,
        "seeds": opts.seeds,
        "nn": opts.nn,
        "jobs": opts.jobs,
        "steps": steps,
        "settings": {k: SETTINGS[k] for k in opts.settings},
        "environment": environment(),
        "rows": [],
        "summaries": {},
        "missing_reason": "skipped: MuJoCo not installed or not finished",
    }
    out = Path(opts.out)
    with multiprocessing.get_context("spawn").Pool(opts.jobs) as pool:
        for row in pool.imap(run_one, jobs):
            result["rows"].append(row)
            print(
                f"{row['task']} {row['setting']} seed {row['seed']}: {row['final_return_last20']:.1f} "
                f"({row['steps_per_s']:.0f} steps/s)",
                flush=True,
            )
            task = row["task"]
            task_rows = [r for r in result["rows"] if r["task"] == task]
            if len(task_rows) == len(opts.settings) * len(opts.seeds):
                from pynq_rl.host.agents.plot import plot_runs

                result["summaries"][task] = summarize(task, task_rows)
                plot_runs(
                    [r["run_dir"] for r in task_rows],
                    out / f"{opts.name}_{task}.png",
                    title=f"PPO {task}: {', '.join(opts.settings)}, seeds {opts.seeds}",
                )
                result["wall[s]"] = round(time.perf_counter() - start, 1)
                write_results(out, opts.name, result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
