"""The top-down sampler: target arithmetic, then one pipelined descent stage per tree level; one sample per cycle.

Every register of the sampler loads only when ``advance`` is high (the output register is free or being taken),
and the tree memories' read registers share that enable, so a stalled output stream freezes the whole pipeline in place
and nothing is lost or duplicated. ``flush`` (SOFT_RESET) empties it. No register-to-register path holds more than
one adder or comparator carry chain, and no logic follows a block RAM's output before a register (issue 15).

Arithmetic (the model's :func:`~pynq_rl.overlay.models.replay.sample_targets`; UQ0.32 fractions)::

    stage a   u, j*S                    (u from the PRNG or the input stream; j*S accumulated, no multiply)
    stage b   p1 = u * S                (32 x 32: :func:`~.multiply.pipelined_mul`, 3 edges)
    stage c   x  = j*S + (p1 >> 32)     (< COUNT * S < 2**32: START checked it)
    stage d   p2 = x * TOTAL            (32 x w0 bits, TOTAL = the root, constant during a batch; 3 edges for
                                         w0 <= 34) -- target = p2 >> 32 (< TOTAL)

The full product ``x * TOTAL`` shifted right by 32 equals the model's ``x*hi + ((x*lo) >> 32)`` exactly. Stage b
also serves START's check of ``COUNT * STRIDE < 2**32``: ``check_load`` (high in IDLE, so at the START edge among
others) feeds the COUNT and STRIDE registers to its multiplier, and ``p1_high`` is the high word of their product
when the FSM's third CHECK cycle reads it.

Descent stage of level l (node number and target in, from the level above), :func:`descend_stages` edges::

    edge 1        the parent's node number addresses the level's memory (its K children are one word)
    edge 2        the word read is registered
    edges 3..     running sums s_i = children[0] + ... + children[i] (i < K - 1), Kogge-Stone: ceil(log2(K - 1))
                  stages of one adder each
    next edge     s_i > target and target - s_i, for every i at once
    last edge     pick = the first child whose running sum exceeds the target (one-hot from the comparisons; the
                  last child when none does), new target = target - s_(pick-1) (target for pick 0), node * K + pick
                  (and the leaf code at the leaf level) registered
"""

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, intbv, modbv

from ...spec import ReplaySpec
from .multiply import mul_latency, pipelined_mul
from .select import onehot_encode, onehot_select
from .tree import row_columns

__all__ = ["sample_front", "descend_level", "front_stages", "descend_stages", "prefix_stages"]


