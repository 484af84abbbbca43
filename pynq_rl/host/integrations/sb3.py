r"""Stable-Baselines3 drop-in: PPO/A2C rollout buffers whose GAE step runs on the GAE core.

Import path ``pynq_rl.host.integrations.sb3`` (extra ``sb3``: ``pip install 'pynq-rl[sb3]'``)::

    from stable_baselines3 import PPO
    from pynq_rl import RLOverlay
    from pynq_rl.host.integrations.sb3 import GaeRolloutBuffer

    ol = RLOverlay(backend="emu")
    model = PPO("MlpPolicy", "CartPole-v1", rollout_buffer_class=GaeRolloutBuffer,
                rollout_buffer_kwargs={"overlay": ol, "quantize": True})

Only ``compute_returns_and_advantage`` changes; storage, ``add`` and ``get`` are SB3's.

SB3's conventions on the core
-----------------------------
SB3 stores, per step ``t`` of ``T = buffer_size`` and env ``n``, ``episode_starts[t] = 1`` when observation ``t``
starts a new episode, and is handed ``last_values`` (``V(s_T)``) and ``dones`` (whether step ``T - 1`` ended an
episode). Its recursion is

.. math::

    m_t = \begin{cases} 1 - \mathrm{episode\_starts}_{t+1} & t < T - 1 \\ 1 - \mathrm{dones} & t = T - 1
          \end{cases}, \qquad
    \delta_t = r_t + \gamma m_t V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda m_t A_{t+1}, \qquad R_t = A_t + V_t,

with :math:`V_T` = ``last_values``. The core's ``compute(rewards[T, N], values[T + 1, N], dones[T, N])`` computes
the same recursion with :math:`m_t = 1 - d_t`, where :math:`d_t = 1` means the episode ended at step ``t``. So the
buffer hands the core

.. math::

    d_t = \mathrm{episode\_starts}_{t+1} \; (t < T - 1), \qquad d_{T-1} = \mathrm{dones}, \qquad
    \mathrm{values} = [V_0, \dots, V_{T-1}, \mathrm{last\_values}],

and the rewards unchanged: SB3's ``collect_rollouts`` already adds :math:`\gamma V(s_{\mathrm{terminal}})` to the
reward of a time-limit-truncated step, which is the core's truncation convention (fold the bootstrap into the
reward, mark the step done). Row 0 of ``episode_starts`` is not used, in SB3 or here.

Precision (``tests/agents/test_sb3.py``): ``quantize=False`` (raw Q15.16) stays within
:func:`pynq_rl.overlay.models.gae.error_bound` of SB3's float32 loop and, measured, within 1e-4 for PPO's usual
``gamma * gae_lambda <= 0.95`` with ``|V|`` up to 50 (1.01e-4 was seen at ``gamma * gae_lambda = 0.97``: rounding
errors add over ``1 / (1 - gamma * gae_lambda)`` steps); ``quantize=True`` (8-bit codes, a scale and offset per lane and
run of 32 steps) and ``quantize="block"`` (HEPPO's block codes) stay within the same function's bound for their
largest scale.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

try:
    from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
except ImportError as error:  # pragma: no cover - exercised only without the extra
    # a ModuleNotFoundError naming the missing module, so tools/check_install.py reports it as an absent extra
    raise ModuleNotFoundError(
        f"pynq_rl.host.integrations.sb3 needs Stable-Baselines3 and torch: pip install 'pynq-rl[sb3]' ({error})",
        name=error.name,
    ) from error

from ..agents.ppo.advantages import GaeCompute

__all__ = ["GaeDictRolloutBuffer", "GaeRolloutBuffer", "sb3_to_core"]


def sb3_to_core(
    rewards: np.ndarray, values: np.ndarray, episode_starts: np.ndarray, last_values: np.ndarray, dones: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map an SB3 rollout to the core's ``(rewards[T, N], values[T + 1, N], dones[T, N])``.

    Parameters
    ----------
    rewards, values, episode_starts : numpy.ndarray
        The buffer's arrays, shape ``(T, N)``.
    last_values : numpy.ndarray
        ``V(s_T)``, shape ``(N,)`` (or anything that flattens to it).
    dones : numpy.ndarray
        Whether step ``T - 1`` ended each env's episode, shape ``(N,)``.

    Returns
    -------
    rewards, values, dones : numpy.ndarray
        float32, shapes ``(T, N)``, ``(T + 1, N)`` and ``(T, N)``, with ``dones[t] = episode_starts[t + 1]`` for
        ``t < T - 1`` and ``dones[T - 1] = dones``.

    Raises
    ------
    ValueError
        If the shapes do not agree.
    """
    rewards = np.asarray(rewards, dtype=np.float32)
    if rewards.ndim != 2:
        raise ValueError(f"rewards must have shape (n_steps, n_envs), not {rewards.shape!r}")
    n_steps, n_envs = rewards.shape
    last_values = np.asarray(last_values, dtype=np.float32).reshape(-1)
    dones = np.asarray(dones, dtype=np.float32).reshape(-1)
    expected = (
        ("values", values, (n_steps, n_envs)),
        ("episode_starts", episode_starts, (n_steps, n_envs)),
        ("last_values", last_values, (n_envs,)),
        ("dones", dones, (n_envs,)),
    )
    for name, array, shape in expected:
        if np.shape(array) != shape:
            raise ValueError(f"{name} must have shape {shape} to match rewards, not {np.shape(array)!r}")
    core_values = np.concatenate([np.asarray(values, dtype=np.float32), last_values[None, :]])
    core_dones = np.concatenate([np.asarray(episode_starts, dtype=np.float32)[1:], dones[None, :]])
    return rewards, core_values, core_dones


