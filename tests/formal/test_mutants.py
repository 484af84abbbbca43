"""Each property catches the bug it is for: the replay core's small build with one deliberate bug in its converted
Verilog (the register file and the output register every core's ports share in kind) must fail the check, at the
property named, with a VCD trace and the step in the message."""

import re
from pathlib import Path

import pytest

from pynq_rl.overlay.build.formal import SMALL_SPECS, FormalCheck, FormalFailure, run_check

CHECK = FormalCheck("replay-mutant", "replay", SMALL_SPECS["replay"], "bmc", 12)

#: name -> (pattern in the converted Verilog, replacement, texts of the assertions one of which must fail)
MUTANTS = {
    "bvalid falls without bready": (
        r"if \(\(s_axi_control_bvalid && s_axi_control_bready\)\) begin",
        "if (s_axi_control_bvalid) begin",
        ("assert (bvalid && bresp == $past(bresp));",),
    ),
    "a response before the write is accepted": (
        r"if \(s_axi_control_awready\) begin",
        "if (s_axi_control_awvalid) begin",
        ("if (bvalid) assert (aw_open != 0 && w_open != 0);",),
    ),
    "SLVERR on reads": (
        r"(?m)^                s_axi_control_rresp <= 0;",
        "                s_axi_control_rresp <= 2;",
        ("if (rvalid) assert (rresp == 2'b00);",),
    ),
    "a write lost while BREADY is low": (
        r"regs_write_strobe <= 1'b1;",
        "regs_write_strobe <= s_axi_control_bready;",
        ("assert (rdata == shadow);",),
    ),
    "WSTRB ignored": (
        r"regs_write_mask <= \{[^;]*\};",
        "regs_write_mask <= 32'hffffffff;",
        # a byte left out is stored, or a START in it fires (STATUS then reads BUSY after an abort)
        ("assert (rdata == shadow);", "assert (!rdata[0]);"),
    ),
    "a write accepted only while BREADY is high (deadlock)": (
        r"\(!s_axi_control_awready\)\)\) begin",
        "(!s_axi_control_awready) && s_axi_control_bready)) begin",
        ("assert (write_wait <= WRITE_LATENCY);",),
    ),
    "TVALID a strobe, not held until TREADY": (
        r"else if \(core_advance\) begin\n(\s*)core_output_out_valid <= \(core_sample_valid \|\| core_dump_valid\);",
        r"else begin\n\1core_output_out_valid <= core_advance && (core_sample_valid || core_dump_valid);",
        ("assert (tvalid && tdata == $past(tdata) && tlast == $past(tlast));",),
    ),
    "TVALID survives a reset": (
        # (MyHDL writes the reset assignments in no fixed order)
        r"(begin: core_output_output_register\n    if \(aresetn == 0\) begin\n"
        r"(?:        core_output_out_last <= 0;\n)?)        core_output_out_valid <= 0;\n",
        r"\1",
        ("always @(*) if (past_valid && after_reset) assert (!tvalid);",),
    ),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_the_property_catches_the_bug(name, tmp_path):
    pattern, replacement, assertions = MUTANTS[name]

    def mutate(text: str) -> str:
        mutated, count = re.subn(pattern, replacement, text, count=1)
        assert count == 1, f"mutant {name!r}: {pattern!r} is not in the converted Verilog"
        return mutated

    result = run_check(CHECK, tmp_path, timeout_s=600, mutate=mutate)
    assert result.status == "fail", f"{name}: {result.status}"
    failed = (result.counterexample.assertion, *result.counterexample.also)
    assert any(a in text for a in assertions for text in failed), f"{name}: failed {failed}"
    assert Path(result.counterexample.vcd).stat().st_size > 0


def test_a_counterexample_names_its_step_assertion_signals_and_trace(tmp_path):
    pattern, replacement, _ = MUTANTS["SLVERR on reads"]
    with pytest.raises(
        FormalFailure, match=r"step \d+: axi_lite_slave\.sv:\d+ `.*rresp.*` \(signals .*rresp.*\); trace .*\.vcd"
    ):
        run_check(CHECK, tmp_path, mutate=lambda text: re.sub(pattern, replacement, text, count=1), raise_on_fail=True)
