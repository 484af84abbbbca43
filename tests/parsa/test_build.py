"""The ParSa build parameters against what the HDL and the OPaL policy need (no simulation), and what yosys maps its
multiplies to."""

import dataclasses
import importlib.util
import shutil
from pathlib import Path

import pytest

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build.parsa_report import parsa_memory_bits, parsa_plan
from pynq_rl.overlay.hdl.parsa import core
from pynq_rl.overlay.models import parsa as M

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "parsa_cycles.py"
_spec = importlib.util.spec_from_file_location("parsa_cycles", _SCRIPT)
parsa_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parsa_cycles)
build_for, opal_layout = parsa_cycles.build_for, parsa_cycles.opal_layout
needs_yosys = pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys is not installed")


def test_spec_depths_are_the_hdl_depths():
    assert (S.ParsaSpec().act_depth, S.ParsaSpec().update_depth) == (core.ACT_DEPTH, core.UPDATE_DEPTH)


def test_hdl_refuses_a_spec_with_other_depths():
    from myhdl import ResetSignal, Signal

    from pynq_rl.overlay.hdl.top import parsa_core_top, top_signals

    spec = dataclasses.replace(S.ParsaSpec(workers=1, tiles_per_worker=4, max_tilings=1, keys=1), act_depth=3)
    with pytest.raises(
        ValueError,
        match=rf"^this HDL has act_depth {core.ACT_DEPTH} and update_depth "
        rf"{core.UPDATE_DEPTH}; the spec says 3 and",
    ):
        parsa_core_top(*top_signals(spec), Signal(bool(0)), ResetSignal(0, active=0, isasync=False), spec)


@pytest.mark.parametrize("board", [None, "ZCU106"])
def test_every_argmax_level_of_a_board_build_ends_in_a_register(board):
    """Once, with 10 actions (4 tree levels) in 3 register stages, one cycle held two compare-and-select
    levels, the Pynq-Z2 core's slowest path (89 MHz on the ECP5). One register per level up to 16 actions."""
    from pynq_rl.overlay.hdl.parsa import reduce as R

    levels = (S.board(board).slot("parsa").spec.max_actions - 1).bit_length()
    assert levels <= R.ARGMAX_STAGES
    assert R._registered_levels(levels, R.ARGMAX_STAGES) == set(range(levels))


def test_the_descriptor_memory_feeds_only_a_register(tmp_path):
    """Each worker's descriptor block RAM (no output register) once fed the 20:1 position muxes and the DSP48
    behind them in one cycle, the Pynq-Z2 core's slowest xc7 path (4.04 ns). The memory is now read a cycle ahead
    and its output goes to one register (``desc_s1``) and nowhere else, in the converted Verilog of every worker."""
    import re

    from pynq_rl.overlay.build.verilog import convert

    spec = S.board("Pynq-Z2").slot("parsa").spec
    verilog = convert("parsa", spec, tmp_path).read_text()
    for worker in range(spec.workers):
        q = f"core_worker{worker}_desc_q"
        uses = [line.strip() for line in verilog.splitlines() if re.search(rf"\b{q}\b", line)]
        readers = [line for line in uses if not line.startswith(("reg ", f"{q} <="))]
        assert readers == [f"core_worker{worker}_desc_s1 <= {q};"], readers


def test_no_compare_of_ndims_sits_in_front_of_a_horner_multiplier(tmp_path):
    """Each Horner stage's operand select once compared the tiling's ndims in the cycle of the multiply-add,
    so the compare, the select, the multiplier and the add made the Pynq-Z2 core's slowest routed path (98.5 MHz
    on the ECP5). Whether the tiling has a stage's dim is now a register set a stage ahead: in the converted Verilog
    only clocked blocks read the ndims registers."""
    import re

    from pynq_rl.overlay.build.verilog import convert
    from tests.common.verilog_text import processes

    spec = S.board("Pynq-Z2").slot("parsa").spec
    combinational = [p for p in processes(convert("parsa", spec, tmp_path).read_text()) if not p.clocked]
    assert any(p.name.startswith("core_worker0_") for p in combinational)
    readers = [p.name for p in combinational if re.search(r"core_worker\d+_s\d_ndims", p.text)]
    assert readers == []


