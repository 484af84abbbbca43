"""The choices a run makes before its loop, the same in every agent: where the offloaded kernel runs (the backend
names), which network backend, seeding, the ``Args`` fields an agent computes, and schedules.

Every agent's ``Args.backend`` names where its offloaded kernel runs, with the same names in every agent
(:data:`BACKENDS`): ``"host"`` is the agent's own reference on the host CPU, with no model of a core (PPO: CleanRL's
GAE loop; DQN and Ape-X: the float64 :class:`~pynq_rl.host.agents.replay.priorities.NumpySumTree`; Sarsa:
``sarsa.FloatSarsa``); ``"emu"`` (the default, here and on the command line),
``"rtl"``, ``"verilator"`` and ``"board"`` run the core on that :class:`~pynq_rl.host.overlay.RLOverlay` backend.

The rest of what agents share has a module each: the checks of ``Args`` (:mod:`.checks`, :mod:`.bounds`), the
environments (:mod:`.envs`), the run directory (:mod:`.rundir`) and checkpoints (:mod:`.checkpoints`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import random
from dataclasses import Field, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from . import checks
from .checks import FieldValueError

__all__ = [
    "BACKENDS",
    "NN_BACKENDS",
    "computed",
    "is_computed",
    "linear_schedule",
    "checkpoint_due",
    "torch_available",
    "resolve_nn",
    "resolved_nn",
    "seed_everything",
    "limit_torch_threads",
    "progress_bar",
]

BACKENDS = checks.BACKENDS
"""accepted values of every agent's ``Args.backend``: the host reference (no core), or the core on an overlay backend"""
NN_BACKENDS = ("torch", "numpy")
"""network backends of the agents: torch, or the numpy MLPs of ``numpy_nn`` (the PYNQ-Z2 has no torch)"""


# ---------------------------------------------------------------------------------------------------------------------
# Args: computed fields, schedules (the checks and their errors: .checks)
# ---------------------------------------------------------------------------------------------------------------------
def computed(default: Any) -> Any:
    """An ``Args`` field the agent fills in at runtime (a batch size derived from others...): not an option."""
    return field(default=default, metadata={"computed": True})


def is_computed(f: Field) -> bool:
    """True for a field declared with :func:`computed`."""
    return bool(f.metadata.get("computed"))


def linear_schedule(start: float, end: float, duration: float, t: float) -> float:
    """``start`` at ``t = 0``, linearly to ``end`` at ``t = duration``, then ``end`` (CleanRL's schedule)."""
    if duration <= 0:
        return end
    slope = (end - start) / duration
    return max(slope * t + start, end) if end <= start else min(slope * t + start, end)


def checkpoint_due(previous_step: int, global_step: int, every: int) -> bool:
    """Whether a periodic checkpoint is due after the agent went from ``previous_step`` to ``global_step``
    environment steps: a multiple of ``every`` lies in ``(previous_step, global_step]`` (never for ``every = 0``).

    ``checkpoint_every`` counts environment steps in every agent, so one that takes many steps at a time (a PPO
    iteration, a Sarsa episode) saves once, at the end of the step that reaches each multiple.
    """
    return every > 0 and global_step // every > previous_step // every


# ---------------------------------------------------------------------------------------------------------------------
# Network backend, seeding, the loop's surroundings
# ---------------------------------------------------------------------------------------------------------------------
def torch_available() -> bool:
    """True if torch can be imported here (it cannot on a PYNQ-Z2's armv7l)."""
    return importlib.util.find_spec("torch") is not None


def resolve_nn(nn: str | None) -> str:
    """The network backend to use: ``nn`` itself, or for ``None`` / ``"auto"`` torch where it imports, else numpy.

    Raises
    ------
    ValueError
        If ``nn`` is not a backend, or is ``"torch"`` where torch is not installed.
    """
    if nn in (None, "auto"):
        return "torch" if torch_available() else "numpy"
    if nn not in NN_BACKENDS:
        raise FieldValueError(f"nn must be one of {NN_BACKENDS} or 'auto', not {nn!r}", "nn")
    if nn == "torch" and not torch_available():
        raise FieldValueError(
            "nn 'torch' needs torch (pip install 'pynq-rl[torch]'); use nn 'numpy' where it has no "
            "wheel (the PYNQ-Z2's armv7l)",
            "nn",
        )
    return nn


def resolved_nn(nn: str | None) -> str:
    """``Args.nn`` after the agent's ``train`` resolved it (:func:`resolve_nn`): ``"torch"`` or ``"numpy"``.

    Raises
    ------
    RuntimeError
        If ``nn`` is still None: the arguments were not resolved.
    """
    if nn is None:
        raise RuntimeError("nn was not resolved (resolve_nn) before the networks were built")
    return nn


def seed_everything(seed: int, nn: str, *, torch_deterministic: bool = True) -> np.random.Generator:
    """Seed Python's, numpy's global and (for ``nn="torch"``) torch's generators; return a fresh numpy Generator.

    The returned ``numpy.random.Generator`` is the numpy networks' source of initial weights and sampled actions.
    """
    random.seed(seed)
    np.random.seed(seed)
    if nn == "torch":
        import torch

        torch.manual_seed(seed)
        torch.backends.cudnn.deterministic = torch_deterministic
    return np.random.default_rng(seed)


def limit_torch_threads(stack: contextlib.ExitStack, nn: str, threads: int) -> None:
    """With torch networks (``nn="torch"``), ``threads`` intra-op threads for the run; the caller's count comes back
    when ``stack`` unwinds (small MLPs run fastest on one thread, and a library caller keeps its own setting)."""
    if nn == "torch":
        import torch

        stack.callback(torch.set_num_threads, torch.get_num_threads())
        torch.set_num_threads(threads)


def progress_bar(total: int, initial: int, enabled: bool, name: str, unit: str = "step") -> tqdm:
    r"""A run's tqdm bar: ``total`` ``unit``\ s, ``initial`` of them done (a resumed run starts at its checkpoint),
    labelled with the run's name; ``enabled=False`` (``--no-progress``) draws nothing."""
    return tqdm(total=total, initial=min(initial, total), disable=not enabled, unit=unit, desc=name, dynamic_ncols=True)
