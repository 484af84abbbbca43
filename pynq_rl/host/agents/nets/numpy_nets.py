r"""The agents' networks and their learning steps in numpy (:mod:`.numpy_nn`): PPO's actor-critic, DQN's Q-network.

Same interface as :mod:`.torch_nets` (the agents call only ``act``/``value``/``learn`` or ``q_values``/``learn``,
``learning_rate``, ``state_dict``/``load_state_dict``), same initialisation scheme, the same losses written out with
their gradients. State dicts use the same keys and layouts as the torch learners', so a checkpoint made on a PC
with torch resumes on a PYNQ-Z2 with numpy and back.

PPO's clipped surrogate (Schulman et al., 2017), per minibatch of size :math:`B`, with
:math:`\rho_i = \exp(\log\pi(a_i|s_i) - \log\pi_{old}(a_i|s_i))`:

.. math::

    L = \frac{1}{B}\sum_i \max(-\hat A_i \rho_i, -\hat A_i\,\mathrm{clip}(\rho_i, 1-\epsilon, 1+\epsilon))
        - c_H \frac{1}{B}\sum_i H_i + c_V \frac{1}{2B}\sum_i (V(s_i) - R_i)^2

Its gradient with respect to the logits is :math:`g_\rho \rho_i (e_{a_i} - p_i) + \frac{c_H}{B} p_i
(\log p_i + H_i)` where :math:`g_\rho` is :math:`-\hat A_i / B` where the unclipped term is the larger,
:math:`0` where the clipped term is and :math:`\rho` is outside the clip range, and the mean of both at a tie (as
``torch.max`` splits it). For a ``Box`` action space the actor outputs the mean :math:`\mu` of a diagonal Gaussian
with a state-independent :math:`\log\sigma` (CleanRL's ``ppo_continuous_action.py``); with
:math:`z = (a - \mu)/\sigma` and :math:`g_i = g_\rho \rho_i` the gradient of the surrogate with respect to
:math:`\log\pi(a_i|s_i)`, the gradients are :math:`g_i z_i / \sigma` for :math:`\mu` and
:math:`\sum_i g_i (z_i^2 - 1) - c_H` for :math:`\log\sigma` (the entropy is :math:`\sum_j \log\sigma_j` plus a
constant). DQN's loss is the importance-weighted Huber loss of the TD error,
:math:`\frac{1}{B}\sum_i w_i\,\mathrm{Huber}(Q(s_i, a_i) - y_i)`, whose gradient is
:math:`w_i\,\mathrm{clip}(Q - y, -1, 1) / B`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .numpy_nn import MLP, Adam, clip_grad_norm, gaussian_entropy, gaussian_log_prob, log_softmax

__all__ = ["NumpyActorCritic", "NumpyQLearner", "log_std_from_checkpoint"]


def _adam_state(optimizer: Adam) -> dict[str, Any]:
    state = optimizer.state_dict()
    return {"step": state["step"], "exp_avg": state["exp_avg"], "exp_avg_sq": state["exp_avg_sq"]}


class _NumpyLearner:
    """What both numpy learners share: Adam's learning rate as a property. Not constructed directly."""

    optimizer: Adam

    @property
    def learning_rate(self) -> float:
        """Adam's current learning rate (the agent anneals it)."""
        return self.optimizer.lr

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        self.optimizer.lr = float(value)


