"""Rung 1 of the verification ladder: fixed-point primitives (rounding, saturation, signedness)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pynq_rl.overlay import fixed
from pynq_rl.overlay.spec import QFormat

formats = st.builds(lambda w, f, s: QFormat(w, min(f, w), s), st.integers(2, 40), st.integers(0, 30), st.booleans())


@given(st.integers(-(1 << 40), 1 << 40), st.integers(1, 20))
def test_rshift_round_is_round_half_up(x, shift):
    assert fixed.rshift_round(x, shift) == math.floor(x / 2**shift + 0.5)


@given(formats, st.floats(-1e6, 1e6, allow_nan=False))
def test_quantize_rounds_half_up_and_saturates(fmt, x):
    codes, saturated = fixed.quantize(x, fmt)
    exact = math.floor(x * 2**fmt.frac + 0.5)
    assert int(codes) == min(max(exact, fmt.min_code), fmt.max_code)
    assert saturated == (exact != int(codes))
    if not saturated:
        assert abs(fixed.dequantize(codes, fmt) - x) <= fmt.lsb / 2


@given(formats)
def test_format_limits(fmt):
    assert fmt.min_code == (-(1 << (fmt.width - 1)) if fmt.signed else 0)
    assert fmt.max_code == ((1 << (fmt.width - 1)) - 1 if fmt.signed else (1 << fmt.width) - 1)
    codes, sat = fixed.saturate(np.array([fmt.min_code - 1, fmt.max_code + 1]), fmt)
    assert sat and codes.tolist() == [fmt.min_code, fmt.max_code]


def test_saturation_never_wraps_for_huge_values():
    fmt = QFormat(32, 16)
    codes, sat = fixed.quantize(np.array([1e300, -1e300]), fmt)
    assert sat and codes.tolist() == [fmt.max_code, fmt.min_code]


@given(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(0, 1 << 24), st.integers(1, 24))
@example(a=-2_147_483_179, b=4_194_305, shift=1)  # a * b needs 54 bits: a float64 reference rounds it
def test_mul_shift_matches_exact_rounding(a, b, shift):
    """Against the exact rational a * b / 2**shift + 1/2: products reach 55 bits, past float64's 53."""
    assert fixed.mul_shift(a, b, shift) == math.floor(Fraction(a * b, 2**shift) + Fraction(1, 2))


def test_mul_shift_saturates_with_flag():
    result, sat = fixed.mul_shift(1 << 30, 1 << 20, 16, QFormat(32, 16))
    assert sat and result == (1 << 31) - 1


def test_quantize_rejects_nan_and_inf():
    with pytest.raises(ValueError, match=r"must be finite; value\[1\] is nan"):
        fixed.quantize(np.array([0.0, np.nan]), QFormat(16, 8))
    with pytest.raises(ValueError, match="must be finite"):
        fixed.quantize(np.inf, QFormat(16, 8))


def test_unsigned_format_saturates_negative_to_zero():
    codes, sat = fixed.quantize(-0.5, QFormat(8, 4, signed=False))
    assert sat and int(codes) == 0


def test_qformat_rejects_impossible_widths():
    with pytest.raises(ValueError, match="width must be 1..62"):
        QFormat(63, 0)
