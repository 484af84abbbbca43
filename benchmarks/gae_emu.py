"""GAE throughput of the emulated core against its software peers, in elements/s (one element = one (t, env) pair).

Every implementation runs in one process on the same data (standard-normal rewards and values, 1% dones,
gamma=0.99, lambda=0.95), interleaved repetition by repetition, so a noisy neighbour slows all of them alike.
torch and numba are pinned to one thread each (in one process their thread pools fight over the cores;
docs/design.md, Peer libraries for benchmarks). Results are medians over ``--repeats`` repetitions, with ratios
against the CleanRL-style numpy loop (``cleanrl_numpy``); each repetition times enough back-to-back calls to last
``--min-time`` seconds.

Implementations (``key``: what is timed):

* ``model_numba`` / ``model_numpy``: :func:`pynq_rl.overlay.models.gae.gae_fixed`, the bit-exact model of the core,
  on Q15.16 integer codes quantized once outside the timed region (the kernel, i.e. what the emulated core does
  per operation), through its numba and its numpy path.
* ``driver_<board>_raw`` / ``driver_<board>_q8runs`` / ``driver_<board>_q8block``: the whole driver path in
  emulation, ``RLOverlay(backend="emu", board=...).gae.compute(..., quantize=False / "runs" / "block")``:
  validation, encoding (q8-runs, the default 8-bit mode: a scale and an offset per lane and run of 32 records; q8
  block: one per operation), LANES-wide batching through the emulated AXI DMA, decoding to float32.
* ``cleanrl_numpy``: the ``lastgaelam`` loop of cleanrl/ppo.py in numpy float32, vectorized over envs.
* ``torchrl_gae`` / ``torchrl_vec_gae``: torchrl's ``generalized_advantage_estimate`` and
  ``vec_generalized_advantage_estimate`` on float32 tensors already in torchrl's layout ``[N, T, 1]`` (time at
  dim -2, ``done = terminated``); the layout change is made once outside the timed region.
* ``python_loop``: pure Python floats, loop over envs then backward over t, on lists built outside the timed
  region. Above ``--python-max-elements`` it runs on the first envs only (rate per element processed; the note
  says how many).
* ``numba_float64``: the same loop as ``cleanrl_numpy`` compiled with numba in float64 (the fast float peer).

Before timing, each output is checked against a float64 reference (the recursion written out here, independent of
the package): float peers within 1e-4, raw fixed point within 1e-3, q8 modes within the model's own ``error_bound`` of
the codes sent. The largest |error| over advantages and returns is recorded.

Run: ``python benchmarks/gae_emu.py [--sizes 64x1024,1024x1024] [--repeats 7] [--out benchmarks/results]``.
Writes ``gae_emu.json`` and ``gae_emu.md`` under ``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, failed_rows, fmt_rate, write_results
from _gae_impls import BASELINE, DONE_PROB, GAMMA, LAM, Impl, build_impls, make_data, reference_gae

GOAL = {"key": "model_numba", "size": "64x1024", "ratio": 20.0}
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """``"64x1024,1024x1024"`` -> [(N, T), ...] (N envs, T steps)."""
    sizes = []
    for item in text.split(","):
        n, _, t = item.strip().lower().partition("x")
        if not n.isdigit() or not t.isdigit() or int(n) < 1 or int(t) < 1:
            raise argparse.ArgumentTypeError(f"sizes must look like 64x1024 (N envs x T steps), not {item!r}")
        sizes.append((int(n), int(t)))
    return sizes


def measure_size(impls: list[Impl], n_envs: int, n_steps: int, repeats: int, min_time: float, seed: int) -> list[dict]:
    """Check, calibrate and time every implementation on one data set; return one row per implementation."""
    data = make_data(n_envs, n_steps, seed)
    ref_adv, ref_ret = reference_gae(data["rewards"], data["values"], data["dones"], GAMMA, LAM)
    size = f"{n_envs}x{n_steps}"
    rows, live = [], []
    for impl in impls:
        row = {"key": impl.key, "implementation": impl.label, "size": size, "n_envs": n_envs, "n_steps": n_steps}
        rows.append(row)
        if impl.prepare is None:
            row["status"] = f"unavailable: {impl.unavailable}"
            continue
        try:
            prep = impl.prepare(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = prep.call()  # warm-up (numba compile, buffer allocation) and the output to check
                start = time.perf_counter()
                prep.call()
                once = time.perf_counter() - start
            adv, ret = prep.outputs(result)
            cols = slice(0, prep.n_envs)
            error = float(max(np.abs(adv - ref_adv[:, cols]).max(), np.abs(ret - ref_ret[:, cols]).max()))
            tol = prep.tolerance() if callable(prep.tolerance) else prep.tolerance
        except Exception as err:  # noqa: BLE001 - recorded, not raised
            row["status"] = f"error: {type(err).__name__}: {err}"
            row["traceback"] = traceback.format_exc(limit=5)
            continue
        number = max(1, math.ceil(min_time / max(once, 1e-9)))
        row.update(
            {
                "status": "ok" if error <= tol else "check failed",
                "max_abs_error": error,
                "tolerance": tol,
                "check_passed": error <= tol,
                "elements_per_call": prep.elements,
                "calls_per_repeat": number,
                "note": prep.note,
                **prep.extra,
                "samples[elements/s]": [],
            }
        )
        live.append((impl, prep, row))
    for rep in range(repeats):
        shift = rep % max(len(live), 1)  # rotate the order so no implementation always runs first
        for _impl, prep, row in live[shift:] + live[:shift]:
            number = row["calls_per_repeat"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                for _ in range(number):
                    prep.call()
                elapsed = time.perf_counter() - start
            row["samples[elements/s]"].append(number * prep.elements / elapsed)
    for row in rows:
        if row.get("samples[elements/s]"):
            row["median[elements/s]"] = statistics.median(row["samples[elements/s]"])
            row["median_call[ms]"] = 1e3 * row["elements_per_call"] / row["median[elements/s]"]
    baseline = next((r for r in rows if r["key"] == BASELINE and "median[elements/s]" in r), None)
    for row in rows:
        if baseline is not None and "median[elements/s]" in row:
            row["ratio_vs_cleanrl_numpy"] = row["median[elements/s]"] / baseline["median[elements/s]"]
            # Each repetition times every implementation back to back, so per-repetition ratios pair runs that
            # saw the same machine load; their median is a cross-check on the ratio of medians.
            row["ratio_vs_cleanrl_numpy_paired_median"] = statistics.median(
                a / b for a, b in zip(row["samples[elements/s]"], baseline["samples[elements/s]"])
            )
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    env, args = result["environment"], result["arguments"]
    lines = [
        "# GAE throughput: emulated core vs software peers",
        "",
        f"`benchmarks/gae_emu.py` on {env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); "
        f"Python {env['python']}, numpy {env['numpy']}, numba {env['numba']}, torch {env['torch']}"
        + (f", torchrl {result['info']['torchrl']}" if "torchrl" in result["info"] else "")
        + f"; {env['cpu_count']} CPUs; torch and numba pinned to 1 thread.",
        "",
        f"Elements/s = T x N per call / time per call; median of {args['repeats']} interleaved repetitions, each "
        f">= {args['min_time']} s of back-to-back calls. Ratio = median / median of `{BASELINE}` at the same size. "
        f"Error = max |output - float64 reference| over advantages and returns (gamma={GAMMA}, lambda={LAM}, "
        f"standard-normal rewards and values, {DONE_PROB:.0%} dones, seed {args['seed']}).",
        "",
        "| implementation | size (NxT) | median elements/s | ratio vs CleanRL numpy | max abs error | tolerance "
        "| min-max elements/s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        name = f"{row['implementation']} (`{row['key']}`)"
        if "median[elements/s]" not in row:
            lines.append(f"| {name} | {row['size']} | {row['status']} | | | | |")
            continue
        ratio = row.get("ratio_vs_cleanrl_numpy")
        err = f"{row['max_abs_error']:.2e}" + ("" if row["check_passed"] else " **FAIL**")
        lines.append(
            f"| {name} | {row['size']} | {fmt_rate(row['median[elements/s]'])} | "
            f"{'' if ratio is None else f'{ratio:.3g}x'} | {err} | {row['tolerance']:.2e} | "
            f"{fmt_rate(min(row['samples[elements/s]']))}-{fmt_rate(max(row['samples[elements/s]']))} |"
        )
    goal = result["goal"]
    lines += ["", "## Goal", "", goal["text"], "", "## Notes", ""]
    seen = set()
    for row in result["rows"]:
        if row.get("note") and (row["key"], row["note"]) not in seen:
            seen.add((row["key"], row["note"]))
            lines.append(f"- `{row['key']}` ({row['size']}): {row['note']}")
    for key, value in result["info"].items():
        lines.append(f"- {key}: {value}")
    lines += [
        f"- The machine may be shared ({env['cpu_count']} CPUs here): compare rows within one run; the "
        "min-max column and the per-repetition samples in the JSON show the spread.",
        "- `driver_*` rows also carry, in the JSON, the modeled compute phase of the real core "
        "(`modeled_core_cycles` at `fclk[mhz]`, DMA excluded); that is not a measurement.",
    ]
    return "\n".join(lines) + "\n"


def goal_text(rows: list[dict]) -> dict:
    row = next((r for r in rows if r["key"] == GOAL["key"] and r["size"] == GOAL["size"]), None)
    ratio = None if row is None else row.get("ratio_vs_cleanrl_numpy")
    if ratio is None:
        text = f"`{GOAL['key']}` vs `{BASELINE}` at {GOAL['size']}: not measured in this run."
    else:
        verdict = "met" if ratio >= GOAL["ratio"] else "NOT met"
        text = (
            f"`{GOAL['key']}` vs `{BASELINE}` at {GOAL['size']}: **{ratio:.3g}x** "
            f"(goal >= {GOAL['ratio']:g}x: {verdict}); median of the per-repetition ratios "
            f"{row['ratio_vs_cleanrl_numpy_paired_median']:.3g}x."
        )
    return {**GOAL, "measured_ratio": ratio, "text": text}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--sizes", type=parse_sizes, default="64x1024,1024x1024", help="comma-separated NxT (N envs, T steps)"
    )
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repetitions per implementation")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds of back-to-back calls per repetition")
    parser.add_argument(
        "--python-max-elements",
        type=int,
        default=1 << 18,
        help="pure-Python loop runs on the first envs up to this many elements",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the input data")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="output directory")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    import numba
    import torch

    torch.set_num_threads(1)
    numba.set_num_threads(1)

    started = time.perf_counter()
    impls, info = build_impls(args.python_max_elements)
    rows = []
    for n_envs, n_steps in args.sizes:
        rows += measure_size(impls, n_envs, n_steps, args.repeats, args.min_time, args.seed)
    result = {
        "benchmark": "gae_emu",
        "unit": "elements/s (T x N per call)",
        "baseline": BASELINE,
        "environment": environment(torch=True),
        "info": info,
        "arguments": {
            "sizes": [f"{n}x{t}" for n, t in args.sizes],
            "repeats": args.repeats,
            "min_time": args.min_time,
            "python_max_elements": args.python_max_elements,
            "seed": args.seed,
            "gamma": GAMMA,
            "lambda": LAM,
            "done_prob": DONE_PROB,
        },
        "rows": rows,
        "goal": goal_text(rows),
        "wall[s]": None,
    }
    result["wall[s]"] = round(time.perf_counter() - started, 2)
    write_results(args.out, "gae_emu", result, markdown(result))
    return result


if __name__ == "__main__":
    sys.exit(failed_rows(main()))
