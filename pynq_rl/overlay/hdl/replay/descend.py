"""One descent stage of the sampler per tree level: from a node and a target below its value to the child whose
prefix interval holds the target, one sample per cycle.

Descent stage of level l (node number and target in, from the level above), :func:`descend_stages` edges::

    edge 1        the parent's node number addresses the level's memory (its K children are one word)
    edge 2        the word read is registered
    edges 3..     running sums s_i = children[0] + ... + children[i] (i < K - 1), Kogge-Stone: ceil(log2(K - 1))
                  stages of one adder each
    next edge     s_i > target and target - s_i, for every i at once
    last edge     pick = the first child whose running sum exceeds the target (one-hot from the comparisons; the
                  last child when none does), new target = target - s_(pick-1) (target for pick 0), node * K + pick
                  (and the leaf code at the leaf level) registered

Every register loads only when ``advance`` is high (:mod:`.stages`). No register-to-register path holds more than
one adder or comparator carry chain, and no logic follows the block RAM's output before a register.
"""

from myhdl import ConcatSignal, Signal, always, always_comb, block, concat, intbv, modbv

from ...spec import ReplaySpec
from .select import onehot_encode, onehot_select
from .stages import valid_stage, word_stage
from .tree import row_columns

__all__ = ["descend_level", "descend_stages", "prefix_stages"]


def descend_stages(k: int) -> int:
    """Registered stages of one :func:`descend_level`: the memory read, the read-data register, the prefix-sum
    stages (``ceil(log2(k - 1))``), the subtract stage and the pick stage."""
    return 2 + prefix_stages(k) + 2


def prefix_stages(k: int) -> int:
    """Adder stages of the running sums of ``k`` children (Kogge-Stone over the first ``k - 1``)."""
    return (k - 2).bit_length()


