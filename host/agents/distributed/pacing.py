"""``FixedRate``: paces a loop at a fixed number of iterations per second (actors pushing at a set rate).

One schedule on the monotonic clock: each :meth:`FixedRate.wait` sleeps until the next tick. An iteration that ran
late re-bases the schedule at "now" instead of bursting through the missed ticks, so a stalled actor does not flood
the replay with a backlog when it recovers.
"""
from __future__ import annotations

import time

__all__ = ["FixedRate"]


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
