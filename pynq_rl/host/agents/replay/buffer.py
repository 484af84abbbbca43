r"""Prioritized experience replay (Schaul et al., 2016) with the priorities in a sum tree: numpy or the replay core.

The buffer splits PER in two, as the replay core's contract has it (docs/design.md, Replay core (on-chip RMM)):

* the **transitions** (``observations``, ``next_observations``, ``actions``, ``rewards``, ``dones``) live in host
  memory, in arrays made by an injectable ``allocator`` (``np.zeros`` by default; ``pynq.allocate`` on a board, so
  they sit in the DMA-able DDR next to the core);
* the **priorities** live in a *priority backend* that stores ``p_i**alpha`` per slot and samples from it: the
  float64 :class:`NumpySumTree` (the reference, and the fallback where no core is present) or the replay core's
  driver :class:`~pynq_rl.host.drivers.replay.ReplayCore` (``"emu"``, ``"rtl"``, ``"verilator"``, ``"board"``,
  reached through :class:`~pynq_rl.host.overlay.RLOverlay`). Both have the same public methods
  (:class:`PriorityBackend`), and the buffer uses nothing else of the driver.

Sampling (both backends): stratified proportional. With ``N`` = slots holding a nonzero priority,

.. math::

    P(i) = \frac{p_i^\alpha}{\sum_k p_k^\alpha}, \qquad
    w_i = \frac{(N \, P(i))^{-\beta}}{\max_{j \in \text{batch}} (N \, P(j))^{-\beta}}

and sample ``j`` of a batch of ``n`` falls in the ``j``-th of ``n`` equal slices of the total. A new transition gets
the largest priority seen so far (``max_priority``, 1.0 at first), so it is replayed at least once soon; after a
replay its priority becomes ``|TD error| + priority_eps`` (:meth:`PrioritizedReplayBuffer.update_priorities`).
Special cases: ``alpha = 0`` is uniform replay (then ``w_i = 1``); ``beta = 1`` fully corrects the sampling bias.

Layout. One flat ring of ``capacity`` slots, one slot per transition; :meth:`~PrioritizedReplayBuffer.add` takes a
batch of ``n_envs`` transitions and writes them into consecutive slots (wrapping around). This departs from SB3's
``(buffer_size, n_envs, ...)`` storage on purpose: every transition needs its own leaf in the sum tree, and the leaf
index *is* the slot index. The done convention is CleanRL's: ``dones[i] = 1`` when ``next_observations[i]`` is a
terminal state (terminated, **not** truncated: a time-limit cut is bootstrapped from the real last observation).

On the replay core, leaf priorities are fixed point (UQ6.10 by default): ``p**alpha`` is rounded to 1/1024, a
positive priority never rounds to 0, and values above ~64 saturate with a ``ReplaySaturationWarning``. Sampling
probabilities then differ from :class:`NumpySumTree`'s by at most the quantization step (the model documents the
bound), which does not change what the agent learns (``tests/agents/test_dqn.py`` trains on both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .priorities import PRIORITY_BACKENDS, NumpySumTree, PriorityBackend, make_priority_backend

__all__ = [
    "PRIORITY_BACKENDS",
    "PriorityBackend",
    "NumpySumTree",
    "PrioritizedReplayBufferSamples",
    "PrioritizedReplayBuffer",
    "make_priority_backend",
]


# ---------------------------------------------------------------------------------------------------------------------
# The buffer
# ---------------------------------------------------------------------------------------------------------------------
class PrioritizedReplayBufferSamples(NamedTuple):
    """SB3's ``ReplayBufferSamples`` fields plus PER's ``weights`` and ``indices`` (numpy arrays, batch first)."""

    observations: np.ndarray
    """obs, shape ``(batch, *obs_shape)``, the buffer's obs dtype"""
    actions: np.ndarray
    """a, shape ``(batch, *action_shape)``"""
    next_observations: np.ndarray
    """the real next observation (the episode's last one where it ended), shape ``(batch, *obs_shape)``"""
    dones: np.ndarray
    """1.0 where next_observations is terminal (terminated, not truncated), float32, shape (batch,)"""
    rewards: np.ndarray
    """r, float32, shape (batch,)"""
    weights: np.ndarray
    """importance-sampling weights normalized by the batch maximum, float32, shape (batch,)"""
    indices: np.ndarray
    """the slots sampled (int64), to pass back to update_priorities"""


