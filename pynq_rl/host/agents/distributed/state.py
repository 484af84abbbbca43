"""The state of a :class:`~.server.ReplayServer` that its mixins work on, declared once for the type checker.

:class:`~.sampling.ReplaySampling` and :class:`~.recovery.ReplayRecovery` are mixed into the server and use its
storage, priority backend, locks, counters and a few of its methods. :class:`ReplayServerState` lists them with their
types; each mixin subclasses it only while type checking (at run time its base is ``object``), so mypy checks the
mixins against these declarations and the server's ``__init__`` against the same ones.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

if TYPE_CHECKING:
    from ..replay.priorities import PriorityBackend
    from .actors import ActorSequences
    from .wal import WriteAheadLog

__all__ = ["ReplayServerState", "Restored"]


class Restored(TypedDict):
    """What a server's recovery restored (``ReplayServer.restored``)."""

    checkpoint: bool
    """a ``replay.ckpt`` was loaded"""
    log_records: int
    """pushed batches re-applied from the log"""
    update_records: int
    """priority updates re-applied from the log"""


class ReplayServerState(Protocol):
    """The attributes and methods of :class:`~.server.ReplayServer` its mixins use (set in its ``__init__``)."""

    capacity: int
    obs_shape: tuple[int, ...]
    obs_dtype: str
    sync_wal: bool
    accept_loss: bool
    max_sample: int
    checkpoint_dir: Path | None
    priorities: PriorityBackend
    frames: list[bytes]
    versions: np.ndarray
    pos: int
    full: bool
    restored: Restored
    recovery: dict[str, Any]
    _fields: tuple[str, ...]
    _actors: ActorSequences
    _store_lock: threading.Lock
    _push_lock: threading.Lock
    _wal_lock: threading.Lock
    _cv: threading.Condition
    _wal: WriteAheadLog | None
    _closed: bool
    _log_sequence: int
    _update_sequence: int
    _applied_sequence: int
    _counters: collections.Counter[str]
    _latency_s: collections.defaultdict[str, float]

    def size(self) -> int: ...

    def flush(self, timeout_s: float = 30.0) -> None: ...

    def _check_open(self, closed_ok: bool = False) -> None: ...

    def _insert(self, batch: Mapping[str, Any]) -> None: ...

    # defined by the mixins, each used by the other
    def update_priorities(
        self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray | None = None
    ) -> dict[str, int]: ...

    def _log_update(self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray) -> None: ...
