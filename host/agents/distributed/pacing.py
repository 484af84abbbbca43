"""Pacing of the Ape-X loops: ``FixedRate`` (actors pushing at a set rate) and ``UpdateToInsertRatio`` (the learner
kept at a fixed number of updates per transition the actors insert).

``FixedRate`` is one schedule on the monotonic clock: each :meth:`FixedRate.wait` sleeps until the next tick. An
iteration that ran late re-bases the schedule at "now" instead of bursting through the missed ticks, so a stalled
actor does not flood the replay with a backlog when it recovers.

``UpdateToInsertRatio`` is a rate limiter in the manner of Reverb's ``SampleToInsertRatio``: without it the learner's
replay ratio (samples drawn per transition inserted) is whatever the machine's speeds make it, and so are the
learning dynamics. On a quiet 2-core machine the Ape-X learner ran 0.88 updates per actor step and ended its budget
unsolved; on a loaded one it ran 0.4-0.5 and solved. The limiter fixes the ratio, so the same arguments learn the
same way on a laptop, in CI and on a board.
"""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["FixedRate", "UpdateToInsertRatio"]


class FixedRate:
    """Ticks ``hz`` times per second from now; ``hz <= 0`` never waits (an unpaced loop)."""

    def __init__(self, hz: float) -> None:
        self.period = 1.0 / hz if hz > 0 else 0.0
        self._next = time.monotonic()

    def wait(self) -> None:
        """Sleep until the next tick (return at once when unpaced or already late, re-basing the schedule)."""
        if not self.period:
            return
        self._next += self.period
        delay = self._next - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            self._next = time.monotonic()


class UpdateToInsertRatio:
    """Allows the learner's ``n``-th update only once ``n <= ratio * inserted + slack``.

    ``inserted`` counts the transitions inserted into the replay since this limiter was made, read through
    ``read_inserted`` (the replay server's monotone ``inserted_transitions`` counter) only when the budget runs out.
    A counter that goes backwards means the server restarted (its counters start at 0 again): the new reading is
    counted as inserted since that restart, so the total keeps growing. ``slack`` is the head start a learner gets
    on data already stored (the initial ``learning_starts`` fill, or the replay a restarted learner finds).
    ``ratio <= 0`` disables the limit.

    Parameters
    ----------
    ratio : float
        Updates allowed per inserted transition (samples per insert = ``ratio * batch_size``).
    read_inserted : callable
        Returns the server's inserted-transitions counter.
    slack : float
        Updates allowed before any insert.
    poll_s : float
        Sleep between counter reads while the learner is ahead.
    """

    def __init__(self, ratio: float, read_inserted: Callable[[], int], slack: float = 0.0,
                 poll_s: float = 0.01) -> None:
        if ratio < 0 or slack < 0 or poll_s <= 0:
            raise ValueError(f"ratio and slack must be >= 0 and poll_s > 0, not {ratio!r}, {slack!r}, {poll_s!r}")
        self.ratio, self.slack, self.poll_s = float(ratio), float(slack), float(poll_s)
        self._read = read_inserted
        self._last = int(read_inserted()) if self.ratio > 0 else 0
        self.inserted = 0
        """transitions inserted since the limiter was made"""
        self.updates = 0
        """updates recorded with :meth:`record_update`"""
        self.waited_s = 0.0
        """total time :meth:`wait` slept"""

    def _refresh(self) -> None:
        now = int(self._read())
        self.inserted += now - self._last if now >= self._last else now
        self._last = now

    def allowed(self) -> bool:
        """Whether one more update fits the budget (with the inserts counted so far)."""
        return self.ratio <= 0 or self.updates + 1 <= self.ratio * self.inserted + self.slack

    def wait(self, timeout_s: float) -> bool:
        """Block until one more update is allowed; False if ``timeout_s`` passed first (actors stalled)."""
        if self.allowed():
            return True
        start = time.monotonic()
        self._refresh()
        while not self.allowed():
            if time.monotonic() - start >= timeout_s:
                self.waited_s += time.monotonic() - start
                return False
            time.sleep(self.poll_s)
            self._refresh()
        self.waited_s += time.monotonic() - start
        return True

    def record_update(self) -> None:
        """Count one update the learner made."""
        self.updates += 1