@block
def descend_level(
    out_valid,
    out_last,
    out_node,
    out_target,
    out_code,
    rd_addr,
    children,
    in_valid,
    in_last,
    in_node,
    in_target,
    advance,
    flush,
    clock,
    reset,
    spec: ReplaySpec,
    level: int,
):
    """One descent stage: from a node of level ``level - 1`` and a target below its value to the child of level
    ``level`` whose prefix interval holds the target, in :func:`descend_stages` registered stages.

    out_valid  : Signal(bool), out
    out_last   : Signal(bool), out
    out_node   : Signal(intbv[log2(K) * level]), out -- the picked node of this level
    out_target : Signal(w_level), out, or None -- the target inside the picked node (below its value); None at
                 the leaf level
    out_code   : Signal(w_level), out, or None -- leaf level: the picked leaf's code
    rd_addr    : Signal(a), out, or None at level 1 -- read address of this level's memory (the parent's node)
    children   : list of K Signal(w_level), in -- the columns of the level memory's read word
    in_valid   : Signal(bool), in
    in_last    : Signal(bool), in
    in_node    : Signal, in, or None at level 1 (the root) -- node number at level ``level - 1``
    in_target  : Signal(w_{level-1}), in
    advance    : Signal(bool), in -- pipeline enable (the memories' read enable too)
    flush      : Signal(bool), in
    clock      : Signal(bool), in
    reset      : ResetSignal, in -- valid bits only
    """
    k = spec.k
    w_parent, w_child = len(in_target), len(children[0])
    depth = descend_stages(k)
    n_prefix = prefix_stages(k)
    insts = []
    # valid / last / node / target travel beside the data: stage s holds what entered s + 1 edges ago
    valid = [Signal(bool(0)) for _ in range(depth - 1)]
    last = [Signal(bool(0)) for _ in range(depth - 1)]
    # up to the subtract stage the target has the parent's width; in the pick stage (not at the leaf level) the
    # child's: it is picked only when it is below the first child
    targets = [Signal(intbv(0)[w_parent:]) for _ in range(depth - 2)]
    if out_target is not None:
        targets.append(Signal(intbv(0)[w_child:]))
    nodes = [Signal(intbv(0)[len(in_node) :]) for _ in range(depth - 1)] if level >= 2 else None
    for i in range(depth - 1):
        inst = valid_stage(
            valid[i],
            last[i],
            valid[i - 1] if i else in_valid,
            last[i - 1] if i else in_last,
            advance,
            flush,
            clock,
            reset,
        )
        inst.name = f"valid{i}"
        insts.append(inst)
        if i < len(targets):
            source = targets[i - 1] if i else in_target
            inst = word_stage(
                targets[i], source(w_child, 0) if len(targets[i]) < len(source) else source, advance, clock
            )
            inst.name = f"target{i}"
            insts.append(inst)
        if nodes is not None:
            inst = word_stage(nodes[i], nodes[i - 1] if i else in_node, advance, clock)
            inst.name = f"node{i}"
            insts.append(inst)
    if level >= 2:

        @always_comb
        def address():
            rd_addr.next = in_node

        insts.append(address)

    # stage 1: the read word registered
    # (above the leaves the last child is never summed: the pick is the last child when no sum exceeds the target)
    kept = k if out_code is not None else k - 1
    row_q = Signal(intbv(0)[kept * w_child :])
    inst = word_stage(row_q, ConcatSignal(*reversed(children[:kept])) if kept > 1 else children[0], advance, clock)
    inst.name = "row_q"
    insts.append(inst)
    sums = [row_q((i + 1) * w_child, i * w_child) for i in range(k - 1)]
    # prefix stages: after stage j, position i holds children[max(0, i - 2**(j+1) + 1) .. i]
    for j in range(n_prefix):
        span = 1 << j
        stage = [Signal(modbv(0)[w_parent:]) for _ in range(k - 1)]
        for i in range(k - 1):
            inst = _prefix_add(stage[i], sums[i], sums[i - span] if i >= span else None, advance, clock)
            inst.name = f"prefix{j}_{i}"
            insts.append(inst)
        sums = stage
    # the leaf row travels to the pick stage for the code
    codes = None
    if out_code is not None:
        rows = [row_q] + [Signal(intbv(0)[k * w_child :]) for _ in range(n_prefix + 1)]
        for j in range(1, n_prefix + 2):
            inst = word_stage(rows[j], rows[j - 1], advance, clock)
            inst.name = f"row{j}"
            insts.append(inst)
        codes = row_columns(rows[-1], k)
    # subtract stage: s_i > target, and target - s_i in the child's width (the new target if the pick is i + 1)
    tgt = targets[1 + n_prefix]  # beside the sums
    above = [Signal(bool(0)) for _ in range(k - 1)]
    diffs = [Signal(modbv(0)[w_child:]) for _ in range(k - 1)] if out_target is not None else [None] * (k - 1)
    for i in range(k - 1):
        inst = _subtract(above[i], diffs[i], tgt, sums[i], advance, clock)
        inst.name = f"diff{i}"
        insts.append(inst)
    inst = _pick_stage(
        out_valid,
        out_last,
        out_node,
        out_target,
        out_code,
        above,
        diffs,
        targets[2 + n_prefix] if out_target is not None else None,
        codes,
        nodes[-1] if nodes is not None else None,
        valid[-1],
        last[-1],
        advance,
        flush,
        clock,
        reset,
        spec.k_bits,
    )
    inst.name = "pick"
    insts.append(inst)
    return insts


