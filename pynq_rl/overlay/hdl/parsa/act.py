"""The ParSa core's ACT and UPDATE datapath after the workers: the reductions of the workers' outputs, q(s, .) and
its argmax (:func:`~.reduce.q_reduce`), the action choice (:func:`~.choice.action_choice`), the key memories
(:func:`~.keys.key_memory`) and the Sarsa update arithmetic (:func:`~.update.sarsa_update`).

The controller (:mod:`.control`) says when each of them acts (``phase``) and holds their operands (``run``); what
they compute goes to the controller (``rep``), the emitter (``qs``, ``in_use``) and the workers (``bus``).
"""

from myhdl import Signal, block, intbv

from ...spec import ParsaSpec
from .choice import action_choice
from .keys import key_memory
from .params import ParsaPhase, ParsaReport, ParsaRun, ParsaWidths, WorkerBus
from .reduce import max_chain, or_chain, q_reduce
from .update import sarsa_update

__all__ = ["act_datapath"]


@block
def act_datapath(
    qs,
    in_use,
    bus: WorkerBus,
    rep: ParsaReport,
    accs,
    counts,
    overflows,
    upd_sats,
    phase: ParsaPhase,
    run: ParsaRun,
    s_tdata,
    cfg,
    clock,
    reset,
    spec: ParsaSpec,
):
    """Reduce, choice, key memories and the Sarsa update.

    qs        : Python list of Signal(signed VALUE_W), out -- q(s, .) (saturated sums of the workers' preferences)
    in_use    : Python list of Signal(bool), out -- a < N_ACTIONS
    bus       : WorkerBus, out -- ``increment`` and ``upd_go`` (the update pass)
    rep       : ParsaReport, out -- ``busiest_now``, ``overflow_any``, ``upd_sat_any``, ``q_any_sat``, the key
                memory's and the choice's outputs, ``delta_flag``
    accs      : WORKERS lists of MAX_ACTIONS Signal(signed), in -- each worker's preference accumulators
    counts    : Python list of Signal, in -- each worker's tilings
    overflows : Python list of Signal(bool), in -- each worker's descriptor overflow
    upd_sats  : Python list of Signal(bool), in -- each worker's update saturated
    phase     : ParsaPhase, in -- ``choosing``, ``key_ren``, ``deciding``, ``in_upd``
    run       : ParsaRun, in -- N_ACTIONS, EPSILON and its decay, ALPHA, GAMMA, the step's registers
    s_tdata   : Signal(64), in -- the key memories read the header word's key
    cfg       : ParsaConfig, in -- ``seed``, ``seed_written``, ``reward_key``, ``reward``, ``reward_written``
    clock     : Signal(bool), in
    reset     : ResetSignal, in
    spec      : ParsaSpec
    """
    wd = ParsaWidths(spec)
    best = Signal(intbv(0)[wd.action_bits :])
    chains = [
        max_chain(rep.busiest_now, counts),
        or_chain(rep.overflow_any, overflows),
        or_chain(rep.upd_sat_any, upd_sats),
    ]
    reduce = q_reduce(qs, in_use, best, rep.q_any_sat, accs, run.n_actions, clock, wd)
    reduce.name = "reduce"
    choice = action_choice(
        rep.explore,
        rep.chosen,
        rep.eps_next,
        rep.chosen_q,
        rep.prng,
        best,
        qs,
        run.chosen_r,
        run.eps,
        run.decay,
        run.n_actions,
        phase.choosing,
        run.terminal,
        cfg.seed,
        cfg.seed_written,
        clock,
        reset,
        wd,
    )
    choice.name = "choice"
    keys = key_memory(
        rep.hdr_key_lo,
        rep.prev_action,
        rep.prev_q,
        rep.pend_we,
        rep.pend_reward,
        rep.reward_sat,
        rep.reward_flag,
        rep.hdr_key,
        rep.hdr_reward,
        phase.key_ren,
        s_tdata,
        phase.deciding,
        rep.em_idle,
        run.terminal,
        run.chosen_r,
        rep.chosen_q,
        cfg,
        clock,
        wd,
    )
    keys.name = "keys"
    update = sarsa_update(
        rep.delta_flag,
        bus,
        phase.in_upd,
        run.t_upd,
        run.gamma,
        run.chosen_q_r,
        run.reward,
        run.prev_q,
        run.terminal,
        run.alpha,
        clock,
        reset,
        spec,
    )
    update.name = "sarsa_update"
    return chains + [reduce, choice, keys, update]
