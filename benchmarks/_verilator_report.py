"""The report of ``benchmarks/verilator_speed.py``: what it measures on (boards, cores), the goals, the figures derived
from the measured rows (ratios, rates, the rollout estimate), the goals judged met or not, and the Markdown tables.

The script measures and writes rows; this module only reads them, so a report can be re-rendered from a saved
``verilator.json`` (``markdown(json.load(...))``).
"""

from __future__ import annotations

import argparse

from _common import fmt_rate

CORES = ("gae", "replay", "parsa")
BOARDS = ("Pynq-Z2", "ZCU106")
START_BOARD = "Pynq-Z2"
ROLLOUT = (64, 1024)
"""the GAE compute the rollout goal is stated for: (envs, steps)"""
GOALS = {
    "pynqz2_core[cycles/s]": 500_000,
    "zcu106[cycles/s]": 100_000,
    "register[us]": 20.0,
    "rollout[s]": 0.5,
    "cold_start[s]": 180.0,
    "cached_start[s]": 2.0,
}


def slug(board: str) -> str:
    return board.lower().replace("-", "")


# ---------------------------------------------------------------------------------------------------------------
# Derived figures and goals
# ---------------------------------------------------------------------------------------------------------------


def find(rows: list[dict], key: str) -> dict | None:
    return next((row for row in rows if row["key"] == key), None)


def measured(row: dict | None, name: str) -> float | None:
    return None if row is None or row.get("status") != "ok" else row.get(name)


def derive(rows: list[dict], args: argparse.Namespace) -> list[dict]:
    """Ratios verilator / rtl (same calls; streams; register costs) and the GAE rollout rows."""
    for row in rows:
        if row["section"] == "rate" and row["backend"] == "rtl":
            same = find(rows, f"rate_verilator_{slug(row['board'])}_{row['cores']}_small")
            v, r = measured(same, "median[cycles/s]"), measured(row, "median[cycles/s]")
            if v is not None and r is not None:
                row["ratio_verilator_over_rtl"] = same["ratio_verilator_over_rtl"] = v / r
        if row["section"] == "register" and row["backend"] == "rtl":
            same = find(rows, row["key"].replace("_rtl_", "_verilator_"))
            v, r = measured(same, "median[us]"), measured(row, "median[us]")
            if v is not None and r is not None:
                row["ratio_rtl_over_verilator"] = same["ratio_rtl_over_verilator"] = r / v
    v_stream = find(rows, "stream_verilator_pynqz2_replay_update")
    r_stream = find(rows, "stream_rtl_pynqz2_replay_update")
    v, r = measured(v_stream, "median[MiB/s]"), measured(r_stream, "median[MiB/s]")
    if v is not None and r is not None:
        r_stream["ratio_verilator_over_rtl"] = v_stream["ratio_verilator_over_rtl"] = v / r
    gae = find(rows, "rate_verilator_pynqz2_gae_large")
    envs, steps = args.work.gae
    rollout = {
        "key": "rollout_verilator_pynqz2",
        "section": "rollout",
        "backend": "verilator",
        "board": START_BOARD,
        "size": f"{envs}x{steps}",
        "status": gae["status"] if gae else "not run",
    }
    if measured(gae, "median[s/round]") is not None:
        rollout.update(
            {
                "median[s]": gae["median[s/round]"],
                "samples[s]": gae["samples[s/round]"],
                "cycles": gae["cycles_per_round"],
                "source": gae["key"],
            }
        )
    rtl_gae = find(rows, "rate_rtl_pynqz2_gae_small")
    rtl_rollout = {
        "key": "rollout_rtl_pynqz2",
        "section": "rollout",
        "backend": "rtl",
        "board": START_BOARD,
        "size": f"{envs}x{steps}",
        "status": "ok",
    }
    rate = measured(rtl_gae, "median[cycles/s]")
    if rate is None:
        rtl_rollout["status"] = rtl_gae["status"] if rtl_gae else "unavailable: not run"
    elif "cycles" not in rollout:
        rtl_rollout["status"] = f"unavailable: no verilator cycle count to scale ({rollout['status']})"
    else:
        rtl_rollout.update(
            {
                "estimated[s]": rollout["cycles"] / rate,
                "cycles": rollout["cycles"],
                "measured_size": "x".join(map(str, args.rtl_work.gae)),
                "measured_median[s]": rtl_gae["median[s/round]"],
                "source": rtl_gae["key"],
            }
        )
    return rows + [rollout, rtl_rollout]


