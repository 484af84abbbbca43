"""Whole-overlay synthesis: the wrapper of a board's cores elaborates, synthesizes, and its fit check reads right."""

import shutil

import pytest

from pynq_rl.overlay.build import overlay_report as O
from pynq_rl.overlay.build.yosys import DEVICES, synthesize
from tests.common.boards import RTL_PARSA_TEST_BOARD, RTL_REPLAY_TEST_BOARD, RTL_TEST_BOARD

#: One small build of each core: what a board's overlay holds, at sizes yosys maps in seconds.
SMALL_SLOTS = (*RTL_TEST_BOARD.cores, *RTL_REPLAY_TEST_BOARD.cores, *RTL_PARSA_TEST_BOARD.cores)
TINY = O.OverlayTarget("Pynq-Z2", "xc7z020", "", 0.70)

needs_yosys = pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys is not installed")


def test_port_declarations_and_wrapper():
    verilog = (
        "module a (\n    aclk,\n    x,\n    y\n);\ninput aclk;\ninput [7:0] x;\noutput reg [3:0] y;\n"
        "endmodule\nmodule b (aclk, z);\ninput aclk;\noutput z;\nendmodule\n"
    )
    ports = O.port_declarations(verilog, "a")
    assert ports == [("input", "", "aclk"), ("input", "[7:0]", "x"), ("output", "[3:0]", "y")]
    assert O.port_declarations(verilog, "b") == [("input", "", "aclk"), ("output", "", "z")]
    with pytest.raises(ValueError, match="not found"):
        O.port_declarations(verilog, "c")
    wrapper = O.wrapper_verilog("top", [("gae", "a", ports)])
    assert "input [7:0] gae_x," in wrapper and "output [3:0] gae_y\n" in wrapper
    assert ".aclk(aclk)" in wrapper and ".x(gae_x)" in wrapper and "gae_aclk" not in wrapper


@pytest.mark.report  # three cores synthesized as one netlist: most of a minute
@needs_yosys
def test_small_overlay_synthesizes_as_one_netlist(tmp_path):
    """The three cores in one wrapper: every instance resolves (``hierarchy -check``), the flattened netlist has
    the cores' memories (LUT-RAM at these sizes) and multipliers, and the section's fit check divides by the part."""
    path, parts = O.overlay_source(TINY, tmp_path, SMALL_SLOTS)
    assert [p["core"] for p in parts] == ["gae", "replay", "parsa"]
    result = synthesize(path, TINY.top, "xc7", [], tmp_path / "yosys", depth=False, timeout=900)
    assert result["dsp"] > 0 and result["lut_as_memory"] + result["bram36"] > 0 and result["lut"] > 1000
    row = {
        "board": TINY.board,
        "part": TINY.part,
        "module": TINY.top,
        "options": "",
        "family": "xc7",
        "limit": TINY.limit,
        "status": "ok",
        "cores": parts,
        **result,
    }
    alone = [
        {"module": p["module"], "family": "xc7", "status": "ok", "lut": 1, "ff": 1, "dsp": 1, "bram36": 1, "uram": 0}
        for p in parts
    ]
    section = O.overlay_section([row], alone)
    fit = section["fit_checks"][0]
    assert fit["fractions"]["lut"] == pytest.approx(result["lut"] / DEVICES["xc7z020"].lut)
    assert fit["fits"] == all(f <= 0.70 for f in fit["fractions"].values())
    assert fit["sum_of_cores"]["lut"] == 3
    text = "\n".join(O.overlay_markdown({**section, "environment": {}}))
    assert "Whole overlay" in text and f"{result['lut']:,}" in text


def test_fit_check_flags_an_overlay_over_its_headroom():
    row = {
        "board": "Pynq-Z2",
        "part": "xc7z020",
        "module": "m",
        "options": "",
        "family": "xc7",
        "limit": 0.70,
        "status": "ok",
        "lut": 40000,
        "ff": 1000,
        "dsp": 10,
        "bram36": 10,
        "uram": 0,
        "ramb18": 0,
        "ramb36": 10,
    }
    fit = O.overlay_section([row])["fit_checks"][0]
    assert not fit["fits"] and fit["binding"] == "lut" and fit["fractions"]["lut"] == pytest.approx(40000 / 53200)
    assert "sum_of_cores" not in fit