@block
def _pick_stage(
    out_valid,
    out_last,
    out_node,
    out_target,
    out_code,
    above,
    diffs,
    target,
    codes,
    node,
    in_valid,
    in_last,
    advance,
    flush,
    clock,
    reset,
    kb: int,
):
    """The last edge of a descent stage: the first child whose running sum exceeds the target (one-hot), its
    remainder and code, and the picked node, registered.

    out_valid, out_last : Signal(bool), out
    out_node   : Signal(intbv[log2(K) * level]), out -- ``node * K + pick``
    out_target : Signal(w_level), out, or None (leaf level) -- the target for pick 0, else ``diffs[pick - 1]``
    out_code   : Signal(w_level), out, or None (above the leaves) -- ``codes[pick]``
    above      : list of K - 1 Signal(bool), in -- running sum i exceeds the target
    diffs      : list of K - 1 Signal(w_level), in (K - 1 None at the leaf level) -- target - running sum i
    target     : Signal(w_level), in, or None (leaf level) -- the target beside ``above``
    codes      : list of K Signal(w_level), in, or None (above the leaves) -- the leaf word beside ``above``
    node       : Signal, in, or None at level 1 -- the parent's node number beside ``above``
    in_valid, in_last : Signal(bool), in -- the sample beside ``above``
    advance    : Signal(bool), in -- pipeline enable
    flush      : Signal(bool), in
    clock      : Signal(bool), in
    reset      : ResetSignal, in -- valid bit only
    kb         : int -- log2(K)
    """
    k = len(above) + 1
    insts = []
    sel = [Signal(bool(0)) for _ in range(k)]
    inst = _one_hot(sel, above)
    inst.name = "one_hot"
    insts.append(inst)
    pick = Signal(intbv(0)[kb:])
    inst = onehot_encode(pick, sel)
    inst.name = "encode"
    insts.append(inst)
    if out_target is not None:
        remainder = Signal(intbv(0)[len(out_target) :])
        inst = onehot_select(remainder, sel, [target] + diffs)
        inst.name = "remainder"
        insts.append(inst)

        @always(clock.posedge)
        def target_stage():
            if advance:
                out_target.next = remainder

        insts.append(target_stage)
    if out_code is not None:
        code = Signal(intbv(0)[len(out_code) :])
        inst = onehot_select(code, sel, codes)
        inst.name = "code_mux"
        insts.append(inst)

        @always(clock.posedge)
        def code_stage():
            if advance:
                out_code.next = code

        insts.append(code_stage)
    inst = valid_stage(out_valid, out_last, in_valid, in_last, advance, flush, clock, reset)
    inst.name = "valid_out"
    insts.append(inst)
    if node is not None:

        @always(clock.posedge)
        def pick_stage():
            if advance:
                out_node.next = concat(node, pick)
    else:

        @always(clock.posedge)
        def pick_stage():
            if advance:
                out_node.next = pick

    insts.append(pick_stage)
    return insts


@block
def _prefix_add(q, x, y, advance, clock):
    """``q = x + y`` registered (``y`` None: ``q = x``); ``q`` is a modbv of the parent's width."""
    if y is None:

        @always(clock.posedge)
        def hold():
            if advance:
                q.next = x

        return hold

    @always(clock.posedge)
    def add():
        if advance:
            q.next = x + y

    return add


@block
def _subtract(above, diff, target, s, advance, clock):
    """``above = s > target`` and ``diff = target - s`` modulo ``2**len(diff)`` (``diff`` None: not needed),
    registered."""

    @always(clock.posedge)
    def compare():
        if advance:
            above.next = s > target

    if diff is None:
        return compare

    @always(clock.posedge)
    def sub():
        if advance:
            diff.next = target - s

    return compare, sub


@block
def _one_hot(sel, above):
    """``sel[i]`` = child i is the first whose running sum exceeds the target, from ``above[i]`` = ``s_i > target``
    (i < K - 1; the sums never decrease, so ``above`` is 0...0 1...1; the last child when no sum is above)."""
    insts = []
    k = len(sel)
    for i in range(k):
        inst = _one_hot_bit(sel[i], above[i - 1] if i else None, above[i] if i < k - 1 else None)
        inst.name = f"bit{i}"
        insts.append(inst)
    return insts


@block
def _one_hot_bit(sel, prev_above, above):
    """``sel = above and not prev_above`` (None: ``above`` 1, ``prev_above`` 0)."""
    if prev_above is None:

        @always_comb
        def first():
            sel.next = above

        return first
    if above is None:

        @always_comb
        def final():
            sel.next = not prev_above

        return final

    @always_comb
    def middle():
        sel.next = above and not prev_above

    return middle
