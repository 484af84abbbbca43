"""The ParSa controller: the FSM of :mod:`.core` (the state, STATUS, the CYCLES counters) and the registers it keeps
for the datapath, cut by the registers each part owns (:class:`~.fsm.ControlRegisters`). Every part reads the one
state register and acts in the cycles the FSM does; SOFT_RESET wins over every state's work in each of them:

* :func:`_operation`: the state and its transitions, STATUS;
* :func:`_counters`: the stream's word count, CYCLES / CYCLES_ACT / CYCLES_UPDATE;
* :func:`_config_commit`: CONFIG's length and check timer, and what an accepted CONFIG commits (the workers' and
  the positions unit's banks swap);
* :func:`~.step.act_timing`: when a state record's step runs: the positions and workers start, the choice and
  decide cycles, the update pass, the emitter's held final word;
* :func:`~.step.key_step`: what the step takes from and leaves for its key (previous q, reward, the key and
  pending-reward valid bits), the chosen action and EPSILON;
* :func:`_decode`: the state as the datapath sees it (:class:`~.params.ParsaPhase`), TREADY;
* :func:`~.start.start_check` and :func:`~.start.run_parameters`: what START refuses and latches.
"""

from myhdl import always_comb, always_seq, block

from ...spec import ParsaSpec
from . import config_check as _cc
from .fsm import (
    ACT_DEPTH,
    MODE_CLEAR,
    MODE_CONFIG,
    MODE_DUMP,
    MODE_LOAD,
    UPDATE_DEPTH,
    ControlRegisters,
    t_state,
)
from .params import ParsaPhase, ParsaReport, ParsaRun, ParsaWidths, WorkerBus
from .start import run_parameters, start_check
from .step import act_timing, key_step

__all__ = ["parsa_control"]


@block
def parsa_control(
    s_tready,
    bus: WorkerBus,
    phase: ParsaPhase,
    run: ParsaRun,
    rep: ParsaReport,
    s_tvalid,
    s_tlast,
    cfg,
    clock,
    reset,
    spec: ParsaSpec,
):
    """The ParSa controller: its parts (module docstring) around the registers they share.

    s_tready : Signal(bool), out -- CFG, LOAD, RECV
    bus      : WorkerBus, out -- ``cfg_begin``, ``cfg_commit``, ``act_go``, ``key_base``, ``a_prev``
    phase    : ParsaPhase, out -- the state as the datapath sees it
    run      : ParsaRun, out -- the registers the controller holds for the datapath
    rep      : ParsaReport, in -- what the datapath says
    s_tvalid : Signal(bool), in
    s_tlast  : Signal(bool), in
    cfg      : ParsaConfig -- registers in, STATUS and CYCLES out; EPSILON and SEED read back
    clock    : Signal(bool), in
    reset    : ResetSignal, in
    spec     : ParsaSpec
    """
    wd = ParsaWidths(spec)
    regs = ControlRegisters(wd)
    checker = start_check(regs.refuse, cfg, run.eps, regs.configured, regs.configured_dims, spec)
    checker.name = "start_check"
    latch = run_parameters(
        run.n_dims,
        regs.rec_words,
        run.n_actions,
        run.out_words,
        run.alpha,
        run.gamma,
        run.decay,
        regs.online,
        phase.starting,
        cfg,
        clock,
        reset,
        spec,
    )
    latch.name = "run_parameters"
    decode = _decode(phase, s_tready, regs, run, rep, s_tvalid, cfg, spec)
    decode.name = "decode"
    operation = _operation(regs, run, rep, s_tvalid, s_tlast, cfg, clock, reset, spec)
    operation.name = "operation"
    counters = _counters(regs, run, rep, s_tvalid, s_tlast, cfg, clock, reset, spec)
    counters.name = "counters"
    commit = _config_commit(bus, regs, run, rep, s_tvalid, s_tlast, cfg, clock, reset, spec)
    commit.name = "config_commit"
    timing = act_timing(bus, regs, run, rep, s_tvalid, s_tlast, cfg, clock, reset, spec)
    timing.name = "act_timing"
    step = key_step(bus, regs, run, rep, cfg, clock, reset, spec)
    step.name = "key_step"
    eps, prng = run.eps, rep.prng

    @always_comb
    def live_registers():
        cfg.epsilon_live.next = eps
        cfg.seed_live.next = prng

    return checker, latch, decode, operation, counters, commit, timing, step, live_registers


