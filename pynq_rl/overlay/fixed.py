"""Q-format fixed-point arithmetic in numpy int64, shared by every bit-exact model.

One rounding rule is used everywhere, in the models, in the HDL and on the host: **round half up** (add half an
LSB, then shift right arithmetically; ``floor(x + 1/2)`` for floats). It costs a constant on a DSP48's carry input
where round-half-even would need a sticky-bit compare, and it is what OPaL's ``quant_mul`` does.

Out-of-range results **saturate** to the format's limits and report it; nothing ever wraps.

The elementwise primitives (:func:`rshift_round`, :func:`clamp`) use only operators and ``np.minimum`` /
``np.maximum``, so they work on Python ints, numpy scalars and arrays alike and compile unchanged under numba;
a model may jit them without importing anything but numpy here.

This module imports only numpy and the spec's :class:`QFormat` (it runs on the board too).
"""

from __future__ import annotations

import numpy as np

from .spec import QFormat

__all__ = ["quantize", "dequantize", "saturate", "rshift_round", "clamp", "mul_shift", "check_finite"]


def rshift_round(x, shift: int):
    """``round_half_up(x / 2**shift)`` for integers: add half an LSB, then shift right arithmetically.

    ``shift`` must be >= 1 (a shift of 0 needs no rounding; call sites know their shift statically).
    """
    return (x + (1 << (shift - 1))) >> shift


def clamp(x, lo: int, hi: int):
    """Clamp ``x`` into ``[lo, hi]`` (the saturation step; compare the result with ``x`` for the flag)."""
    return np.minimum(np.maximum(x, lo), hi)


def saturate(codes: np.ndarray, fmt: QFormat) -> tuple[np.ndarray, bool]:
    """Saturate integer ``codes`` to ``fmt``; return the codes and whether any of them saturated."""
    codes = np.asarray(codes, dtype=np.int64)
    clamped = clamp(codes, fmt.min_code, fmt.max_code)
    return clamped, bool(np.any(clamped != codes))


def mul_shift(a, b, shift: int, fmt: QFormat | None = None):
    """Full-width product ``a * b`` rounded half up to ``shift`` fewer fractional bits, optionally saturated.

    The product is formed at full width first (int64: the operands' widths must sum to at most 62 bits), which is
    what the HDL must do too (MyHDL converts ``(a*b) >> s`` to Verilog that truncates the product before the shift;
    docs/design.md, MyHDL and synthesis lessons measured here).
    Returns the result, or ``(result, saturated)`` when ``fmt`` is given.
    """
    product = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    result = rshift_round(product, shift) if shift > 0 else product
    if fmt is None:
        return result
    return saturate(result, fmt)


def check_finite(name: str, x: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` and the first offending index if ``x`` holds NaN or infinity."""
    bad = ~np.isfinite(x)
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be finite; {name}{list(index)} is {x[index]!r}")


def quantize(x, fmt: QFormat) -> tuple[np.ndarray, bool]:
    """Float values to integer codes of ``fmt``: ``floor(x * 2**frac + 1/2)``, saturated.

    Returns ``(codes, saturated)``. NaN or infinity raise ``ValueError`` (there is no code for them). The float64
    product is exact for the formats used here (``|x| * 2**frac < 2**53``).
    """
    x = np.asarray(x, dtype=np.float64)
    check_finite("value", x)
    scaled = np.floor(x * (2.0**fmt.frac) + 0.5)
    # Clip in float first so values far beyond int64 still saturate instead of wrapping in the cast.
    clipped = np.clip(scaled, fmt.min_code, fmt.max_code)
    return clipped.astype(np.int64), bool(np.any(clipped != scaled))


def dequantize(codes, fmt: QFormat) -> np.ndarray:
    """Integer codes of ``fmt`` to float64 values (exact)."""
    return np.asarray(codes, dtype=np.int64).astype(np.float64) * fmt.lsb
