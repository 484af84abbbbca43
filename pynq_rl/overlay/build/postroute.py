"""Post-route simulation: the ECP5-routed netlist of the GAE PE (a Verilog bench against the model, the converted
RTL on the same bench) and of whole small GAE and replay cores (the cocotb benches of ``tests/gae`` and
``tests/replay``), in Icarus with the cell models of :mod:`.timing_ecp5`.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from .. import spec as S
from ..models.gae import gae_fixed
from .gae_report import pe_module_name
from .timing_tools import TIMEOUTS_S, run_tool, tool_path
from .verilog import module_name
from .yosys import REPO

__all__ = ["simulate_pe_routed", "simulate_core_routed", "simulate_replay_routed", "put_the_checkout_first_on_sys_path"]

# ---------------------------------------------------------------------------------------------------------------
# Post-route simulation
# ---------------------------------------------------------------------------------------------------------------

_PE_BENCH = """`timescale 1ns/1ps
// Post-route bench of {top} (pynq_rl/overlay/build/postroute.py): one input row per clock from {vectors},
// outputs to {out}.
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
    #1;  // constant configuration at #1, not at time 0 (the DSP model leaves inputs set at time 0 at x)
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


def _pe_stimulus(
    spec: S.GaeSpec, rng: np.random.Generator, episodes: int, gammas: tuple[int, int]
) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray, bool]]]:
    """Input rows (hex) of ``episodes`` random episodes, fed backward as the core does (bootstrap row first),
    with bubbles; and the model's (A, R in output order, saturated) per episode."""
    width = spec.data.width
    mask = (1 << width) - 1
    lo, hi = spec.data.min_code, spec.data.max_code

    def row(valid, boot, done, reward, value):
        word = (
            (valid << (2 * width + 2))
            | (boot << (2 * width + 1))
            | (done << (2 * width))
            | ((reward & mask) << width)
            | (value & mask)
        )
        return f"{word:x}"

    rows, want = [], []
    for _ in range(episodes):
        n_steps = int(rng.integers(1, 33))
        scale = float(2.0 ** rng.choice([8, 16, 20, width - 3, width]))  # small to saturating
        rewards = np.clip(np.round(rng.normal(0, scale, n_steps)), lo, hi).astype(np.int64)
        values = np.clip(np.round(rng.normal(0, scale, n_steps + 1)), lo, hi).astype(np.int64)
        dones = (rng.random(n_steps) < 0.15).astype(np.int64)
        rows.append(row(1, 1, 0, 0, int(values[-1])))
        for t in range(n_steps - 1, -1, -1):
            while rng.random() < 0.2:  # a bubble: in_valid low, the other inputs random
                rows.append(row(0, int(rng.integers(2)), int(rng.integers(2)), int(rng.integers(lo, hi)), 0))
            rows.append(row(1, 0, int(dones[t]), int(rewards[t]), int(values[t])))
        model = gae_fixed(
            spec, rewards[:, None], values[:, None], dones[:, None], gammas[0], gammas[1], use_numba=False
        )
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
    run_tool(
        [tool_path("iverilog"), "-g2012", "-o", binary.name, "-s", "tb", bench.name, *map(str, sources)],
        run_dir,
        TIMEOUTS_S["iverilog"],
        f"iverilog of {bench.name}",
    )
    proc = run_tool([tool_path("vvp"), "-n", binary.name], run_dir, TIMEOUTS_S["vvp"], f"vvp of {bench.name}")
    if "not modelled" in proc.stdout:
        raise RuntimeError(f"{bench.name}: {proc.stdout.strip().splitlines()[-1]}")


def simulate_pe_routed(
    spec: S.GaeSpec,
    routed_v: Path,
    rtl_v: Path,
    cells: Path,
    run_dir: Path,
    seed: int = 15,
    episodes: int = 24,
    gammas: tuple[tuple[int, int], ...] | None = None,
) -> dict:
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
    first_routed: list[dict] = []
    first_rtl: list[dict] = []
    for g_index, (gamma, gamma_lambda) in enumerate(gammas):
        rows, want = _pe_stimulus(spec, rng, episodes, (gamma, gamma_lambda))
        outputs += sum(len(a) for a, _, _ in want)
        saturating += sum(s for _, _, s in want)
        for tag, sources in (("routed", [routed_v, cells]), ("rtl", [rtl_v])):
            name = f"pe_{tag}_{g_index}"
            (run_dir / f"{name}.hex").write_text("\n".join(rows) + "\n")
            bench = run_dir / f"{name}_tb.v"
            bench.write_text(
                _PE_BENCH.format(
                    top=top,
                    dw=spec.data.width,
                    cw=spec.coef.width,
                    n=len(rows),
                    vectors=f"{name}.hex",
                    out=f"{name}.out",
                    gamma=gamma,
                    gamma_lambda=gamma_lambda,
                    drain=4 * (spec.lookahead + 8),
                )
            )
            _icarus([s.resolve() for s in sources], bench, run_dir)
            got = [line.split() for line in (run_dir / f"{name}.out").read_text().splitlines() if line.strip()]
            if tag == "routed":
                routed_bad += _pe_mismatches(got, want, first_routed)
            else:
                rtl_bad += _pe_mismatches(got, want, first_rtl)
    return {
        "what": f"`{top}` routed, {len(gammas)} x {episodes} random episodes (1-32 steps, bubbles, dones, "
        "saturating magnitudes), every A_t/R_t and per-episode saturation vs gae_fixed",
        "outputs": outputs,
        "saturating_episodes": saturating,
        "routed_mismatches": routed_bad,
        "rtl_mismatches": rtl_bad,
        "passed": routed_bad == 0 and outputs > 0,
        "first_routed_mismatches": first_routed,
        "first_rtl_mismatches": first_rtl,
        "runtime[s]": round(time.perf_counter() - t0, 1),
    }


def put_the_checkout_first_on_sys_path() -> None:
    """Move the checkout to the front of ``sys.path`` before a routed netlist's cocotb bench is imported.

    The benches live in the checkout's ``tests`` package, and the simulator's Python gets this process's
    ``sys.path`` as its ``PYTHONPATH``: if site-packages comes first, it finds the ``tests`` package pynq's wheel
    installs there and the simulation ends in an import error. The checkout may already be on the path, but last
    (an import earlier in a plain script appends it), so being on it is not enough. Outside a checkout (an installed
    wheel) the path is left alone and the bench's import fails with its own message.
    """
    checkout = str(REPO)
    if not (REPO / "tests" / "common" / "cocotb_run.py").is_file() or sys.path[:1] == [checkout]:
        return
    sys.path[:] = [checkout] + [entry for entry in sys.path if entry != checkout]


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
        put_the_checkout_first_on_sys_path()
        from tests.common.cocotb_run import missing_tools as cocotb_missing
        from tests.common.cocotb_run import run_outside_pytest
        from tests.gae import test_verilog as gae_bench
    except ImportError as exc:
        return {
            "passed": False,
            "error": f"the cocotb bench is not importable ({exc}): run from a checkout with the test extra installed",
        }
    if cocotb_missing():
        return {"passed": False, "error": f"not installed: {', '.join(cocotb_missing())}"}
    combined = run_dir / f"{routed_v.stem}.sim.v"
    combined.write_text(routed_v.read_text() + "\n" + cells.read_text())
    cases = gae_bench.random_cases(spec, gae_bench.SEEDS[spec.lookahead])
    cases = cases[: max(4, operations)]
    vectors = gae_bench.make_vectors(spec, cases)
    work = run_dir / "cocotb"
    if work.exists():
        shutil.rmtree(work)
    try:
        results = run_outside_pytest(gae_bench.run_cocotb, spec, combined, vectors, work)
    except RuntimeError as exc:  # cocotb_tools raises when the simulator exits abnormally
        return {
            "passed": False,
            "error": f"the simulation did not complete: {exc}",
            "runtime[s]": round(time.perf_counter() - t0, 1),
        }
    return {
        "what": f"`{module_name('gae', spec)}` routed, {len(cases)} operations through the cocotb bench of "
        "tests/gae/test_verilog.py x (idle, back-pressure) on/off: output bytes, TLAST, STATUS, CYCLES "
        "vs the model",
        "operations": len(cases) * gae_bench.COCOTB_TESTS_PER_RUN,
        "passed": results is not None,
        **({} if results else {"error": "cocotb reported failures (see log)"}),
        "runtime[s]": round(time.perf_counter() - t0, 1),
    }


def simulate_replay_routed(
    spec: S.ReplaySpec, routed_v: Path, cells: Path, run_dir: Path, seed: int = 15, operations: int = 12
) -> dict:
    """Simulate the routed netlist of a whole replay core with the cocotb bench of ``tests/replay/test_verilog.py``
    (AXI-Lite registers, AXI-Stream in and out, with and without idle cycles and back-pressure): the output bytes,
    TLAST, STATUS, CYCLES, TOTAL, NONZERO and SEED after each operation must equal the model's.

    The operations are that file's: CLEAR, the directed edge cases (refused STARTs, repeats, saturation, a
    misplaced TLAST, DUMP), then ``operations`` random ones from ``numpy.random.default_rng(seed)``, their SAMPLE
    batches at most 48 long (the build's MAX_COUNT is far larger; a batch's length changes nothing in the
    logic). Returns ``passed`` and, where the bench could not run, ``error`` saying why.
    """
    t0 = time.perf_counter()
    try:
        put_the_checkout_first_on_sys_path()
        from tests.common.cocotb_run import missing_tools as cocotb_missing
        from tests.common.cocotb_run import run_outside_pytest
        from tests.replay import test_verilog as replay_bench
    except ImportError as exc:
        return {
            "passed": False,
            "error": f"the cocotb bench is not importable ({exc}): run from a checkout with the test extra installed",
        }
    if cocotb_missing():
        return {"passed": False, "error": f"not installed: {', '.join(cocotb_missing())}"}
    combined = run_dir / f"{routed_v.stem}.sim.v"
    combined.write_text(routed_v.read_text() + "\n" + cells.read_text())
    ops = replay_bench.random_ops(dataclasses.replace(spec, max_count=min(spec.max_count, 48)), seed, operations)
    vectors = replay_bench.make_vectors(spec, ops)
    work = run_dir / "cocotb"
    if work.exists():
        shutil.rmtree(work)
    try:
        results = run_outside_pytest(replay_bench.run_cocotb, spec, combined, vectors, work)
    except RuntimeError as exc:  # cocotb_tools raises when the simulator exits abnormally
        return {
            "passed": False,
            "error": f"the simulation did not complete: {exc}",
            "runtime[s]": round(time.perf_counter() - t0, 1),
        }
    return {
        "what": f"`{module_name('replay', spec)}` routed, {len(ops)} operations (SET, SAMPLE, SAMPLE_UNIFORM, "
        "DUMP, CLEAR, refused STARTs, SEED) through the cocotb bench of tests/replay/test_verilog.py x "
        "(idle, back-pressure) on/off: output bytes, TLAST, STATUS, CYCLES, TOTAL, NONZERO, SEED vs "
        "the model",
        "operations": len(ops) * replay_bench.COCOTB_TESTS_PER_RUN,
        "passed": results is not None,
        **({} if results else {"error": "cocotb reported failures (see log)"}),
        "runtime[s]": round(time.perf_counter() - t0, 1),
    }
