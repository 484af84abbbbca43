"""The ParSa core's action choice: epsilon-greedy over q(s, .) from the on-chip xorshift32 PRNG, and EPSILON's decay.

Its own module because it is the one place the PRNG and EPSILON meet the reduce trees' ``best``; the FSM only says
when (``choosing``) and registers the outcome. In the choice cycle of a record that is not terminal the PRNG steps
once, and its new state x (:func:`~pynq_rl.overlay.hdl.common.prng.xorshift32_next`: the value it steps to, in the
same cycle) decides, as the model's ACT loop does (:mod:`pynq_rl.overlay.models.parsa`)::

    explore  = x[15:0] < EPSILON                      EPSILON: UQ1.COEF_FRAC, 1.0 = always explore
    a        = (x[31:16] * N_ACTIONS) >> 16  if explore, else best (the lowest-index argmax)
    EPSILON' = (EPSILON * EPSILON_DECAY) >> COEF_FRAC (truncated: decays to 0)

The FSM registers ``a`` (``chosen_r``) and EPSILON' on that edge; from the next cycle ``chosen_q`` = q(s, chosen_r)
goes to the record and the key memory. A terminal record chooses nothing: the PRNG and EPSILON keep their values.
"""
from myhdl import always_comb, block, intbv, Signal

from ...spec import PRNG_ZERO_SEED, xorshift32_step
from ..common.mux import mux_tree
from ..common.prng import xorshift32, xorshift32_next
from .params import ParsaWidths

__all__ = ["action_choice"]


@block
def action_choice(explore, chosen, eps_next, chosen_q, prng, best, qs, chosen_r, eps, decay, n_actions, choosing,
                  terminal, seed, seed_written, clock, reset, wd: ParsaWidths):
    """Epsilon-greedy choice, EPSILON decay, the PRNG and q of the registered action.

    explore      : Signal(bool), out -- x[15:0] < EPSILON (combinational)
    chosen       : Signal(intbv[ACTION_BITS]), out -- the action to register (combinational)
    eps_next     : Signal(32), out -- EPSILON after one decay (combinational)
    chosen_q     : Signal(signed VALUE_W), out -- q(s, chosen_r) (combinational)
    prng         : Signal(32), out -- the PRNG state (SEED read); steps in the choice cycle of a non-terminal record
    best         : Signal(intbv[ACTION_BITS]), in -- the argmax tree's action
    qs           : Python list of Signal(signed VALUE_W), in -- q(s, .)
    chosen_r     : Signal(intbv[ACTION_BITS]), in -- the action the FSM registered
    eps          : Signal(32), in -- the live EPSILON
    decay        : Signal(intbv[COEF_FRAC + 1]), in -- EPSILON_DECAY latched at START
    n_actions    : Signal, in -- N_ACTIONS latched at START
    choosing     : Signal(bool), in -- the FSM's choice cycle (RUN, ``t_choose``)
    terminal     : Signal(bool), in -- the record ends its key's episode: no choice
    seed         : Signal(32), in -- the SEED register
    seed_written : Signal(bool), in -- pulse: reload the PRNG from ``seed``
    clock        : Signal(bool), in
    reset        : ResetSignal, in
    wd           : ParsaWidths
    """
    ab, cf = wd.action_bits, wd.spec.coef.frac
    prng_next = Signal(intbv(xorshift32_step(PRNG_ZERO_SEED))[32:])
    prng_step = Signal(bool(0))
    rand_action = Signal(intbv(0)[ab + 16:])
    eps_prod = Signal(intbv(0)[2 * cf + 3:])

    # # #
    insts = [xorshift32(prng, seed, seed_written, prng_step, clock, reset), xorshift32_next(prng_next, prng),
             mux_tree(chosen_q, qs, chosen_r)]

    @always_comb
    def choice():
        explore.next = prng_next[16:] < eps
        rand_action.next = (prng_next[32:16] * n_actions) >> 16
        eps_prod.next = eps[cf + 1:] * decay
        prng_step.next = choosing and not terminal

    @always_comb
    def chosen_action():
        eps_next.next = eps_prod >> cf
        if explore:
            chosen.next = rand_action[ab:]
        else:
            chosen.next = best

    insts += [choice, chosen_action]
    return insts
