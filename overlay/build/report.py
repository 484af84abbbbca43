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

runs ``synth_xilinx -family xc7`` and ``-family xcup`` (out of context: ``-noiopad``) with the DSP-feedback
workaround of DESIGN.md section 5 (``setattr -set keep 1`` on the A loop registers), simulates the synthesized xc7
netlist of the PE (k = 1, 2, 3, with and without the workaround; :func:`simulate_pe_netlist`) against the model,
and writes ``resources.json`` and ``resources.md`` under ``--out``: resource rows, the comparison with HEPPO per
PE, the goal, the fit checks on the Zynq-7020 and the XCZU7EV, the BRAM inference check, the netlist simulations
and notes read off the data (:func:`observations`). The full run takes about 10 minutes on 2 CPUs (4 of them for
each 64-lane core). ``--quick`` synthesizes one PE (k = 2, xc7) and one tiny core (LANES = 1, T_MAX = 64) and
skips the netlist simulation, for tests (about 15 s).

The replay core (:mod:`.replay_report`: ``replay_plan``, ``run_replay_builds``): the whole top for the Pynq-Z2 build
(K=16, LEVELS=4, 2**16 leaves; xc7) and the ZCU106 build (K=16, LEVELS=5, 2**20 leaves; xcup with ``-uram``: yosys
0.23 maps large memories to URAM288 only when asked, and without URAM the 2**20 leaves do not fit the XCZU7EV's block
RAM), each checked to fit its device (< 100% of every resource) and to hold its deep levels in BRAM/URAM
(``replay_memory_check``); about 10 minutes per build on 2 CPUs. ``--cores replay`` synthesizes only these and updates
the replay part of an existing ``resources.json`` / ``resources.md``; ``--quick`` builds a 4096-leaf core. The ParSa
core (:mod:`.parsa_report`): the Pynq-Z2 and ZCU106 builds, likewise (``--cores parsa``). The yosys runs, the cell
classes counted and the fit checks live in :mod:`.yosys`. The whole overlay (:mod:`.overlay_report`, ``--cores
overlay``, not in quick mode): each board's cores in one netlist, checked against its part with the headroom the block
design's Vivado IP needs.

What is counted (yosys ``stat`` after ``synth_xilinx``): LUT = LUT1..LUT6 and INV (a LUT1) plus LUTs used as
memory or shift registers (RAM32M/RAM64M/..., SRL16E/SRLC32E), FF = FDRE/FDSE/FDCE/FDPE (+ latches),
DSP = DSP48E1/DSP48E2, BRAM36 = RAMB36 + RAMB18 / 2. Logic depth is a proxy only: ``ltp -noff`` on the fabric
cells (flip-flops, DSPs, BRAMs, LUTRAMs and SRLs cut paths; a CARRY4/CARRY8 counts as one level), which cannot see
through a DSP -- with the count of DSPs using their M or P register, that says how much sits in front of a
multiply. It is not an Fmax. yosys ``sta`` is not used: in yosys 0.23 its paths stop at the first cell without a
timing model (CARRY4, CARRY8 and the whole DSP48E2), so its figure was the same for every build of a family. yosys
over-counts LUT/FF on xcup (DESIGN.md section 5).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from myhdl import always_comb, block, intbv, Signal

from .. import spec as S
from ..hdl.gae.pe import coef_powers, gae_pe
from ..models.gae import gae_fixed
from . import provenance
from .overlay_report import overlay_markdown, overlay_section, run_overlay_builds
from .parsa_report import parsa_markdown, parsa_plan, parsa_section, run_parsa_builds
from .replay_report import replay_markdown, replay_plan, replay_section, run_replay_builds
from .verilog import convert, module_name
from .yosys import DEVICES, REPO, format_count as _fmt, synthesis_source, synthesize, yosys_datdir, yosys_version

__all__ = ["HEPPO", "FIT_CHECKS", "FAMILIES", "Build", "pe_unit", "pe_with_powers", "convert_pe", "loop_registers",
           "plan", "run_builds", "simulate_pe_netlist", "make_report", "observations", "markdown", "build_report",
           "main", "coef_name", "pe_module_name", "WHAT_IF_COEF", "DEFAULT_OUT"]

DEFAULT_OUT = REPO / "benchmarks" / "results"
FAMILIES = ("xc7", "xcup")

#: HEPPO's Table IV: the GAE module with 64 PEs and the 2-step lookahead (totals; per PE = total / 64).
HEPPO = {"source": "Table IV (64 PEs, 2-step lookahead)", "pes": 64, "lookahead": 2,
         "lut": 12864, "ff": 54336, "dsp": 768}


#: (device, LANES of the core build checked on it, largest allowed fraction of any resource).
FIT_CHECKS = (("xc7z020", 8, 1 / 3), ("xczu7ev", 64, 1.0))


# ---------------------------------------------------------------------------------------------------------------
# The PE, converted standalone
# ---------------------------------------------------------------------------------------------------------------

@block
def pe_unit(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers_bus, clock,
            spec: S.GaeSpec):
    """One :func:`gae_pe` with flat ports; ``powers_bus`` holds C**1 .. C**k (COEF words, C**1 at the bottom).

    powers_bus : Signal(intbv[k * coef.width]), in -- the outputs of :func:`coef_powers` in the core
    other ports as :func:`gae_pe`
    """
    width = spec.coef.width
    one = 1 << spec.coef.frac
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]
    insts = [_slice_port(powers[j], powers_bus, (j - 1) * width, width) for j in range(1, spec.lookahead + 1)]
    pe = gae_pe(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock,
                spec)
    pe.name = "pe"
    return insts, pe


