"""Generated selection logic of the sum tree: a K-way multiplexer and the sampler's running-sum child search.

Both are chains of one small block per child with constant widths and indices, so generated structure (K is a
build parameter) converts to plain Verilog: no list of Signals is ever indexed by a variable (that would make it a
memory) and no slice bound is a loop variable (docs/design.md, MyHDL lessons).
"""

from myhdl import Signal, always_comb, block, intbv

from ..common.arith import assign

__all__ = ["select", "onehot_select", "onehot_encode"]


@block
def select(y, sel, items):
    """``y = items[sel]``, with ``items[i] = None`` meaning 0 (combinational): an OR of one masked term per item.

    y     : Signal(w), out
    sel   : Signal(intbv), in -- an index into ``items``
    items : Python list of Signals (each at most w bits wide) or None
    """
    insts, previous = [], None
    for i, item in enumerate(items):
        if item is None:
            continue
        term = Signal(intbv(0)[len(y) :])
        inst = _select_term(term, previous, sel, item, i)
        inst.name = f"term{i}"
        insts.append(inst)
        previous = term
    if previous is None:
        raise ValueError("select needs at least one item that is not None")
    insts.append(assign(y, previous))
    return insts


@block
def _select_term(term, previous, sel, item, i: int):
    """``term = previous | (item if sel == i else 0)`` (no ``previous`` for the first term)."""
    if previous is None:

        @always_comb
        def first():
            if sel == i:
                term.next = item
            else:
                term.next = 0

        return first

    @always_comb
    def chain():
        if sel == i:
            term.next = previous | item
        else:
            term.next = previous

    return chain


@block
def onehot_select(y, sel, items):
    """``y = items[i]`` for the one ``sel[i]`` that is high (0 when none is; combinational): an OR of masked terms,
    no binary decode in front (the sampler's pick arrives one-hot).

    y     : Signal(w), out
    sel   : Python list of Signal(bool), in -- at most one high
    items : Python list of Signals (each at most w bits wide), as long as ``sel``
    """
    if len(sel) != len(items) or not items:
        raise ValueError("onehot_select needs one select bit per item")
    insts, previous = [], None
    for i, (bit, item) in enumerate(zip(sel, items)):
        term = Signal(intbv(0)[len(y) :])
        inst = _onehot_term(term, previous, bit, item)
        inst.name = f"term{i}"
        insts.append(inst)
        previous = term
    insts.append(assign(y, previous))
    return insts


@block
def _onehot_term(term, previous, bit, item):
    """``term = previous | (item if bit else 0)`` (no ``previous`` for the first term)."""
    if previous is None:

        @always_comb
        def first():
            if bit:
                term.next = item
            else:
                term.next = 0

        return first

    @always_comb
    def chain():
        if bit:
            term.next = previous | item
        else:
            term.next = previous

    return chain


@block
def onehot_encode(y, sel):
    """``y = i`` for the one ``sel[i]`` that is high (0 when none is; combinational).

    y   : Signal(intbv[log2 len(sel)]), out
    sel : Python list of Signal(bool), in -- at most one high
    """
    if (len(sel) - 1).bit_length() > len(y):
        raise ValueError(f"onehot_encode: {len(sel)} select bits need {(len(sel) - 1).bit_length()} output bits")
    insts, previous = [], None
    for i, bit in enumerate(sel):
        if i == 0:
            continue  # contributes 0
        term = Signal(intbv(0)[len(y) :])
        inst = _encode_term(term, previous, bit, i)
        inst.name = f"term{i}"
        insts.append(inst)
        previous = term
    if previous is None:
        raise ValueError("onehot_encode needs at least two select bits")
    insts.append(assign(y, previous))
    return insts


@block
def _encode_term(term, previous, bit, i: int):
    """``term = previous | (i if bit else 0)`` (no ``previous`` for the first term)."""
    if previous is None:

        @always_comb
        def first():
            if bit:
                term.next = i
            else:
                term.next = 0

        return first

    @always_comb
    def chain():
        if bit:
            term.next = previous | i
        else:
            term.next = previous

    return chain