@block
def _decode(phase: ParsaPhase, s_tready, regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, s_tvalid, cfg, spec):
    """The state as the datapath sees it (combinational): ``phase`` and ``s_tready`` out; the state, ``t_run``,
    ``t_choose``, ``t_last``, ``word_count``, the policy port's ``load_w``, ``s_tvalid`` and ``cfg.start`` /
    ``cfg.soft_reset`` in."""
    state, t_run, t_choose, t_last = regs.state, regs.t_run, regs.t_choose, regs.t_last
    word_count, load_w, w = run.word_count, rep.load_w, spec.workers
    idle, starting, in_cfg, in_load = phase.idle, phase.starting, phase.in_cfg, phase.in_load
    in_clear, in_dump_read, in_dump_load = phase.in_clear, phase.in_dump_read, phase.in_dump_load
    in_recv, in_upd, load_strobe, key_ren = phase.in_recv, phase.in_upd, phase.load_strobe, phase.key_ren
    choosing, deciding, use_dump, rejecting = phase.choosing, phase.deciding, phase.use_dump, phase.rejecting

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
        load_strobe.next = state == t_state.LOAD and s_tvalid and load_w < w
        key_ren.next = state == t_state.RECV and s_tvalid and word_count == 0
        choosing.next = state == t_state.RUN and t_run == t_choose
        deciding.next = (state == t_state.RUN and t_run == t_last) or state == t_state.HOLD
        use_dump.next = state == t_state.DUMP_LOAD
        rejecting.next = state == t_state.REJECT

    return state_decode, stream_decode