@block
def pe_with_powers(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma,
                   gamma_lambda, clock, spec: S.GaeSpec):
    """One :func:`gae_pe` fed by its own :func:`coef_powers` chain (what a one-lane core holds).

    gamma_lambda : Signal(COEF), in -- C; the other ports as :func:`gae_pe`
    """
    one = 1 << spec.coef.frac
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]
    chain = coef_powers(powers, gamma_lambda, clock, spec)
    chain.name = "powers"
    pe = gae_pe(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock,
                spec)
    pe.name = "pe"
    return chain, pe


@block
def _slice_port(y, bus, lo: int, width: int):
    @always_comb
    def logic():
        y.next = bus[lo + width:lo]

    return logic


def _pe_ports(spec: S.GaeSpec, with_powers: bool):
    data = lambda: Signal(intbv(0, min=spec.data.min_code, max=spec.data.max_code + 1))  # noqa: E731
    coef = lambda: Signal(intbv(0, min=0, max=(1 << spec.coef.frac) + 1))  # noqa: E731
    bit = lambda: Signal(bool(0))  # noqa: E731
    last = coef() if with_powers else Signal(intbv(0)[spec.lookahead * spec.coef.width:])
    return [data(), data(), bit(), bit(), data(), data(), bit(), bit(), bit(), coef(), last, bit()]


def coef_name(spec: S.GaeSpec) -> str:
    """The coefficient format as text (``UQ1.24``)."""
    return f"UQ{spec.coef.width - spec.coef.frac}.{spec.coef.frac}"


#: A what-if coefficient format for the PE rows: UQ1.16 (with 1.0) is 18 bits signed, one DSP48 port wide.
WHAT_IF_COEF = S.QFormat(17, 16, signed=False)


def pe_module_name(spec: S.GaeSpec, with_powers: bool) -> str:
    """Verilog module name of a standalone PE build (``gae_pe_k2``, ``gae_pe_powers_k2``; ``gae_pe_k2_uq1_16``
    for a coefficient format other than the default)."""
    suffix = "" if spec.coef == S.GaeSpec().coef else f"_uq{spec.coef.width - spec.coef.frac}_{spec.coef.frac}"
    return f"gae_pe{'_powers' if with_powers else ''}_k{spec.lookahead}{suffix}"


def convert_pe(spec: S.GaeSpec, out_dir: str | Path, with_powers: bool = False, name: str | None = None) -> Path:
    """Convert :func:`pe_unit` (or :func:`pe_with_powers`) for ``spec`` to ``<out_dir>/<name>.v``; return the path.

    Ports: ``adv, ret, out_valid, saturated`` out; ``reward, value, done, in_valid, in_bootstrap, gamma``,
    ``powers_bus`` (or ``gamma_lambda``), ``clock`` in.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or pe_module_name(spec, with_powers)
    top = (pe_with_powers if with_powers else pe_unit)(*_pe_ports(spec, with_powers), spec)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(not used|not driven).*")
        top.convert(hdl="Verilog", path=str(out_dir), name=name, initial_values=True, testbench=False)
    return out_dir / f"{name}.v"


def loop_registers(verilog: str) -> list[str]:
    """Names of the registers on each PE's A feedback loop in converted Verilog (for ``setattr -set keep 1``).

    These are ``*_adv3`` (A_t, stage 3), the taps of the ``adv_hist`` delay line (k >= 3), and the register that
    takes the rounded tail product ``rnd(C**k * A_{t+k})`` (k >= 2): the registers yosys could absorb into a DSP
    whose output feeds back to its own input (DESIGN.md section 5).
    """
    names = set(re.findall(r"^\s*reg\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?(\w+_adv3)\b", verilog, re.M))
    names |= set(re.findall(r"^\s*reg\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?(\w+_adv_hist\w*)\b", verilog, re.M))
    names |= set(re.findall(r"^\s*(\w+)\s*<=\s*\w+_tail_mul_product_rounded\s*;", verilog, re.M))
    return sorted(names)


# ---------------------------------------------------------------------------------------------------------------
# What to build
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Build:
    """One synthesis run: a PE (``pe``: alone, ``pe+powers``: with its C**j chain) or a core, on one family."""

    kind: str
    spec: S.GaeSpec
    family: str

    @property
    def top(self) -> str:
        if self.kind == "core":
            return module_name("gae", self.spec)
        return pe_module_name(self.spec, self.kind == "pe+powers")

    @property
    def key(self) -> str:
        return f"{self.top}_{self.family}"


def _core_spec(lanes: int, k: int, t_max: int = 1024) -> S.GaeSpec:
    """The core build at ``lanes``: a board's own GaeSpec where a board has that many lanes, else stream 8 bytes."""
    for board in S.BOARDS.values():
        base = board.slot("gae").spec
        if base.lanes == lanes:
            return dataclasses.replace(base, t_max=t_max, lookahead=k)
    return S.GaeSpec(lanes=lanes, t_max=t_max, lookahead=k, stream_bytes=8)


def plan(quick: bool = False, families: tuple[str, ...] = FAMILIES) -> list[Build]:
    """The builds of a report, cheapest first (so a slow big core only delays the end)."""
    if quick:
        return [Build("pe", S.GaeSpec(lanes=1, lookahead=2), "xc7"),
                Build("core", S.GaeSpec(lanes=1, t_max=64, lookahead=2, stream_bytes=8), "xc7")]
    builds = []
    for kind in ("pe", "pe+powers"):
        for k in (1, 2, 3):
            builds += [Build(kind, S.GaeSpec(lanes=1, lookahead=k), f) for f in families]
    builds += [Build("pe", S.GaeSpec(lanes=1, lookahead=2, coef=WHAT_IF_COEF), f) for f in families]
    for lanes, k in ((1, 2), (8, 2), (8, 1), (8, 3), (64, 2)):
        builds += [Build("core", _core_spec(lanes, k), f) for f in families]
        if lanes == 1:  # FILO depth T_MAX + 1: one word less than a power of two saves a block RAM per lane
            builds += [Build("core", _core_spec(1, k, t_max=1023), f) for f in families]
    return builds


