r"""Multiply-accumulate building blocks: pipeline stages, registered sums and the DSP-shaped rounding multiply-add.

One copy of each for every core that pipelines its arithmetic:

* :func:`register` and :func:`stage`: a free-running pipeline register, or a register or a wire chosen at
  elaboration (with the load / clear of a DSP48's CEM / RSTM when registered);
* :func:`add_stage`: a two-input sum, registered or not (the ParSa worker-sum tree, the multiply-add's P stage);
* :func:`mac`: ``y = rnd(a * b / 2**shift) + x`` exact, as two DSP48s with their M and P registers (or four
  registered 18 x 18 partial products on a fabric of 18 x 18 multipliers), and :func:`mac_range` to size ``y``;
* :func:`ranged`, :func:`like`, :func:`product_range` and :func:`product_signal`: Signals sized for the values they
  hold;
* :func:`split_halves` and :func:`split_wiring`: an operand wider than a multiplier port, split at
  :data:`~.arith.SPLIT_BIT` into an unsigned low and a signed high part (the multiply-add's and the GAE
  dequantizer's 18 x 18 partial products).

The multiply-add in the shape of two DSP48s (no multiply without its M register, no adder behind an unregistered
product), ``a`` split at bit 17 into an unsigned low and a signed high part::

    M   m_lo = a[16:0] * b,  m_hi = a[31:17] * b                       (the DSPs' M registers)
    P   p_hi = m_hi + (x * 2**(f-17) + 2**(f-18)),  lo = m_lo >> 17      (post-adder with C, P register)
    F   y = (p_hi + lo) >> (f - 17)                                      (one fabric adder)

which equals ``(a * b + 2**(f-1) + x * 2**f) >> f`` exactly (nested floor divisions by powers of two; the low
17 bits of ``x * 2**f + 2**(f-1)`` are 0, so ``lo`` carries nothing else).
"""

from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv

from .arith import SPLIT_BIT, add2, assign, dff_en

__all__ = [
    "register",
    "stage",
    "add_stage",
    "mac",
    "mac_range",
    "ranged",
    "like",
    "product_range",
    "product_signal",
    "split_halves",
    "split_wiring",
]


def ranged(lo: int, hi: int) -> Signal:
    """A Signal holding [lo, hi] (declared signed when lo < 0)."""
    return Signal(intbv(0, min=lo, max=hi + 1))


def like(sig: Signal) -> Signal:
    """A Signal with the range of ``sig``."""
    return ranged(sig.min, sig.max - 1)


def product_range(a: Signal, b: Signal) -> tuple[int, int]:
    """[min, max] of ``a * b`` for Signals ``a`` and ``b``."""
    corners = [x * y for x in (a.min, a.max - 1) for y in (b.min, b.max - 1)]
    return min(corners), max(corners)


@block
def register(q, d, clock):
    """``q <= d`` every cycle (a free-running pipeline register, no reset).

    q     : Signal, out
    d     : Signal, in
    clock : Signal(bool), in
    """

    @always(clock.posedge)
    def seq():
        q.next = d

    return seq


@block
def stage(q, d, clock, registered: bool, load=None, clear=None):
    """``q <= d`` on every clock edge, or ``q = d`` (a wire) when not ``registered``.

    With ``load`` (registered only) the register loads ``d`` only when ``load`` is high and is cleared to 0 when
    ``clear`` is (priority): a DSP48's CEM / RSTM, the fabric flip-flops' CE / LSR.

    q           : Signal, out
    d           : Signal, in
    clock       : Signal(bool), in
    load, clear : Signal(bool) or None, in
    """
    if registered and load is not None:
        return dff_en(q, d, load, clear, clock)
    if registered:
        return register(q, d, clock)
    return assign(q, d)


@block
def add_stage(y, a, b, clock, registered: bool):
    """``y = a + b``, registered (``y`` follows one clock edge later) or combinational.

    y     : Signal(intbv), out -- sized by the caller to hold the sum
    a     : Signal(intbv), in
    b     : Signal(intbv) or int, in -- an int is a constant addend
    clock : Signal(bool), in
    """
    if registered:

        @always(clock.posedge)
        def logic():
            y.next = a + b
    else:

        @always_comb
        def logic():
            y.next = a + b

    return logic


