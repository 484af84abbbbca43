"""Who may push as which actor, and which of its pushes the replay server has acknowledged.

**Identity.** An actor's pushes carry an ``actor_id`` that the server issued (:meth:`ActorSequences.issue`, the
``OpenSession`` call): 128 random bits, known only to the server and to the actor it was sent to. A push naming an id
the server never issued is refused (:class:`UnknownActor`), so no one, with or without the shared token, can push as
another actor or move another actor's de-duplication state without first learning its id. The ids travel in every
push, so off a trusted network that protection needs TLS (an eavesdropper on plaintext could read them).

**De-duplication.** An actor numbers its pushes 1, 2, 3, ... and retries a push whose reply it lost with the same
number. The server keeps the last number it acknowledged per actor: a push at or below it is a duplicate (acknowledged
again, stored once), one just above it is new, and one more than ``window`` above it is refused. The window keeps one
bogus ``sequence=2**64-1`` from turning every later push of that actor into a "duplicate"; gaps come only from pushes
whose retries ran out, so a small window is plenty.

The table is part of the server's durable state (:mod:`.recovery` writes it into ``replay.ckpt`` and rebuilds it from
the log), so a retry that straddles a restart is still recognised. An id issued after the last checkpoint that never
had a push acknowledged is not in the log: after a restart it is unknown, the actor's next push is refused with
:class:`UnknownActor`, and the client opens a new session (nothing it pushed under the old id was acknowledged, so
nothing can be stored twice).
"""

from __future__ import annotations

import operator
import secrets
from collections.abc import Iterable

__all__ = ["ActorSequences", "UnknownActor", "ActorTableFull", "ID_BYTES"]

ID_BYTES = 16
"""random bytes in an issued actor id (written as 32 hex digits)"""


class UnknownActor(ValueError):
    """A push names an actor id this server did not issue (or issued before a restart that forgot it): open a new
    session (gRPC ``NOT_FOUND``)."""


class ActorTableFull(RuntimeError):
    """The server has issued as many actor ids as it keeps (gRPC ``RESOURCE_EXHAUSTED``)."""


class ActorSequences:
    """The issued actor ids, each with its last acknowledged sequence number; the identity, duplicate and window
    checks of a push.

    Not thread-safe: the server calls it under its push lock. Pushes without an actor id are outside the scheme (never
    duplicates, never recorded); so is sequence 0 of an issued id.

    Parameters
    ----------
    window : int
        How far past an actor's last acknowledged sequence a push may jump (a new session counts from 0).
    max_actors : int
        How many ids the table holds; :meth:`issue` refuses more (an actor that restarts opens a new session, so the
        table grows with restarts: a restarted server starts from its checkpoint's).
    """

    def __init__(self, window: int, max_actors: int = 65536) -> None:
        self.window = _positive_int(window, "sequence_window")
        self.max_actors = _positive_int(max_actors, "max_actors")
        self._last: dict[str, int] = {}

    def issue(self) -> str:
        """A new actor id (32 hex digits, unguessable), with no push acknowledged yet.

        Raises
        ------
        ActorTableFull
            The table already holds ``max_actors`` ids.
        """
        if len(self._last) >= self.max_actors:
            raise ActorTableFull(
                f"the replay server has issued {self.max_actors} actor ids (max_actors): restart it from a checkpoint "
                "or raise max_actors"
            )
        actor_id = secrets.token_hex(ID_BYTES)
        self._last[actor_id] = 0
        return actor_id

    def is_duplicate(self, actor_id: str, sequence: int) -> bool:
        """True if this push was acknowledged before (a retry); False if it is new.

        Raises
        ------
        UnknownActor
            ``actor_id`` is not empty and was not issued by this server.
        ValueError
            ``sequence`` jumps more than ``window`` past the actor's last acknowledged sequence.
        """
        if not actor_id:
            return False
        last = self._last.get(actor_id)
        if last is None:
            raise UnknownActor(
                f"actor id {_shown(actor_id)} was not issued by this replay server (or not kept across its restart): "
                "open a session (ReplayClient does) and push under the id it returns"
            )
        if sequence > last + self.window:
            raise ValueError(
                f"sequence {sequence} of actor {_shown(actor_id)} jumps more than sequence_window = {self.window} "
                f"past its last acknowledged sequence {last}"
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

    def __len__(self) -> int:
        return len(self._last)


def _positive_int(value: object, name: str) -> int:
    """``value`` as an int (Python or numpy integer) >= 1, else a ``ValueError`` naming ``name``."""
    try:
        number = operator.index(value)  # type: ignore[call-overload]
    except TypeError:
        number = 0
    if number < 1:
        raise ValueError(f"{name} must be an integer >= 1, not {value!r}")
    return number


def _shown(actor_id: str) -> str:
    """An actor id as error messages show it: never the whole of a long one (messages reach logs and other hosts)."""
    return repr(actor_id if len(actor_id) <= 12 else actor_id[:8] + "...")
