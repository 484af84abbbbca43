"""Pacing of the Ape-X loops: ``FixedRate`` (actors pushing at a set rate) and ``ReplayRatio`` (learner and actors
kept at a fixed number of learner updates per transition inserted).

``FixedRate`` is one schedule on the monotonic clock: each :meth:`FixedRate.wait` sleeps until the next tick. An
iteration that ran late re-bases the schedule at "now" instead of bursting through the missed ticks, so a stalled
actor does not flood the replay with a backlog when it recovers.

``ReplayRatio`` is a two-sided rate limiter in the manner of Reverb's ``SampleToInsertRatio``: without it the replay
ratio (samples drawn per transition inserted) is whatever the machine's speeds make it, and so are the learning
dynamics. On a quiet 2-core machine the Ape-X learner ran 0.88 updates per actor step and ended its budget unsolved;
on a loaded one it ran 0.4-0.5 and solved; with other jobs on the cores it fell to 0.1. The limiter holds the
learner back when it runs ahead of the actors and the actors when they run ahead of the learner, so the same
arguments learn the same way on a laptop, in CI and on a board.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["FixedRate", "ReplayRatio"]


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


class ReplayRatio:
    """Keeps learner updates ``U`` and inserted transitions ``I`` near ``U = ratio * (I - min_inserted)``.

    Both counters are the replay server's own (``update_calls``, and ``inserted_transitions`` for the learner or
    ``pushed_transitions``, which also counts the server's insertion queue, for the actors), read through
    ``read_stats``; every process then sees the same line, a restarted learner or actor included. A restarted
    server starts both counters at 0 again, so the line restarts with it. The learner may run ``tolerance``
    updates ahead of the line, the actors ``tolerance / ratio`` transitions ahead; past that they wait. No deadlock:
    both wait at once only if ``2 * tolerance < ratio * n`` for a push of ``n`` transitions, which the constructor
    refuses for ``n`` up to ``max_push``. ``ratio == 0`` disables the limit (nothing waits, nothing is read).

    Parameters
    ----------
    ratio : float
        Learner updates per inserted transition (samples per insert = ``ratio * batch_size``).
    min_inserted : int
        Transitions the replay holds before learning starts (``learning_starts``).
    tolerance : float
        Updates either side may run ahead of the line.
    read_stats : callable
        Returns the replay server's stats dict (:meth:`~.client.ReplayClient.stats`).
    max_push : int
        The largest push an actor makes (checked against the deadlock condition).
    poll_s : float
        Sleep between reads while waiting.
    """

    def __init__(
        self,
        ratio: float,
        min_inserted: int,
        tolerance: float,
        read_stats: Callable[[], dict],
        max_push: int = 1,
        poll_s: float = 0.01,
    ) -> None:
        if not (ratio >= 0 and tolerance >= 0 and poll_s > 0):
            raise ValueError(
                f"ratio and tolerance must be >= 0 and poll_s > 0, not {ratio!r}, {tolerance!r}, {poll_s!r}"
            )
        if ratio > 0 and 2 * tolerance < ratio * max_push + 1:
            raise ValueError(
                f"tolerance {tolerance!r} is too small for pushes of {max_push} at ratio {ratio!r}: "
                f"learner and actors could both wait (need 2 * tolerance >= ratio * push + 1)"
            )
        self.ratio, self.min_inserted, self.tolerance = float(ratio), int(min_inserted), float(tolerance)
        self.poll_s = float(poll_s)
        self._read = read_stats
        self.server_updates = self.server_inserted = self.server_pushed = 0
        """the server's counters at the last read"""
        self.local_updates = 0
        """updates recorded since the last read (the server has them too; this spares a read per update)"""
        self.waited_s = 0.0
        """total time spent waiting"""
        self.reads = 0
        """counter reads so far"""

    def _refresh(self) -> None:
        stats = self._read()
        self.reads += 1
        self.server_updates = int(stats.get("update_calls", 0))
        self.server_inserted = int(stats.get("inserted_transitions", 0))
        self.server_pushed = int(stats.get("pushed_transitions", 0))
        self.local_updates = 0

    def update_allowed(self) -> bool:
        """Learner side: whether one more update stays within ``tolerance`` of the line (counters as last read)."""
        updates = self.server_updates + self.local_updates + 1
        return updates <= self.ratio * (self.server_inserted - self.min_inserted) + self.tolerance

    def insert_allowed(self, n: int) -> bool:
        """Actor side: whether ``n`` more transitions stay within ``tolerance`` of the line (counters as last read)."""
        return self.ratio * (self.server_pushed + n - self.min_inserted) <= self.server_updates + self.tolerance

    def _wait(self, allowed: Callable[[], bool], timeout_s: float) -> bool:
        start = time.monotonic()
        self._refresh()
        while not allowed():
            if time.monotonic() - start >= timeout_s:
                self.waited_s += time.monotonic() - start
                return False
            time.sleep(self.poll_s)
            self._refresh()
        self.waited_s += time.monotonic() - start
        return True

    def wait_to_update(self, timeout_s: float) -> bool:
        """Learner: block until one more update is allowed; False after ``timeout_s`` (the actors stalled)."""
        if self.ratio <= 0 or self.update_allowed():
            return True
        return self._wait(self.update_allowed, timeout_s)

    def record_update(self) -> None:
        """Learner: count one update made (and sent to the server) since the last read."""
        self.local_updates += 1

    def wait_to_insert(self, n: int, timeout_s: float) -> bool:
        """Actor: read the counters and block until a push of ``n`` is allowed; False after ``timeout_s``."""
        if self.ratio <= 0:
            return True
        return self._wait(lambda: self.insert_allowed(n), timeout_s)
