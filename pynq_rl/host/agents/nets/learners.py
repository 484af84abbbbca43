"""The agents' learners behind one numpy interface, and the one place that picks their network backend.

PPO's loop needs an :class:`ActorCritic`, DQN's a :class:`QLearner`; each exists twice, with torch networks
(:mod:`.torch_nets`, where torch is installed) and with numpy networks (:mod:`.numpy_nets`, everywhere, and the only
choice on a PYNQ-Z2's armv7l). :func:`make_actor_critic` and :func:`make_q_learner` are the only branch on the network
backend; torch is imported only when it is asked for.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .numpy_nets import NumpyActorCritic, NumpyQLearner

__all__ = ["ActorCritic", "QLearner", "make_actor_critic", "make_q_learner"]


class ActorCritic(Protocol):
    """What the loop needs from the networks (:class:`~.torch_nets.TorchActorCritic` or
    :class:`~.numpy_nets.NumpyActorCritic`): numpy arrays in and out."""

    learning_rate: float

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample actions: ``(actions, log_probs, values)``."""
        ...

    def value(self, obs: np.ndarray) -> np.ndarray:
        """V(obs), shape ``(batch,)``."""
        ...

    def learn(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        old_log_probs: np.ndarray,
        advantages: np.ndarray,
        returns: np.ndarray,
        old_values: np.ndarray,
        *,
        clip_coef: float,
        ent_coef: float,
        vf_coef: float,
        clip_vloss: bool,
        norm_adv: bool,
        max_grad_norm: float,
    ) -> dict[str, float]:
        """One clipped-surrogate gradient step on a minibatch; the minibatch's losses."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Networks and optimizer as numpy arrays."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output."""
        ...


def make_actor_critic(
    nn: str, obs_dim: int, n_actions: int, learning_rate: float, rng: np.random.Generator, continuous: bool = False
) -> ActorCritic:
    """The actor-critic on network backend ``nn`` (``"torch"`` or ``"numpy"``): the only branch on it.

    ``continuous`` selects a Gaussian policy over ``n_actions`` action dimensions (a ``Box`` space) instead of a
    categorical one over ``n_actions`` actions.
    """
    if nn == "torch":
        from .torch_nets import TorchActorCritic

        return TorchActorCritic(obs_dim, n_actions, learning_rate, continuous=continuous)
    return NumpyActorCritic(obs_dim, n_actions, learning_rate, rng, continuous=continuous)


class QLearner(Protocol):
    """What the loop needs from the networks (:class:`~.torch_nets.TorchQLearner` or
    :class:`~.numpy_nets.NumpyQLearner`): numpy arrays in and out."""

    learning_rate: float

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """Q(obs, .) of the online network."""
        ...

    def learn(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        next_observations: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        weights: np.ndarray,
        *,
        gamma: float,
        double_q: bool,
        max_grad_norm: float,
    ) -> dict[str, Any]:
        """One TD step; ``td_errors``, ``loss``, ``q_values``."""
        ...

    def update_target(self, tau: float) -> None:
        """Move the target network towards the online one."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Networks and optimizer as numpy arrays."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output."""
        ...


def make_q_learner(
    nn: str, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...], learning_rate: float, rng: np.random.Generator
) -> QLearner:
    """The Q-learner on network backend ``nn`` (``"torch"`` or ``"numpy"``): the only branch on it."""
    if nn == "torch":
        from .torch_nets import TorchQLearner

        return TorchQLearner(obs_dim, n_actions, hidden_sizes, learning_rate)
    return NumpyQLearner(obs_dim, n_actions, hidden_sizes, learning_rate, rng)
