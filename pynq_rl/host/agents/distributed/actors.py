"""Who may push as which actor, which of its pushes the replay server has acknowledged, and how long an actor id that
was never used is kept.

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

**Sessions.** An id is *unused* from its issue until a push under it (sequence >= 1) is acknowledged, and *live* from
then on. ``ReplayClient`` opens its session just before its first push, so an unused id belongs to an actor on its way
to that push, or to no one (an ``OpenSession`` reply that was lost, a client that went away, a flood of calls). Only
live ids carry de-duplication state, so unused ones are bounded three ways, and opening sessions cannot fill the table:

* an unused id expires ``session_ttl_s`` after its issue (a push under it is then refused as :class:`UnknownActor`);
* each peer (the caller's address without its port) holds at most ``max_unused_per_peer`` unused ids: one more evicts
  that peer's oldest, so a flood churns its own ids and no one else's;
* each peer opens at most ``sessions_per_s`` sessions a second, in bursts of up to ``session_burst`` (a token bucket);
  beyond that :meth:`ActorSequences.issue` refuses with :class:`SessionRateLimited`, which says when to retry.

A full table reclaims expired ids, then the oldest unused one, before it refuses: :class:`ActorTableFull` means that
``max_actors`` ids are live. Expired ids are dropped lazily (at an issue, or at a push under one), oldest first, in O(1)
amortised per id.

**Forgetting an unused id is always safe.** Nothing pushed under it was acknowledged, so nothing under it is stored:
the actor's push is refused with :class:`UnknownActor`, its client opens a new session and pushes again, and nothing
can be stored twice.

**Durability.** The live ids are part of the server's durable state (:mod:`.recovery` writes them into
``replay.ckpt`` and the log re-acknowledges the pushes after it), so a retry that straddles a restart is still
recognised. Unused ids are not written, for the reason above: after a restart they are unknown, exactly like an id
issued after the last checkpoint that never had a push acknowledged (the log holds nothing under it). A table read
from an older checkpoint that kept unused ids (last sequence 0) drops them on restore.
"""

from __future__ import annotations

import collections
import math
import numbers
import operator
import secrets
import time
from collections.abc import Callable, Iterable
from typing import SupportsIndex

__all__ = [
    "ActorSequences",
    "UnknownActor",
    "ActorTableFull",
    "SessionRateLimited",
    "ID_BYTES",
    "LOCAL_PEER",
    "DEFAULT_MAX_ACTORS",
    "DEFAULT_SESSION_TTL_S",
    "DEFAULT_MAX_UNUSED_PER_PEER",
    "DEFAULT_SESSIONS_PER_S",
    "DEFAULT_SESSION_BURST",
]

ID_BYTES = 16
"""random bytes in an issued actor id (written as 32 hex digits)"""
LOCAL_PEER = "local"
"""the peer of sessions opened through the Python API (:meth:`~.server.ReplayServer.open_session` without a peer)"""

DEFAULT_MAX_ACTORS = 65536
"""ids the table holds; only live ones (an acknowledged push) can fill it"""
DEFAULT_SESSION_TTL_S = 300.0
"""lifetime of an unused id. A client opens its session just before its first push and retries that push for at most
its ``retry_s`` (60 s by default) in attempts of ``timeout_s`` (10 s), so a live actor's first push arrives within
about 70 s of the issue, or the actor has given up: 300 s is four times that. An id expired too early costs only a
``NOT_FOUND`` and a new session, never a duplicate."""
DEFAULT_MAX_UNUSED_PER_PEER = 64
"""unused ids one peer may hold: actors on one host open and push within milliseconds of each other, so only those
between their ``OpenSession`` and their first push's acknowledgement count"""
DEFAULT_SESSIONS_PER_S = 10.0
"""sessions one peer may open a second (beyond its burst): a live actor opens one when it starts and one after each
server restart, so a host whose actors all reopen at once (up to 64 + 600 of them) gets through within the client's
60 s retry budget, while a peer that pushes under every id it opens needs 1.8 hours to fill 65,536 ids"""
DEFAULT_SESSION_BURST = 64
"""sessions one peer may open at once: a host starting (or reconnecting) that many actors waits for nothing"""


class UnknownActor(ValueError):
    """A push names an actor id this server did not issue (or issued before a restart that forgot it, or that expired
    unused): open a new session (gRPC ``NOT_FOUND``)."""


class ActorTableFull(RuntimeError):
    """Every id the server keeps belongs to a live session (gRPC ``RESOURCE_EXHAUSTED``)."""


