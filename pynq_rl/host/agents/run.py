"""What every agent shares, kept once (CleanRL keeps it in ``cleanrl_utils/``): the offload backends, the ``Args``
helpers (computed fields, errors that name a field), schedules, the run directory and its files, the environment
factory, seeding, the network backend choice and checkpoints without pickle.

Every agent's ``Args.backend`` names where its offloaded kernel runs, with the same names in every agent
(:data:`BACKENDS`): ``"host"`` is the agent's own reference on the host CPU, with no model of a core (PPO: CleanRL's
GAE loop; DQN and Ape-X: the float64 :class:`~.priorities.NumpySumTree`; Sarsa: ``sarsa_learners.FloatSarsa``);
``"emu"`` (the default, here and on the command line), ``"rtl"``, ``"verilator"`` and ``"board"`` run the core on
that :class:`~pynq_rl.host.overlay.RLOverlay` backend.

A run writes to ``out_dir/run_name/`` with ``run_name = f"{env_id}__{exp_name}__{seed}__{int(time.time())}"``
(CleanRL's name; a second run of the same name started within the same second gets ``__2``, ``__3``, ...: a run
never writes into another's directory):

``args.json``
    every hyperparameter, the "filled in runtime" ones included;
``metrics.csv`` / ``metrics.jsonl``
    one row per log step, CleanRL keys (``charts/...``, ``losses/...``, ``time/...[ms]``); NaN is ``null`` in JSONL;
``episodes.csv``
    one row per finished episode (``global_step, charts/episodic_return, charts/episodic_length``);
``summary.json``
    the run's result (without the per-episode lists);
``checkpoint.npz``
    everything needed to resume (see :func:`save_checkpoint`);
``events.out.tfevents.*``
    with ``tensorboard=True``: every metrics row as TensorBoard scalars (``tensorboard --logdir out_dir``), written by
    tensorboardX (``pip install 'pynq-rl[tensorboard]'``; pure Python, so it works on a board too).

Checkpoints (:mod:`.checkpoints`, re-exported here) are ``.npz`` archives of arrays and a JSON header, never pickle.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import random
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import Field, asdict, field
from typing import Any

import gymnasium as gym
import numpy as np

from . import checks
from .checkpoints import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from .checks import (
    FieldValueError,
    FieldWarning,
    check_backend,
    check_common,
    check_env_id,
    check_out_dir,
    check_seed,
    check_tensorboard,
    load_resume,
)

__all__ = [
    "BACKENDS",
    "NN_BACKENDS",
    "CHECKPOINT_FORMAT",
    "FieldValueError",
    "FieldWarning",
    "check_backend",
    "check_common",
    "check_env_id",
    "check_out_dir",
    "load_resume",
    "check_seed",
    "computed",
    "is_computed",
    "linear_schedule",
    "checkpoint_due",
    "Run",
    "make_env",
    "make_envs",
    "action_space_of",
    "normalized_observations",
    "normalized_rewards",
    "normalizer_state",
    "load_normalizer_state",
    "resolve_nn",
    "seed_everything",
    "json_safe",
    "check_tensorboard",
    "save_checkpoint",
    "load_checkpoint",
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
# Network backend, seeding, environments
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


def make_env(env_id: str, **kwargs: Any) -> Callable[[], gym.Env]:
    """Return a thunk that makes one ``env_id`` environment (for ``gym.vector.SyncVectorEnv``)."""

    def thunk() -> gym.Env:
        return gym.make(env_id, **kwargs)

    return thunk


def action_space_of(env_id: str) -> gym.Space:
    """The action space of ``env_id`` (made once and closed).

    Raises
    ------
    FieldValueError
        ``env_id`` is not a registered environment (naming the ``env_id`` field).
    """
    check_env_id(env_id)
    env = gym.make(env_id)
    try:
        return env.action_space
    finally:
        env.close()


def make_envs(env_fns: list, seed: int | None = None) -> gym.vector.VectorEnv:
    """The vector environment every agent expects: SAME_STEP autoreset plus episode statistics.

    Under ``autoreset_mode=SAME_STEP`` a sub-environment that ends at step ``t`` is reset inside that same
    ``step()``: the returned observation starts the next episode and the finished episode's last observation is in
    ``infos["final_obs"][n]``, so every step is a real transition and a time-limit cut can be bootstrapped.

    Parameters
    ----------
    env_fns : list of callables
        One thunk per sub-environment (see :func:`make_env`).
    seed : int, optional
        If given, seeds the action space (the environments are seeded by the first ``reset(seed=...)``).

    Returns
    -------
    gym.vector.VectorEnv
        ``RecordEpisodeStatistics(SyncVectorEnv(env_fns, autoreset_mode=SAME_STEP))``.
    """
    envs = gym.vector.SyncVectorEnv(env_fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    if seed is not None:
        envs.action_space.seed(seed)
    return envs


def normalized_observations(env_fn: Callable[[], gym.Env], clip_obs: float) -> Callable[[], gym.Env]:
    """Wrap a :func:`make_env` thunk in CleanRL's observation normalization: ``NormalizeObservation`` (running
    mean/var of every observation) then a clip to ``+-clip_obs``.

    It wraps each sub-environment (inside the vector env), so ``infos["final_obs"]`` is normalized too and
    ``V(final_obs)`` sees the observations V is trained on (gymnasium's vector observation wrappers refuse SAME_STEP
    autoreset for that reason).

    Raises
    ------
    ValueError
        If ``clip_obs`` is not positive.
    """
    if not clip_obs > 0:
        raise ValueError(f"clip_obs must be > 0, not {clip_obs!r}")

    def thunk() -> gym.Env:
        env = gym.wrappers.NormalizeObservation(env_fn())
        return gym.wrappers.TransformObservation(
            env, lambda obs: np.clip(obs, -clip_obs, clip_obs), env.observation_space
        )

    return thunk


def normalized_rewards(envs: gym.vector.VectorEnv, gamma: float, clip_reward: float) -> gym.vector.VectorEnv:
    """CleanRL's reward normalization around :func:`make_envs`' output: ``NormalizeReward`` (rewards divided by the
    running std of the discounted return with ``gamma``) then a clip to ``+-clip_reward``.

    The episode statistics are recorded inside these wrappers, so logged returns stay raw.

    Raises
    ------
    ValueError
        If ``clip_reward`` is not positive.
    """
    if not clip_reward > 0:
        raise ValueError(f"clip_reward must be > 0, not {clip_reward!r}")
    envs = gym.wrappers.vector.NormalizeReward(envs, gamma=gamma)
    return gym.wrappers.vector.ClipReward(envs, -clip_reward, clip_reward)


def _wrapper(env: Any, cls: type) -> Any:
    """The first wrapper of type ``cls`` around ``env`` (None if there is none)."""
    while env is not None:
        if isinstance(env, cls):
            return env
        env = getattr(env, "env", None)
    return None


def _normalizers(envs: gym.vector.VectorEnv) -> dict[str, list]:
    """The running-statistics wrappers: one ``NormalizeObservation`` per sub-environment, one ``NormalizeReward``."""
    subs = getattr(envs.unwrapped, "envs", [])
    found = {
        "obs_rms": [_wrapper(env, gym.wrappers.NormalizeObservation) for env in subs],
        "return_rms": [_wrapper(envs, gym.wrappers.vector.NormalizeReward)],
    }
    return {key: [w for w in wrappers if w is not None] for key, wrappers in found.items()}


def normalizer_state(envs: gym.vector.VectorEnv) -> dict[str, Any]:
    """The running statistics of the normalization wrappers (:func:`normalized_observations`,
    :func:`normalized_rewards`): ``obs_rms`` (one per sub-environment) and ``return_rms`` (0 or 1), lists of dicts
    with ``mean``, ``var``, ``count`` (and ``accumulated_reward`` for the return)."""
    state: dict[str, Any] = {}
    for key, wrappers in _normalizers(envs).items():
        state[key] = []
        for w in wrappers:
            stats = getattr(w, key)
            row = {
                "mean": np.array(stats.mean, np.float64),
                "var": np.array(stats.var, np.float64),
                "count": float(stats.count),
            }
            if key == "return_rms":
                row["accumulated_reward"] = np.array(w.accumulated_reward, np.float64)
            state[key].append(row)
    return state


def load_normalizer_state(envs: gym.vector.VectorEnv, state: dict[str, Any]) -> None:
    """Restore :func:`normalizer_state` output into the wrappers of ``envs``.

    Raises
    ------
    ValueError
        If the saved statistics do not match the wrappers in number or shape (nothing is changed then).
    """
    found = _normalizers(envs)
    for key, wrappers in found.items():
        saved = list(state.get(key) or [])
        if len(saved) != len(wrappers):
            raise ValueError(f"the checkpoint has {len(saved)} {key} statistics, this run's wrappers {len(wrappers)}")
        for w, row in zip(wrappers, saved):
            if np.shape(row["mean"]) != np.shape(getattr(w, key).mean):
                raise ValueError(f"{key} has shape {np.shape(row['mean'])}, expected {np.shape(getattr(w, key).mean)}")
    for key, wrappers in found.items():
        for w, row in zip(wrappers, state[key]):
            stats = getattr(w, key)
            stats.mean = np.array(row["mean"], np.float64)
            stats.var = np.array(row["var"], np.float64)
            stats.count = float(row["count"])
            if "accumulated_reward" in row:
                w.accumulated_reward = np.array(row["accumulated_reward"], np.float64)


def finished_episodes(infos: dict) -> Iterable[tuple[int, float, int]]:
    """``(env index, return, length)`` of every episode ``RecordEpisodeStatistics`` reports in ``infos``."""
    if "_episode" in infos:
        for i in np.flatnonzero(infos["_episode"]):
            yield int(i), float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])


# ---------------------------------------------------------------------------------------------------------------------
# The run directory
# ---------------------------------------------------------------------------------------------------------------------
def json_safe(row: dict[str, Any]) -> dict[str, Any]:
    """NaN (no episode finished, no statistics yet) becomes JSON ``null``; numpy scalars become Python numbers."""
    out = {}
    for key, value in row.items():
        if isinstance(value, np.generic):
            value = value.item()
        out[key] = None if isinstance(value, float) and math.isnan(value) else value
    return out


def _new_run_dir(out_dir: str, prefix: str) -> tuple[str, str]:
    """Create ``out_dir/<prefix>__<unix time>`` (``__2``, ``__3``, ... appended while that name is taken) and return
    its name and path: created exclusively, so two runs started in the same second never share one. An ``out_dir``
    that is a file fails at the run directory's ``mkdir`` (``NotADirectoryError`` naming the run's path)."""
    if not os.path.exists(out_dir):
        os.makedirs(out_dir, exist_ok=True)
    base = name = f"{prefix}__{int(time.time())}"
    taken = 1
    while True:
        try:
            os.mkdir(os.path.join(out_dir, name))
            return name, os.path.join(out_dir, name)
        except FileExistsError:
            taken += 1
            name = f"{base}__{taken}"


class Run:
    """One training run's directory and its files (see the module docstring), opened by the agent's ``train``.

    Parameters
    ----------
    args : dataclass instance
        The agent's filled-in ``Args``; needs ``env_id``, ``exp_name``, ``seed`` and ``out_dir``.
    metric_keys : tuple of str
        Columns of ``metrics.csv`` (every row written must use exactly these keys).
    tensorboard : bool
        Also write every row as TensorBoard scalars (x axis: the row's ``global_step``) and every episode's return
        and length (``charts/episodic_return``, ``charts/episodic_length``).

    Attributes
    ----------
    name : str
        ``run_name``.
    dir : str
        ``out_dir/run_name``.
    episode_returns : list of float
        The return of every episode recorded so far (:meth:`episode`), in order.
    episode_lengths : list of int
        Their lengths, in steps.

    Notes
    -----
    A run is a context manager: leaving it closes the files, and leaving it with an exception before any metrics
    row or episode was recorded removes the directory (:meth:`abandon`), so a run that failed at its start leaves
    no directory holding only ``args.json`` behind.
    """

    EPISODE_COLUMNS = ("global_step", "charts/episodic_return", "charts/episodic_length")

    def __init__(self, args: Any, metric_keys: tuple[str, ...], tensorboard: bool = False) -> None:
        check_tensorboard(tensorboard)
        self.name, self.dir = _new_run_dir(args.out_dir, f"{args.env_id}__{args.exp_name}__{args.seed}")
        with open(self.path("args.json"), "w", encoding="utf-8") as f:
            json.dump(asdict(args), f, indent=2)
        self.start_time = time.time()
        self.rows_logged = 0
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self._metrics_csv = open(self.path("metrics.csv"), "w", newline="", encoding="utf-8")
        self._metrics_jsonl = open(self.path("metrics.jsonl"), "w", encoding="utf-8")
        self._episodes_csv = open(self.path("episodes.csv"), "w", newline="", encoding="utf-8")
        self._metrics = csv.DictWriter(self._metrics_csv, fieldnames=metric_keys)
        self._metrics.writeheader()
        self._episodes = csv.writer(self._episodes_csv)
        self._episodes.writerow(self.EPISODE_COLUMNS)
        self._tensorboard = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tensorboard = SummaryWriter(self.dir)
            self._tensorboard.add_text("args", "\n".join(f"{k}: {v}" for k, v in asdict(args).items()))

    def path(self, name: str) -> str:
        """``name`` inside the run directory."""
        return os.path.join(self.dir, name)

    def episode(self, global_step: int, episode_return: float, episode_length: int) -> None:
        """Record one finished episode (kept in :attr:`episode_returns` / :attr:`episode_lengths` too)."""
        self.episode_returns.append(float(episode_return))
        self.episode_lengths.append(int(episode_length))
        self._episodes.writerow([int(global_step), float(episode_return), int(episode_length)])
        if self._tensorboard is not None:
            self._tensorboard.add_scalar("charts/episodic_return", float(episode_return), int(global_step))
            self._tensorboard.add_scalar("charts/episodic_length", int(episode_length), int(global_step))

    def log(self, row: dict[str, Any]) -> None:
        """Write one metrics row to ``metrics.csv`` and ``metrics.jsonl`` and flush every file."""
        self._metrics.writerow(row)
        self.rows_logged += 1
        self._metrics_jsonl.write(json.dumps(json_safe(row)) + "\n")
        if self._tensorboard is not None:
            step = int(row.get("global_step", 0))
            for key, value in row.items():
                # per-episode values go in with their own steps (episode()); NaN means "nothing this row"
                if (
                    key not in ("global_step", "charts/episodic_return", "charts/episodic_length")
                    and isinstance(value, (int, float, np.number))
                    and math.isfinite(value)
                ):
                    self._tensorboard.add_scalar(key, float(value), step)
            self._tensorboard.flush()
        for f in (self._metrics_csv, self._metrics_jsonl, self._episodes_csv):
            f.flush()

    def mean_return(self, last: int = 20) -> float:
        """Mean of the last ``last`` episode returns (NaN if none finished)."""
        tail = self.episode_returns[-last:]
        return float(np.mean(tail)) if tail else math.nan

    def sps(self, steps: int) -> int:
        """Environment steps per second since the run started, for ``steps`` steps taken in it."""
        return int(steps / max(time.time() - self.start_time, 1e-9))

    def finish(self, **summary: Any) -> dict[str, Any]:
        """Close the files, write ``summary.json`` and return the summary.

        The summary holds ``run_name``, ``run_dir``, ``episode_returns``, ``episode_lengths``,
        ``mean_return_last20`` and ``wall_time_s``, then the given entries (which may override those);
        ``summary.json`` leaves out the per-episode lists and counts them instead (``episodes``).
        """
        self.close()
        summary = {
            "run_name": self.name,
            "run_dir": self.dir,
            "episode_returns": self.episode_returns,
            "episode_lengths": self.episode_lengths,
            "mean_return_last20": self.mean_return(20),
            "wall_time_s": time.time() - self.start_time,
            **summary,
        }
        short = {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}
        short.setdefault("episodes", len(self.episode_returns))
        with open(self.path("summary.json"), "w", encoding="utf-8") as f:
            json.dump(json_safe(short), f, indent=2)
        return summary

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def abandon(self) -> None:
        """Close the files; remove the run directory if nothing was recorded in it yet (a run that failed at once)."""
        self.close()
        if not self.rows_logged and not self.episode_returns:
            shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> None:
        """Close the metrics files (idempotent; :meth:`finish` calls it)."""
        for f in (self._metrics_csv, self._metrics_jsonl, self._episodes_csv):
            f.close()
        if self._tensorboard is not None:
            self._tensorboard.close()
