r"""Small float32 MLPs in numpy, with backward passes and Adam: the agents' networks where torch does not exist.

A PYNQ-Z2's 32-bit ARM (armv7l) has no torch wheel, so the agents carry their own networks for it. This module has
exactly what PPO and DQN need and nothing more: fully connected layers, tanh / ReLU, a cached forward pass and
its backward pass, global gradient-norm clipping and Adam. The arithmetic follows torch's so that a run is the same
algorithm on either backend:

* **Initialisation.** :func:`orthogonal` is ``torch.nn.init.orthogonal_`` (QR of a Gaussian matrix, signs fixed by
  R's diagonal, times ``gain``); :func:`torch_default_linear` is ``nn.Linear``'s default
  (``kaiming_uniform_(a=sqrt(5))``: weights and biases uniform in ``+-1/sqrt(fan_in)``). The random numbers come
  from a seeded ``numpy.random.Generator``, so the values differ from torch's, the distributions do not.
* **Adam** (Kingma & Ba, 2015) as ``torch.optim.Adam`` computes it:

  .. math::

      m_t = \beta_1 m_{t-1} + (1 - \beta_1) g_t, \quad v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2, \quad
      \theta_t = \theta_{t-1} - \frac{\mathrm{lr}}{1 - \beta_1^t} \,
      \frac{m_t}{\sqrt{v_t} / \sqrt{1 - \beta_2^t} + \epsilon}

* **Clipping** as ``torch.nn.utils.clip_grad_norm_``: every gradient times ``min(1, max_norm / (norm + 1e-6))``,
  ``norm`` the 2-norm over all of them.

Parameters and gradients are float32 (``W`` shaped ``(out, in)`` like ``nn.Linear.weight``), so a state dict maps
one to one onto the torch network's (:meth:`MLP.state_dict` uses ``nn.Sequential``'s key names). Gradients are
checked against finite differences and against torch in ``tests/agents/test_numpy_nn.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "Adam",
    "orthogonal",
    "torch_default_linear",
    "clip_grad_norm",
    "log_softmax",
    "gaussian_log_prob",
    "gaussian_entropy",
]

ACTIVATIONS = ("tanh", "relu")
"""hidden-layer activations an :class:`MLP` supports"""


def orthogonal(rows: int, cols: int, gain: float, rng: np.random.Generator) -> np.ndarray:
    """A ``(rows, cols)`` (semi-)orthogonal matrix times ``gain``: ``torch.nn.init.orthogonal_``'s algorithm.

    Parameters
    ----------
    rows, cols : int
        Shape (``out_features, in_features`` for a weight).
    gain : float
        Scale of the result.
    rng : numpy.random.Generator
        Source of the Gaussian matrix.

    Returns
    -------
    numpy.ndarray
        float32, with orthonormal rows (``rows <= cols``) or columns (``rows > cols``) before the gain.
    """
    flat = rng.standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # makes the decomposition unique, as torch does
    if rows < cols:
        q = q.T
    return np.ascontiguousarray(gain * q, dtype=np.float32)


def torch_default_linear(rows: int, cols: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``nn.Linear``'s default initialisation: weight and bias uniform in ``+-1 / sqrt(fan_in)``."""
    bound = 1.0 / math.sqrt(cols) if cols else 0.0
    weight = rng.uniform(-bound, bound, (rows, cols)).astype(np.float32)
    bias = rng.uniform(-bound, bound, rows).astype(np.float32)
    return weight, bias


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """``log softmax`` along the last axis, shifted by the row maximum so it never overflows."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(actions: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    r"""Log-density of a diagonal Gaussian summed over the action dimensions: ``Normal(mean, std).log_prob(a).sum(1)``.

    .. math::

        \log\pi(a|s) = \sum_j -\tfrac12 z_j^2 - \log\sigma_j - \tfrac12\log 2\pi, \qquad
        z_j = (a_j - \mu_j) / \sigma_j

    Parameters
    ----------
    actions, mean : numpy.ndarray
        Shape ``(batch, action_dim)``.
    log_std : numpy.ndarray
        Shape ``(1, action_dim)`` (state-independent) or ``(batch, action_dim)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(batch,)``, in ``mean``'s dtype.
    """
    z = (actions - mean) * np.exp(-log_std)
    return (-0.5 * z * z - log_std - _LOG_SQRT_2PI).sum(axis=-1).astype(mean.dtype)


def gaussian_entropy(log_std: np.ndarray, batch: int) -> np.ndarray:
    r"""Entropy of a diagonal Gaussian, :math:`\sum_j \tfrac12 + \tfrac12\log 2\pi + \log\sigma_j`, per row.

    Parameters
    ----------
    log_std : numpy.ndarray
        Shape ``(1, action_dim)`` or ``(batch, action_dim)``.
    batch : int
        Number of rows to return (the entropy does not depend on the mean).

    Returns
    -------
    numpy.ndarray
        Shape ``(batch,)``.
    """
    per_row = (0.5 + _LOG_SQRT_2PI + log_std).sum(axis=-1)
    return np.broadcast_to(per_row, (batch,)).astype(log_std.dtype)


class MLP:
    """A fully connected network ``Linear -> act -> ... -> Linear`` with a cached forward and a backward pass.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths, input first and output last (``(4, 64, 64, 2)``: two hidden layers of 64).
    activation : {"tanh", "relu"}
        Hidden-layer nonlinearity (none after the last layer).
    rng : numpy.random.Generator
        Source of the initial weights.
    init : {"orthogonal", "torch_default"}
        ``"orthogonal"``: CleanRL's ``layer_init`` (orthogonal weights with gain ``sqrt(2)``, the last layer's gain
        ``out_gain``, zero biases); ``"torch_default"``: ``nn.Linear``'s default.
    out_gain : float
        Gain of the last layer under ``"orthogonal"``.

    Attributes
    ----------
    params : list of numpy.ndarray
        ``[W0, b0, W1, b1, ...]``, float32, updated in place by :class:`Adam`.
    grads : list of numpy.ndarray
        Gradients of the same shapes, written by :meth:`backward`.
    """

    def __init__(
        self,
        sizes: Sequence[int],
        activation: str,
        rng: np.random.Generator,
        *,
        init: str = "orthogonal",
        out_gain: float = 1.0,
    ) -> None:
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
        if init not in ("orthogonal", "torch_default"):
            raise ValueError(f"init must be 'orthogonal' or 'torch_default', not {init!r}")
        sizes = [int(s) for s in sizes]
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(f"sizes must hold at least an input and an output width, all >= 1, not {sizes!r}")
        self.sizes = tuple(sizes)
        self.activation = activation
        self.params: list[np.ndarray] = []
        n_layers = len(sizes) - 1
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            if init == "orthogonal":
                gain = out_gain if i == n_layers - 1 else math.sqrt(2.0)
                weight, bias = orthogonal(fan_out, fan_in, gain, rng), np.zeros(fan_out, np.float32)
            else:
                weight, bias = torch_default_linear(fan_out, fan_in, rng)
            self.params += [weight, bias]
        self.grads = [np.zeros_like(p) for p in self.params]
        self._cache: list[tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def n_layers(self) -> int:
        """number of Linear layers"""
        return len(self.params) // 2

    def _act(self, z: np.ndarray) -> np.ndarray:
        return np.tanh(z) if self.activation == "tanh" else np.maximum(z, 0.0)

    def forward(self, x: np.ndarray, *, keep: bool = False) -> np.ndarray:
        """The network's output for the batch ``x`` (shape ``(batch, sizes[0])``, cast to the parameters' float32).

        ``keep=True`` caches what :meth:`backward` needs (the inputs and outputs of every layer); a forward without
        it is the ``torch.no_grad()`` case and leaves an earlier cache alone.
        """
        h = np.asarray(x, dtype=self.params[0].dtype).reshape(len(x), -1)
        cache = []
        for i in range(self.n_layers):
            weight, bias = self.params[2 * i], self.params[2 * i + 1]
            z = h @ weight.T + bias
            out = z if i == self.n_layers - 1 else self._act(z)
            cache.append((h, out))
            h = out
        if keep:
            self._cache = cache
        return h

    __call__ = forward

    def backward(self, grad_out: np.ndarray) -> None:
        """Write d(loss)/d(param) into :attr:`grads`, given d(loss)/d(output) of the last ``forward(keep=True)``.

        Raises
        ------
        RuntimeError
            If no forward pass was kept.
        """
        if self._cache is None:
            raise RuntimeError("backward() needs a forward(x, keep=True) first")
        grad = np.asarray(grad_out, dtype=self.params[0].dtype)
        for i in reversed(range(self.n_layers)):
            h_in, h_out = self._cache[i]
            if i != self.n_layers - 1:  # through the activation: tanh' = 1 - tanh^2, relu' = [out > 0]
                grad = grad * (1.0 - h_out * h_out) if self.activation == "tanh" else grad * (h_out > 0.0)
            self.grads[2 * i] = grad.T @ h_in
            self.grads[2 * i + 1] = grad.sum(axis=0)
            if i:
                grad = grad @ self.params[2 * i]
        self._cache = None

    def state_dict(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Copies of the parameters under ``nn.Sequential``'s names (``0.weight``, ``0.bias``, ``2.weight``, ...)."""
        out = {}
        for i in range(self.n_layers):
            out[f"{prefix}{2 * i}.weight"] = self.params[2 * i].copy()
            out[f"{prefix}{2 * i}.bias"] = self.params[2 * i + 1].copy()
        return out

    def load_state_dict(self, state: dict[str, np.ndarray], prefix: str = "") -> None:
        """Load :meth:`state_dict` output (or a torch ``nn.Sequential`` MLP's, as numpy arrays) into the parameters.

        The arrays are overwritten in place, never replaced, so an :class:`Adam` built on :attr:`params` keeps
        updating the live parameters.

        Raises
        ------
        ValueError
            If a key is missing or a shape differs (nothing is changed then).
        """
        new = []
        for i in range(self.n_layers):
            for j, name in enumerate(("weight", "bias")):
                key = f"{prefix}{2 * i}.{name}"
                if key not in state:
                    raise ValueError(f"missing parameter {key!r}")
                value = np.asarray(state[key], dtype=np.float32)
                if value.shape != self.params[2 * i + j].shape:
                    raise ValueError(f"{key!r} has shape {value.shape}, expected {self.params[2 * i + j].shape}")
                new.append(value)
        for param, value in zip(self.params, new):  # in place: an optimizer holds these very arrays
            param[...] = value

    def copy_from(self, other: MLP, tau: float = 1.0) -> None:
        """``self <- tau * other + (1 - tau) * self``, parameter by parameter (a target network's update)."""
        for mine, theirs in zip(self.params, other.params):
            if tau == 1.0:
                mine[...] = theirs
            else:
                mine[...] = tau * theirs + (1.0 - tau) * mine


