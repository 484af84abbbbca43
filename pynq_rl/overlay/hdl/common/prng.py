"""On-chip PRNG: xorshift32, one 32-bit output per enabled cycle (model: :mod:`pynq_rl.overlay.models.prng`)."""

from myhdl import always_comb, always_seq, block, intbv

from ...spec import PRNG_SHIFTS
from ...spec import PRNG_ZERO_SEED as ZERO_SEED_REPLACEMENT

__all__ = ["xorshift32", "xorshift32_next"]

_LEFT1, _RIGHT, _LEFT2 = PRNG_SHIFTS


@block
def xorshift32(value, seed, load, enable, clock, reset):
    """xorshift32 generator.

    value  : Signal(intbv[32]), out -- current state; after ``load`` and n enables it is the model's n-th output
    seed   : Signal(intbv[32]), in  -- loaded on ``load`` (0 becomes ZERO_SEED_REPLACEMENT, as in the model)
    load   : Signal(bool), in       -- has priority over ``enable``
    enable : Signal(bool), in       -- advance one step
    clock  : Signal(bool), in
    reset  : ResetSignal, in
    """
    if len(value) != 32 or len(seed) != 32:
        raise ValueError("xorshift32 needs 32-bit value and seed signals")

    @always_seq(clock.posedge, reset=reset)
    def step():
        if load:
            if seed == 0:
                value.next = ZERO_SEED_REPLACEMENT
            else:
                value.next = seed
        elif enable:
            x = intbv(0)[32:]
            x[:] = value
            x[:] = x ^ ((x << _LEFT1) & 0xFFFFFFFF)
            x[:] = x ^ (x >> _RIGHT)
            x[:] = x ^ ((x << _LEFT2) & 0xFFFFFFFF)
            value.next = x

    return step


@block
def xorshift32_next(y, x):
    """``y`` = one xorshift32 step of ``x`` (combinational): the output an enabled :func:`xorshift32` takes next,
    for a consumer that needs the n-th output in the same cycle the generator advances to it.

    y : Signal(intbv[32]), out
    x : Signal(intbv[32]), in
    """
    if len(y) != 32 or len(x) != 32:
        raise ValueError("xorshift32_next needs 32-bit signals")

    @always_comb
    def step():
        v = intbv(0)[32:]
        v[:] = x
        v[:] = v ^ ((v << _LEFT1) & 0xFFFFFFFF)
        v[:] = v ^ (v >> _RIGHT)
        v[:] = v ^ ((v << _LEFT2) & 0xFFFFFFFF)
        y.next = v

    return step
