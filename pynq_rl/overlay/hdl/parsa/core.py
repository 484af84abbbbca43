"""The ParSa core (OPaL's parallel tile-coded Sarsa) behind its streams: the controller FSM and its datapath around
the positions unit, WORKERS workers (map), the sum and argmax trees (reduce) and the record emitter.

The FSM (``control``) owns the state, STATUS, the cycle counters and the act timing; everything else is a sub-block
that the state (decoded in ``state_decode`` / ``stream_decode``) drives, as the replay core is split into tree,
updater, sampler and select:

* what each state does with the stream: :func:`~.streams.config_loader` (CFG words), :func:`~.streams.record_receiver`
  (RECV words), :func:`~.streams.policy_port` (LOAD, CLEAR, DUMP rows) and :func:`~.streams.row_assembler` (the
  rows LOAD writes);
* the ACT datapath: :func:`~.positions.parsa_positions`, the workers (:func:`~.worker.parsa_worker`),
  :func:`~.reduce.q_reduce` (sum and argmax trees), :func:`~.choice.action_choice` (epsilon-greedy choice, the PRNG,
  EPSILON's decay) and :func:`~.keys.key_memory` (each key's previous step and pending reward);
* :func:`~.update.sarsa_update` (the UPD arithmetic), :func:`~.start.start_check` / :func:`~.start.run_parameters`
  (what START refuses and latches), :func:`~.config_check.parsa_config_check` (the layout CFG_CHECK waits for);
* :func:`~.record_out.record_out`: the emitter and the record it sends (action record, NO_ACTION, policy row).

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
    RUN cycle n + 3       act_go: every worker issues its tilings, one per cycle (worker.ACT_LATENCY)
    RUN cycle n + B + 13  every worker's preference vector is final; sum tree (SUM_STAGES), q = sat(sum) (1),
                          argmax (ARGMAX_STAGES)
    RUN cycle n + B + 21  choice: PRNG step, the explore test and random action drawn ahead; EPSILON decays
    RUN cycle n + B + 22  q[a] selected; the action record is loaded into the emitter; key memory written

so ``CYCLES_ACT = n + B + ACT_DEPTH``. The Sarsa update (ONLINE, a reward, the key holds a previous state) then
runs ``B + UPDATE_DEPTH`` cycles: gamma * q[a] (1), delta = sat(r + rnd(...) - q) (1), alpha * delta (1),
increment (1), then every worker's update pass (worker.UPDATE_LATENCY) and one cycle to collect saturation.

CYCLES counts the cycles the core works on the batch: one per input beat of each whole state record, the RUN
cycles and the update cycles; cycles spent waiting for the output stream (a held emitter) are not counted, so
CYCLES is the ParsaSpec formula whatever the DMA does.
"""

from myhdl import Signal, always_comb, always_seq, block, enum, intbv

from ...spec import PRNG_ZERO_SEED, ParsaMode, ParsaSpec
from . import config_check as _cc
from . import positions as _pos
from . import reduce as _red
from . import worker as _wk
from .choice import action_choice
from .config_check import parsa_config_check
from .keys import key_memory
from .params import ParsaConfig, ParsaWidths, WorkerBus
from .positions import parsa_positions
from .record_out import record_out
from .reduce import max_chain, or_chain, q_reduce
from .start import run_parameters, start_check
from .streams import config_loader, policy_port, record_receiver, row_assembler
from .update import sarsa_update
from .worker import parsa_worker

__all__ = ["parsa_core", "ParsaConfig", "ACT_DEPTH", "UPDATE_DEPTH", "act_go_cycle"]

t_state = enum(
    "IDLE",
    "CFG",
    "CFG_CHECK",
    "LOAD",
    "DUMP_READ",
    "DUMP_WAIT",
    "DUMP_LOAD",
    "CLEAR",
    "RECV",
    "RUN",
    "HOLD",
    "UPD",
    "REJECT",
    "FINISH",
)

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


