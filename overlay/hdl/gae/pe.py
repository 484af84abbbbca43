r"""GAE processing element (HEPPO) with k-step lookahead: one element per cycle, bit-exact with the model.

Elements arrive in reverse time order: first the bootstrap row (``in_bootstrap``: only ``value`` = V(s_T) counts),
then t = T-1, T-2, ..., 0. The arithmetic (``rnd`` = round half up, ``sat`` = saturate to DATA)::

    delta_t  = sat(r_t + [alive_t] rnd(GAMMA * V_{t+1}) - V_t)
    partial_t = delta_t + sum_{j=1}^{k-1} [chain_j] rnd(C**j * delta_{t+j})
    A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k})),   R_t = sat(A_t + V_t)

with ``chain_j = prod_{i<j} alive_{t+i}`` (a done cuts every later term). ``delta_{t+j}`` and ``A_{t+k}`` come from
delay lines cleared when the bootstrap row passes, so terms beyond T read 0.

Six register stages (:data:`PE_LATENCY`), laid out so that yosys puts every multiply, its rounding and one addend
into DSP48s and every mask into a flip-flop's synchronous reset (DESIGN.md section 5); the fabric keeps only the
adders and saturations that cannot go there::

    1  operands: r - V; V_{t+1} for the gamma product, reset to 0 when d_t (the mask [alive_t])
    2  rnd(GAMMA * V_{t+1}) + (r - V) mod 2**COEF_FRAC           two cascaded DSPs (:func:`_mul_round_add`)
    3  delta_t = that + the high bits of r - V (a short adder), saturated;
       C**j registered with reset [alive_t] (the tap masks)
    4  rnd(C * delta_{t+1}) + delta_t mod 2**COEF_FRAC           two DSPs (k >= 3: the other taps, in fabric)
    5  partial_t = that + the high bits of delta_t; C**k registered with reset [not chain_k] (the tail mask)
    6  A_t = sat(rnd(C**k * A_{t+k}) + partial_t mod 2**COEF_FRAC  two DSPs
                 + the high bits of partial_t),  R_t = sat(A_t + V_t)

A product with an addend is exact with one rounding: ``rnd(P) + x = (P + 2**(f-1) + x * 2**f) >> f`` for an
integer ``x``; the low ``f`` bits of ``x`` ride on the low DSP's C port, where they cannot overflow its 48 bits
(the high bits cannot: at f = 23 a 32-bit ``x * 2**f`` needs 55), so each such sum leaves a 10-13 bit adder.

Stages 1-5 are free running (a bubble passes as an invalid slot); the delay lines and A shift only on valid data.
The A feedback loop is A -> ``adv_hist`` (k >= 2: the k - 1 registers of A_{t+2} .. A_{t+k}, shifted when an
element leaves stage 5) -> tail DSPs -> adder -> saturation -> A, so it spans k cycles (the point of the
lookahead, HEPPO eq. 10/11) and holds no register inside the DSPs (the yosys DSP-feedback bug, DESIGN.md
section 5); for k = 1 it is one cycle.

Formats: data signed DATA (Q15.16), coefficients unsigned COEF (UQ1.23); see :mod:`pynq_rl.overlay.models.gae`,
which this block must match bit for bit.
"""
from myhdl import always, always_comb, block, ConcatSignal, intbv, Signal

from ...spec import GaeSpec
from ..common.arith import add2, and2, assign, delay_line, mul_round, saturate

__all__ = ["gae_pe", "coef_powers", "PE_LATENCY"]

#: Cycles from a valid input to its valid output.
PE_LATENCY = 6

#: The data operand of a product is split here: an unsigned low part for the DSP48's 18-bit port, and the low
#: DSP's result enters the high one through the cascade shifted right by this many bits (PCIN >> 17).
_SPLIT_BIT = 17


def _data(spec: GaeSpec, extra_bits: int = 0) -> Signal:
    return Signal(intbv(0, min=spec.data.min_code << extra_bits, max=(spec.data.max_code + 1) << extra_bits))


