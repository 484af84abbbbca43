r"""``ReplayServer``: the prioritized replay *between* the Ape-X actors and the learner, served over gRPC.

In-network experience sampling: actors push their transitions (with initial priorities) to the node the traffic passes
through, which keeps them and their priorities, and only sampled batches travel on to the learner. Here that node is
the board with the replay core: the server owns one :class:`~pynq_rl.host.drivers.replay.ReplayCore` (``emu``, ``rtl``
or ``board``, through :class:`~pynq_rl.host.overlay.RLOverlay`; or the float64 ``numpy`` sum tree) and the transition
storage. It needs only numpy, grpcio and protobuf (no Ray, no torch for a core backend), so it runs on a PYNQ-Z2's
32-bit ARM where Ray does not; on a Ray node it runs inside a Ray actor (:mod:`.apex`).

Threads and paths
-----------------
* **Insertion path** (the seed design's "adding thread"): :meth:`ReplayServer.push` checks the batch, appends it to
  the write-ahead log, queues it and returns the acknowledgement; one adding thread moves queued batches into the
  storage and the core (whatever is queued when it wakes goes in as one write: one core update for many pushes). A
  push never waits for the core, so pushes never block sampling; sampling waits at most for
  the one batch being inserted (one short lock).
* **Back-pressure**: at most ``queue_batches`` batches wait for the adding thread. A push that finds the queue full
  waits up to its ``timeout_s`` and is then refused with :class:`Backpressure` (gRPC ``RESOURCE_EXHAUSTED``); the
  client backs off and retries, so a slow core slows the actors down instead of growing memory.
* **Sampling path**: :meth:`ReplayServer.sample` draws a stratified prioritized batch on the core and gathers the rows.
  :meth:`ReplayServer.update_priorities` writes the learner's new priorities; each slot carries a write count
  (``versions``) so an update for a slot overwritten since it was sampled is dropped instead of mis-assigned.

Durability and identity
-----------------------
An acknowledged push is already in the write-ahead log (:mod:`.wal`): written to the OS before the reply, and fsynced
too with ``sync_wal`` (which then survives a power cut, not only a killed process). Priority updates are logged too.
:meth:`ReplayServer.checkpoint` writes storage + priorities atomically to ``replay.ckpt`` and compacts the log; a
server started on the same ``checkpoint_dir`` recovers from both (:mod:`.recovery`: what they hold, and what a damaged
log costs). Pushes carry an actor id the server issued (:meth:`ReplayServer.open_session`) and a sequence number, so a
retried push is stored once and no one can push as another actor (:mod:`.actors`). Ids no push has used yet expire,
are capped and rate-limited per peer, and are not checkpointed, so opening sessions cannot fill the actor table.

Storage is a ring of ``capacity`` slots (at most the core's ``K**LEVELS``); once full, the oldest transitions are
overwritten, Ape-X's FIFO eviction.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..replay.priorities import make_priority_backend
from . import codec
from .actors import (
    DEFAULT_MAX_ACTORS,
    DEFAULT_MAX_UNUSED_PER_PEER,
    DEFAULT_SESSION_BURST,
    DEFAULT_SESSION_TTL_S,
    DEFAULT_SESSIONS_PER_S,
    LOCAL_PEER,
    ActorSequences,
)
from .recovery import ReplayRecovery
from .sampling import EmptyReplayError, ReplaySampling

__all__ = ["ReplayServer", "Backpressure", "EmptyReplayError"]


class Backpressure(RuntimeError):
    """The insertion queue stayed full for the push's whole timeout: retry later (gRPC ``RESOURCE_EXHAUSTED``)."""


