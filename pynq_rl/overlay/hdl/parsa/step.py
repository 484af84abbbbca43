"""One state record's step in the ParSa controller (:mod:`.control`): when it runs (:func:`act_timing`) and what it
takes from and leaves for its key (:func:`key_step`). Both read the FSM's state (:mod:`.fsm`) and act in the
cycles the FSM does::

    RECV, last word       the record is accepted (key < KEYS): pos_go, key_base, t_run = 0
    RUN cycle 0           the key's previous step: terminal, prev_q, a_prev, reward (the header's or the pending one)
    RUN t_go              act_go: the workers start
    RUN t_choose          the choice: chosen_r, explored_r, EPSILON decays
    RUN t_last / HOLD     decided (when the emitter takes the record): chosen_q_r, the key's valid bit, t_upd = 0
                          when the Sarsa update runs
"""

from myhdl import always_seq, block

from . import config_check as _cc
from .fsm import ACT_DEPTH, ACT_GO_AFTER_DIMS, MODE_CLEAR, MODE_CONFIG, MODE_DUMP, MODE_LOAD, ControlRegisters, t_state
from .params import ParsaReport, ParsaRun, ParsaWidths, WorkerBus

__all__ = ["act_timing", "key_step"]


@block
def act_timing(
    bus: WorkerBus, regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, s_tvalid, s_tlast, cfg, clock, reset, spec
):
    """When a state record's step runs: ``run.pos_go`` and ``bus.act_go`` (pulses), ``bus.key_base``, ``busiest``,
    ``t_last``, ``t_choose``, ``t_go`` (latched at START), ``t_run`` and ``run.t_upd`` (cycles into RUN and UPD),
    ``run.batch_last``, ``any_record``, ``any_accepted``, and the emitter's held final word (``held``,
    ``run.em_release`` / ``em_release_last``)."""
    MT, K, KB = spec.max_tilings, spec.keys, ParsaWidths(spec).key_bits
    state, refuse, rec_words, online = regs.state, regs.refuse, regs.rec_words, regs.online
    busiest, t_run, t_last, t_choose, t_go = regs.busiest, regs.t_run, regs.t_last, regs.t_choose, regs.t_go
    held, any_record, any_accepted = regs.held, regs.any_record, regs.any_accepted
    has_reward, prev_valid = regs.has_reward, regs.prev_valid
    pos_go, em_release, em_release_last = run.pos_go, run.em_release, run.em_release_last
    word_count, n_dims, t_upd, batch_last = run.word_count, run.n_dims, run.t_upd, run.batch_last
    busiest_now, em_idle, hdr_key = rep.busiest_now, rep.em_idle, rep.hdr_key

    @always_seq(clock.posedge, reset=reset)
    def timing():
        pos_go.next = 0
        bus.act_go.next = 0
        em_release.next = 0
        busiest.next = busiest_now
        if cfg.soft_reset:
            held.next = 0
        elif state == t_state.IDLE:
            if cfg.start and not refuse:
                if not (
                    cfg.mode == MODE_CONFIG or cfg.mode == MODE_LOAD or cfg.mode == MODE_DUMP or cfg.mode == MODE_CLEAR
                ):  # ACT
                    any_record.next = 0
                    any_accepted.next = 0
                    held.next = 0
                    t_last.next = cfg.n_dims[len(n_dims) :] + busiest + (ACT_DEPTH - 1)
                    t_choose.next = cfg.n_dims[len(n_dims) :] + busiest + (ACT_DEPTH - 2)
                    t_go.next = cfg.n_dims[len(n_dims) :] + (ACT_GO_AFTER_DIMS - 1)
        elif state == t_state.RECV:
            if s_tvalid:
                if word_count + 1 == rec_words:
                    any_record.next = 1
                    batch_last.next = s_tlast
                    if held:
                        em_release.next = 1
                        em_release_last.next = 0
                        held.next = 0
                    if hdr_key < K:
                        any_accepted.next = 1
                        pos_go.next = 1
                        t_run.next = 0
                        bus.key_base.next = hdr_key[KB:] * MT
                elif s_tlast:
                    if held:
                        em_release.next = 1
                        em_release_last.next = 1
                        held.next = 0
        elif state == t_state.RUN or state == t_state.HOLD:
            if state == t_state.RUN:
                t_run.next = t_run + 1
            if state == t_state.RUN and t_run == t_go:
                bus.act_go.next = 1
            if state == t_state.HOLD or t_run == t_last:
                if em_idle:
                    held.next = not batch_last
                    if online and has_reward and prev_valid:
                        t_upd.next = 0
        elif state == t_state.UPD:
            t_upd.next = t_upd + 1
        elif state == t_state.REJECT:
            if em_idle:
                held.next = not batch_last

    return timing


