r"""The durable state of a :class:`~.server.ReplayServer`: what its checkpoint and log records hold, how a checkpoint is
taken, and the recovery from them when a server starts.

:class:`ReplayRecovery` is mixed into the server. The server decides *when* to log (a push, an update, under which of
its locks); this module decides *what* is written, next to the code that reads it back, so the two cannot drift apart,
and takes checkpoints (:meth:`ReplayRecovery.checkpoint`, on demand or every ``checkpoint_every_s``):

* ``replay.ckpt``: storage + the priority backend's ``state_dict`` + the sequence counters + the live actor sessions
  (ids with an acknowledged push; unused ids are left out, :mod:`.actors` says why that is safe), as ``.npz`` arrays
  and a JSON header (format :data:`CHECKPOINT_VERSION`, every member protected by its zip CRC-32; never a pickle);
* ``replay.wal`` (:mod:`.wal`): one record per acknowledged push (the serialized ``PushRequest``) and per priority
  update (``PRUP``: an ``UpdateRequest`` with the slot versions it applied to, so a restart restores the priorities
  the learner had set, not only the actors' initial ones). Slot versions count every row written, however the adding
  thread grouped batches, so a re-applied update sees the versions it saw live.

On start the checkpoint is loaded and the log's records after it re-applied in order: every acknowledged transition
goes back into the slot it had, and the ``(actor_id, sequence)`` pairs come back, so an actor retrying a push whose
reply it lost is still acknowledged without storing the batch twice. Recovery never loses acknowledged data silently:

* a torn last record (a write cut by a crash or a power cut, ending on a page boundary) is moved to a side file with
  a warning. It says what the log's fsync policy lets it know: in a log written with ``sync_wal`` (the file's
  :data:`~.wal.SYNCED` flag) the record was never acknowledged; otherwise it may have been, and so may records after
  it that the OS never wrote back, which nothing can count;
* a bad checksum, a sequence gap, a log cut mid-record, or a record that cannot be applied (intact, but naming a slot
  that holds no transition, say) refuses the start naming the log file, the offset and the record, with the number
  of acknowledged records that would be lost, unless ``accept_loss``, which starts from the records before it, moves
  the bad tail to a side file and counts the loss in a warning and in ``ReplayServer.recovery``;
* a log that continues a checkpoint that is missing (or older) is refused, and so (unless ``accept_loss``) is a
  checkpoint whose log is missing.

A checkpoint holds the priority backend's own ``state_dict`` (the core's leaf codes and PRNG state, or the numpy
tree's leaves): restore it with the same backend kind and build.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf.message import DecodeError

from ..common import checkpoints
from . import codec
from . import replay_pb2 as pb
from .wal import PAGE_BYTES, PUSH, UPDATE, LogScan, WriteAheadLog

if TYPE_CHECKING:
    from .state import ReplayServerState as _ServerState
else:
    _ServerState = object  # the server's state, declared for mypy (:mod:`.state`); no base class at run time

__all__ = ["CHECKPOINT_VERSION", "CHECKPOINT_AGENT", "ReplayRecovery", "write_checkpoint"]

CHECKPOINT_VERSION = 2
"""``replay_format`` in ``replay.ckpt``: the server's state layout (1 was a pickle)"""
CHECKPOINT_AGENT = "replay_server"
"""the ``agent`` name in ``replay.ckpt``
(:func:`~pynq_rl.host.agents.common.checkpoints.save_checkpoint`: arrays + JSON, no pickle)"""


