"""The agents' networks and their learning steps in torch: PPO's actor-critic and DQN's Q-network (CleanRL's).

Imported only where torch exists (``pip install 'pynq-rl[torch]'``; not on a PYNQ-Z2's armv7l, which uses
:mod:`.numpy_nets`). The learners take and return numpy arrays, so the agents' loops are the same for both network
backends, and their state dicts are numpy arrays with the numpy learners' keys and layouts: the model under
``nn.Sequential``'s parameter names, Adam as ``step`` plus per-parameter ``exp_avg`` / ``exp_avg_sq`` lists (actor
before critic). A checkpoint from either backend loads into the other.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Distribution
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal

from .numpy_nets import log_std_from_checkpoint

__all__ = ["layer_init", "Agent", "QNetwork", "TorchActorCritic", "TorchQLearner"]


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    """Orthogonal weights with gain ``std`` and constant bias, as in CleanRL."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """Separate actor and critic MLPs (64-64 tanh), as CleanRL's ``ppo.py``.

    With ``continuous`` the actor is CleanRL's ``ppo_continuous_action.py`` Gaussian: ``actor`` outputs the mean and
    ``actor_logstd`` (shape ``(1, n_actions)``, initially 0) is a state-independent log standard deviation.

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions, or the action dimension when ``continuous``.
    hidden : int
        Width of the two hidden layers.
    continuous : bool
        A Gaussian policy for a ``Box`` action space instead of a categorical one.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64, continuous: bool = False) -> None:
        super().__init__()
        self.continuous = bool(continuous)
        if self.continuous:
            self.actor_logstd = nn.Parameter(torch.zeros(1, n_actions))
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """Return V(x), shape ``(batch, 1)``."""
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample (or evaluate) an action: returns ``(action, log_prob, entropy, value)``.

        For a Gaussian policy the log-probability and the entropy are summed over the action dimensions and the
        sampled action is not clipped (the rollout clips it to the action space when it steps the environment).
        """
        if self.continuous:
            mean = self.actor(x)
            probs: Distribution = Normal(mean, self.actor_logstd.expand_as(mean).exp())
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


class QNetwork(nn.Module):
    """An MLP from the flattened observation to one Q-value per action (ReLU hidden layers, as CleanRL's).

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions.
    hidden_sizes : tuple of int
        Widths of the hidden layers.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...] = (256, 256)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, n_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q(x, .), shape ``(batch, n_actions)``."""
        return self.network(x.flatten(1))


# ---------------------------------------------------------------------------------------------------------------------
# numpy state dicts
# ---------------------------------------------------------------------------------------------------------------------
def _module_state(module: nn.Module) -> dict[str, np.ndarray]:
    return {name: t.detach().cpu().numpy().copy() for name, t in module.state_dict().items()}


def _load_module_state(module: nn.Module, state: dict[str, np.ndarray]) -> None:
    """Load numpy arrays into ``module``; a missing key or a wrong shape raises ValueError, changing nothing."""
    own = module.state_dict()
    tensors = {}
    for name, tensor in own.items():
        if name not in state:
            raise ValueError(f"missing parameter {name!r}")
        value = np.asarray(state[name], dtype=np.float32)
        if value.shape != tuple(tensor.shape):
            raise ValueError(f"{name!r} has shape {value.shape}, expected {tuple(tensor.shape)}")
        tensors[name] = torch.from_numpy(value.copy())
    module.load_state_dict(tensors)


def _adam_state(optimizer: optim.Adam, params: list[nn.Parameter]) -> dict[str, Any]:
    state = optimizer.state
    step = int(state[params[0]]["step"]) if params[0] in state else 0
    zeros = [np.zeros(tuple(p.shape), np.float32) for p in params]
    return {
        "step": step,
        "exp_avg": [state[p]["exp_avg"].numpy().copy() if p in state else z for p, z in zip(params, zeros)],
        "exp_avg_sq": [state[p]["exp_avg_sq"].numpy().copy() if p in state else z for p, z in zip(params, zeros)],
    }


def _load_adam_state(optimizer: optim.Adam, params: list[nn.Parameter], state: dict[str, Any]) -> None:
    exp_avg, exp_avg_sq = list(state["exp_avg"]), list(state["exp_avg_sq"])
    if len(exp_avg) != len(params) or len(exp_avg_sq) != len(params):
        raise ValueError(f"optimizer state holds {len(exp_avg)} moments, the network {len(params)}")
    for p, m in zip(params, exp_avg):
        if np.shape(m) != tuple(p.shape):
            raise ValueError(f"optimizer moment of shape {np.shape(m)} for a parameter of shape {tuple(p.shape)}")
    optimizer.state.clear()
    if int(state["step"]):
        for p, m, v in zip(params, exp_avg, exp_avg_sq):
            optimizer.state[p] = {
                "step": torch.tensor(float(state["step"])),
                "exp_avg": torch.tensor(np.asarray(m, np.float32)),
                "exp_avg_sq": torch.tensor(np.asarray(v, np.float32)),
            }


def _tensor(x: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x), dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------------
# Learners
# ---------------------------------------------------------------------------------------------------------------------
class _TorchLearner:
    """What both torch learners share: Adam's learning rate as a property. Not constructed directly."""

    optimizer: optim.Adam

    @property
    def learning_rate(self) -> float:
        """Adam's current learning rate (the agent anneals it)."""
        return self.optimizer.param_groups[0]["lr"]

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        self.optimizer.param_groups[0]["lr"] = float(value)