@block
def _operation(regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, s_tvalid, s_tlast, cfg, clock, reset, spec):
    """The FSM: the state and STATUS (``cfg.busy``, ``done``, ``err_config``, ``err_stream``, ``saturated``), from
    the stream, what START refuses, CONFIG's length and check, the act timing, whether the step updates (``online``,
    ``has_reward``, ``prev_valid``) and the datapath's reports."""
    W, TPW, K = spec.workers, spec.tiles_per_worker, spec.keys
    RWW = (spec.max_actions + 1) // 2  # stream words per policy row
    state, timer, expected, tilings_bad = regs.state, regs.timer, regs.expected, regs.tilings_bad
    refuse, rec_words, online, busiest = regs.refuse, regs.rec_words, regs.online, regs.busiest
    t_run, t_last, t_choose = regs.t_run, regs.t_last, regs.t_choose
    has_reward, prev_valid = regs.has_reward, regs.prev_valid
    word_count, t_upd, batch_last = run.word_count, run.t_upd, run.batch_last
    cfg_bad, overflow_any, upd_sat_any, q_any_sat = rep.cfg_bad, rep.overflow_any, rep.upd_sat_any, rep.q_any_sat
    load_sat, load_sat_now, clear_r, dump_r = rep.load_sat, rep.load_sat_now, rep.clear_r, rep.dump_r
    dump_worker, em_idle, hdr_key, hdr_flags = rep.dump_worker, rep.em_idle, rep.hdr_key, rep.hdr_flags
    reward_flag, delta_flag = rep.reward_flag, rep.delta_flag

    @always_seq(clock.posedge, reset=reset)
    def control():
        if cfg.soft_reset:
            state.next = t_state.IDLE
            cfg.busy.next = 0
            cfg.done.next = 0
            cfg.err_config.next = 0
            cfg.err_stream.next = 0
            cfg.saturated.next = 0
        elif state == t_state.IDLE:
            if cfg.start:
                cfg.done.next = 0
                cfg.err_config.next = 0
                cfg.err_stream.next = 0
                cfg.saturated.next = 0
                if refuse:  # start_check
                    cfg.done.next = 1
                    cfg.err_config.next = 1
                else:
                    cfg.busy.next = 1
                    if cfg.mode == MODE_CONFIG:
                        state.next = t_state.CFG
                    elif cfg.mode == MODE_LOAD:
                        state.next = t_state.LOAD
                    elif cfg.mode == MODE_DUMP:
                        state.next = t_state.DUMP_READ
                    elif cfg.mode == MODE_CLEAR:
                        state.next = t_state.CLEAR
                    else:
                        state.next = t_state.RECV

        elif state == t_state.CFG:  # the words: config_loader
            if s_tvalid and s_tlast:
                if word_count + 1 != expected:
                    cfg.err_stream.next = 1
                    cfg.done.next = 1
                    cfg.busy.next = 0
                    state.next = t_state.IDLE
                else:
                    state.next = t_state.CFG_CHECK

        elif state == t_state.CFG_CHECK:  # a passed check commits: _config_commit, key_step
            if timer == _cc.LATENCY + 1:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE
                if cfg_bad or overflow_any or tilings_bad:
                    cfg.err_config.next = 1

        elif state == t_state.LOAD:  # the rows: policy_port
            if s_tvalid and s_tlast:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE
                if word_count + 1 == W * TPW * RWW:
                    cfg.saturated.next = load_sat or load_sat_now
                else:
                    cfg.err_stream.next = 1

        elif state == t_state.CLEAR:  # the writes: policy_port
            if clear_r == TPW - 1:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE

        elif state == t_state.DUMP_READ:  # the read: policy_port
            state.next = t_state.DUMP_WAIT
        elif state == t_state.DUMP_WAIT:
            state.next = t_state.DUMP_LOAD
        elif state == t_state.DUMP_LOAD:
            if em_idle:  # the row counters: policy_port
                if dump_r == TPW - 1 and dump_worker == W - 1:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.DUMP_READ

        elif state == t_state.RECV:  # the words: record_receiver; the step starts: act_timing
            if s_tvalid:
                if word_count + 1 == rec_words:
                    if hdr_key >= K:
                        cfg.err_config.next = 1
                        state.next = t_state.REJECT
                    else:
                        state.next = t_state.RUN
                elif s_tlast:
                    cfg.err_stream.next = 1
                    state.next = t_state.FINISH

        elif state == t_state.RUN or state == t_state.HOLD:  # the step: act_timing, key_step
            if state == t_state.RUN and t_run == 0 and hdr_flags[0] and reward_flag:
                cfg.saturated.next = 1
            if state == t_state.RUN and t_run == t_choose and q_any_sat:
                cfg.saturated.next = 1
            if state == t_state.HOLD or t_run == t_last:
                if not em_idle:
                    state.next = t_state.HOLD
                elif online and has_reward and prev_valid:
                    state.next = t_state.UPD
                elif batch_last:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.RECV

        elif state == t_state.UPD:  # the arithmetic: sarsa_update
            if t_upd == 2 and delta_flag:
                cfg.saturated.next = 1
            if t_upd == busiest + (UPDATE_DEPTH - 1):
                if upd_sat_any:
                    cfg.saturated.next = 1
                if batch_last:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.RECV

        elif state == t_state.REJECT:
            if em_idle:
                if batch_last:
                    state.next = t_state.FINISH
                else:
                    state.next = t_state.RECV

        elif state == t_state.FINISH:
            if em_idle:
                cfg.done.next = 1
                cfg.busy.next = 0
                state.next = t_state.IDLE

    return control


