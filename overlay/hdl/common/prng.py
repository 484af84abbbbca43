"""On-chip PRNG: xorshift32, one 32-bit output per enabled cycle (model: :mod:`pynq_rl.overlay.models.prng`)."""
from myhdl import always_seq, block, intbv

from ...spec import PRNG_ZERO_SEED as ZERO_SEED_REPLACEMENT

__all__ = ["xorshift32"]


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
            x[:] = x ^ ((x << 13) & 0xFFFFFFFF)
            x[:] = x ^ (x >> 17)
            x[:] = x ^ ((x << 5) & 0xFFFFFFFF)
            value.next = x

    return step
