"""Synthesis report of the cores (verification rung 5): yosys resources of the GAE core per PE and per core,
checked against HEPPO's Table IV and the target devices, plus a simulation of the synthesized PE netlist against
the model; and the replay core's board builds with their fit and block-memory checks.

``python -m pynq_rl.overlay.build.report [--out benchmarks/results] [--quick] [--jobs 2] [--work DIR]`` converts

* the processing element alone (:func:`gae_pe` behind :func:`pe_unit`, the C**j powers as input ports: the part
  that is replicated per lane) and with its coefficient chain (:func:`pe_with_powers`, :func:`coef_powers` included:
  one per core in the real build), for k = 1, 2, 3, and a what-if k = 2 PE with a UQ1.16 coefficient;
* the whole core top (:func:`pynq_rl.overlay.build.verilog.convert`) for LANES = 1, 8, 64 at k = 2 and
  LANES = 8 at k = 1, 3 (LANES = 8 and 64 are the Pynq-Z2 and ZCU106 builds of ``spec.BOARDS``), all at
  T_MAX = 1024, plus LANES = 1 at T_MAX = 1023 (FILO depth a power of two);

runs ``synth_xilinx -family xc7`` and ``-family xcup`` (out of context: ``-noiopad``) with the DSP-feedback workaround
(``setattr -set keep 1`` on the A loop registers; docs/design.md, MyHDL and synthesis lessons measured here), simulates
the synthesized xc7 netlist of the PE (k = 1, 2, 3, with and without the workaround; :func:`simulate_pe_netlist`)
against the model, and writes ``resources.json`` and ``resources.md`` under ``--out``: resource rows, the comparison
with HEPPO per PE, the goal, the fit checks on the Zynq-7020 and the XCZU7EV, the BRAM inference check, the netlist
simulations and notes read off the data (:func:`observations`). The full run takes about 10 minutes on 2 CPUs (4 of them
for each 64-lane core). ``--quick`` synthesizes one PE (k = 2, xc7) and one tiny core (LANES = 1, T_MAX = 64) and skips
the netlist simulation, for tests (about 15 s).

The replay core (:mod:`.replay_report`: ``replay_plan``, ``run_replay_builds``): the whole top for the Pynq-Z2 build
(K=16, LEVELS=4, 2**16 leaves; xc7) and the ZCU106 build (K=16, LEVELS=5, 2**20 leaves; xcup: its large levels carry
``ram_style = "ultra"`` in the Verilog, which yosys 0.23 honours as Vivado does, without a global ``-uram``; without
URAM the 2**20 leaves do not fit the XCZU7EV's block RAM), each checked to fit its device (< 100% of every resource) and
to hold its deep levels in BRAM/URAM (``replay_memory_check``); about 10 minutes per build on 2 CPUs. ``--cores replay``
synthesizes only these and updates the replay part of an existing ``resources.json`` / ``resources.md``; ``--quick``
builds a 4096-leaf core. The ParSa core (:mod:`.parsa_report`): the Pynq-Z2 and ZCU106 builds, likewise (``--cores
parsa``). The yosys runs, the cell classes counted and the fit checks live in :mod:`.yosys`. The whole overlay
(:mod:`.overlay_report`, ``--cores overlay``, not in quick mode): each board's cores in one netlist, checked against its
part with the headroom the block design's Vivado IP needs. The Markdown page is rendered by :mod:`.report_markdown`.

What is counted (yosys ``stat`` after ``synth_xilinx``): LUT = LUT1..LUT6 and INV (a LUT1) plus LUTs used as
memory or shift registers (RAM32M/RAM64M/..., SRL16E/SRLC32E), FF = FDRE/FDSE/FDCE/FDPE (+ latches),
DSP = DSP48E1/DSP48E2, BRAM36 = RAMB36 + RAMB18 / 2. Logic depth is a proxy only: ``ltp -noff`` on the fabric
cells (flip-flops, DSPs, BRAMs, LUTRAMs and SRLs cut paths; a CARRY4/CARRY8 counts as one level), which cannot see
through a DSP -- with the count of DSPs using their M or P register, that says how much sits in front of a
multiply. It is not an Fmax. yosys ``sta`` is not used: in yosys 0.23 its paths stop at the first cell without a
timing model (CARRY4, CARRY8 and the whole DSP48E2), so its figure was the same for every build of a family. yosys
over-counts LUT/FF on xcup (no DSP register packing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from .. import spec as S
from . import provenance
from .gae_report import (
    FAMILIES,
    FIT_CHECKS,
    HEPPO,
    WHAT_IF_COEF,
    Build,
    coef_name,
    convert_pe,
    loop_registers,
    pe_module_name,
    pe_unit,
    pe_with_powers,
    plan,
    run_builds,
    simulate_pe_netlist,
)
from .overlay_report import overlay_section, run_overlay_builds
from .parsa_report import parsa_plan, parsa_section, run_parsa_builds
from .replay_report import replay_plan, replay_section, run_replay_builds
from .report_markdown import markdown
from .yosys import DEVICES, REPO, yosys_version

__all__ = [
    "HEPPO",
    "FIT_CHECKS",
    "FAMILIES",
    "Build",
    "pe_unit",
    "pe_with_powers",
    "convert_pe",
    "loop_registers",
    "plan",
    "run_builds",
    "simulate_pe_netlist",
    "make_report",
    "observations",
    "markdown",
    "build_report",
    "main",
    "coef_name",
    "pe_module_name",
    "WHAT_IF_COEF",
    "DEFAULT_OUT",
]

DEFAULT_OUT = REPO / "benchmarks" / "results"


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------


def environment() -> dict:
    import myhdl

    return provenance.environment(yosys=yosys_version(), myhdl=myhdl.__version__)


def _find(rows, **want):
    for row in rows:
        if row.get("status") == "ok" and all(row.get(k) == v for k, v in want.items()):
            return row
    return None


def heppo_per_pe() -> dict:
    pes = HEPPO["pes"]
    return {"lut": HEPPO["lut"] / pes, "ff": HEPPO["ff"] / pes, "dsp": HEPPO["dsp"] / pes}


def make_report(rows: list[dict], netlist_sims: list[dict], env: dict, quick: bool, runtime: float) -> dict:
    """Assemble the JSON report: rows, HEPPO comparison, goal, fit checks, BRAM check, netlist simulations."""
    per_pe = heppo_per_pe()
    comparison = []
    for row in rows:
        if row["kind"] in ("pe", "pe+powers") and row["status"] == "ok":
            comparison.append(
                {
                    "module": row["module"],
                    "family": row["family"],
                    "lookahead": row["lookahead"],
                    **{f"{n}_vs_heppo": row[n] / per_pe[n] for n in ("lut", "ff", "dsp")},
                }
            )
        if row["kind"] == "core" and row["status"] == "ok" and row["lanes"] > 1:
            comparison.append(
                {
                    "module": row["module"] + " / LANES",
                    "family": row["family"],
                    "lookahead": row["lookahead"],
                    **{f"{n}_vs_heppo": row[n] / row["lanes"] / per_pe[n] for n in ("lut", "ff", "dsp")},
                }
            )
    default_coef = coef_name(S.GaeSpec())
    pe = _find(rows, kind="pe", lookahead=2, family="xc7", coef=default_coef)
    goal: dict[str, Any] = {
        "text": "per PE at k=2 on xc7: no more DSP, FF or LUT than HEPPO's (Table IV / 64)",
        "heppo_per_pe": per_pe,
        "measured": None,
        "met": None,
    }
    if pe:
        measured = {n: pe[n] for n in ("lut", "ff", "dsp")}
        goal.update(
            measured=measured,
            met_by_resource={n: measured[n] <= per_pe[n] for n in measured},
            met=all(measured[n] <= per_pe[n] for n in measured),
        )
        with_powers = _find(rows, kind="pe+powers", lookahead=2, family="xc7", coef=default_coef)
        if with_powers:
            goal["measured_with_powers"] = {n: with_powers[n] for n in ("lut", "ff", "dsp")}
    fits = []
    for part, lanes, limit in FIT_CHECKS:
        device = DEVICES[part]
        row = _find(rows, kind="core", lanes=lanes, lookahead=2, t_max=1024, family=device.family)
        entry = {
            "device": part,
            "board": device.board,
            "family": device.family,
            "lanes": lanes,
            "limit_fraction": limit,
            "capacity": {n: getattr(device, n) for n in ("lut", "ff", "dsp", "bram36")},
            "row": row["module"] if row else None,
            "fractions": None,
            "fits": None,
        }
        if row:
            fractions = device.fractions(row)
            entry.update(
                fractions=fractions,
                fits=all(f < limit for f in fractions.values()),
                binding=max(fractions, key=fractions.__getitem__),
            )
        fits.append(entry)
    bram = []
    for row in rows:
        if row["kind"] == "core" and row["status"] == "ok":
            bram.append(
                {
                    "module": row["module"],
                    "family": row["family"],
                    "lanes": row["lanes"],
                    "t_max": row["t_max"],
                    "ramb18": row["ramb18"],
                    "ramb36": row["ramb36"],
                    "bram36": row["bram36"],
                    "bram36_per_lane": row["bram36"] / row["lanes"],
                    "inferred": row["ramb18"] + row["ramb36"] > 0,
                }
            )
    return {
        "title": "GAE core synthesis resources (yosys synth_xilinx)",
        "environment": env,
        "arguments": {"quick": quick},
        "runtime[s]": round(runtime, 1),
        "rows": rows,
        "heppo": HEPPO,
        "comparison_per_pe": comparison,
        "goal": goal,
        "fit_checks": fits,
        "bram_check": {"all_inferred": bool(bram) and all(b["inferred"] for b in bram), "cores": bram},
        "netlist_simulation": netlist_sims,
        "devices": {k: dataclasses.asdict(v) for k, v in DEVICES.items()},
        "notes": observations(rows, netlist_sims, fits),
    }


def observations(rows: list[dict], sims: list[dict], fits: list[dict]) -> list[str]:
    """Findings read off the measured rows (each note appears only when the data shows it)."""
    notes = []
    default_coef = coef_name(S.GaeSpec())
    pes = [r for r in rows if r["kind"] == "pe" and r["status"] == "ok" and r["coef"] == default_coef]
    for family in FAMILIES:
        per_mul = {r["dsp"] / (r["lookahead"] + 1) for r in pes if r["family"] == family}
        if len(per_mul) == 1:
            notes.append(
                f"{family}: `gae_pe` has k + 1 multiplies (gamma*V, k - 1 lookahead taps, the tail) and "
                f"uses {per_mul.pop():g} DSP each: the HDL splits each 32-bit DATA operand at bit 17 and "
                f"multiplies both parts by the {default_coef} coefficient (25 bits as a signed operand); "
                "left to itself yosys maps a 32 x 25 product onto 4 DSPs."
            )
    what_if = {
        r["family"]: r
        for r in rows
        if r["kind"] == "pe" and r["status"] == "ok" and r["coef"] != default_coef and r["lookahead"] == 2
    }
    for family, alt in what_if.items():
        base = _find(rows, kind="pe", lookahead=2, family=family, coef=default_coef)
        if not base:
            continue
        head = (
            f"{family}: the same k=2 PE with a {alt['coef']} coefficient (18 bits signed, fits the B port, so "
            f"the data operand needs no split) takes {alt['dsp']} DSP and {alt['lut']} LUT instead of "
            f"{base['dsp']} DSP and {base['lut']} LUT: "
        )
        if alt["lut"] < base["lut"]:
            notes.append(
                head + f"the split's partial-product sum accounts for {base['lut'] - alt['lut']} LUT per "
                "PE; the rest is fabric adders, three 32-bit saturations and the done masks."
            )
        else:
            notes.append(
                head + "the split adds no fabric (the high DSP takes the low one's product through the "
                "cascade, PCIN >> 17, and the rounding addend rides in the low DSP), whereas the unsplit "
                f"product is rounded and shifted in fabric: {alt['lut'] - base['lut']} LUT more, so the "
                "wider, more precise UQ1.23 coefficient costs nothing."
            )
    ok = [r for r in rows if r["status"] == "ok"]
    if ok and all(r.get("dsp_with_mreg_or_preg") == 0 for r in ok):
        notes.append(
            "No DSP in any build uses its M or P register (only A/B input registers are absorbed): "
            "every product, its rounding, the done mask, the sums and the saturation complete in the "
            "cycle of the multiply, so each stage is a DSP plus a fabric path of `ltp` levels."
        )
    if sims and all(s.get("passed") for s in sims) and any(not s["keep"] for s in sims):
        cost = []
        for sim in sims:
            other = next(
                (o for o in sims if o["k"] == sim["k"] and o["family"] == sim["family"] and not o["keep"]), None
            )
            if sim["keep"] and other:
                extra = {n: sim[n] - other[n] for n in ("lut", "ff", "dsp") if sim[n] != other[n]}
                cost.append(
                    f"k={sim['k']}: "
                    + (", ".join(f"{v:+d} {n.upper()}" for n, v in extra.items()) if extra else "nothing")
                )
        notes.append(
            "Netlists synthesized without the `setattr -set keep 1` workaround also equal the model: the "
            "yosys DSP-feedback bug needs a DSP P register on the A loop, and this design has none. The "
            "workaround is kept; it costs " + "; ".join(cost) + " (kept loop registers cannot become DSP "
            "input registers)."
        )
    cores = [r for r in ok if r["kind"] == "core"]
    for family in FAMILIES:
        by = {(r["lanes"], r["lookahead"], r["t_max"]): r for r in cores if r["family"] == family}
        small, big = by.get((1, 2, 1024)), by.get((8, 2, 1024))
        if small and big:
            pe = _find(rows, kind="pe", lookahead=2, family=family, coef=default_coef)
            per_lane = (big["dsp"] - small["dsp"]) / 7
            text = f"{family}: each lane adds {per_lane:g} DSP to the core"
            if pe:
                text += (
                    f" ({pe['dsp']} in the PE, {per_lane - pe['dsp']:g} in the q8 dequantizer's two "
                    "code x 25-bit scale multiplies)"
                )
            notes.append(
                text + f" and {(big['lut'] - small['lut']) / 7:,.0f} LUT, {(big['ff'] - small['ff']) / 7:,.0f} FF."
            )
        deep, shallow = by.get((1, 2, 1024)), by.get((1, 2, 1023))
        if deep and shallow and deep["bram36"] > shallow["bram36"]:
            notes.append(
                f"{family}: a FILO stack is T_MAX + 1 words deep; T_MAX = 1024 (1025 words) takes "
                f"{deep['bram36']:g} BRAM36 per lane, T_MAX = 1023 (1024 words) {shallow['bram36']:g}."
            )
    for fit in fits:
        if fit["fits"] is False:
            notes.append(
                f"{fit['device']} ({fit['board']}): the {fit['lanes']}-lane core does not stay under "
                f"{fit['limit_fraction']:.0%}: {fit['binding']} is at {fit['fractions'][fit['binding']]:.0%}."
            )
    return notes


def _previous_report(out: Path) -> dict:
    """The report already in ``out`` (empty when there is none): sections a run does not regenerate are kept."""
    existing = out / "resources.json"
    return json.loads(existing.read_text()) if existing.is_file() else {}


def build_report(
    out: str | Path = DEFAULT_OUT,
    quick: bool = False,
    jobs: int = 2,
    work: str | Path | None = None,
    timeout: float | None = 3600.0,
    families: tuple[str, ...] = FAMILIES,
    netlist_sim: bool | None = None,
    log=print,
    cores: tuple[str, ...] = ("gae", "replay", "parsa", "overlay"),
) -> dict:
    """Simulate the PE netlists, synthesize the builds of :func:`plan` and :func:`replay_plan`, write
    ``resources.json`` / ``resources.md`` under ``out``; return the report. ``netlist_sim=None`` runs the
    simulations except in ``quick`` mode. ``cores`` without ``"gae"`` regenerates only the replay and/or ParSa
    part of an existing report (``FileNotFoundError`` when there is none); sections not regenerated are kept."""
    out = Path(out)
    work = Path(work) if work else Path(__file__).resolve().parent / "out" / ("synth_quick" if quick else "synth")
    t0 = time.perf_counter()
    env = environment()
    replay = None
    if "replay" in cores:
        replay = replay_section(run_replay_builds(replay_plan(quick), work / "replay", jobs, timeout, log=log))
        replay.update(environment=env, **{"runtime[s]": round(time.perf_counter() - t0, 1)})
    parsa = None
    if "parsa" in cores:
        t_parsa = time.perf_counter()
        parsa = parsa_section(run_parsa_builds(parsa_plan(quick), work / "parsa", jobs, timeout, log=log))
        parsa.update(environment=env, **{"runtime[s]": round(time.perf_counter() - t_parsa, 1)})
    overlay: dict[str, Any] | None = None
    if "overlay" in cores and not quick:  # minutes per board: no quick variant
        t_overlay = time.perf_counter()
        overlay = {"rows": run_overlay_builds(work / "overlay", jobs, timeout, log=log), "environment": env}
        overlay["runtime[s]"] = round(time.perf_counter() - t_overlay, 1)
    if "gae" not in cores:
        existing = out / "resources.json"
        if not existing.is_file():
            raise FileNotFoundError(f"{existing}: no report to add the replay rows to (run without --cores first)")
        report = json.loads(existing.read_text())
        return _write(out, _attach(report, {}, replay=replay, parsa=parsa, overlay=overlay))
    sims = []
    if netlist_sim if netlist_sim is not None else not quick:
        configs = [(2, True)] if quick else [(k, keep) for k in (1, 2, 3) for keep in (True, False)]
        for k, keep in configs:
            try:
                sim = simulate_pe_netlist(k, "xc7", keep, work / "netlist_sim")
            except (FileNotFoundError, subprocess.CalledProcessError, RuntimeError) as exc:
                sim = {"k": k, "family": "xc7", "keep": keep, "passed": False, "error": str(exc).splitlines()[0]}
            log(
                f"netlist sim k={k} keep={keep}: {'pass' if sim.get('passed') else 'FAIL'} "
                f"(netlist vs model {sim.get('netlist_mismatches')}, RTL vs model {sim.get('rtl_mismatches')}, "
                f"netlist vs RTL {sim.get('netlist_vs_rtl')})"
            )
            sims.append(sim)
    rows = run_builds(plan(quick, families), work, jobs, timeout, log=log)
    report = make_report(rows, sims, env, quick, time.perf_counter() - t0)
    report["arguments"].update(jobs=jobs, families=list(families), timeout=timeout)
    return _write(out, _attach(report, _previous_report(out), replay=replay, parsa=parsa, overlay=overlay))


def _attach(report: dict, previous: dict, **sections: dict | None) -> dict:
    """Put the regenerated ``sections`` into ``report``, keep the ``previous`` report's others, and (re)compute the
    whole-overlay fit checks against the per-core rows the report now holds."""
    for name, section in sections.items():
        if section is not None:
            report[name] = section
        elif name in previous:
            report[name] = previous[name]
    if report.get("overlay"):
        per_core = [
            *report.get("rows", []),
            *report.get("replay", {}).get("rows", []),
            *report.get("parsa", {}).get("rows", []),
        ]
        report["overlay"].update(overlay_section(report["overlay"]["rows"], per_core))
    return report


def _write(out: Path, report: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / "resources.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "resources.md").write_text(markdown(report))
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring. Prints the Markdown page; returns 0."""
    parser = argparse.ArgumentParser(
        description="yosys resource report of the cores and of each board's whole overlay."
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="directory of resources.json / resources.md")
    parser.add_argument("--quick", action="store_true", help="one PE (k=2, xc7) and a 1-lane T_MAX=64 core only")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="yosys runs in parallel")
    parser.add_argument(
        "--work",
        default=None,
        help="directory for Verilog, logs and netlists (default: pynq_rl/overlay/build/out/synth or synth_quick)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per yosys run")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated yosys families")
    sim = parser.add_mutually_exclusive_group()
    sim.add_argument(
        "--netlist-sim",
        dest="netlist_sim",
        action="store_true",
        default=None,
        help="simulate the synthesized PE netlists (default except with --quick)",
    )
    sim.add_argument("--no-netlist-sim", dest="netlist_sim", action="store_false")
    parser.add_argument(
        "--cores",
        default="gae,replay,parsa,overlay",
        help="comma-separated parts to synthesize (default gae,replay,parsa,overlay; 'overlay' is "
        "each board's cores in one netlist; without 'gae', the other parts of an existing "
        "report in --out are updated)",
    )
    args = parser.parse_args(argv)
    families = tuple(f for f in args.families.split(",") if f)
    cores = tuple(c for c in args.cores.split(",") if c)
    report = build_report(
        args.out,
        args.quick,
        args.jobs,
        args.work,
        args.timeout,
        families,
        args.netlist_sim,
        log=lambda msg: print(msg, flush=True),
        cores=cores,
    )
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
