"""The top-down sampler: its control (:mod:`.issue`), the target arithmetic (:func:`sample_front`), then one pipelined
descent stage per tree level (:mod:`.descend`); one sample per cycle.

Every register of the sampler loads only when ``advance`` is high (the output register is free or being taken),
and the tree memories' read registers share that enable, so a stalled output stream freezes the whole pipeline in place
and nothing is lost or duplicated. ``flush`` (SOFT_RESET) empties it. No register-to-register path holds more than
one adder or comparator carry chain, and no logic follows a block RAM's output before a register.

Arithmetic (the model's :func:`~pynq_rl.overlay.models.replay.sample_targets`; UQ0.32 fractions)::

    stage a   u, j*S                    (u from the PRNG or the input stream; j*S accumulated, no multiply)
    stage b   p1 = u * S                (32 x 32: :func:`~.multiply.pipelined_mul`, 3 edges)
    stage c   x  = j*S + (p1 >> 32)     (< COUNT * S < 2**32: START checked it)
    stage d   p2 = x * TOTAL            (32 x w0 bits, TOTAL = the root, constant during a batch; 3 edges for
                                         w0 <= 34) -- target = p2 >> 32 (< TOTAL)

The full product ``x * TOTAL`` shifted right by 32 equals the model's ``x*hi + ((x*lo) >> 32)`` exactly. Stage b
also serves START's check of ``COUNT * STRIDE < 2**32``: ``check_load`` (high in IDLE, so at the START edge among
others) feeds the COUNT and STRIDE registers to its multiplier, and ``p1_high`` is the high word of their product
when the last CHECK cycle reads it (:mod:`.issue`).
"""

from myhdl import Signal, always, always_comb, block, intbv, modbv

from ...spec import ReplaySpec
from .descend import descend_level
from .issue import SampleStatus, sample_issue
from .multiply import mul_latency, pipelined_mul
from .stages import valid_stage, word_stage
from .tree import TreePorts

__all__ = ["replay_sampler", "sample_front", "front_stages"]


@block
def replay_sampler(
    sample_valid,
    sample_last,
    sample_index,
    sample_code,
    status: SampleStatus,
    tree: TreePorts,
    total,
    state,
    s_tdata,
    s_tvalid,
    s_tlast,
    advance,
    out_last_beat,
    cfg,
    clock,
    reset,
    spec: ReplaySpec,
):
    """The sampler: :func:`~.issue.sample_issue`, :func:`sample_front` and a :func:`~.descend.descend_level` per level.

    sample_valid  : Signal(bool), out -- a result for the output register
    sample_last   : Signal(bool), out -- the batch's last
    sample_index  : Signal(index_bits), out -- the sampled leaf
    sample_code   : Signal(leaf width), out -- its code
    status        : SampleStatus, out -- to the command FSM (:class:`~.issue.SampleStatus`)
    tree          : TreePorts -- ``sample_rd`` out; ``children`` in
    total         : Signal(w0), in -- the root
    state         : Signal(t_state), in -- the command FSM's state
    s_tdata       : Signal(64), in -- uniform records
    s_tvalid      : Signal(bool), in
    s_tlast       : Signal(bool), in
    advance       : Signal(bool), in -- pipeline enable (the output register loads)
    out_last_beat : Signal(bool), in -- the output stream takes its TLAST beat
    cfg           : ReplayConfig -- ``mode``, ``count``, ``stride``, ``start``, ``soft_reset``, ``seed``,
                    ``seed_load`` in; ``prng`` out
    clock         : Signal(bool), in
    reset         : ResetSignal, in -- control and valid bits only
    spec          : ReplaySpec
    """
    u_bits = len(cfg.stride)  # UQ0.32 fractions, as STRIDE
    issue, last_issue, check_load = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    u_in, p1_high = Signal(intbv(0)[u_bits:]), Signal(intbv(0)[u_bits:])
    js, stride_q = Signal(modbv(0)[u_bits:]), Signal(intbv(0)[u_bits:])
    control = sample_issue(
        issue,
        last_issue,
        u_in,
        js,
        stride_q,
        check_load,
        status,
        p1_high,
        total,
        state,
        s_tdata,
        s_tvalid,
        s_tlast,
        advance,
        out_last_beat,
        cfg,
        clock,
        reset,
        spec,
    )
    control.name = "issue"
    f_valid, f_last, f_target = Signal(bool(0)), Signal(bool(0)), Signal(intbv(0)[len(total) :])
    front = sample_front(
        f_valid,
        f_last,
        f_target,
        p1_high,
        issue,
        last_issue,
        u_in,
        js,
        check_load,
        cfg.count,
        cfg.stride,
        stride_q,
        total,
        advance,
        cfg.soft_reset,
        clock,
        reset,
    )
    front.name = "front"
    insts = [control, front]
    d_valid, d_last, d_node, d_target = f_valid, f_last, None, f_target
    for level in range(1, spec.levels + 1):
        if level == spec.levels:  # the leaf stage: the sampler's results
            o_valid, o_last, o_node, o_target, o_code = sample_valid, sample_last, sample_index, None, sample_code
        else:
            o_valid, o_last, o_node = Signal(bool(0)), Signal(bool(0)), Signal(intbv(0)[spec.k_bits * level :])
            o_target, o_code = Signal(intbv(0)[spec.level_width(level) :]), None
        inst = descend_level(
            o_valid,
            o_last,
            o_node,
            o_target,
            o_code,
            tree.sample_rd[level],
            tree.children[level],
            d_valid,
            d_last,
            d_node,
            d_target,
            advance,
            cfg.soft_reset,
            clock,
            reset,
            spec,
            level,
        )
        inst.name = f"descend{level}"
        insts.append(inst)
        d_valid, d_last, d_node, d_target = o_valid, o_last, o_node, o_target
    return insts


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
    inst = valid_stage(out_valid, out_last, valid[-1], last[-1], advance, flush, clock, reset)
    inst.name = "valid_out"
    insts.append(inst)
    for i in range(lat1):
        inst = word_stage(js[i], js[i - 1] if i else a_js, advance, clock)
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