def _convert(build: Build, work_dir: Path) -> Path:
    if build.kind == "core":
        return convert("gae", build.spec, work_dir / "verilog")
    return convert_pe(build.spec, work_dir / "verilog", with_powers=build.kind == "pe+powers")


def _row(build: Build, result: dict) -> dict:
    spec = build.spec
    return {"kind": build.kind, "module": build.top, "family": build.family, "lanes": spec.lanes if
            build.kind == "core" else 1, "t_max": spec.t_max if build.kind == "core" else None,
            "lookahead": spec.lookahead, "stream_bytes": spec.stream_bytes if build.kind == "core" else None,
            "coef": coef_name(spec), **result}


def run_builds(builds: list[Build], work_dir: Path, jobs: int = 2, timeout: float | None = None,
               log=print) -> list[dict]:
    """Convert every distinct source once, then synthesize the builds ``jobs`` at a time; one row per build.

    A build that fails or times out gets a row with ``status`` saying so (and no counts).
    """
    sources: dict[tuple, tuple[Path, int] | str] = {}
    for build in builds:
        ident = (build.kind, build.spec)
        if ident not in sources:
            t0 = time.perf_counter()
            try:
                path = _convert(build, work_dir)
            except Exception as exc:  # noqa: BLE001 - a build that does not convert is reported, not fatal
                sources[ident] = f"conversion failed: {type(exc).__name__}: {exc}"
                log(f"{build.top}: {sources[ident]}")
                continue
            sources[ident] = synthesis_source(path)
            log(f"converted {path.name} in {time.perf_counter() - t0:.1f} s")

    def one(build: Build) -> dict:
        source = sources[(build.kind, build.spec)]
        if isinstance(source, str):
            return _row(build, {"status": source.splitlines()[0]})
        path, stripped = source
        keep = loop_registers(path.read_text())
        try:
            result = synthesize(path, build.top, build.family, keep, work_dir / "yosys", timeout=timeout)
            result.update(status="ok", memory_init_loops_removed=stripped)
        except subprocess.TimeoutExpired:
            result = {"status": f"timeout after {timeout:.0f} s", "keep": keep}
        except RuntimeError as exc:
            result = {"status": f"yosys failed: {str(exc).splitlines()[0]}", "keep": keep}
        log(f"{build.key}: {result['status']} "
            + (f"LUT {result['lut']} FF {result['ff']} DSP {result['dsp']} BRAM36 {result['bram36']} "
               f"({result['runtime[s]']} s)" if result["status"] == "ok" else ""))
        return _row(build, result)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, builds))


# ---------------------------------------------------------------------------------------------------------------
# Netlist simulation (the only check that catches the yosys DSP-feedback bug)
# ---------------------------------------------------------------------------------------------------------------

_TESTBENCH = """`timescale 1ns/1ps
module tb;
  reg clock = 0;
  reg signed [31:0] reward, value;
  reg done, in_valid, in_bootstrap;
  reg [24:0] gamma, gamma_lambda;
  wire signed [31:0] adv, ret;
  wire out_valid, saturated;
  reg [66:0] vectors [0:{n}-1];
  integer i, f;
  {top} dut(.adv(adv), .ret(ret), .out_valid(out_valid), .saturated(saturated), .reward(reward), .value(value),
            .done(done), .in_valid(in_valid), .in_bootstrap(in_bootstrap), .gamma(gamma),
            .gamma_lambda(gamma_lambda), .clock(clock));
  always #5 clock = ~clock;
  always @(posedge clock) begin
    #1 if (out_valid !== 1'b0) $fdisplay(f, "%0d %0d %0d %0d", out_valid, adv, ret, saturated);
  end
  initial begin
    f = $fopen("{out}", "w");
    $readmemh("{vectors}", vectors);
    #1;  // configuration inputs at #1, not 0: the DSP model leaves inputs set at time 0 at x
    gamma = {gamma}; gamma_lambda = {gamma_lambda};
    reward = 0; value = 0; done = 0; in_valid = 0; in_bootstrap = 0;
    repeat (8) @(negedge clock);
    for (i = 0; i < {n}; i = i + 1) begin
      {{in_valid, in_bootstrap, done, reward, value}} = vectors[i];
      @(negedge clock);
    end
    in_valid = 0; in_bootstrap = 0;
    repeat (12) @(negedge clock);
    $fclose(f);
    $finish;
  end
endmodule
"""


