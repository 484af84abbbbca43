"""Small arithmetic and register blocks shared by the cores: rounding multiply, saturation, enabled registers.

Each block is a few lines of RTL with constant widths, so that generated structures (delay lines, lookahead taps,
adder cascades) are built from instances with plain Signals and convert to clean Verilog.
"""

from myhdl import Signal, always, always_comb, block, intbv

__all__ = ["dff_en", "delay_line", "mul_round", "saturate", "assign", "and2", "or2", "add2", "mux2", "SPLIT_BIT"]


@block
def dff_en(q, d, enable, clear, clock):
    """Register with synchronous clear (priority) and enable; no reset (datapath register).

    q      : Signal(w), out
    d      : Signal(w), in
    enable : Signal(bool), in  -- load ``d``
    clear  : Signal(bool), in  -- load 0
    clock  : Signal(bool), in
    """

    @always(clock.posedge)
    def seq():
        if clear:
            q.next = 0
        elif enable:
            q.next = d

    return seq


@block
def delay_line(taps, d, enable, clear, clock):
    """Shift register: ``taps[j]`` holds ``d`` as it was j + 1 enabled edges ago (taps is a Python list of Signals).

    Built from one :func:`dff_en` per stage so each tap stays a plain Signal in the Verilog.
    """
    stages = []
    source = d
    for j, tap in enumerate(taps):
        inst = dff_en(tap, source, enable, clear, clock)
        inst.name = f"stage{j}"
        stages.append(inst)
        source = tap
    return stages


#: DSP48E1 multiplier ports: 25 x 18 signed. yosys (0.23) maps a 32 x 25 product onto 4 of them; splitting the
#: 32-bit operand by hand at bit 17 (an unsigned 17-bit low part and a signed high part) takes 2 (docs/design.md,
#: MyHDL lessons).
_DSP_A_BITS = 25

#: Where an operand wider than a multiplier's 18-bit port is split: an unsigned low part of this many bits (the
#: port's unsigned range) and a signed high part; the low product enters a sum shifted right by this many bits.
SPLIT_BIT = 17


@block
def mul_round(product_rounded, a, b, mask, shift: int):
    """``product_rounded = round_half_up(a * b / 2**shift)`` if ``mask`` (or no mask) else 0 (combinational).

    The full-width product goes into its own Signal first: slicing or shifting ``a * b`` directly converts to
    Verilog that truncates the product (docs/design.md, MyHDL lessons). When ``a`` is wider than a DSP's 18-bit port and
    ``b`` fits its 25-bit port, ``a`` is split at bit 17 into two DSP-sized products, summed exactly:
    ``a * b = (a_hi * b) << 17 + a_lo * b``.

    product_rounded : Signal(intbv), out
    a, b            : Signal(intbv), in
    mask            : Signal(bool) or None, in
    shift           : int >= 1
    """
    corners = [x * y for x in (a.min, a.max - 1) for y in (b.min, b.max - 1)] + [0]
    product = Signal(intbv(0, min=min(corners), max=max(corners) + 1))
    half = 1 << (shift - 1)
    b_bits = len(b) + (0 if b.min < 0 else 1)  # as a signed multiply operand
    insts = []

    if len(a) > 18 and b_bits <= _DSP_A_BITS:
        width = len(a)
        a_signed = a.min < 0
        a_lo = Signal(intbv(0)[SPLIT_BIT:])
        # the high part of an unsigned ``a`` is unsigned too: read as two's complement, a set top bit (a coefficient
        # of exactly 1.0, say) would be negative. It gets a sign bit of its own so the product stays signed.
        hi_bits = width - SPLIT_BIT if a_signed else width - SPLIT_BIT + 1
        a_hi = Signal(intbv(0, min=-(1 << (hi_bits - 1)), max=1 << (hi_bits - 1)))
        lo_corners = [x * y for x in (0, (1 << SPLIT_BIT) - 1) for y in (b.min, b.max - 1)] + [0]
        hi_corners = [x * y for x in (a_hi.min, a_hi.max - 1) for y in (b.min, b.max - 1)] + [0]
        # declared signed (min < 0) so the sum below stays a signed Verilog expression: one unsigned operand
        # would make it unsigned and zero-extend the negative high part
        p_lo = Signal(intbv(0, min=min(lo_corners) - 1, max=max(lo_corners) + 1))
        p_hi = Signal(intbv(0, min=min(hi_corners), max=max(hi_corners) + 1))

        if a_signed:

            @always_comb
            def split():
                a_lo.next = a[SPLIT_BIT:]
                a_hi.next = a[width:SPLIT_BIT].signed()
        else:

            @always_comb
            def split():
                a_lo.next = a[SPLIT_BIT:]
                a_hi.next = a[width:SPLIT_BIT]

        @always_comb
        def partial_products():
            p_lo.next = a_lo * b
            p_hi.next = a_hi * b

        if mask is None:

            @always_comb
            def multiply():
                product.next = (p_hi << SPLIT_BIT) + p_lo
        else:

            @always_comb
            def multiply():
                if mask:
                    product.next = (p_hi << SPLIT_BIT) + p_lo
                else:
                    product.next = 0

        insts += [split, partial_products, multiply]
    elif mask is None:

        @always_comb
        def multiply():
            product.next = a * b

        insts.append(multiply)
    else:

        @always_comb
        def multiply():
            if mask:
                product.next = a * b
            else:
                product.next = 0

        insts.append(multiply)

    @always_comb
    def round_shift():
        product_rounded.next = (product + half) >> shift

    insts.append(round_shift)
    return insts


