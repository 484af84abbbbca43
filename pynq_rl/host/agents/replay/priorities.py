r"""Priority stores for prioritized replay: the float64 reference sum tree and the replay core behind one interface.

A *priority backend* stores ``p_i**alpha`` per slot and samples slots stratified-proportionally from it. Two kinds have
the same public methods (:class:`PriorityBackend`): the float64 :class:`NumpySumTree` (the reference, and the fallback
where no core is present) and the replay core's driver :class:`~pynq_rl.host.drivers.replay.ReplayCore` (``"emu"``,
``"rtl"``, ``"verilator"``, ``"board"``, reached through :class:`~pynq_rl.host.overlay.RLOverlay`). The DQN agent's
:class:`~pynq_rl.host.agents.replay.buffer.PrioritizedReplayBuffer` and the Ape-X replay server both use this module;
it needs only numpy (no torch), so the server runs on a PYNQ-Z2's 32-bit ARM.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ....overlay.models.replay import check_priorities, priority_powers

__all__ = ["PRIORITY_BACKENDS", "PriorityBackend", "NumpySumTree", "make_priority_backend"]

PRIORITY_BACKENDS = ("host", "emu", "rtl", "verilator", "board")
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
        return self._tree[self._size : self._size + self._capacity].copy()

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
        return {
            "kind": "numpy",
            "capacity": self._capacity,
            "alpha": self.alpha,
            "leaves": self.priorities(),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` (checked before anything changes).

        Raises
        ------
        ValueError
            The state is not a NumpySumTree state of this capacity, or holds negative or non-finite leaves.
        """
        if state.get("kind") != "numpy" or int(state.get("capacity", -1)) != self._capacity:
            kind = state.get("kind", "replay core" if "codes" in state else None)
            raise ValueError(
                f"state_dict is a {kind!r} priority state of capacity {state.get('capacity')!r}, "
                f"this is a 'numpy' sum tree of capacity {self._capacity}"
            )
        leaves = np.asarray(state["leaves"], dtype=np.float64)
        if leaves.shape != (self._capacity,) or not np.all(np.isfinite(leaves)) or np.any(leaves < 0):
            raise ValueError(f"state_dict leaves must be {self._capacity} finite values >= 0")
        self._tree[:] = 0.0
        self._tree[self._size : self._size + self._capacity] = leaves
        for level_start in (1 << j for j in reversed(range(self._size.bit_length() - 1))):
            nodes = np.arange(level_start, 2 * level_start)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
        self._nonzero = int(np.count_nonzero(leaves))
        self.alpha = float(state["alpha"])
        self.rng.bit_generator.state = state["rng"]


def make_priority_backend(
    name: str, capacity: int, board: Any = None, seed: int | None = None, timeout_s: float | None = None
) -> PriorityBackend:
    """The priority store named ``name``: a :class:`NumpySumTree` of ``capacity`` leaves, or an overlay's replay core.

    Only the core path imports pynq (``emu``/``rtl``/``verilator``/``board``); nothing here needs torch.

    Parameters
    ----------
    name : {"host", "emu", "rtl", "verilator", "board"}
        ``numpy``: the float64 reference; otherwise ``RLOverlay(backend=name, board=board).replay``.
    capacity : int
        Leaves needed (the buffer's capacity).
    board : str or BoardSpec, optional
        The overlay's board (core backends only).
    seed : int, optional
        Seed of the sampler (the numpy Generator, or the core's PRNG seed register, taken mod 2**32).
    timeout_s : float, optional
        The core driver's deadline per operation in seconds (core backends only; None: the driver's default).

    Raises
    ------
    ValueError
        Unknown name, or a capacity above the core's.
    """
    if name not in PRIORITY_BACKENDS:
        raise ValueError(f"priorities must be one of {PRIORITY_BACKENDS} or a priority backend object, not {name!r}")
    if name == "host":
        return NumpySumTree(capacity, seed=seed)
    from ...overlay import load_core  # imported lazily: pynq is needed only for the core

    core = load_core("replay", name, board, timeout_s)
    if capacity > core.capacity:
        raise ValueError(
            f"buffer capacity {capacity} exceeds the priority backend's capacity {core.capacity} "
            f"({name}); use a buffer of at most {core.capacity} transitions or a larger replay core build"
        )
    if seed is not None:
        core.seed = int(seed) & 0xFFFF_FFFF
    return core
