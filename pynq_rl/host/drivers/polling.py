"""Bounded polling: every wait on the PL has a deadline (the stock PYNQ waits loop forever if the PL hangs).

A deadline is kept in the time the PL runs in. On a board that is the wall clock (:class:`WallClockDeadline`). On the
``rtl`` backend the PL is a MyHDL simulation that advances only while the driver talks to it, thousands of times
slower than hardware and at whatever speed the host's load allows, so a wall-clock deadline there either fires on a
busy machine or has to be so long that a hung core takes minutes to report. The simulation's deadline is counted in
its own clock cycles instead (:class:`CycleDeadline`): an operation gets a budget derived from the cycles it is known
to take, fires after the same simulated time whatever the host does, and never sleeps: the simulation advances only
while the driver talks to it, or while the deadline lets simulated time pass (``idle``). A simulated wait first lets
the operation's known cycle count pass, then polls once per ``poll_cycles`` (a poll from Python on the board's ARM
takes a microsecond or more), so the rtl backend makes the register accesses a board would, not one per bus
turnaround.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["CycleDeadline", "Deadline", "WallClockDeadline", "check_timeout", "wait_until"]

_POLL_S = 20e-6
T = TypeVar("T")


def check_timeout(timeout_s: float | str) -> float:
    """``timeout_s`` as a float, or ``ValueError`` unless it is a finite number > 0 (NaN would never time out).

    A string is converted as ``float()`` converts it (``pynq-rl ... --timeout 5``)."""
    try:
        value = float(timeout_s)
    except (TypeError, ValueError):
        raise ValueError(f"timeout_s must be a number of seconds > 0, not {timeout_s!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"timeout_s must be a finite number of seconds > 0, not {timeout_s!r}")
    return value


class Deadline(Protocol):
    """When a wait gives up, in the PL's own time."""

    def expired(self) -> bool:
        """True once the deadline has passed."""

    def begin(self) -> None:
        """Called before the first poll of a wait (a simulated deadline lets the operation's known cycles pass)."""

    def pause(self) -> None:
        """Called between two polls (a wall-clock wait yields the CPU; a simulated one lets a poll interval pass)."""

    def describe(self) -> str:
        """How long was waited, for the ``TimeoutError`` message ("5.0 s", "12,288 simulated cycles")."""


class WallClockDeadline:
    """A deadline ``timeout_s`` seconds from now on the host's monotonic clock (the board backend; ``emu``)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = check_timeout(timeout_s)
        self._end = time.monotonic() + self.timeout_s

    def expired(self) -> bool:
        return time.monotonic() > self._end

    def begin(self) -> None:
        pass  # a board's first polls cost less than a sleep's granularity; emu is done already

    def pause(self) -> None:
        time.sleep(_POLL_S)

    def describe(self) -> str:
        return f"{self.timeout_s} s"


class CycleDeadline:
    """A deadline ``cycles`` clock cycles from now on a simulated PL clock.

    Parameters
    ----------
    clock : callable
        Returns the simulation's cycle count (it must advance while the waiting code polls).
    cycles : int
        The budget, in cycles of that clock.
    idle : callable, optional
        ``idle(n)`` lets ``n`` cycles pass in the simulation without a bus access (the device keeps its DMAs
        moving). Without it the waiting code's polls are all that advances the clock.
    expected : int
        Cycles the operation is known to take: :meth:`begin` lets them pass before the first poll (once per
        deadline: a later wait under the same deadline starts polling at once).
    poll_cycles : int
        Cycles :meth:`pause` lets pass between two polls.
    """

    def __init__(
        self,
        clock: Callable[[], int],
        cycles: int,
        idle: Callable[[int], None] | None = None,
        expected: int = 0,
        poll_cycles: int = 1,
    ) -> None:
        if cycles < 1:
            raise ValueError(f"a cycle budget must be >= 1, not {cycles!r}")
        if poll_cycles < 1 or expected < 0:
            raise ValueError(f"poll_cycles must be >= 1 and expected >= 0, not {poll_cycles!r}, {expected!r}")
        self.clock, self.cycles = clock, int(cycles)
        self._end = clock() + self.cycles
        self._idle, self._expected, self._poll_cycles = idle, min(int(expected), self.cycles), int(poll_cycles)

    def expired(self) -> bool:
        return self.clock() > self._end

    def begin(self) -> None:
        if self._idle is not None and self._expected:
            self._idle(self._expected)
        self._expected = 0

    def pause(self) -> None:
        if self._idle is not None:
            self._idle(self._poll_cycles)

    def describe(self) -> str:
        return f"{self.cycles:,} simulated cycles"


def wait_until(poll: Callable[[], T], done: Callable[[T], bool], deadline: Deadline, describe: Callable[[T], str]) -> T:
    """Call ``poll()`` until ``done(value)``; return that value, or raise ``TimeoutError`` once ``deadline`` expires.

    The message is ``describe(value)`` of the last value polled, the one that was found not done: reading the
    hardware again to describe it could report a state the wait never saw (a core that finished in between).
    """
    deadline.begin()
    while True:
        value = poll()
        if done(value):
            return value
        if deadline.expired():
            raise TimeoutError(f"timed out after {deadline.describe()}: {describe(value)}")
        deadline.pause()