class _GaeOffload:
    """Mixin that moves ``compute_returns_and_advantage`` onto the GAE core; not constructed directly.

    It consumes the keywords ``overlay``, ``gae``, ``backend``, ``board``, ``quantize`` and ``strict`` and passes
    everything else to the SB3 buffer it is mixed into (see :class:`GaeRolloutBuffer` for their meaning).
    """

    # the SB3 rollout buffer's attributes this mixin reads (declared for the type checker; the buffer sets them)
    rewards: np.ndarray
    values: np.ndarray
    episode_starts: np.ndarray
    gamma: float
    gae_lambda: float

    def __init__(
        self,
        *args: Any,
        overlay: Any = None,
        gae: GaeCompute | None = None,
        backend: str | None = None,
        board: Any = None,
        quantize: bool = True,
        strict: bool = False,
        **kwargs: Any,
    ) -> None:
        sources = [
            name for name, given in (("overlay", overlay), ("gae", gae), ("backend", backend)) if given is not None
        ]
        if len(sources) > 1:
            raise TypeError(f"give at most one of overlay=, gae= and backend=, not {', '.join(sources)}")
        if board is not None and (overlay is not None or gae is not None):
            raise TypeError("board= selects the overlay built from backend=; it cannot go with overlay= or gae=")
        if overlay is not None and not hasattr(overlay, "gae"):
            raise TypeError(f"overlay must be an RLOverlay (with a .gae core), not {type(overlay).__name__!r}")
        if gae is not None and not callable(getattr(gae, "compute", None)):
            raise TypeError(
                f"gae must have a compute(rewards, values, dones, *, gamma, lam, quantize) method, "
                f"not {type(gae).__name__!r}"
            )
        for name, flag in (("quantize", quantize), ("strict", strict)):
            if not isinstance(flag, (bool, np.bool_)):  # "no" or 0 would read as a choice the caller did not make
                raise TypeError(f"{name} must be a bool, not {flag!r}")
        self._gae = overlay.gae if overlay is not None else gae
        self.backend = backend
        self.board = board
        self.quantize = bool(quantize)
        self.strict = bool(strict)
        self.gae_time_ms = float("nan")
        """wall time of the last GAE step (mapping, core call, copy back), in milliseconds"""
        super().__init__(*args, **kwargs)

    @property
    def gae(self) -> GaeCompute:
        """The GAE core's driver (built on first use from ``backend``/``board`` when none was given)."""
        if self._gae is None:
            # imported lazily: building an overlay loads pynq and the backend
            from ..overlay import load_core

            self._gae = load_core("gae", self.backend, self.board)
        return self._gae

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        """GAE(lambda) advantages and TD(lambda) returns of the rollout, on the GAE core.

        Fills ``self.advantages`` and ``self.returns`` (float32, shape ``(buffer_size, n_envs)``) exactly where
        SB3's :meth:`RolloutBuffer.compute_returns_and_advantage` does, with the convention mapping of the module
        docstring. ``gae_lambda = 1`` gives the bootstrapped Monte-Carlo return minus V, ``gae_lambda = 0`` the
        one-step TD error.

        Parameters
        ----------
        last_values : torch.Tensor or numpy.ndarray
            ``V(s_T)`` for each env, shape ``(n_envs,)`` or ``(n_envs, 1)``.
        dones : numpy.ndarray
            Whether the last step ended each env's episode, shape ``(n_envs,)``.

        Raises
        ------
        ValueError
            Shapes that do not match the buffer, NaN/inf in the rollout, or (with ``strict=True``) a value that
            saturated the core's fixed-point format.
        TimeoutError
            The core did not finish within its driver's deadline.
        RuntimeError
            The core or its DMA reported an error, or the core returned arrays of the wrong shape.
        """
        start = time.perf_counter()
        if hasattr(last_values, "detach"):
            last_values = last_values.detach().cpu().numpy()
        rewards, values, core_dones = sb3_to_core(self.rewards, self.values, self.episode_starts, last_values, dones)
        options = {"strict": True} if self.strict else {}  # only drivers know strict; test doubles need not
        advantages, _ = self.gae.compute(
            rewards,
            values,
            core_dones,
            gamma=float(self.gamma),
            lam=float(self.gae_lambda),
            quantize=self.quantize,
            **options,
        )
        advantages = np.asarray(advantages, dtype=np.float32)
        if advantages.shape != rewards.shape:
            raise RuntimeError(f"GAE core returned advantages of shape {advantages.shape}, expected {rewards.shape}")
        self.advantages = advantages
        # SB3's TD(lambda) return A + V, formed in float32 from the buffer's own values, as SB3 forms it
        self.returns = self.advantages + self.values
        self.gae_time_ms = (time.perf_counter() - start) * 1e3