def write_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write a :meth:`ReplayRecovery._checkpoint_state` to ``path`` atomically, fsynced."""
    checkpoints.save_checkpoint(path, CHECKPOINT_AGENT, state, sync=True)


class ReplayRecovery(_ServerState):
    """The durable half of :class:`~.server.ReplayServer`, mixed into it: its checkpoint state, its log records, and
    the recovery that runs once from its ``__init__``.

    Works on the server's storage, priority backend and sequence counters (recovery is their only writer before the
    server's threads start) and fills its ``restored`` and ``recovery`` dicts.
    """

    # -- what the checkpoint and the log records hold ------------------------------------------------------------------
    def _checkpoint_state(self) -> dict[str, Any]:
        """Storage, priorities and sequences as ``replay.ckpt`` holds them (the caller holds the storage lock)."""
        n = self.size()
        actors = self._actors.live_items()  # unused ids are not kept: nothing was acknowledged under them
        return {
            "replay_format": CHECKPOINT_VERSION,
            "capacity": self.capacity,
            "obs_shape": list(self.obs_shape),
            "obs_dtype": self.obs_dtype,
            "pos": self.pos,
            "full": self.full,
            "log_sequence": self._applied_sequence,
            "update_sequence": self._update_sequence,
            "actor_ids": [actor for actor, _ in actors],
            "actor_sequences": [sequence for _, sequence in actors],
            "priorities": self.priorities.state_dict(),
            "versions": self.versions.copy(),
            **self._storage_state(n),
        }

    def _storage_state(self, n: int) -> dict[str, np.ndarray]:
        """Copies of the first ``n`` slots' fields for a checkpoint (packed rows as one uint8 array and their ends:
        a checkpoint holds no object arrays)."""
        state = {name: getattr(self, name)[:n].copy() for name in self._fields if name != "frames"}
        if "frames" in self._fields:
            rows = self.frames[:n]
            state["frames_data"] = np.frombuffer(b"".join(rows), dtype=np.uint8).copy()
            state["frames_ends"] = np.cumsum([len(row) for row in rows], dtype=np.int64)
        return state

    def _log(
        self,
        log_sequence: int,
        actor_id: str,
        sequence: int,
        batch: Mapping[str, np.ndarray],
        payload: bytes | None = None,
    ) -> None:
        """Log a pushed batch: ``payload`` (the ``PushRequest`` the gRPC path received) or the batch encoded as one."""
        if payload is None:
            request = pb.PushRequest(actor_id=actor_id, sequence=sequence)
            codec.encode_transitions(
                {**batch, "frames_shape": self.obs_shape} if "frames" in batch else batch, request.transitions
            )
            codec.to_tensor(batch["priorities"], request.priorities)
            payload = request.SerializeToString()
        self._append(PUSH, log_sequence, payload)

    def _log_update(self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray) -> None:
        """Log a priority update (under the storage lock, so the log holds updates in the order they apply)."""
        request = pb.UpdateRequest()
        codec.to_tensor(indices, request.indices)
        codec.to_tensor(priorities, request.priorities)
        codec.to_tensor(versions, request.versions)
        self._update_sequence += 1
        self._append(UPDATE, self._update_sequence, request.SerializeToString())

    def _append(self, kind: bytes, sequence: int, payload: bytes) -> None:
        with self._wal_lock:
            self._log_file().append(kind, sequence, payload)

    def _log_file(self) -> WriteAheadLog:
        """The open log: a server has one exactly when it has a ``checkpoint_dir`` (set once recovery is done)."""
        if self._wal is None:
            raise RuntimeError("this replay server has no checkpoint_dir")
        return self._wal

    # -- checkpoints --------------------------------------------------------------------------------------------------
    def checkpoint(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Drain the queue, write storage + priorities atomically to ``replay.ckpt``, truncate the log.

        Pushes wait (or are refused with :class:`~.server.Backpressure`) while it runs.

        Returns
        -------
        dict
            ``path`` and ``log_sequence`` (the last batch the checkpoint holds).

        Raises
        ------
        RuntimeError
            No ``checkpoint_dir``.
        TimeoutError
            The queue did not drain in time.
        """
        if self.checkpoint_dir is None:
            raise RuntimeError("this replay server has no checkpoint_dir")
        with self._push_lock:
            self.flush(timeout_s)
            with self._store_lock, self._wal_lock:
                state = self._checkpoint_state()
                covered = self._log_file().tell()  # the log up to here is in the checkpoint
                base = (self._applied_sequence, self._update_sequence)
            path = self.checkpoint_dir / "replay.ckpt"
            write_checkpoint(path, state)
            with self._wal_lock:
                self._log_file().compact(covered, base)
        self._counters["checkpoints"] += 1
        return {"path": str(path), "log_sequence": state["log_sequence"]}

    def _checkpoint_thread(self, every_s: float) -> None:
        while True:
            with self._cv:
                if self._cv.wait_for(lambda: self._closed, timeout=every_s):
                    return
            try:
                self.checkpoint()
            except Exception as error:  # noqa: BLE001 - keep serving; the next period tries again
                warnings.warn(f"replay checkpoint failed: {error!r}", RuntimeWarning, stacklevel=2)

    # -- recovery on start ---------------------------------------------------------------------------------------------
    def _recover(self, checkpoint_dir: Path) -> WriteAheadLog:
        """Open ``checkpoint_dir``'s log, restore the checkpoint and re-apply the log; return the open log.

        Raises
        ------
        ValueError
            Recovery would lose acknowledged data (without ``accept_loss``) or the files do not belong together;
            the log is closed again.
        """
        log_path = checkpoint_dir / "replay.wal"
        if not log_path.exists() and (checkpoint_dir / "replay.ckpt").exists():
            self._missing_log(log_path)
        wal = WriteAheadLog(log_path, sync=self.sync_wal)
        try:
            # before the server's _wal is set: re-applied updates must not be logged a second time
            self._restore(wal, checkpoint_dir)
        except BaseException:
            wal.close()
            raise
        return wal

    def _restore(self, wal: WriteAheadLog, checkpoint_dir: Path) -> None:
        """Load ``replay.ckpt`` (if any), then re-apply the log's records after it, up to the first bad one.

        A torn last record is moved to a side file with a warning (:meth:`_handle_bad_tail`). Damage that loses
        acknowledged records (a bad checksum, a sequence gap, a file cut mid-record, a record that cannot be applied)
        refuses the start unless ``accept_loss``; then the records before it stay applied, the bad tail is moved to a
        side file and the loss is counted in a warning and in :attr:`recovery`. A log that continues a checkpoint this
        directory does not hold is always refused.
        """
        path = checkpoint_dir / "replay.ckpt"
        scan = wal.scan()  # LogFormatError (a ValueError) for a damaged or foreign header
        if path.exists():
            self._load_checkpoint(path)
        elif scan.base != (0, 0):
            raise ValueError(
                f"{wal.path} continues a checkpoint holding pushes up to {scan.base[0]} and priority "
                f"updates up to {scan.base[1]}, but {path} is missing: refusing to start with those "
                f"transitions gone or in other slots (restore the checkpoint, or move both files away "
                f"to start empty)"
            )
        if scan.base[0] > self._applied_sequence or scan.base[1] > self._update_sequence:
            raise ValueError(
                f"{wal.path} continues a checkpoint holding pushes up to {scan.base[0]} and updates up "
                f"to {scan.base[1]}, but {path} holds only {self._applied_sequence} and "
                f"{self._update_sequence}: it is an older checkpoint"
            )
        for index, (kind, sequence, payload, _offset) in enumerate(scan.records):
            applied = self._update_sequence if kind == UPDATE else self._applied_sequence
            if sequence <= applied:
                continue  # already in the checkpoint
            if sequence != applied + 1:
                scan.reason = f"a sequence gap: {'update' if kind == UPDATE else 'push'} {sequence} follows {applied}"
                scan.truncate_records(index)
                break
            try:
                self._apply_record(kind, sequence, payload)  # checks the record whole before changing anything
            except (ValueError, DecodeError) as error:
                name = "priority update" if kind == UPDATE else "push"
                scan.reason = f"a {name} record (sequence {sequence}) that cannot be applied: {error}"
                scan.truncate_records(index)
                break
        if scan.reason is not None:
            self._handle_bad_tail(wal, scan)

    def _missing_log(self, log_path: Path) -> None:
        """A checkpoint without its log (every checkpoint leaves one behind): refuse, or warn with ``accept_loss``."""
        summary = (
            f"{log_path} is missing but {log_path.with_name('replay.ckpt')} exists: the acknowledged pushes "
            f"and priority updates after that checkpoint (an unknown number) are lost"
        )
        if not self.accept_loss:
            raise ValueError(
                f"refusing to start: {summary}. Restart with accept_loss=True (--accept-loss) to go on "
                f"from the checkpoint alone"
            )
        self.recovery["lost"] = {"missing_log": True}
        warnings.warn(f"ACKNOWLEDGED DATA LOST: {summary} (accept_loss)", RuntimeWarning, stacklevel=2)

    def _load_checkpoint(self, path: Path) -> None:
        """Restore storage, priorities and sequences from ``replay.ckpt``.

        Raises
        ------
        ValueError
            Not a replay checkpoint of :data:`CHECKPOINT_VERSION`, damaged (a zip CRC-32 fails), or for another
            layout.
        """
        state = checkpoints.load_checkpoint(path, CHECKPOINT_AGENT)  # a damaged file fails its zip CRC-32s: ValueError
        if state.get("replay_format") != CHECKPOINT_VERSION:
            raise ValueError(
                f"checkpoint {path} has replay_format {state.get('replay_format')!r}, this server reads "
                f"{CHECKPOINT_VERSION}"
            )
        expected = (self.capacity, self.obs_shape, self.obs_dtype)
        found = (state.get("capacity"), tuple(state.get("obs_shape", ())), state.get("obs_dtype", "float32"))
        if found != expected:
            raise ValueError(
                f"checkpoint {path} is (capacity, obs_shape, obs_dtype) = {found}, this server is {expected}"
            )
        n = self.capacity if state["full"] else state["pos"]
        for name in self._fields:
            if name == "frames":  # the rows, concatenated, and where each one ends
                data, ends = state["frames_data"].tobytes(), state["frames_ends"].tolist()
                self.frames[:n] = [data[start:end] for start, end in zip([0] + ends[:-1], ends)]
            else:
                getattr(self, name)[:n] = state[name]
        self.versions[:] = state["versions"]
        self.pos, self.full = int(state["pos"]), bool(state["full"])
        self.priorities.load_state_dict(state["priorities"])
        self._log_sequence = self._applied_sequence = int(state["log_sequence"])
        self._update_sequence = int(state["update_sequence"])
        self._actors.restore(zip(state["actor_ids"], state["actor_sequences"]))
        self.restored["checkpoint"] = True

    def _apply_record(self, kind: bytes, sequence: int, payload: bytes) -> None:
        """Re-apply one logged push or priority update (the next in its sequence)."""
        if kind == UPDATE:
            update = pb.UpdateRequest.FromString(payload)
            self.update_priorities(
                codec.from_tensor(update.indices, "indices"),
                codec.from_tensor(update.priorities, "priorities"),
                codec.from_tensor(update.versions, "versions"),
            )
            self._update_sequence = sequence
            self.restored["update_records"] += 1
            return
        request = pb.PushRequest.FromString(payload)
        batch = codec.check_batch(
            codec.decode_transitions(request.transitions),
            self.obs_shape,
            codec.from_tensor(request.priorities, "priorities"),
            self.obs_dtype,
        )
        self._insert(batch)
        self._log_sequence = self._applied_sequence = sequence
        self._actors.acknowledge(request.actor_id, int(request.sequence))
        self.restored["log_records"] += 1

    def _handle_bad_tail(self, wal: WriteAheadLog, scan: LogScan) -> None:
        """Set a bad log tail aside (torn: with a warning; damaged: only with ``accept_loss``, else refuse)."""
        where = (
            f"replay log {wal.path}: {scan.tail_bytes} bytes from offset {scan.valid_bytes} start with {scan.reason}"
        )
        if scan.torn:
            side = wal.set_aside(scan.valid_bytes)
            self.recovery.update(set_aside=str(side), torn_bytes=scan.tail_bytes, torn_records=1)
            if scan.synced:
                what = (
                    "every record of this log was fsynced before its acknowledgement (sync_wal), so it was never "
                    "acknowledged"
                )
            else:
                self.recovery["may_include_acknowledged"] = True
                what = (
                    "it may include acknowledged records (not fsynced: the log was written without sync_wal), 1 "
                    "incomplete record here and, after a power cut, any the OS had not yet written back, which "
                    "cannot be counted"
                )
            warnings.warn(
                f"{where}, ending on a page boundary: a write cut by a crash or a power cut; {what}; moved to {side}",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        pushes = [payload for kind, _, payload, _ in scan.intact_after if kind == PUSH]
        transitions = sum(int((pb.PushRequest.FromString(p).transitions.actions.shape or [0])[0]) for p in pushes)
        lost = {
            "damaged_records": 1,
            "intact_records_after": len(scan.intact_after),
            "pushes_after": len(pushes),
            "transitions_after": transitions,
            "updates_after": len(scan.intact_after) - len(pushes),
        }
        summary = (
            f"{where}; lost if dropped: that record and the {lost['intact_records_after']} intact records "
            f"after it ({lost['pushes_after']} pushes holding {transitions} transitions, "
            f"{lost['updates_after']} priority updates), all acknowledged"
        )
        if (scan.reason or "").startswith("an incomplete"):
            summary += (
                f"; the file ends mid-record off a {PAGE_BYTES}-byte page boundary, so it was cut, not torn "
                f"by a crash, and records that were after the cut cannot be counted"
            )
        if not self.accept_loss:
            raise ValueError(
                f"refusing to start: {summary}. Restart with accept_loss=True (--accept-loss) to go on "
                f"without them (the tail is then moved to a side file)"
            )
        side = wal.set_aside(scan.valid_bytes)
        self.recovery.update(set_aside=str(side), lost=lost)
        warnings.warn(f"ACKNOWLEDGED DATA LOST: {summary}; moved to {side} (accept_loss)", RuntimeWarning, stacklevel=2)