@block
def sample_front(
    out_valid,
    out_last,
    out_target,
    p1_high,
    in_valid,
    in_last,
    in_u,
    in_js,
    check_load,
    count,
    check_stride,
    stride,
    total,
    advance,
    flush,
    clock,
    reset,
):
    """Fractions and targets of stratified samples: :func:`front_stages` registered stages (module docstring).

    out_valid  : Signal(bool), out -- a target for the first descent stage
    out_last   : Signal(bool), out -- it is the batch's last
    out_target : Signal(w0), out
    p1_high    : Signal(intbv[32]), out -- high word of stage b's product: ``count * stride`` when ``check_load``
                 was high ``mul_latency(32, 32)`` enabled edges before (START's COUNT * STRIDE check)
    in_valid   : Signal(bool), in  -- issue a sample with uniform ``in_u`` and ``in_js`` = j * STRIDE
    in_last    : Signal(bool), in
    in_u       : Signal(intbv[32]), in
    in_js      : Signal(intbv[32]), in
    check_load : Signal(bool), in  -- feed ``count`` and ``stride`` to stage b's multiplier instead (no sample
                 in flight: the core holds it high in IDLE)
    count      : Signal(intbv[32]), in -- COUNT (the register, read with ``check_load``)
    check_stride : Signal(intbv[32]), in -- STRIDE (the register, read with ``check_load``)
    stride     : Signal(intbv[32]), in -- STRIDE as latched at START (during a batch)
    total      : Signal(w0), in    -- the root
    advance    : Signal(bool), in  -- pipeline enable
    flush      : Signal(bool), in  -- drop every sample in flight
    clock      : Signal(bool), in
    reset      : ResetSignal, in   -- valid bits only
    """
    w0 = len(total)
    lat1 = mul_latency(32, 32)
    depth = front_stages(w0)
    valid = [Signal(bool(0)) for _ in range(depth - 1)]
    last = [Signal(bool(0)) for _ in range(depth - 1)]
    a_u, a_js = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    m_a, m_b = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    js = [Signal(intbv(0)[32:]) for _ in range(lat1)]
    b_p1 = Signal(intbv(0)[64:])
    c_x = Signal(modbv(0)[32:])  # wraps only in cycles that carry no sample (START bounds real fractions)
    d_p2 = Signal(intbv(0)[32 + w0 :])
    mul1 = pipelined_mul(b_p1, m_a, m_b, advance, clock)
    mul1.name = "mul_us"
    mul2 = pipelined_mul(d_p2, c_x, total, advance, clock)
    mul2.name = "mul_xt"
    insts = [mul1, mul2]

    @always_comb
    def operands():
        if check_load:
            m_a.next = count
            m_b.next = check_stride
        else:
            m_a.next = a_u
            m_b.next = stride

    for i in range(depth - 1):
        inst = _valid_stage(
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
    inst = _valid_stage(out_valid, out_last, valid[-1], last[-1], advance, flush, clock, reset)
    inst.name = "valid_out"
    insts.append(inst)
    for i in range(lat1):
        inst = _word_stage(js[i], js[i - 1] if i else a_js, advance, clock)
        inst.name = f"js{i}"
        insts.append(inst)

    @always(clock.posedge)
    def datapath():
        if advance:
            a_u.next = in_u
            a_js.next = in_js
            c_x.next = js[lat1 - 1] + (b_p1 >> 32)

    @always_comb
    def product_high():
        p1_high.next = b_p1 >> 32
        out_target.next = d_p2 >> 32

    return insts + [operands, datapath, product_high]


def front_stages(w0: int) -> int:
    """Registered stages of :func:`sample_front` for a root of ``w0`` bits: a, the u * S multiplier, c, the
    x * TOTAL multiplier."""
    return 1 + mul_latency(32, 32) + 1 + mul_latency(32, w0)


@block
def _valid_stage(valid, last, in_valid, in_last, advance, flush, clock, reset):
    """One stage of a sample's valid bit (reset, flushed) and last flag."""

    @always_seq(clock.posedge, reset=reset)
    def valid_bit():
        if flush:
            valid.next = False
        elif advance:
            valid.next = in_valid

    @always(clock.posedge)
    def last_bit():
        if advance:
            last.next = in_last

    return valid_bit, last_bit


@block
def _word_stage(q, d, advance, clock):
    """``q = d`` on every enabled edge (a delay-line tap)."""

    @always(clock.posedge)
    def stage():
        if advance:
            q.next = d

    return stage


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
    k, kb = spec.k, spec.k_bits
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
        inst = _valid_stage(
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
            inst = _word_stage(
                targets[i], source(w_child, 0) if len(targets[i]) < len(source) else source, advance, clock
            )
            inst.name = f"target{i}"
            insts.append(inst)
        if nodes is not None:
            inst = _word_stage(nodes[i], nodes[i - 1] if i else in_node, advance, clock)
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
    inst = _word_stage(row_q, ConcatSignal(*reversed(children[:kept])) if kept > 1 else children[0], advance, clock)
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
            inst = _word_stage(rows[j], rows[j - 1], advance, clock)
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
    # pick stage: the first child whose running sum exceeds the target (one-hot), its remainder and code
    sel = [Signal(bool(0)) for _ in range(k)]
    inst = _one_hot(sel, above)
    inst.name = "one_hot"
    insts.append(inst)
    pick = Signal(intbv(0)[kb:])
    inst = onehot_encode(pick, sel)
    inst.name = "encode"
    insts.append(inst)
    if out_target is not None:
        remainder = Signal(intbv(0)[w_child:])
        inst = onehot_select(remainder, sel, [targets[2 + n_prefix]] + diffs)
        inst.name = "remainder"
        insts.append(inst)

        @always(clock.posedge)
        def target_stage():
            if advance:
                out_target.next = remainder

        insts.append(target_stage)
    if out_code is not None:
        code = Signal(intbv(0)[w_child:])
        inst = onehot_select(code, sel, codes)
        inst.name = "code_mux"
        insts.append(inst)

        @always(clock.posedge)
        def code_stage():
            if advance:
                out_code.next = code

        insts.append(code_stage)
    inst = _valid_stage(out_valid, out_last, valid[-1], last[-1], advance, flush, clock, reset)
    inst.name = "valid_out"
    insts.append(inst)
    if level >= 2:
        node2 = nodes[-1]

        @always(clock.posedge)
        def pick_stage():
            if advance:
                out_node.next = concat(node2, pick)
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
