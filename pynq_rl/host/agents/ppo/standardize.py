r"""HEPPO's dynamic reward standardization: running mean and standard deviation of every reward ever seen.

HEPPO (Taha et al., "HEPPO: Hardware-Efficient Proximal Policy Optimization") standardizes the rewards that enter
GAE with statistics accumulated over the whole run, not over one batch, so that a reward keeps the same meaning from
one rollout to the next:

.. math::

    \tilde r = \frac{r - \mu_n}{\sigma_n + \epsilon}, \qquad
    \mu_n = \frac{1}{n} \sum_{i=1}^{n} r_i, \qquad
    \sigma_n^2 = \frac{1}{n} \sum_{i=1}^{n} (r_i - \mu_n)^2

with :math:`n` the number of rewards seen so far (population variance, ``ddof=0``, as ``np.std``).

A batch of :math:`m` rewards with mean :math:`\bar x` and sum of squared deviations :math:`M_x` is merged with the
running :math:`(n, \mu, M)` by Chan et al.'s parallel form of Welford's update, in float64:

.. math::

    \delta = \bar x - \mu, \quad n' = n + m, \quad \mu' = \mu + \delta \frac{m}{n'}, \quad
    M' = M + M_x + \delta^2 \frac{n m}{n'}

Special cases: before any reward was seen :meth:`RewardStandardizer.standardize` returns its input unchanged (as
float32); when every reward seen is the same constant, :math:`\sigma = 0` and those rewards standardize to exactly 0
(CartPole's constant +1 reward therefore carries no signal after standardization: the survival signal lives only in
episode length, which standardization removes). Update before you standardize: a reward that differs from a
constant history is divided by :math:`\epsilon` alone.

This is host-side float64 arithmetic; the GAE core's own q8 block standardization (in the driver) is separate and
undone on its outputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["RewardStandardizer"]


def _as_finite_float64(rewards: Any, what: str) -> np.ndarray:
    """Return ``rewards`` flattened as float64, raising ``ValueError`` on NaN or infinity."""
    x = np.asarray(rewards, dtype=np.float64).ravel()
    n_nan = int(np.count_nonzero(np.isnan(x)))
    if n_nan:
        raise ValueError(f"{what}: rewards contain {n_nan} NaN value(s) out of {x.size}")
    n_inf = int(np.count_nonzero(np.isinf(x)))
    if n_inf:
        raise ValueError(f"{what}: rewards contain {n_inf} infinite value(s) out of {x.size}")
    return x


class RewardStandardizer:
    """Running mean/std of every reward seen (Welford/Chan in float64) and the standardization that uses them.

    Parameters
    ----------
    eps : float, optional
        Added to the standard deviation in the denominator, by default ``1e-8``. Must be positive and finite.

    Attributes
    ----------
    count : int
        Number of rewards seen.
    mean : float
        Running mean of the rewards seen (0.0 before any).
    m2 : float
        Running sum of squared deviations from the mean (0.0 before any).
    eps : float
        The denominator guard.

    Raises
    ------
    ValueError
        If ``eps`` is not a positive finite number.

    Examples
    --------
    >>> s = RewardStandardizer()
    >>> s.update(np.array([1.0, 2.0, 3.0]))
    >>> s.standardize(np.array([2.0]))
    array([0.], dtype=float32)
    """

    def __init__(self, eps: float = 1e-8) -> None:
        eps = float(eps)
        if not (math.isfinite(eps) and eps > 0.0):
            raise ValueError(f"eps must be a positive finite number, not {eps!r}")
        self.eps = eps
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    # -- statistics -------------------------------------------------------------------------------------------------
    @property
    def var(self) -> float:
        """Population variance of the rewards seen (0.0 before any)."""
        return self.m2 / self.count if self.count else 0.0

    @property
    def std(self) -> float:
        """Population standard deviation of the rewards seen (0.0 before any)."""
        return math.sqrt(self.var)

    def update(self, rewards: np.ndarray) -> None:
        """Merge a batch of rewards (any shape, flattened) into the running statistics.

        Parameters
        ----------
        rewards : np.ndarray
            The raw rewards of one rollout, any shape; an empty array is a no-op.

        Raises
        ------
        ValueError
            If ``rewards`` contains NaN or infinity (the statistics are left unchanged).
        """
        x = _as_finite_float64(rewards, "update")
        m = x.size
        if m == 0:
            return
        batch_mean = float(x.mean())
        batch_m2 = float(np.square(x - batch_mean).sum())
        n = self.count
        total = n + m
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * m / total
        self.m2 = self.m2 + batch_m2 + delta * delta * n * m / total
        self.count = total

    def standardize(self, rewards: np.ndarray) -> np.ndarray:
        """Standardize rewards with the running statistics: ``(r - mean) / (std + eps)``.

        Parameters
        ----------
        rewards : np.ndarray
            Rewards of any shape.

        Returns
        -------
        np.ndarray
            float32 array of the same shape; a float32 copy of the input if no reward was seen yet.

        Raises
        ------
        ValueError
            If ``rewards`` contains NaN or infinity.
        """
        shape = np.shape(rewards)
        x = _as_finite_float64(rewards, "standardize").reshape(shape)
        if self.count == 0:
            return x.astype(np.float32)
        return ((x - self.mean) / (self.std + self.eps)).astype(np.float32)

    # -- checkpointing ----------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, float | int]:
        """Return the state as plain Python numbers (safe for ``torch.save`` / ``torch.load(weights_only=True)``).

        Returns
        -------
        dict
            ``{"count": int, "mean": float, "m2": float, "eps": float}``.
        """
        return {"count": int(self.count), "mean": float(self.mean), "m2": float(self.m2), "eps": float(self.eps)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state written by :meth:`state_dict`.

        Parameters
        ----------
        state : dict
            A mapping with the keys ``count``, ``mean``, ``m2`` and ``eps``.

        Raises
        ------
        KeyError
            If a key is missing.
        ValueError
            If a value is out of range (negative count or m2, non-finite numbers, non-positive eps).
        """
        missing = [k for k in ("count", "mean", "m2", "eps") if k not in state]
        if missing:
            raise KeyError(f"RewardStandardizer state is missing {missing}; keys are {sorted(state)}")
        count, mean, m2, eps = int(state["count"]), float(state["mean"]), float(state["m2"]), float(state["eps"])
        if count < 0:
            raise ValueError(f"count must be >= 0, not {count!r}")
        if not (math.isfinite(mean) and math.isfinite(m2) and m2 >= 0.0):
            raise ValueError(f"mean and m2 must be finite and m2 >= 0, not mean={mean!r}, m2={m2!r}")
        if not (math.isfinite(eps) and eps > 0.0):
            raise ValueError(f"eps must be a positive finite number, not {eps!r}")
        self.count, self.mean, self.m2, self.eps = count, mean, m2, eps

    def __repr__(self) -> str:
        return f"RewardStandardizer(count={self.count}, mean={self.mean:.6g}, std={self.std:.6g}, eps={self.eps:g})"
