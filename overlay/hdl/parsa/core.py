"""The ParSa core (OPaL's parallel tile-coded Sarsa) behind its streams: the controller FSM and its datapath around
the positions unit, WORKERS workers (map), the sum and argmax trees (reduce) and the record emitter.

The FSM (``control``) owns the state, STATUS, the cycle counters and the act timing; what each state does with the
stream and the memories is a sub-block: :func:`~.streams.config_loader` (CFG words), :func:`~.streams.record_receiver`
(RECV words), :func:`~.streams.policy_port` (LOAD, CLEAR, DUMP rows), :func:`~.update.sarsa_update` (the UPD
arithmetic), and :func:`~.start.start_check` / :func:`~.start.run_parameters` (what START refuses and latches), as the
replay core is split into tree, updater, sampler and select.

Operation (the contract is the model :class:`~pynq_rl.overlay.models.parsa.ParsaModel` and the emulated IP)::

    IDLE --START refused (see ParsaModel.start_error)--> IDLE with DONE|ERR_CONFIG
         --START CONFIG--> CFG (N_DIMS dimension records, 2 x N_TILINGS descriptor words, to TLAST)
                           --> CFG_CHECK --> IDLE    (length wrong: ERR_STREAM; a bad layout: ERR_CONFIG; either
                                                      way the old configuration stays: it is double-banked)
         --START ACT--> RECV (one state record) --> RUN (positions, workers, reduce, choice) --> [UPD] --> RECV ...
                        RECV --key >= KEYS--> REJECT (NO_ACTION record, ERR_CONFIG) --> RECV ...
                        RECV --TLAST inside a record--> FINISH with ERR_STREAM
         --START LOAD_POLICY--> LOAD (rows to TLAST) --> IDLE
         --START DUMP_POLICY--> DUMP (row by row through the emitter) --> FINISH --> IDLE
         --START CLEAR--> CLEAR (TILES_PER_WORKER cycles, every bank at once; keys forgotten) --> IDLE

ACT, one state record (``n`` = N_DIMS, ``B`` = tilings of the busiest worker)::

    RUN cycle 0           positions unit starts: u_d for d < n, one per cycle (positions.LATENCY)
    RUN cycle n + 2       act_go: every worker issues its tilings, one per cycle (worker.ACT_LATENCY)
    RUN cycle n + B + 11  every worker's preference vector is final; sum tree (SUM_STAGES), q = sat(sum) (1),
                          argmax (ARGMAX_STAGES)
    RUN cycle n + B + 18  choice: PRNG step, explore test, random action; EPSILON decays
    RUN cycle n + B + 19  q[a] selected; the action record is loaded into the emitter; key memory written

so ``CYCLES_ACT = n + B + ACT_DEPTH``. The Sarsa update (ONLINE, a reward, the key holds a previous state) then
runs ``B + UPDATE_DEPTH`` cycles: gamma * q[a] (1), delta = sat(r + rnd(...) - q) (1), alpha * delta (1),
increment (1), then every worker's update pass (worker.UPDATE_LATENCY) and one cycle to collect saturation.

CYCLES counts the cycles the core works on the batch: one per input beat of each whole state record, the RUN
cycles and the update cycles; cycles spent waiting for the output stream (a held emitter) are not counted, so
CYCLES is the ParsaSpec formula whatever the DMA does.
"""
from myhdl import always_comb, always_seq, block, concat, ConcatSignal, enum, intbv, Signal

from ...spec import PARSA_NO_ACTION, PRNG_ZERO_SEED, ParsaMode, ParsaSpec, xorshift32_step
from ..common.arith import saturate
from ..common.bram import ram_sdp_rf
from ..common.mux import field_signed, mux_tree
from ..common.prng import xorshift32, xorshift32_next
from . import config_check as _cc
from . import positions as _pos
from . import reduce as _red
from . import worker as _wk
from .config_check import parsa_config_check
from .emitter import parsa_emitter
from .params import ParsaWidths, WorkerBus
from .positions import parsa_positions
from .start import run_parameters, start_check
from .streams import config_loader, policy_port, record_receiver
from .update import sarsa_update
from .reduce import argmax_tree, q_saturate, sum_tree
from .worker import parsa_worker

__all__ = ["parsa_core", "ParsaConfig", "ACT_DEPTH", "UPDATE_DEPTH", "act_go_cycle"]

t_state = enum("IDLE", "CFG", "CFG_CHECK", "LOAD", "DUMP_READ", "DUMP_WAIT", "DUMP_LOAD", "CLEAR", "RECV", "RUN",
               "HOLD", "UPD", "REJECT", "FINISH")

