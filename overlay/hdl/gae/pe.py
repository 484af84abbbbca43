r"""GAE processing element (HEPPO) with k-step lookahead: one element per cycle, bit-exact with the model.

Elements arrive in reverse time order: first the bootstrap row (``in_bootstrap``: only ``value`` = V(s_T) counts),
then t = T-1, T-2, ..., 0. Three valid-gated stages (bubbles are allowed; delay lines shift only on valid data)::

    stage 1  delta_t  = sat(r_t + [alive_t] rnd(GAMMA * V_{t+1}) - V_t)
    stage 2  partial_t = delta_t + sum_{j=1}^{k-1} [chain_j] rnd(C**j * delta_{t+j})
    stage 3  A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k})),   R_t = sat(A_t + V_t)

with ``chain_j = prod_{i<j} alive_{t+i}`` (a done cuts every later term). ``delta_{t+j}`` and ``A_{t+k}`` come from
delay lines cleared when the bootstrap row passes, so terms beyond T read 0. For k >= 2 the tail product
``rnd(C**k * A_{t+k})`` is formed one element early into a register: the A feedback loop then holds a multiply
stage and an add/saturate stage (the point of the lookahead: HEPPO eq. 10/11); for k = 1 the loop is one cycle.

Formats: data signed DATA (Q15.16), coefficients unsigned COEF (UQ1.23); see :mod:`pynq_rl.overlay.models.gae`,
which this block must match bit for bit.
"""
from myhdl import always, always_comb, block, intbv, Signal

from ...spec import GaeSpec
from ..common.arith import add2, and2, delay_line, dff_en, mul_round, saturate

__all__ = ["gae_pe", "coef_powers", "PE_LATENCY"]

#: Cycles from a valid input to its valid output.
PE_LATENCY = 3


def _data(spec: GaeSpec, extra_bits: int = 0) -> Signal:
    return Signal(intbv(0, min=spec.data.min_code << extra_bits, max=(spec.data.max_code + 1) << extra_bits))


def _coef(spec: GaeSpec) -> Signal:
    return Signal(intbv(0, min=0, max=(1 << spec.coef.frac) + 1))


@block
def coef_powers(powers, gamma_lambda, clock, spec: GaeSpec):
    """Registered chain ``powers[j] = rnd(powers[j-1] * C)``, ``powers[1] = C`` (j = 1..k; ``powers[0]`` unused).

    Settles k - 1 cycles after GAMMA_LAMBDA changes; the register is written long before START.

    powers       : list of k + 1 Signal(UQ1.23), out
    gamma_lambda : Signal(UQ1.23), in
    """
    cf = spec.coef.frac
    insts = []
    power1 = powers[1]  # bound outside the generator: a list used inside one would become a Verilog memory

    @always_comb
    def first():
        power1.next = gamma_lambda

    insts.append(first)
    for j in range(2, len(powers)):
        rounded = Signal(intbv(0, min=0, max=(1 << cf) + 2))
        mul = mul_round(rounded, powers[j - 1], gamma_lambda, None, cf)
        mul.name = f"pow{j}_mul"
        insts.append(mul)
        insts.append(_register_coef(powers[j], rounded, clock))
    return insts


@block
def _register_coef(q, d, clock):
    @always(clock.posedge)
    def seq():
        q.next = d

    return seq


