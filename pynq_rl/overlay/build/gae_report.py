"""The GAE core's part of the resource report: the processing element converted on its own, the GAE builds
(PE, PE + coefficient chain, whole cores at several LANES and k) synthesized by yosys, and the PE netlist simulated
against the model (the check that caught yosys's DSP feedback-register bug: the netlist computed garbage while its
resource counts looked normal).

:mod:`.report` assembles the page from this module's rows and simulations and from the replay, ParSa and
whole-overlay sections (:mod:`.replay_report`, :mod:`.parsa_report`, :mod:`.overlay_report`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np
from myhdl import Signal, always_comb, block, intbv

from .. import spec as S
from ..hdl.gae.pe import coef_powers, gae_pe
from ..models.gae import gae_fixed
from .core_specs import slot_spec
from .timing_tools import tool_path
from .verilog import convert, convert_block, module_name
from .yosys import synthesis_source, synthesize, yosys_datdir

__all__ = [
    "HEPPO",
    "FIT_CHECKS",
    "FAMILIES",
    "WHAT_IF_COEF",
    "Build",
    "pe_unit",
    "pe_with_powers",
    "convert_pe",
    "loop_registers",
    "coef_name",
    "pe_module_name",
    "plan",
    "run_builds",
    "simulate_pe_netlist",
]

FAMILIES = ("xc7", "xcup")


#: HEPPO's Table IV: the GAE module with 64 PEs and the 2-step lookahead (totals; per PE = total / 64).
class HeppoFigures(TypedDict):
    """HEPPO's published resource figures (the comparison of the report's GAE goals)."""

    source: str
    pes: int
    lookahead: int
    lut: int
    ff: int
    dsp: int


HEPPO: HeppoFigures = {
    "source": "Table IV (64 PEs, 2-step lookahead)",
    "pes": 64,
    "lookahead": 2,
    "lut": 12864,
    "ff": 54336,
    "dsp": 768,
}


#: (device, LANES of the core build checked on it, largest allowed fraction of any resource).
FIT_CHECKS = (("xc7z020", 8, 1 / 3), ("xczu7ev", 64, 1.0))


# ---------------------------------------------------------------------------------------------------------------
# The PE, converted standalone
# ---------------------------------------------------------------------------------------------------------------


@block
def pe_unit(
    adv,
    ret,
    out_valid,
    saturated,
    reward,
    value,
    done,
    in_valid,
    in_bootstrap,
    gamma,
    powers_bus,
    clock,
    spec: S.GaeSpec,
):
    """One :func:`gae_pe` with flat ports; ``powers_bus`` holds C**1 .. C**k (COEF words, C**1 at the bottom).

    powers_bus : Signal(intbv[k * coef.width]), in -- the outputs of :func:`coef_powers` in the core
    other ports as :func:`gae_pe`
    """
    width = spec.coef.width
    one = 1 << spec.coef.frac
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]
    insts = [_slice_port(powers[j], powers_bus, (j - 1) * width, width) for j in range(1, spec.lookahead + 1)]
    pe = gae_pe(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock, spec)
    pe.name = "pe"
    return insts, pe


@block
def pe_with_powers(
    adv,
    ret,
    out_valid,
    saturated,
    reward,
    value,
    done,
    in_valid,
    in_bootstrap,
    gamma,
    gamma_lambda,
    clock,
    spec: S.GaeSpec,
):
    """One :func:`gae_pe` fed by its own :func:`coef_powers` chain (what a one-lane core holds).

    gamma_lambda : Signal(COEF), in -- C; the other ports as :func:`gae_pe`
    """
    one = 1 << spec.coef.frac
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]
    chain = coef_powers(powers, gamma_lambda, clock, spec)
    chain.name = "powers"
    pe = gae_pe(adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock, spec)
    pe.name = "pe"
    return chain, pe


@block
def _slice_port(y, bus, lo: int, width: int):
    @always_comb
    def logic():
        y.next = bus[lo + width : lo]

    return logic


def _pe_ports(spec: S.GaeSpec, with_powers: bool):
    def data():
        return Signal(intbv(0, min=spec.data.min_code, max=spec.data.max_code + 1))

    def coef():
        return Signal(intbv(0, min=0, max=(1 << spec.coef.frac) + 1))

    def bit():
        return Signal(bool(0))

    last = coef() if with_powers else Signal(intbv(0)[spec.lookahead * spec.coef.width :])
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
    return convert_block(
        pe_with_powers if with_powers else pe_unit,
        (*_pe_ports(spec, with_powers), spec),
        out_dir,
        name or pe_module_name(spec, with_powers),
        (".*(not used|not driven).*",),
    )


def loop_registers(verilog: str) -> list[str]:
    """Names of the registers on each PE's A feedback loop in converted Verilog (for ``setattr -set keep 1``).

    These are ``*_adv3`` (A_t), the taps of the ``adv_hist`` delay line (A_{t+2} .. A_{t+k-1}, k >= 3) and
    ``*_adv_tail`` (A_{t+k}, the tail product's operand, k >= 2): the fabric registers yosys could absorb into a
    DSP whose output feeds back to its own input (yosys 0.23 and 0.70 absorb such a register twice). The loop's
    pipeline register inside the DSPs (their M registers) is meant to be absorbed. The last pattern (a register
    taking ``*_tail_mul_product_rounded``) finds the tail register of the earlier PE, whose multiplies had no M or
    P register.
    """
    names = set(re.findall(r"^\s*reg\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?(\w+_adv3)\b", verilog, re.M))
    names |= set(re.findall(r"^\s*reg\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?(\w+_adv_hist\w*)\b", verilog, re.M))
    # a tap (or adv_tail, a dff_en instance) may be named after a block's port: find it by its process
    for block_text in re.findall(r"begin: \w+_(?:adv_hist_stage\d+|adv_tail)_seq\b(.*?)\nend\b", verilog, re.S):
        names |= set(re.findall(r"^\s*(\w+)\s*<=", block_text, re.M))
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
        base = slot_spec(board.slot("gae"), S.GaeSpec)
        if base.lanes == lanes:
            return dataclasses.replace(base, t_max=t_max, lookahead=k)
    return S.GaeSpec(lanes=lanes, t_max=t_max, lookahead=k, stream_bytes=8)


def plan(quick: bool = False, families: tuple[str, ...] = FAMILIES) -> list[Build]:
    """The builds of a report, cheapest first (so a slow big core only delays the end)."""
    if quick:
        return [
            Build("pe", S.GaeSpec(lanes=1, lookahead=2), "xc7"),
            Build("core", S.GaeSpec(lanes=1, t_max=64, lookahead=2, stream_bytes=8), "xc7"),
        ]
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
    return {
        "kind": build.kind,
        "module": build.top,
        "family": build.family,
        "lanes": spec.lanes if build.kind == "core" else 1,
        "t_max": spec.t_max if build.kind == "core" else None,
        "lookahead": spec.lookahead,
        "stream_bytes": spec.stream_bytes if build.kind == "core" else None,
        "coef": coef_name(spec),
        **result,
    }


def run_builds(
    builds: list[Build], work_dir: Path, jobs: int = 2, timeout: float | None = None, log=print
) -> list[dict]:
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
        log(
            f"{build.key}: {result['status']} "
            + (
                f"LUT {result['lut']} FF {result['ff']} DSP {result['dsp']} BRAM36 {result['bram36']} "
                f"({result['runtime[s]']} s)"
                if result["status"] == "ok"
                else ""
            )
        )
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
    for n_steps, scale, p_done in (
        (1, 1 << 18, 0.0),
        (2, 1 << 18, 0.5),
        (3, 1 << 20, 0.3),
        (7, 1 << 16, 0.2),
        (40, 1 << 18, 0.1),
        (25, 1 << 29, 0.1),
        (30, 1 << 31, 0.2),
        (60, 1 << 17, 0.05),
    ):
        rewards = np.clip(rng.normal(0, scale, n_steps), lo, hi).astype(np.int64)
        values = np.clip(rng.normal(0, scale, n_steps + 1), lo, hi).astype(np.int64)
        dones = (rng.random(n_steps) < p_done).astype(np.int64)
        episodes.append((rewards, values, dones))
    rewards = np.full(20, hi, np.int64)  # long saturating run: A pinned at the top
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
                    first.append(
                        {
                            "gammas": list(gammas),
                            "episode": e_index,
                            "t": len(adv) - 1 - t_rev,
                            "got": row,
                            "want": [int(a), int(r)],
                        }
                    )
        if sat_seen != bool(sat):
            mismatches += 1
            if len(first) < 5:
                first.append(
                    {"gammas": list(gammas), "episode": e_index, "saturated_got": sat_seen, "saturated_want": bool(sat)}
                )
    if len(got) != index:
        mismatches += 1
        first.append({"gammas": list(gammas), "outputs_got": len(got), "outputs_want": index})
    return mismatches


def _run_bench(
    sources: list[Path], top: str, run_dir: Path, tag: str, lines: list[str], gammas: tuple[int, int]
) -> list[list[str]]:
    """Compile and run the test bench on ``sources``; return the output rows (valid, A, R, saturated)."""
    vectors, out = run_dir / f"{tag}_vectors.hex", run_dir / f"{tag}_outputs.txt"
    vectors.write_text("\n".join(lines) + "\n")
    bench, binary = run_dir / f"{tag}_tb.v", run_dir / f"{tag}_tb.vvp"
    bench.write_text(
        _TESTBENCH.format(n=len(lines), top=top, out=out, vectors=vectors, gamma=gammas[0], gamma_lambda=gammas[1])
    )
    subprocess.run(
        [tool_path("iverilog"), "-g2012", "-o", str(binary), "-s", "tb", str(bench), *map(str, sources)],
        check=True,
        capture_output=True,
        text=True,
    )
    subprocess.run([tool_path("vvp"), "-n", str(binary)], check=True, capture_output=True, text=True, cwd=run_dir)
    return [line.split() for line in out.read_text().splitlines() if line.strip()]


def simulate_pe_netlist(
    k: int = 2,
    family: str = "xc7",
    keep: bool = True,
    work_dir: str | Path | None = None,
    seed: int = 0,
    gammas: tuple[tuple[int, int], ...] | None = None,
) -> dict:
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
    first_rtl: list[dict] = []
    first_net: list[dict] = []
    for g_index, pair in enumerate(gammas):
        lines, want = [], []
        for rewards, values, dones in _episodes(rng, spec):
            lines.append(_vector(1, 1, 0, 0, int(values[-1])))
            for t in range(len(rewards) - 1, -1, -1):
                while rng.random() < 0.2:  # bubbles: in_valid low between elements
                    lines.append(_vector(0, 0, int(rng.integers(2)), int(rng.integers(-99, 99)), 0))
                lines.append(_vector(1, 0, int(dones[t]), int(rewards[t]), int(values[t])))
            model = gae_fixed(
                spec, rewards[:, None], values[:, None], dones[:, None], pair[0], pair[1], use_numba=False
            )
            want.append((model.advantages[::-1, 0], model.returns[::-1, 0], model.saturated))
            lines += [_vector(0, 0, 0, 0, 0)] * int(rng.integers(0, 3))
        outputs += sum(len(a) for a, _, _ in want)
        got_rtl = _run_bench([rtl], top, run_dir, f"rtl{g_index}", lines, pair)
        got_net = _run_bench([netlist, cells_sim], top, run_dir, f"net{g_index}", lines, pair)
        rtl_bad += _compare(got_rtl, want, pair, first_rtl)
        net_bad += _compare(got_net, want, pair, first_net)
        diff += sum(a != b for a, b in zip(got_rtl, got_net)) + abs(len(got_rtl) - len(got_net))
    return {
        "k": k,
        "family": family,
        "keep": keep,
        "keep_registers": regs,
        "lut": synth["lut"],
        "ff": synth["ff"],
        "dsp": synth["dsp"],
        "outputs": outputs,
        "passed": net_bad == 0,
        "netlist_mismatches": net_bad,
        "rtl_mismatches": rtl_bad,
        "netlist_vs_rtl": diff,
        "first_netlist_mismatches": first_net,
        "first_rtl_mismatches": first_rtl,
        "runtime[s]": round(time.perf_counter() - t0, 2),
    }