def mac_range(a: Signal, b: Signal, x: Signal | None, shift: int) -> tuple[int, int]:
    """[min, max] of ``rnd(a * b / 2**shift) + x`` for Signals ``a``, ``b`` and ``x`` (``x`` None: 0)."""
    p_min, p_max = product_range(a, b)
    half = 1 << (shift - 1)
    x_min, x_max = (x.min, x.max - 1) if x is not None else (0, 0)
    return ((p_min + half) >> shift) + x_min, ((p_max + half) >> shift) + x_max


@block
def mac(
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
    function of the last sampled operands alone, however many cycles ago: the GAE PE's A loop relies on that.

    ``port_bits`` (``GaeSpec.multiplier_port_bits``) below the 25 bits of ``b``, with ``m_reg``: the multiplier
    primitive is 18 x 18, so ``b`` is split at bit 17 too and the M registers hold the four 18 x 18 products
    (:func:`_partial_products`). They enter the P stage regrouped, one adder on each side::

        P: p_hi = q_hl + (xq * 2**(shift-17) + 2**(shift-18)),  p_lo = q_lh + (q_hh * 2**17 + q_ll >> 17)

    the same sum (``m_hi = q_hl + q_hh * 2**17``, ``m_lo >> 17 = q_lh + q_ll >> 17`` exactly, as ``q_lh * 2**17``
    is a multiple of 2**17), but ``q_ll >> 17`` is below bit 17, so ``q_hh * 2**17 + q_ll >> 17`` is wiring: two
    adders deep to ``y`` instead of three (the A loop's second half has no P register).

    y           : Signal(intbv), out -- wide enough for :func:`mac_range`
    a           : Signal(signed, more than 18 bits), in
    b           : Signal(unsigned, at most 24 bits), in
    x           : Signal(signed) or None, in
    clock       : Signal(bool), in
    load, clear : Signal(bool) or None, in -- gate the M registers (need ``m_reg``)
    """
    if load is not None and not m_reg:
        raise ValueError("mac: load / clear gate the M registers, so they need m_reg")
    if shift <= SPLIT_BIT + 1 or len(a) <= 18 or a.min >= 0:
        raise ValueError(
            f"mac: needs a signed operand wider than 18 bits and shift > {SPLIT_BIT + 1}; "
            f"got {len(a)} bits, min {a.min}, shift {shift}"
        )
    down = shift - SPLIT_BIT
    b_signed = ranged(-1, b.max - 1)  # a signed copy: a signed product with it stays signed
    a_lo, a_hi = split_halves(a)
    insts = [assign(b_signed, b), split_wiring(a_lo, a_hi, a)]
    if m_reg and len(b_signed) > port_bits:
        b_lo, b_hi = split_halves(b_signed)
        q_ll, q_lh, q_hl, q_hh = (
            product_signal(u, v) for u, v in ((a_lo, b_lo), (a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi))
        )
        insts += [
            split_wiring(b_lo, b_hi, b_signed),
            _partial_products(q_ll, q_lh, q_hl, q_hh, a_lo, a_hi, b_lo, b_hi, clock, load, clear),
        ]
        ll_top = (q_ll.max - 1) >> SPLIT_BIT
        wired = ranged(q_hh.min << SPLIT_BIT, ((q_hh.max - 1) << SPLIT_BIT) + ll_top)  # q_hh * 2**17 + q_ll >> 17
        lo_term = ranged(q_lh.min + wired.min, q_lh.max - 1 + wired.max - 1)
        insts += [_wire_below(wired, q_hh, q_ll), add2(lo_term, q_lh, wired)]
        hi_term = q_hl
    else:
        lo_max = product_range(a_lo, b)[1]
        m_lo, hi_term = ranged(0, lo_max), ranged(*product_range(a_hi, b))
        lo_term = ranged(-1, lo_max >> SPLIT_BIT)  # declared signed: the final sum stays a signed expression
        insts.append(_two_products(m_lo, hi_term, lo_term, a_lo, a_hi, b_signed, clock, m_reg, load, clear))
    if x is None:
        addend = c_min = c_max = 1 << (down - 1)
    else:
        xq = like(x)
        c_min, c_max = (x.min << down) + (1 << (down - 1)), ((x.max - 1) << down) + (1 << (down - 1))
        addend = ranged(c_min, c_max)
        insts += [stage(xq, x, clock, m_reg, load, clear), _round_constant(addend, xq, down)]
    p_hi = ranged(hi_term.min + c_min, hi_term.max - 1 + c_max)
    p_lo = like(lo_term)
    insts += [add_stage(p_hi, hi_term, addend, clock, p_reg), stage(p_lo, lo_term, clock, p_reg)]
    full = ranged(p_hi.min + lo_term.min, p_hi.max - 1 + lo_term.max - 1)

    @always_comb
    def final_add():
        full.next = p_hi + p_lo

    @always_comb
    def round_shift():
        y.next = full >> down

    return insts + [final_add, round_shift]


@block
def _two_products(m_lo, m_hi, lo_term, a_lo, a_hi, b, clock, m_reg: bool, load, clear):
    """``m_lo = a_lo * b``, ``m_hi = a_hi * b`` (registered when ``m_reg``: the DSPs' M registers) and
    ``lo_term = m_lo >> 17``: the M stage of :func:`mac` with ``b`` whole."""
    prod_lo, prod_hi = like(m_lo), like(m_hi)

    @always_comb
    def multiply():
        prod_lo.next = a_lo * b
        prod_hi.next = a_hi * b

    @always_comb
    def low_part():
        lo_term.next = m_lo >> SPLIT_BIT

    return [
        multiply,
        stage(m_lo, prod_lo, clock, m_reg, load, clear),
        stage(m_hi, prod_hi, clock, m_reg, load, clear),
        low_part,
    ]


@block
def _round_constant(c, xq, down: int):
    """``c = xq * 2**down + 2**(down-1)``: the C-port addend of :func:`mac`, wiring (``xq``, then a one and
    ``down - 1`` zeros)."""
    joined = ConcatSignal(xq, intbv(1 << (down - 1))[down:])
    size = len(joined)

    @always_comb
    def constant():
        c.next = joined[size:].signed()

    return constant


def split_halves(value: Signal) -> tuple[Signal, Signal]:
    """Signals for ``value`` (signed, wider than 18 bits) split at bit 17: an unsigned low and a signed high part."""
    top = 1 << (len(value) - SPLIT_BIT - 1)
    return Signal(intbv(0)[SPLIT_BIT:]), ranged(-top, top - 1)


@block
def split_wiring(low, high, value):
    """``low = value[16:0]`` (unsigned), ``high = value >> 17`` (signed): wiring."""
    width = len(value)

    @always_comb
    def wires():
        low.next = value[SPLIT_BIT:]
        high.next = value[width:SPLIT_BIT].signed()

    return wires


def product_signal(u: Signal, v: Signal) -> Signal:
    """A Signal for ``u * v``, declared signed (sums of such products stay signed expressions)."""
    low, high = product_range(u, v)
    return ranged(min(low, -1), high)


@block
def _partial_products(q_ll, q_lh, q_hl, q_hh, a_lo, a_hi, b_lo, b_hi, clock, load=None, clear=None):
    """The four 18 x 18 products of ``a * b`` (both split at bit 17), each registered right behind its multiplier::

        q_ll = a_lo * b_lo,  q_lh = a_lo * b_hi,  q_hl = a_hi * b_lo,  q_hh = a_hi * b_hi     (one clock edge later)

    so ``a * b = q_ll + (q_lh + q_hl) * 2**17 + q_hh * 2**34``. A fabric whose multipliers have no usable internal
    register needs the register right there (the ECP5 stand-in: synthesized whole, a 25-bit ``b`` becomes two
    MULT18X18Ds summed by a 40-bit carry chain before the register, the slowest path of every GAE build).

    q_*         : Signal(signed), out -- as from :func:`product_signal`
    a_lo, b_lo  : Signal(intbv[17]), in -- the unsigned low parts
    a_hi, b_hi  : Signal(signed), in    -- the signed high parts
    clock       : Signal(bool), in
    load, clear : Signal(bool) or None, in -- as :func:`stage`'s (None: free running)
    """
    products = [like(q) for q in (q_ll, q_lh, q_hl, q_hh)]
    p_ll, p_lh, p_hl, p_hh = products

    @always_comb
    def multiply():
        p_ll.next = a_lo * b_lo
        p_lh.next = a_lo * b_hi
        p_hl.next = a_hi * b_lo
        p_hh.next = a_hi * b_hi

    return [multiply] + [stage(q, p, clock, True, load, clear) for q, p in zip((q_ll, q_lh, q_hl, q_hh), products)]


@block
def _wire_below(y, high, low):
    """``y = high * 2**17 + low >> 17`` for an unsigned ``low`` below 2**34: wiring (a concatenation)."""
    joined = ConcatSignal(high, low(2 * SPLIT_BIT, SPLIT_BIT))
    size = len(joined)

    @always_comb
    def wires():
        y.next = joined[size:].signed()

    return wires
