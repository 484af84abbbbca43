"""The Sarsa update arithmetic of the ParSa core: four registered steps from the key's previous step to the
increment every hit tile of the previous state gets (OPaL's update; the model is :mod:`pynq_rl.overlay.models.parsa`)::

    t_upd 0   g = GAMMA * q(s', a') + 2**(COEF_FRAC-1)                       (rounding constant folded in)
    t_upd 1   raw_delta = r + (g >> COEF_FRAC) - q(s, a)      (TERMINAL: r - q(s, a))
    t_upd 2   m = ALPHA * sat(raw_delta) + 2**(COEF_FRAC-1)                   (sat to VALUE_W: delta_clamp)
    t_upd 3   increment = m >> COEF_FRAC, upd_go: the workers add it to the rows of the previous (s, a)

Each product is held at full width before its shift (docs/design.md, MyHDL lessons: a shifted product expression
converts to Verilog that truncates it first).
"""

from myhdl import Signal, always_seq, block, intbv

from ...spec import ParsaSpec
from ..common.arith import saturate

__all__ = ["sarsa_update"]


@block
def sarsa_update(
    delta_flag, bus, active, t_upd, gamma, chosen_q, reward, prev_q, terminal, alpha, clock, reset, spec: ParsaSpec
):
    """Steps 0-3 of the Sarsa update pass (the FSM's UPD state, ``t_upd`` cycles in).

    delta_flag : Signal(bool), out     -- the TD error saturated (valid at ``t_upd`` 2)
    bus        : WorkerBus, out        -- ``increment`` and the ``upd_go`` pulse to the workers
    active     : Signal(bool), in      -- the FSM is in UPD (and no SOFT_RESET)
    t_upd      : Signal, in            -- cycles since UPD began
    gamma      : Signal(signed), in    -- GAMMA latched at START (UQ1.COEF_FRAC in a signed operand)
    chosen_q   : Signal(signed), in    -- q(s', a') of the action just chosen (registered when it was decided)
    reward     : Signal(signed), in    -- r of the key's previous action
    prev_q     : Signal(signed), in    -- q(s, a) the key kept from its previous step
    terminal   : Signal(bool), in      -- the record ended the key's episode: no bootstrap
    alpha      : Signal(signed), in    -- ALPHA latched at START
    clock      : Signal(bool), in
    reset      : ResetSignal, in
    spec       : ParsaSpec
    """
    vw, cf = spec.value_w, spec.coef.frac
    half = 1 << (cf - 1)
    vlo, vhi = -(1 << (vw - 1)), (1 << (vw - 1)) - 1
    g_prod = Signal(intbv(0, min=-(1 << (vw + cf + 3)), max=1 << (vw + cf + 3)))  # GAMMA * q(s', a') + half an LSB
    raw_delta = Signal(intbv(0, min=-(1 << (vw + 2)), max=1 << (vw + 2)))  # the TD error before saturation
    delta = Signal(intbv(0, min=vlo, max=vhi + 1))
    m_prod = Signal(intbv(0, min=-(1 << (vw + cf + 3)), max=1 << (vw + cf + 3)))  # ALPHA * delta + half an LSB

    # # #
    delta_clamp = saturate(delta, delta_flag, raw_delta, vlo, vhi)

    @always_seq(clock.posedge, reset=reset)
    def steps():
        bus.upd_go.next = 0
        if active:
            if t_upd == 0:
                g_prod.next = gamma * chosen_q + half
            if t_upd == 1:
                if terminal:
                    raw_delta.next = reward - prev_q
                else:
                    raw_delta.next = reward + (g_prod >> cf) - prev_q
            if t_upd == 2:
                m_prod.next = alpha * delta + half
            if t_upd == 3:
                bus.increment.next = m_prod >> cf
                bus.upd_go.next = 1

    return delta_clamp, steps
