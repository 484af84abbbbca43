"""A pipelined unsigned multiplier made of registered 17 x 17 tiles: every tile product lands in a register.

``p = a * b`` for unsigned ``a`` and ``b``, ``mul_latency(len(a), len(b))`` enabled edges after the operands. Both
operands are cut into 17-bit chunks (an unsigned 17-bit chunk fits the signed 18-bit port of an ECP5 MULT18X18D and
both ports of a DSP48E1); stage 1 registers every chunk product on its own (the synthesizer puts that register in
the DSP: the DSP48E1's M or P register, ``REG_OUTPUT`` of the MULT18X18D), then a registered binary adder tree sums
the shifted tile products, one adder per term and stage. A multiply written as ``a * b`` with a register after the
whole product leaves the tiles' outputs unregistered: the synthesizer's own splitting puts the tile-summing adders
between the DSPs and that register (then no DSP used its M or P register).

Every partial sum is at most the full product, so each fits ``len(a) + len(b)`` bits less its shift.
"""

from myhdl import Signal, always, block, intbv

__all__ = ["mul_latency", "pipelined_mul", "TILE"]

#: chunk width of one tile operand (unsigned; the DSPs' narrowest signed port is 18 bits)
TILE = 17


def _chunks(bits: int) -> list:
    """``(low bit, width)`` of each TILE-bit chunk of a ``bits``-wide operand."""
    return [(lo, min(TILE, bits - lo)) for lo in range(0, bits, TILE)]


def mul_latency(a_bits: int, b_bits: int) -> int:
    """Enabled edges from the operands to the product: the tile stage, then one per adder-tree level."""
    terms = len(_chunks(a_bits)) * len(_chunks(b_bits))
    return 1 + (terms - 1).bit_length()


@block
def pipelined_mul(p, a, b, enable, clock):
    """``p = a * b`` (unsigned) after :func:`mul_latency` enabled edges; registers only, no reset.

    p      : Signal(len(a) + len(b)), out -- the product (the last adder-tree register, or the tile register)
    a, b   : Signal(intbv), in            -- unsigned operands
    enable : Signal(bool), in             -- pipeline enable (every register)
    clock  : Signal(bool), in
    """
    width = len(a) + len(b)
    if len(p) != width:
        raise ValueError(f"pipelined_mul: the product needs {width} bits, not {len(p)}")
    insts, terms = [], []
    for a_lo, a_w in _chunks(len(a)):
        for b_lo, b_w in _chunks(len(b)):
            shift = a_lo + b_lo
            tile = p if len(_chunks(len(a))) * len(_chunks(len(b))) == 1 else Signal(intbv(0)[a_w + b_w :])
            inst = _tile(tile, a, b, a_lo, a_w, b_lo, b_w, enable, clock)
            inst.name = f"tile_{a_lo}_{b_lo}"
            insts.append(inst)
            terms.append((tile, shift))
    level = 0
    while len(terms) > 1:
        merged = []
        for i in range(0, len(terms) - 1, 2):
            (x, xs), (y, ys) = terms[i], terms[i + 1]
            base = min(xs, ys)
            bits = min(max(len(x) + xs, len(y) + ys) - base + 1, width - base)
            last = len(terms) == 2
            s = p if last else Signal(intbv(0)[bits:])
            inst = _add_shifted(s, x, xs - base, y, ys - base, enable, clock)
            inst.name = f"sum{level}_{i // 2}"
            insts.append(inst)
            merged.append((s, base))
        if len(terms) % 2:
            x, xs = terms[-1]
            s = Signal(intbv(0)[len(x) :])
            inst = _add_shifted(s, x, 0, None, 0, enable, clock)
            inst.name = f"sum{level}_pass"
            insts.append(inst)
            merged.append((s, xs))
        terms = merged
        level += 1
    return insts


@block
def _tile(q, a, b, a_lo: int, a_w: int, b_lo: int, b_w: int, enable, clock):
    """``q = a[a_lo + a_w:a_lo] * b[b_lo + b_w:b_lo]``, registered (the DSP's output register)."""

    @always(clock.posedge)
    def product():
        if enable:
            q.next = a[a_lo + a_w : a_lo] * b[b_lo + b_w : b_lo]

    return product


@block
def _add_shifted(q, x, x_shift: int, y, y_shift: int, enable, clock):
    """``q = (x << x_shift) + (y << y_shift)`` registered (``y`` None: ``q = x << x_shift``)."""
    if y is None:

        @always(clock.posedge)
        def hold():
            if enable:
                q.next = x

        return hold

    @always(clock.posedge)
    def add():
        if enable:
            q.next = (x << x_shift) + (y << y_shift)

    return add