@block
def gae_pe(adv, ret, out_valid, saturated,
           reward, value, done, in_valid, in_bootstrap,
           gamma, powers, clock, spec: GaeSpec):
    """One GAE processing element.

    adv, ret     : Signal(DATA), out  -- A_t and R_t, valid with ``out_valid``
    out_valid    : Signal(bool), out
    saturated    : Signal(bool), out  -- a delta, A or R of the element leaving stage 3 saturated (or earlier)
    reward       : Signal(DATA), in   -- r_t (dequantized)
    value        : Signal(DATA), in   -- V_t, or V_T on the bootstrap row
    done         : Signal(bool), in   -- d_t
    in_valid     : Signal(bool), in
    in_bootstrap : Signal(bool), in   -- this input is the bootstrap row (with ``in_valid``)
    gamma        : Signal(UQ1.23), in
    powers       : list of k + 1 Signal(UQ1.23), in -- C**j from :func:`coef_powers`
    clock        : Signal(bool), in
    """
    k = spec.lookahead
    cf = spec.coef.frac
    lo, hi = spec.data.min_code, spec.data.max_code
    insts = []

    # stage 1: delta -----------------------------------------------------------------------------------------------
    v_next = _data(spec)
    gv = _data(spec, 1)
    alive_in = Signal(bool(0))
    raw_delta = _data(spec, 3)
    delta_c, delta_sat = _data(spec), Signal(bool(0))
    delta1, v1 = _data(spec), _data(spec)
    alive1, valid1, clear1, sat1 = [Signal(bool(0)) for _ in range(4)]

    @always_comb
    def alive_of_input():
        alive_in.next = not done

    gv_mul = mul_round(gv, v_next, gamma, alive_in, cf)
    gv_mul.name = "gamma_v"
    delta_clamp = saturate(delta_c, delta_sat, raw_delta, lo, hi)
    delta_clamp.name = "delta_sat"

    @always_comb
    def delta_sum():
        raw_delta.next = reward + gv - value

    @always(clock.posedge)
    def stage1():
        valid1.next = in_valid and not in_bootstrap
        clear1.next = in_valid and in_bootstrap
        if in_valid:
            v_next.next = value
            delta1.next = delta_c
            v1.next = value
            alive1.next = alive_in
            sat1.next = delta_sat and not in_bootstrap

    insts += [alive_of_input, gv_mul, delta_clamp, delta_sum, stage1]

    # stage 2: lookahead partial sum -----------------------------------------------------------------------------------
    delta_hist = [_data(spec) for _ in range(k - 1)]          # delta_{t+1} .. delta_{t+k-1}
    alive_hist = [Signal(bool(0)) for _ in range(k - 1)]     # alive_{t+1} .. alive_{t+k-1}
    if k > 1:
        dl = delay_line(delta_hist, delta1, valid1, clear1, clock)
        dl.name = "delta_hist"
        al = delay_line(alive_hist, alive1, valid1, clear1, clock)
        al.name = "alive_hist"
        insts += [dl, al]
    chains = [alive1]                                         # chain_1 = alive_t
    for j in range(2, k + 1):
        chain = Signal(bool(0))
        insts.append(and2(chain, chains[-1], alive_hist[j - 2]))
        chains.append(chain)
    partials = [delta1]
    for j in range(1, k):
        term = _data(spec)
        tap = mul_round(term, delta_hist[j - 1], powers[j], chains[j - 1], cf)
        tap.name = f"tap{j}"
        acc = _data(spec, j + 1)
        insts += [tap, add2(acc, partials[-1], term)]
        partials.append(acc)
    part2, v2 = _data(spec, k + 1), _data(spec)
    tail2, valid2, clear2, sat2 = [Signal(bool(0)) for _ in range(4)]
    partial = partials[-1]
    tail_chain = chains[k - 1]

    @always(clock.posedge)
    def stage2():
        valid2.next = valid1
        clear2.next = clear1
        if valid1:
            part2.next = partial
            v2.next = v1
            tail2.next = tail_chain
            sat2.next = sat1

    insts.append(stage2)

    # stage 3: A = sat(partial + rnd(C**k * A_{t+k})), R = sat(A + V) ----------------------------------------------
    adv3, ret3 = _data(spec), _data(spec)
    valid3, sat3 = Signal(bool(0)), Signal(bool(0))
    tail_rounded = _data(spec)
    if k == 1:
        tail_mul = mul_round(tail_rounded, adv3, powers[1], tail2, cf)
        tail_mul.name = "tail_mul"
        insts.append(tail_mul)
        tail = tail_rounded
    else:
        adv_hist = [_data(spec) for _ in range(k - 2)]       # A_{t+2} .. A_{t+k-1} (of the element in stage 2)
        if adv_hist:
            ah = delay_line(adv_hist, adv3, valid2, clear2, clock)
            ah.name = "adv_hist"
            insts.append(ah)
        source = adv_hist[-1] if adv_hist else adv3          # A_{t+k} of the element entering stage 2 next
        tail_mul = mul_round(tail_rounded, source, powers[k], None, cf)
        tail_mul.name = "tail_mul"
        tail_reg = _data(spec)
        insts += [tail_mul, dff_en(tail_reg, tail_rounded, valid2, clear2, clock)]
        tail = _data(spec)
        insts.append(_mask(tail, tail_reg, tail2))
    raw_adv = _data(spec, k + 2)
    adv_c, adv_sat = _data(spec), Signal(bool(0))
    raw_ret = _data(spec, 1)
    ret_c, ret_sat = _data(spec), Signal(bool(0))
    insts += [add2(raw_adv, part2, tail), saturate(adv_c, adv_sat, raw_adv, lo, hi),
              add2(raw_ret, adv_c, v2), saturate(ret_c, ret_sat, raw_ret, lo, hi)]

    @always(clock.posedge)
    def stage3():
        valid3.next = valid2
        if clear2:
            adv3.next = 0
        elif valid2:
            adv3.next = adv_c
            ret3.next = ret_c
            sat3.next = sat2 or adv_sat or ret_sat

    @always_comb
    def outputs():
        adv.next = adv3
        ret.next = ret3
        out_valid.next = valid3
        saturated.next = sat3 and valid3

    insts += [stage3, outputs]
    return insts


@block
def _mask(y, a, enable):
    @always_comb
    def logic():
        if enable:
            y.next = a
        else:
            y.next = 0

    return logic
