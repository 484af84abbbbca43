"""The replay core: a K-ary sum tree in per-level memories (:mod:`.tree`), its updater, its sampler and the FSM.

One kind of operation per START (:class:`~pynq_rl.overlay.spec.ReplayMode`); the contract is the model's
(:class:`~pynq_rl.overlay.models.replay.SumTree`), bit for bit::

    IDLE --START, SET---------------> SET --TLAST--> SET_DRAIN (3L+1 cycles) --> IDLE, DONE
         --START, SAMPLE[_UNIFORM]--> CHECK (3 cycles) --COUNT, STRIDE, TOTAL ok--> SAMPLE --last result out--> IDLE
                                                       --refused--> IDLE, DONE|ERR_CONFIG (nothing streamed)
         --START, DUMP--------------> DUMP --last beat out--> IDLE
         --START, CLEAR-------------> CLEAR (K**(L-1) cycles: every level's memory at once) --> IDLE
         --START, other MODE--------> IDLE, DONE|ERR_CONFIG

* SET: one record per cycle into the updater (:mod:`.updater`); an index >= capacity drops its record and sets
  ERR_CONFIG, a code above the largest leaf code is saturated and sets SATURATED.
* SAMPLE / SAMPLE_UNIFORM: the sampler (:mod:`.sampler`) takes one uniform per cycle, from the PRNG (one step per
  sample) or from the input stream, and results leave in order, TLAST on the last. SAMPLE_UNIFORM with TLAST
  before the COUNT-th record: the records received are sampled, the last of their results carries TLAST, and
  ERR_STREAM is set. Without TLAST on the COUNT-th record: COUNT results, the extra records are taken and
  dropped up to TLAST, ERR_STREAM. Either way the output ends with TLAST and the input is drained to its TLAST.
* DUMP: the leaf memory read word by word (K leaves each), two leaf codes (uint32 each) per beat, index order.
  The word read is registered before the pair multiplexer picks a beat of it: the block RAM's clock-to-output
  delay and the multiplexer into the output register are one cycle apart.
* SOFT_RESET: back to IDLE, STATUS cleared, the sampler and output flushed; the tree and the PRNG are kept.
  During SET the input stops (a beat offered in the SOFT_RESET cycle is dropped) and the records already accepted
  complete first: BUSY stays high for those ``set_depth`` cycles, then IDLE without DONE, so the tree stays
  consistent. A SOFT_RESET during CLEAR leaves the tree partly cleared: CLEAR again.

CYCLES counts from the first input beat (SET, SAMPLE_UNIFORM) or from START (SAMPLE, DUMP, CLEAR) to the cycle
DONE rises, both included: ``n + spec.set_depth`` for n set records and ``n + spec.sample_depth`` for n samples
when the streams move one beat per cycle (SAMPLE_UNIFORM takes the 3 CHECK cycles less), ``capacity/2 + 3``
(``spec.dump_cycles``) for DUMP and ``K**(L-1)`` for CLEAR. A refused START leaves CYCLES at 0.

The root (TOTAL) and the nonzero-leaf count have no reset, like the memories, so a reset never makes them disagree
with the stored tree; everything powers up 0.
"""

from myhdl import Signal, always, always_comb, always_seq, block, enum, intbv, modbv

from ...spec import ReplayMode, ReplaySpec, xorshift32_step
from ..common.arith import assign
from ..common.prng import ZERO_SEED_REPLACEMENT, xorshift32, xorshift32_next
from .multiply import mul_latency
from .sampler import descend_level, descend_stages, front_stages, sample_front
from .select import select
from .tree import level_depth, level_row, row_columns, tree_level
from .updater import delta_signal, update_level

__all__ = ["replay_core", "ReplayConfig", "set_depth", "sample_depth"]

