"""The top-down sampler: target arithmetic, then one two-cycle descent stage per tree level; one sample per cycle.

Every register of the sampler loads only when ``advance`` is high (the output register is free or being taken),
and the tree memories' read registers share that enable, so a stalled output stream freezes the whole pipeline in place
and nothing is lost or duplicated. ``flush`` (SOFT_RESET) empties it.

Arithmetic (the model's :func:`~pynq_rl.overlay.models.replay.sample_targets`; UQ0.32 fractions)::

    stage a   u, j*S                    (u from the PRNG or the input stream; j*S accumulated, no multiply)
    stage b   p1 = u * S                (32 x 32, registered operands and product: DSP cascade)
    stage c   x  = j*S + (p1 >> 32)     (< COUNT * S < 2**32: START checked it)
    stage d   p2 = x * TOTAL            (32 x w0 bits, TOTAL = the root, constant during a batch)
    stage e   target = p2 >> 32         (< TOTAL)

The full product ``x * TOTAL`` shifted right by 32 equals the model's ``x*hi + ((x*lo) >> 32)`` exactly; the
synthesizer splits the product into DSP tiles itself. Stage a also serves START's check of ``COUNT * STRIDE <
2**32``: ``check_load`` puts COUNT into the u register, and ``p1_high`` is the high word of the product two edges
later.

Descent stage of level l (node number and target in, from the level above)::

    cycle 0   the K children's word address (the parent's node number) goes to the level's memory
    cycle 1   running sums of the K children, first one above the target (pick), target - sum before the pick
              -> node * K + pick, new target (and the leaf code at the leaf level) registered
"""
from myhdl import always, always_comb, always_seq, block, concat, intbv, modbv, Signal

from ...spec import ReplaySpec
from .select import running_pick, select

__all__ = ["sample_front", "descend_level"]


@block
def sample_front(out_valid, out_last, out_target, p1_high,
                 in_valid, in_last, in_u, in_js, check_load, count, stride, total, advance, flush, clock, reset):
    """Fractions and targets of stratified samples: five registered stages (see the module docstring).

    out_valid  : Signal(bool), out -- a target for the first descent stage
    out_last   : Signal(bool), out -- it is the batch's last
    out_target : Signal(w0), out
    p1_high    : Signal(intbv[32]), out -- high word of stage b's product (START's COUNT * STRIDE check)
    in_valid   : Signal(bool), in  -- issue a sample with uniform ``in_u`` and ``in_js`` = j * STRIDE
    in_last    : Signal(bool), in
    in_u       : Signal(intbv[32]), in
    in_js      : Signal(intbv[32]), in
    check_load : Signal(bool), in  -- load ``count`` into the u register instead (no sample)
    count      : Signal(intbv[32]), in
    stride     : Signal(intbv[32]), in
    total      : Signal(w0), in    -- the root
    advance    : Signal(bool), in  -- pipeline enable
    flush      : Signal(bool), in  -- drop every sample in flight
    clock      : Signal(bool), in
    reset      : ResetSignal, in   -- valid bits only
    """
    w0 = len(total)
    a_valid, b_valid, c_valid, d_valid = (Signal(bool(0)) for _ in range(4))
    a_last, b_last, c_last, d_last = (Signal(bool(0)) for _ in range(4))
    a_u, a_js, b_js = Signal(intbv(0)[32:]), Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    b_p1 = Signal(intbv(0)[64:])
    c_x = Signal(modbv(0)[32:])      # wraps only in cycles that carry no sample (START bounds real fractions)
    d_p2 = Signal(intbv(0)[32 + w0:])

    @always_seq(clock.posedge, reset=reset)
    def valid_bits():
        if flush:
            a_valid.next = False
            b_valid.next = False
            c_valid.next = False
            d_valid.next = False
            out_valid.next = False
        elif advance:
            a_valid.next = in_valid
            b_valid.next = a_valid
            c_valid.next = b_valid
            d_valid.next = c_valid
            out_valid.next = d_valid

    @always(clock.posedge)
    def datapath():
        if advance:
            if check_load:
                a_u.next = count
            else:
                a_u.next = in_u
            a_js.next = in_js
            a_last.next = in_last
            b_p1.next = a_u * stride
            b_js.next = a_js
            b_last.next = a_last
            c_x.next = b_js + (b_p1 >> 32)
            c_last.next = b_last
            d_p2.next = c_x * total
            d_last.next = c_last
            out_target.next = d_p2 >> 32
            out_last.next = d_last

    @always_comb
    def product_high():
        p1_high.next = b_p1 >> 32

    return valid_bits, datapath, product_high


@block
def descend_level(out_valid, out_last, out_node, out_target, out_code,
                  rd_addr, children, in_valid, in_last, in_node, in_target, advance, flush, clock, reset,
                  spec: ReplaySpec, level: int):
    """One descent stage: from a node of level ``level - 1`` and a target below its value to the child of level
    ``level`` whose prefix interval holds the target.

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
    kb = spec.k_bits
    v1, last1 = Signal(bool(0)), Signal(bool(0))
    node1 = Signal(intbv(0)[len(in_node):]) if level >= 2 else None
    target1 = Signal(intbv(0)[len(in_target):])
    pick = Signal(intbv(0)[kb:])
    before = Signal(intbv(0)[len(in_target):]) if out_target is not None else None
    code = Signal(intbv(0)[len(children[0]):])
    search = running_pick(pick, before, children, target1)
    search.name = "search"
    insts = [search]
    if out_code is not None:
        mux = select(code, pick, children)
        mux.name = "code_mux"
        insts.append(mux)

    if level >= 2:
        @always_comb
        def address():
            rd_addr.next = in_node

        insts.append(address)

    @always_seq(clock.posedge, reset=reset)
    def valid_bits():
        if flush:
            v1.next = False
            out_valid.next = False
        elif advance:
            v1.next = in_valid
            out_valid.next = v1

    if level >= 2:
        @always(clock.posedge)
        def read_stage():
            if advance:
                last1.next = in_last
                node1.next = in_node
                target1.next = in_target
    else:
        @always(clock.posedge)
        def read_stage():
            if advance:
                last1.next = in_last
                target1.next = in_target

    if level >= 2:
        @always(clock.posedge)
        def pick_stage():
            if advance:
                out_last.next = last1
                out_node.next = concat(node1, pick)
    else:
        @always(clock.posedge)
        def pick_stage():
            if advance:
                out_last.next = last1
                out_node.next = pick
    insts += [valid_bits, read_stage, pick_stage]

    if out_target is not None:
        @always(clock.posedge)
        def target_stage():
            if advance and v1:
                out_target.next = target1 - before

        insts.append(target_stage)

    if out_code is not None:
        @always(clock.posedge)
        def code_stage():
            if advance:
                out_code.next = code

        insts.append(code_stage)
    return insts