#: RUN cycle (after the n_dims positions) at which the workers start: u_0 is readable positions.LATENCY cycles after
#: the positions start and a worker reads positions in its S1, two cycles after act_go
ACT_GO_AFTER_DIMS = _pos.LATENCY - 3
#: CYCLES_ACT - n_dims - busiest: worker pipeline, sum tree, saturation, argmax, choice (2)
ACT_DEPTH = ACT_GO_AFTER_DIMS + _wk.ACT_LATENCY + _red.SUM_STAGES + 1 + _red.ARGMAX_STAGES + 2
#: CYCLES_UPDATE - busiest: 4 arithmetic stages, the go pulse, the workers' pass, saturation collection
UPDATE_DEPTH = 4 + _wk.UPDATE_LATENCY + 1

MODE_CONFIG, MODE_LOAD = int(ParsaMode.CONFIG), int(ParsaMode.LOAD_POLICY)
MODE_DUMP, MODE_CLEAR = int(ParsaMode.DUMP_POLICY), int(ParsaMode.CLEAR)


def act_go_cycle(n_dims: int) -> int:
    """RUN cycle of act_go for ``n_dims`` dimensions"""
    return n_dims + ACT_GO_AFTER_DIMS


class ParsaConfig:
    """Register-side signals of the core (one instance per core).

    Inputs: ``mode``, ``start`` / ``soft_reset`` (pulses), ``n_dims``, ``n_actions``, ``n_tilings``, ``alpha``,
    ``gamma``, ``epsilon`` (written value) and ``epsilon_written`` (pulse), ``epsilon_decay``, ``options``,
    ``seed`` and ``seed_written``, ``reward_key``, ``reward`` and ``reward_written``: the 32-bit registers.
    Outputs: ``busy``, ``done``, ``err_config``, ``err_stream``, ``saturated``, ``cycles``, ``cycles_act``,
    ``cycles_update``, ``epsilon_live`` (EPSILON read), ``seed_live`` (SEED read: the PRNG state).
    """

    def __init__(self, spec: ParsaSpec) -> None:
        r32 = lambda: Signal(intbv(0)[32:])  # noqa: E731 - one line per register below
        self.mode = Signal(intbv(0)[4:])
        self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0))
        self.n_dims, self.n_actions, self.n_tilings = r32(), r32(), r32()
        self.alpha, self.gamma, self.epsilon = r32(), r32(), r32()
        self.epsilon_decay = Signal(intbv(1 << spec.coef.frac)[32:])   # the register's reset value
        self.options = Signal(intbv(0)[2:])
        self.seed = Signal(intbv(PRNG_ZERO_SEED)[32:])
        self.reward_key, self.reward = r32(), r32()
        self.epsilon_written, self.seed_written, self.reward_written = (Signal(bool(0)), Signal(bool(0)),
                                                                        Signal(bool(0)))
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles, self.cycles_act, self.cycles_update = r32(), r32(), r32()
        self.epsilon_live = r32()
        self.seed_live = Signal(intbv(PRNG_ZERO_SEED)[32:])


@block
def _in_use(flag, n_actions, index: int):
    """``flag`` = action ``index`` < N_ACTIONS"""

    @always_comb
    def logic():
        flag.next = n_actions > index

    return logic


@block
def _value_source(v, q, dump_col, use_dump, keep):
    """What the emitter snapshots for one action: a dumped policy value, q[a], or 0 (beyond N_ACTIONS, rejected)."""

    @always_comb
    def logic():
        if use_dump:
            v.next = dump_col
        elif keep:
            v.next = q
        else:
            v.next = 0

    return logic


@block
def _max_chain(y, a, b):
    @always_comb
    def logic():
        if a > b:
            y.next = a
        else:
            y.next = b

    return logic


@block
def _or_chain(y, a, b):
    @always_comb
    def logic():
        y.next = a or b

    return logic


@block
def _load_column(col, flag, tdata, strobe, word_index, clock, column: int, vw: int):
    """Policy LOAD: column ``column`` of the row being assembled takes its stream value, saturated to ``vw`` bits.

    col  : Signal(intbv[vw]), out (the value's bits, registered)
    flag : Signal(bool), out -- the value on the stream now saturates (combinational)
    """
    lo, hi = -(1 << (vw - 1)), (1 << (vw - 1)) - 1
    raw = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    clamped = Signal(intbv(0, min=lo, max=hi + 1))
    sat = Signal(bool(0))
    word = column // 2
    insts = [field_signed(raw, tdata, 32 * (column % 2))]
    if vw < 32:
        insts.append(saturate(clamped, sat, raw, lo, hi))
    else:
        @always_comb
        def passthrough():
            clamped.next = raw
        insts.append(passthrough)

    @always_comb
    def saturation():
        flag.next = sat and strobe and word_index == word

    @always_seq(clock.posedge, reset=None)
    def register():
        if strobe and word_index == word:
            col.next = clamped[vw:]

    insts += [saturation, register]
    return insts