@block
def key_step(bus: WorkerBus, regs: ControlRegisters, run: ParsaRun, rep: ParsaReport, cfg, clock, reset, spec):
    """What a state record's step takes from its key and leaves for it: ``run.terminal``, ``run.prev_q``,
    ``run.reward``, ``bus.a_prev``, ``has_reward``, ``prev_valid`` (RUN cycle 0); ``run.chosen_r``,
    ``run.explored_r``, ``run.eps`` (the choice cycle; EPSILON writes); ``run.chosen_q_r`` (decided); the
    ``key_valid`` and ``pend_valid`` bits (cleared by CLEAR and an accepted CONFIG)."""
    KB = ParsaWidths(spec).key_bits
    state, refuse, timer, tilings_bad = regs.state, regs.refuse, regs.timer, regs.tilings_bad
    t_run, t_last, t_choose = regs.t_run, regs.t_last, regs.t_choose
    has_reward, prev_valid, key_valid, pend_valid = regs.has_reward, regs.prev_valid, regs.key_valid, regs.pend_valid
    terminal, prev_q, reward, eps = run.terminal, run.prev_q, run.reward, run.eps
    chosen_r, explored_r, chosen_q_r = run.chosen_r, run.explored_r, run.chosen_q_r
    cfg_bad, overflow_any, em_idle, hdr_flags = rep.cfg_bad, rep.overflow_any, rep.em_idle, rep.hdr_flags
    hdr_key_lo, prev_action, prev_q_mem, reward_sat = rep.hdr_key_lo, rep.prev_action, rep.prev_q, rep.reward_sat
    pend_we, pend_q_value, explore = rep.pend_we, rep.pend_reward, rep.explore
    chosen, eps_next, chosen_q = rep.chosen, rep.eps_next, rep.chosen_q

    @always_seq(clock.posedge, reset=reset)
    def step():
        if pend_we:
            pend_valid.next[cfg.reward_key[KB:]] = 1
        if cfg.epsilon_written:
            eps.next = cfg.epsilon
        if cfg.soft_reset:
            pass  # SOFT_RESET wins over every state's work
        elif state == t_state.IDLE:
            if cfg.start and not refuse and cfg.mode == MODE_CLEAR:
                key_valid.next = 0
                pend_valid.next = 0
        elif state == t_state.CFG_CHECK:
            if timer == _cc.LATENCY + 1 and not (cfg_bad or overflow_any or tilings_bad):
                key_valid.next = 0
                pend_valid.next = 0
        elif state == t_state.RUN or state == t_state.HOLD:
            if state == t_state.RUN and t_run == 0:
                terminal.next = hdr_flags[1]
                prev_valid.next = key_valid[hdr_key_lo]
                prev_q.next = prev_q_mem
                bus.a_prev.next = prev_action
                if hdr_flags[0]:
                    has_reward.next = 1
                    reward.next = reward_sat
                elif pend_valid[hdr_key_lo]:
                    has_reward.next = 1
                    reward.next = pend_q_value
                else:
                    has_reward.next = 0
                    reward.next = 0
                pend_valid.next[hdr_key_lo] = 0
            if state == t_state.RUN and t_run == t_choose:
                if terminal:
                    explored_r.next = 0
                    chosen_r.next = 0
                else:
                    explored_r.next = explore
                    chosen_r.next = chosen
                    eps.next = eps_next
            if state == t_state.HOLD or t_run == t_last:
                if em_idle:
                    chosen_q_r.next = chosen_q
                    if terminal:
                        key_valid.next[hdr_key_lo] = 0
                    else:
                        key_valid.next[hdr_key_lo] = 1

    return step