def goal(
    name: str,
    text: str,
    value: float | None,
    limit: float,
    at_least: bool,
    unit: str,
    where: str = "",
    why_not: str = "",
) -> dict:
    """One goal: the measured ``value`` against ``limit`` (``at_least``: value >= limit, else value <= limit)."""
    met = None if value is None else (value >= limit if at_least else value <= limit)

    def show(x: float) -> str:
        return f"{fmt_rate(x)} {unit}" if unit == "cycles/s" else f"{x:.3g} {unit}"

    bound = f"{'>=' if at_least else '<='} {show(limit)}"
    if met is None:
        line = f"{text}: goal {bound}: not measured" + (f" ({why_not})" if why_not else "") + "."
    else:
        line = f"{text}: **{show(value)}**{where} (goal {bound}): " + ("**met**." if met else "**NOT met**.")
    return {"goal": name, "value": value, "limit": limit, "at_least": at_least, "unit": unit, "met": met, "text": line}


def worst(rows: list[dict], keys: list[str], name: str, lowest: bool) -> tuple[float | None, str]:
    """The lowest (``lowest``) or highest ``name`` over the rows ``keys`` and where it is; None if any is missing."""
    found = [(measured(find(rows, key), name), key) for key in keys]
    if not found or any(value is None for value, _ in found):
        return None, ""
    value, key = (min if lowest else max)(found)
    return value, f" (worst: `{key}`)"


def goals(rows: list[dict], args: argparse.Namespace) -> list[dict]:
    """Every goal of the module docstring, evaluated on this run's rows."""
    z2 = worst(rows, [f"rate_verilator_pynqz2_{c}_large" for c in CORES], "median[cycles/s]", True)
    zcu = worst(rows, [f"rate_verilator_zcu106_{c}_large" for c in (*CORES, "board")], "median[cycles/s]", True)
    register = worst(rows, ["register_verilator_read", "register_verilator_write"], "median[us]", False)
    rollout, cold, cached = (
        find(rows, key) for key in ("rollout_verilator_pynqz2", "start_verilator_cold", "start_verilator_cached")
    )
    at_size = tuple(args.work.gae) == ROLLOUT
    return [
        goal(
            "pynqz2_cores",
            "Pynq-Z2 cores alone on verilator while working, the slowest",
            z2[0],
            GOALS["pynqz2_core[cycles/s]"],
            True,
            "cycles/s",
            z2[1],
            "a Pynq-Z2 core's row is missing",
        ),
        goal(
            "zcu106",
            "ZCU106 build on verilator while working (each core alone, the whole board), the slowest",
            zcu[0],
            GOALS["zcu106[cycles/s]"],
            True,
            "cycles/s",
            zcu[1],
            "a ZCU106 row is missing",
        ),
        goal(
            "register",
            "one register access from Python on verilator (PYNQ MMIO read or write), the slower median",
            register[0],
            GOALS["register[us]"],
            False,
            "us",
            register[1],
            "no verilator register rows",
        ),
        goal(
            "rollout",
            f"gae.compute of {ROLLOUT[0]} envs x {ROLLOUT[1]:,} steps on the Pynq-Z2 build "
            "(verilator, q8-runs), median wall",
            measured(rollout, "median[s]") if at_size else None,
            GOALS["rollout[s]"],
            False,
            "s",
            why_not=rollout["status"] if at_size else f"this run's --gae is {args.work.gae[0]}x{args.work.gae[1]}",
        ),
        goal(
            "cold_start",
            "cold start: an empty cache, the Pynq-Z2 board's three cores converted and built, in a fresh process",
            measured(cold, "wall[s]"),
            GOALS["cold_start[s]"],
            False,
            "s",
            why_not=cold["status"],
        ),
        goal(
            "cached_start",
            "cached start: the warm cache, a fresh process, median",
            measured(cached, "median_wall[s]"),
            GOALS["cached_start[s]"],
            False,
            "s",
            why_not=cached["status"],
        ),
    ]


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------