@block
def _counters(regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, s_tvalid, s_tlast, cfg, clock, reset, spec):
    """The stream's ``word_count`` (words of the CONFIG or LOAD stream, or of the state record, before this one) and
    CYCLES, CYCLES_ACT, CYCLES_UPDATE: what each state of :func:`_operation` adds, in the same cycles."""
    W, TPW = spec.workers, spec.tiles_per_worker
    RWW = (spec.max_actions + 1) // 2  # stream words per policy row
    state, expected, refuse, rec_words = regs.state, regs.expected, regs.refuse, regs.rec_words
    online, busiest, t_run, t_last = regs.online, regs.busiest, regs.t_run, regs.t_last
    has_reward, prev_valid = regs.has_reward, regs.prev_valid
    any_record, any_accepted = regs.any_record, regs.any_accepted
    word_count, n_dims, t_upd = run.word_count, run.n_dims, run.t_upd
    clear_r, em_idle = rep.clear_r, rep.em_idle

    @always_seq(clock.posedge, reset=reset)
    def words():
        if cfg.soft_reset:
            pass  # SOFT_RESET wins over every state's work
        elif state == t_state.IDLE:
            if cfg.start:
                word_count.next = 0
        elif state == t_state.CFG or state == t_state.LOAD:
            if s_tvalid:
                word_count.next = word_count + 1
        elif state == t_state.RECV:
            if s_tvalid:
                if word_count + 1 == rec_words or s_tlast:
                    word_count.next = 0
                else:
                    word_count.next = word_count + 1

    @always_seq(clock.posedge, reset=reset)
    def cycles():
        if cfg.soft_reset:
            pass  # SOFT_RESET wins over every state's work
        elif state == t_state.IDLE:
            if cfg.start:
                cfg.cycles.next = 0
                if not refuse and not (
                    cfg.mode == MODE_CONFIG or cfg.mode == MODE_LOAD or cfg.mode == MODE_DUMP or cfg.mode == MODE_CLEAR
                ):  # ACT
                    cfg.cycles_act.next = 0
                    cfg.cycles_update.next = 0
        elif state == t_state.CFG:
            if s_tvalid and s_tlast and word_count + 1 == expected:
                cfg.cycles.next = word_count + 1
        elif state == t_state.LOAD:
            if s_tvalid and s_tlast and word_count + 1 == W * TPW * RWW:
                cfg.cycles.next = word_count + 1
        elif state == t_state.CLEAR:
            if clear_r == TPW - 1:
                cfg.cycles.next = TPW
        elif state == t_state.DUMP_LOAD:
            if em_idle:
                cfg.cycles.next = cfg.cycles + RWW
        elif state == t_state.RECV:
            if s_tvalid and word_count + 1 == rec_words:
                cfg.cycles.next = cfg.cycles + rec_words
        elif state == t_state.RUN or state == t_state.HOLD:
            if state == t_state.RUN:
                cfg.cycles.next = cfg.cycles + 1
            if (state == t_state.HOLD or t_run == t_last) and em_idle:
                cfg.cycles_act.next = t_last + 1
                if not (online and has_reward and prev_valid):
                    cfg.cycles_update.next = 0
        elif state == t_state.UPD:
            cfg.cycles.next = cfg.cycles + 1
            if t_upd == busiest + (UPDATE_DEPTH - 1):
                cfg.cycles_update.next = busiest + UPDATE_DEPTH
        elif state == t_state.FINISH:
            if em_idle and any_record and not any_accepted:
                cfg.cycles_act.next = n_dims + busiest + ACT_DEPTH

    return words, cycles


@block
def _config_commit(
    bus: WorkerBus, regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, s_tvalid, s_tlast, cfg, clock, reset, spec
):
    """CONFIG's bookkeeping: at its START ``expected`` (the stream's length), ``tilings_bad``, ``bus.cfg_begin`` and
    ``run.check_clear`` (pulses); ``timer`` (CFG_CHECK's cycles); when the check passes ``bus.cfg_commit`` (pulse),
    ``run.dim_bank`` (toggled: the positions unit's banks swap, as the workers' do), ``configured`` and
    ``configured_dims``."""
    W, MT = spec.workers, spec.max_tilings
    state, refuse, timer, expected, tilings_bad = regs.state, regs.refuse, regs.timer, regs.expected, regs.tilings_bad
    configured, configured_dims = regs.configured, regs.configured_dims
    check_clear, dim_bank, n_dims, word_count = run.check_clear, run.dim_bank, run.n_dims, run.word_count
    cfg_bad, overflow_any = rep.cfg_bad, rep.overflow_any

    @always_seq(clock.posedge, reset=reset)
    def commit():
        bus.cfg_begin.next = 0
        bus.cfg_commit.next = 0
        check_clear.next = 0
        if cfg.soft_reset:
            pass  # SOFT_RESET wins over every state's work
        elif state == t_state.IDLE:
            if cfg.start and not refuse and cfg.mode == MODE_CONFIG:
                expected.next = cfg.n_dims + 2 * cfg.n_tilings
                tilings_bad.next = cfg.n_tilings == 0 or cfg.n_tilings > W * MT
                bus.cfg_begin.next = 1
                check_clear.next = 1
        elif state == t_state.CFG:
            if s_tvalid and s_tlast and word_count + 1 == expected:
                timer.next = 0
        elif state == t_state.CFG_CHECK:
            timer.next = timer + 1
            if timer == _cc.LATENCY + 1 and not (cfg_bad or overflow_any or tilings_bad):
                bus.cfg_commit.next = 1
                dim_bank.next = not dim_bank
                configured.next = 1
                configured_dims.next = n_dims

    return commit