class ReplayServer(ReplaySampling, ReplayRecovery):
    """Transition storage + a priority backend, with an insertion thread, back-pressure and checkpoints.

    Thread-safe: the gRPC servicer calls it from its worker threads.

    Parameters
    ----------
    capacity : int
        Transition slots (a ring).
    obs_shape : tuple of int
        Shape of one observation.
    backend : str or object
        ``"host"`` (the float64 sum tree), ``"emu"``, ``"rtl"``, ``"verilator"``, ``"board"`` (see
        :func:`~pynq_rl.host.agents.replay.priorities.make_priority_backend`), or a priority object with the
        ``ReplayCore`` methods ``update``, ``sample``, ``clear``, ``state_dict``, ``load_state_dict`` and
        ``alpha``/``capacity``/``nonzero``.
    alpha : float
        Priority exponent applied by the backend.
    queue_batches : int
        Pushed batches that may wait for the insertion thread before pushes are refused (back-pressure).
    checkpoint_dir : str or Path, optional
        Where ``replay.ckpt`` and ``replay.wal`` live; if they exist, the server restores from them on start. None: no
        log, no checkpoints (an acknowledgement then means "queued in memory").
    checkpoint_every_s : float, optional
        Checkpoint in the background this often (needs ``checkpoint_dir``).
    sync_wal : bool
        fsync the log before each acknowledgement (survives power loss, slower).
    board : str or BoardSpec, optional
        The overlay's board for a core backend.
    seed : int, optional
        Seed of the sampler.
    sequence_window : int
        How far past an actor's last acknowledged sequence a push may jump (a push beyond is refused:
        :class:`~.actors.ActorSequences`).
    max_sample : int, optional
        Largest ``batch_size`` a :meth:`sample` may ask for; None: ``capacity``, and never more rows than fit in one
        gRPC reply (:data:`codec.GRPC_OPTIONS`). Checked before any work.
    accept_loss : bool
        Start even if the log is damaged in a way that loses acknowledged records (they are counted in a warning
        and in :attr:`recovery`, and the bad tail is moved to a side file); False: refuse to start (``ValueError``).
    obs_dtype : str
        How observations are stored and sampled (:data:`codec.OBS_DTYPES`): ``"float32"`` (vectors; pushes are
        converted) or ``"uint8"`` (Atari frames, 4x84x84: pushes must be uint8, a quarter of the bytes of float32 in
        memory and on the wire), or ``"zlib"`` (uint8 frames packed by the actor, :func:`codec.pack_batch`: stored
        and sampled as the compressed rows, never decompressed or re-compressed here).
    max_actors : int
        Actor ids the server keeps. Unused ids are reclaimed to make room, so only live sessions (an acknowledged
        push) fill it; then :meth:`open_session` refuses with :class:`~.actors.ActorTableFull`.
    session_ttl_s : float
        How long an issued id that no push has used yet is kept (:data:`~.actors.DEFAULT_SESSION_TTL_S` says why
        300 s is far beyond a client's retry budget).
    max_unused_per_peer : int
        Unused ids one peer (a caller's address without its port) may hold; one more evicts its oldest.
    sessions_per_s : float or None
        Sessions one peer may open a second beyond its burst (refused with :class:`~.actors.SessionRateLimited`,
        which the client retries); None: no rate limit.
    session_burst : int
        Sessions one peer may open at once.

    Attributes
    ----------
    restored : dict
        What was restored on start: ``{"checkpoint": bool, "log_records": int, "update_records": int}`` (pushed
        batches and priority updates re-applied from the log).
    recovery : dict
        What recovery set aside: ``set_aside`` (the side file holding a bad log tail); for a torn last record
        ``torn_bytes`` and ``torn_records``, with ``may_include_acknowledged`` when the log was written without
        ``sync_wal``; or ``lost`` (counts of acknowledged records lost, with ``accept_loss``); empty if the log was
        intact.
    max_sample : int
        The largest ``batch_size`` :meth:`sample` accepts: the ``max_sample`` given (``capacity`` if None), capped at
        the rows one gRPC reply holds.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        backend: Any = "emu",
        alpha: float = 0.6,
        queue_batches: int = 64,
        checkpoint_dir: str | os.PathLike | None = None,
        checkpoint_every_s: float | None = None,
        sync_wal: bool = False,
        board: Any = None,
        seed: int | None = None,
        sequence_window: int = 1024,
        max_sample: int | None = None,
        accept_loss: bool = False,
        obs_dtype: str = "float32",
        max_actors: int = DEFAULT_MAX_ACTORS,
        session_ttl_s: float = DEFAULT_SESSION_TTL_S,
        max_unused_per_peer: int = DEFAULT_MAX_UNUSED_PER_PEER,
        sessions_per_s: float | None = DEFAULT_SESSIONS_PER_S,
        session_burst: int = DEFAULT_SESSION_BURST,
    ) -> None:
        self.obs_dtype = codec.check_obs_dtype(obs_dtype)
        if not isinstance(capacity, (int, np.integer)) or int(capacity) < 1:
            raise ValueError(f"capacity must be an integer >= 1, not {capacity!r}")
        if max_sample is not None and (not isinstance(max_sample, (int, np.integer)) or int(max_sample) < 1):
            raise ValueError(f"max_sample must be None or an integer >= 1, not {max_sample!r}")
        if not isinstance(queue_batches, (int, np.integer)) or int(queue_batches) < 1:
            raise ValueError(f"queue_batches must be an integer >= 1, not {queue_batches!r}")
        if checkpoint_every_s is not None and checkpoint_dir is None:
            raise ValueError("checkpoint_every_s needs a checkpoint_dir")
        self.capacity = int(capacity)
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.queue_batches = int(queue_batches)
        self.sync_wal = bool(sync_wal)
        self._actors = ActorSequences(  # the sessions, and the duplicate and window checks of pushes
            sequence_window, max_actors, session_ttl_s, max_unused_per_peer, sessions_per_s, session_burst
        )
        self._fields = codec.stored_fields(self.obs_dtype)
        # a packed row is at most codec._ZLIB_SLACK bytes over its two uint8 observations (within the reply's margin)
        itemsize = 1 if self.obs_dtype == "zlib" else np.dtype(self.obs_dtype).itemsize
        fits = codec.max_sample_rows(self.obs_shape, itemsize)
        self.max_sample = min(fits, self.capacity if max_sample is None else int(max_sample))
        if isinstance(backend, str):
            self.backend_name = backend
            self.priorities = make_priority_backend(backend, self.capacity, board, seed)
        else:
            self.backend_name = type(backend).__name__
            self.priorities = backend
            if self.capacity > self.priorities.capacity:
                raise ValueError(f"capacity {capacity} exceeds the priority backend's {self.priorities.capacity}")
        self.priorities.alpha = float(alpha)
        self.priorities.clear()

        if self.obs_dtype == "zlib":
            self.frames: list[bytes] = [b""] * self.capacity  # one packed row per slot, as the actor sent it
        else:
            self.observations = np.zeros((self.capacity,) + self.obs_shape, dtype=self.obs_dtype)
            self.next_observations = np.zeros_like(self.observations)
        self.actions = np.zeros(self.capacity, dtype=np.int64)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.discounts = np.zeros(self.capacity, dtype=np.float32)
        self.versions = np.zeros(self.capacity, dtype=np.uint64)
        self.pos = 0
        self.full = False

        self._store_lock = threading.Lock()  # storage + priority backend (the driver is not thread-safe)
        self._push_lock = threading.Lock()  # log order, sequence numbers, dedup table
        self._cv = threading.Condition()  # the insertion queue
        self._pending: collections.deque[tuple[int, dict[str, Any]]] = collections.deque()  # checked batches
        self._wal_lock = threading.Lock()  # one writer at a time in the log (pushes and priority updates)
        self._log_sequence = 0  # last batch acknowledged (logged)
        self._update_sequence = 0  # last priority update logged
        self._applied_sequence = 0  # last batch inserted into the storage
        self._counters = collections.Counter()
        self._latency_s = collections.defaultdict(float)
        self._closed = False
        self._adder_error: BaseException | None = None
        self._started = time.monotonic()
        self.restored = {"checkpoint": False, "log_records": 0, "update_records": 0}
        self.recovery: dict[str, Any] = {}
        self.accept_loss = bool(accept_loss)

        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self._wal = None
        if self.checkpoint_dir is not None:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            self._wal = self._recover(self.checkpoint_dir)  # checkpoint + log (:mod:`.recovery`)
        self._adder = threading.Thread(target=self._adding_thread, name="replay-adder", daemon=True)
        self._adder.start()
        self._checkpointer = None
        if checkpoint_every_s is not None:
            self._checkpointer = threading.Thread(
                target=self._checkpoint_thread,
                args=(float(checkpoint_every_s),),
                name="replay-checkpointer",
                daemon=True,
            )
            self._checkpointer.start()

    # -- read-outs ----------------------------------------------------------------------------------------------------
    def size(self) -> int:
        """Transitions stored (inserted by the adding thread)."""
        return self.capacity if self.full else self.pos

    def stats(self) -> dict[str, Any]:
        """Counters and gauges: sizes, queue depth, pushes/samples/updates, rejections, checkpoints, mean latencies,
        and the actor sessions: limits, live and unused ids, sessions expired, evicted and refused (a flood of
        ``OpenSession`` calls shows as evictions and refusals)."""
        with self._cv:
            queued = len(self._pending)
        counters = dict(self._counters)
        means = {
            f"{name[:-2]}_mean_ms": 1e3 * total / max(1, counters.get(f"{name[:-2]}_calls", 0))
            for name, total in self._latency_s.items()
        }
        return {
            "backend": self.backend_name,
            "capacity": self.capacity,
            "obs_shape": list(self.obs_shape),
            "obs_dtype": self.obs_dtype,
            "size": self.size(),
            "queued_batches": queued,
            "queue_batches": self.queue_batches,
            "log_sequence": self._log_sequence,
            "applied_sequence": self._applied_sequence,
            "uptime_s": time.monotonic() - self._started,
            "restored": dict(self.restored),
            "recovery": dict(self.recovery),
            "adder_error": None if self._adder_error is None else repr(self._adder_error),
            **self._actors.stats(),
            **counters,
            **means,
        }

    # -- insertion path -----------------------------------------------------------------------------------------------
    def open_session(self, timeout_s: float | None = None, peer: str = LOCAL_PEER) -> str:
        """Issue the actor id an actor's pushes carry (:mod:`.actors`): unguessable, so no one else can push as it.

        Parameters
        ----------
        timeout_s : float, optional
            How long to wait for the push lock, which a checkpoint holds while it drains the queue and writes the
            file (seconds on a busy disk); None: as long as it takes. The gRPC path bounds it, so a caller waiting
            out a checkpoint is told to retry instead of outliving its call's deadline on a blocked server thread.
        peer : str
            Who asks: the gRPC path passes the caller's address without its port; the per-peer cap on unused ids
            and the rate limit count per peer. The default names every caller of the Python API.

        Raises
        ------
        ~pynq_rl.host.agents.distributed.actors.SessionRateLimited
            ``peer`` opens sessions faster than ``sessions_per_s`` (its message says when to retry).
        ~pynq_rl.host.agents.distributed.actors.ActorTableFull
            ``max_actors`` ids are live.
        Backpressure
            The push lock stayed taken for ``timeout_s``.
        RuntimeError
            The server is closed or its adding thread failed.
        """
        if not self._push_lock.acquire(timeout=-1 if timeout_s is None else max(0.0, float(timeout_s))):
            raise Backpressure(
                f"replay server busy (checkpointing or {self.queue_batches} batches queued) for {timeout_s} s: "
                "no actor id issued"
            )
        try:
            self._check_open()
            actor_id = self._actors.issue(peer)
        finally:
            self._push_lock.release()
        self._counters["sessions_opened"] += 1
        return actor_id

    def push(
        self,
        transitions: Mapping[str, np.ndarray],
        priorities: np.ndarray,
        actor_id: str = "",
        sequence: int = 0,
        timeout_s: float = 1.0,
        payload: bytes | None = None,
    ) -> dict[str, int | bool]:
        """Log and queue a batch of transitions with their initial priorities; return the acknowledgement.

        Parameters
        ----------
        transitions : mapping
            The fields of :data:`codec.TRANSITION_FIELDS`, one row per transition.
        priorities : array_like
            Initial priority of each transition (the actor's ``|TD error| + eps``), finite and >= 0.
        actor_id, sequence : str, int
            An id from :meth:`open_session` (or empty: no de-duplication). With ``sequence >= 1``, a sequence at or
            below the last one acknowledged for this actor is a duplicate (a retry) and is acknowledged without being
            stored again; one more than ``sequence_window`` past it is refused (``ValueError``).
        timeout_s : float
            How long to wait for room in the insertion queue.
        payload : bytes, optional
            The serialized ``PushRequest`` these arrays were decoded from (the gRPC path): logged as is instead of
            re-encoding the batch.

        Returns
        -------
        dict
            ``accepted`` (transitions), ``duplicate``, ``log_sequence``, ``queued`` (batches waiting).

        Raises
        ------
        ~pynq_rl.host.agents.distributed.actors.UnknownActor
            ``actor_id`` was not issued by this server, or was forgotten (a restart, or unused past
            ``session_ttl_s``, or evicted unused): open a new session.
        ValueError
            A malformed batch (see :func:`codec.check_batch`) or a bad sequence.
        Backpressure
            The queue stayed full for ``timeout_s``.
        RuntimeError
            The server is closed or its adding thread failed.
        """
        start = time.perf_counter()
        if not isinstance(sequence, (int, np.integer)) or int(sequence) < 0:
            raise ValueError(f"sequence must be an integer >= 0, not {sequence!r}")
        if priorities is None:  # the adding thread stores them with the rows: a batch without them would kill it
            raise ValueError("priorities must be given: one initial priority per transition")
        batch = codec.check_batch(transitions, self.obs_shape, priorities, self.obs_dtype)
        deadline = time.monotonic() + max(0.0, float(timeout_s))
        if not self._push_lock.acquire(timeout=max(0.0, float(timeout_s))):
            self._counters["push_rejected"] += 1
            raise Backpressure(
                f"replay server busy (checkpointing or {self.queue_batches} batches queued) for {timeout_s} s"
            )
        try:
            self._check_open()
            try:
                duplicate = self._actors.is_duplicate(actor_id, int(sequence))
            except ValueError:
                self._counters["push_rejected"] += 1
                raise
            if duplicate:
                self._counters["push_duplicates"] += 1
                return {
                    "accepted": 0,
                    "duplicate": True,
                    "log_sequence": self._log_sequence,
                    "queued": len(self._pending),
                }
            with self._cv:
                room = self._cv.wait_for(
                    lambda: len(self._pending) < self.queue_batches or self._closed,
                    timeout=max(0.0, deadline - time.monotonic()),
                )
            if not room:
                self._counters["push_rejected"] += 1
                raise Backpressure(f"replay insertion queue full ({self.queue_batches} batches) for {timeout_s} s")
            self._check_open()
            log_sequence = self._log_sequence + 1
            if self._wal is not None:
                self._log(log_sequence, actor_id, int(sequence), batch, payload)
            with self._cv:
                self._pending.append((log_sequence, batch))
                queued = len(self._pending)
                self._cv.notify_all()
            self._log_sequence = log_sequence
            self._actors.acknowledge(actor_id, int(sequence))
        finally:
            self._push_lock.release()
        n = len(batch["actions"])
        self._counters["push_calls"] += 1
        self._counters["pushed_transitions"] += n
        self._latency_s["push_s"] += time.perf_counter() - start
        return {"accepted": n, "duplicate": False, "log_sequence": log_sequence, "queued": queued}

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every acknowledged batch is in the storage.

        Raises
        ------
        TimeoutError
            The queue did not drain within ``timeout_s`` (the message gives its depth).
        """
        with self._cv:
            if not self._cv.wait_for(lambda: not self._pending or self._adder_error is not None, timeout=timeout_s):
                raise TimeoutError(
                    f"replay insertion queue still holds {len(self._pending)} batches after {timeout_s} s"
                )
        self._check_open(closed_ok=True)

    def _adding_thread(self) -> None:
        """Insert queued batches in order; everything queued at once goes in as one write (one core update)."""
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._pending or self._closed)
                if not self._pending:
                    return
                items = list(self._pending)  # popped after insertion, so flush() sees them until then
            batch = (
                items[0][1]
                if len(items) == 1
                else {
                    name: [row for _, b in items for row in b[name]]
                    if name == "frames"
                    else np.concatenate([b[name] for _, b in items])
                    for name in items[0][1]
                }
            )
            try:
                self._insert(batch)
            except BaseException as error:  # noqa: BLE001 - recorded: every later push and flush re-raises it
                self._adder_error = error
                with self._cv:
                    self._cv.notify_all()
                return
            with self._cv:
                for _ in items:
                    self._pending.popleft()
                self._applied_sequence = items[-1][0]
                self._counters["insert_calls"] += 1
                self._cv.notify_all()

    def insert(self, transitions: Mapping[str, np.ndarray], priorities: np.ndarray) -> int:
        """Check and store a batch now, in the caller's thread, bypassing the queue and the log; returns its size.

        For a replay that lives inside the learner (the Redis baseline, :mod:`.redis_baseline`): there nothing is
        acknowledged to anyone, so nothing needs logging.

        Raises
        ------
        ValueError
            A malformed batch (see :func:`codec.check_batch`).
        """
        self._check_open()
        batch = codec.check_batch(transitions, self.obs_shape, priorities, self.obs_dtype)
        self._insert(batch)
        return len(batch["actions"])

    def _insert(self, batch: Mapping[str, Any]) -> None:
        """Write a checked batch into the next ring slots and set their priorities (under the storage lock).

        The batch's values are arrays, or a packed batch's ``frames``: a list of bytes, one row per transition."""
        n = len(batch["actions"])
        rows = slice(max(0, n - self.capacity), n)  # rows that would be overwritten within this batch are skipped
        with self._store_lock:
            slots = (self.pos + np.arange(rows.start, rows.stop)) % self.capacity  # as if inserted one by one
            for name in self._fields:
                if name == "frames":
                    for slot, row in zip(slots.tolist(), batch["frames"][rows]):
                        self.frames[slot] = row
                else:
                    getattr(self, name)[slots] = batch[name][rows]
            # one write count per row, skipped rows too: a slot's version does not depend on how the adding thread
            # grouped batches, so priority updates re-applied from the log see the versions they saw live
            np.add.at(self.versions, (self.pos + np.arange(n)) % self.capacity, np.uint64(1))
            self.priorities.update(slots.astype(np.int64), batch["priorities"][rows])
            end = self.pos + n
            self.full = self.full or end >= self.capacity
            self.pos = end % self.capacity
        self._counters["inserted_transitions"] += n

    # -- life cycle ---------------------------------------------------------------------------------------------------
    def _check_open(self, closed_ok: bool = False) -> None:
        if self._adder_error is not None:
            raise RuntimeError(f"the replay server's adding thread failed: {self._adder_error!r}")
        if self._closed and not closed_ok:
            raise RuntimeError("the replay server is closed")

    def close(self, checkpoint: bool = False) -> None:
        """Stop the threads (after the queue drains); optionally checkpoint first; close the log."""
        if self._closed:
            return
        if checkpoint and self.checkpoint_dir is not None:
            self.checkpoint()
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._adder.join(timeout=30.0)
        if self._wal is not None:
            self._wal.close()
