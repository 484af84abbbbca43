"""The agents' environments: construction, vectorization, observation and reward normalization, and their state.

Every agent builds its environments here, so that seeding, gymnasium's SAME_STEP autoreset and the normalizers'
running statistics (saved in checkpoints and restored on resume, :func:`normalizer_state`) are done one way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np

from .checks import check_env_id

__all__ = [
    "make_env",
    "make_envs",
    "action_space_of",
    "space_shape",
    "discrete_actions",
    "normalized_observations",
    "normalized_rewards",
    "normalizer_state",
    "load_normalizer_state",
    "finished_episodes",
]


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


def space_shape(space: gym.Space) -> tuple[int, ...]:
    """``space.shape``, which the agents' spaces (``Box``, ``Discrete``) have.

    Raises
    ------
    ValueError
        If ``space`` has no shape (a ``Dict``, ``Tuple`` or ``Graph`` space).
    """
    if space.shape is None:
        raise ValueError(f"the agents need spaces with a shape, not {space!r}")
    return space.shape


def discrete_actions(space: gym.Space) -> int:
    """The number of actions of a ``Discrete`` action space.

    Raises
    ------
    ValueError
        If ``space`` is not ``Discrete``.
    """
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(f"only discrete action spaces are supported, not {space!r}")
    return int(space.n)


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
    envs: gym.vector.VectorEnv = gym.vector.SyncVectorEnv(env_fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
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
