"""The sampling half of :class:`~.server.ReplayServer`, mixed into it: prioritized batches out, the learner's new
priorities in.

Works on the server's storage, priority backend, log and counters under its storage lock, as
:class:`~.recovery.ReplayRecovery` does for the durable half; apart from ``server.py`` so that each path of the
server reads in one file (the insertion path and the life cycle there, the sampling path here).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .state import ReplayServerState as _ServerState
else:
    _ServerState = object  # the server's state, declared for mypy (:mod:`.state`); no base class at run time

__all__ = ["ReplaySampling", "EmptyReplayError"]


class EmptyReplayError(RuntimeError):
    """Nothing to sample yet (gRPC ``FAILED_PRECONDITION``)."""


class ReplaySampling(_ServerState):
    """:meth:`sample` and :meth:`update_priorities` of :class:`~.server.ReplayServer` (thread-safe there: both take
    its storage lock)."""

    def sample(self, batch_size: int, beta: float = 0.4) -> dict[str, Any]:
        """A prioritized batch: the transition fields plus ``indices`` (int64), ``weights`` (float32), ``versions``.

        Every value is an array, except a packing server's (``obs_dtype="zlib"``) ``frames`` (a list of bytes, one
        packed row per transition) and ``frames_shape`` (a tuple).

        Raises
        ------
        ValueError
            ``batch_size`` below 1 or above :attr:`max_sample` (checked before any work), ``beta`` outside [0, 1].
        EmptyReplayError
            Nothing stored yet (or every priority is 0).
        """
        start = time.perf_counter()
        if not isinstance(batch_size, (int, np.integer)) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be an integer >= 1, not {batch_size!r}")
        if int(batch_size) > self.max_sample:
            raise ValueError(
                f"batch_size must be at most {self.max_sample} (max_sample: the capacity, or the rows "
                f"one reply holds), not {batch_size!r}"
            )
        if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= float(beta) <= 1.0):
            raise ValueError(f"beta must be a number in [0, 1], not {beta!r}")
        self._check_open()
        with self._store_lock:
            size = self.size()
            if size == 0 or self.priorities.nonzero == 0:
                raise EmptyReplayError(
                    f"nothing to sample: {size} transitions stored, {self.priorities.nonzero} with a nonzero priority"
                )
            indices, _, weights = self.priorities.sample(int(batch_size), float(beta))
            indices = np.asarray(indices, dtype=np.int64)
            if np.any(indices < 0) or np.any(indices >= size):
                raise RuntimeError(f"the priority backend sampled slots outside the {size} stored transitions")
            out: dict[str, Any] = {
                name: [self.frames[i] for i in indices.tolist()] if name == "frames" else getattr(self, name)[indices]
                for name in self._fields
            }
            out["versions"] = self.versions[indices]
        if self.obs_dtype == "zlib":
            out["frames_shape"] = self.obs_shape
        out["indices"] = indices
        out["weights"] = np.asarray(weights, dtype=np.float32)
        self._counters["sample_calls"] += 1
        self._latency_s["sample_s"] += time.perf_counter() - start
        return out

    def update_priorities(
        self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray | None = None
    ) -> dict[str, int]:
        """Set new priorities for sampled slots; with ``versions``, skip slots overwritten since they were sampled.

        Returns
        -------
        dict
            ``updated`` and ``stale`` (skipped) counts.

        Raises
        ------
        ValueError
            Indices not 1-D integers of stored slots, priorities of another shape, negative or non-finite.
        """
        start = time.perf_counter()
        indices = np.asarray(indices)
        priorities = np.asarray(priorities, dtype=np.float64)
        if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
            raise ValueError(f"indices must be a 1-D integer array, not {indices.dtype} of shape {indices.shape}")
        if priorities.shape != indices.shape:
            raise ValueError(f"priorities must have the shape of indices {indices.shape}, not {priorities.shape}")
        if not np.all(np.isfinite(priorities)) or np.any(priorities < 0):
            raise ValueError("priorities must be finite and >= 0")
        if versions is not None:
            versions = np.asarray(versions)
            if versions.shape != indices.shape:
                raise ValueError(f"versions must have the shape of indices {indices.shape}, not {versions.shape}")
        self._check_open()
        indices = indices.astype(np.int64)
        with self._store_lock:
            size = self.size()
            bad = (indices < 0) | (indices >= size)
            if np.any(bad):
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"indices[{i}] = {indices[i]} holds no transition (stored: {size})")
            keep = (
                np.ones(indices.shape, dtype=bool)
                if versions is None
                else self.versions[indices] == versions.astype(np.uint64)
            )
            if np.any(keep):
                if self._wal is not None:  # write-ahead: logged with the versions it was applied to
                    self._log_update(indices[keep], priorities[keep], self.versions[indices[keep]])
                self.priorities.update(indices[keep], priorities[keep])
        updated, stale = int(keep.sum()), int((~keep).sum())
        self._counters["update_calls"] += 1
        self._counters["updated_priorities"] += updated
        self._counters["stale_priorities"] += stale
        self._latency_s["update_s"] += time.perf_counter() - start
        return {"updated": updated, "stale": stale}
