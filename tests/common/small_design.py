"""A small design that makes instances every way the cores do (blocks called in a loop inside a mux tree, blocks made
in a list comprehension, a clocked process), for tests of how MyHDL names and converts instances."""

from pathlib import Path

import myhdl
from myhdl import Signal, always_comb, always_seq, block, intbv

from pynq_rl.overlay.build.verilog import convert_block
from pynq_rl.overlay.hdl.common.mux import mux_tree

__all__ = ["registered_mux", "registered_mux_ports", "converted_text"]


@block
def registered_mux(q, a, b, c, d, e, sel, clock, reset):
    """``q`` <= the inverse of the input ``sel`` picks, one cycle late."""
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


def registered_mux_ports() -> tuple:
    """Fresh signals for every port of :func:`registered_mux`."""
    return (
        Signal(intbv(0)[8:]),
        *(Signal(intbv(0)[8:]) for _ in range(5)),
        Signal(intbv(0)[3:]),
        Signal(bool(0)),
        myhdl.ResetSignal(0, active=0, isasync=False),
    )


def converted_text(out_dir: Path) -> str:
    """:func:`registered_mux` converted by ``convert_block``, without the header lines naming the file and date."""
    text = convert_block(registered_mux, registered_mux_ports(), out_dir, "registered_mux").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith(("// File:", "// Date:")))
