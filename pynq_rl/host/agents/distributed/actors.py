"""Which pushes of each actor the replay server has acknowledged: the table that makes a retried push harmless.

An actor numbers its pushes 1, 2, 3, ... and retries a push whose reply it lost with the same number. The server keeps
the last number it acknowledged per actor: a push at or below it is a duplicate (acknowledged again, stored once),
one just above it is new, and one more than ``window`` above it is refused. The window keeps one bogus
``sequence=2**64-1`` from turning every later push of that actor into a "duplicate"; gaps come only from pushes whose
retries ran out, so a small window is plenty.

The table is part of the server's durable state (:mod:`.recovery` writes it into ``replay.ckpt`` and rebuilds it from
the log), so a retry that straddles a restart is still recognised.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

__all__ = ["ActorSequences"]


class ActorSequences:
    """The last acknowledged sequence number of each actor, and the duplicate / window checks against it.

    Not thread-safe: the server calls it under its push lock. Pushes without an actor id, or with sequence 0, are
    outside the scheme (never duplicates, never recorded).

    Parameters
    ----------
    window : int
        How far past an actor's last acknowledged sequence a push may jump (the first push of an actor counts from 0).
    """

    def __init__(self, window: int) -> None:
        try:
            self.window = operator.index(window)  # Python and numpy integers; not floats or strings
        except TypeError:
            self.window = 0
        if self.window < 1:
            raise ValueError(f"sequence_window must be an integer >= 1, not {window!r}")
        self._last: dict[str, int] = {}

    def is_duplicate(self, actor_id: str, sequence: int) -> bool:
        """True if this push was acknowledged before (a retry); False if it is new.

        Raises
        ------
        ValueError
            ``sequence`` jumps more than :attr:`window` past the actor's last acknowledged sequence.
        """
        if not actor_id:
            return False
        last = self._last.get(actor_id, 0)
        if sequence > last + self.window:
            raise ValueError(
                f"sequence {sequence} of actor {actor_id!r} jumps more than sequence_window = {self.window} past its "
                f"last acknowledged sequence {last}"
            )
        return bool(sequence) and sequence <= last

    def acknowledge(self, actor_id: str, sequence: int) -> None:
        """Record that the push ``(actor_id, sequence)`` was acknowledged (logged, or re-applied from the log)."""
        if actor_id and sequence:
            self._last[actor_id] = int(sequence)

    def items(self) -> list[tuple[str, int]]:
        """``(actor_id, last acknowledged sequence)`` pairs, sorted by actor id (the checkpoint's order)."""
        return sorted(self._last.items())

    def restore(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Replace the table by ``pairs`` (from a checkpoint)."""
        self._last = {str(actor): int(sequence) for actor, sequence in pairs}
