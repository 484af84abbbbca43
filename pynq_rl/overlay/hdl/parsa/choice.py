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

Only ``best`` arrives in the choice cycle itself: the PRNG and EPSILON change only in a choice cycle (or by a SEED or
EPSILON write), at least a whole record apart, so the draw is computed ahead, in registers, every cycle (the
xorshift step, the multiply and the action select in one cycle were the core's slowest xc7 path, 4.06 ns)::

    draw       <- x                                  (x of the current PRNG state)
    rand_prod  <- draw[31:16] * N_ACTIONS            (the multiplier's output register)
    draw_lo_lt <- draw[15:0] < EPSILON
    eps_prod   <- EPSILON * EPSILON_DECAY            (the multiplier's output register)
    choice cycle: a = rand_prod >> 16 if draw_lo_lt else best; EPSILON' = eps_prod >> COEF_FRAC

so the choice uses the PRNG state of two cycles before and EPSILON of one cycle before, which are the values of the
choice cycle: between two choices they change only by a register write. A SEED or EPSILON write that lands within
those cycles of a running decision's choice is a race between the host and the core (as one in the choice cycle
itself already was): the draw uses the values from before the write.
"""

from myhdl import Signal, always, always_comb, block, intbv

from ...spec import PRNG_ZERO_SEED, xorshift32_step
from ..common.mux import mux_tree
from ..common.prng import xorshift32, xorshift32_next
from .params import ParsaWidths

__all__ = ["action_choice"]


@block
def action_choice(
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
    seed,
    seed_written,
    clock,
    reset,
    wd: ParsaWidths,
):
    """Epsilon-greedy choice, EPSILON decay, the PRNG and q of the registered action.

    explore      : Signal(bool), out -- x[15:0] < EPSILON (registered ahead, see above)
    chosen       : Signal(intbv[ACTION_BITS]), out -- the action to register (a select of registers and ``best``)
    eps_next     : Signal(32), out -- EPSILON after one decay (registered ahead)
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
    first_draw = xorshift32_step(PRNG_ZERO_SEED)
    prng_next = Signal(intbv(first_draw)[32:])
    draw = Signal(intbv(first_draw)[32:])
    prng_step = Signal(bool(0))
    rand_prod = Signal(intbv(0)[len(n_actions) + 16 :])  # the full product (docs/design.md, MyHDL lessons)
    eps_prod = Signal(intbv(0)[2 * cf + 2 :])

    # # #
    insts = [
        xorshift32(prng, seed, seed_written, prng_step, clock, reset),
        xorshift32_next(prng_next, prng),
        mux_tree(chosen_q, qs, chosen_r),
    ]

    @always(clock.posedge)
    def ahead():
        draw.next = prng_next
        rand_prod.next = draw[32:16] * n_actions
        explore.next = draw[16:] < eps
        eps_prod.next = eps[cf + 1 :] * decay

    @always_comb
    def chosen_action():
        prng_step.next = choosing and not terminal
        eps_next.next = eps_prod >> cf
        if explore:
            chosen.next = rand_prod[ab + 16 : 16]
        else:
            chosen.next = best

    insts += [ahead, chosen_action]
    return insts