def _episodes(rng: np.random.Generator, spec: S.GaeSpec) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Rollouts (rewards (T,), values (T+1,), dones (T,)) in DATA codes: short and long, small and saturating."""
    lo, hi = spec.data.min_code, spec.data.max_code
    episodes = []
    for n_steps, scale, p_done in ((1, 1 << 18, 0.0), (2, 1 << 18, 0.5), (3, 1 << 20, 0.3), (7, 1 << 16, 0.2),
                                   (40, 1 << 18, 0.1), (25, 1 << 29, 0.1), (30, 1 << 31, 0.2), (60, 1 << 17, 0.05)):
        rewards = np.clip(rng.normal(0, scale, n_steps), lo, hi).astype(np.int64)
        values = np.clip(rng.normal(0, scale, n_steps + 1), lo, hi).astype(np.int64)
        dones = (rng.random(n_steps) < p_done).astype(np.int64)
        episodes.append((rewards, values, dones))
    rewards = np.full(20, hi, np.int64)   # long saturating run: A pinned at the top
    episodes.append((rewards, np.full(21, lo, np.int64), np.zeros(20, np.int64)))
    return episodes


def _vector(valid: int, boot: int, done: int, reward: int, value: int) -> str:
    word = (valid << 66) | (boot << 65) | (done << 64) | ((reward & 0xFFFF_FFFF) << 32) | (value & 0xFFFF_FFFF)
    return f"{word:017x}"


def _compare(got: list[list[str]], want: list[tuple], gammas: tuple[int, int], first: list) -> int:
    """Mismatches between test-bench output rows and the model's (A, R, saturated) per episode."""
    mismatches, index = 0, 0
    for e_index, (adv, ret, sat) in enumerate(want):
        sat_seen = False
        for t_rev, (a, r) in enumerate(zip(adv, ret)):
            row = got[index] if index < len(got) else ["missing"]
            index += 1
            sat_seen |= len(row) == 4 and row[3] == "1"
            if not (len(row) == 4 and row[0] == "1" and row[1] == str(int(a)) and row[2] == str(int(r))):
                mismatches += 1
                if len(first) < 5:
                    first.append({"gammas": list(gammas), "episode": e_index, "t": len(adv) - 1 - t_rev,
                                  "got": row, "want": [int(a), int(r)]})
        if sat_seen != bool(sat):
            mismatches += 1
            if len(first) < 5:
                first.append({"gammas": list(gammas), "episode": e_index, "saturated_got": sat_seen,
                              "saturated_want": bool(sat)})
    if len(got) != index:
        mismatches += 1
        first.append({"gammas": list(gammas), "outputs_got": len(got), "outputs_want": index})
    return mismatches


def _run_bench(sources: list[Path], top: str, run_dir: Path, tag: str, lines: list[str], gammas: tuple[int, int]
               ) -> list[list[str]]:
    """Compile and run the test bench on ``sources``; return the output rows (valid, A, R, saturated)."""
    vectors, out = run_dir / f"{tag}_vectors.hex", run_dir / f"{tag}_outputs.txt"
    vectors.write_text("\n".join(lines) + "\n")
    bench, binary = run_dir / f"{tag}_tb.v", run_dir / f"{tag}_tb.vvp"
    bench.write_text(_TESTBENCH.format(n=len(lines), top=top, out=out, vectors=vectors, gamma=gammas[0],
                                       gamma_lambda=gammas[1]))
    subprocess.run([shutil.which("iverilog"), "-g2012", "-o", str(binary), "-s", "tb", str(bench),
                    *map(str, sources)], check=True, capture_output=True, text=True)
    subprocess.run([shutil.which("vvp"), "-n", str(binary)], check=True, capture_output=True, text=True,
                   cwd=run_dir)
    return [line.split() for line in out.read_text().splitlines() if line.strip()]


def simulate_pe_netlist(k: int = 2, family: str = "xc7", keep: bool = True, work_dir: str | Path | None = None,
                        seed: int = 0, gammas: tuple[tuple[int, int], ...] | None = None) -> dict:
    """Synthesize :func:`pe_with_powers` (k) with yosys, simulate the netlist with Icarus and yosys's
    ``cells_sim.v``, and compare every A_t, R_t and per-episode saturation flag with :func:`gae_fixed`.

    The same test bench also runs on the converted RTL, so the result separates the two ways to fail:
    ``rtl_mismatches`` (converted Verilog vs model: a conversion or HDL bug, rung 4) and ``netlist_vs_rtl``
    (synthesized netlist vs converted Verilog, output rows that differ: a synthesis bug such as the DSP-feedback
    one). ``passed`` means the netlist equals the model. ``keep`` applies the loop-register workaround.
    Raises ``FileNotFoundError`` if yosys or iverilog is missing.
    """
    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        raise FileNotFoundError("iverilog not found (Debian: apt-get install iverilog)")
    spec = S.GaeSpec(lanes=1, lookahead=k)
    work_dir = Path(work_dir or Path.cwd() / "netlist_sim")
    run_dir = work_dir / f"k{k}_{family}_{'keep' if keep else 'nokeep'}"
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rtl = convert_pe(spec, run_dir, with_powers=True)
    top = pe_module_name(spec, True)
    netlist = run_dir / f"{top}_{family}_netlist.v"
    regs = loop_registers(rtl.read_text()) if keep else []
    synth = synthesize(rtl, top, family, regs, run_dir, netlist=netlist, depth=False)
    cells_sim = yosys_datdir() / "xilinx" / "cells_sim.v"
    rng = np.random.default_rng(seed)
    one = 1 << spec.coef.frac
    gammas = gammas or ((round(0.99 * one), round(0.99 * 0.95 * one)), (one, one), (round(0.9 * one), 0))
    outputs = rtl_bad = net_bad = diff = 0
    first_rtl, first_net = [], []
    for g_index, pair in enumerate(gammas):
        lines, want = [], []
        for rewards, values, dones in _episodes(rng, spec):
            lines.append(_vector(1, 1, 0, 0, int(values[-1])))
            for t in range(len(rewards) - 1, -1, -1):
                while rng.random() < 0.2:            # bubbles: in_valid low between elements
                    lines.append(_vector(0, 0, int(rng.integers(2)), int(rng.integers(-99, 99)), 0))
                lines.append(_vector(1, 0, int(dones[t]), int(rewards[t]), int(values[t])))
            model = gae_fixed(spec, rewards[:, None], values[:, None], dones[:, None], pair[0], pair[1],
                              use_numba=False)
            want.append((model.advantages[::-1, 0], model.returns[::-1, 0], model.saturated))
            lines += [_vector(0, 0, 0, 0, 0)] * int(rng.integers(0, 3))
        outputs += sum(len(a) for a, _, _ in want)
        got_rtl = _run_bench([rtl], top, run_dir, f"rtl{g_index}", lines, pair)
        got_net = _run_bench([netlist, cells_sim], top, run_dir, f"net{g_index}", lines, pair)
        rtl_bad += _compare(got_rtl, want, pair, first_rtl)
        net_bad += _compare(got_net, want, pair, first_net)
        diff += sum(a != b for a, b in zip(got_rtl, got_net)) + abs(len(got_rtl) - len(got_net))
    return {"k": k, "family": family, "keep": keep, "keep_registers": regs,
            "lut": synth["lut"], "ff": synth["ff"], "dsp": synth["dsp"], "outputs": outputs,
            "passed": net_bad == 0, "netlist_mismatches": net_bad, "rtl_mismatches": rtl_bad,
            "netlist_vs_rtl": diff, "first_netlist_mismatches": first_net, "first_rtl_mismatches": first_rtl,
            "runtime[s]": round(time.perf_counter() - t0, 2)}


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
    return {name: HEPPO[name] / HEPPO["pes"] for name in ("lut", "ff", "dsp")}