class GaeRolloutBuffer(_GaeOffload, RolloutBuffer):
    """SB3 :class:`~stable_baselines3.common.buffers.RolloutBuffer` whose GAE step runs on the GAE core.

    Pass it as ``PPO(..., rollout_buffer_class=GaeRolloutBuffer, rollout_buffer_kwargs={...})`` (A2C too); SB3
    supplies the positional arguments, ``gamma``, ``gae_lambda`` and ``n_envs``.

    Parameters
    ----------
    buffer_size, observation_space, action_space, device, gae_lambda, gamma, n_envs
        As for SB3's ``RolloutBuffer``.
    overlay : RLOverlay, optional
        A loaded overlay; its ``.gae`` core is used.
    gae : object, optional
        Anything with the driver's ``compute(rewards, values, dones, *, gamma, lam, quantize)`` (a ``GaeCore``, or
        a test double).
    backend : {"board", "emu", "rtl", "verilator"}, optional
        Build ``load_core("gae", backend, board)`` on the first GAE step. Plain strings pickle, so an SB3
        model built this way saves with ``model.save`` and loads with ``PPO.load``; SB3 pickles
        ``rollout_buffer_kwargs``, and an ``overlay=`` object there makes ``model.save`` raise ``TypeError``.
        With none of ``overlay``, ``gae`` and ``backend``, the overlay's default backend is used (``board`` on
        a PYNQ board, ``emu`` elsewhere, or ``$PYNQ_RL_BACKEND``).
    board : str or BoardSpec, optional
        Board of the overlay built from ``backend``.
    quantize : bool
        True: HEPPO's 8-bit block-standardized codes (error within ``models.gae.error_bound``); False: raw Q15.16
        fixed point (saturates beyond +-32768).
    strict : bool
        Raise ``ValueError`` instead of warning (``GaeSaturationWarning``) when a value saturates.

    Attributes
    ----------
    gae : GaeCompute
        The core's driver (or the object given as ``gae``).
    gae_time_ms : float
        Wall time of the last GAE step in milliseconds (NaN before the first).

    Raises
    ------
    TypeError
        More than one of ``overlay``, ``gae`` and ``backend``; ``board`` with ``overlay`` or ``gae``; an ``overlay``
        without a GAE core; a ``gae`` without ``compute``; a ``quantize`` or ``strict`` that is not a bool.
    """


class GaeDictRolloutBuffer(_GaeOffload, DictRolloutBuffer):
    """SB3 :class:`~stable_baselines3.common.buffers.DictRolloutBuffer` (``MultiInputPolicy``) with GAE on the core.

    Same keywords as :class:`GaeRolloutBuffer`.
    """
