"""Rung 5 for the replay core: yosys ``synth_xilinx`` of a small build puts the deep tree levels in block RAM.

The full builds (Pynq-Z2 and ZCU106) are synthesized by ``pynq-rl build report`` (minutes each); this checks the
report's replay path end to end on the quick build (4096 leaves: a leaf level of 256 words x 256 bits) and that
the memory check fails on counts that look like flip-flop memories.
"""

import shutil

import pytest

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import replay_report as R

needs_yosys = pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed")


@pytest.mark.report
@pytest.mark.slow
@needs_yosys
def test_quick_replay_build_infers_block_ram(tmp_path):
    """About 1.5 minutes of yosys on an idle machine (marked slow: it shares 2 CPUs with everything else)."""
    rows = R.run_replay_builds(R.replay_plan(quick=True), tmp_path, jobs=1, timeout=1800, log=lambda msg: None)
    assert len(rows) == 1 and rows[0]["status"] == "ok", rows
    row = rows[0]
    assert row["ramb18"] + row["ramb36"] > 0 and row["uram"] == 0
    assert row["memory_check"]["inferred"], row["memory_check"]
    assert row["dsp"] > 0  # the target multiplies
    section = R.replay_section(rows)
    assert section["memory_check"]["all_inferred"] is True
    assert f"`{row['module']}`" in "\n".join(R.replay_markdown(section))


def test_memory_check_rejects_a_tree_left_in_flip_flops():
    build = R.replay_plan(quick=True)[0]
    bits = sum(R.tree_bits(build.spec).values())
    as_ffs = {"ramb18": 0, "ramb36": 0, "uram": 0, "ff": bits}
    assert R.replay_memory_check(build, as_ffs)["inferred"] is False
    as_bram = {"ramb18": 0, "ramb36": bits // (36 * 1024) + 1, "uram": 0, "ff": 2000}
    assert R.replay_memory_check(build, as_bram)["inferred"] is True


def test_full_plan_targets_both_boards_with_uram_only_on_ultrascale():
    builds = {b.board: b for b in R.replay_plan()}
    assert builds["Pynq-Z2"].spec.capacity == 2**16 and builds["Pynq-Z2"].family == "xc7"
    assert builds["ZCU106"].spec.capacity == 2**20 and builds["ZCU106"].family == "xcup"
    # no global -uram: the ZCU106 spec carries its part's UltraRAM threshold, the Pynq-Z2's none
    assert builds["ZCU106"].options == "" and builds["Pynq-Z2"].options == ""
    assert builds["ZCU106"].spec.uram_min_bits == S.URAM288_BITS and builds["Pynq-Z2"].spec.uram_min_bits == 0
