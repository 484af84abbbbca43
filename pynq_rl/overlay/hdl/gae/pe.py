r"""GAE processing element (HEPPO) with k-step lookahead: one element per cycle, bit-exact with the model.

Elements arrive in reverse time order: first the bootstrap row (``in_bootstrap``: only ``value`` = V(s_T) counts),
then t = T-1, T-2, ..., 0. The arithmetic (``rnd`` = round half up, ``sat`` = saturate to DATA)::

    delta_t  = sat(r_t + [alive_t] rnd(GAMMA * V_{t+1}) - V_t)
    partial_t = delta_t + sum_{j=1}^{k-1} [chain_j] rnd(C**j * delta_{t+j})
    A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k})),   R_t = sat(A_t + V_t)

with ``chain_j = prod_{i<j} alive_{t+i}`` (a done cuts every later term). ``delta_{t+j}`` and ``A_{t+k}`` come from
delay lines cleared when the bootstrap row passes, so terms beyond T read 0. Nothing else clears them: a
continuation chunk of a long sequence (the core's CHUNKS) arrives with no bootstrap row, after any number of
bubbles, and the recursion goes on from the V_{t+1}, delta and A histories the previous chunk left.

Every product is ``rnd(a * b) + x`` for a 32-bit ``a``, a coefficient ``b`` and an integer addend ``x``, computed
by :func:`_mac` in the shape of two DSP48s with their pipeline registers (issue 15: no multiply without its M
register, no adder behind an unregistered product)::

    M   m_lo = a[16:0] * b,  m_hi = a[31:17] * b                       (the DSPs' M registers)
    P   p_hi = m_hi + (x * 2**(f-17) + 2**(f-18)),  lo = m_lo >> 17      (post-adder with C, P register)
    F   y = (p_hi + lo) >> (f - 17)                                      (one fabric adder, then saturation)

which equals ``(a * b + 2**(f-1) + x * 2**f) >> f`` exactly (nested floor divisions by powers of two; the low
17 bits of ``x * 2**f + 2**(f-1)`` are 0, so ``lo`` carries nothing else). On a fabric of 18 x 18 multipliers
(``GaeSpec.multiplier_port_bits = 18``: the ECP5 place-and-route build) ``b`` is split at bit 17 as well and the M
registers hold the four 18 x 18 products (:func:`_partial_products`), regrouped so the P stage is one adder deep as
well; the stages are the same. Ten register stages
(:data:`PE_LATENCY`)::

    1      operands: r - V; V_{t+1} for the gamma product, reset to 0 when d_t (the mask [alive_t])
    2-3    M, P of rnd(GAMMA * V_{t+1}) + (r - V)
    4      F: delta_t = sat(...); C**j registered with reset [not alive_t] (the tap masks)
    5-6    M, P of rnd(C * delta_{t+1}) + delta_t (k >= 3: the other taps without addend, masked by chain_j)
    7      F: partial_t; C**k registered with reset [not chain_k] (the tail mask)
    8      the A loop, first half: M of rnd(C**k * A_{t+k}) + partial_t, straight from the register ``adv_tail``
    9      the A loop, second half: A_t = sat(post-adder + fabric adder), no P register, into ``adv_tail``; the
           unclamped sum into ``adv3``
    10     R_t = sat(A_t + V_t), A_t copied beside it (outputs)

The A feedback loop (k >= 2) is ``adv_tail`` -> M registers -> adders and saturation -> ``adv_tail``: two register
stages, so k >= 2 closes it (the point of the lookahead, HEPPO eq. 10/11), with nothing but wires between a
register and a multiplier. Stages 1-7 are free running (a bubble passes as an invalid slot) and the A history
shifts only on valid data, so which A the element in stage 8 needs depends on whether the element ahead is still
in stage 9 (then A_{t+k} is one register nearer). ``adv_tail`` resolves that a cycle early, as the element enters
stage 8 (``ahead7``; the bootstrap row counts as an element: it writes A_T = 0)::

    adv_tail <= 0                                  on the bootstrap row in stage 9 (clear8, priority)
             <= A of the element in stage 9        k = 2 (the clamp's output), element in stage 9
                or the last A written              k = 2, none in stage 9 (see below)
             <= valid8 ? adv_hist[k-4] : adv_hist[k-3]    k >= 3 (adv_hist[-1] being the clamped adv3)
             holds                                 no element entering stage 8

For k = 2 the two cases are one wire: the tail's M registers load only with an element (or zeros with the
bootstrap row) and hold otherwise, so with stage 9 empty its sum recomputes the last element's A exactly, and
``adv_tail`` takes the clamp's output in every case. ``adv3`` keeps the unclamped sum of the last element written
(clamped where read: stage 10, the history), so each of the two loop flip-flops sits beside its own driver (the
carry chain, the clamp's LUT4) on the ECP5. For k = 1 the loop is one cycle: stage 8 only registers, stage 9
multiplies ``adv3`` (clamped) combinationally. The loop registers are ``adv3``, ``adv_hist`` and ``adv_tail``
(kept by name in synthesis: the yosys DSP-feedback bug, DESIGN.md section 5); the M registers inside the loop are
the DSPs'.

Formats: data signed DATA (Q15.16), coefficients unsigned COEF (UQ1.23); see :mod:`pynq_rl.overlay.models.gae`,
which this block must match bit for bit.
"""

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv

