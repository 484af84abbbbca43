r"""The GAE step of PPO on the host, and the interface a GAE core offers instead.

GAE (Schulman et al., 2016), with :math:`d_t` = ``dones[t]`` (1 where env ``n``'s episode ended at step ``t``):

.. math::

    \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

:func:`compute_gae` is CleanRL's backward loop in numpy (PPO's ``backend="host"``); a :class:`GaeCompute` is what
the GAE core's driver offers (``RLOverlay(...).gae.compute``, float32 numpy in and out), and
:func:`offloaded_gae` calls one and checks what comes back.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["GaeCompute", "compute_gae", "offloaded_gae"]


class GaeCompute(Protocol):
    """What the agent needs from a GAE core: the driver's ``compute()`` (``RLOverlay(...).gae`` or a test fake)."""

    def compute(
        self,
        rewards: np.ndarray,
        values: np.ndarray,
        dones: np.ndarray,
        *,
        gamma: float,
        lam: float,
        quantize: bool | str,
    ) -> tuple[np.ndarray, np.ndarray]:
        """GAE of float32 ``rewards[T, N]``, ``values[T + 1, N]``, ``dones[T, N]``: float32 (advantages, returns)."""
        ...


def compute_gae(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Generalized advantage estimation, CleanRL's backward loop in numpy.

    .. math::

        \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
        A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

    (Schulman et al., 2016). ``lam = 1``: bootstrapped discounted return minus V; ``lam = 0``: one-step TD error.

    Parameters
    ----------
    rewards : numpy.ndarray
        ``r_t``, shape ``(T, N)`` (truncation bootstrap already folded in).
    values : numpy.ndarray
        ``V_t``, shape ``(T + 1, N)``; row ``T`` bootstraps the tail.
    dones : numpy.ndarray
        ``d_t`` = 1 where the episode ended at step ``t``, shape ``(T, N)``.
    gamma : float
        Discount factor.
    lam : float
        GAE lambda.

    Returns
    -------
    advantages : numpy.ndarray
        ``A_t``, shape ``(T, N)``, dtype of ``rewards``.
    returns : numpy.ndarray
        ``R_t = A_t + V_t``, shape ``(T, N)``.

    Raises
    ------
    ValueError
        If the shapes do not agree.
    """
    rewards, values, dones = np.asarray(rewards), np.asarray(values), np.asarray(dones)
    if rewards.ndim != 2 or dones.shape != rewards.shape or values.shape != (rewards.shape[0] + 1, rewards.shape[1]):
        raise ValueError(
            f"expected rewards (T, N), values (T + 1, N), dones (T, N), not rewards {tuple(rewards.shape)}, "
            f"values {tuple(values.shape)}, dones {tuple(dones.shape)}"
        )
    dtype = rewards.dtype.type
    gamma, gamma_lam = dtype(gamma), dtype(gamma * lam)
    advantages = np.zeros_like(rewards)
    lastgaelam = np.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        nextnonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma_lam * nextnonterminal * lastgaelam
    returns = advantages + values[:-1]
    return advantages, returns


def offloaded_gae(
    gae: GaeCompute,
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    *,
    gamma: float,
    lam: float,
    quantize: bool | str,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``gae.compute`` on float32 arrays and check what comes back."""
    r, v, d = (np.ascontiguousarray(x, dtype=np.float32) for x in (rewards, values, dones))
    advantages, returns = gae.compute(r, v, d, gamma=gamma, lam=lam, quantize=quantize)
    advantages, returns = np.asarray(advantages, np.float32), np.asarray(returns, np.float32)
    if advantages.shape != r.shape or returns.shape != r.shape:
        raise RuntimeError(
            f"GAE backend returned advantages {advantages.shape} and returns {returns.shape}, expected {r.shape}"
        )
    return advantages, returns
