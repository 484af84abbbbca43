"""PPO's rollout: ``num_steps`` steps of the policy in every sub-environment, the arrays GAE and the update read.

This is the first half of CleanRL's PPO loop (:mod:`.ppo` holds the rest: GAE, the clipped-surrogate update, logging),
kept apart because it is the one piece that talks to gymnasium's vector environment and its autoreset.

Conventions of the rollout arrays (``T = num_steps``, ``N = num_envs``)
-----------------------------------------------------------------------
``rewards[T, N]``
    The reward of the transition taken at step ``t``. For the GAE step it is (optionally) standardized and, where the
    episode was **truncated** at ``t`` (time limit, not a terminal state), ``gamma * V(final_obs)`` is folded in
    (``truncation_bootstraps``), so the cut does not look like a terminal state. A **terminated** step gets nothing
    folded in.
``dones[T, N]``
    1 when env ``n``'s episode ended at step ``t`` (terminated OR truncated): neither ``V_{t+1}`` nor ``A_{t+1}``
    flows back across it. This is the GAE core's convention (``pynq_rl/overlay/models/gae.py``); CleanRL and SB3 store
    the same information one step later (``next_done`` / ``episode_starts[t + 1]``).
``values[T + 1, N]``
    ``V(obs_t)``; ``values[T]`` = ``V(next_obs)`` bootstraps the unfinished tail.

Autoreset. The environments are a gymnasium 1.x ``SyncVectorEnv`` with ``autoreset_mode=AutoresetMode.SAME_STEP``
(:func:`~.envs.make_envs`): a sub-environment that ends at step ``t`` is reset inside that same ``step()`` call, the
returned observation is already the first observation of the next episode, and the last observation of the finished
episode is in ``infos["final_obs"][n]``. So every step of the rollout is a real transition (none has to be masked,
unlike the default ``NEXT_STEP`` mode whose step after a done is a reset with a dummy reward), ``obs[t + 1]`` is the
start of a new episode exactly where ``dones[t] = 1``, and ``V(final_obs)`` is available for truncation bootstrapping.

Continuous actions: for a ``Box`` action space the sampled action is stored unclipped (its log-probability is the one
the update recomputes) and clipped to the space's bounds only when the environment is stepped.
"""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import numpy as np

from ..common.envs import finished_episodes, space_shape
from ..nets.learners import ActorCritic

__all__ = ["Rollout", "collect_rollout"]


class Rollout(NamedTuple):
    """One rollout of ``T`` steps in ``N`` environments (numpy; see the module docstring for conventions)."""

    observations: np.ndarray
    """obs_t, shape (T, N, *obs_shape), float32"""
    actions: np.ndarray
    """a_t, shape (T, N, *action_shape): int64 (Discrete) or float32 as sampled, before clipping (Box)"""
    log_probs: np.ndarray
    """log pi(a_t | obs_t) at collection time, shape (T, N)"""
    rewards: np.ndarray
    """raw environment rewards r_t, shape (T, N), float32"""
    dones: np.ndarray
    """1.0 where the episode ended at step t (terminated or truncated), shape (T, N)"""
    values: np.ndarray
    """V(obs_t) and, in row T, V(next_obs), shape (T + 1, N)"""
    truncation_bootstraps: np.ndarray
    """gamma * V(final_obs) where the episode was truncated (and not terminated) at step t, else 0; shape (T, N)"""
    episodes: list
    """(global_step, return, length) of every episode that ended during the rollout"""


def collect_rollout(
    envs: gym.vector.VectorEnv,
    agent: ActorCritic,
    next_obs: np.ndarray,
    num_steps: int,
    gamma: float,
    global_step: int = 0,
) -> tuple[Rollout, np.ndarray, int]:
    """Run the policy for ``num_steps`` steps in every sub-environment.

    Parameters
    ----------
    envs : gym.vector.VectorEnv
        Built by :func:`~.envs.make_envs` (SAME_STEP autoreset; episode statistics are read if present).
    agent : ActorCritic
        Anything with ``act(obs) -> (actions, log_probs, values)`` and ``value(obs)``. For a ``Box`` action space
        the actions are stored as sampled and clipped to the space only for ``envs.step``.
    next_obs : numpy.ndarray
        The current observations, shape ``(N, *obs_shape)``.
    num_steps : int
        Rollout length ``T``.
    gamma : float
        Discount factor, for the truncation bootstrap ``gamma * V(final_obs)``.
    global_step : int, optional
        Environment steps taken before this rollout (for episode logging).

    Returns
    -------
    rollout : Rollout
        The collected arrays.
    next_obs : numpy.ndarray
        Observations after the last step (the start of the next rollout).
    global_step : int
        Updated step counter (``+ num_steps * N``).

    Raises
    ------
    ValueError
        If ``envs`` does not autoreset in SAME_STEP mode (the truncation bootstrap needs ``infos["final_obs"]``, and
        in NEXT_STEP mode every step after a done would be a dummy transition).
    """
    mode = envs.metadata.get("autoreset_mode")
    if mode != gym.vector.AutoresetMode.SAME_STEP:
        raise ValueError(f"envs must autoreset in SAME_STEP mode (build them with make_envs), not {mode!r}")
    num_envs = envs.num_envs
    obs_shape = space_shape(envs.single_observation_space)
    act_shape = space_shape(envs.single_action_space)
    obs = np.zeros((num_steps, num_envs) + obs_shape, np.float32)
    space = envs.single_action_space
    continuous = isinstance(space, gym.spaces.Box)
    actions = np.zeros((num_steps, num_envs) + act_shape, np.float32 if continuous else np.int64)
    logprobs = np.zeros((num_steps, num_envs), np.float32)
    rewards = np.zeros((num_steps, num_envs), np.float32)
    dones = np.zeros((num_steps, num_envs), np.float32)
    values = np.zeros((num_steps + 1, num_envs), np.float32)
    bootstraps = np.zeros((num_steps, num_envs), np.float32)
    episodes = []
    next_obs = np.asarray(next_obs, np.float32)

    for step in range(num_steps):
        global_step += num_envs
        obs[step] = next_obs

        # ALGO LOGIC: action logic
        action, logprob, value = agent.act(next_obs)
        values[step] = value
        actions[step] = action
        logprobs[step] = logprob

        # TRY NOT TO MODIFY: execute the game and log data.
        next_obs, reward, terminations, truncations, infos = envs.step(
            np.clip(action, space.low, space.high) if isinstance(space, gym.spaces.Box) else action
        )
        next_obs = np.asarray(next_obs, np.float32)
        rewards[step] = reward
        dones[step] = np.logical_or(terminations, truncations)

        # truncation: the episode did not end in a terminal state, so bootstrap with V of its real last observation
        truncated_only = np.flatnonzero(np.logical_and(truncations, np.logical_not(terminations)))
        if truncated_only.size:
            final_obs = np.stack([infos["final_obs"][i] for i in truncated_only]).astype(np.float32)
            bootstraps[step, truncated_only] = gamma * agent.value(final_obs)

        for _, ep_return, ep_length in finished_episodes(infos):
            episodes.append((global_step, ep_return, ep_length))

    values[num_steps] = agent.value(next_obs)
    rollout = Rollout(obs, actions, logprobs, rewards, dones, values, bootstraps, episodes)
    return rollout, next_obs, global_step