def test_opal_policy_fits_the_zcu106_build():
    """OPaL's DDoS shape (22744 tiles, 136 tilings) schedules onto the ZCU106 build (8 workers): at most 17 tilings
    per worker, the busiest bank one 4-D tiling (7**4 = 2401 rows) plus smaller ones, within its 4096 rows."""
    spec = S.board("ZCU106").slot("parsa").spec
    layout = opal_layout()
    assert (layout.n_tiles, layout.n_tilings) == (22744, 136)
    descriptors = M.schedule(layout, spec)
    rows = [sum(d.rows for d in descriptors if d.worker == w) for w in range(spec.workers)]
    assert 2401 < max(rows) <= spec.tiles_per_worker
    assert max(sum(d.worker == w for d in descriptors) for w in range(spec.workers)) == 17 == -(-136 // 8)


def test_benchmark_builds_hold_the_layout_at_every_worker_count():
    for workers in (1, 4, 16, 32):
        spec, descriptors = build_for(workers)
        assert len(descriptors) == 136 and spec.workers == workers
        assert max(sum(d.worker == w for d in descriptors) for w in range(workers)) == spec.max_tilings


def test_report_plans_the_boards_parsa_builds():
    builds = parsa_plan()
    assert [(b.board, b.spec) for b in builds] == [
        (name, S.board(name).slot("parsa").spec) for name in ("Pynq-Z2", "ZCU106")
    ]
    bits = parsa_memory_bits(builds[1].spec)
    assert bits["policy_bits"] == 8 * 4096 * 10 * 16  # workers x rows x actions x value bits


@needs_yosys
def test_every_multiply_of_the_config_check_keeps_a_dsp_pipeline_register(tmp_path):
    """The CONFIG check's three multiplies (n_t ** 2, ** 3, ** 4) each map to a DSP48E1 with its M or P register.

    Fed the bare register of the square, the C3 multipliers took it as their own input register (yosys
    ``xilinx_dsp``), and the square's DSP was left with neither: the one unregistered multiply of the overlay."""
    from myhdl import ResetSignal, Signal, intbv

    from pynq_rl.overlay.build.yosys import synthesize
    from pynq_rl.overlay.hdl.parsa.config_check import parsa_config_check
    from pynq_rl.overlay.hdl.parsa.params import ParsaWidths

    ports = (
        Signal(bool(0)),
        Signal(bool(0)),
        Signal(intbv(0)[64:]),
        Signal(intbv(0)[64:]),
        Signal(intbv(0)[4:]),
        Signal(bool(0)),
        Signal(bool(0)),
        ResetSignal(0, active=1, isasync=False),
    )
    parsa_config_check(*ports, ParsaWidths(S.board("Pynq-Z2").slot("parsa").spec)).convert(
        hdl="Verilog", path=str(tmp_path), name="config_check", testbench=False
    )
    result = synthesize(
        tmp_path / "config_check.v", "config_check", "xc7", [], tmp_path / "yosys", depth=False, timeout=900
    )
    assert (result["dsp"], result["dsp_with_mreg_or_preg"]) == (3, 3)


@pytest.mark.report  # a whole core's synthesis: a minute and a half
@needs_yosys
def test_every_multiply_of_the_pynq_z2_core_keeps_a_dsp_pipeline_register(tmp_path):
    """The Pynq-Z2 ParSa core synthesized alone (as the resource report does): all 39 DSP48E1s use M or P, and no
    shift register (SRL16E) lies in front of any of them.

    The workers' Horner stages fed each product register straight into the next stage's multiplier; yosys packed
    some of those registers as the next DSP's input register, leaving 3 of 39 DSPs with neither (the whole-overlay
    synthesis, packing in another order, had none). With the descriptor registered in S1, the selects of the first
    Horner stage came down a three-register chain, which yosys packs into SRL16Es: 12 of them fed DSP inputs
    through the operand select (xc7 sta 4.67 ns) until those stage registers took the reset."""
    from pynq_rl.overlay.build.verilog import convert
    from pynq_rl.overlay.build.yosys import synthesize

    path = convert("parsa", S.board("Pynq-Z2").slot("parsa").spec, tmp_path)
    result = synthesize(path, path.stem, "xc7", [], tmp_path / "yosys", depth=False, timeout=900)
    assert (result["dsp"], result["dsp_with_mreg_or_preg"], result["srl_into_dsp"]) == (39, 39, 0)