from ...spec import GaeSpec
from ..common.arith import add2, and2, assign, delay_line, dff_en, mux2, or2, saturate

__all__ = ["gae_pe", "coef_powers", "PE_LATENCY"]

#: Cycles from a valid input to its valid output.
PE_LATENCY = 10

#: The data operand of a product is split here: an unsigned low part for the DSP48's 18-bit port and a signed
#: high part; the low product enters the sum shifted right by this many bits.
_SPLIT_BIT = 17


def _data(spec: GaeSpec, extra_bits: int = 0) -> Signal:
    return Signal(intbv(0, min=spec.data.min_code << extra_bits, max=(spec.data.max_code + 1) << extra_bits))


def _ranged(lo: int, hi: int) -> Signal:
    """A Signal holding [lo, hi] (declared signed when lo < 0)."""
    return Signal(intbv(0, min=lo, max=hi + 1))


def _like(sig: Signal) -> Signal:
    return _ranged(sig.min, sig.max - 1)


@block
def coef_powers(powers, gamma_lambda, clock, spec: GaeSpec):
    """Registered chain ``powers[j] = rnd(powers[j-1] * C)``, ``powers[1] = C`` (j = 1..k; ``powers[0]`` unused).

    Each product is a :func:`_mac` with its M and P registers, then registered: C**j settles 3 (j - 1) cycles after
    ``gamma_lambda`` changes (21 for C**8). Nothing waits for it, and nothing needs to: C**j only matters once j
    elements were issued ahead of the one reading it (before that the delay-line slot it multiplies holds the 0 the
    bootstrap row wrote, and rnd(C * 0) + x = x), and those had to be loaded and popped first. Element i of a
    T-step operation reads C**j (PE stage 4) T + 15 + i cycles after START and C**k (stage 7) T + 18 + i, so with
    i >= j, T >= i + 1 a tap has 18 - j cycles to spare and the tail 21 - k: at least 11 for any k <= 8, even if
    GAMMA_LAMBDA reached the core after START (the core top holds it from START on; ``tests/gae/test_coef_settling.py``
    drives the bare core late to measure the margin on a k = 8 build and fails if it shrinks).

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
        operand = _ranged(-1, powers[j - 1].max - 1)  # signed, as :func:`_mac` takes its data operand
        rounded = Signal(intbv(0, min=0, max=(1 << cf) + 2))  # C**j in [0, 1]: never negative
        mul = _mac(rounded, operand, gamma_lambda, None, clock, cf, port_bits=spec.multiplier_port_bits)
        mul.name = f"pow{j}_mul"
        insts += [assign(operand, powers[j - 1]), mul, _register(powers[j], rounded, clock)]
    return insts


def _product_range(a, b):
    corners = [x * y for x in (a.min, a.max - 1) for y in (b.min, b.max - 1)]
    return min(corners), max(corners)


@block
def _stage(q, d, clock, registered: bool, load=None, clear=None):
    """``q <= d`` on every clock edge, or ``q = d`` (a wire) when not ``registered``.

    With ``load`` (registered only) the register loads ``d`` only when ``load`` is high and is cleared to 0 when
    ``clear`` is (priority): a DSP48's CEM / RSTM, the fabric flip-flops' CE / LSR.
    """
    if registered and load is not None:
        return dff_en(q, d, load, clear, clock)
    if registered:

        @always(clock.posedge)
        def seq():
            q.next = d

        return seq

    @always_comb
    def wire():
        q.next = d

    return wire


def mac_range(a, b, x, shift: int) -> tuple[int, int]:
    """[min, max] of ``rnd(a * b / 2**shift) + x`` for Signals ``a``, ``b`` and ``x`` (``x`` None: 0)."""
    p_min, p_max = _product_range(a, b)
    half = 1 << (shift - 1)
    x_min, x_max = (x.min, x.max - 1) if x is not None else (0, 0)
    return ((p_min + half) >> shift) + x_min, ((p_max + half) >> shift) + x_max


@block
def _mac(
    y, a, b, x, clock, shift: int, m_reg: bool = True, p_reg: bool = True, port_bits: int = 25, load=None, clear=None
):
    """``y = rnd(a * b / 2**shift) + x``, exact (one rounding), as two DSP48s with M and P registers.

    ``a`` (signed, wider than 18 bits) is split at bit 17; ``b`` (unsigned, at most 24 bits) enters both products
    as a signed 25-bit operand; ``x`` (signed, or None for 0) rides on the high DSP's C port::

        M: m_lo = a_lo * b, m_hi = a_hi * b, xq = x            registered when m_reg
        P: p_hi = m_hi + (xq * 2**(shift-17) + 2**(shift-18)), p_lo = m_lo >> 17     registered when p_reg
        y = (p_hi + p_lo) >> (shift - 17)                         combinational

    ``a``, ``b`` and ``x`` are sampled together; ``y`` follows ``m_reg + p_reg`` clock edges later.

    ``load`` / ``clear`` (Signals, with ``m_reg``): the M registers (products and ``xq``) sample only when ``load``
    is high and hold otherwise, and ``clear`` zeroes them (then ``y`` = 0). Without ``p_reg``, ``y`` is then a
    function of the last sampled operands alone, however many cycles ago: the A loop relies on that.

    ``port_bits`` (``GaeSpec.multiplier_port_bits``) below the 25 bits of ``b``, with ``m_reg``: the multiplier
    primitive is 18 x 18, so ``b`` is split at bit 17 too and the M registers hold the four 18 x 18 products
    (:func:`_partial_products`). They enter the P stage regrouped, one adder on each side::

        P: p_hi = q_hl + (xq * 2**(shift-17) + 2**(shift-18)),  p_lo = q_lh + (q_hh * 2**17 + q_ll >> 17)

    the same sum (``m_hi = q_hl + q_hh * 2**17``, ``m_lo >> 17 = q_lh + q_ll >> 17`` exactly, as ``q_lh * 2**17``
    is a multiple of 2**17), but ``q_ll >> 17`` is below bit 17, so ``q_hh * 2**17 + q_ll >> 17`` is wiring: two
    adders deep to ``y`` instead of three (the A loop's second half has no P register, issue 15).

    y : Signal(intbv), out -- wide enough for :func:`mac_range`
    """
    if load is not None and not m_reg:
        raise ValueError("_mac: load / clear gate the M registers, so they need m_reg")
    if shift <= _SPLIT_BIT + 1 or len(a) <= 18 or a.min >= 0:
        raise ValueError(
            f"_mac: needs a signed operand wider than 18 bits and shift > {_SPLIT_BIT + 1}; "
            f"got {len(a)} bits, min {a.min}, shift {shift}"
        )
    down = shift - _SPLIT_BIT
    insts = []
    b_signed = _ranged(-1, b.max - 1)  # a signed copy: a signed product with it stays signed
    a_lo, a_hi = _halves(a)
    insts += [assign(b_signed, b), _split(a_lo, a_hi, a)]

    if m_reg and len(b_signed) > port_bits:
        b_lo, b_hi = _halves(b_signed)
        q_ll, q_lh, q_hl, q_hh = (
            _product_signal(u, v) for u, v in ((a_lo, b_lo), (a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi))
        )
        insts += [
            _split(b_lo, b_hi, b_signed),
            _partial_products(q_ll, q_lh, q_hl, q_hh, a_lo, a_hi, b_lo, b_hi, clock, load, clear),
        ]
        ll_top = (q_ll.max - 1) >> _SPLIT_BIT
        wired = _ranged(q_hh.min << _SPLIT_BIT, ((q_hh.max - 1) << _SPLIT_BIT) + ll_top)  # q_hh * 2**17 + q_ll >> 17
        lo_term = _ranged(q_lh.min + wired.min, q_lh.max - 1 + wired.max - 1)
        insts += [_wire_below(wired, q_hh, q_ll), add2(lo_term, q_lh, wired)]
        hi_term = q_hl
    else:
        lo_max = _product_range(a_lo, b)[1]
        m_lo, hi_term = _ranged(0, lo_max), _ranged(*_product_range(a_hi, b))
        prod_lo, prod_hi = _like(m_lo), _like(hi_term)
        lo_term = _ranged(-1, lo_max >> _SPLIT_BIT)  # declared signed: the final sum stays a signed expression

        @always_comb
        def multiply():
            prod_lo.next = a_lo * b_signed
            prod_hi.next = a_hi * b_signed

        @always_comb
        def low_part():
            lo_term.next = m_lo >> _SPLIT_BIT

        insts += [
            multiply,
            _stage(m_lo, prod_lo, clock, m_reg, load, clear),
            _stage(hi_term, prod_hi, clock, m_reg, load, clear),
            low_part,
        ]

    if x is None:
        cq = None
        c_min = c_max = 1 << (down - 1)
    else:
        xq = _like(x)
        insts.append(_stage(xq, x, clock, m_reg, load, clear))
        # C = x * 2**down + 2**(down-1): wiring (x, then a one and down-1 zeros)
        joined = ConcatSignal(xq, intbv(1 << (down - 1))[down:])
        size = len(joined)
        c_min, c_max = (x.min << down) + (1 << (down - 1)), ((x.max - 1) << down) + (1 << (down - 1))
        cq = _ranged(c_min, c_max)

        @always_comb
        def constant():
            cq.next = joined[size:].signed()

        insts.append(constant)
    sum_hi = _ranged(hi_term.min + c_min, hi_term.max - 1 + c_max)
    p_hi, p_lo = _like(sum_hi), _like(lo_term)

    if cq is None:
        bias = 1 << (down - 1)

        @always_comb
        def post_add():
            sum_hi.next = hi_term + bias
    else:

        @always_comb
        def post_add():
            sum_hi.next = hi_term + cq

    insts += [post_add, _stage(p_hi, sum_hi, clock, p_reg), _stage(p_lo, lo_term, clock, p_reg)]
    full = _ranged(sum_hi.min + lo_term.min, sum_hi.max - 1 + lo_term.max - 1)

    @always_comb
    def final_add():
        full.next = p_hi + p_lo

    @always_comb
    def round_shift():
        y.next = full >> down

    return insts + [final_add, round_shift]


def _halves(value: Signal) -> tuple[Signal, Signal]:
    """Signals for ``value`` (signed, wider than 18 bits) split at bit 17: an unsigned low and a signed high part."""
    top = 1 << (len(value) - _SPLIT_BIT - 1)
    return Signal(intbv(0)[_SPLIT_BIT:]), _ranged(-top, top - 1)


@block
def _split(low, high, value):
    """``low = value[16:0]`` (unsigned), ``high = value >> 17`` (signed): wiring."""
    width = len(value)

    @always_comb
    def wires():
        low.next = value[_SPLIT_BIT:]
        high.next = value[width:_SPLIT_BIT].signed()

    return wires


def _product_signal(u: Signal, v: Signal) -> Signal:
    """A Signal for ``u * v``, declared signed (sums of such products stay signed expressions)."""
    low, high = _product_range(u, v)
    return _ranged(min(low, -1), high)


@block
def _partial_products(q_ll, q_lh, q_hl, q_hh, a_lo, a_hi, b_lo, b_hi, clock, load=None, clear=None):
    """The four 18 x 18 products of ``a * b`` (both split at bit 17), each registered right behind its multiplier::

        q_ll = a_lo * b_lo,  q_lh = a_lo * b_hi,  q_hl = a_hi * b_lo,  q_hh = a_hi * b_hi     (one clock edge later)

    so ``a * b = q_ll + (q_lh + q_hl) * 2**17 + q_hh * 2**34``. A fabric whose multipliers have no usable internal
    register needs the register right there (the ECP5 stand-in: synthesized whole, a 25-bit ``b`` becomes two
    MULT18X18Ds summed by a 40-bit carry chain before the register, the slowest path of every GAE build).

    q_*        : Signal(signed), out -- as from :func:`_product_signal`
    a_lo, b_lo : Signal(intbv[17]), in -- the unsigned low parts
    a_hi, b_hi : Signal(signed), in    -- the signed high parts
    clock      : Signal(bool), in
    load, clear : Signal(bool) or None, in -- as :func:`_stage`'s (None: free running)
    """
    products = [_like(q) for q in (q_ll, q_lh, q_hl, q_hh)]
    p_ll, p_lh, p_hl, p_hh = products

    @always_comb
    def multiply():
        p_ll.next = a_lo * b_lo
        p_lh.next = a_lo * b_hi
        p_hl.next = a_hi * b_lo
        p_hh.next = a_hi * b_hi

    return [multiply] + [_stage(q, p, clock, True, load, clear) for q, p in zip((q_ll, q_lh, q_hl, q_hh), products)]


@block
def _wire_below(y, high, low):
    """``y = high * 2**17 + low >> 17`` for an unsigned ``low`` below 2**34: wiring (a concatenation)."""
    joined = ConcatSignal(high, low(2 * _SPLIT_BIT, _SPLIT_BIT))
    size = len(joined)

    @always_comb
    def wires():
        y.next = joined[size:].signed()

    return wires


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
def _carry(valid_q, clear_q, v_q, sat_q, dead_q, valid_d, clear_d, v_d, sat_d, dead_d, clock):
    """One pipeline stage of an element's side data: valid, bootstrap, V, and (when not None) the saturation
    flag so far and done."""
    regs = [_register(valid_q, valid_d, clock), _register(clear_q, clear_d, clock), _register(v_q, v_d, clock)]
    if sat_q is not None:
        regs.append(_register(sat_q, sat_d, clock))
    if dead_q is not None:
        regs.append(_register(dead_q, dead_d, clock))
    return regs


@block
def gae_pe(
    adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock, spec: GaeSpec
):
    """One GAE processing element.

    adv, ret     : Signal(DATA), out  -- A_t and R_t, valid with ``out_valid``
    out_valid    : Signal(bool), out
    saturated    : Signal(bool), out  -- a delta, A or R of the element leaving stage 10 saturated (or earlier)
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
    ports = spec.multiplier_port_bits
    lo, hi = spec.data.min_code, spec.data.max_code
    insts = []

    # stage 1: operands ------------------------------------------------------------------------------------------
    v_next = _data(spec)  # V of the last valid input: V_{t+1}
    gv_operand = _data(spec)  # V_{t+1}, or 0 when d_t
    rv1 = _ranged(lo - hi, hi - lo)  # r_t - V_t
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

    # stages 2-4: delta_t = sat(rnd(GAMMA * V_{t+1}) + (r - V)) --------------------------------------------------
    raw_delta = _ranged(*mac_range(gv_operand, gamma, rv1, cf))
    gv_mac = _mac(raw_delta, gv_operand, gamma, rv1, clock, cf, port_bits=ports)
    gv_mac.name = "gamma_v"
    insts.append(gv_mac)
    v2, v3, v4 = _data(spec), _data(spec), _data(spec)
    dead2, valid2, clear2, dead3, valid3, clear3 = [Signal(bool(0)) for _ in range(6)]
    v1_live, dead1_live = _data(spec), Signal(bool(0))

    @always_comb
    def bootstrap_passes():  # the bootstrap row only loads v_next (V_T, stage 1): its own V and done pass as 0
        if clear1:
            v1_live.next = 0
            dead1_live.next = 0
        else:
            v1_live.next = v1
            dead1_live.next = dead1

    insts += [
        bootstrap_passes,
        _carry(valid2, clear2, v2, None, dead2, valid1, clear1, v1_live, None, dead1_live, clock),
        _carry(valid3, clear3, v3, None, dead3, valid2, clear2, v2, None, dead2, clock),
    ]
    delta_c, delta_sat = _data(spec), Signal(bool(0))
    insts.append(saturate(delta_c, delta_sat, raw_delta, lo, hi))
    delta4 = _data(spec)
    dead4, valid4, clear4, sat4 = [Signal(bool(0)) for _ in range(4)]
    sat3_live = Signal(bool(0))
    insts += [
        and2(sat3_live, delta_sat, valid3),
        _register(delta4, delta_c, clock),
        _carry(valid4, clear4, v4, sat4, dead4, valid3, clear3, v3, sat3_live, dead3, clock),
    ]
    coefs = [None]  # C**j, 0 when d_t (chain_1 of every tap)
    for j in range(1, k):
        coef = Signal(intbv(0, min=0, max=(1 << cf) + 1))
        inst = _masked_register(coef, powers[j], dead3, clock)
        inst.name = f"coef{j}"
        insts.append(inst)
        coefs.append(coef)

    # stages 5-7: partial_t = delta_t + sum_j [chain_j] rnd(C**j * delta_{t+j}) ------------------------------------
    delta_hist = [_data(spec) for _ in range(k - 1)]  # delta_{t+1} .. delta_{t+k-1}
    alive_hist = [Signal(bool(0)) for _ in range(k - 1)]  # alive_{t+1} .. alive_{t+k-1}
    alive4 = Signal(bool(0))

    @always_comb
    def alive_of_stage4():
        alive4.next = not dead4

    insts.append(alive_of_stage4)
    if k > 1:
        dl = delay_line(delta_hist, delta4, valid4, clear4, clock)
        dl.name = "delta_hist"
        al = delay_line(alive_hist, alive4, valid4, clear4, clock)
        al.name = "alive_hist"
        insts += [dl, al]
    chains = [alive4]  # chain_1 = alive_t
    for j in range(2, k + 1):
        chain = Signal(bool(0))
        insts.append(and2(chain, chains[-1], alive_hist[j - 2]))
        chains.append(chain)
    v5, v6, v7 = _data(spec), _data(spec), _data(spec)
    valid5, clear5, sat5, valid6, clear6, sat6, valid7, clear7, sat7 = [Signal(bool(0)) for _ in range(9)]
    cut5, cut6 = Signal(bool(0)), Signal(bool(0))  # not chain_k: the tail term is 0
    cut4 = Signal(bool(0))
    tail_chain = chains[k - 1]

    @always_comb
    def tail_cut_of_stage4():
        cut4.next = not tail_chain

    insts += [
        tail_cut_of_stage4,
        _register(cut5, cut4, clock),
        _register(cut6, cut5, clock),
        _carry(valid5, clear5, v5, sat5, None, valid4, clear4, v4, sat4, None, clock),
        _carry(valid6, clear6, v6, sat6, None, valid5, clear5, v5, sat5, None, clock),
        _carry(valid7, clear7, v7, sat7, None, valid6, clear6, v6, sat6, None, clock),
    ]
    if k > 1:
        part = _ranged(*mac_range(delta_hist[0], coefs[1], delta4, cf))
        tap = _mac(part, delta_hist[0], coefs[1], delta4, clock, cf, port_bits=ports)
        tap.name = "tap1"
        insts.append(tap)
        for j in range(2, k):  # k >= 3: the other taps, masked by chain_j
            term = _ranged(*mac_range(delta_hist[j - 1], coefs[j], None, cf))
            mul = _mac(term, delta_hist[j - 1], coefs[j], None, clock, cf, port_bits=ports)
            mul.name = f"tap{j}"
            kill4, kill5, kill6 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
            chain_j = chains[j - 1]
            masked = _like(term)
            insts += [
                mul,
                _not(kill4, chain_j),
                _register(kill5, kill4, clock),
                _register(kill6, kill5, clock),
                _mask(masked, term, kill6),
            ]
            acc = _ranged(part.min + masked.min, part.max - 1 + masked.max - 1)
            insts.append(add2(acc, part, masked))
            part = acc
    else:
        delta5, delta6 = _data(spec), _data(spec)
        insts += [_register(delta5, delta4, clock), _register(delta6, delta5, clock)]
        part = delta6
    part7 = _like(part)  # its exact range: the loop's sum is 34 bits for k = 2, its clamp a LUT4
    insts.append(_register(part7, part, clock))

    # stages 8-9: the A loop: A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k})) ----------------------------------
    # The mask is the tail coefficient's synchronous reset. adv3, adv_hist and adv_tail keep their names: the
    # synthesis report finds the loop registers by them (DESIGN.md section 5).
    adv_hist = [_data(spec) for _ in range(k - 2)]  # A_{t+2} .. A_{t+k-1}, shifted as A_t is written
    v8, v9 = _data(spec), _data(spec)
    valid8, clear8, sat8, valid9, clear9, sat9 = [Signal(bool(0)) for _ in range(6)]
    insts.append(_carry(valid8, clear8, v8, sat8, None, valid7, clear7, v7, sat7, None, clock))
    tail_coef = Signal(intbv(0, min=0, max=(1 << cf) + 1))  # C**k, or 0 when chain_k is 0
    raw_adv = _ranged(*mac_range(_data(spec), tail_coef, part7, cf))
    adv_c = _data(spec)  # A_t = sat(raw_adv) (k <= 2 read it)
    a_clamped = Signal(bool(0))  # A_t clamped: stage 9 (k = 1) or 10 (k >= 2)
    sat9_next = Signal(bool(0))  # the element's flag so far, into stage 9's register
    if k > 1:
        # adv3 keeps the raw sum of the element last written, clamped where it is read: the clamp's LUTs then
        # feed adv_tail alone, and the sum's carry chain feeds adv3 (each flip-flop beside its driver)
        adv3, adv_a = _like(raw_adv), _data(spec)
        insts += [saturate(adv_a, a_clamped, adv3, lo, hi), assign(sat9_next, sat8)]
        if k == 2:
            insts.append(saturate(adv_c, None, raw_adv, lo, hi))
        adv3_next = raw_adv
    else:
        adv3 = adv_a = _data(spec)  # k = 1: adv3 is the multiplier's operand
        adv3_next = adv_c
        clamped8 = Signal(bool(0))
        insts += [
            saturate(adv_c, a_clamped, raw_adv, lo, hi),
            and2(clamped8, a_clamped, valid8),
            or2(sat9_next, sat8, clamped8),
        ]
    if k > 1:
        tail_coef_inst = _masked_register(tail_coef, powers[k], cut6, clock)  # aligned with stage 7
        # adv_tail is A_{t+k} for the element in stage 8, a register: no select in front of the multipliers.
        # The tail's M registers load only with an element in stage 8 (or the bootstrap row, as zeros), so with
        # no element in stage 9 the loop's sum recomputes the last one: adv_c == adv3 then.
        adv_tail = _data(spec)
        ahead7 = Signal(bool(0))  # an element (or the bootstrap row) in stage 8
        insts.append(or2(ahead7, valid7, clear7))
        if k == 2:
            tail_next = adv_c  # the element in stage 9's A, or (none) adv3's == adv_c
        else:
            history = [adv_a] + adv_hist  # A of the last, second last ... element written
            tail_next = _data(spec)
            insts.append(mux2(tail_next, history[k - 3], history[k - 2], valid8))
        at = dff_en(adv_tail, tail_next, ahead7, clear8, clock)
        at.name = "adv_tail"
        insts.append(at)
        tail_mac = _mac(
            raw_adv,
            adv_tail,
            tail_coef,
            part7,
            clock,
            cf,
            m_reg=True,
            p_reg=False,
            port_bits=ports,
            load=ahead7,
            clear=clear7,
        )
    else:
        cut7, part8 = Signal(bool(0)), _like(part7)
        tail_coef_inst = _masked_register(tail_coef, powers[k], cut7, clock)  # aligned with stage 8
        insts += [_register(cut7, cut6, clock), _register(part8, part7, clock)]
        tail_mac = _mac(raw_adv, adv3, tail_coef, part8, clock, cf, m_reg=False, p_reg=False)
    tail_coef_inst.name = "tail_coef"
    tail_mac.name = "tail_mac"
    insts += [tail_coef_inst, tail_mac]
    if adv_hist:
        ah = delay_line(adv_hist, adv_a, valid8, clear8, clock)
        ah.name = "adv_hist"
        insts.append(ah)

    @always(clock.posedge)
    def stage9():
        if clear8:
            adv3.next = 0
        elif valid8:
            adv3.next = adv3_next
        valid9.next = valid8
        v9.next = v8
        sat9.next = sat9_next

    insts.append(stage9)

    # stage 10: R_t = sat(A_t + V_t) -------------------------------------------------------------------------------
    raw_ret = _data(spec, 1)
    ret_c, ret_sat = _data(spec), Signal(bool(0))
    adv10, ret10 = _data(spec), _data(spec)
    valid10, sat10 = Signal(bool(0)), Signal(bool(0))
    flag10 = Signal(bool(0))  # R_t clamped, or (k >= 2) A_t
    insts += [
        add2(raw_ret, adv_a, v9),
        saturate(ret_c, ret_sat, raw_ret, lo, hi),
        or2(flag10, ret_sat, a_clamped) if k > 1 else assign(flag10, ret_sat),
    ]

    @always(clock.posedge)
    def stage10():
        valid10.next = valid9
        adv10.next = adv_a
        ret10.next = ret_c
        sat10.next = sat9 or flag10

    @always_comb
    def outputs():
        adv.next = adv10
        ret.next = ret10
        out_valid.next = valid10
        saturated.next = sat10 and valid10

    insts += [stage10, outputs]
    return insts


@block
def _mask(y, a, kill):
    """``y = 0 if kill else a`` (combinational)."""

    @always_comb
    def logic():
        if kill:
            y.next = 0
        else:
            y.next = a

    return logic


@block
def _not(y, a):
    @always_comb
    def logic():
        y.next = not a

    return logic