def _rate(row: dict | None) -> str:
    value = measured(row, "median[cycles/s]")
    if value is None:
        return "" if row is None or row["status"] == "ok" else _short_status(row["status"])
    return fmt_rate(value)


def _short_status(status: str) -> str:
    """``not run (--flag)`` for a row skipped by an option, else the status's first word (``error``...)."""
    return status.partition(": ")[2] if status.startswith("unavailable: not run") else status.split(":")[0]


def _spread(row: dict | None, name: str = "cycles/s") -> str:
    samples = (row or {}).get(f"samples[{name}]") or []
    return f"{fmt_rate(min(samples))}-{fmt_rate(max(samples))}" if samples else ""


def _ratio(row: dict | None, name: str) -> str:
    value = (row or {}).get(name)
    return "" if value is None else f"{value:,.0f}x" if value >= 10 else f"{value:.3g}x"


def rate_table(rows: list[dict]) -> list[str]:
    lines = [
        "| board | cores | verilator: round | cycles/s (median) | min-max | rtl-size round | verilator "
        "cycles/s | rtl cycles/s | verilator / rtl | model clock, idle buses |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for board in BOARDS:
        for cores in (*CORES, "board"):
            large = find(rows, f"rate_verilator_{slug(board)}_{cores}_large")
            small = find(rows, f"rate_verilator_{slug(board)}_{cores}_small")
            rtl = find(rows, f"rate_rtl_{slug(board)}_{cores}_small")
            clocks = [
                find(rows, f"clock_verilator_{slug(board)}_{c}") for c in ((cores,) if cores != "board" else CORES)
            ]
            clock = " / ".join(_rate(c) for c in clocks if c is not None)
            rates = [measured(c, "median[cycles/s]") for c in clocks]
            if cores == "board" and rates and None not in rates:  # every model ticks every board cycle
                clock += f"; together {fmt_rate(1 / sum(1 / r for r in rates))}"
            if large is None:
                continue
            lines.append(
                f"| {board} | {'all three, in turn' if cores == 'board' else cores} | {large['round']} | "
                f"{_rate(large)} | {_spread(large)} | {(small or {}).get('round', '')} | {_rate(small)} | "
                f"{_rate(rtl)} | "
                f"{_ratio(rtl, 'ratio_verilator_over_rtl')} | {clock} |"
            )
    return lines


def register_table(rows: list[dict]) -> list[str]:
    lines = [
        "| backend | access | median us / access | min-max us | simulated cycles / access | rtl / verilator |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row["section"] != "register":
            continue
        if row["status"] != "ok":
            lines.append(f"| {row.get('backend', row['key'])} | | {row['status']} | | | |")
            continue
        samples = row["samples[us]"]
        lines.append(
            f"| {row['backend']} ({row['board']}) | `{row['access']}` ({row['register']}) | "
            f"{row['median[us]']:.3g} | {min(samples):.3g}-{max(samples):.3g} | "
            f"{row['cycles_per_access']:.3g} | {_ratio(row, 'ratio_rtl_over_verilator')} |"
        )
    return lines


def stream_table(rows: list[dict]) -> list[str]:
    lines = [
        "| backend | transfer (Pynq-Z2) | payload bytes (DMA, both ways) | median wall [s] | MiB/s | min-max "
        "MiB/s | simulated cycles | bytes / cycle | verilator / rtl |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row["section"] != "stream":
            continue
        if measured(row, "median[MiB/s]") is None:
            lines.append(f"| {row['backend']} | {row.get('transfer', '')} | {row['status']} | | | | | | |")
            continue
        samples = row["samples[MiB/s]"]
        lines.append(
            f"| {row['backend']} | {row['transfer']} | {row['bytes_per_round']:,} | "
            f"{row['median[s/round]']:.3g} | {row['median[MiB/s]']:.3g} | "
            f"{min(samples):.3g}-{max(samples):.3g} | {row['cycles_per_round']:,} | "
            f"{row['bytes_per_round'] / max(row['cycles_per_round'], 1):.3g} | "
            f"{_ratio(row, 'ratio_verilator_over_rtl')} |"
        )
    return lines


def rollout_table(rows: list[dict], fclk_mhz: float) -> list[str]:
    lines = [
        "| backend | gae.compute (Pynq-Z2, q8-runs) | wall [s] | simulated cycles | "
        f"the board's time at {fclk_mhz:g} MHz |",
        "|---|---|---:|---:|---:|",
    ]
    v, r = find(rows, "rollout_verilator_pynqz2"), find(rows, "rollout_rtl_pynqz2")
    if measured(v, "median[s]") is not None:
        lines.append(
            f"| verilator | {v['size']} | {v['median[s]']:.3g} (median; {min(v['samples[s]']):.3g}-"
            f"{max(v['samples[s]']):.3g}) | {v['cycles']:,} | {v['cycles'] / fclk_mhz / 1e3:.3g} ms |"
        )
    else:
        lines.append(f"| verilator | {v['size']} | {v['status']} | | |")
    if measured(r, "estimated[s]") is not None:
        estimate = r["estimated[s]"]
        shown = f"{estimate:,.0f}" if estimate >= 100 else f"{estimate:.3g}"
        lines.append(
            f"| rtl | {r['size']} | ~{shown} (estimate: those cycles at rtl's rate measured on "
            f"{r['measured_size']}, {r['measured_median[s]']:.3g} s a call) | {r['cycles']:,} | |"
        )
    else:
        lines.append(f"| rtl | {r['size']} | {r['status']} | | |")
    return lines


def start_table(rows: list[dict]) -> list[str]:
    lines = ["| start (Pynq-Z2, all three cores, fresh process) | wall [s] | parts [s] |", "|---|---:|---|"]
    for key in ("start_verilator_cold", "start_verilator_cached", "start_rtl"):
        row = find(rows, key)
        label = {
            "start_verilator_cold": "verilator, cold (empty cache)",
            "start_verilator_cached": "verilator, cached (median)",
            "start_rtl": "rtl (median)",
        }[key]
        if row["status"] != "ok":
            lines.append(f"| {label} | {row['status']} | |")
            continue
        if key.endswith("cold"):
            parts = ", ".join(
                f"{c} convert {row[f'{c}_convert[s]']:.1f} + build {row[f'{c}_build[s]']:.1f}" for c in CORES
            )
            lines.append(
                f"| {label} | {row['wall[s]']:.1f} | import {row['import[s]']:.2f}; {parts}; overlay "
                f"{row['overlay[s]']:.2f} |"
            )
        else:
            walls = [s["wall[s]"] for s in row["samples"]]
            lines.append(
                f"| {label} | {row['median_wall[s]']:.2f} ({min(walls):.2f}-{max(walls):.2f}, "
                f"{len(walls)} starts) | import {row['median_import[s]']:.2f}, overlay "
                f"{row['median_overlay[s]']:.2f}, the rest interpreter start and exit |"
            )
    return lines


def markdown(result: dict) -> str:
    env, args, info, rows = result["environment"], result["arguments"], result["info"], result["rows"]
    lines = [
        "# The verilator backend's speed, beside rtl",
        "",
        f"`benchmarks/verilator_speed.py` on {env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); "
        f"{env['processor']}, {env['cpu_count']} CPUs (shared: 1-min load {env['loadavg_1min_at_start']:.2f} at "
        f"the start); Python {env['python']}, numpy {env['numpy']}, Verilator "
        f"{info.get('verilator', 'unavailable')}, MyHDL {info['myhdl']}, pynq {info['pynq']}. Shipped builds of "
        f"`spec.BOARDS`; verilator figures are "
        f"medians of {args['repeats']} interleaved repetitions (each >= {args['min_time']} s of back-to-back "
        f"rounds), rtl figures of {args['rtl_repeats']} rounds after one unmeasured. The run took "
        f"{result['wall[s]']:.0f} s ("
        + ", ".join(f"{name[:-3]} {value:.0f} s" for name, value in info["phase_wall"].items())
        + ").",
        "",
        "## Goals",
        "",
        *[f"- {g['text']}" for g in result["goals"]],
        "",
        "## Simulated cycles per wall second while working",
        "",
        "The board's clock advanced by the round's driver calls, over their wall time (host-side encoding and "
        "decoding included). verilator / rtl compares the same rtl-size round on both. The last column is each "
        "verilated model's own clock with idle buses (the C++ loop alone, no Python per call): the ceiling a core's "
        "rate approaches; for the whole board gae / replay / parsa and, since every model ticks every board cycle "
        "whichever core works, the rate of the three together (1 / the sum of 1 / each).",
        "",
        *rate_table(rows),
        "",
        "## One register access from Python",
        "",
        f"GAE core of the Pynq-Z2 build; median of {args['register_samples']} samples of "
        f"{args['register_accesses']} back-to-back accesses (rtl: {args['rtl_register_samples']} of "
        f"{args['rtl_register_accesses']}), interleaved. `mmio.read` / `mmio.write` are PYNQ's `MMIO` calls; "
        "`mmio.array[i]` is the drivers' own path. emu is the host-side floor (no simulated cycles).",
        "",
        *register_table(rows),
        "",
        "## Streams",
        "",
        "Payload bytes through the DMAs (`RLOverlay.bus_stats`: into and out of the core) over the call's wall "
        "time; the simulated cycles include the core's own work, so bytes / cycle is below the stream's width "
        "(8 bytes a beat on the Pynq-Z2 build) where the core takes more than a cycle per record.",
        "",
        *stream_table(rows),
        "",
        "## GAE rollout",
        "",
        "The verilator time is the Pynq-Z2 GAE core's large round above (same calls).",
        "",
        *rollout_table(rows, info["fclk_mhz"][START_BOARD]),
        "",
        "## Start",
        "",
        '`RLOverlay(backend=..., board="Pynq-Z2")` in a fresh Python process, timed from the parent. Cold: '
        "`PYNQ_RL_VERILATOR_CACHE` an empty temporary directory (removed afterwards), each core's conversion to "
        "Verilog and its Verilator + C++ build timed apart, in that order, then the overlay from the filled cache.",
        "",
        *start_table(rows),
        "",
        "## Notes",
        "",
        "- Whole-board rows: a verilated core idles up to the board's clock before it acts, so while one core works "
        "the others stand still and catch up at their next call; a round of all three pays every model's ticks.",
        "- The machine is shared: compare rows within one run; the min-max columns and the samples in the JSON "
        "show the spread.",
        f"- Verilator model cache: `{info.get('cache_root', '')}`.",
    ]
    calls = [
        (row["key"], c)
        for row in rows
        if row.get("calls") and row.get("cores") == "board" and row.get("work") == "large"
        for c in row["calls"]
    ]
    if calls:
        lines.append(
            "- Whole-board rounds, per call (median wall, board cycles advanced; the wall includes the "
            "called core catching up): "
            + "; ".join(
                f"`{key}` {c['call']}: {c['median_wall[s]'] * 1e3:.3g} ms, {c['median_cycles']:,}" for key, c in calls
            )
            + "."
        )
    return "\n".join(lines) + "\n"