class NumpyActorCritic(_NumpyLearner):
    """PPO's separate actor and critic MLPs (64-64 tanh, CleanRL's ``layer_init``), Adam and the PPO update.

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions, or the action dimension when ``continuous``.
    learning_rate : float
        Adam's initial learning rate (eps 1e-5, as CleanRL).
    rng : numpy.random.Generator
        Source of the initial weights and of the sampled actions.
    hidden : int
        Width of the two hidden layers.
    continuous : bool
        If True, a Gaussian policy for a ``Box`` action space: the actor outputs the mean, :attr:`log_std`
        (shape ``(1, n_actions)``, initially 0) is a parameter of its own, optimised after the actor's.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        learning_rate: float,
        rng: np.random.Generator,
        hidden: int = 64,
        continuous: bool = False,
    ) -> None:
        self.rng = rng
        self.continuous = bool(continuous)
        self.actor = MLP((obs_dim, hidden, hidden, n_actions), "tanh", rng, out_gain=0.01)
        self.critic = MLP((obs_dim, hidden, hidden, 1), "tanh", rng, out_gain=1.0)
        self.log_std = np.zeros((1, n_actions), np.float32)
        self.log_std_grad = np.zeros_like(self.log_std)
        policy = self.actor.params + ([self.log_std] if self.continuous else [])
        self.optimizer = Adam(policy + self.critic.params, lr=learning_rate, eps=1e-5)

    def value(self, obs: np.ndarray) -> np.ndarray:
        """V(obs), float32, shape ``(batch,)``."""
        return self.critic(obs)[:, 0]

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample ``a ~ pi(.|obs)``: ``(actions, log_probs float32, values float32)``.

        Actions are int64 of shape ``(batch,)``, or (``continuous``) unclipped float32 of shape
        ``(batch, n_actions)``; log-probabilities and values have shape ``(batch,)``.
        """
        if self.continuous:
            mean = self.actor(obs)
            noise = self.rng.standard_normal(mean.shape).astype(np.float32)
            actions = mean + np.exp(self.log_std) * noise
            return actions, gaussian_log_prob(actions, mean, self.log_std), self.value(obs)
        logp = log_softmax(self.actor(obs))
        cdf = np.cumsum(np.exp(logp), axis=1)
        u = self.rng.random((len(logp), 1)) * cdf[:, -1:]
        actions = np.minimum((cdf <= u).sum(axis=1), logp.shape[1] - 1).astype(np.int64)
        return actions, logp[np.arange(len(actions)), actions], self.value(obs)

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
        """One clipped-surrogate gradient step on a minibatch (the module docstring has the loss and gradient).

        Returns
        -------
        dict
            ``pg_loss``, ``v_loss``, ``entropy``, ``old_approx_kl``, ``approx_kl``, ``clipfrac`` of this minibatch
            (before the step).
        """
        batch = len(actions)
        rows = np.arange(batch)
        logits = self.actor.forward(obs, keep=True)  # the Gaussian's mean when continuous
        if self.continuous:
            actions = np.asarray(actions, dtype=logits.dtype).reshape(logits.shape)
            log_std = self.log_std.astype(logits.dtype)
            logp = gaussian_log_prob(actions, logits, log_std)
            entropy = gaussian_entropy(log_std, batch)
        else:
            actions = np.asarray(actions, dtype=np.int64)
            logp_all = log_softmax(logits)
            probs = np.exp(logp_all)
            entropy = -(probs * logp_all).sum(axis=1)
            logp = logp_all[rows, actions]
        logratio = logp - old_log_probs
        ratio = np.exp(logratio)
        old_approx_kl = float(np.mean(-logratio))
        approx_kl = float(np.mean((ratio - 1.0) - logratio))
        clipfrac = float(np.mean(np.abs(ratio - 1.0) > clip_coef))

        dtype = logits.dtype  # float32 in training; float64 when the tests take finite differences
        adv = np.asarray(advantages, dtype=dtype)
        if norm_adv:
            adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8) if batch > 1 else adv - adv.mean()
        clipped = np.clip(ratio, 1.0 - clip_coef, 1.0 + clip_coef)
        pg1, pg2 = -adv * ratio, -adv * clipped
        pg_loss = float(np.mean(np.maximum(pg1, pg2)))
        inside = ((ratio >= 1.0 - clip_coef) & (ratio <= 1.0 + clip_coef)).astype(np.float32)
        d_ratio = np.where(pg1 > pg2, -adv, np.where(pg1 < pg2, -adv * inside, -adv * (1.0 + inside) / 2)) / batch
        d_logp = (d_ratio * ratio)[:, None]
        if self.continuous:
            z = (actions - logits) * np.exp(-log_std)
            d_logits = d_logp * z * np.exp(-log_std)
            self.log_std_grad = (d_logp * (z * z - 1.0)).sum(axis=0, keepdims=True) - ent_coef
        else:
            d_logits = d_logp * (np.eye(logits.shape[1], dtype=dtype)[actions] - probs)
            d_logits += (ent_coef / batch) * probs * (logp_all + entropy[:, None])

        values = self.critic.forward(obs, keep=True)[:, 0]
        returns = np.asarray(returns, dtype=dtype)
        if clip_vloss:
            v_clipped = old_values + np.clip(values - old_values, -clip_coef, clip_coef)
            lu, lc = (values - returns) ** 2, (v_clipped - returns) ** 2
            v_loss = 0.5 * float(np.mean(np.maximum(lu, lc)))
            v_inside = (np.abs(values - old_values) <= clip_coef).astype(np.float32)
            du, dc = 2.0 * (values - returns), 2.0 * (v_clipped - returns) * v_inside
            d_values = 0.5 * np.where(lu > lc, du, np.where(lu < lc, dc, (du + dc) / 2)) / batch
        else:
            v_loss = 0.5 * float(np.mean((values - returns) ** 2))
            d_values = (values - returns) / batch
        self.actor.backward(d_logits)
        self.critic.backward((vf_coef * d_values)[:, None])
        grads = self.actor.grads + ([self.log_std_grad] if self.continuous else []) + self.critic.grads
        clip_grad_norm(grads, max_grad_norm)
        self.optimizer.step(grads)
        return {
            "pg_loss": pg_loss,
            "v_loss": v_loss,
            "entropy": float(entropy.mean()),
            "old_approx_kl": old_approx_kl,
            "approx_kl": approx_kl,
            "clipfrac": clipfrac,
        }

    def state_dict(self) -> dict[str, Any]:
        """``model`` (``actor``/``critic`` parameters under torch's names, plus ``actor_logstd`` when
        ``continuous``) and ``optimizer`` (Adam moments)."""
        model: dict[str, dict[str, np.ndarray] | np.ndarray] = {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
        }
        if self.continuous:
            model["actor_logstd"] = self.log_std.copy()
        return {"model": model, "optimizer": _adam_state(self.optimizer)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (from either network backend).

        Raises
        ------
        ValueError
            If the shapes do not fit this network.
        """
        log_std = log_std_from_checkpoint(state["model"], self.continuous, self.log_std.shape)
        self.actor.load_state_dict(state["model"]["actor"])
        self.critic.load_state_dict(state["model"]["critic"])
        self.optimizer.load_state_dict({**state["optimizer"], "lr": self.optimizer.lr})
        if log_std is not None:
            self.log_std[...] = log_std  # in place: the optimizer holds this very array


def log_std_from_checkpoint(model: dict[str, Any], continuous: bool, shape: tuple[int, ...]) -> np.ndarray | None:
    """A checkpoint's ``actor_logstd`` (None for a discrete policy); ValueError if it is missing, extra or misshapen."""
    if not continuous:
        if "actor_logstd" in model:
            raise ValueError("the checkpoint holds a Gaussian policy (actor_logstd), this agent is discrete")
        return None
    if "actor_logstd" not in model:
        raise ValueError("missing parameter 'actor_logstd' (the checkpoint holds a discrete policy)")
    value = np.asarray(model["actor_logstd"], dtype=np.float32)
    if value.shape != tuple(shape):
        raise ValueError(f"'actor_logstd' has shape {value.shape}, expected {tuple(shape)}")
    return value


class NumpyQLearner(_NumpyLearner):
    """DQN's online and target Q-networks (ReLU MLPs, ``nn.Linear``'s default init), Adam and the TD step.

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions.
    hidden_sizes : tuple of int
        Widths of the hidden layers.
    learning_rate : float
        Adam's initial learning rate (eps 1e-8, torch's default).
    rng : numpy.random.Generator
        Source of the initial weights.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden_sizes: tuple[int, ...],
        learning_rate: float,
        rng: np.random.Generator,
    ) -> None:
        sizes = (obs_dim, *hidden_sizes, n_actions)
        self.q_network = MLP(sizes, "relu", rng, init="torch_default")
        self.target_network = MLP(sizes, "relu", rng, init="torch_default")
        self.target_network.copy_from(self.q_network)
        self.optimizer = Adam(self.q_network.params, lr=learning_rate)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """Q(obs, .) of the online network, float32, shape ``(batch, n_actions)``."""
        return self.q_network(obs)

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
            ``td_errors`` (float32 array, ``y - Q(s, a)`` before the step: the new priorities), ``loss`` and
            ``q_values`` (mean ``Q(s, a)``).
        """
        batch = len(actions)
        rows = np.arange(batch)
        next_target = self.target_network(next_observations)
        if double_q:
            next_actions = self.q_network(next_observations).argmax(axis=1)
            target_max = next_target[rows, next_actions]
        else:
            target_max = next_target.max(axis=1)
        td_target = np.asarray(rewards, np.float32) + np.float32(gamma) * target_max * (
            1.0 - np.asarray(dones, np.float32)
        )
        q = self.q_network.forward(observations, keep=True)
        q_sa = q[rows, np.asarray(actions, dtype=np.int64).reshape(-1)]
        diff = q_sa - td_target
        huber = np.where(np.abs(diff) < 1.0, 0.5 * diff * diff, np.abs(diff) - 0.5)
        weights = np.asarray(weights, np.float32)
        loss = float(np.mean(weights * huber))
        d_q = np.zeros_like(q)
        d_q[rows, np.asarray(actions, dtype=np.int64).reshape(-1)] = weights * np.clip(diff, -1.0, 1.0) / batch
        self.q_network.backward(d_q)
        clip_grad_norm(self.q_network.grads, max_grad_norm)
        self.optimizer.step(self.q_network.grads)
        return {"td_errors": (td_target - q_sa).astype(np.float32), "loss": loss, "q_values": float(q_sa.mean())}

    def update_target(self, tau: float) -> None:
        """``target <- tau * online + (1 - tau) * target`` (``tau = 1``: a hard copy)."""
        self.target_network.copy_from(self.q_network, tau)

    def state_dict(self) -> dict[str, Any]:
        """``q_network``, ``target_network`` (torch's parameter names) and ``optimizer`` (Adam moments)."""
        return {
            "q_network": self.q_network.state_dict(),
            "target_network": self.target_network.state_dict(),
            "optimizer": _adam_state(self.optimizer),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (from either network backend).

        Raises
        ------
        ValueError
            If the shapes do not fit this network.
        """
        self.q_network.load_state_dict(state["q_network"])
        self.target_network.load_state_dict(state["target_network"])
        self.optimizer.load_state_dict({**state["optimizer"], "lr": self.optimizer.lr})