def make_report(rows: list[dict], netlist_sims: list[dict], env: dict, quick: bool, runtime: float) -> dict:
    """Assemble the JSON report: rows, HEPPO comparison, goal, fit checks, BRAM check, netlist simulations."""
    per_pe = heppo_per_pe()
    comparison = []
    for row in rows:
        if row["kind"] in ("pe", "pe+powers") and row["status"] == "ok":
            comparison.append({"module": row["module"], "family": row["family"], "lookahead": row["lookahead"],
                               **{f"{n}_vs_heppo": row[n] / per_pe[n] for n in ("lut", "ff", "dsp")}})
        if row["kind"] == "core" and row["status"] == "ok" and row["lanes"] > 1:
            comparison.append({"module": row["module"] + " / LANES", "family": row["family"],
                               "lookahead": row["lookahead"],
                               **{f"{n}_vs_heppo": row[n] / row["lanes"] / per_pe[n] for n in ("lut", "ff", "dsp")}})
    default_coef = coef_name(S.GaeSpec())
    pe = _find(rows, kind="pe", lookahead=2, family="xc7", coef=default_coef)
    goal = {"text": "per PE at k=2 on xc7: no more DSP, FF or LUT than HEPPO's (Table IV / 64)",
            "heppo_per_pe": per_pe, "measured": None, "met": None}
    if pe:
        measured = {n: pe[n] for n in ("lut", "ff", "dsp")}
        goal.update(measured=measured, met_by_resource={n: measured[n] <= per_pe[n] for n in measured},
                    met=all(measured[n] <= per_pe[n] for n in measured))
        with_powers = _find(rows, kind="pe+powers", lookahead=2, family="xc7", coef=default_coef)
        if with_powers:
            goal["measured_with_powers"] = {n: with_powers[n] for n in ("lut", "ff", "dsp")}
    fits = []
    for part, lanes, limit in FIT_CHECKS:
        device = DEVICES[part]
        row = _find(rows, kind="core", lanes=lanes, lookahead=2, t_max=1024, family=device.family)
        entry = {"device": part, "board": device.board, "family": device.family, "lanes": lanes,
                 "limit_fraction": limit, "capacity": {n: getattr(device, n) for n in ("lut", "ff", "dsp", "bram36")},
                 "row": row["module"] if row else None, "fractions": None, "fits": None}
        if row:
            fractions = device.fractions(row)
            entry.update(fractions=fractions, fits=all(f < limit for f in fractions.values()),
                         binding=max(fractions, key=fractions.get))
        fits.append(entry)
    bram = []
    for row in rows:
        if row["kind"] == "core" and row["status"] == "ok":
            bram.append({"module": row["module"], "family": row["family"], "lanes": row["lanes"],
                         "t_max": row["t_max"], "ramb18": row["ramb18"], "ramb36": row["ramb36"],
                         "bram36": row["bram36"], "bram36_per_lane": row["bram36"] / row["lanes"],
                         "inferred": row["ramb18"] + row["ramb36"] > 0})
    return {"title": "GAE core synthesis resources (yosys synth_xilinx)", "environment": env,
            "arguments": {"quick": quick}, "runtime[s]": round(runtime, 1), "rows": rows,
            "heppo": HEPPO, "comparison_per_pe": comparison, "goal": goal, "fit_checks": fits,
            "bram_check": {"all_inferred": bool(bram) and all(b["inferred"] for b in bram), "cores": bram},
            "netlist_simulation": netlist_sims, "devices": {k: dataclasses.asdict(v) for k, v in DEVICES.items()},
            "notes": observations(rows, netlist_sims, fits)}


