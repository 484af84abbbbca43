"""Argument checks the drivers share: every public entry point validates all of its arguments, each error naming the
argument, before it touches a register, a bank or a leaf, so a bad call leaves the core exactly as it was."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ...overlay import fixed

__all__ = ["float_array", "integer", "integer_codes", "number", "state_mapping"]


def float_array(name: str, x: Any, ndim: int | None = None, shape_hint: str = "", finite: bool = True) -> np.ndarray:
    """``x`` as a float64 array: real numbers (bools allowed), ``ndim`` dimensions if given, finite if ``finite``.

    Raises ``TypeError`` for non-numeric or complex data and ``ValueError`` for a wrong rank or a NaN/inf, each
    message starting with ``name``.
    """
    hint = f" {shape_hint}" if shape_hint else ""
    try:
        array = np.asarray(x)
    except (TypeError, ValueError) as error:  # ragged nested sequences
        raise ValueError(f"{name} must be a numeric array{hint}: {error}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must be a numeric array{hint}, not dtype {array.dtype!r}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, not {array.dtype!r}")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D{hint}, not shape {array.shape!r}")
    array = array.astype(np.float64)
    if finite:
        fixed.check_finite(name, array)
    return array


def number(name: str, x: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    """``x`` as a float in ``[lo, hi]`` (a real number, not a bool, a string or NaN), else ``ValueError``."""
    value = float(x) if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) else None
    if value is None or not lo <= value <= hi or not math.isfinite(value):  # NaN fails every comparison
        if math.isinf(lo) and math.isinf(hi):
            wanted = "a finite number"
        elif math.isinf(hi):
            wanted = f"a finite number >= {lo:g}"
        else:
            wanted = f"a number in [{lo:g}, {hi:g}]"
        raise ValueError(f"{name} must be {wanted}, not {x!r}")
    return value


def integer(name: str, x: Any, lo: int, hi: int) -> int:
    """``x`` as an int in ``[lo, hi]``: a Python or numpy integer, or a float holding a whole number exactly (a bool,
    a NaN, a 0.5 or a string is refused with ``ValueError``, never cast)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        value = int(x)
    elif isinstance(x, (float, np.floating)) and math.isfinite(x) and float(x).is_integer():
        value = int(x)
    else:
        value = None
    if value is None or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], not {x!r}")
    return value


def integer_codes(name: str, x: Any, shape: tuple[int, ...], lo: int, hi: int) -> np.ndarray:
    """``x`` as int64 codes of ``shape``, each an integer in ``[lo, hi]``: an integer array, or floats that hold
    whole numbers exactly (a NaN or a 0.5 is refused, never cast)."""
    array = (
        np.asarray(x)
        if isinstance(x, np.ndarray) and x.dtype.kind in "iu"
        else float_array(name, x, len(shape), f"of shape {shape}", finite=False)
    )
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, not {array.shape}")
    if array.dtype.kind == "f":
        whole = np.isfinite(array) & (array == np.floor(array))
        if not whole.all():
            i = np.unravel_index(int(np.argmin(whole)), shape)
            raise ValueError(f"{name} must hold whole numbers; {name}[{', '.join(map(str, i))}] is {array[i]!r}")
    if array.size and (array.min() < lo or array.max() > hi):
        raise ValueError(f"{name} must be integers in [{lo}, {hi}]; found {array.min()!r}..{array.max()!r}")
    return array.astype(np.int64)


def state_mapping(name: str, state: Any, keys: Iterable[str]) -> Mapping[str, Any]:
    """``state`` if it is a mapping holding every one of ``keys``, else ``TypeError`` / ``ValueError``."""
    if not isinstance(state, Mapping):
        raise TypeError(f"{name} must be a dict (from state_dict()), not {type(state).__name__}")
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(f"{name} lacks {missing} (not a state_dict() of this core)")
    return state
