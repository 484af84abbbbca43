"""MyHDL's call-site lookups walk frames instead of reading source (``hdl.common.myhdl_stack``): the records MyHDL
reads are those of ``inspect.stack()``, and a design converts to the same Verilog with either."""

import inspect
import sys

import myhdl

import pynq_rl.overlay.hdl  # noqa: F401  (installs the frame walk)
from pynq_rl.overlay.hdl.common import myhdl_stack
from tests.common.small_design import converted_text


def _fields(records) -> list[tuple]:
    """What MyHDL reads of a record (the frame and the function name), with the file and line besides."""
    return [(r.frame, r.filename, r.lineno, r.function) for r in records]


def _both_stacks():
    """The records MyHDL's view gives and those of the standard ``inspect.stack()``, both seen from here."""
    return myhdl._block.inspect.stack(), inspect.stack(context=0)


def test_importing_the_hdl_package_installs_the_frame_walk():
    assert myhdl_stack.installed()
    assert myhdl_stack.install() is True  # idempotent
    assert myhdl._block.inspect is myhdl._instance.inspect
    assert myhdl._block.inspect.getsourcelines is inspect.getsourcelines  # everything else is the standard module


def test_records_match_inspect_stack_from_a_function_and_a_list_comprehension():
    def nested():
        return _both_stacks()

    ours, theirs = nested()
    assert len(ours) == len(theirs)
    assert _fields(ours) == _fields(theirs)
    assert [r.function for r in ours[:3]] == ["_both_stacks", "nested", inspect.currentframe().f_code.co_name]
    assert _fields(ours[1:4]) == _fields(theirs[1:4])
    assert ours[-1].frame is theirs[-1].frame

    (ours, theirs), *_ = [_both_stacks() for _ in range(1)]
    assert ours[1].function == "<listcomp>" == theirs[1].function
    assert _fields(ours) == _fields(theirs)


def test_a_design_converts_to_the_same_verilog_with_either_stack(tmp_path, monkeypatch):
    walked = converted_text(tmp_path / "walked")
    for name in myhdl_stack.PATCHED_MODULES:
        monkeypatch.setattr(sys.modules[name], "inspect", inspect)
    assert not myhdl_stack.installed()
    assert converted_text(tmp_path / "standard") == walked
    assert "registered_mux" in walked and walked.count("always @(") >= 1


def test_a_myhdl_that_finds_call_sites_differently_is_left_alone(monkeypatch):
    for name in myhdl_stack.PATCHED_MODULES:
        monkeypatch.setattr(sys.modules[name], "inspect", inspect)
    monkeypatch.delattr(myhdl._instance, "_getCallInfo")
    assert myhdl_stack.install() is False
    assert myhdl._block.inspect is inspect and myhdl._instance.inspect is inspect