@block
def parsa_core(
    m_tdata,
    m_tvalid,
    m_tlast,
    s_tready,
    s_tdata,
    s_tvalid,
    s_tlast,
    m_tready,
    cfg: ParsaConfig,
    clock,
    reset,
    spec: ParsaSpec,
):
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
        raise ValueError(
            f"this HDL has act_depth {ACT_DEPTH} and update_depth {UPDATE_DEPTH}; the spec says "
            f"{spec.act_depth} and {spec.update_depth}"
        )
    wd = ParsaWidths(spec)
    W, MA, MD, MT, TPW, K, VW = (
        spec.workers,
        spec.max_actions,
        spec.max_dims,
        spec.max_tilings,
        spec.tiles_per_worker,
        spec.keys,
        spec.value_w,
    )
    RWW = (MA + 1) // 2  # stream words per policy row
    KB, AB = wd.key_bits, wd.action_bits
    one = 1 << spec.coef.frac
    cf = spec.coef.frac
    value = dict(min=-(1 << (VW - 1)), max=1 << (VW - 1))

    bus = WorkerBus(wd)
    u_mem = [Signal(intbv(0)[16:]) for _ in range(MD)]
    state = Signal(t_state.IDLE)

    # run-time registers latched at START
    n_dims, configured_dims = [Signal(intbv(0, min=0, max=MD + 1)) for _ in range(2)]
    n_actions = Signal(intbv(0, min=0, max=MA + 1))
    alpha, gamma = [Signal(intbv(0, min=-(one << 1), max=one << 1)) for _ in range(2)]  # signed: signed multiplies
    decay = Signal(intbv(0)[cf + 1 :])
    online, configured, dim_bank = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    rec_words = Signal(intbv(0, min=0, max=MD + 2))
    out_words = Signal(intbv(0, min=0, max=RWW + 2))
    busiest, busiest_now = [Signal(intbv(0, min=0, max=MT + 1)) for _ in range(2)]
    eps, eps_next = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    prng = Signal(intbv(PRNG_ZERO_SEED)[32:])

    # stream bookkeeping and the act timing
    word_count = Signal(intbv(0)[33:])
    expected = Signal(intbv(0)[34:])
    tilings_bad = Signal(bool(0))  # N_TILINGS at START is 0 or more than the workers hold
    timer = Signal(intbv(0)[32:])
    t_run, t_last, t_choose = [Signal(intbv(0, min=0, max=MD + MT + ACT_DEPTH + 2)) for _ in range(3)]
    t_go = Signal(intbv(0, min=0, max=MD + ACT_GO_AFTER_DIMS + 2))
    t_upd = Signal(intbv(0, min=0, max=MT + UPDATE_DEPTH + 2))

    # CONFIG datapath
    desc_w0, desc_w1 = Signal(intbv(0)[64:]), Signal(intbv(0)[32:])
    desc_strobe, desc_phase = Signal(bool(0)), Signal(bool(0))
    cfg_bad, check_clear = Signal(bool(0)), Signal(bool(0))
    dim_we = Signal(bool(0))
    dim_waddr = Signal(intbv(0, min=0, max=2 * MD))
    dim_wdata = Signal(intbv(0)[64:])

    # ACT datapath: the record, the key's memories, the workers, reduce, choice
    state_we, pos_go = Signal(bool(0)), Signal(bool(0))
    state_waddr = Signal(intbv(0, min=0, max=(MD + 1) // 2))
    state_wdata = Signal(intbv(0)[64:])
    hdr_key = Signal(intbv(0)[16:])
    hdr_flags = Signal(intbv(0)[2:])
    hdr_reward = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    hdr_key_lo = Signal(intbv(0)[KB:])
    terminal, batch_last = Signal(bool(0)), Signal(bool(0))
    key_valid, pend_valid = Signal(intbv(0)[1 << KB :]), Signal(intbv(0)[1 << KB :])
    key_ren, pend_we, reward_flag = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    has_reward, prev_valid = Signal(bool(0)), Signal(bool(0))
    any_record, any_accepted = Signal(bool(0)), Signal(bool(0))
    prev_action = Signal(intbv(0)[AB:])
    reward_sat, prev_q_mem, pend_q_value, reward, prev_q = [Signal(intbv(0, **value)) for _ in range(5)]

    accs = [
        [Signal(intbv(0, min=-(1 << (wd.acc_w - 1)), max=1 << (wd.acc_w - 1))) for _ in range(MA)] for _ in range(W)
    ]
    counts = [Signal(intbv(0, min=0, max=MT + 1)) for _ in range(W)]
    overflows = [Signal(bool(0)) for _ in range(W)]
    upd_sats = [Signal(bool(0)) for _ in range(W)]
    rows = [Signal(intbv(0)[wd.row_w :]) for _ in range(W)]
    overflow_any, upd_sat_any, q_any_sat = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    qs = [Signal(intbv(0, **value)) for _ in range(MA)]
    in_use = [Signal(bool(0)) for _ in range(MA)]
    best, chosen, chosen_r = Signal(intbv(0)[AB:]), Signal(intbv(0)[AB:]), Signal(intbv(0)[AB:])
    explore, explored_r, delta_flag = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    chosen_q, chosen_q_r = Signal(intbv(0, **value)), Signal(intbv(0, **value))

    # output side
    # combinational signals start at the value their logic gives at power-up: a Verilog simulator evaluates a block
    # whose inputs are registers only when one of them changes (MyHDL evaluates every block at time 0)
    em_release, em_release_last, em_idle = Signal(bool(0)), Signal(bool(0)), Signal(bool(1))
    held = Signal(bool(0))  # an emitted record's final word waits for release
    dump_worker = Signal(intbv(0, min=0, max=max(2, W)))

    # LOAD_POLICY, CLEAR, DUMP_POLICY
    load_strobe, bus_pol_zero = Signal(bool(0)), Signal(bool(0))
    load_k = Signal(intbv(0, min=0, max=RWW + 1))
    load_w = Signal(intbv(0, min=0, max=W + 1))
    load_r, clear_r, dump_r = [Signal(intbv(0, min=0, max=TPW + 1)) for _ in range(3)]
    load_sat, load_sat_now = Signal(bool(0)), Signal(bool(0))

    # the FSM's state as the sub-blocks see it (SOFT_RESET wins over every state's work)
    idle, in_cfg, in_load, in_clear = Signal(bool(1)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    starting, refuse = Signal(bool(0)), Signal(bool(0))
    in_dump_read, in_dump_load, in_recv, in_upd = Signal(bool(0)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # ... and as they see it whatever SOFT_RESET does
    choosing, deciding, use_dump, rejecting = Signal(bool(0)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))

    # # #
    insts = []

    # -- sub-blocks -------------------------------------------------------------------------------------------------
    insts.append(
        parsa_positions(
            u_mem,
            pos_go,
            n_dims,
            dim_we,
            dim_waddr,
            dim_wdata,
            dim_bank,
            state_we,
            state_waddr,
            state_wdata,
            clock,
            reset,
            wd,
        )
    )
    insts[-1].name = "positions"
    for w in range(W):
        worker = parsa_worker(accs[w], counts[w], overflows[w], upd_sats[w], rows[w], bus, u_mem, clock, reset, w, wd)
        worker.name = f"worker{w}"
        insts.append(worker)
    insts += [max_chain(busiest_now, counts), or_chain(overflow_any, overflows), or_chain(upd_sat_any, upd_sats)]
    reduce = q_reduce(qs, in_use, best, q_any_sat, accs, n_actions, clock, wd)
    reduce.name = "reduce"
    choice = action_choice(
        explore,
        chosen,
        eps_next,
        chosen_q,
        prng,
        best,
        qs,
        chosen_r,
        eps,
        decay,
        n_actions,
        choosing,
        terminal,
        cfg.seed,
        cfg.seed_written,
        clock,
        reset,
        wd,
    )
    choice.name = "choice"
    keys = key_memory(
        hdr_key_lo,
        prev_action,
        prev_q_mem,
        pend_we,
        pend_q_value,
        reward_sat,
        reward_flag,
        hdr_key,
        hdr_reward,
        key_ren,
        s_tdata,
        deciding,
        em_idle,
        terminal,
        chosen_r,
        chosen_q,
        cfg,
        clock,
        wd,
    )
    keys.name = "keys"
    out = record_out(
        m_tdata,
        m_tvalid,
        m_tlast,
        em_idle,
        m_tready,
        qs,
        in_use,
        rows,
        dump_worker,
        dump_r,
        use_dump,
        rejecting,
        deciding,
        terminal,
        batch_last,
        out_words,
        chosen_r,
        explored_r,
        chosen_q,
        em_release,
        em_release_last,
        cfg.soft_reset,
        clock,
        reset,
        wd,
    )
    out.name = "record_out"
    insts += [reduce, choice, keys, out]
    insts.append(parsa_config_check(cfg_bad, desc_strobe, desc_w0, desc_w1, n_dims, check_clear, clock, reset, wd))

    loader = config_loader(
        dim_we,
        dim_waddr,
        dim_wdata,
        desc_w0,
        desc_w1,
        desc_strobe,
        desc_phase,
        bus,
        in_cfg,
        s_tvalid,
        s_tdata,
        word_count,
        n_dims,
        dim_bank,
        clock,
        reset,
        wd,
    )
    loader.name = "config_loader"
    receiver = record_receiver(
        hdr_key,
        hdr_flags,
        hdr_reward,
        state_we,
        state_waddr,
        state_wdata,
        in_recv,
        s_tvalid,
        s_tdata,
        word_count,
        clock,
        reset,
    )
    receiver.name = "record_receiver"
    port = policy_port(
        bus,
        bus_pol_zero,
        load_k,
        load_r,
        load_w,
        load_sat,
        clear_r,
        dump_r,
        dump_worker,
        idle,
        in_load,
        in_clear,
        in_dump_read,
        in_dump_load,
        s_tvalid,
        load_sat_now,
        em_idle,
        clock,
        reset,
        wd,
    )
    port.name = "policy_port"
    assembler = row_assembler(bus, load_sat_now, bus_pol_zero, s_tdata, load_strobe, load_k, clock, wd)
    assembler.name = "row_assembler"
    update = sarsa_update(
        delta_flag, bus, in_upd, t_upd, gamma, chosen_q_r, reward, prev_q, terminal, alpha, clock, reset, spec
    )
    update.name = "sarsa_update"
    checker = start_check(refuse, cfg, eps, configured, configured_dims, spec)
    checker.name = "start_check"
    latch = run_parameters(
        n_dims, rec_words, n_actions, out_words, alpha, gamma, decay, online, starting, cfg, clock, reset, spec
    )
    latch.name = "run_parameters"
    insts += [loader, receiver, port, assembler, update, checker, latch]

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
    def stream_decode():
        s_tready.next = state == t_state.CFG or state == t_state.LOAD or state == t_state.RECV
        load_strobe.next = state == t_state.LOAD and s_tvalid and load_w < W
        key_ren.next = state == t_state.RECV and s_tvalid and word_count == 0
        choosing.next = state == t_state.RUN and t_run == t_choose
        deciding.next = (state == t_state.RUN and t_run == t_last) or state == t_state.HOLD
        use_dump.next = state == t_state.DUMP_LOAD
        rejecting.next = state == t_state.REJECT

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
                word_count.next = 0  # run-time registers: run_parameters
                if refuse:  # start_check
                    cfg.done.next = 1
                    cfg.err_config.next = 1
                else:
                    cfg.busy.next = 1
                    if cfg.mode == MODE_CONFIG:
                        expected.next = cfg.n_dims + 2 * cfg.n_tilings
                        tilings_bad.next = cfg.n_tilings == 0 or cfg.n_tilings > W * MT
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
                        t_last.next = cfg.n_dims[len(n_dims) :] + busiest + (ACT_DEPTH - 1)
                        t_choose.next = cfg.n_dims[len(n_dims) :] + busiest + (ACT_DEPTH - 2)
                        t_go.next = cfg.n_dims[len(n_dims) :] + (ACT_GO_AFTER_DIMS - 1)
                        state.next = t_state.RECV

        elif state == t_state.CFG:  # the words: config_loader
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
                if cfg_bad or overflow_any or tilings_bad:
                    cfg.err_config.next = 1
                else:
                    bus.cfg_commit.next = 1
                    dim_bank.next = not dim_bank
                    configured.next = 1
                    configured_dims.next = n_dims
                    key_valid.next = 0
                    pend_valid.next = 0

        elif state == t_state.LOAD:  # the rows: policy_port
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

        elif state == t_state.CLEAR:  # the writes: policy_port
            if clear_r == TPW - 1:
                cfg.cycles.next = TPW
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE

        elif state == t_state.DUMP_READ:  # the read: policy_port
            state.next = t_state.DUMP_WAIT
        elif state == t_state.DUMP_WAIT:
            state.next = t_state.DUMP_LOAD
        elif state == t_state.DUMP_LOAD:
            if em_idle:  # the row counters: policy_port
                cfg.cycles.next = cfg.cycles + RWW
                if dump_r == TPW - 1 and dump_worker == W - 1:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.DUMP_READ

        elif state == t_state.RECV:  # the words: record_receiver
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

        elif state == t_state.UPD:  # the arithmetic: sarsa_update
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

    insts += [state_decode, stream_decode, control, live_registers]
    return insts