@block
def saturate(y, flag, x, lo: int, hi: int):
    """``y = clamp(x, lo, hi)``; ``flag`` is high when clamping changed the value (combinational).

    ``[lo, hi]`` must be the full range of ``y`` (a signed width n). The test is "do the bits above n - 1 all equal
    the sign bit", written with unsigned slices: MyHDL writes Python-int bounds as unsigned Verilog literals, and a
    signed compare against one silently becomes unsigned (found by the cocotb run of the converted Verilog).

    y    : Signal(intbv[lo..hi]), out
    flag : Signal(bool) or None, out -- None: a clamp nobody reports (no flag logic, so no unread signal)
    x    : Signal(intbv), in (wider, signed)
    """
    n, width = len(y), len(x)
    if (lo, hi) != (-(1 << (n - 1)), (1 << (n - 1)) - 1) or width <= n:
        raise ValueError(
            f"saturate: [lo, hi] must be the full signed range of y and x wider than y; got "
            f"[{lo}, {hi}] for {n} bits from {width} bits"
        )
    ones = (1 << (width - n + 1)) - 1

    if flag is None:

        @always_comb
        def clamp_only():
            if x[width : n - 1] == 0 or x[width : n - 1] == ones:
                y.next = x[n:].signed()
            elif x[width - 1]:
                y.next = lo
            else:
                y.next = hi

        return clamp_only

    @always_comb
    def clamp():
        if x[width : n - 1] == 0 or x[width : n - 1] == ones:
            y.next = x[n:].signed()
            flag.next = 0
        elif x[width - 1]:
            y.next = lo
            flag.next = 1
        else:
            y.next = hi
            flag.next = 1

    return clamp


@block
def assign(y, a):
    """``y = a`` (combinational): wires one Signal to another across generated structure."""

    @always_comb
    def logic():
        y.next = a

    return logic


@block
def and2(y, a, b):
    """``y = a and b`` (combinational)."""

    @always_comb
    def logic():
        y.next = a and b

    return logic


@block
def or2(y, a, b):
    """``y = a or b`` (combinational)."""

    @always_comb
    def logic():
        y.next = a or b

    return logic


@block
def add2(y, a, b):
    """``y = a + b`` (combinational; ``y`` sized by the caller to hold the sum)."""

    @always_comb
    def logic():
        y.next = a + b

    return logic


@block
def mux2(y, when_set, otherwise, select):
    """``y = when_set if select else otherwise`` (combinational)."""

    @always_comb
    def logic():
        if select:
            y.next = when_set
        else:
            y.next = otherwise

    return logic
