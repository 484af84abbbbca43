"""Every core's AXI4-Lite port and both AXI4-Stream ports, checked formally on the converted Verilog.

Each check is a SymbiYosys run of the property harness (``pynq_rl/overlay/build/formal_harness.py``) at the depth
or induction length of :func:`pynq_rl.overlay.build.formal.checks`; a counterexample fails the test with its step,
assertion, signals and VCD trace in the message.
"""

from pathlib import Path

import pytest

from pynq_rl.overlay.build.formal import BMC_DEPTH, COVER_DEPTH, SMALL_SPECS, FormalCheck, checks, run_check
from pynq_rl.overlay.build.formal_harness import COVERS

CI_CHECKS = checks(quick=True)


def test_every_core_and_the_shipped_builds_are_checked():
    cores = {(c.core, c.build) for c in CI_CHECKS}
    assert {"gae", "replay", "parsa"} == {core for core, _ in cores}
    assert {("gae", "Pynq-Z2"), ("replay", "Pynq-Z2"), ("parsa", "Pynq-Z2")} <= cores


@pytest.mark.parametrize("check", CI_CHECKS, ids=[c.name for c in CI_CHECKS])
def test_no_counterexample(check, tmp_path):
    result = run_check(check, tmp_path, timeout_s=1200, raise_on_fail=True)
    assert result.status == "pass", f"{check.name}: {result.status}\n{result.detail}"


def test_the_replay_bounded_check_contains_a_whole_operation(tmp_path):
    """The cover check finds a run in which an operation starts, ends and STATUS reads DONE without error; the
    replay core's bounded check is at least that deep."""
    result = run_check(FormalCheck("replay-cover", "replay", SMALL_SPECS["replay"], "cover", COVER_DEPTH), tmp_path)
    steps = dict(zip(COVERS, result.reached))
    done = steps["a read of STATUS returns DONE and no error: an operation ran to its end"]
    assert done is not None and done < BMC_DEPTH["replay"], result
    assert initial_loops(tmp_path / "replay-cover" / f"{result.module}.v") > 0  # the trace starts where the core does


def test_a_check_out_of_time_reports_timeout(tmp_path):
    deep = FormalCheck("replay-deep", "replay", SMALL_SPECS["replay"], "bmc", 30)
    result = run_check(deep, tmp_path, timeout_s=5)
    assert result.status == "timeout"
    assert initial_loops(tmp_path / "replay-deep" / f"{result.module}.v") == 0  # bmc and prove: memories start anywhere


def initial_loops(verilog: Path) -> int:
    """How many memories of the Verilog a check ran on have MyHDL's all-zero initial loop."""
    return verilog.read_text().count("initial begin: INITIALIZE_")
