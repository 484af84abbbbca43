"""Prioritized-replay throughput of the emulated replay core against its software peers: samples/s, updates/s,
inserts/s on one full buffer of ``K**LEVELS`` transitions (default 16**5 = 2**20, the ZCU106 build), batch 256.

Every implementation holds the same priorities (uniform in [0.01, 1), ``alpha`` = 0.6 applied by each as it
would for a user) and runs in one process, interleaved repetition by repetition (the order of the
(implementation, operation) pairs is shuffled anew each repetition), so a noisy neighbour slows all of them
alike. torch and numba are pinned to one thread each (in one process their thread pools fight over the cores;
docs/design.md, Peer libraries for benchmarks). Results are medians over ``--repeats`` repetitions, with ratios
against cpprb's ``PrioritizedReplayBuffer`` (``cpprb``); each repetition times enough back-to-back calls to last
``--min-time`` seconds (calls per block calibrated over a quarter of that).
One call handles one batch of ``--batch`` transitions:

* sample: draw a stratified/proportional batch (the implementation's own random numbers, generation included);
* update: new float priorities for ``batch`` random indices (a fresh batch every call, from a pool of
  ``--pool`` pre-drawn batches, so repeated calls do not hit the same cache lines), ``**alpha`` included;
* update_hot: the same, but the same ``batch`` indices every call (their tree paths stay in cache): how PER
  updates are often micro-benchmarked, reported for comparison with such figures. The priorities alternate
  between two rows so that the leaves really change: re-applying identical priorities is several times faster in
  cpprb and is skipped leaf by leaf by the model's SET, so it would measure next to nothing;
* insert: new float priorities for ``batch`` consecutive indices of a ring that advances every call.

Implementations (``key``: what is timed):

* ``model_numba`` / ``model_numpy``: :class:`pynq_rl.overlay.models.replay.SumTree`, the bit-exact model the
  ``emu`` backend runs (the core's operations, no driver), through its compiled and its numpy path. sample =
  ``SumTree.sample(batch)`` (on-chip xorshift32 PRNG, stratified targets, K-ary descent: indices and leaf codes);
  update/insert = ``encode_priorities(p**alpha)`` then ``SumTree.set(indices, codes)``.
* ``driver_<board>``: the whole driver path in emulation, ``RLOverlay(backend="emu", board=...).replay``:
  ``update(indices, p)`` and ``sample(batch, beta)`` (with probabilities and importance weights) through the
  emulated registers and AXI DMA. Runs on boards whose core holds ``capacity`` leaves (uses the first
  ``capacity`` leaves when the core is larger).
* ``cpprb`` / ``cpprb_stratified``: cpprb's ``PrioritizedReplayBuffer`` (C++ sum and min segment trees)
  with a one-float ``obs`` field (cpprb needs one); ``sample(batch, beta)`` (indexes, IS weights and the gathered
  ``obs``), ``update_priorities(indexes, p)``, ``add(obs=..., priorities=p)``. ``cpprb_stratified`` passes
  ``stratified_sample=True``, the sampling scheme of the core.
* ``torchrl``: torchrl's ``PrioritizedReplayBuffer`` over a ``LazyTensorStorage`` (C++ sum/min segment trees),
  ``sample()`` with info, ``update_priority``, ``extend`` + ``update_priority``; recorded as unavailable, with the
  error text, where its extension does not load.
* ``numpy_sumtree``: a vectorized numpy binary sum tree in float64 (heap layout, root at 1): stratified sampling
  descends all ``batch`` targets together level by level; an update writes the leaves and recomputes each
  ancestor level from its children (no drift, duplicates are harmless).

The goal line: the driver on ``emu`` (the first ``driver_<board>`` row measured) samples at >= 2x and
updates at >= 1x ``cpprb``; the model alone is quoted beside it.

Before timing, each implementation is checked: the models bit-exactly against each other (same tree after the same
sets, same samples from the same PRNG state); the driver's samples against the model's for the same seed; the
numpy tree's samples against ``searchsorted`` on the float64 prefix sums of the same uniforms; cpprb's and
torchrl's indices to lie in range with finite weights in (0, 1].

Run: ``python benchmarks/replay_emu.py [--k 16 --levels 5] [--batch 256] [--repeats 7] [--out benchmarks/results]``.
Writes ``replay_emu.json`` and ``replay_emu.md`` under ``--out`` and prints the table; ``--render
benchmarks/results/replay_emu.json`` only re-renders a saved run (its goal line from its rows, then the ``.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, failed_rows, fmt_rate, seconds_per_call, write_results
from _replay_impls import ALPHA, BETA, P_MAX, P_MIN, Data, Impl, build_impls, make_data

OPS = ("sample", "update", "update_hot", "insert")
UNITS = {"sample": "samples/s", "update": "updates/s", "update_hot": "hot_updates/s", "insert": "inserts/s"}
BASELINE = "cpprb"
#: the goal is about the whole driver path on emu: the first ``driver_<board>`` row measured (the board whose core
#: holds the buffer, ZCU106 at 2**20 leaves); the bit-exact model alone is reported beside it
GOAL = {"key": "driver", "sample_ratio": 2.0, "update_ratio": 1.0}
MODEL_KEY = "model_numba"
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------------------------


def measure(impls: list[Impl], data: Data, repeats: int, min_time: float) -> list[dict]:
    """Fill, check, calibrate and time every implementation; return one row per implementation."""
    rows, live = [], []
    for impl in impls:
        row = {"key": impl.key, "implementation": impl.label}
        rows.append(row)
        if impl.prepare is None:
            row["status"] = f"unavailable: {impl.unavailable}"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                prep = impl.prepare(data)
                row["fill[s]"] = round(time.perf_counter() - start, 3)
                row["check"] = prep.check()
                per_call = {}
                for op, call in prep.ops.items():
                    call()  # warm-up (compilation, buffers)
                    per_call[op] = seconds_per_call(call, min_time / 4)
        except AssertionError as err:
            row.update(status=f"check failed: {err}", traceback=traceback.format_exc(limit=5))
            continue
        except Exception as err:  # noqa: BLE001 - recorded, not raised
            row.update(status=f"error: {type(err).__name__}: {err}", traceback=traceback.format_exc(limit=5))
            continue
        row.update(
            {
                "status": "ok",
                "note": prep.note,
                **prep.extra,
                "calls_per_repeat": {op: max(1, math.ceil(min_time / max(t, 1e-9))) for op, t in per_call.items()},
            }
        )
        row["cpu_share"] = []
        # thread CPU time / wall time of each timed block: below 1 when the scheduler ran something else
        for op in OPS:
            row[f"samples[{UNITS[op]}]"] = []
            live.append((prep, op, row))
    shuffler = random.Random(42)
    for _ in range(repeats):
        order = live[:]
        shuffler.shuffle(order)  # a new order each repetition: no pair always runs first or after the same one
        for prep, op, row in order:
            call, number = prep.ops[op], row["calls_per_repeat"][op]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cpu_start, start = time.thread_time(), time.perf_counter()
                for _ in range(number):
                    call()
                elapsed, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
            row[f"samples[{UNITS[op]}]"].append(number * data.batch / elapsed)
            row["cpu_share"].append(round(cpu / elapsed, 3))
    baseline = next((r for r in rows if r["key"] == BASELINE and r["status"] == "ok"), None)
    for row in rows:
        if row["status"] == "ok":
            for op in OPS:
                row[f"median[{UNITS[op]}]"] = statistics.median(row[f"samples[{UNITS[op]}]"])
    for row in rows:
        if row["status"] != "ok":
            continue
        for op in OPS:
            unit = UNITS[op]
            if baseline is not None:
                row[f"ratio_vs_{BASELINE}[{op}]"] = row[f"median[{unit}]"] / baseline[f"median[{unit}]"]
                # Each repetition times every pair back to back, so per-repetition ratios pair runs that saw
                # similar load; their median is a cross-check on the ratio of medians.
                row[f"ratio_vs_{BASELINE}_paired_median[{op}]"] = statistics.median(
                    a / b for a, b in zip(row[f"samples[{unit}]"], baseline[f"samples[{unit}]"])
                )
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------


def goal_text(rows: list[dict]) -> dict:
    by_key = {row["key"]: row for row in rows}
    model = next((row for row in rows if row["key"].startswith("driver_") and row["status"] == "ok"), {})
    base = by_key.get(BASELINE, {})
    if model.get("status") != "ok" or base.get("status") != "ok":
        return {
            **GOAL,
            "sample_ratio_measured": None,
            "update_ratio_measured": None,
            "hot_update_ratio_measured": None,
            "met": None,
            "text": f"the driver on emu vs `{BASELINE}`: not measured in this run.",
        }
    sample_ratio = model[f"ratio_vs_{BASELINE}[sample]"]
    update_ratio = model[f"ratio_vs_{BASELINE}[update]"]
    sample_ok, update_ok = sample_ratio >= GOAL["sample_ratio"], update_ratio >= GOAL["update_ratio"]
    parts = [
        f"samples/s: **{sample_ratio:.3g}x** `{BASELINE}` (goal >= {GOAL['sample_ratio']:g}x: "
        f"{'met' if sample_ok else 'NOT met'}; paired median "
        f"{model[f'ratio_vs_{BASELINE}_paired_median[sample]']:.3g}x)",
        f"updates/s: **{update_ratio:.3g}x** `{BASELINE}` (goal >= {GOAL['update_ratio']:g}x: "
        f"{'met' if update_ok else 'NOT met'}; paired median "
        f"{model[f'ratio_vs_{BASELINE}_paired_median[update]']:.3g}x)",
    ]
    hot_ratio = model[f"ratio_vs_{BASELINE}[update_hot]"]
    parts.append(
        f"with one repeated update batch (cache-hot, as PER updates are often micro-benchmarked) "
        f"{hot_ratio:.3g}x `{BASELINE}` ({'at or above' if hot_ratio >= GOAL['update_ratio'] else 'below'}"
        " its rate)"
    )
    strat = by_key.get("cpprb_stratified", {})
    if strat.get("status") == "ok":
        parts.append(
            "against `cpprb_stratified` "
            f"{model['median[samples/s]'] / strat['median[samples/s]']:.3g}x samples/s and "
            f"{model['median[updates/s]'] / strat['median[updates/s]']:.3g}x updates/s"
        )
    alone = by_key.get(MODEL_KEY, {})
    if alone.get("status") == "ok":
        parts.append(
            f"the bit-exact model alone (`{MODEL_KEY}`, no driver or bus) "
            f"{alone[f'ratio_vs_{BASELINE}[sample]']:.3g}x / {alone[f'ratio_vs_{BASELINE}[update]']:.3g}x"
        )
    return {
        **GOAL,
        "key": model["key"],
        "sample_ratio_measured": sample_ratio,
        "update_ratio_measured": update_ratio,
        "hot_update_ratio_measured": hot_ratio,
        "met": sample_ok and update_ok,
        "text": f"`{model['key']}` (the whole driver path on emu, which the goal measures): " + "; ".join(parts) + ".",
    }


def markdown(result: dict) -> str:
    env, args = result["environment"], result["arguments"]
    info = result["info"]
    versions = "".join(f", {name} {info[name]}" for name in ("cpprb", "torchrl") if name in info)
    lines = [
        "# Prioritized replay throughput: emulated core vs software peers",
        "",
        f"`benchmarks/replay_emu.py` on {env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); "
        f"Python {env['python']}, numpy {env['numpy']}, numba {env['numba']}, torch {env['torch']}{versions}; "
        f"{env['processor']}, {env['cpu_count']} CPUs; torch and numba pinned to 1 thread; load average "
        f"{result['load_average_before']} before, {result['load_average_after']} after.",
        "",
        f"One full buffer of {args['capacity']} transitions (K={args['k']}, LEVELS={args['levels']}), batch "
        f"{args['batch']}, alpha={ALPHA}, beta={BETA}, priorities uniform in [{P_MIN}, {P_MAX}). Rate = batch / "
        f"time per call; median of {args['repeats']} interleaved repetitions, each >= {args['min_time']} s of "
        f"back-to-back calls per operation. Ratios = median / median of `{BASELINE}`.",
        "",
        "| implementation | samples/s | updates/s | updates/s, repeated batch | inserts/s | samples vs cpprb "
        "| updates vs cpprb | repeated-batch updates vs cpprb | inserts vs cpprb |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        name = f"{row['implementation']} (`{row['key']}`)"
        if row["status"] != "ok":
            status, _, cause = row["status"].partition(" (cause: ")
            lines.append(
                f"| {name} | {status}{' (cause: see the notes)' if cause else ''} |" + " |" * (2 * len(OPS) - 1)
            )
            continue
        rates = " | ".join(fmt_rate(row[f"median[{UNITS[op]}]"]) for op in OPS)
        ratios = " | ".join(
            f"{row[f'ratio_vs_{BASELINE}[{op}]']:.3g}x" if f"ratio_vs_{BASELINE}[{op}]" in row else "" for op in OPS
        )
        lines.append(f"| {name} | {rates} | {ratios} |")
    lines += [
        "",
        "## Goal",
        "",
        result["goal"]["text"],
        "",
        "## Spread (min-max over repetitions)",
        "",
        "| implementation | samples/s | updates/s | updates/s, repeated batch | inserts/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        if row["status"] == "ok":
            spread = " | ".join(
                f"{fmt_rate(min(row[f'samples[{UNITS[op]}]']))}-{fmt_rate(max(row[f'samples[{UNITS[op]}]']))}"
                for op in OPS
            )
            lines.append(f"| `{row['key']}` | {spread} |")
    lines += ["", "## Checks and notes", ""]
    for row in result["rows"]:
        if row["status"] == "ok":
            lines.append(f"- `{row['key']}`: {row['note']}. Check: {row['check']}.")
    for key, value in info.items():
        lines.append(f"- {key}: {value}")
    shares = [share for row in result["rows"] for share in row.get("cpu_share", [])]
    if shares:
        lines.append(
            f"- Load: the timing thread got a median {statistics.median(shares):.0%} of a CPU during the "
            f"timed blocks (min {min(shares):.0%}; thread CPU time / wall time), load average "
            f"{result['load_average_before'][0]} -> {result['load_average_after'][0]}."
        )
    lines += [
        f"- The machine is shared ({env['cpu_count']} CPUs here): compare rows within one run; the spread "
        "table and the per-repetition samples in the JSON show the noise.",
        "- `update_hot` alternates two sets of priorities on the same indices. Re-applying one batch with "
        "identical priorities (a common micro-benchmark, and the likely source of update rates of tens of M/s) "
        "is several times faster in cpprb and skipped leaf by leaf by the model's SET, so it measures a "
        "tree that does not change.",
        "- What one call returns differs: the models return indices and leaf codes (probabilities follow from "
        "the total), the driver and cpprb also compute importance weights, cpprb also gathers the stored "
        "`obs`; see each note.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--k", type=int, default=16, help="sum-tree fan-out K of the emulated core")
    parser.add_argument("--levels", type=int, default=5, help="levels below the root; capacity = K**LEVELS")
    parser.add_argument("--batch", type=int, default=256, help="transitions per sample/update/insert call")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repetitions per implementation")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds of back-to-back calls per repetition")
    parser.add_argument(
        "--pool", type=int, default=1024, help="distinct pre-drawn update batches, used in turn (at least 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the priorities and update batches")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="output directory")
    parser.add_argument("--render", type=Path, default=None, help="only re-render this saved replay_emu.json")
    args = parser.parse_args(argv)
    if args.render:  # no measuring: the goal line anew from the saved rows, then both files beside the JSON
        result = json.loads(args.render.read_text())
        result["goal"] = goal_text(result["rows"])
        write_results(args.render.parent, args.render.stem, result, markdown(result))
        return result
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.pool < 1:
        parser.error("--pool must be >= 1")
    from pynq_rl.overlay.spec import ReplaySpec

    try:
        capacity = ReplaySpec(k=args.k, levels=args.levels).capacity
    except ValueError as err:
        parser.error(str(err))
    if not 1 <= args.batch <= capacity:
        parser.error(f"--batch must be in [1, capacity={capacity}], not {args.batch}")

    import numba
    import torch

    torch.set_num_threads(1)
    numba.set_num_threads(1)

    started = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    impls, info = build_impls(args.k, args.levels)
    data = make_data(capacity, args.batch, args.pool, args.seed)
    rows = measure(impls, data, args.repeats, args.min_time)
    result = {
        "benchmark": "replay_emu",
        "unit": "transitions/s (batch per call)",
        "baseline": BASELINE,
        "environment": environment(torch=True),
        "info": info,
        "arguments": {
            "k": args.k,
            "levels": args.levels,
            "capacity": capacity,
            "batch": args.batch,
            "repeats": args.repeats,
            "min_time": args.min_time,
            "pool": args.pool,
            "seed": args.seed,
            "alpha": ALPHA,
            "beta": BETA,
            "priority_range": [P_MIN, P_MAX],
        },
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
        "goal": goal_text(rows),
        "wall[s]": None,
    }
    result["wall[s]"] = round(time.perf_counter() - started, 2)
    write_results(args.out, "replay_emu", result, markdown(result))
    return result


if __name__ == "__main__":
    sys.exit(failed_rows(main()))