@block
def parsa_core(m_tdata, m_tvalid, m_tlast, s_tready, s_tdata, s_tvalid, s_tlast, m_tready, cfg: ParsaConfig,
               clock, reset, spec: ParsaSpec):
    """ParSa core.

    m_tdata, m_tvalid, m_tlast : Signal, out -- output stream (action records, policy rows)
    s_tready                   : Signal(bool), out
    s_tdata, s_tvalid, s_tlast : Signal, in -- input stream (state records, CONFIG records, policy rows)
    m_tready                   : Signal(bool), in
    cfg                        : ParsaConfig -- registers in, status out
    clock                      : Signal(bool), in
    reset                      : ResetSignal, in
    spec                       : ParsaSpec
    """
    if spec.act_depth != ACT_DEPTH or spec.update_depth != UPDATE_DEPTH:
        raise ValueError(f"this HDL has act_depth {ACT_DEPTH} and update_depth {UPDATE_DEPTH}; the spec says "
                         f"{spec.act_depth} and {spec.update_depth}")
    wd = ParsaWidths(spec)
    W, MA, MD, MT, TPW, K, VW = (spec.workers, spec.max_actions, spec.max_dims, spec.max_tilings,
                                 spec.tiles_per_worker, spec.keys, spec.value_w)
    RWW = (MA + 1) // 2                        # stream words per policy row
    KB, AB = wd.key_bits, wd.action_bits
    one = 1 << spec.coef.frac
    cf = spec.coef.frac
    vlo, vhi = -(1 << (VW - 1)), (1 << (VW - 1)) - 1
    value = dict(min=vlo, max=vhi + 1)

    bus = WorkerBus(wd)
    u_mem = [Signal(intbv(0)[16:]) for _ in range(MD)]
    state = Signal(t_state.IDLE)

    # run-time registers latched at START
    n_dims = Signal(intbv(0, min=0, max=MD + 1))
    n_actions = Signal(intbv(0, min=0, max=MA + 1))
    alpha = Signal(intbv(0, min=-(one << 1), max=one << 1))      # signed operands: the multiplies stay signed
    gamma = Signal(intbv(0, min=-(one << 1), max=one << 1))
    decay = Signal(intbv(0)[cf + 1:])
    online = Signal(bool(0))
    rec_words = Signal(intbv(0, min=0, max=MD + 2))
    out_words = Signal(intbv(0, min=0, max=RWW + 2))
    configured, dim_bank = Signal(bool(0)), Signal(bool(0))
    configured_dims = Signal(intbv(0, min=0, max=MD + 1))
    busiest = Signal(intbv(0, min=0, max=MT + 1))
    eps = Signal(intbv(0)[32:])
    prng, prng_next = Signal(intbv(PRNG_ZERO_SEED)[32:]), Signal(intbv(xorshift32_step(PRNG_ZERO_SEED))[32:])
    prng_step = Signal(bool(0))

    # stream bookkeeping
    word_count = Signal(intbv(0)[33:])
    expected = Signal(intbv(0)[34:])
    timer = Signal(intbv(0)[32:])
    t_run = Signal(intbv(0, min=0, max=MD + MT + ACT_DEPTH + 2))
    t_upd = Signal(intbv(0, min=0, max=MT + UPDATE_DEPTH + 2))

    # CONFIG datapath
    desc_w0 = Signal(intbv(0)[64:])
    desc_strobe = Signal(bool(0))
    desc_w1 = Signal(intbv(0)[32:])
    cfg_bad, check_clear = Signal(bool(0)), Signal(bool(0))
    dim_we = Signal(bool(0))
    dim_waddr = Signal(intbv(0, min=0, max=2 * MD))
    dim_wdata = Signal(intbv(0)[64:])

    # ACT datapath
    state_we = Signal(bool(0))
    state_waddr = Signal(intbv(0, min=0, max=(MD + 1) // 2))
    state_wdata = Signal(intbv(0)[64:])
    pos_go = Signal(bool(0))
    hdr_key = Signal(intbv(0)[16:])
    hdr_flags = Signal(intbv(0)[2:])
    hdr_reward = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    reward_sat = Signal(intbv(0, **value))
    reward_flag = Signal(bool(0))
    terminal, batch_last = Signal(bool(0)), Signal(bool(0))
    key_valid, pend_valid = Signal(intbv(0)[1 << KB:]), Signal(intbv(0)[1 << KB:])
    key_raddr = Signal(intbv(0)[KB:])
    key_ren = Signal(bool(0))
    key_we = Signal(bool(0))
    key_wdata, key_q = Signal(intbv(0)[AB + VW:]), Signal(intbv(0)[AB + VW:])
    pend_we = Signal(bool(0))
    pend_waddr = Signal(intbv(0)[KB:])
    pend_wdata, pend_q = Signal(intbv(0)[VW:]), Signal(intbv(0)[VW:])
    pend_raw = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    pend_sat = Signal(intbv(0, **value))
    has_reward, prev_valid = Signal(bool(0)), Signal(bool(0))
    reward = Signal(intbv(0, **value))
    prev_q = Signal(intbv(0, **value))
    any_record, any_accepted = Signal(bool(0)), Signal(bool(0))

    accs = [[Signal(intbv(0, min=-(1 << (wd.acc_w - 1)), max=1 << (wd.acc_w - 1))) for _ in range(MA)]
            for _ in range(W)]
    counts = [Signal(intbv(0, min=0, max=MT + 1)) for _ in range(W)]
    overflows = [Signal(bool(0)) for _ in range(W)]
    upd_sats = [Signal(bool(0)) for _ in range(W)]
    rows = [Signal(intbv(0)[wd.row_w:]) for _ in range(W)]
    totals = [Signal(intbv(0, min=-(1 << (wd.sum_w - 1)), max=1 << (wd.sum_w - 1))) for _ in range(MA)]
    qs = [Signal(intbv(0, **value)) for _ in range(MA)]
    q_flags = [Signal(bool(0)) for _ in range(MA)]
    in_use = [Signal(bool(0)) for _ in range(MA)]
    best = Signal(intbv(0)[AB:])
    q_any_sat = Signal(bool(0))

    # choice
    explore = Signal(bool(0))
    rand_action = Signal(intbv(0)[AB + 16:])
    chosen, chosen_r = Signal(intbv(0)[AB:]), Signal(intbv(0)[AB:])
    explored_r = Signal(bool(0))
    chosen_q = Signal(intbv(0, **value))
    chosen_q_r = Signal(intbv(0, **value))
    eps_prod = Signal(intbv(0)[2 * cf + 3:])
    eps_next = Signal(intbv(0)[32:])

    # Sarsa update arithmetic
    g_prod = Signal(intbv(0, min=-(1 << (VW + cf + 3)), max=1 << (VW + cf + 3)))
    raw_delta = Signal(intbv(0, min=-(1 << (VW + 2)), max=1 << (VW + 2)))
    delta = Signal(intbv(0, **value))
    delta_flag = Signal(bool(0))
    m_prod = Signal(intbv(0, min=-(1 << (VW + cf + 3)), max=1 << (VW + cf + 3)))
    upd_sat_any = Signal(bool(0))

    # emitter
    em_load, em_skip, em_release_now, em_last = Signal(bool(0)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    em_words = Signal(intbv(0, min=0, max=RWW + 2))
    em_header = Signal(intbv(0)[64:])
    # combinational signals start at the value their logic gives at power-up: a Verilog simulator evaluates a block
    # whose inputs are registers only when one of them changes (MyHDL evaluates every block at time 0)
    em_release, em_release_last, em_idle = Signal(bool(0)), Signal(bool(0)), Signal(bool(1))
    held = Signal(bool(0))                         # an emitted record's final word waits for release
    em_values = [Signal(intbv(0, **value)) for _ in range(MA)]
    use_dump, rejecting = Signal(bool(0)), Signal(bool(0))
    keep = [Signal(bool(0)) for _ in range(MA)]
    dump_row = Signal(intbv(0)[wd.row_w:])
    dump_cols = [Signal(intbv(0, **value)) for _ in range(MA)]
    dump_worker = Signal(intbv(0, min=0, max=max(2, W)))
    dump_r = Signal(intbv(0, min=0, max=TPW + 1))

    # LOAD_POLICY
    load_cols = [Signal(intbv(0)[VW:]) for _ in range(MA)]
    load_flags = [Signal(bool(0)) for _ in range(MA)]
    load_strobe = Signal(bool(0))
    load_k = Signal(intbv(0, min=0, max=RWW + 1))
    load_r = Signal(intbv(0, min=0, max=TPW + 1))
    load_w = Signal(intbv(0, min=0, max=W + 1))
    load_sat, load_sat_now = Signal(bool(0)), Signal(bool(0))
    load_row = ConcatSignal(*reversed(load_cols)) if MA > 1 else load_cols[0]
    clear_r = Signal(intbv(0, min=0, max=TPW + 1))

    hdr_key_lo = Signal(intbv(0)[KB:])
    prev_action = Signal(intbv(0)[AB:])
    prev_q_mem = Signal(intbv(0, **value))
    pend_q_value = Signal(intbv(0, **value))
    cq32 = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    bus_pol_zero = Signal(bool(0))
    desc_phase = Signal(bool(0))
    t_last = Signal(intbv(0, min=0, max=MD + MT + ACT_DEPTH + 2))
    t_choose = Signal(intbv(0, min=0, max=MD + MT + ACT_DEPTH + 2))
    t_go = Signal(intbv(0, min=0, max=MD + ACT_GO_AFTER_DIMS + 2))
    # the FSM's state as the sub-blocks see it (SOFT_RESET wins over every state's work)
    idle, in_cfg, in_load, in_clear = Signal(bool(1)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    starting, refuse = Signal(bool(0)), Signal(bool(0))
    in_dump_read, in_dump_load, in_recv, in_upd = Signal(bool(0)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))

    # # #
    insts = []

    # -- sub-blocks -------------------------------------------------------------------------------------------------
    insts.append(parsa_positions(u_mem, pos_go, n_dims, dim_we, dim_waddr, dim_wdata, dim_bank,
                                 state_we, state_waddr, state_wdata, clock, reset, wd))
    insts[-1].name = "positions"
    for w in range(W):
        worker = parsa_worker(accs[w], counts[w], overflows[w], upd_sats[w], rows[w], bus, u_mem, clock, reset,
                              w, wd)
        worker.name = f"worker{w}"
        insts.append(worker)
    for a in range(MA):
        insts.append(_in_use(in_use[a], n_actions, a))
        insts.append(sum_tree(totals[a], [accs[w][a] for w in range(W)], clock))
        insts.append(q_saturate(qs[a], q_flags[a], totals[a], in_use[a], clock))
    insts.append(argmax_tree(best, qs, in_use, clock))
    insts.append(parsa_config_check(cfg_bad, desc_strobe, desc_w0, desc_w1, n_dims, check_clear, clock, reset, wd))
    insts.append(xorshift32(prng, cfg.seed, cfg.seed_written, prng_step, clock, reset))
    insts.append(xorshift32_next(prng_next, prng))
    insts.append(mux_tree(chosen_q, qs, chosen_r))
    insts.append(mux_tree(dump_row, rows, dump_worker))

    # OR / max chains over workers and actions (built here: MyHDL wants every instance made by the block itself)
    chained = []
    for kind, signals in (("max", counts), ("or", overflows), ("or", upd_sats), ("or", q_flags),
                          ("or", load_flags)):
        acc = signals[0]
        for sig in signals[1:]:
            if kind == "max":
                out = Signal(intbv(0, min=0, max=MT + 1))
                insts.append(_max_chain(out, acc, sig))
            else:
                out = Signal(bool(0))
                insts.append(_or_chain(out, acc, sig))
            acc = out
        chained.append(acc)
    busiest_now, overflow_any, upd_sat_chain, q_sat_chain, load_sat_chain = chained

    for a in range(MA):
        insts.append(field_signed(dump_cols[a], dump_row, a * VW))
        insts.append(_value_source(em_values[a], qs[a], dump_cols[a], use_dump, keep[a]))
        insts.append(_load_column(load_cols[a], load_flags[a], s_tdata, load_strobe, load_k, clock, a, VW))
    insts.append(parsa_emitter(m_tdata, m_tvalid, m_tlast, em_idle, m_tready, em_load, em_header, em_skip,
                               em_words, em_release_now, em_last, em_release, em_release_last, em_values,
                               cfg.soft_reset, clock, reset))

    loader = config_loader(dim_we, dim_waddr, dim_wdata, desc_w0, desc_w1, desc_strobe, desc_phase, bus,
                           in_cfg, s_tvalid, s_tdata, word_count, n_dims, dim_bank, clock, reset, wd)
    loader.name = "config_loader"
    receiver = record_receiver(hdr_key, hdr_flags, hdr_reward, state_we, state_waddr, state_wdata,
                               in_recv, s_tvalid, s_tdata, word_count, clock, reset)
    receiver.name = "record_receiver"
    port = policy_port(bus, bus_pol_zero, load_k, load_r, load_w, load_sat, clear_r, dump_r, dump_worker,
                       idle, in_load, in_clear, in_dump_read, in_dump_load, s_tvalid, load_sat_now, em_idle,
                       clock, reset, wd)
    port.name = "policy_port"
    update = sarsa_update(g_prod, raw_delta, m_prod, bus, in_upd, t_upd, gamma, chosen_q_r, reward, prev_q,
                          terminal, alpha, delta, clock, reset, spec)
    update.name = "sarsa_update"
    checker = start_check(refuse, cfg, eps, configured, configured_dims, spec)
    checker.name = "start_check"
    latch = run_parameters(n_dims, rec_words, n_actions, out_words, alpha, gamma, decay, online,
                           starting, cfg, clock, reset, spec)
    latch.name = "run_parameters"
    insts += [loader, receiver, port, update, checker, latch]

    key_mem = ram_sdp_rf(key_q, key_wdata, hdr_key_lo, key_we, key_raddr, key_ren, clock, 1 << KB)
    pend_mem = ram_sdp_rf(pend_q, pend_wdata, pend_waddr, pend_we, key_raddr, key_ren, clock, 1 << KB)
    insts += [key_mem, pend_mem]
    reward_clamp = saturate(reward_sat, reward_flag, hdr_reward, vlo, vhi) if VW < 32 else None
    pend_clamp = _clamp(pend_sat, pend_raw, vlo, vhi) if VW < 32 else None
    delta_clamp = saturate(delta, delta_flag, raw_delta, vlo, vhi)
    insts += [x for x in (reward_clamp, pend_clamp, delta_clamp) if x is not None]

    for a in range(MA):
        insts.append(_keep(keep[a], in_use[a], rejecting))

    if VW == 32:
        @always_comb
        def no_saturation():
            reward_sat.next = hdr_reward
            pend_sat.next = pend_raw
            reward_flag.next = 0
        insts.append(no_saturation)

    @always_comb
    def state_decode():
        idle.next = state == t_state.IDLE
        starting.next = state == t_state.IDLE and cfg.start and not cfg.soft_reset
        in_cfg.next = state == t_state.CFG and not cfg.soft_reset
        in_load.next = state == t_state.LOAD and not cfg.soft_reset
        in_clear.next = state == t_state.CLEAR and not cfg.soft_reset
        in_dump_read.next = state == t_state.DUMP_READ and not cfg.soft_reset
        in_dump_load.next = state == t_state.DUMP_LOAD and not cfg.soft_reset
        in_recv.next = state == t_state.RECV and not cfg.soft_reset
        in_upd.next = state == t_state.UPD and not cfg.soft_reset

    @always_comb
    def wide_passthrough():
        q_any_sat.next = q_sat_chain
        upd_sat_any.next = upd_sat_chain
        load_sat_now.next = load_sat_chain

    @always_comb
    def streams_and_memories():
        s_tready.next = state == t_state.CFG or state == t_state.LOAD or state == t_state.RECV
        load_strobe.next = state == t_state.LOAD and s_tvalid and load_w < W
        key_raddr.next = s_tdata[KB:]
        key_ren.next = state == t_state.RECV and s_tvalid and word_count == 0
        hdr_key_lo.next = hdr_key[KB:]
        key_wdata.next = concat(chosen_r, chosen_q[VW:])
        prev_action.next = key_q[AB + VW:VW]
        prev_q_mem.next = key_q[VW:].signed()
        pend_q_value.next = pend_q.signed()
        pend_we.next = cfg.reward_written and cfg.reward_key < K
        pend_waddr.next = cfg.reward_key[KB:]
        pend_raw.next = cfg.reward.signed()
        pend_wdata.next = pend_sat[VW:]
        if bus_pol_zero:
            bus.pol_wdata.next = 0
        else:
            bus.pol_wdata.next = load_row

    @always_comb
    def choice():
        explore.next = prng_next[16:] < eps
        rand_action.next = (prng_next[32:16] * n_actions) >> 16
        eps_prod.next = eps[cf + 1:] * decay
        prng_step.next = state == t_state.RUN and t_run == t_choose and not terminal
        cq32.next = chosen_q

    @always_comb
    def chosen_action():
        eps_next.next = eps_prod >> cf
        if explore:
            chosen.next = rand_action[AB:]
        else:
            chosen.next = best

    @always_comb
    def emitter_inputs():
        # the key memory takes (a', q[a']) in the cycle the record is decided, so a next record of the same key,
        # whose header can arrive in the very next cycle, reads it back (the read is registered, read-first)
        key_we.next = em_idle and not terminal and ((state == t_state.RUN and t_run == t_last) or
                                                    state == t_state.HOLD)
        use_dump.next = state == t_state.DUMP_LOAD
        rejecting.next = state == t_state.REJECT
        em_load.next = em_idle and (state == t_state.DUMP_LOAD or state == t_state.REJECT or
                                    state == t_state.HOLD or (state == t_state.RUN and t_run == t_last))
        if state == t_state.DUMP_LOAD:
            em_skip.next = 1
            em_words.next = RWW + 1
            em_release_now.next = 1
            em_last.next = dump_worker == W - 1 and dump_r == TPW - 1
        else:
            em_skip.next = 0
            em_words.next = out_words
            em_release_now.next = batch_last
            em_last.next = batch_last
        if state == t_state.REJECT or terminal:
            em_header.next = PARSA_NO_ACTION
        else:
            em_header.next = (cq32[32:] << 32) | (explored_r << 16) | chosen_r

    @always_seq(clock.posedge, reset=reset)
    def control():
        pos_go.next = 0
        bus.act_go.next = 0
        bus.cfg_begin.next = 0
        bus.cfg_commit.next = 0
        em_release.next = 0
        check_clear.next = 0
        busiest.next = busiest_now
        if pend_we:
            pend_valid.next[cfg.reward_key[KB:]] = 1
        if cfg.epsilon_written:
            eps.next = cfg.epsilon

        if cfg.soft_reset:
            state.next = t_state.IDLE
            cfg.busy.next = 0
            cfg.done.next = 0
            cfg.err_config.next = 0
            cfg.err_stream.next = 0
            cfg.saturated.next = 0
            held.next = 0
        elif state == t_state.IDLE:
            if cfg.start:
                cfg.done.next = 0
                cfg.err_config.next = 0
                cfg.err_stream.next = 0
                cfg.saturated.next = 0
                cfg.cycles.next = 0
                word_count.next = 0                     # run-time registers: run_parameters
                if refuse:                              # start_check
                    cfg.done.next = 1
                    cfg.err_config.next = 1
                else:
                    cfg.busy.next = 1
                    if cfg.mode == MODE_CONFIG:
                        expected.next = cfg.n_dims + 2 * cfg.n_tilings
                        bus.cfg_begin.next = 1
                        check_clear.next = 1
                        state.next = t_state.CFG
                    elif cfg.mode == MODE_LOAD:
                        state.next = t_state.LOAD
                    elif cfg.mode == MODE_DUMP:
                        state.next = t_state.DUMP_READ
                    elif cfg.mode == MODE_CLEAR:
                        key_valid.next = 0
                        pend_valid.next = 0
                        state.next = t_state.CLEAR
                    else:
                        cfg.cycles_act.next = 0
                        cfg.cycles_update.next = 0
                        any_record.next = 0
                        any_accepted.next = 0
                        held.next = 0
                        t_last.next = cfg.n_dims[len(n_dims):] + busiest + (ACT_DEPTH - 1)
                        t_choose.next = cfg.n_dims[len(n_dims):] + busiest + (ACT_DEPTH - 2)
                        t_go.next = cfg.n_dims[len(n_dims):] + (ACT_GO_AFTER_DIMS - 1)
                        state.next = t_state.RECV

        elif state == t_state.CFG:                      # the words: config_loader
            if s_tvalid:
                word_count.next = word_count + 1
                if s_tlast:
                    if word_count + 1 != expected:
                        cfg.err_stream.next = 1
                        cfg.done.next = 1
                        cfg.busy.next = 0
                        state.next = t_state.IDLE
                    else:
                        cfg.cycles.next = word_count + 1
                        timer.next = 0
                        state.next = t_state.CFG_CHECK

        elif state == t_state.CFG_CHECK:
            timer.next = timer + 1
            if timer == _cc.LATENCY + 1:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE
                if cfg_bad or overflow_any or cfg.n_tilings == 0 or cfg.n_tilings > W * MT:
                    cfg.err_config.next = 1
                else:
                    bus.cfg_commit.next = 1
                    dim_bank.next = not dim_bank
                    configured.next = 1
                    configured_dims.next = n_dims
                    key_valid.next = 0
                    pend_valid.next = 0

        elif state == t_state.LOAD:                     # the rows: policy_port
            if s_tvalid:
                word_count.next = word_count + 1
                if s_tlast:
                    cfg.done.next = 1
                    cfg.busy.next = 0
                    state.next = t_state.IDLE
                    if word_count + 1 == W * TPW * RWW:
                        cfg.cycles.next = word_count + 1
                        cfg.saturated.next = load_sat or load_sat_now
                    else:
                        cfg.err_stream.next = 1

        elif state == t_state.CLEAR:                    # the writes: policy_port
            if clear_r == TPW - 1:
                cfg.cycles.next = TPW
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE

        elif state == t_state.DUMP_READ:                # the read: policy_port
            state.next = t_state.DUMP_WAIT
        elif state == t_state.DUMP_WAIT:
            state.next = t_state.DUMP_LOAD
        elif state == t_state.DUMP_LOAD:
            if em_idle:                                 # the row counters: policy_port
                cfg.cycles.next = cfg.cycles + RWW
                if dump_r == TPW - 1 and dump_worker == W - 1:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.DUMP_READ

        elif state == t_state.RECV:                     # the words: record_receiver
            if s_tvalid:
                if word_count + 1 == rec_words:
                    word_count.next = 0
                    cfg.cycles.next = cfg.cycles + rec_words
                    any_record.next = 1
                    batch_last.next = s_tlast
                    if held:
                        em_release.next = 1
                        em_release_last.next = 0
                        held.next = 0
                    if hdr_key >= K:
                        cfg.err_config.next = 1
                        state.next = t_state.REJECT
                    else:
                        any_accepted.next = 1
                        pos_go.next = 1
                        t_run.next = 0
                        bus.key_base.next = hdr_key[KB:] * MT
                        state.next = t_state.RUN
                elif s_tlast:
                    word_count.next = 0
                    cfg.err_stream.next = 1
                    if held:
                        em_release.next = 1
                        em_release_last.next = 1
                        held.next = 0
                    state.next = t_state.FINISH
                else:
                    word_count.next = word_count + 1

        elif state == t_state.RUN or state == t_state.HOLD:
            if state == t_state.RUN:
                t_run.next = t_run + 1
                cfg.cycles.next = cfg.cycles + 1
            if state == t_state.RUN and t_run == 0:
                terminal.next = hdr_flags[1]
                prev_valid.next = key_valid[hdr_key_lo]
                prev_q.next = prev_q_mem
                bus.a_prev.next = prev_action
                if hdr_flags[0]:
                    has_reward.next = 1
                    reward.next = reward_sat
                    if reward_flag:
                        cfg.saturated.next = 1
                elif pend_valid[hdr_key_lo]:
                    has_reward.next = 1
                    reward.next = pend_q_value
                else:
                    has_reward.next = 0
                    reward.next = 0
                pend_valid.next[hdr_key_lo] = 0
            if state == t_state.RUN and t_run == t_go:
                bus.act_go.next = 1
            if state == t_state.RUN and t_run == t_choose:
                if q_any_sat:
                    cfg.saturated.next = 1
                if terminal:
                    explored_r.next = 0
                    chosen_r.next = 0
                else:
                    explored_r.next = explore
                    chosen_r.next = chosen
                    eps.next = eps_next
            if state == t_state.HOLD or t_run == t_last:
                if not em_idle:
                    state.next = t_state.HOLD
                else:
                    cfg.cycles_act.next = t_last + 1
                    chosen_q_r.next = chosen_q
                    if terminal:
                        key_valid.next[hdr_key_lo] = 0
                    else:
                        key_valid.next[hdr_key_lo] = 1
                    held.next = not batch_last
                    if online and has_reward and prev_valid:
                        t_upd.next = 0
                        state.next = t_state.UPD
                    else:
                        cfg.cycles_update.next = 0
                        if batch_last:
                            state.next = t_state.FINISH
                        else:
                            state.next = t_state.RECV

        elif state == t_state.UPD:                      # the arithmetic: sarsa_update
            t_upd.next = t_upd + 1
            cfg.cycles.next = cfg.cycles + 1
            if t_upd == 2 and delta_flag:
                cfg.saturated.next = 1
            if t_upd == busiest + (UPDATE_DEPTH - 1):
                if upd_sat_any:
                    cfg.saturated.next = 1
                cfg.cycles_update.next = busiest + UPDATE_DEPTH
                if batch_last:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.RECV

        elif state == t_state.REJECT:
            if em_idle:
                held.next = not batch_last
                if batch_last:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.RECV

        elif state == t_state.FINISH:
            if em_idle:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE
                if any_record and not any_accepted:
                    cfg.cycles_act.next = n_dims + busiest + ACT_DEPTH

    @always_comb
    def live_registers():
        cfg.epsilon_live.next = eps
        cfg.seed_live.next = prng

    insts += [state_decode, wide_passthrough, streams_and_memories, choice, chosen_action, emitter_inputs, control,
              live_registers]
    return insts


@block
def _keep(flag, in_use, rejecting):
    """``flag`` = the action's q value goes into the record (in use, record not rejected)"""

    @always_comb
    def logic():
        flag.next = in_use and not rejecting

    return logic


@block
def _clamp(y, x, lo: int, hi: int):
    """``y = clamp(x, lo, hi)`` (combinational; a REWARD register write saturates without a STATUS flag)."""
    n, width = len(y), len(x)
    ones = (1 << (width - n + 1)) - 1

    @always_comb
    def clamp():
        if x[width:n - 1] == 0 or x[width:n - 1] == ones:
            y.next = x[n:].signed()
        elif x[width - 1]:
            y.next = lo
        else:
            y.next = hi

    return clamp
