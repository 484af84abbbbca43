"""Bit-exact model of the on-chip PRNG: xorshift32 (Marsaglia 2003, shifts 13, 17, 5).

The replay core draws its stratified samples and the ParSa core its epsilon-greedy choices from this generator;
the HDL (:mod:`pynq_rl.overlay.hdl.common.prng`) must produce the same sequence. A seed of 0 would lock the
generator at 0, so seed 0 is mapped to the fixed non-zero ``ZERO_SEED_REPLACEMENT`` in both.
"""

from __future__ import annotations

import numpy as np

from ..spec import PRNG_ZERO_SEED, xorshift32_step

__all__ = ["xorshift32", "ZERO_SEED_REPLACEMENT"]

ZERO_SEED_REPLACEMENT = PRNG_ZERO_SEED
_MASK = 0xFFFF_FFFF


def xorshift32(seed: int, count: int) -> np.ndarray:
    """The first ``count`` outputs after seeding with ``seed`` (uint32; the state after each step is the output)."""
    if not 0 <= seed <= _MASK:
        raise ValueError(f"seed must be a 32-bit unsigned integer, not {seed!r}")
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count!r}")
    state = seed or ZERO_SEED_REPLACEMENT
    out = np.empty(count, dtype=np.uint32)
    for i in range(count):
        state = xorshift32_step(state)
        out[i] = state
    return out
