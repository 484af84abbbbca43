r"""Prioritized experience replay (Schaul et al., 2016) with the priorities in a sum tree: numpy or the replay core.

The buffer splits PER in two, as DESIGN.md section 3 prescribes for the replay core:

* the **transitions** (``observations``, ``next_observations``, ``actions``, ``rewards``, ``dones``) live in host
  memory, in arrays made by an injectable ``allocator`` (``np.zeros`` by default; ``pynq.allocate`` on a board, so
  they sit in the DMA-able DDR next to the core);
* the **priorities** live in a *priority backend* that stores ``p_i**alpha`` per slot and samples from it: the
  float64 :class:`NumpySumTree` (the reference, and the fallback where no core is present) or the replay core's
  driver :class:`~pynq_rl.host.drivers.replay.ReplayCore` (``"emu"``, ``"rtl"``, ``"board"``, reached through
  :class:`~pynq_rl.host.overlay.RLOverlay`). Both have the same public methods (:class:`PriorityBackend`), and the
  buffer uses nothing else of the driver.

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

from typing import Any, Callable, NamedTuple, Protocol, runtime_checkable

import numpy as np
import torch

from ...overlay.models.replay import check_priorities, priority_powers

__all__ = [
    "PRIORITY_BACKENDS",
    "PriorityBackend",
    "NumpySumTree",
    "PrioritizedReplayBufferSamples",
    "PrioritizedReplayBuffer",
    "make_priority_backend",
]

PRIORITY_BACKENDS = ("numpy", "emu", "rtl", "board")
"""accepted names of a priority backend: the float64 reference sum tree, or the replay core on a backend"""


@runtime_checkable
class PriorityBackend(Protocol):
    """What the buffer needs from a priority store: the public methods of ``ReplayCore`` (and of NumpySumTree)."""

    alpha: float

    @property
    def capacity(self) -> int:
        """number of leaves (slots that can hold a priority)"""
        ...

    @property
    def total(self) -> float:
        """sum of every stored ``priority**alpha``"""
        ...

    @property
    def nonzero(self) -> int:
        """leaves with a nonzero priority"""
        ...

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Leaf ``indices[j]`` stores ``priorities[j]**alpha``; later duplicates win."""
        ...

    def sample(self, n: int, beta: float = 0.4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stratified proportional batch: ``(indices int64, probabilities float64, weights float32)``."""
        ...

    def clear(self) -> None:
        """Every priority becomes 0."""
        ...

    def state_dict(self) -> dict:
        """Every leaf priority and the sampler's random state."""
        ...

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`."""
        ...


# ---------------------------------------------------------------------------------------------------------------------
# The float64 reference sum tree
# ---------------------------------------------------------------------------------------------------------------------
class NumpySumTree:
    """A binary float64 sum tree with the replay core driver's interface: the reference priority backend.

    Leaves hold ``priority**alpha`` exactly as float64; every update recomputes the touched ancestors from their
    children (no incremental ``+= delta``), so the total never drifts. Operations are vectorized over the batch: an
    update touches ``log2(capacity)`` levels, a sample descends them once for all ``n`` draws.

    Parameters
    ----------
    capacity : int
        Number of leaves (any size >= 1; the tree is padded to a power of two with zero leaves).
    alpha : float
        Priority exponent applied by :meth:`update` (0 = uniform, 1 = fully proportional).
    seed : int or None
        Seed of the sampler's ``numpy.random.Generator`` (PCG64).

    Attributes
    ----------
    alpha : float
        As above; may be changed between updates (stored leaves keep the exponent they were written with).
    """

    def __init__(self, capacity: int, alpha: float = 0.6, seed: int | None = None) -> None:
        if not isinstance(capacity, (int, np.integer)) or int(capacity) < 1:
            raise ValueError(f"capacity must be an integer >= 1, not {capacity!r}")
        self._capacity = int(capacity)
        self._size = 1 << max(0, (self._capacity - 1).bit_length())  # leaves, padded to a power of two
        self._tree = np.zeros(2 * self._size, dtype=np.float64)  # node 1 is the root, leaves at [size, 2 size)
        self._nonzero = 0
        self.alpha = float(alpha)
        self.rng = np.random.default_rng(seed)

    # -- read-outs ----------------------------------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of leaves."""
        return self._capacity

    @property
    def total(self) -> float:
        """Sum of every stored ``priority**alpha`` (the root)."""
        return float(self._tree[1])

    @property
    def nonzero(self) -> int:
        """Leaves with a nonzero priority (the transitions that can be sampled)."""
        return self._nonzero

    def priorities(self) -> np.ndarray:
        """Every stored leaf ``priority**alpha`` (float64 copy), in index order."""
        return self._tree[self._size:self._size + self._capacity].copy()

    # -- operations ---------------------------------------------------------------------------------------------------
    def update(self, indices, priorities) -> None:
        """Set leaf ``indices[j]`` to ``priorities[j]**alpha``; later duplicates win; 0 removes a leaf from sampling.

        Raises
        ------
        TypeError
            Non-integer indices.
        ValueError
            Indices not 1-D, priorities of another shape, or a priority that is negative, NaN or infinite.
        IndexError
            An index outside ``[0, capacity)`` (as the driver).
        """
        indices = np.asarray(indices)
        if indices.ndim != 1:
            raise ValueError(f"indices must be 1-D, not shape {indices.shape}")
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"indices must be integers, not dtype {indices.dtype}")
        indices = indices.astype(np.int64)
        bad = (indices < 0) | (indices >= self._capacity)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise IndexError(f"indices[{i}] = {indices[i]} is outside the capacity [0, {self._capacity})")
        priorities = np.asarray(priorities, dtype=np.float64)
        if priorities.shape != indices.shape:
            raise ValueError(f"priorities must have the shape of indices {indices.shape}, not {priorities.shape}")
        check_priorities(priorities)  # all of them, duplicates included
        if not indices.size:
            return
        # later duplicates win: keep the last occurrence of each index
        last = indices.size - 1 - np.unique(indices[::-1], return_index=True)[1]
        indices, values = indices[last], priority_powers(priorities[last], self.alpha)
        nodes = indices + self._size
        self._nonzero += int(np.count_nonzero(values) - np.count_nonzero(self._tree[nodes]))
        self._tree[nodes] = values
        while nodes[0] > 1:
            nodes = np.unique(nodes >> 1)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]

    def sample(self, n: int, beta: float = 0.4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n`` leaves, stratified: draw ``j`` is uniform in ``[j, j + 1) * total / n``, then located by descent.

        Returns
        -------
        indices : np.ndarray of int64
        probabilities : np.ndarray of float64
            ``P(i)`` of each sampled leaf.
        weights : np.ndarray of float32
            ``(N * P(i))**-beta`` normalized by the batch maximum (``N`` = nonzero leaves).

        Raises
        ------
        ValueError
            ``n < 1``, ``beta`` outside [0, 1], or every priority is 0.
        """
        if not isinstance(n, (int, np.integer)) or int(n) < 1:
            raise ValueError(f"n must be an integer >= 1, not {n!r}")
        if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= float(beta) <= 1.0):
            raise ValueError(f"beta must be a number in [0, 1], not {beta!r}")
        total = self._tree[1]
        if total <= 0.0:
            raise ValueError("cannot sample: every priority is 0 (call update() first)")
        n = int(n)
        targets = (np.arange(n) + self.rng.random(n)) * (total / n)
        targets = np.minimum(targets, np.nextafter(total, 0.0))
        node = np.ones(n, dtype=np.int64)
        while node[0] < self._size:
            left = self._tree[2 * node]
            right = self._tree[2 * node + 1]
            # the first child whose running sum exceeds the target; float rounding never leads into an empty subtree
            go_right = ((targets >= left) & (right > 0.0)) | (left <= 0.0)
            targets = np.where(go_right, targets - left, np.minimum(targets, left))
            node = 2 * node + go_right
        indices = node - self._size
        probabilities = self._tree[node] / total
        weights = np.power(self._nonzero * probabilities, -float(beta))
        return indices, probabilities, (weights / weights.max()).astype(np.float32)

    def clear(self) -> None:
        """Set every priority to 0."""
        self._tree[:] = 0.0
        self._nonzero = 0

    def state_dict(self) -> dict:
        """Capacity, alpha, the leaf ``priority**alpha`` values and the generator state."""
        return {"kind": "numpy", "capacity": self._capacity, "alpha": self.alpha, "leaves": self.priorities(),
                "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` (checked before anything changes).

        Raises
        ------
        ValueError
            The state is not a NumpySumTree state of this capacity, or holds negative or non-finite leaves.
        """
        if state.get("kind") != "numpy" or int(state.get("capacity", -1)) != self._capacity:
            kind = state.get("kind", "replay core" if "codes" in state else None)
            raise ValueError(f"state_dict is a {kind!r} priority state of capacity {state.get('capacity')!r}, "
                             f"this is a 'numpy' sum tree of capacity {self._capacity}")
        leaves = np.asarray(state["leaves"], dtype=np.float64)
        if leaves.shape != (self._capacity,) or not np.all(np.isfinite(leaves)) or np.any(leaves < 0):
            raise ValueError(f"state_dict leaves must be {self._capacity} finite values >= 0")
        self._tree[:] = 0.0
        self._tree[self._size:self._size + self._capacity] = leaves
        for level_start in (1 << j for j in reversed(range(self._size.bit_length() - 1))):
            nodes = np.arange(level_start, 2 * level_start)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
        self._nonzero = int(np.count_nonzero(leaves))
        self.alpha = float(state["alpha"])
        self.rng.bit_generator.state = state["rng"]


def make_priority_backend(name: str, capacity: int, board: Any = None) -> PriorityBackend:
    """The priority store named ``name``: a :class:`NumpySumTree` of ``capacity`` leaves, or an overlay's replay core.

    Parameters
    ----------
    name : {"numpy", "emu", "rtl", "board"}
        ``numpy``: the float64 reference; otherwise ``RLOverlay(backend=name, board=board).replay``.
    capacity : int
        Leaves needed (the buffer's capacity).
    board : str or BoardSpec, optional
        The overlay's board (core backends only).

    Raises
    ------
    ValueError
        Unknown name.
    """
    if name == "numpy":
        return NumpySumTree(capacity)
    if name not in PRIORITY_BACKENDS:
        raise ValueError(f"priorities must be one of {PRIORITY_BACKENDS} or a priority backend object, not {name!r}")
    from ..overlay import RLOverlay  # imported lazily: pynq is needed only for the core

    return RLOverlay(backend=name, board=board).replay


# ---------------------------------------------------------------------------------------------------------------------
# The buffer
# ---------------------------------------------------------------------------------------------------------------------
class PrioritizedReplayBufferSamples(NamedTuple):
    """SB3's ``ReplayBufferSamples`` fields plus PER's ``weights`` and ``indices`` (torch tensors, batch first)."""

    observations: torch.Tensor
    """obs, shape (batch, *obs_shape), the buffer's obs dtype"""
    actions: torch.Tensor
    """a, shape (batch, *action_shape)"""
    next_observations: torch.Tensor
    """the real next observation (the episode's last one where it ended), shape (batch, *obs_shape)"""
    dones: torch.Tensor
    """1.0 where next_observations is terminal (terminated, not truncated), float32, shape (batch,)"""
    rewards: torch.Tensor
    """r, float32, shape (batch,)"""
    weights: torch.Tensor
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
        ``"numpy"`` (:class:`NumpySumTree`), ``"emu"``, ``"rtl"``, ``"board"`` (the replay core of
        ``RLOverlay(backend=..., board=board)``), or an existing backend object (e.g. ``overlay.replay``). The buffer
        takes it over: it is cleared, its ``alpha`` set and, if ``seed`` is given, its sampler reseeded.
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
        priorities: str | PriorityBackend = "numpy",
        alpha: float = 0.6,
        priority_eps: float = 1e-6,
        seed: int | None = None,
        allocator: Allocator = np.zeros,
        board: Any = None,
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
        if isinstance(priorities, str):
            if priorities not in PRIORITY_BACKENDS:
                raise ValueError(f"priorities must be one of {PRIORITY_BACKENDS} or a priority backend object, "
                                 f"not {priorities!r}")
            backend = make_priority_backend(priorities, self.capacity, board)
            self.backend_name = priorities
        else:
            backend = priorities
            self.backend_name = type(backend).__name__
        if self.capacity > backend.capacity:
            raise ValueError(f"buffer capacity {self.capacity} exceeds the priority backend's capacity "
                             f"{backend.capacity} ({self.backend_name}); use a buffer of at most {backend.capacity} "
                             f"transitions or a larger replay core build")
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

    def add(self, obs: np.ndarray, next_obs: np.ndarray, action: np.ndarray, reward: np.ndarray,
            done: np.ndarray) -> np.ndarray:
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
        expected = {"obs": (n,) + self.obs_shape, "next_obs": (n,) + self.obs_shape,
                    "action": (n,) + self.action_shape, "reward": (n,), "done": (n,)}
        found = {"obs": obs.shape, "next_obs": next_obs.shape, "action": action.shape, "reward": reward.shape,
                 "done": done.shape}
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
            raise RuntimeError(f"the priority backend ({self.backend_name}) sampled slots outside the "
                               f"{self.size()} stored transitions: {indices[(indices < 0) | (indices >= self.size())][:8]}")
        return PrioritizedReplayBufferSamples(
            observations=torch.as_tensor(self.observations[indices]),
            actions=torch.as_tensor(self.actions[indices]),
            next_observations=torch.as_tensor(self.next_observations[indices]),
            dones=torch.as_tensor(self.dones[indices]),
            rewards=torch.as_tensor(self.rewards[indices]),
            weights=torch.as_tensor(np.asarray(weights, dtype=np.float32)),
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
        found = {"capacity": int(state["capacity"]), "obs_shape": tuple(int(d) for d in state["obs_shape"]),
                 "action_shape": tuple(int(d) for d in state["action_shape"])}
        if found != expected:
            raise ValueError(f"replay buffer state is for {found}, this buffer is {expected}")
        pos, full = int(state["pos"]), bool(state["full"])
        n = self.capacity if full else pos
        if not 0 <= pos < self.capacity:
            raise ValueError(f"replay buffer state has pos {pos} outside [0, {self.capacity})")
        arrays = {name: np.asarray(state[name]) for name in
                  ("observations", "next_observations", "actions", "rewards", "dones")}
        for name, array in arrays.items():
            if array.shape != (n,) + getattr(self, name).shape[1:]:
                raise ValueError(f"replay buffer state {name} has shape {array.shape}, expected "
                                 f"{(n,) + getattr(self, name).shape[1:]}")
        self.priorities.load_state_dict(state["priorities"])
        for name, array in arrays.items():
            getattr(self, name)[:n] = array
        self.pos, self.full = pos, full
        self.max_priority = float(state["max_priority"])
        self.priority_eps = float(state["priority_eps"])
