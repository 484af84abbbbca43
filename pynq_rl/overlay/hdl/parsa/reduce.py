"""The reduce half of ParSa: the workers' preference vectors summed and saturated to q(s, .), and the lowest-index
argmax over the actions in use (:func:`q_reduce` wires them for the core), plus the combinational OR / max chains
the core runs over the workers' and the actions' flags.

Both trees have a fixed number of register stages (:data:`SUM_STAGES`, :data:`ARGMAX_STAGES`) whatever the worker
and action counts: the registers are spread over the tree's levels (at most 6, for 64 inputs), and a small tree is
padded with registers. So the ACT pipeline depth is one number for every build (``ParsaSpec.act_depth``).
"""

from myhdl import Signal, always, always_comb, block, intbv

from ..common.arith import assign, or2, saturate
from ..common.mac import add_stage, register
from .params import ParsaWidths

__all__ = ["sum_tree", "argmax_tree", "q_saturate", "q_reduce", "or_chain", "max_chain", "SUM_STAGES", "ARGMAX_STAGES"]

#: register stages of the worker-sum tree
SUM_STAGES = 3
#: register stages of the argmax tree: one per level up to 16 actions (two compare-and-select levels in one cycle
#: ran at 89 MHz on the ECP5 with the Pynq-Z2 build's 10 actions)
ARGMAX_STAGES = 4


