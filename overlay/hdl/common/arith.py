"""Small arithmetic and register blocks shared by the cores: rounding multiply, saturation, enabled registers.

Each block is a few lines of RTL with constant widths, so that generated structures (delay lines, lookahead taps,
adder cascades) are built from instances with plain Signals and convert to clean Verilog.
"""
from myhdl import always, always_comb, block, intbv, Signal

__all__ = ["dff_en", "delay_line", "mul_round", "saturate"]


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


@block
def mul_round(product_rounded, a, b, mask, shift: int):
    """``product_rounded = round_half_up(a * b / 2**shift)`` if ``mask`` (or no mask) else 0 (combinational).

    The full-width product goes into its own Signal first: slicing or shifting ``a * b`` directly converts to
    Verilog that truncates the product (DESIGN.md section 5).

    product_rounded : Signal(intbv), out
    a, b            : Signal(intbv), in
    mask            : Signal(bool) or None, in
    shift           : int >= 1
    """
    corners = [x * y for x in (a.min, a.max - 1) for y in (b.min, b.max - 1)] + [0]
    product = Signal(intbv(0, min=min(corners), max=max(corners) + 1))
    half = 1 << (shift - 1)

    # # #

    if mask is None:
        @always_comb
        def multiply():
            product.next = a * b
    else:
        @always_comb
        def multiply():
            if mask:
                product.next = a * b
            else:
                product.next = 0

    @always_comb
    def round_shift():
        product_rounded.next = (product + half) >> shift

    return multiply, round_shift


@block
def saturate(y, flag, x, lo: int, hi: int):
    """``y = clamp(x, lo, hi)``; ``flag`` is high when clamping changed the value (combinational).

    ``[lo, hi]`` must be the full range of ``y`` (a signed width n). The test is "do the bits above n - 1 all equal
    the sign bit", written with unsigned slices: MyHDL writes Python-int bounds as unsigned Verilog literals, and a
    signed compare against one silently becomes unsigned (found by the cocotb run of the converted Verilog).

    y    : Signal(intbv[lo..hi]), out
    flag : Signal(bool), out
    x    : Signal(intbv), in (wider, signed)
    """
    n, width = len(y), len(x)
    if (lo, hi) != (-(1 << (n - 1)), (1 << (n - 1)) - 1) or width <= n:
        raise ValueError(f"saturate: [lo, hi] must be the full signed range of y and x wider than y; got "
                         f"[{lo}, {hi}] for {n} bits from {width} bits")
    ones = (1 << (width - n + 1)) - 1

    @always_comb
    def clamp():
        if x[width:n - 1] == 0 or x[width:n - 1] == ones:
            y.next = x[n:].signed()
            flag.next = 0
        elif x[width - 1]:
            y.next = lo
            flag.next = 1
        else:
            y.next = hi
            flag.next = 1

    return clamp