def _ranged(lo: int, hi: int) -> Signal:
    """A Signal holding [lo, hi] (declared signed when lo < 0)."""
    return Signal(intbv(0, min=lo, max=hi + 1))


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


def _product_range(a, b):
    corners = [x * y for x in (a.min, a.max - 1) for y in (b.min, b.max - 1)]
    return min(corners), max(corners)


def rounded_product_range(a, b, shift: int, addend_bits: int = 0) -> tuple[int, int]:
    """[min, max] of ``rnd(a * b / 2**shift) + x`` for Signals ``a``, ``b`` and ``0 <= x < 2**addend_bits``."""
    p_min, p_max = _product_range(a, b)
    half = 1 << (shift - 1)
    return (p_min + half) >> shift, ((p_max + half) >> shift) + (1 << addend_bits) - 1


@block
def _mul_round_add(product_rounded, a, b, addend, shift: int):
    """``product_rounded = rnd(a * b / 2**shift) + addend`` (combinational, exact: one rounding).

    When ``a`` is wider than 18 bits and ``shift`` > 17, ``a`` is split at bit 17 and the sum is written the way
    yosys maps onto two cascaded DSP48s with no fabric (DESIGN.md section 5)::

        p_lo = a_lo * b + (addend << shift | 2**(shift-1))      -- low DSP: the post-adder takes C
        p_hi = a_hi * b + (p_lo >> 17)                          -- high DSP: PCIN >> 17
        product_rounded = p_hi >> (shift - 17)

    which equals ``(a * b + 2**(shift-1) + addend * 2**shift) >> shift`` (nested floor divisions by powers of two).
    ``addend`` (unsigned, at most ``shift`` bits) fits the 48-bit C port with the product: it is how one adder
    operand's low bits ride along for free. Otherwise the same sum is written plainly.

    product_rounded : Signal(intbv), out
    a               : Signal(intbv), in -- signed data
    b               : Signal(intbv), in -- unsigned coefficient (fits a signed 25-bit DSP port)
    addend          : Signal(intbv[<= shift]) or None, in
    shift           : int >= 1
    """
    half = 1 << (shift - 1)
    addend_bits = len(addend) if addend is not None else 0
    if addend_bits > shift:
        raise ValueError(f"_mul_round_add: the addend must fit {shift} bits, not {addend_bits}")
    c_max = ((1 << addend_bits) - 1 << shift) | half
    insts = []

    if addend is None:
        c_lo = half                                       # a constant in the sums below
    else:
        c_lo = Signal(intbv(0, min=0, max=c_max + 1))

        @always_comb
        def constant():
            c_lo.next = (addend << shift) | half

        insts.append(constant)

    if len(a) > 18 and shift > _SPLIT_BIT:
        width = len(a)
        a_lo = Signal(intbv(0)[_SPLIT_BIT:])
        a_hi = Signal(intbv(0, min=-(1 << (width - _SPLIT_BIT - 1)), max=1 << (width - _SPLIT_BIT - 1)))
        lo_min, lo_max = _product_range(a_lo, b)
        hi_min, hi_max = _product_range(a_hi, b)
        # declared signed (min < 0) so the sums below stay signed Verilog expressions: one unsigned operand would
        # make them unsigned and zero-extend the negative high part
        p_lo = _ranged(min(lo_min, -1), lo_max + c_max)
        p_hi = _ranged(hi_min + (min(lo_min, 0) >> _SPLIT_BIT), hi_max + ((lo_max + c_max) >> _SPLIT_BIT))
        down = shift - _SPLIT_BIT

        @always_comb
        def split():
            a_lo.next = a[_SPLIT_BIT:]
            a_hi.next = a[width:_SPLIT_BIT].signed()

        @always_comb
        def low():
            p_lo.next = a_lo * b + c_lo

        @always_comb
        def high():
            p_hi.next = a_hi * b + (p_lo >> _SPLIT_BIT)

        @always_comb
        def round_shift():
            product_rounded.next = p_hi >> down

        insts += [split, low, high, round_shift]
    else:
        p_min, p_max = _product_range(a, b)
        full = _ranged(min(p_min, -1), p_max + c_max)
        addend_term = c_lo
        if addend is not None:
            # a signed copy: with an unsigned operand, Verilog would evaluate the signed product unsigned
            addend_term = _ranged(-1, c_max)
            insts.append(assign(addend_term, c_lo))

        @always_comb
        def multiply():
            full.next = a * b + addend_term

        @always_comb
        def round_shift():
            product_rounded.next = full >> shift

        insts += [multiply, round_shift]
    return insts


