"""The checks every agent makes of its ``Args`` before any environment, overlay or run directory exists, and the
error that names the fields it is about (the command line rewords it with the flags the user typed).

A module of its own so that a check and its error read in one place; the numeric ranges are :mod:`.bounds`.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import gymnasium as gym

from .checkpoints import load_checkpoint, run_checkpoint

__all__ = [
    "BACKENDS",
    "FieldValueError",
    "FieldWarning",
    "check_backend",
    "check_seed",
    "check_common",
    "check_out_dir",
    "check_env_id",
    "check_tensorboard",
    "load_resume",
]

BACKENDS = ("host", "emu", "rtl", "verilator", "board")
"""accepted values of every agent's ``Args.backend``: the host reference (no core), or the core on an overlay backend"""


class FieldValueError(ValueError):
    """A ValueError about argument values whose message names ``Args`` fields; ``fields`` lists those names, so the
    command line can name the flags the user typed instead (``total_timesteps must be >= 1`` reads
    ``--steps must be >= 1`` there)."""

    def __init__(self, message: str, *fields: str) -> None:
        super().__init__(message)
        self.fields = fields


class FieldWarning(RuntimeWarning):
    """A warning that the run, as its arguments stand, will not do what it is for (learn nothing, saturate the core);
    its message names ``Args`` fields (``fields``), which the command line rewords with the flags the user typed, as
    it does for :class:`FieldValueError`."""

    def __init__(self, message: str, *fields: str) -> None:
        super().__init__(message)
        self.fields = fields


def check_backend(backend: str) -> None:
    """Raise :class:`FieldValueError` unless ``backend`` is one of :data:`BACKENDS`.

    The host reference's former names (``"numpy"`` in DQN and Ape-X, ``"float"`` in Sarsa) are refused too, with a
    message that names the new one.
    """
    if backend not in BACKENDS:
        hint = " (the host reference, formerly 'numpy' or 'float', is 'host')" if backend in ("numpy", "float") else ""
        raise FieldValueError(f"backend must be one of {BACKENDS}, not {backend!r}{hint}", "backend")


def check_seed(seed: int) -> None:
    """Raise :class:`FieldValueError` unless ``seed`` is one numpy's and Python's generators take (0 .. 2**32 - 1)."""
    if not 0 <= int(seed) < 2**32:
        raise FieldValueError(f"seed must be in [0, 2**32), not {seed!r}", "seed")


def check_common(args: Any) -> None:
    """What every agent checks first: its ``tensorboard``, ``backend``, ``seed``, ``env_id`` and ``out_dir`` fields
    (:func:`check_tensorboard`, :func:`check_backend`, :func:`check_seed`, :func:`check_env_id`,
    :func:`check_out_dir`), before any environment, overlay or run directory exists.

    Raises
    ------
    FieldValueError
        One of them is out of range (naming its field).
    """
    check_tensorboard(args.tensorboard)
    check_backend(args.backend)
    check_seed(args.seed)
    check_env_id(args.env_id)
    check_out_dir(args.out_dir)


def check_out_dir(out_dir: str) -> None:
    """Raise :class:`FieldValueError` unless ``out_dir`` is a directory or can become one: neither it nor any of its
    parents is a file (a run would otherwise fail at its ``mkdir``, after the environment and overlay were built)."""
    path = os.path.abspath(os.fspath(out_dir))
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent
    if not os.path.isdir(path):
        where = "is a file" if path == os.path.abspath(os.fspath(out_dir)) else f"is under the file {path!r}"
        raise FieldValueError(f"out_dir {os.fspath(out_dir)!r} {where}: give a directory for the runs", "out_dir")


def load_resume(path: str, agent: str) -> dict[str, Any]:
    """The state of the checkpoint a run resumes from (``resume``): a ``checkpoint.npz``, or a run directory (its
    checkpoint, :func:`~.checkpoints.run_checkpoint`), written by ``agent``.

    Raises
    ------
    FieldValueError
        Naming ``resume`` (the command line says ``--resume``): no such file, a directory without a checkpoint, or
        not a pynq-rl checkpoint of ``agent`` (:func:`~.checkpoints.load_checkpoint` says why).
    """
    checkpoint = run_checkpoint(path) if os.path.isdir(path) else path
    if checkpoint is None or not os.path.isfile(checkpoint):
        what = "a directory without a checkpoint.npz" if os.path.isdir(path) else "no such file"
        hint = "give a checkpoint.npz or its run directory"
        raise FieldValueError(f"resume {os.fspath(path)!r}: {what} ({hint})", "resume")
    try:
        return load_checkpoint(checkpoint, agent)
    except ValueError as error:
        raise FieldValueError(f"resume: {error}", "resume") from error


def check_env_id(env_id: str) -> None:
    """Raise :class:`FieldValueError` unless gymnasium's registry knows ``env_id`` (ids of the form
    ``module:Name-v0``, whose module registers them when gymnasium imports it, are left to ``gym.make``)."""
    if not isinstance(env_id, str) or not env_id:
        raise FieldValueError(f"env_id must be a registered gymnasium environment id, not {env_id!r}", "env_id")
    module, colon, name = env_id.rpartition(":")
    if colon:  # gym.make imports ``module`` (which registers ``name``) first
        if all(part.isidentifier() for part in module.split(".")) and name:
            return
        raise FieldValueError(
            f"env_id {env_id!r} is not a registered gymnasium environment: 'module:Name-v0' needs a module path and a "
            "name",
            "env_id",
        )
    try:
        gym.spec(env_id)
    except gym.error.Error as error:
        raise FieldValueError(
            f"env_id {env_id!r} is not a registered gymnasium environment: {error}", "env_id"
        ) from None


def check_tensorboard(enabled: bool) -> None:
    """Raise before any run directory exists if TensorBoard logging is asked for and tensorboardX is missing.

    Raises
    ------
    ValueError
        ``enabled`` and no tensorboardX.
    """
    if enabled and importlib.util.find_spec("tensorboardX") is None:
        raise FieldValueError("tensorboard needs tensorboardX (pip install 'pynq-rl[tensorboard]')", "tensorboard")
