"""Selection and field blocks generated at elaboration time: a variable index over separate Signals, and constant
bit fields of wide words.

A ``list of Signals`` indexed by a Signal converts to a Verilog memory, which MyHDL refuses when the elements are
also driven as ordinary signals (ports of generated sub-blocks), and a variable shift of a wide word synthesizes to a
barrel shifter far larger than a multiplexer. :func:`mux_tree` builds the multiplexer itself: one 2:1 level per
select bit, so it stays ``ceil(log2 n)`` LUT levels for any width.
"""

from myhdl import Signal, always_comb, block, intbv

__all__ = ["mux_tree", "field_signed", "field_unsigned"]


@block
def _mux2(y, a, b, sel, bit: int):
    """``y = b if sel[bit] else a`` (combinational)."""

    @always_comb
    def logic():
        if sel[bit]:
            y.next = b
        else:
            y.next = a

    return logic


@block
def _pass(y, a):
    @always_comb
    def logic():
        y.next = a

    return logic


@block
def mux_tree(y, inputs, sel):
    """``y = inputs[sel]`` (combinational); an index >= len(inputs) selects the last input.

    y      : Signal(w), out
    inputs : Python list of Signal(w), in -- separate signals (never a memory)
    sel    : Signal(intbv), in            -- index, at least ceil(log2 len(inputs)) bits
    """
    n = len(inputs)
    if n < 1:
        raise ValueError("mux_tree needs at least one input")
    bits = max(1, (n - 1).bit_length())
    if n > 1 and len(sel) < bits:
        raise ValueError(f"mux_tree of {n} inputs needs a select of {bits} bits, not {len(sel)}")
    insts = []
    level = list(inputs)
    for bit in range(bits if n > 1 else 0):
        nxt = []
        for j in range(0, len(level), 2):
            if j + 1 < len(level):
                out = Signal(bool(0)) if isinstance(y.val, bool) else Signal(intbv(0, min=y.min, max=y.max))
                insts.append(_mux2(out, level[j], level[j + 1], sel, bit))
            else:
                out = level[j]
            nxt.append(out)
        level = nxt
    insts.append(_pass(y, level[0]))
    return insts


@block
def field_signed(y, word, lo: int):
    """``y = word[lo + len(y) - 1 : lo]`` as a signed value (combinational)."""
    hi = lo + len(y)
    if hi > len(word):
        raise ValueError(f"field [{hi}:{lo}] outside a {len(word)}-bit word")

    @always_comb
    def logic():
        y.next = word[hi:lo].signed()

    return logic


@block
def field_unsigned(y, word, lo: int):
    """``y = word[lo + len(y) - 1 : lo]`` (combinational)."""
    hi = lo + len(y)
    if hi > len(word):
        raise ValueError(f"field [{hi}:{lo}] outside a {len(word)}-bit word")

    @always_comb
    def logic():
        y.next = word[hi:lo]

    return logic