def observations(rows: list[dict], sims: list[dict], fits: list[dict]) -> list[str]:
    """Findings read off the measured rows (each note appears only when the data shows it)."""
    notes = []
    default_coef = coef_name(S.GaeSpec())
    pes = [r for r in rows if r["kind"] == "pe" and r["status"] == "ok" and r["coef"] == default_coef]
    for family in FAMILIES:
        per_mul = {r["dsp"] / (r["lookahead"] + 1) for r in pes if r["family"] == family}
        if len(per_mul) == 1:
            notes.append(f"{family}: `gae_pe` has k + 1 multiplies (gamma*V, k - 1 lookahead taps, the tail) and "
                         f"uses {per_mul.pop():g} DSP each: the HDL splits each 32-bit DATA operand at bit 17 and "
                         f"multiplies both parts by the {default_coef} coefficient (25 bits as a signed operand); "
                         "left to itself yosys maps a 32 x 25 product onto 4 DSPs.")
    what_if = {r["family"]: r for r in rows if r["kind"] == "pe" and r["status"] == "ok"
               and r["coef"] != default_coef and r["lookahead"] == 2}
    for family, alt in what_if.items():
        base = _find(rows, kind="pe", lookahead=2, family=family, coef=default_coef)
        if not base:
            continue
        head = (f"{family}: the same k=2 PE with a {alt['coef']} coefficient (18 bits signed, fits the B port, so "
                f"the data operand needs no split) takes {alt['dsp']} DSP and {alt['lut']} LUT instead of "
                f"{base['dsp']} DSP and {base['lut']} LUT: ")
        if alt["lut"] < base["lut"]:
            notes.append(head + f"the split's partial-product sum accounts for {base['lut'] - alt['lut']} LUT per "
                         "PE; the rest is fabric adders, three 32-bit saturations and the done masks.")
        else:
            notes.append(head + "the split adds no fabric (the high DSP takes the low one's product through the "
                         "cascade, PCIN >> 17, and the rounding addend rides in the low DSP), whereas the unsplit "
                         f"product is rounded and shifted in fabric: {alt['lut'] - base['lut']} LUT more, so the "
                         "wider, more precise UQ1.23 coefficient costs nothing.")
    ok = [r for r in rows if r["status"] == "ok"]
    if ok and all(r.get("dsp_with_mreg_or_preg") == 0 for r in ok):
        notes.append("No DSP in any build uses its M or P register (only A/B input registers are absorbed): "
                     "every product, its rounding, the done mask, the sums and the saturation complete in the "
                     "cycle of the multiply, so each stage is a DSP plus a fabric path of `ltp` levels.")
    if sims and all(s.get("passed") for s in sims) and any(not s["keep"] for s in sims):
        cost = []
        for sim in sims:
            other = next((o for o in sims if o["k"] == sim["k"] and o["family"] == sim["family"] and not o["keep"]),
                         None)
            if sim["keep"] and other:
                extra = {n: sim[n] - other[n] for n in ("lut", "ff", "dsp") if sim[n] != other[n]}
                cost.append(f"k={sim['k']}: " + (", ".join(f"{v:+d} {n.upper()}" for n, v in extra.items())
                                                 if extra else "nothing"))
        notes.append("Netlists synthesized without the `setattr -set keep 1` workaround also equal the model: the "
                     "yosys DSP-feedback bug needs a DSP P register on the A loop, and this design has none. The "
                     "workaround is kept; it costs " + "; ".join(cost) + " (kept loop registers cannot become DSP "
                     "input registers).")
    cores = [r for r in ok if r["kind"] == "core"]
    for family in FAMILIES:
        by = {(r["lanes"], r["lookahead"], r["t_max"]): r for r in cores if r["family"] == family}
        small, big = by.get((1, 2, 1024)), by.get((8, 2, 1024))
        if small and big:
            pe = _find(rows, kind="pe", lookahead=2, family=family, coef=default_coef)
            per_lane = (big["dsp"] - small["dsp"]) / 7
            text = f"{family}: each lane adds {per_lane:g} DSP to the core"
            if pe:
                text += (f" ({pe['dsp']} in the PE, {per_lane - pe['dsp']:g} in the q8 dequantizer's two "
                         "code x 25-bit scale multiplies)")
            notes.append(text + f" and {(big['lut'] - small['lut']) / 7:,.0f} LUT, "
                         f"{(big['ff'] - small['ff']) / 7:,.0f} FF.")
        deep, shallow = by.get((1, 2, 1024)), by.get((1, 2, 1023))
        if deep and shallow and deep["bram36"] > shallow["bram36"]:
            notes.append(f"{family}: a FILO stack is T_MAX + 1 words deep; T_MAX = 1024 (1025 words) takes "
                         f"{deep['bram36']:g} BRAM36 per lane, T_MAX = 1023 (1024 words) {shallow['bram36']:g}.")
    for fit in fits:
        if fit["fits"] is False:
            notes.append(f"{fit['device']} ({fit['board']}): the {fit['lanes']}-lane core does not stay under "
                         f"{fit['limit_fraction']:.0%}: {fit['binding']} is at {fit['fractions'][fit['binding']]:.0%}.")
    return notes


