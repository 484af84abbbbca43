"""Generated selection logic of the sum tree: a K-way multiplexer and the sampler's running-sum child search.

Both are chains of one small block per child with constant widths and indices, so generated structure (K is a
build parameter) converts to plain Verilog: no list of Signals is ever indexed by a variable (that would make it a
memory) and no slice bound is a loop variable (DESIGN.md section 5).
"""
from myhdl import always_comb, block, intbv, Signal

from ..common.arith import assign

__all__ = ["select", "running_pick"]


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
        term = Signal(intbv(0)[len(y):])
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
def running_pick(pick, before, children, target):
    """The descent step of one node: the first child whose running sum exceeds ``target`` (combinational).

    ``pick`` = the number of running sums ``s_i = children[0] + ... + children[i]`` (i < K - 1) that are
    ``<= target``; as the children are >= 0 the sums never decrease, so this is the first child with
    ``s_i > target`` (the last child when none is: ``target`` is below the node's value, the sum of all K).
    ``before`` = ``s_{pick-1}`` (0 for pick 0), the sum of the children left of the pick.

    pick     : Signal(intbv[log2 K]), out
    before   : Signal(w_parent), out, or None (not needed at the leaf level) -- running sums fit the parent's
               width: they never exceed the parent
    children : Python list of K Signals(w_child), in
    target   : Signal(w_parent), in
    """
    k = len(children)
    width = len(target)
    sums = [Signal(intbv(0)[width:]) for _ in range(k - 1)]
    picks = [Signal(intbv(0)[len(pick):]) for _ in range(k - 1)]
    insts = []
    for i in range(k - 1):
        inst = _sum_step(sums[i], picks[i], sums[i - 1] if i else None, picks[i - 1] if i else None,
                         children[i], target, i)
        inst.name = f"step{i}"
        insts.append(inst)
    insts.append(assign(pick, picks[-1]))
    if before is not None:
        sel = select(before, pick, [None] + sums)
        sel.name = "before"
        insts.append(sel)
    return insts


@block
def _sum_step(s, p, s_prev, p_prev, child, target, i: int):
    """``s = s_prev + child``; ``p = i + 1 if s <= target else p_prev`` (``s_prev``, ``p_prev`` None: 0)."""
    if s_prev is None:
        @always_comb
        def first_sum():
            s.next = child

        @always_comb
        def first_pick():
            if s <= target:
                p.next = 1
            else:
                p.next = 0

        return first_sum, first_pick

    @always_comb
    def add():
        s.next = s_prev + child

    @always_comb
    def compare():
        if s <= target:
            p.next = i + 1
        else:
            p.next = p_prev

    return add, compare
