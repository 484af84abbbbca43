"""The range of every numeric option of the agents, checked before any environment, overlay or run directory exists.

Each agent declares one table, field name -> :class:`Bound`, beside its ``Args`` (``BOUNDS`` in ``ppo_args``,
``dqn``, ``sarsa`` and ``apex_args``), and its ``check_args`` starts with :func:`check_bounds`. That refuses:

* NaN always, and an infinity unless the bound says what it means (``target_return = inf``: never stop on it);
* a value outside the bound, with the bound in the message (``learning_rate must be a number in (0, 1], not inf``),
  as a :class:`~.checks.FieldValueError` naming the field, which the command line rewords with the flag the user typed;
* a whole-number field given a value that is not one (the Python API; argparse already refuses ``--steps 1.5``).

A numeric field of ``Args`` (``int``, ``float``, ``X | None`` of them, ``tuple[int, ...]``) that has no bound is a
programming error (``TypeError`` on every check), so a new option cannot skip the check.

The upper bounds are where a larger value would not make a bigger or longer run but a failing one: a step counter past
float64's exact integers (:data:`COUNT_MAX`, also the limit of JSON readers), a batch larger than the replay core can
sample in one operation (:data:`SAMPLE_MAX`), a learning rate above 1 that turns the weights into infinities a few
updates later, a width or an environment count whose arrays do not fit in memory. Build-specific limits (the ParSa
core's keys and fraction bits, the replay core's leaves) are checked by the drivers once the overlay is known, still
before the run directory is made.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing
from collections.abc import Mapping
from typing import Any

from ....overlay.spec import ReplaySpec
from .checks import FieldValueError
from .options import without_none
from .run import is_computed

__all__ = [
    "Bound",
    "check_bounds",
    "numeric_fields",
    "COUNT_MAX",
    "SAMPLE_MAX",
    "count",
    "fraction",
    "positive",
    "non_negative",
]

COUNT_MAX = 2**53
"""the largest count of steps, episodes or updates: float64 (so every JSON reader) holds integers exactly up to it"""
SAMPLE_MAX: int = ReplaySpec.max_count
"""the largest batch one sample operation of the replay core returns (its build's ``max_count``)"""
SCALE_MAX = 1e6
"""the largest coefficient, clip bound or tolerance: far past any useful one, small enough that products stay finite"""


@dataclasses.dataclass(frozen=True)
class Bound:
    """The values a numeric field accepts: ``low`` .. ``high``, each end closed unless ``low_open``/``high_open``.

    ``whole`` asks for an integer; ``infinite`` lets ``+inf`` through above ``high`` (its meaning goes into ``note``).
    ``note`` is appended to the refusal (``"0: only at the end"``).
    """

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    whole: bool = False
    infinite: bool = False
    note: str = ""

    def admits(self, value: float) -> bool:
        """Whether ``value`` lies in the bound (NaN never does)."""
        if math.isnan(value):
            return False
        if value == math.inf and self.infinite:
            return True
        above_low = value > self.low if self.low_open else value >= self.low
        below_high = value < self.high if self.high_open else value <= self.high
        return above_low and below_high

    def describe(self) -> str:
        """The whole bound: ``an integer in [1, 2**53]``, ``a number in (0, 1]`` (and its note)."""
        interval = (
            f"{'(' if self.low_open else '['}{_shown(self.low)}, {_shown(self.high)}{')' if self.high_open else ']'}"
        )
        return self._with_note(f"{self._kind()} in {interval}" + (" or inf" if self.infinite else ""))

    def refusal(self, value: Any) -> str:
        """What ``value`` should have been: the side of the bound it is past (``> 0``, ``<= 1000000``), the whole
        interval for a fraction-like bound (``high <= 1``) and for what is not a number at all (NaN, a string)."""
        number = _real(value)
        if number is None or math.isnan(number) or self.high <= 1:
            return self.describe()
        if self.whole and not isinstance(value, numbers.Integral):
            return self._with_note(f"an integer >= {_shown(self.low)}")
        if number < self.low or (self.low_open and number == self.low):
            return self._with_note(f"{self._kind()} {'>' if self.low_open else '>='} {_shown(self.low)}")
        return self._with_note(f"{self._kind()} {'<' if self.high_open else '<='} {_shown(self.high)}")

    def _kind(self) -> str:
        return "an integer" if self.whole else "a number"

    def _with_note(self, text: str) -> str:
        return f"{text} ({self.note})" if self.note else text


def count(low: int = 1, high: int = COUNT_MAX, note: str = "") -> Bound:
    """An integer in ``[low, high]`` (a count of steps, envs, layers... ``low`` = 0 where 0 means none)."""
    return Bound(low, high, whole=True, note=note)


def fraction(low_open: bool = False, note: str = "") -> Bound:
    """A number in ``[0, 1]`` (``(0, 1]`` with ``low_open``): a discount, a probability, a mixing rate."""
    return Bound(0.0, 1.0, low_open=low_open, note=note)


def positive(high: float = SCALE_MAX, note: str = "") -> Bound:
    """A number in ``(0, high]``."""
    return Bound(0.0, high, low_open=True, note=note)


def non_negative(high: float = SCALE_MAX, note: str = "") -> Bound:
    """A number in ``[0, high]``."""
    return Bound(0.0, high, note=note)


def numeric_fields(args_cls: type) -> dict[str, bool]:
    """The option fields of ``args_cls`` that hold numbers: name -> whether it is a tuple of them
    (``hidden_sizes``); computed fields (filled at run time) are left out."""
    hints = typing.get_type_hints(args_cls)
    fields = {}
    for f in dataclasses.fields(args_cls):
        if is_computed(f):
            continue
        kind = without_none(hints[f.name])
        if kind in (int, float):
            fields[f.name] = False
        elif typing.get_origin(kind) is tuple and typing.get_args(kind)[1:] == (Ellipsis,):
            if typing.get_args(kind)[0] in (int, float):
                fields[f.name] = True
    return fields


def check_bounds(args: Any, bounds: Mapping[str, Bound]) -> None:
    """Refuse any numeric field of ``args`` (a dataclass instance) outside its bound in ``bounds``.

    Raises
    ------
    FieldValueError
        The first field (in declaration order) whose value is not a number, is NaN, or is out of its bound; the
        message gives the bound and names the field.
    TypeError
        A numeric field of ``args`` has no entry in ``bounds`` (the table is incomplete: a programming error).
    """
    fields = numeric_fields(type(args))
    missing = [name for name in fields if name not in bounds]
    if missing:
        raise TypeError(f"{type(args).__qualname__} fields without a bound: {', '.join(missing)}")
    for name, is_tuple in fields.items():
        value = getattr(args, name)
        if value is None:
            continue  # an optional field's None has its own meaning (the docstring says which)
        for item in value if is_tuple else (value,):
            if not _within(item, bounds[name]):
                shown = tuple(value) if is_tuple else value
                what = f"each of {name}" if is_tuple else name
                raise FieldValueError(f"{what} must be {bounds[name].refusal(item)}, not {shown!r}", name)


def _real(value: Any) -> float | None:
    """``value`` as a float (an integer too large for one as an infinity), or None unless it is a real number (a bool
    is not one)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral) and abs(int(value)) >= 2**1000:
        return math.copysign(math.inf, int(value))
    return float(value)


def _within(value: Any, bound: Bound) -> bool:
    """Whether ``value`` is a real number that ``bound`` admits (an integer, where the bound asks for one)."""
    number = _real(value)
    if number is None or (bound.whole and not isinstance(value, numbers.Integral)):
        return False
    return bound.admits(number)


def _shown(number: float) -> str:
    """A bound's end as messages show it: ``2**53`` for a large power of two, else the shortest repr."""
    if number != int(number):
        return repr(number)
    whole, sign = abs(int(number)), "-" if number < 0 else ""
    if whole >= 1 << 20 and whole & (whole - 1) == 0:
        return f"{sign}2**{whole.bit_length() - 1}"
    return f"{sign}{whole}"