@block
def _add_high(y, x, top, shift: int):
    """``y = x + top * 2**shift`` (combinational): the low ``shift`` bits of ``x`` pass, only the rest is added.

    y   : Signal(intbv), out -- wide enough for the sum
    x   : Signal(intbv), in  -- signed
    top : Signal(intbv), in  -- signed
    """
    width = len(x)
    x_top = _ranged(x.min >> shift, (x.max - 1) >> shift)
    total = _ranged(x_top.min + top.min, x_top.max - 1 + top.max - 1)
    x_low = Signal(intbv(0)[shift:])
    joined = ConcatSignal(total, x_low)
    size = len(joined)
    if len(y) < size:
        raise ValueError(f"_add_high: y has {len(y)} bits, the sum needs {size}")

    @always_comb
    def parts():
        x_top.next = x[width:shift].signed()
        x_low.next = x[shift:]

    @always_comb
    def add_top():
        total.next = x_top + top

    @always_comb
    def join():
        y.next = joined[size:].signed()

    return parts, add_top, join


@block
def _register(q, d, clock):
    """``q <= d`` every cycle (a free-running pipeline register)."""

    @always(clock.posedge)
    def seq():
        q.next = d

    return seq


@block
def _masked_register(q, d, kill, clock):
    """``q <= 0 if kill else d`` every cycle: the mask is the flip-flops' synchronous reset (no LUT)."""

    @always(clock.posedge)
    def seq():
        if kill:
            q.next = 0
        else:
            q.next = d

    return seq


