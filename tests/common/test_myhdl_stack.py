"""MyHDL's call-site lookups walk frames instead of reading source (``hdl.common.myhdl_stack``): the records MyHDL
reads are those of ``inspect.stack()``, and a design converts to the same Verilog with either."""

import inspect
import sys
from pathlib import Path

import myhdl
from myhdl import Signal, always_comb, always_seq, block, intbv

import pynq_rl.overlay.hdl  # noqa: F401  (installs the frame walk)
from pynq_rl.overlay.build.verilog import convert_block
from pynq_rl.overlay.hdl.common import myhdl_stack
from pynq_rl.overlay.hdl.common.mux import mux_tree


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


@block
def _registered_mux(q, a, b, c, d, e, sel, clock, reset):
    """A mux tree (blocks made in loops), blocks made in a list comprehension and a clocked process: every way the
    cores make instances."""
    inputs = [a, b, c, d, e]
    picked = Signal(intbv(0)[8:])
    inverted = [Signal(intbv(0)[8:]) for _ in inputs]

    @block
    def invert(y, a):
        @always_comb
        def logic():
            y.next = ~a

        return logic

    inverters = [invert(y, a) for y, a in zip(inverted, inputs)]
    tree = mux_tree(picked, inverted, sel)

    @always_seq(clock.posedge, reset=reset)
    def register():
        q.next = picked

    return inverters, tree, register


def _convert(out_dir: Path, monkeypatch) -> str:
    """The design's Verilog without the header lines naming the file and the date. MyHDL keeps the names it gave
    instances in process-wide sets and numbers a name it has seen before, so each conversion starts from empty ones."""
    monkeypatch.setattr(myhdl._block, "_inst_name_set", set())
    monkeypatch.setattr(myhdl._block, "_name_set", set())
    ports = (
        Signal(intbv(0)[8:]),
        *(Signal(intbv(0)[8:]) for _ in range(5)),
        Signal(intbv(0)[3:]),
        Signal(bool(0)),
        myhdl.ResetSignal(0, active=0, isasync=False),
    )
    text = convert_block(_registered_mux, ports, out_dir, "registered_mux").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith(("// File:", "// Date:")))


def test_a_design_converts_to_the_same_verilog_with_either_stack(tmp_path, monkeypatch):
    walked = _convert(tmp_path / "walked", monkeypatch)
    for name in myhdl_stack.PATCHED_MODULES:
        monkeypatch.setattr(sys.modules[name], "inspect", inspect)
    assert not myhdl_stack.installed()
    assert _convert(tmp_path / "standard", monkeypatch) == walked
    assert "registered_mux" in walked and walked.count("always @(") >= 1


def test_a_myhdl_that_finds_call_sites_differently_is_left_alone(monkeypatch):
    for name in myhdl_stack.PATCHED_MODULES:
        monkeypatch.setattr(sys.modules[name], "inspect", inspect)
    monkeypatch.delattr(myhdl._instance, "_getCallInfo")
    assert myhdl_stack.install() is False
    assert myhdl._block.inspect is inspect and myhdl._instance.inspect is inspect