class SessionRateLimited(RuntimeError):
    """This peer opened sessions faster than ``sessions_per_s``: retry after ``retry_after_s`` seconds (gRPC
    ``RESOURCE_EXHAUSTED``, which ``ReplayClient`` retries)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ActorSequences:
    """The issued actor ids, each with its last acknowledged sequence number; the identity, duplicate and window
    checks of a push; the lifetime, per-peer and rate bounds on ids not used yet.

    Not thread-safe: the server calls it under its push lock. Pushes without an actor id are outside the scheme (never
    duplicates, never recorded); so is sequence 0 of an issued id (it leaves the id unused).

    Parameters
    ----------
    window : int
        How far past an actor's last acknowledged sequence a push may jump (a new session counts from 0).
    max_actors : int
        How many ids the table holds. Unused ids are reclaimed to make room, so only live ones fill it (they grow
        with actor restarts: each opens a new session); a restarted server starts from its checkpoint's live ids.
    session_ttl_s : float
        How long an unused id is kept after its issue (:data:`DEFAULT_SESSION_TTL_S` says why 300 s).
    max_unused_per_peer : int
        Unused ids one peer may hold; issuing one more evicts its oldest.
    sessions_per_s : float or None
        Sessions one peer may open a second once its burst is spent; None: no rate limit.
    session_burst : int
        Sessions one peer may open at once (the token bucket's size).
    clock : callable
        Monotonic seconds (``time.monotonic``; tests pass a fake one).
    """

    def __init__(
        self,
        window: int,
        max_actors: int = DEFAULT_MAX_ACTORS,
        session_ttl_s: float = DEFAULT_SESSION_TTL_S,
        max_unused_per_peer: int = DEFAULT_MAX_UNUSED_PER_PEER,
        sessions_per_s: float | None = DEFAULT_SESSIONS_PER_S,
        session_burst: int = DEFAULT_SESSION_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = _positive_int(window, "sequence_window")
        self.max_actors = _positive_int(max_actors, "max_actors")
        self.session_ttl_s = _positive_number(session_ttl_s, "session_ttl_s")
        self.max_unused_per_peer = _positive_int(max_unused_per_peer, "max_unused_per_peer")
        self.session_burst = _positive_int(session_burst, "session_burst")
        self.sessions_per_s = None if sessions_per_s is None else _positive_number(sessions_per_s, "sessions_per_s")
        self._clock = clock
        self._last: dict[str, int] = {}  # every id held: a live one's last acknowledged sequence, 0 for an unused one
        self._unused = _UnusedIds()
        self._rate = None if self.sessions_per_s is None else _PeerRate(self.sessions_per_s, self.session_burst, clock)
        self._counts = {"sessions_expired": 0, "sessions_evicted": 0, "sessions_refused": 0}

    # -- sessions -----------------------------------------------------------------------------------------------------
    def issue(self, peer: str = LOCAL_PEER) -> str:
        """A new actor id (32 hex digits, unguessable) for a caller at ``peer``, with no push acknowledged yet.

        Makes room first: drops the expired unused ids, evicts ``peer``'s oldest unused id if it holds
        ``max_unused_per_peer``, and, if the table is full, the oldest unused id of any peer.

        Raises
        ------
        SessionRateLimited
            ``peer`` spent its burst and opens sessions faster than ``sessions_per_s``.
        ActorTableFull
            The table holds ``max_actors`` live ids.
        """
        self._admit(peer)
        now = self._clock()
        self._drop_expired(now)
        self._make_room(peer)
        actor_id = secrets.token_hex(ID_BYTES)
        self._last[actor_id] = 0
        self._unused.add(actor_id, peer, now)
        return actor_id

    def _admit(self, peer: str) -> None:
        """Take one of ``peer``'s session tokens, or refuse the session with when to retry."""
        if self._rate is None:
            return
        wait_s = self._rate.take(peer)
        if wait_s > 0:
            self._counts["sessions_refused"] += 1
            raise SessionRateLimited(
                f"{peer} opens actor sessions faster than sessions_per_s = {self.sessions_per_s:g} (bursts of "
                f"session_burst = {self.session_burst}): retry in {wait_s:.3f} s",
                wait_s,
            )

    def _drop_expired(self, now: float) -> None:
        """Forget the unused ids issued ``session_ttl_s`` or more before ``now`` (oldest first, so O(1) per id)."""
        while (oldest := self._unused.oldest()) is not None and now - oldest[1] >= self.session_ttl_s:
            self._forget(oldest[0], "sessions_expired")

    def _make_room(self, peer: str) -> None:
        """Evict ``peer``'s oldest unused id if it holds its cap, then unused ids (oldest first) while the table is
        full; refuse if only live ids are left."""
        if self._unused.count(peer) >= self.max_unused_per_peer:
            self._forget(self._unused.oldest_of(peer), "sessions_evicted")
        while len(self._last) >= self.max_actors:
            oldest = self._unused.oldest()
            if oldest is None:
                self._counts["sessions_refused"] += 1
                raise ActorTableFull(self._full_message())
            self._forget(oldest[0], "sessions_evicted")

    def _full_message(self) -> str:
        live = self.live_count
        return (
            f"the replay server's actor table holds {live} live sessions (ids with an acknowledged push, kept to "
            f"de-duplicate their retries), max_actors = {self.max_actors}: restart it with a larger --max-actors "
            f"(ReplayServer max_actors=); its checkpoint and log keep the {live} live sessions"
        )

    def _forget(self, actor_id: str, reason: str) -> None:
        """Drop an unused id, counted under ``reason``."""
        self._unused.discard(actor_id)
        del self._last[actor_id]
        self._counts[reason] += 1

    # -- pushes -------------------------------------------------------------------------------------------------------
    def is_duplicate(self, actor_id: str, sequence: int) -> bool:
        """True if this push was acknowledged before (a retry); False if it is new.

        Raises
        ------
        UnknownActor
            ``actor_id`` is not empty and was not issued by this server (or was forgotten: a restart, or unused
            past ``session_ttl_s``).
        ValueError
            ``sequence`` jumps more than ``window`` past the actor's last acknowledged sequence.
        """
        if not actor_id:
            return False
        if self._expired(actor_id):
            self._forget(actor_id, "sessions_expired")
        last = self._last.get(actor_id)
        if last is None:
            raise UnknownActor(
                f"actor id {_shown(actor_id)} was not issued by this replay server (or not kept across its restart, "
                f"or unused for session_ttl_s = {self.session_ttl_s:g} s): open a session (ReplayClient does) and "
                "push under the id it returns"
            )
        if sequence > last + self.window:
            raise ValueError(
                f"sequence {sequence} of actor {_shown(actor_id)} jumps more than sequence_window = {self.window} "
                f"past its last acknowledged sequence {last}"
            )
        return bool(sequence) and sequence <= last

    def _expired(self, actor_id: str) -> bool:
        """Whether ``actor_id`` is unused and was issued ``session_ttl_s`` or more ago (live ids never expire)."""
        issued_at = self._unused.issued_at(actor_id)
        return issued_at is not None and self._clock() - issued_at >= self.session_ttl_s

    def acknowledge(self, actor_id: str, sequence: int) -> None:
        """Record that the push ``(actor_id, sequence)`` was acknowledged (logged, or re-applied from the log); with
        ``sequence >= 1`` the id is live from now on."""
        if actor_id and sequence:
            self._last[actor_id] = int(sequence)
            self._unused.discard(actor_id)

    # -- durable state and read-outs ----------------------------------------------------------------------------------
    def live_items(self) -> list[tuple[str, int]]:
        """``(actor_id, last acknowledged sequence)`` of the live ids, sorted by actor id (the checkpoint's table:
        unused ids are left out, see the module's docstring)."""
        return sorted((actor, sequence) for actor, sequence in self._last.items() if sequence > 0)

    def restore(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Replace the table by the live ids of ``pairs`` (from a checkpoint; pairs at sequence 0, unused ids an
        older checkpoint kept, are dropped)."""
        self._last = {str(actor): int(sequence) for actor, sequence in pairs if int(sequence) > 0}
        self._unused = _UnusedIds()

    @property
    def live_count(self) -> int:
        """Ids with an acknowledged push."""
        return len(self._last) - len(self._unused)

    def stats(self) -> dict[str, int | float | None]:
        """The table's limits, its live and unused ids, and the sessions expired, evicted and refused so far."""
        return {
            "max_actors": self.max_actors,
            "session_ttl_s": self.session_ttl_s,
            "max_unused_per_peer": self.max_unused_per_peer,
            "sessions_per_s": self.sessions_per_s,
            "session_burst": self.session_burst,
            "sessions_live": self.live_count,
            "sessions_unused": len(self._unused),
            **self._counts,
        }

    def __len__(self) -> int:
        return len(self._last)


class _UnusedIds:
    """The unused ids, oldest first overall and per peer, with their issue times: O(1) to add, drop, or find the
    oldest."""

    def __init__(self) -> None:
        self._by_age: collections.OrderedDict[str, tuple[float, str]] = collections.OrderedDict()  # id: (time, peer)
        self._by_peer: dict[str, collections.OrderedDict[str, None]] = {}

    def add(self, actor_id: str, peer: str, issued_at: float) -> None:
        """Record ``actor_id``, issued to ``peer`` at ``issued_at`` (never before the ids already held)."""
        self._by_age[actor_id] = (issued_at, peer)
        self._by_peer.setdefault(peer, collections.OrderedDict())[actor_id] = None

    def discard(self, actor_id: str) -> None:
        """Forget ``actor_id`` if it is held (used, expired or evicted)."""
        entry = self._by_age.pop(actor_id, None)
        if entry is None:
            return
        peer = entry[1]
        held = self._by_peer[peer]
        del held[actor_id]
        if not held:
            del self._by_peer[peer]  # a peer's entry lives only while it holds unused ids

    def issued_at(self, actor_id: str) -> float | None:
        """When ``actor_id`` was issued, or None if it is not an unused id."""
        entry = self._by_age.get(actor_id)
        return None if entry is None else entry[0]

    def oldest(self) -> tuple[str, float] | None:
        """The oldest unused id and its issue time, or None if there is none."""
        if not self._by_age:
            return None
        actor_id, (issued_at, _) = next(iter(self._by_age.items()))
        return actor_id, issued_at

    def oldest_of(self, peer: str) -> str:
        """``peer``'s oldest unused id (it holds at least one)."""
        return next(iter(self._by_peer[peer]))

    def count(self, peer: str) -> int:
        """Unused ids ``peer`` holds."""
        return len(self._by_peer.get(peer, ()))

    def __len__(self) -> int:
        return len(self._by_age)


class _PeerRate:
    """A token bucket per peer: ``burst`` sessions at once, refilled at ``per_s`` a second.

    A bucket idle long enough to be full again is the same as a new one, so it is forgotten: only peers that opened a
    session within the last ``burst / per_s`` seconds are held, least recently seen first (O(1) amortised).
    """

    def __init__(self, per_s: float, burst: int, clock: Callable[[], float]) -> None:
        self.per_s, self.burst, self._clock = per_s, burst, clock
        self._buckets: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()  # (tokens, at)

    def take(self, peer: str) -> float:
        """Take a token of ``peer``'s: 0.0 if there was one, else the seconds until there will be (nothing taken)."""
        now = self._clock()
        self._forget_full(now)
        tokens, at = self._buckets.pop(peer, (float(self.burst), now))
        tokens = self._refilled(tokens, at, now)
        if tokens >= 1.0:
            self._buckets[peer] = (tokens - 1.0, now)
            return 0.0
        self._buckets[peer] = (tokens, now)
        return (1.0 - tokens) / self.per_s

    def _refilled(self, tokens: float, at: float, now: float) -> float:
        """A bucket's tokens at ``now``, given ``tokens`` at ``at``."""
        return min(float(self.burst), tokens + (now - at) * self.per_s)

    def _forget_full(self, now: float) -> None:
        """Drop the least recently seen buckets that have refilled (each bucket is dropped once: O(1) amortised)."""
        while self._buckets:
            peer, (tokens, at) = next(iter(self._buckets.items()))
            if self._refilled(tokens, at, now) < self.burst:
                return
            del self._buckets[peer]

    def __len__(self) -> int:
        return len(self._buckets)


def _positive_int(value: object, name: str) -> int:
    """``value`` as an int (Python or numpy integer) >= 1, else a ``ValueError`` naming ``name``."""
    try:
        number = operator.index(value) if isinstance(value, SupportsIndex) else 0
    except TypeError:
        number = 0
    if number < 1:
        raise ValueError(f"{name} must be an integer >= 1, not {value!r}")
    return number


def _positive_number(value: object, name: str) -> float:
    """``value`` as a finite float > 0 (a Python or numpy real, not a bool), else a ``ValueError`` naming ``name``."""
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, not {value!r}")
    return number


def _shown(actor_id: str) -> str:
    """An actor id as error messages show it: never the whole of a long one (messages reach logs and other hosts)."""
    return repr(actor_id if len(actor_id) <= 12 else actor_id[:8] + "...")