@block
def gae_pe(adv, ret, out_valid, saturated,
           reward, value, done, in_valid, in_bootstrap,
           gamma, powers, clock, spec: GaeSpec):
    """One GAE processing element.

    adv, ret     : Signal(DATA), out  -- A_t and R_t, valid with ``out_valid``
    out_valid    : Signal(bool), out
    saturated    : Signal(bool), out  -- a delta, A or R of the element leaving stage 6 saturated (or earlier)
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
    width = spec.data.width
    lo, hi = spec.data.min_code, spec.data.max_code
    insts = []

    # stage 1: operands ------------------------------------------------------------------------------------------
    v_next = _data(spec)                                       # V of the last valid input: V_{t+1}
    gv_operand = _data(spec)                                   # V_{t+1}, or 0 when d_t
    rv1 = _ranged(lo - hi, hi - lo)                            # r_t - V_t
    v1 = _data(spec)
    dead1, valid1, clear1 = [Signal(bool(0)) for _ in range(3)]

    @always(clock.posedge)
    def stage1():
        valid1.next = in_valid and not in_bootstrap
        clear1.next = in_valid and in_bootstrap
        rv1.next = reward - value
        v1.next = value
        dead1.next = done
        if done:
            gv_operand.next = 0
        else:
            gv_operand.next = v_next
        if in_valid:
            v_next.next = value

    insts.append(stage1)

    # stage 2: rnd(GAMMA * V_{t+1}) + (r - v) mod 2**cf in the DSPs -----------------------------------------------
    rv_low = Signal(intbv(0)[cf:])
    rv_top = _ranged(rv1.min >> cf, (rv1.max - 1) >> cf)

    @always_comb
    def rv_split():
        rv_low.next = rv1[cf:]
        rv_top.next = rv1[len(rv1):cf].signed()

    gv_sum = _ranged(*rounded_product_range(gv_operand, gamma, cf, cf))
    gv_mul = _mul_round_add(gv_sum, gv_operand, gamma, rv_low, cf)
    gv_mul.name = "gamma_v"
    gv2 = _ranged(gv_sum.min, gv_sum.max - 1)
    rv_top2 = _ranged(rv_top.min, rv_top.max - 1)
    v2 = _data(spec)
    dead2, valid2, clear2 = [Signal(bool(0)) for _ in range(3)]

    @always(clock.posedge)
    def stage2():
        gv2.next = gv_sum
        rv_top2.next = rv_top
        valid2.next = valid1
        clear2.next = clear1
        if clear1:  # the bootstrap row only loads v_next (V_T, stage 1): its own V and done pass on as 0
            v2.next = 0
            dead2.next = 0
        else:
            v2.next = v1
            dead2.next = dead1

    insts += [rv_split, gv_mul, stage2]

    # stage 3: delta = sat(that + high bits of r - v); masked lookahead coefficients -------------------------------
    raw_delta = _data(spec, 3)
    delta_c, delta_sat = _data(spec), Signal(bool(0))
    insts += [_add_high(raw_delta, gv2, rv_top2, cf), saturate(delta_c, delta_sat, raw_delta, lo, hi)]
    delta3, v3 = _data(spec), _data(spec)
    dead3, valid3, clear3, sat3 = [Signal(bool(0)) for _ in range(4)]

    @always(clock.posedge)
    def stage3():
        delta3.next = delta_c
        valid3.next = valid2
        clear3.next = clear2
        if clear2:
            v3.next = 0
            sat3.next = 0
            dead3.next = 0
        else:
            v3.next = v2
            sat3.next = delta_sat
            dead3.next = dead2

    insts.append(stage3)
    coefs = [None]                                             # C**j, 0 when d_t (chain_1 of every tap)
    for j in range(1, k):
        coef = Signal(intbv(0, min=0, max=(1 << cf) + 1))
        inst = _masked_register(coef, powers[j], dead2, clock)
        inst.name = f"coef{j}"
        insts.append(inst)
        coefs.append(coef)

    # stage 4: lookahead taps ------------------------------------------------------------------------------------
    delta_hist = [_data(spec) for _ in range(k - 1)]          # delta_{t+1} .. delta_{t+k-1}
    alive_hist = [Signal(bool(0)) for _ in range(k - 1)]      # alive_{t+1} .. alive_{t+k-1}
    alive3 = Signal(bool(0))

    @always_comb
    def alive_of_stage3():
        alive3.next = not dead3

    insts.append(alive_of_stage3)
    if k > 1:
        dl = delay_line(delta_hist, delta3, valid3, clear3, clock)
        dl.name = "delta_hist"
        al = delay_line(alive_hist, alive3, valid3, clear3, clock)
        al.name = "alive_hist"
        insts += [dl, al]
    chains = [alive3]                                          # chain_1 = alive_t
    for j in range(2, k + 1):
        chain = Signal(bool(0))
        insts.append(and2(chain, chains[-1], alive_hist[j - 2]))
        chains.append(chain)
    cut4 = Signal(bool(0))                                     # not chain_k: the tail term is 0
    v4, sat4, valid4, clear4 = _data(spec), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    tail_chain = chains[k - 1]

    @always(clock.posedge)
    def stage4():
        cut4.next = not tail_chain
        valid4.next = valid3
        clear4.next = clear3
        if clear3:
            v4.next = 0
            sat4.next = 0
        else:
            v4.next = v3
            sat4.next = sat3

    insts.append(stage4)
    if k > 1:
        delta_low = Signal(intbv(0)[cf:])
        delta_top = _ranged(lo >> cf, hi >> cf)

        @always_comb
        def delta_split():
            delta_low.next = delta3[cf:]
            delta_top.next = delta3[width:cf].signed()

        tap_sum = _ranged(*rounded_product_range(delta_hist[0], coefs[1], cf, cf))
        tap = _mul_round_add(tap_sum, delta_hist[0], coefs[1], delta_low, cf)
        tap.name = "tap1"
        tap4 = _ranged(tap_sum.min, tap_sum.max - 1)
        delta_top4 = _ranged(delta_top.min, delta_top.max - 1)
        insts += [delta_split, tap, _register(tap4, tap_sum, clock), _register(delta_top4, delta_top, clock)]
        terms4 = []
        for j in range(2, k):                                  # k >= 3: the other taps, masked by chain_j
            rounded = _data(spec)
            mul = _mul_round_add(rounded, delta_hist[j - 1], coefs[j], None, cf)
            mul.name = f"tap{j}"
            term = _data(spec)
            insts += [mul, _mask(term, rounded, chains[j - 1])]
            term4 = _data(spec)
            insts.append(_register(term4, term, clock))
            terms4.append(term4)
    else:
        delta4 = _data(spec)
        insts.append(_register(delta4, delta3, clock))

    # stage 5: partial_t -------------------------------------------------------------------------------------------
    part5, v5 = _data(spec, k + 1), _data(spec)
    sat5, valid5, clear5 = [Signal(bool(0)) for _ in range(3)]
    tail_coef = Signal(intbv(0, min=0, max=(1 << cf) + 1))    # C**k, or 0 when chain_k is 0 (the mask)
    tail_coef_inst = _masked_register(tail_coef, powers[k], cut4, clock)
    tail_coef_inst.name = "tail_coef"
    insts.append(tail_coef_inst)
    if k > 1:
        part = _data(spec, 2)
        insts.append(_add_high(part, tap4, delta_top4, cf))
        for j, term4 in enumerate(terms4):
            acc = _data(spec, j + 3)
            insts.append(add2(acc, part, term4))
            part = acc
    else:
        part = delta4

    @always(clock.posedge)
    def stage5():
        part5.next = part
        valid5.next = valid4
        clear5.next = clear4
        if clear4:
            v5.next = 0
            sat5.next = 0
        else:
            v5.next = v4
            sat5.next = sat4

    insts.append(stage5)

    # stage 6: A = sat(partial + [chain_k] rnd(C**k * A_{t+k})), R = sat(A + V) -------------------------------------
    # The A loop: A_{t+k} from a register (k >= 2) or A itself (k = 1), through the two tail DSPs, which also add
    # partial_t mod 2**cf, then the high bits of partial_t, saturation, A. The mask is the coefficient's reset.
    # adv3 and adv_hist keep their names: the synthesis report finds the loop registers by them (DESIGN.md s. 5).
    adv3, ret6 = _data(spec), _data(spec)
    valid6, sat6 = Signal(bool(0)), Signal(bool(0))
    adv_hist = [_data(spec) for _ in range(k - 1)]            # A_{t+2} .. A_{t+k} of the element in stage 5
    if adv_hist:
        ah = delay_line(adv_hist, adv3, valid5, clear5, clock)
        ah.name = "adv_hist"
        insts.append(ah)
    source = adv_hist[-1] if adv_hist else adv3               # A_{t+k}
    part_low = Signal(intbv(0)[cf:])
    part_top = _ranged(part5.min >> cf, (part5.max - 1) >> cf)

    @always_comb
    def part_split():
        part_low.next = part5[cf:]
        part_top.next = part5[len(part5):cf].signed()

    tail_sum = _ranged(*rounded_product_range(source, tail_coef, cf, cf))
    tail_mul = _mul_round_add(tail_sum, source, tail_coef, part_low, cf)
    tail_mul.name = "tail_mul"
    raw_adv = _data(spec, k + 2)
    adv_c, adv_sat = _data(spec), Signal(bool(0))
    raw_ret = _data(spec, 1)
    ret_c, ret_sat = _data(spec), Signal(bool(0))
    insts += [part_split, tail_mul, _add_high(raw_adv, tail_sum, part_top, cf),
              saturate(adv_c, adv_sat, raw_adv, lo, hi),
              add2(raw_ret, adv_c, v5), saturate(ret_c, ret_sat, raw_ret, lo, hi)]

    @always(clock.posedge)
    def stage6():
        valid6.next = valid5
        ret6.next = ret_c
        sat6.next = sat5 or adv_sat or ret_sat
        if clear5:
            adv3.next = 0
        elif valid5:
            adv3.next = adv_c

    @always_comb
    def outputs():
        adv.next = adv3
        ret.next = ret6
        out_valid.next = valid6
        saturated.next = sat6 and valid6

    insts += [stage6, outputs]
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