Allocator = Callable[[tuple, Any], np.ndarray]


class PrioritizedReplayBuffer:
    """A ring of transitions in host memory with their priorities in a sum tree (numpy or the replay core).

    Parameters
    ----------
    capacity : int
        Number of transition slots; at most the priority backend's capacity (the core's ``K**LEVELS``).
    obs_shape : tuple of int
        Shape of one observation.
    obs_dtype : numpy dtype
        Dtype of the stored observations (``float32`` for CartPole, ``uint8`` for pixels).
    action_shape : tuple of int
        Shape of one action (``()`` for a discrete action).
    action_dtype : numpy dtype
        Dtype of the stored actions (``int64`` for discrete actions).
    priorities : str or PriorityBackend
        ``"host"`` (:class:`NumpySumTree`, float64 on the host), ``"emu"``, ``"rtl"``, ``"verilator"``, ``"board"``
        (the replay core of ``RLOverlay(backend=..., board=board)``), or an existing backend object (e.g.
        ``overlay.replay``). The buffer takes it over: it is cleared, its ``alpha`` set and, if ``seed`` is given, its
        sampler reseeded.
    alpha : float
        Priority exponent (0 = uniform, 1 = fully proportional).
    priority_eps : float
        Added to ``|TD error|`` so no replayed transition gets priority 0.
    seed : int or None
        Seed of the sampler (the numpy tree's generator, or the core's PRNG).
    allocator : callable
        ``allocator(shape, dtype)`` makes each storage array: ``np.zeros`` by default, ``pynq.allocate`` on a board.
    board : str or BoardSpec, optional
        Board of the overlay when ``priorities`` names a core backend.
    timeout_s : float, optional
        Deadline per core operation in seconds when ``priorities`` names a core backend (None: the driver's).

    Attributes
    ----------
    observations, next_observations, actions, rewards, dones : np.ndarray
        The storage, ``capacity`` rows each.
    pos : int
        The next slot to write.
    full : bool
        Whether the ring has wrapped around (every slot holds a transition).
    max_priority : float
        The largest priority given so far (new transitions get it).
    priorities : PriorityBackend
        The priority store.

    Raises
    ------
    ValueError
        Bad sizes, or ``capacity`` larger than the priority backend's.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: Any = np.float32,
        action_shape: tuple[int, ...] = (),
        action_dtype: Any = np.int64,
        priorities: str | PriorityBackend = "host",
        alpha: float = 0.6,
        priority_eps: float = 1e-6,
        seed: int | None = None,
        allocator: Allocator = np.zeros,
        board: Any = None,
        timeout_s: float | None = None,
    ) -> None:
        if not isinstance(capacity, (int, np.integer)) or int(capacity) < 1:
            raise ValueError(f"capacity must be an integer >= 1, not {capacity!r}")
        if not 0.0 <= float(alpha):
            raise ValueError(f"alpha must be >= 0, not {alpha!r}")
        if not float(priority_eps) > 0.0:
            raise ValueError(f"priority_eps must be > 0, not {priority_eps!r}")
        self.capacity = int(capacity)
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.action_shape = tuple(int(d) for d in action_shape)
        self.priority_eps = float(priority_eps)
        if isinstance(priorities, str):  # make_priority_backend rejects an unknown name
            backend = make_priority_backend(priorities, self.capacity, board, timeout_s=timeout_s)
            self.backend_name = priorities
        else:
            backend = priorities
            self.backend_name = type(backend).__name__
        if self.capacity > backend.capacity:
            raise ValueError(
                f"buffer capacity {self.capacity} exceeds the priority backend's capacity "
                f"{backend.capacity} ({self.backend_name}); use a buffer of at most {backend.capacity} "
                f"transitions or a larger replay core build"
            )
        self.priorities = backend
        self.priorities.clear()
        self.priorities.alpha = float(alpha)
        if seed is not None:
            if isinstance(backend, NumpySumTree):
                backend.rng = np.random.default_rng(seed)
            elif hasattr(backend, "seed"):
                backend.seed = int(seed) & 0xFFFF_FFFF

        self.observations = allocator((self.capacity,) + self.obs_shape, np.dtype(obs_dtype))
        self.next_observations = allocator((self.capacity,) + self.obs_shape, np.dtype(obs_dtype))
        self.actions = allocator((self.capacity,) + self.action_shape, np.dtype(action_dtype))
        self.rewards = allocator((self.capacity,), np.dtype(np.float32))
        self.dones = allocator((self.capacity,), np.dtype(np.float32))
        self.pos = 0
        self.full = False
        self.max_priority = 1.0

    @property
    def alpha(self) -> float:
        """The priority exponent (held by the priority backend)."""
        return float(self.priorities.alpha)

    def size(self) -> int:
        """Number of transitions stored."""
        return self.capacity if self.full else self.pos

    def __len__(self) -> int:
        return self.size()

    def add(
        self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: np.ndarray, done: np.ndarray
    ) -> np.ndarray:
        """Store a batch of ``n_envs`` transitions in the next slots, each with priority ``max_priority``.

        Parameters
        ----------
        obs, next_obs : np.ndarray
            Shape ``(n_envs, *obs_shape)``; ``next_obs`` is the real next observation (``final_obs`` where the
            episode ended).
        action : np.ndarray
            Shape ``(n_envs, *action_shape)``.
        reward, done : np.ndarray
            Shape ``(n_envs,)``; ``done`` = 1 where ``next_obs`` is terminal (terminated, not truncated).

        Returns
        -------
        np.ndarray
            The slots written (int64).

        Raises
        ------
        ValueError
            Shapes that do not fit, or more transitions than the capacity at once.
        """
        obs, next_obs = np.asarray(obs), np.asarray(next_obs)
        action, reward, done = np.asarray(action), np.asarray(reward), np.asarray(done)
        n = obs.shape[0] if obs.ndim else 0
        expected = {
            "obs": (n,) + self.obs_shape,
            "next_obs": (n,) + self.obs_shape,
            "action": (n,) + self.action_shape,
            "reward": (n,),
            "done": (n,),
        }
        found = {
            "obs": obs.shape,
            "next_obs": next_obs.shape,
            "action": action.shape,
            "reward": reward.shape,
            "done": done.shape,
        }
        if n < 1 or found != expected:
            raise ValueError(f"add() expects a batch of n >= 1 transitions shaped {expected}, not {found}")
        if n > self.capacity:
            raise ValueError(f"add() got {n} transitions at once, more than the capacity {self.capacity}")
        slots = (self.pos + np.arange(n)) % self.capacity
        self.observations[slots] = obs
        self.next_observations[slots] = next_obs
        self.actions[slots] = action
        self.rewards[slots] = reward
        self.dones[slots] = done
        self.priorities.update(slots, np.full(n, self.max_priority))
        self.full = self.full or self.pos + n >= self.capacity
        self.pos = int((self.pos + n) % self.capacity)
        return slots

    def sample(self, batch_size: int, beta: float = 0.4) -> PrioritizedReplayBufferSamples:
        """A prioritized batch (stratified proportional, with replacement across strata) and its IS weights.

        Raises
        ------
        ValueError
            ``batch_size < 1``, ``beta`` outside [0, 1], or the buffer is empty.
        RuntimeError
            The priority backend returned a slot that holds no transition (it and the buffer disagree).
        """
        if not isinstance(batch_size, (int, np.integer)) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be an integer >= 1, not {batch_size!r}")
        if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= float(beta) <= 1.0):
            raise ValueError(f"beta must be a number in [0, 1], not {beta!r}")
        if self.size() == 0:
            raise ValueError("cannot sample from an empty replay buffer (add() transitions first)")
        indices, _, weights = self.priorities.sample(int(batch_size), float(beta))
        indices = np.asarray(indices, dtype=np.int64)
        if indices.shape != (int(batch_size),) or np.any(indices < 0) or np.any(indices >= self.size()):
            raise RuntimeError(
                f"the priority backend ({self.backend_name}) sampled slots outside the "
                f"{self.size()} stored transitions: {indices[(indices < 0) | (indices >= self.size())][:8]}"
            )
        return PrioritizedReplayBufferSamples(
            observations=np.asarray(self.observations[indices]),
            actions=np.asarray(self.actions[indices]),
            next_observations=np.asarray(self.next_observations[indices]),
            dones=np.asarray(self.dones[indices]),
            rewards=np.asarray(self.rewards[indices]),
            weights=np.asarray(weights, dtype=np.float32),
            indices=indices,
        )

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> np.ndarray:
        """Give the replayed slots priority ``|td_errors| + priority_eps`` (later duplicates win); track the maximum.

        Returns
        -------
        np.ndarray
            The priorities written (float64).

        Raises
        ------
        ValueError
            Indices not 1-D integers within the stored transitions, TD errors of another shape, or NaN/inf ones.
        """
        indices, td_errors = np.asarray(indices), np.asarray(td_errors, dtype=np.float64)
        if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
            raise ValueError(f"indices must be a 1-D integer array, not {indices.dtype} of shape {indices.shape}")
        if td_errors.shape != indices.shape:
            raise ValueError(f"td_errors must have the shape of indices {indices.shape}, not {td_errors.shape}")
        bad = (indices < 0) | (indices >= self.size())
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"indices[{i}] = {indices[i]} holds no transition (stored: {self.size()})")
        if not np.all(np.isfinite(td_errors)):
            i = int(np.flatnonzero(~np.isfinite(td_errors))[0])
            raise ValueError(f"td_errors must be finite; td_errors[{i}] is {td_errors[i]!r}")
        priorities = np.abs(td_errors) + self.priority_eps
        if priorities.size:
            self.max_priority = max(self.max_priority, float(priorities.max()))
        self.priorities.update(indices.astype(np.int64), priorities)
        return priorities

    # -- checkpoints --------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Transitions (copies of the stored rows), ring position, ``max_priority`` and the priority backend's state."""
        n = self.size()
        return {
            "capacity": self.capacity,
            "obs_shape": self.obs_shape,
            "action_shape": self.action_shape,
            "pos": self.pos,
            "full": self.full,
            "max_priority": self.max_priority,
            "priority_eps": self.priority_eps,
            "observations": np.array(self.observations[:n]),
            "next_observations": np.array(self.next_observations[:n]),
            "actions": np.array(self.actions[:n]),
            "rewards": np.array(self.rewards[:n]),
            "dones": np.array(self.dones[:n]),
            "priorities": self.priorities.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` into this buffer (same capacity, shapes and kind of priority backend).

        Raises
        ------
        ValueError
            The state does not fit this buffer (checked before anything changes, except for errors raised by the
            priority backend's own ``load_state_dict``).
        """
        expected = {"capacity": self.capacity, "obs_shape": self.obs_shape, "action_shape": self.action_shape}
        found = {
            "capacity": int(state["capacity"]),
            "obs_shape": tuple(int(d) for d in state["obs_shape"]),
            "action_shape": tuple(int(d) for d in state["action_shape"]),
        }
        if found != expected:
            raise ValueError(f"replay buffer state is for {found}, this buffer is {expected}")
        pos, full = int(state["pos"]), bool(state["full"])
        n = self.capacity if full else pos
        if not 0 <= pos < self.capacity:
            raise ValueError(f"replay buffer state has pos {pos} outside [0, {self.capacity})")
        arrays = {
            name: np.asarray(state[name])
            for name in ("observations", "next_observations", "actions", "rewards", "dones")
        }
        for name, array in arrays.items():
            if array.shape != (n,) + getattr(self, name).shape[1:]:
                raise ValueError(
                    f"replay buffer state {name} has shape {array.shape}, expected "
                    f"{(n,) + getattr(self, name).shape[1:]}"
                )
        self.priorities.load_state_dict(state["priorities"])
        for name, array in arrays.items():
            getattr(self, name)[:n] = array
        self.pos, self.full = pos, full
        self.max_priority = float(state["max_priority"])
        self.priority_eps = float(state["priority_eps"])
