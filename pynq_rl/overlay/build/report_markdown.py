"""The Markdown page of the synthesis report (``resources.md``): the GAE core's rows, the comparison with HEPPO, the
goal, the fit and BRAM checks and the netlist simulations, then the replay, ParSa and whole-overlay sections their
own modules render. :mod:`.report` runs the builds and assembles the JSON; this module only reads it, so the page can
be re-rendered from a ``resources.json`` without yosys (``markdown(json.loads(path.read_text()))``).
"""

from __future__ import annotations

from .. import spec as S
from .gae_report import HEPPO, coef_name
from .overlay_report import overlay_markdown
from .parsa_report import parsa_markdown
from .replay_report import replay_markdown
from .yosys import format_count as _fmt

__all__ = ["markdown"]


def markdown(report: dict) -> str:
    """The Markdown page of a report (``resources.md``)."""
    env = report["environment"]
    per_pe = report["goal"]["heppo_per_pe"]
    out = [
        f"# {report['title']}",
        "",
        f"`python -m pynq_rl.overlay.build.report{' --quick' if report['arguments']['quick'] else ''}` on "
        f"{env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); {env['yosys']}, MyHDL "
        f"{env['myhdl']}; total runtime {report['runtime[s]']:.0f} s on {env['cpu_count']} CPUs.",
        "",
        "`synth_xilinx -family <xc7|xcup> -noiopad` (out of context), with `setattr -set keep 1` on each PE's A "
        "loop registers (the workaround of yosys's DSP-feedback bug). LUT = LUT1..LUT6 + LUTs as memory/SRL; FF = FD*; "
        "BRAM36 = RAMB36 + RAMB18/2. `ltp` = longest fabric path in cells (FF/DSP/BRAM cut paths; a carry "
        "chain cell is one level; blind inside DSPs, so read it with the count of DSPs that use their M or P "
        "register): a relative depth figure, not Fmax (yosys 0.23's `sta` stops at CARRY4/CARRY8/DSP48E2, "
        "which have no timing model, so it is not reported). `SRL into DSP` = shift registers (SRL16E/SRLC32E) "
        "in a DSP48's combinational input cone: an SRL's clock-to-out is 1.5 ns on xc7, so a multiply's "
        "operands should come from flip-flops. yosys over-counts LUT/FF on xcup.",
        "",
        "## Resources",
        "",
        "| build | module | family | LANES | k | LUT | FF | DSP | RAMB18 | RAMB36 | BRAM36 eq. | carry | "
        "DSP with M/P reg | SRL into DSP | ltp [levels] | yosys [s] |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["rows"]:
        if row["status"] != "ok":
            out.append(
                f"| {row['kind']} | `{row['module']}` | {row['family']} | {row['lanes']} | "
                f"{row['lookahead']} | {row['status']} ||||||||||"
            )
            continue
        kind = row["kind"] + ("" if row["coef"] == coef_name(S.GaeSpec()) else f" ({row['coef']}, what-if)")
        out.append(
            f"| {kind} | `{row['module']}` | {row['family']} | {row['lanes']} | {row['lookahead']} | "
            f"{_fmt(row['lut'])} | {_fmt(row['ff'])} | {_fmt(row['dsp'])} | {row['ramb18']} | "
            f"{row['ramb36']} | {_fmt(row['bram36'], 1)} | {row['carry']} | "
            f"{_fmt(row.get('dsp_with_mreg_or_preg'))} | {_fmt(row.get('srl_into_dsp'))} | "
            f"{_fmt(row.get('ltp_fabric[levels]'))} | "
            f"{row['runtime[s]']:.0f} |"
        )
    out += [
        "",
        "`pe` = one `gae_pe` (C**j as input ports: the replicated unit); `pe+powers` adds the `coef_powers` "
        "chain, of which a core has one for all lanes. Core rows are the whole AXI top (`gae_core_top`): "
        "register file, stream FSM, record register, per-lane FILO BRAM, dequantizer and PE.",
        "",
        "## Per PE against HEPPO",
        "",
        f"HEPPO's {HEPPO['source']}: {HEPPO['lut']:,} LUT, {HEPPO['ff']:,} FF, {HEPPO['dsp']:,} DSP "
        f"-> {per_pe['lut']:.0f} LUT, {per_pe['ff']:.0f} FF, {per_pe['dsp']:.0f} DSP per PE.",
        "",
        "| build | family | k | LUT / HEPPO | FF / HEPPO | DSP / HEPPO |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for c in report["comparison_per_pe"]:
        out.append(
            f"| `{c['module']}` | {c['family']} | {c['lookahead']} | {c['lut_vs_heppo']:.2f}x | "
            f"{c['ff_vs_heppo']:.2f}x | {c['dsp_vs_heppo']:.2f}x |"
        )
    goal = report["goal"]
    out += ["", "## Goal", ""]
    if goal["measured"] is None:
        out.append(f"{goal['text']}: not measured in this run.")
    else:
        m = goal["measured"]
        verdict = "**met**" if goal["met"] else "**NOT met**"
        detail = ", ".join(
            f"{n.upper()} {m[n]} vs {per_pe[n]:.0f} ({'ok' if goal['met_by_resource'][n] else 'over'})"
            for n in ("lut", "ff", "dsp")
        )
        out.append(f"{goal['text']}: {verdict} -- `gae_pe` k=2 xc7: {detail}.")
        if "measured_with_powers" in goal:
            w = goal["measured_with_powers"]
            out.append(f"With its own `coef_powers` chain: {w['lut']} LUT, {w['ff']} FF, {w['dsp']} DSP.")
    out += [
        "",
        "## Fit checks",
        "",
        "| device | board | core | LANES | LUT | FF | DSP | BRAM36 | limit | fits |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for fit in report["fit_checks"]:
        if fit["fractions"] is None:
            out.append(
                f"| {fit['device']} | {fit['board']} | not built | {fit['lanes']} | | | | | "
                f"{fit['limit_fraction']:.0%} | - |"
            )
            continue
        f = fit["fractions"]
        out.append(
            f"| {fit['device']} | {fit['board']} | `{fit['row']}` | {fit['lanes']} | {f['lut']:.1%} | "
            f"{f['ff']:.1%} | {f['dsp']:.1%} | {f['bram36']:.1%} | < {fit['limit_fraction']:.0%} | "
            f"{'yes' if fit['fits'] else '**no**'} (most used: {fit['binding']}) |"
        )
    bram = report["bram_check"]
    out += [
        "",
        "## BRAM inference (FILO stacks: one 65-bit x (T_MAX+1) simple-dual-port RAM per lane)",
        "",
        f"All cores inferred block RAM: **{'yes' if bram['all_inferred'] else 'NO'}**.",
        "",
        "| module | family | LANES | T_MAX | RAMB18 | RAMB36 | BRAM36 eq. per lane |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for b in bram["cores"]:
        out.append(
            f"| `{b['module']}` | {b['family']} | {b['lanes']} | {b['t_max']} | {b['ramb18']} | "
            f"{b['ramb36']} | {b['bram36_per_lane']:.2f} |"
        )
    if report["netlist_simulation"]:
        out += [
            "",
            "## Synthesized netlist vs model (Icarus + yosys `cells_sim.v`)",
            "",
            "`pe+powers` synthesized, its netlist and its converted RTL driven by the same vectors (3 coefficient "
            "settings incl. C = 1.0, episodes of 1-60 steps, dones, bubbles, saturating magnitudes). Columns "
            "count mismatching A/R outputs plus per-episode SATURATED flags; netlist vs RTL counts output rows "
            "that differ (a synthesis bug shows there, whatever the RTL does).",
            "",
            "| PE | family | keep workaround | LUT | FF | DSP | outputs | netlist vs model | RTL vs model | "
            "netlist vs RTL | result |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for sim in report["netlist_simulation"]:
            if "error" in sim:
                out.append(
                    f"| k={sim['k']} | {sim['family']} | {'yes' if sim['keep'] else 'no'} | | | | | | | | "
                    f"error: {sim['error']} |"
                )
                continue
            out.append(
                f"| `pe+powers` k={sim['k']} | {sim['family']} | {'yes' if sim['keep'] else 'no'} | "
                f"{sim['lut']} | {sim['ff']} | {sim['dsp']} | {sim['outputs']} | {sim['netlist_mismatches']} | "
                f"{sim['rtl_mismatches']} | {sim['netlist_vs_rtl']} | "
                f"{'pass' if sim['passed'] else '**FAIL**'} |"
            )
    notes = list(report.get("notes") or [])
    stripped = list(dict.fromkeys(row["module"] for row in report["rows"] if row.get("memory_init_loops_removed")))
    if stripped:
        notes.append(
            "MyHDL's all-zero memory `initial` loops were removed from the Verilog given to yosys for "
            f"{', '.join(f'`{m}`' for m in stripped)} (block RAM starts at zero anyway; yosys 0.23 unrolls "
            "those loops very slowly; on a 2-lane core the FF/DSP/BRAM counts are the same and the LUTs "
            "within 0.4%)."
        )
    if notes:
        report = {**report, "notes": notes}
    if report.get("notes"):
        out += ["", "## Notes", ""] + [f"- {note}" for note in report["notes"]]
    if report.get("replay"):
        replay = report["replay"]
        out += replay_markdown(replay)
        if replay.get("environment"):
            renv = replay["environment"]
            out += [
                "",
                f"Replay rows: `python -m pynq_rl.overlay.build.report --cores replay` on {renv['date']}, "
                f"commit `{renv['git_commit']}` ({renv['git_describe']}); {renv['yosys']}; "
                f"{replay.get('runtime[s]', 0):.0f} s.",
            ]
    if report.get("parsa"):
        parsa = report["parsa"]
        out += parsa_markdown(parsa)
        if parsa.get("environment"):
            penv = parsa["environment"]
            out += [
                "",
                f"ParSa rows: `python -m pynq_rl.overlay.build.report --cores parsa` on {penv['date']}, "
                f"commit `{penv['git_commit']}` ({penv['git_describe']}); {penv['yosys']}; "
                f"{parsa.get('runtime[s]', 0):.0f} s.",
            ]
    if report.get("overlay"):
        overlay = report["overlay"]
        out += overlay_markdown(overlay)
        oenv = overlay["environment"]
        out += [
            "",
            f"Whole-overlay rows: `python -m pynq_rl.overlay.build.report --cores overlay` on {oenv['date']}, "
            f"commit `{oenv['git_commit']}` ({oenv['git_describe']}); {oenv['yosys']}; "
            f"{overlay.get('runtime[s]', 0):.0f} s.",
        ]
    return "\n".join(out) + "\n"