def _registered_levels(levels: int, stages: int) -> set[int]:
    """Which of ``levels`` tree levels end in a register when ``stages`` registers are spread over them."""
    if levels <= stages:
        return set(range(levels))
    return {level for level in range(levels) if (level + 1) * stages // levels > level * stages // levels}


@block
def sum_tree(total, inputs, clock, stages: int = SUM_STAGES):
    """``total`` = sum of ``inputs``, ``stages`` clock edges later (pipelined; no reset).

    total  : Signal(signed), out -- wide enough for the sum
    inputs : Python list of Signal(signed), in
    clock  : Signal(bool), in
    """
    levels = max(0, (len(inputs) - 1).bit_length())
    registered = _registered_levels(levels, stages)
    insts, level = [], list(inputs)
    lo, hi = total.min, total.max
    for index in range(levels):
        nxt = []
        for j in range(0, len(level), 2):
            if j + 1 < len(level):
                out = Signal(intbv(0, min=lo, max=hi))
                insts.append(add_stage(out, level[j], level[j + 1], clock, index in registered))
            elif index in registered:
                out = Signal(intbv(0, min=lo, max=hi))
                insts.append(register(out, level[j], clock))
            else:
                out = level[j]
            nxt.append(out)
        level = nxt
    for _ in range(stages - len(registered)):
        out = Signal(intbv(0, min=lo, max=hi))
        insts.append(register(out, level[0], clock))
        level = [out]
    insts.append(assign(total, level[0]))
    return insts


@block
def q_saturate(q, flag, total, in_use, clock):
    """Registered ``q = sat(total)`` to q's width; ``flag`` = it saturated and the action is ``in_use``.

    q      : Signal(signed vw), out
    flag   : Signal(bool), out
    total  : Signal(signed, wider), in
    in_use : Signal(bool), in -- the action is < N_ACTIONS
    """
    n = len(q)
    lo, hi = -(1 << (n - 1)), (1 << (n - 1)) - 1
    clamped = Signal(intbv(0, min=lo, max=hi + 1))
    sat = Signal(bool(0))
    clamp = saturate(clamped, sat, total, lo, hi)

    @always(clock.posedge)
    def register():
        q.next = clamped
        flag.next = sat and in_use

    return clamp, register


@block
def _pick(v, q, i, va, qa, ia, vb, qb, ib, clock, registered: bool):
    """The better of two (valid, q, index) candidates; ``a`` holds the lower indices, so it wins ties.
    ``v`` and ``q`` None: only the index is produced (the root)."""
    if v is None:

        @always(clock.posedge)
        def logic():
            if va and (not vb or qa >= qb):
                i.next = ia
            else:
                i.next = ib
    elif registered:

        @always(clock.posedge)
        def logic():
            if va and (not vb or qa >= qb):
                v.next = va
                q.next = qa
                i.next = ia
            else:
                v.next = vb
                q.next = qb
                i.next = ib
    else:

        @always_comb
        def logic():
            if va and (not vb or qa >= qb):
                v.next = va
                q.next = qa
                i.next = ia
            else:
                v.next = vb
                q.next = qb
                i.next = ib

    return logic


@block
def argmax_tree(best, qs, in_use, clock, stages: int = ARGMAX_STAGES):
    """``best`` = the lowest index of the largest ``qs[a]`` among actions ``in_use``, ``stages`` edges later.

    best   : Signal(intbv), out -- action index
    qs     : Python list of Signal(signed), in
    in_use : Python list of Signal(bool), in -- (action < N_ACTIONS); action 0 is always in use
    clock  : Signal(bool), in
    """
    n = len(qs)
    levels = max(0, (n - 1).bit_length())
    registered = _registered_levels(levels, stages)
    qmin, qmax = qs[0].min, qs[0].max
    width = len(best)
    insts = []
    level = []
    for a in range(n):
        level.append((in_use[a], qs[a], a))  # leaf indices are constants
    pads = stages - len(registered)
    for depth in range(levels):
        nxt = []
        root = depth == levels - 1  # the root's valid and q are not needed
        for j in range(0, len(level), 2):
            if j + 1 < len(level):
                if root:
                    out = (None, None, Signal(intbv(0)[width:]))
                else:
                    out = (Signal(bool(0)), Signal(intbv(0, min=qmin, max=qmax)), Signal(intbv(0)[width:]))
                insts.append(_pick(*out, *level[j], *level[j + 1], clock, depth in registered))
            elif depth in registered:
                out = (Signal(bool(0)), Signal(intbv(0, min=qmin, max=qmax)), Signal(intbv(0)[width:]))
                insts += [register(q, d, clock) for q, d in zip(out, level[j])]
            else:
                out = level[j]
            nxt.append(out)
        level = nxt
    index = level[0][2]
    for _ in range(pads):
        out = Signal(intbv(0)[width:])
        insts.append(register(out, index, clock))
        index = out
    insts.append(assign(best, index))
    return insts


@block
def _in_use(flag, n_actions, index: int):
    """``flag`` = action ``index`` < N_ACTIONS"""

    @always_comb
    def logic():
        flag.next = n_actions > index

    return logic


@block
def q_reduce(qs, in_use, best, q_any_sat, accs, n_actions, clock, wd: ParsaWidths):
    """q(s, .) of the workers' preference vectors, and its argmax: per action a :func:`sum_tree` over the workers and
    :func:`q_saturate`, then :func:`argmax_tree` (SUM_STAGES + 1 + ARGMAX_STAGES edges from ``accs`` to ``best``).

    qs        : Python list of Signal(signed VALUE_W), out -- q(s, a), SUM_STAGES + 1 edges after ``accs``
    in_use    : Python list of Signal(bool), out -- a < N_ACTIONS (combinational)
    best      : Signal(intbv), out -- the lowest index of the largest q among the actions in use
    q_any_sat : Signal(bool), out -- some q in use saturated (with ``qs``)
    accs      : Python list (per worker) of Python lists (per action) of Signal(signed), in
    n_actions : Signal, in -- N_ACTIONS latched at START
    clock     : Signal(bool), in
    wd        : ParsaWidths
    """
    half = 1 << (wd.sum_w - 1)
    totals = [Signal(intbv(0, min=-half, max=half)) for _ in qs]
    q_flags = [Signal(bool(0)) for _ in qs]

    # # #
    insts = []
    for a, q in enumerate(qs):
        insts.append(_in_use(in_use[a], n_actions, a))
        insts.append(sum_tree(totals[a], [acc[a] for acc in accs], clock))
        insts.append(q_saturate(q, q_flags[a], totals[a], in_use[a], clock))
    insts.append(argmax_tree(best, qs, in_use, clock))
    insts.append(or_chain(q_any_sat, q_flags))
    return insts


@block
def _max2(y, a, b):
    """``y = max(a, b)`` (combinational)."""

    @always_comb
    def logic():
        if a > b:
            y.next = a
        else:
            y.next = b

    return logic


@block
def _chain(y, inputs, pair):
    """``y = pair(...pair(pair(inputs[0], inputs[1]), inputs[2])..., inputs[-1])``: one two-input block per further
    input, first to last (combinational)."""
    if len(inputs) == 1:
        return assign(y, inputs[0])
    insts, acc = [], inputs[0]
    for j, sig in enumerate(inputs[1:], start=2):
        if j == len(inputs):
            out = y
        elif isinstance(y.val, bool):
            out = Signal(bool(0))
        else:
            out = Signal(intbv(0, min=y.min, max=y.max))
        insts.append(pair(out, acc, sig))
        acc = out
    return insts


@block
def or_chain(y, inputs):
    """``y = inputs[0] or inputs[1] or ...`` (combinational; a cascade of two-input ORs, first to last).

    y      : Signal(bool), out
    inputs : Python list of Signal(bool), in
    """
    return _chain(y, inputs, or2)


@block
def max_chain(y, inputs):
    """``y = max(inputs)`` (combinational; a cascade of two-input maxima, first to last).

    y      : Signal(intbv), out -- the range of the inputs
    inputs : Python list of Signal(intbv), in
    """
    return _chain(y, inputs, _max2)