class TorchActorCritic(_TorchLearner):
    """PPO's :class:`Agent`, Adam (eps 1e-5) and the clipped-surrogate update, behind numpy arrays.

    Parameters
    ----------
    obs_dim, n_actions : int
        Observation size and number of actions (the action dimension when ``continuous``).
    learning_rate : float
        Adam's initial learning rate.
    hidden : int
        Width of the two hidden layers.
    continuous : bool
        A Gaussian policy for a ``Box`` action space (:class:`Agent`); ``actor_logstd`` is optimised after the actor.
    """

    def __init__(
        self, obs_dim: int, n_actions: int, learning_rate: float, hidden: int = 64, continuous: bool = False
    ) -> None:
        self.agent = Agent(obs_dim, n_actions, hidden, continuous)
        self.n_actions = int(n_actions)
        self.continuous = self.agent.continuous
        policy = list(self.agent.actor.parameters()) + ([self.agent.actor_logstd] if self.continuous else [])
        self.params = policy + list(self.agent.critic.parameters())
        self.optimizer = optim.Adam(self.params, lr=learning_rate, eps=1e-5)

    def value(self, obs: np.ndarray) -> np.ndarray:
        """V(obs), float32, shape ``(batch,)``."""
        with torch.no_grad():
            return self.agent.get_value(_tensor(obs)).flatten().numpy()

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample ``a ~ pi(.|obs)`` (torch's generator): ``(actions, log_probs, values)``.

        Actions are int64 of shape ``(batch,)``, or (``continuous``) unclipped float32 of shape
        ``(batch, n_actions)``; log-probabilities and values have shape ``(batch,)``.
        """
        with torch.no_grad():
            action, logprob, _, value = self.agent.get_action_and_value(_tensor(obs))
        return action.numpy(), logprob.numpy(), value.flatten().numpy()

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
        """One clipped-surrogate gradient step on a minibatch (CleanRL's update, verbatim in its maths).

        Returns
        -------
        dict
            ``pg_loss``, ``v_loss``, ``entropy``, ``old_approx_kl``, ``approx_kl``, ``clipfrac`` (before the step).
        """
        b_actions = _tensor(actions, torch.float32 if self.continuous else torch.long)
        _, newlogprob, entropy, newvalue = self.agent.get_action_and_value(_tensor(obs), b_actions)
        logratio = newlogprob - _tensor(old_log_probs)
        ratio = logratio.exp()
        with torch.no_grad():
            # calculate approx_kl http://joschu.net/blog/kl-approx.html
            old_approx_kl = (-logratio).mean()
            approx_kl = ((ratio - 1) - logratio).mean()
            clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean()

        mb_advantages = _tensor(advantages)
        if norm_adv:
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
        pg_loss1 = -mb_advantages * ratio
        pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
        pg_loss = torch.max(pg_loss1, pg_loss2).mean()

        newvalue = newvalue.view(-1)
        mb_returns, mb_values = _tensor(returns), _tensor(old_values)
        if clip_vloss:
            v_loss_unclipped = (newvalue - mb_returns) ** 2
            v_clipped = mb_values + torch.clamp(newvalue - mb_values, -clip_coef, clip_coef)
            v_loss_clipped = (v_clipped - mb_returns) ** 2
            v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
        else:
            v_loss = 0.5 * ((newvalue - mb_returns) ** 2).mean()

        entropy_loss = entropy.mean()
        loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.params, max_grad_norm)
        self.optimizer.step()
        return {
            "pg_loss": pg_loss.item(),
            "v_loss": v_loss.item(),
            "entropy": entropy_loss.item(),
            "old_approx_kl": old_approx_kl.item(),
            "approx_kl": approx_kl.item(),
            "clipfrac": clipfrac.item(),
        }

    def state_dict(self) -> dict[str, Any]:
        """``model`` (``actor``/``critic``, plus ``actor_logstd`` when ``continuous``; numpy) and ``optimizer``
        (Adam moments, numpy)."""
        model: dict[str, dict[str, np.ndarray] | np.ndarray] = {
            "actor": _module_state(self.agent.actor),
            "critic": _module_state(self.agent.critic),
        }
        if self.continuous:
            model["actor_logstd"] = self.agent.actor_logstd.detach().numpy().copy()
        return {"model": model, "optimizer": _adam_state(self.optimizer, self.params)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (from either network backend).

        Raises
        ------
        ValueError
            If the shapes do not fit this network.
        """
        log_std = log_std_from_checkpoint(state["model"], self.continuous, (1, self.n_actions))
        _load_module_state(self.agent.actor, state["model"]["actor"])
        _load_module_state(self.agent.critic, state["model"]["critic"])
        _load_adam_state(self.optimizer, self.params, state["optimizer"])
        if log_std is not None:
            with torch.no_grad():
                self.agent.actor_logstd.copy_(torch.from_numpy(log_std))


class TorchQLearner(_TorchLearner):
    """DQN's online and target :class:`QNetwork`, Adam and the importance-weighted Huber TD step.

    Parameters
    ----------
    obs_dim, n_actions : int
        Observation size and number of actions.
    hidden_sizes : tuple of int
        Widths of the hidden layers.
    learning_rate : float
        Adam's initial learning rate.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...], learning_rate: float) -> None:
        self.q_network = QNetwork(obs_dim, n_actions, tuple(hidden_sizes))
        self.target_network = QNetwork(obs_dim, n_actions, tuple(hidden_sizes))
        self.target_network.load_state_dict(self.q_network.state_dict())
        self.params = list(self.q_network.parameters())
        self.optimizer = optim.Adam(self.params, lr=learning_rate)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """Q(obs, .) of the online network, float32, shape ``(batch, n_actions)``."""
        with torch.no_grad():
            return self.q_network(_tensor(obs)).numpy()

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
        """One importance-weighted Huber TD step (Double DQN targets if ``double_q``).

        Returns
        -------
        dict
            ``td_errors`` (float32 array, ``y - Q(s, a)`` before the step), ``loss`` and ``q_values``.
        """
        next_obs = _tensor(next_observations)
        with torch.no_grad():
            if double_q:
                next_actions = self.q_network(next_obs).argmax(dim=1, keepdim=True)
                target_max = self.target_network(next_obs).gather(1, next_actions).squeeze(1)
            else:
                target_max, _ = self.target_network(next_obs).max(dim=1)
            td_target = _tensor(rewards) + gamma * target_max * (1.0 - _tensor(dones))
        old_val = self.q_network(_tensor(observations)).gather(1, _tensor(actions, torch.long).view(-1, 1)).squeeze(1)
        td_errors = td_target - old_val
        loss = (_tensor(weights) * F.smooth_l1_loss(old_val, td_target, reduction="none")).mean()
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.params, max_grad_norm)
        self.optimizer.step()
        return {"td_errors": td_errors.detach().numpy(), "loss": loss.item(), "q_values": old_val.mean().item()}

    def update_target(self, tau: float) -> None:
        """``target <- tau * online + (1 - tau) * target`` (``tau = 1``: a hard copy)."""
        with torch.no_grad():
            for target_param, q_param in zip(self.target_network.parameters(), self.q_network.parameters()):
                target_param.copy_(tau * q_param + (1.0 - tau) * target_param)

    def state_dict(self) -> dict[str, Any]:
        """``q_network``, ``target_network`` (``nn.Sequential`` names, numpy) and ``optimizer`` (Adam moments)."""
        return {
            "q_network": _module_state(self.q_network.network),
            "target_network": _module_state(self.target_network.network),
            "optimizer": _adam_state(self.optimizer, self.params),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (from either network backend).

        Raises
        ------
        ValueError
            If the shapes do not fit this network.
        """
        _load_module_state(self.q_network.network, state["q_network"])
        _load_module_state(self.target_network.network, state["target_network"])
        _load_adam_state(self.optimizer, self.params, state["optimizer"])