def markdown(report: dict) -> str:
    """The Markdown page of a report (``resources.md``)."""
    env = report["environment"]
    per_pe = report["goal"]["heppo_per_pe"]
    out = [f"# {report['title']}", "",
           f"`python -m pynq_rl.overlay.build.report{' --quick' if report['arguments']['quick'] else ''}` on "
           f"{env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); {env['yosys']}, MyHDL "
           f"{env['myhdl']}; total runtime {report['runtime[s]']:.0f} s on {env['cpu_count']} CPUs.", "",
           "`synth_xilinx -family <xc7|xcup> -noiopad` (out of context), with `setattr -set keep 1` on each PE's A "
           "loop registers (DESIGN.md section 5). LUT = LUT1..LUT6 + LUTs as memory/SRL; FF = FD*; "
           "BRAM36 = RAMB36 + RAMB18/2. `ltp` = longest fabric path in cells (FF/DSP/BRAM cut paths; a carry "
           "chain cell is one level; blind inside DSPs, so read it with the count of DSPs that use their M or P "
           "register): a relative depth figure, not Fmax (yosys 0.23's `sta` stops at CARRY4/CARRY8/DSP48E2, "
           "which have no timing model, so it is not reported). yosys over-counts LUT/FF on xcup.",
           "", "## Resources", "",
           "| build | module | family | LANES | k | LUT | FF | DSP | RAMB18 | RAMB36 | BRAM36 eq. | carry | "
           "DSP with M/P reg | ltp [levels] | yosys [s] |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in report["rows"]:
        if row["status"] != "ok":
            out.append(f"| {row['kind']} | `{row['module']}` | {row['family']} | {row['lanes']} | "
                       f"{row['lookahead']} | {row['status']} |||||||||")
            continue
        kind = row["kind"] + ("" if row["coef"] == coef_name(S.GaeSpec()) else f" ({row['coef']}, what-if)")
        out.append(f"| {kind} | `{row['module']}` | {row['family']} | {row['lanes']} | {row['lookahead']} | "
                   f"{_fmt(row['lut'])} | {_fmt(row['ff'])} | {_fmt(row['dsp'])} | {row['ramb18']} | "
                   f"{row['ramb36']} | {_fmt(row['bram36'], 1)} | {row['carry']} | "
                   f"{_fmt(row.get('dsp_with_mreg_or_preg'))} | "
                   f"{_fmt(row.get('ltp_fabric[levels]'))} | "
                   f"{row['runtime[s]']:.0f} |")
    out += ["", "`pe` = one `gae_pe` (C**j as input ports: the replicated unit); `pe+powers` adds the `coef_powers` "
            "chain, of which a core has one for all lanes. Core rows are the whole AXI top (`gae_core_top`): "
            "register file, stream FSM, record register, per-lane FILO BRAM, dequantizer and PE.", "",
            "## Per PE against HEPPO", "",
            f"HEPPO's {HEPPO['source']}: {HEPPO['lut']:,} LUT, {HEPPO['ff']:,} FF, {HEPPO['dsp']:,} DSP "
            f"-> {per_pe['lut']:.0f} LUT, {per_pe['ff']:.0f} FF, {per_pe['dsp']:.0f} DSP per PE.", "",
            "| build | family | k | LUT / HEPPO | FF / HEPPO | DSP / HEPPO |", "|---|---|---:|---:|---:|---:|"]
    for c in report["comparison_per_pe"]:
        out.append(f"| `{c['module']}` | {c['family']} | {c['lookahead']} | {c['lut_vs_heppo']:.2f}x | "
                   f"{c['ff_vs_heppo']:.2f}x | {c['dsp_vs_heppo']:.2f}x |")
    goal = report["goal"]
    out += ["", "## Goal", ""]
    if goal["measured"] is None:
        out.append(f"{goal['text']}: not measured in this run.")
    else:
        m = goal["measured"]
        verdict = "**met**" if goal["met"] else "**NOT met**"
        detail = ", ".join(f"{n.upper()} {m[n]} vs {per_pe[n]:.0f} ({'ok' if goal['met_by_resource'][n] else 'over'})"
                           for n in ("lut", "ff", "dsp"))
        out.append(f"{goal['text']}: {verdict} -- `gae_pe` k=2 xc7: {detail}.")
        if "measured_with_powers" in goal:
            w = goal["measured_with_powers"]
            out.append(f"With its own `coef_powers` chain: {w['lut']} LUT, {w['ff']} FF, {w['dsp']} DSP.")
    out += ["", "## Fit checks", "",
            "| device | board | core | LANES | LUT | FF | DSP | BRAM36 | limit | fits |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for fit in report["fit_checks"]:
        if fit["fractions"] is None:
            out.append(f"| {fit['device']} | {fit['board']} | not built | {fit['lanes']} | | | | | "
                       f"{fit['limit_fraction']:.0%} | - |")
            continue
        f = fit["fractions"]
        out.append(f"| {fit['device']} | {fit['board']} | `{fit['row']}` | {fit['lanes']} | {f['lut']:.1%} | "
                   f"{f['ff']:.1%} | {f['dsp']:.1%} | {f['bram36']:.1%} | < {fit['limit_fraction']:.0%} | "
                   f"{'yes' if fit['fits'] else '**no**'} (most used: {fit['binding']}) |")
    bram = report["bram_check"]
    out += ["", "## BRAM inference (FILO stacks: one 65-bit x (T_MAX+1) simple-dual-port RAM per lane)", "",
            f"All cores inferred block RAM: **{'yes' if bram['all_inferred'] else 'NO'}**.", "",
            "| module | family | LANES | T_MAX | RAMB18 | RAMB36 | BRAM36 eq. per lane |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for b in bram["cores"]:
        out.append(f"| `{b['module']}` | {b['family']} | {b['lanes']} | {b['t_max']} | {b['ramb18']} | "
                   f"{b['ramb36']} | {b['bram36_per_lane']:.2f} |")
    if report["netlist_simulation"]:
        out += ["", "## Synthesized netlist vs model (Icarus + yosys `cells_sim.v`)", "",
                "`pe+powers` synthesized, its netlist and its converted RTL driven by the same vectors (3 coefficient "
                "settings incl. C = 1.0, episodes of 1-60 steps, dones, bubbles, saturating magnitudes). Columns "
                "count mismatching A/R outputs plus per-episode SATURATED flags; netlist vs RTL counts output rows "
                "that differ (a synthesis bug shows there, whatever the RTL does).", "",
                "| PE | family | keep workaround | LUT | FF | DSP | outputs | netlist vs model | RTL vs model | "
                "netlist vs RTL | result |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for sim in report["netlist_simulation"]:
            if "error" in sim:
                out.append(f"| k={sim['k']} | {sim['family']} | {'yes' if sim['keep'] else 'no'} | | | | | | | | "
                           f"error: {sim['error']} |")
                continue
            out.append(f"| `pe+powers` k={sim['k']} | {sim['family']} | {'yes' if sim['keep'] else 'no'} | "
                       f"{sim['lut']} | {sim['ff']} | {sim['dsp']} | {sim['outputs']} | {sim['netlist_mismatches']} | "
                       f"{sim['rtl_mismatches']} | {sim['netlist_vs_rtl']} | "
                       f"{'pass' if sim['passed'] else '**FAIL**'} |")
    notes = list(report.get("notes") or [])
    stripped = list(dict.fromkeys(row["module"] for row in report["rows"] if row.get("memory_init_loops_removed")))
    if stripped:
        notes.append("MyHDL's all-zero memory `initial` loops were removed from the Verilog given to yosys for "
                     f"{', '.join(f'`{m}`' for m in stripped)} (block RAM starts at zero anyway; yosys 0.23 unrolls "
                     "those loops very slowly; on a 2-lane core the FF/DSP/BRAM counts are the same and the LUTs "
                     "within 0.4%).")
    if notes:
        report = {**report, "notes": notes}
    if report.get("notes"):
        out += ["", "## Notes", ""] + [f"- {note}" for note in report["notes"]]
    if report.get("replay"):
        replay = report["replay"]
        out += replay_markdown(replay)
        if replay.get("environment"):
            renv = replay["environment"]
            out += ["", f"Replay rows: `python -m pynq_rl.overlay.build.report --cores replay` on {renv['date']}, "
                    f"commit `{renv['git_commit']}` ({renv['git_describe']}); {renv['yosys']}; "
                    f"{replay.get('runtime[s]', 0):.0f} s."]
    if report.get("parsa"):
        parsa = report["parsa"]
        out += parsa_markdown(parsa)
        if parsa.get("environment"):
            penv = parsa["environment"]
            out += ["", f"ParSa rows: `python -m pynq_rl.overlay.build.report --cores parsa` on {penv['date']}, "
                    f"commit `{penv['git_commit']}` ({penv['git_describe']}); {penv['yosys']}; "
                    f"{parsa.get('runtime[s]', 0):.0f} s."]
    if report.get("overlay"):
        overlay = report["overlay"]
        out += overlay_markdown(overlay)
        oenv = overlay["environment"]
        out += ["", f"Whole-overlay rows: `python -m pynq_rl.overlay.build.report --cores overlay` on {oenv['date']}, "
                f"commit `{oenv['git_commit']}` ({oenv['git_describe']}); {oenv['yosys']}; "
                f"{overlay.get('runtime[s]', 0):.0f} s."]
    return "\n".join(out) + "\n"


def _previous_report(out: Path) -> dict:
    """The report already in ``out`` (empty when there is none): sections a run does not regenerate are kept."""
    existing = out / "resources.json"
    return json.loads(existing.read_text()) if existing.is_file() else {}


def build_report(out: str | Path = DEFAULT_OUT, quick: bool = False, jobs: int = 2, work: str | Path | None = None,
                 timeout: float | None = 3600.0, families: tuple[str, ...] = FAMILIES, netlist_sim: bool | None = None,
                 log=print, cores: tuple[str, ...] = ("gae", "replay", "parsa", "overlay")) -> dict:
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
    overlay = None
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
            log(f"netlist sim k={k} keep={keep}: {'pass' if sim.get('passed') else 'FAIL'} "
                f"(netlist vs model {sim.get('netlist_mismatches')}, RTL vs model {sim.get('rtl_mismatches')}, "
                f"netlist vs RTL {sim.get('netlist_vs_rtl')})")
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
        per_core = [*report.get("rows", []), *report.get("replay", {}).get("rows", []),
                    *report.get("parsa", {}).get("rows", [])]
        report["overlay"].update(overlay_section(report["overlay"]["rows"], per_core))
    return report


def _write(out: Path, report: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / "resources.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "resources.md").write_text(markdown(report))
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring. Prints the Markdown page; returns 0."""
    parser = argparse.ArgumentParser(description="yosys resource report of the cores and of each board's whole "
                                                 "overlay.")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="directory of resources.json / resources.md")
    parser.add_argument("--quick", action="store_true", help="one PE (k=2, xc7) and a 1-lane T_MAX=64 core only")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="yosys runs in parallel")
    parser.add_argument("--work", default=None, help="directory for Verilog, logs and netlists (default: "
                        "overlay/build/out/synth or synth_quick)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per yosys run")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated yosys families")
    sim = parser.add_mutually_exclusive_group()
    sim.add_argument("--netlist-sim", dest="netlist_sim", action="store_true", default=None,
                     help="simulate the synthesized PE netlists (default except with --quick)")
    sim.add_argument("--no-netlist-sim", dest="netlist_sim", action="store_false")
    parser.add_argument("--cores", default="gae,replay,parsa,overlay",
                        help="comma-separated parts to synthesize (default gae,replay,parsa,overlay; 'overlay' is "
                             "each board's cores in one netlist; without 'gae', the other parts of an existing "
                             "report in --out are updated)")
    args = parser.parse_args(argv)
    families = tuple(f for f in args.families.split(",") if f)
    cores = tuple(c for c in args.cores.split(",") if c)
    report = build_report(args.out, args.quick, args.jobs, args.work, args.timeout, families, args.netlist_sim,
                          log=lambda msg: print(msg, flush=True), cores=cores)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