def clip_grad_norm(grads: Sequence[np.ndarray], max_norm: float) -> float:
    """Scale ``grads`` in place so their joint 2-norm is at most ``max_norm``; return the norm before clipping."""
    total = math.sqrt(sum(float(np.dot(g.ravel(), g.ravel())) for g in grads))
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for g in grads:
            g *= np.float32(coef)
    return total


class Adam:
    """``torch.optim.Adam`` (no weight decay, no amsgrad) over lists of float32 arrays, updated in place.

    Parameters
    ----------
    params : list of numpy.ndarray
        The parameters (e.g. ``actor.params + critic.params``); they are updated in place, never replaced.
    lr : float
        Learning rate (change it with :attr:`lr`, as the agents' schedules do).
    betas : tuple of float
        Decay rates of the first and second moments.
    eps : float
        Added to the denominator.
    """

    def __init__(
        self,
        params: Sequence[np.ndarray],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        if not lr > 0.0 or not eps > 0.0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"need lr > 0, eps > 0 and betas in [0, 1), not {lr!r}, {eps!r}, {betas!r}")
        self.params = list(params)
        self.lr = float(lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self.step_count = 0
        self.exp_avg = [np.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [np.zeros_like(p) for p in self.params]

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """One Adam update with ``grads`` (same order and shapes as :attr:`params`)."""
        beta1, beta2 = self.betas
        self.step_count += 1
        bias1 = 1.0 - beta1**self.step_count
        bias2_sqrt = math.sqrt(1.0 - beta2**self.step_count)
        step_size = np.float32(self.lr / bias1)
        for p, g, m, v in zip(self.params, grads, self.exp_avg, self.exp_avg_sq):
            m *= np.float32(beta1)
            m += np.float32(1.0 - beta1) * g
            v *= np.float32(beta2)
            v += np.float32(1.0 - beta2) * (g * g)
            p -= step_size * m / (np.sqrt(v) / np.float32(bias2_sqrt) + np.float32(self.eps))

    def state_dict(self) -> dict:
        """The moments and the step count (arrays are copies)."""
        return {
            "step": self.step_count,
            "lr": self.lr,
            "betas": list(self.betas),
            "eps": self.eps,
            "exp_avg": [m.copy() for m in self.exp_avg],
            "exp_avg_sq": [v.copy() for v in self.exp_avg_sq],
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output.

        Raises
        ------
        ValueError
            If the moments do not match the parameters' number or shapes (nothing is changed then).
        """
        exp_avg, exp_avg_sq = list(state["exp_avg"]), list(state["exp_avg_sq"])
        if len(exp_avg) != len(self.params) or len(exp_avg_sq) != len(self.params):
            raise ValueError(f"optimizer state holds {len(exp_avg)} moments, the network {len(self.params)}")
        for p, m, v in zip(self.params, exp_avg, exp_avg_sq):
            if np.shape(m) != p.shape or np.shape(v) != p.shape:
                raise ValueError(f"optimizer moment of shape {np.shape(m)} for a parameter of shape {p.shape}")
        self.exp_avg = [np.array(m, dtype=np.float32) for m in exp_avg]
        self.exp_avg_sq = [np.array(v, dtype=np.float32) for v in exp_avg_sq]
        self.step_count = int(state["step"])
        self.lr = float(state.get("lr", self.lr))