t_state = enum("IDLE", "CHECK", "SET", "SET_DRAIN", "SAMPLE", "DUMP", "CLEAR")
MODE_SET, MODE_SAMPLE, MODE_UNIFORM = int(ReplayMode.SET), int(ReplayMode.SAMPLE), int(ReplayMode.SAMPLE_UNIFORM)
MODE_DUMP, MODE_CLEAR = int(ReplayMode.DUMP), int(ReplayMode.CLEAR)

#: CHECK cycles between START and the first issued sample (COUNT * STRIDE through the stage-b multiplier, whose
#: tiles load at the START edge: ``mul_latency(32, 32) - 1`` = 2 more edges, then the check)
CHECK_CYCLES = 3
if mul_latency(32, 32) != CHECK_CYCLES:
    raise AssertionError("CHECK must last as long as the COUNT * STRIDE product takes from the START edge")


def set_depth(spec: ReplaySpec) -> int:
    """Pipeline depth of a set batch: CYCLES = records + this (the input register, three edges per level: read,
    read-data register, write; the root's edge is the last record's DONE cycle)."""
    return 3 * spec.levels + 1


def sample_depth(spec: ReplaySpec) -> int:
    """Pipeline depth of a SAMPLE batch: CYCLES = COUNT + this (CHECK, the front stages, the descent stages of
    every level, the output register; the last result's handshake is the last cycle)."""
    return CHECK_CYCLES + front_stages(spec.level_width(0)) + spec.levels * descend_stages(spec.k) + 1


class ReplayConfig:
    """Configuration and status signals between the register file and the core (one instance per core).

    Inputs (from registers): ``mode``, ``count``, ``stride``, ``seed``, ``seed_load`` (pulse after a SEED write),
    ``start`` and ``soft_reset`` (pulses). Outputs: ``busy``, ``done``, ``err_config``, ``err_stream``,
    ``saturated``, ``cycles``, ``total_lo``, ``total_hi``, ``nonzero``, ``prng`` (the PRNG state: SEED reads).
    """

    def __init__(self) -> None:
        self.mode = Signal(intbv(0)[4:])
        self.count, self.stride, self.seed = (Signal(intbv(0)[32:]) for _ in range(3))
        self.seed_load, self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles = Signal(intbv(0)[32:])
        self.total_lo, self.total_hi = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
        self.nonzero = Signal(intbv(0)[32:])
        self.prng = Signal(intbv(ZERO_SEED_REPLACEMENT)[32:])


