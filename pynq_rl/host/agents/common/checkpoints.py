"""Checkpoints without pickle: every agent's resumable state as an ``.npz`` of arrays and one JSON header.

Every array of the (nested) state is stored under its path (``model/actor/0.weight``); one JSON header
(``__header__``) holds the rest of the structure, the scalars and strings, the checkpoint format and the agent's name.
Archives are read with ``allow_pickle=False``: loading one never executes code, and any numpy reads it. A save goes
to a temporary file first and is renamed into place, so an interrupted save never leaves a torn checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["CHECKPOINT_FORMAT", "save_checkpoint", "load_checkpoint", "checkpoint_agent", "run_checkpoint"]

CHECKPOINT_FORMAT = 2
"""version of the checkpoint layout (1 was a torch pickle)"""
_HEADER = "__header__"
_ARRAY = "__array__"


def _split(obj: Any, path: str, arrays: dict[str, np.ndarray]) -> Any:
    """Replace every array in ``obj`` by a reference to its entry in ``arrays``; return the JSON-able rest."""
    if isinstance(obj, np.ndarray):
        arrays[path] = obj
        return {_ARRAY: path}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str) or "/" in key or key in (_ARRAY, _HEADER):
                raise ValueError(f"checkpoint keys must be strings without '/', not {key!r} (at {path!r})")
        return {key: _split(value, f"{path}/{key}" if path else key, arrays) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split(value, f"{path}/{i}", arrays) for i, value in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(
        f"a checkpoint holds arrays, numbers, strings, lists and dicts, not {type(obj).__name__} (at {path!r})"
    )


def _join(obj: Any, arrays: Any) -> Any:
    """The inverse of :func:`_split`."""
    if isinstance(obj, dict):
        if set(obj) == {_ARRAY}:
            return np.array(arrays[obj[_ARRAY]])
        return {key: _join(value, arrays) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_join(value, arrays) for value in obj]
    return obj


def save_checkpoint(path: str | os.PathLike, agent: str, state: dict[str, Any], *, sync: bool = False) -> None:
    """Write ``state`` (nested dicts/lists of numpy arrays, numbers, strings) as an ``.npz`` with a JSON header.

    Parameters
    ----------
    path : str or os.PathLike
        File to write (its directory is created). Written to a temporary file first, then renamed, so an
        interrupted save never leaves a torn checkpoint behind.
    agent : str
        The agent's name (``"ppo"``, ``"dqn"``, ...), checked by :func:`load_checkpoint`.
    state : dict
        What to save; dict keys must be strings without ``/``.
    sync : bool
        fsync the file before the rename (a checkpoint that must survive a power cut).

    Raises
    ------
    TypeError, ValueError
        If ``state`` holds something else (an object, a tensor) or a bad key; nothing is written then.
    """
    path = os.fspath(path)
    arrays: dict[str, np.ndarray] = {}
    header = {"format": CHECKPOINT_FORMAT, "agent": agent, "state": _split(state, "", arrays)}
    if any(a.dtype == object for a in arrays.values()):
        raise TypeError("a checkpoint cannot hold object arrays")
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **{_HEADER: np.array(json.dumps(header))}, **arrays)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


_ZIP_MAGIC = b"PK\x03\x04"
"""how an ``.npz`` (a zip archive) starts"""


def _check_npz_magic(head: bytes) -> None:
    """Raise ``ValueError`` unless a file starting with ``head`` can be an ``.npz`` archive (numpy's own message for
    anything else speaks of pickles, which a checkpoint never holds)."""
    if head and np.lib.format.MAGIC_PREFIX.startswith(head):
        raise ValueError("it is a single .npy array, not an .npz archive")
    if head != _ZIP_MAGIC:
        raise ValueError("it is not an .npz archive (a checkpoint is the checkpoint.npz a run writes)")


_DAMAGED = (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError)
"""what reading a damaged or foreign file raises (a damaged zip can claim an unknown compression, NotImplementedError,
or encryption, RuntimeError)"""


def _open_archive(f: Any) -> tuple[Any, dict[str, Any]]:
    """The ``.npz`` archive in the open file ``f`` and its JSON header (``ValueError`` unless it is one)."""
    _check_npz_magic(f.read(len(_ZIP_MAGIC)))
    f.seek(0)
    archive = np.load(f, allow_pickle=False)
    header = json.loads(str(archive[_HEADER]))
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    return archive, header


@contextlib.contextmanager
def _reading(path: str, what: str) -> Iterator[Any]:
    """The open checkpoint file at ``path``; anything a damaged or foreign file raises in the body becomes one
    ``ValueError`` saying it is not ``what`` (a missing file stays a ``FileNotFoundError``)."""
    try:
        with open(path, "rb") as f:
            yield f
    except FileNotFoundError:
        raise
    except _DAMAGED as exc:
        raise ValueError(f"{path!r} is not {what}: {exc}") from exc


def checkpoint_agent(path: str | os.PathLike) -> str:
    """The agent that wrote the checkpoint at ``path`` (its header's ``agent``), read without unpickling anything.

    Raises
    ------
    ValueError
        If the file is not a pynq-rl checkpoint.
    FileNotFoundError
        If there is no such file.
    """
    path = os.fspath(path)
    with _reading(path, "a pynq-rl checkpoint") as f:
        _, header = _open_archive(f)
        return str(header["agent"])


def load_checkpoint(path: str | os.PathLike, agent: str) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` for ``agent`` (never unpickles anything).

    Returns
    -------
    dict
        The saved ``state``, arrays as numpy arrays.

    Raises
    ------
    ValueError
        If the file is not a pynq-rl checkpoint of this format for ``agent``.
    FileNotFoundError
        If there is no such file.
    """
    path = os.fspath(path)
    with _reading(path, f"a pynq-rl {agent} checkpoint of format {CHECKPOINT_FORMAT}") as f:
        archive, header = _open_archive(f)
        found = (header.get("agent"), header.get("format"))
        if found != (agent, CHECKPOINT_FORMAT):
            raise ValueError(f"it holds agent {found[0]!r}, format {found[1]!r}")
        return _join(header["state"], archive)


def run_checkpoint(run_dir: str | os.PathLike) -> str | None:
    """The checkpoint a run directory's run saved: its ``checkpoint.npz``, else the ``checkpoint_path`` its
    ``args.json`` names (``--checkpoint-path`` put it elsewhere); None if neither exists.

    The one place that knows where a run keeps its checkpoint, so that ``--resume RUN_DIR`` and
    ``pynq-rl eval RUN_DIR`` find the same file.
    """
    checkpoint = os.path.join(run_dir, "checkpoint.npz")
    if os.path.isfile(checkpoint):
        return checkpoint
    try:
        with open(os.path.join(run_dir, "args.json"), encoding="utf-8") as f:
            elsewhere = json.load(f).get("checkpoint_path")
    except (OSError, ValueError, AttributeError):  # no args.json, or not a run's (not JSON, not an object)
        return None
    return elsewhere if isinstance(elsewhere, str) and os.path.isfile(elsewhere) else None