@block
def replay_core(
    m_tdata, m_tvalid, m_tlast, s_tready, s_tdata, s_tvalid, s_tlast, m_tready, cfg, clock, reset, spec: ReplaySpec
):
    """The replay core (tree memories + updater + sampler + dump/clear + FSM); registers arrive through ``cfg``.

    m_tdata  : Signal(64), out -- result records / dump words (AXI4-Stream master)
    m_tvalid : Signal(bool), out
    m_tlast  : Signal(bool), out
    s_tready : Signal(bool), out -- set records / uniform records (AXI4-Stream slave)
    s_tdata  : Signal(64), in
    s_tvalid : Signal(bool), in
    s_tlast  : Signal(bool), in
    m_tready : Signal(bool), in
    cfg      : ReplayConfig
    clock    : Signal(bool), in
    reset    : ResetSignal, in -- synchronous; control registers only (not the tree, TOTAL or NONZERO)
    """
    if spec.levels < 2:
        raise ValueError(f"the replay HDL needs levels >= 2, not {spec.levels!r}")
    if len(s_tdata) != 64 or len(m_tdata) != 64:
        raise ValueError("the replay core streams 64-bit records")
    L, K, kb, ib = spec.levels, spec.k, spec.k_bits, spec.index_bits
    lw, max_code = spec.leaf.width, spec.leaf.max_code
    w = [spec.level_width(level) for level in range(L + 1)]
    beats = spec.capacity // 2
    clear_words = K ** (L - 1)
    drain_cycles = set_depth(spec)

    state = Signal(t_state.IDLE)
    root = Signal(intbv(0)[w[0] :])
    nonzero = Signal(intbv(0, min=0, max=spec.capacity + 1))
    mode_set, mode_dump, clearing = (Signal(bool(0)) for _ in range(3))
    advance = Signal(bool(1))
    # SET input register
    in_beat = Signal(bool(0))
    index_ok, code_big = Signal(bool(1)), Signal(bool(0))
    s0_valid = Signal(bool(0))
    s0_index = Signal(intbv(0)[ib:])
    s0_code = Signal(intbv(0)[lw:])
    drain = Signal(intbv(0, min=0, max=drain_cycles + 1))
    silent = Signal(bool(0))  # a SOFT_RESET interrupted the SET: drain without raising DONE
    # sampling control
    uniform = Signal(bool(0))
    count_q, stride_q = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    chk = Signal(intbv(0, min=0, max=CHECK_CYCLES))
    check_load = Signal(bool(0))
    issuing, in_open, out_done = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    issued = Signal(intbv(0)[32:])
    js = Signal(modbv(0)[32:])
    issue, discard, last_issue = (Signal(bool(0)) for _ in range(3))
    # issued + 1 == COUNT (the sample being issued is the last), kept as a register beside ``issued``: the 32-bit
    # increment and compare in front of the FSM's own logic was the Pynq-Z2 build's slowest xc7 path (issue 15)
    count_reached = Signal(bool(0))
    # Combinational signals start at their inputs' initial values: a converted ``always @(inputs)`` block first runs
    # when an input changes, so an output whose inputs never change from power-up would otherwise keep 0 (this
    # made the first sample after power-up use u = 0 in the Verilog, never in MyHDL).
    prng_next, u_in = Signal(intbv(xorshift32_step(ZERO_SEED_REPLACEMENT))[32:]), Signal(intbv(0)[32:])
    prng_enable = Signal(bool(0))
    p1_high = Signal(intbv(0)[32:])
    # dump and clear
    dump_pos = Signal(intbv(0, min=0, max=beats + 1))
    dump_issuing, dump_issue = Signal(bool(0)), Signal(bool(0))
    dump_v1, dump_last1 = Signal(bool(0)), Signal(bool(0))  # the leaf word read
    dump_v2, dump_last2 = Signal(bool(0)), Signal(bool(0))  # the leaf word registered
    dump_addr = Signal(intbv(0, min=0, max=level_depth(K, L)))
    clear_addr = Signal(intbv(0, min=0, max=clear_words))
    # output register
    out_valid, out_last = Signal(bool(0)), Signal(bool(0))
    out_data = Signal(intbv(0)[64:])
    out_last_beat = Signal(bool(0))
    cc = Signal(modbv(0)[32:])
    counting = Signal(bool(0))

    insts = []
    # -- the tree ------------------------------------------------------------------------------------------------
    rows, children = {}, {}
    set_rd, sample_rd = {}, {}
    wr_en, wr_addr, wr_row = {}, {}, {}
    for level in range(1, L + 1):
        depth = level_depth(K, level)
        rows[level] = level_row(K, w[level])
        children[level] = row_columns(rows[level], K)
        if level > 1:
            set_rd[level], sample_rd[level] = Signal(intbv(0, min=0, max=depth)), Signal(intbv(0, min=0, max=depth))
            wr_addr[level] = Signal(intbv(0, min=0, max=depth))
        else:  # one word: a register, no address
            set_rd[level] = sample_rd[level] = wr_addr[level] = None
        wr_en[level], wr_row[level] = Signal(bool(0)), level_row(K, w[level])
        inst = tree_level(
            rows[level],
            sample_rd[level],
            set_rd[level],
            dump_addr if level == L else None,
            mode_set,
            mode_dump,
            advance,
            wr_en[level],
            wr_addr[level],
            wr_row[level],
            clearing,
            clear_addr,
            clock,
            K,
            level,
        )
        inst.name = f"level{level}"
        insts.append(inst)

    # -- updater: leaf stage first, then up to level 1; level 1 feeds the root ----------------------------------
    nz_up, nz_down = Signal(bool(0)), Signal(bool(0))
    u_valid, u_index, u_delta = s0_valid, s0_index, s0_code
    for level in range(L, 0, -1):
        o_valid, o_delta = Signal(bool(0)), delta_signal(spec)
        o_index = Signal(intbv(0)[kb * (level - 1) :]) if level > 1 else None  # the root needs no node number
        inst = update_level(
            o_valid,
            o_index,
            o_delta,
            nz_up if level == L else None,
            nz_down if level == L else None,
            set_rd[level],
            wr_en[level],
            wr_addr[level],
            wr_row[level],
            rows[level],
            u_valid,
            u_index,
            u_delta,
            clock,
            reset,
            spec,
            level,
        )
        inst.name = f"update{level}"
        insts.append(inst)
        u_valid, u_index, u_delta = o_valid, o_index, o_delta
    root_valid, root_delta = u_valid, u_delta

    # -- sampler ---------------------------------------------------------------------------------------------------
    f_valid, f_last, f_target = Signal(bool(0)), Signal(bool(0)), Signal(intbv(0)[w[0] :])
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
        root,
        advance,
        cfg.soft_reset,
        clock,
        reset,
    )
    front.name = "front"
    insts.append(front)
    d_valid, d_last, d_node, d_target = f_valid, f_last, None, f_target
    leaf_code = Signal(intbv(0)[lw:])
    for level in range(1, L + 1):
        o_valid, o_last, o_node = Signal(bool(0)), Signal(bool(0)), Signal(intbv(0)[kb * level :])
        o_target = Signal(intbv(0)[w[level] :]) if level < L else None
        inst = descend_level(
            o_valid,
            o_last,
            o_node,
            o_target,
            leaf_code if level == L else None,
            sample_rd[level],
            children[level],
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
    sample_valid, sample_last, sample_index = d_valid, d_last, d_node

    # -- dump: two leaves per beat, from a register copy of the leaf word (the block RAM output drives no logic) ----
    dump_lo, dump_hi = Signal(intbv(0)[lw:]), Signal(intbv(0)[lw:])
    dump_row, leaf_row = level_row(K, lw), rows[L]
    leaves = row_columns(dump_row, K)

    @always(clock.posedge)
    def dump_word():
        if advance:
            dump_row.next = leaf_row

    insts.append(dump_word)
    if K == 2:
        insts += [assign(dump_lo, leaves[0]), assign(dump_hi, leaves[1])]
    else:
        dump_pair1, dump_pair2 = Signal(intbv(0)[kb - 1 :]), Signal(intbv(0)[kb - 1 :])
        lo_mux, hi_mux = select(dump_lo, dump_pair2, leaves[0::2]), select(dump_hi, dump_pair2, leaves[1::2])
        lo_mux.name, hi_mux.name = "dump_lo", "dump_hi"
        insts += [lo_mux, hi_mux]

        @always(clock.posedge)
        def dump_pair():
            if advance:
                dump_pair1.next = dump_pos[kb - 1 :]
                dump_pair2.next = dump_pair1

        insts.append(dump_pair)

    # -- PRNG --------------------------------------------------------------------------------------------------------
    prng = xorshift32(cfg.prng, cfg.seed, cfg.seed_load, prng_enable, clock, reset)
    prng.name = "prng"
    prng_step = xorshift32_next(prng_next, cfg.prng)
    prng_step.name = "prng_next"
    insts += [prng, prng_step]

    # -- combinational control -------------------------------------------------------------------------------------
    @always_comb
    def modes():
        mode_set.next = state == t_state.SET or state == t_state.SET_DRAIN
        mode_dump.next = state == t_state.DUMP
        clearing.next = state == t_state.CLEAR
        # every IDLE edge loads COUNT and STRIDE into the multiplier (nothing else is in flight), so its operand
        # multiplexer waits on a state decode only, not on the START pulse (issue 15: that was the critical path)
        check_load.next = state == t_state.IDLE
        advance.next = not out_valid or m_tready

    @always_comb
    def handshakes():
        issue.next = state == t_state.SAMPLE and issuing and advance and (not uniform or s_tvalid)
        discard.next = state == t_state.SAMPLE and uniform and in_open and not issuing and s_tvalid
        dump_issue.next = state == t_state.DUMP and dump_issuing and advance
        out_last_beat.next = out_valid and m_tready and out_last
        if state == t_state.SET:
            s_tready.next = True
            in_beat.next = s_tvalid
        elif state == t_state.SAMPLE and uniform and in_open:
            s_tready.next = advance or not issuing
            in_beat.next = s_tvalid and (advance or not issuing)
        else:
            s_tready.next = False
            in_beat.next = False

    @always_comb
    def sample_inputs():
        last_issue.next = count_reached or (uniform and s_tlast)
        prng_enable.next = state == t_state.SAMPLE and issuing and advance and not uniform
        if uniform:
            u_in.next = s_tdata[32:]
        else:
            u_in.next = prng_next

    @always_comb
    def set_inputs():
        index_ok.next = s_tdata[32:ib] == 0
        code_big.next = s_tdata[64:32] > max_code

    if L >= 2:

        @always_comb
        def dump_address():
            dump_addr.next = dump_pos[ib - 1 : kb - 1]

        insts.append(dump_address)

    @always_comb
    def read_outs():
        m_tdata.next = out_data
        m_tvalid.next = out_valid
        m_tlast.next = out_last
        cfg.total_lo.next = root & 0xFFFFFFFF
        cfg.total_hi.next = root >> 32
        cfg.nonzero.next = nonzero

    # -- registers ---------------------------------------------------------------------------------------------------
    @always(clock.posedge)
    def tree_root():
        if clearing:
            root.next = 0
            nonzero.next = 0
        else:
            if root_valid:
                root.next = root + root_delta
            if nz_up:
                nonzero.next = nonzero + 1
            elif nz_down:
                nonzero.next = nonzero - 1

    @always_seq(clock.posedge, reset=reset)
    def output_register():
        if cfg.soft_reset:
            out_valid.next = False
            dump_v1.next = False
            dump_v2.next = False
        elif advance:
            dump_v1.next = dump_issue
            dump_v2.next = dump_v1
            out_valid.next = sample_valid or dump_v2
            if dump_v2:
                out_last.next = dump_last2
            else:
                out_last.next = sample_last

    @always(clock.posedge)
    def output_data():
        if advance:
            dump_last1.next = dump_pos == beats - 1
            dump_last2.next = dump_last1
            if dump_v2:
                out_data.next = (dump_hi << 32) | dump_lo
            else:
                out_data.next = (leaf_code << 32) | sample_index

    @always(clock.posedge)
    def set_input():
        s0_index.next = s_tdata[ib:]
        if code_big:
            s0_code.next = max_code
        else:
            s0_code.next = s_tdata[32 + lw : 32]

    @always_seq(clock.posedge, reset=reset)
    def cycle_counter():
        if cfg.soft_reset:
            counting.next = False
        elif state == t_state.IDLE:
            if cfg.start:
                cc.next = 0
                counting.next = cfg.mode == MODE_SAMPLE or cfg.mode == MODE_DUMP or cfg.mode == MODE_CLEAR
        elif counting or in_beat:
            cc.next = cc + 1
            counting.next = True

    @always_seq(clock.posedge, reset=reset)
    def control():
        s0_valid.next = False
        if cfg.soft_reset:
            if state == t_state.SET or state == t_state.SET_DRAIN:
                state.next = t_state.SET_DRAIN  # the records accepted so far complete: the tree stays consistent
                drain.next = drain_cycles
                silent.next = True
            else:
                state.next = t_state.IDLE
                cfg.busy.next = False
            cfg.done.next = False
            cfg.err_config.next = False
            cfg.err_stream.next = False
            cfg.saturated.next = False
            issuing.next = False
            in_open.next = False
            dump_issuing.next = False
        elif state == t_state.IDLE:
            if cfg.start:
                cfg.done.next = False
                cfg.err_config.next = False
                cfg.err_stream.next = False
                cfg.saturated.next = False
                cfg.cycles.next = 0
                if cfg.mode == MODE_SET:
                    state.next = t_state.SET
                    cfg.busy.next = True
                elif cfg.mode == MODE_SAMPLE or cfg.mode == MODE_UNIFORM:
                    state.next = t_state.CHECK
                    cfg.busy.next = True
                    chk.next = 0
                    uniform.next = cfg.mode == MODE_UNIFORM
                    count_q.next = cfg.count
                    stride_q.next = cfg.stride
                elif cfg.mode == MODE_DUMP:
                    state.next = t_state.DUMP
                    cfg.busy.next = True
                    dump_pos.next = 0
                    dump_issuing.next = True
                elif cfg.mode == MODE_CLEAR:
                    state.next = t_state.CLEAR
                    cfg.busy.next = True
                    clear_addr.next = 0
                else:
                    cfg.done.next = True
                    cfg.err_config.next = True
        else:
            finish = False
            if state == t_state.SET:
                if s_tvalid:
                    s0_valid.next = index_ok
                    if not index_ok:
                        cfg.err_config.next = True
                    if index_ok and code_big:
                        cfg.saturated.next = True
                    if s_tlast:
                        state.next = t_state.SET_DRAIN
                        drain.next = drain_cycles
            elif state == t_state.SET_DRAIN:
                if drain == 1:
                    finish = True
                else:
                    drain.next = drain - 1
            elif state == t_state.CHECK:
                if chk == CHECK_CYCLES - 1:
                    if count_q >= 1 and count_q <= spec.max_count and p1_high == 0 and root != 0:
                        state.next = t_state.SAMPLE
                        issuing.next = True
                        issued.next = 0
                        count_reached.next = count_q == 1
                        js.next = 0
                        in_open.next = uniform
                        out_done.next = False
                    else:
                        state.next = t_state.IDLE
                        cfg.busy.next = False
                        cfg.done.next = True
                        cfg.err_config.next = True
                else:
                    chk.next = chk + 1
            elif state == t_state.SAMPLE:
                in_finished = not in_open
                if issue:
                    issued.next = issued + 1
                    count_reached.next = issued + 2 == count_q
                    js.next = js + stride_q
                    if last_issue:
                        issuing.next = False
                    if uniform:
                        if s_tlast:
                            in_open.next = False
                            in_finished = True
                            if not count_reached:
                                cfg.err_stream.next = True
                        elif count_reached:
                            cfg.err_stream.next = True
                if discard and s_tlast:
                    in_open.next = False
                    in_finished = True
                if out_last_beat:
                    out_done.next = True
                if (out_done or out_last_beat) and in_finished:
                    finish = True
            elif state == t_state.DUMP:
                if dump_issue:
                    dump_pos.next = dump_pos + 1
                    if dump_pos == beats - 1:
                        dump_issuing.next = False
                if out_last_beat:
                    finish = True
            else:  # CLEAR
                if clear_addr == clear_words - 1:
                    finish = True
                else:
                    clear_addr.next = clear_addr + 1
            if finish:
                state.next = t_state.IDLE
                cfg.busy.next = False
                silent.next = False
                if not silent:
                    cfg.done.next = True
                    cfg.cycles.next = cc + 1

    insts += [
        modes,
        handshakes,
        sample_inputs,
        set_inputs,
        read_outs,
        tree_root,
        output_register,
        output_data,
        set_input,
        cycle_counter,
        control,
    ]
    return insts
