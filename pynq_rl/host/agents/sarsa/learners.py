"""The tile-coded Sarsa learners behind one interface, and the one place that picks between them.

:class:`FloatSarsa` is the host reference (``backend="host"``): the ParSa core's algorithm in float64 numpy, with the
core's semantics (one previous ``(tiles, action, q)`` per key, TERMINAL forgets the key, the ``q`` in delta is the one
stored when the action was chosen, epsilon decays after every chosen action) and its own random stream, so a run on the
core and one on the reference can be compared episode for episode (:mod:`.sarsa`, :mod:`.netdemo`).
:func:`make_learner` returns it or the configured ParSa core's driver
(:class:`~pynq_rl.host.drivers.parsa.ParsaCore`); both satisfy :class:`SarsaLearner`.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ....overlay.models.parsa import TilingLayout
from ...drivers.tiling_config import load_tiling, tiling_to_dict
from ..common.checks import check_backend

__all__ = ["SarsaLearner", "CoreCounters", "FloatSarsa", "make_learner"]


class SarsaLearner(Protocol):
    """What the loop needs from a learner: the driver :class:`~pynq_rl.host.drivers.parsa.ParsaCore` or
    :class:`FloatSarsa`."""

    epsilon: float
    online: bool

    def act(self, state, reward: float | None = None, key: int = 0, terminal: bool = False) -> int: ...

    def act_batch(self, states, rewards=None, keys=None, terminals=None, return_values: bool = False): ...

    def dump_policy(self) -> np.ndarray: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class CoreCounters(Protocol):
    """The cycle counters a learner on a core backend has (the driver :class:`~pynq_rl.host.drivers.parsa.ParsaCore`;
    :class:`FloatSarsa` has none)."""

    @property
    def cycles_act(self) -> int: ...

    @property
    def cycles_update(self) -> int: ...


class FloatSarsa:
    """Float64 tile-coded Sarsa with the ParSa core's semantics (keys, TERMINAL, stored q) and its own numpy RNG.

    The tile coding is the layout's (same sets, copies, tiles and tile order as the core's ``dump_policy``): the
    position ``u_d = clip((s_d - low_d) / (high_d - low_d), 0, 1 - 2**-16)``, copy ``c`` of a set with ``T``
    tilings and ``n`` tiles per dim hits coordinate ``floor(u_d * n + c / T)`` per dim, row-major over the set's
    dims with ``n + 1`` coordinates per dim (``n`` when ``T == 1``). Equal to
    :func:`~pynq_rl.overlay.models.parsa.float_tile_indices`, vectorized over states.

    Parameters
    ----------
    tiling : TilingLayout, dict, JSON string or path
        The tiling sets.
    n_actions : int
        Actions.
    bounds : (lows, highs)
        Per-dimension state bounds (states outside are clamped).
    alpha, gamma, epsilon, epsilon_decay : float
        Per-tiling step size, discount, exploration probability and its per-action decay factor.
    online : bool
        Apply Sarsa updates.
    seed : int
        Seed of the learner's ``numpy.random.Generator`` (exploration draws).
    keys : int
        Independent keys (agents or flows), each with its own previous ``(tiles, action, q)``.
    """

    def __init__(
        self,
        tiling,
        n_actions: int,
        bounds,
        alpha: float = 0.1,
        gamma: float = 0.99,
        epsilon: float = 0.1,
        epsilon_decay: float = 1.0,
        online: bool = True,
        seed: int = 0,
        keys: int = 256,
    ) -> None:
        self.layout: TilingLayout = load_tiling(tiling)
        if not isinstance(n_actions, (int, np.integer)) or n_actions < 1:
            raise ValueError(f"n_actions must be a positive integer, not {n_actions!r}")
        for name, value in (("alpha", alpha), ("gamma", gamma), ("epsilon", epsilon), ("epsilon_decay", epsilon_decay)):
            if not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {value!r}")
        self.lows, self.highs = (np.asarray(b, dtype=np.float64).ravel() for b in bounds)
        n_dims = self.layout.n_dims
        if self.lows.shape != (n_dims,) or self.highs.shape != (n_dims,):
            raise ValueError(f"bounds must be two sequences of {n_dims} values")
        if not (np.all(np.isfinite(self.lows)) and np.all(np.isfinite(self.highs)) and np.all(self.highs > self.lows)):
            raise ValueError("bounds must be finite with high > low in every dimension")
        self.n_actions = int(n_actions)
        self.alpha, self.gamma = float(alpha), float(gamma)
        self.epsilon, self.epsilon_decay = float(epsilon), float(epsilon_decay)
        self.online = bool(online)
        self.rng = np.random.default_rng(seed)
        self.weights = np.zeros((self.layout.n_tiles, self.n_actions))
        # per tiling: its dims (padded), coordinates per dim, tiles, shift c/T, global offset
        sets = [(s, c) for s in self.layout.sets for c in range(s.tilings)]
        self._dims = np.zeros((len(sets), 4), dtype=np.int64)
        self._ndims = np.array([len(s.dims) for s, _ in sets], dtype=np.int64)
        for i, (s, _) in enumerate(sets):
            self._dims[i, : len(s.dims)] = s.dims
        self._tiles = np.array([s.tiles for s, _ in sets], dtype=np.float64)
        self._coords = np.array([s.coordinates for s, _ in sets], dtype=np.int64)
        self._shift = np.array([c / s.tilings for s, c in sets])
        sizes = np.array([s.tiles_per_tiling for s, _ in sets], dtype=np.int64)
        self._offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.n_keys = int(keys)
        self._forget_keys()

    def _forget_keys(self) -> None:
        self.key_valid = np.zeros(self.n_keys, dtype=bool)
        self.key_action = np.zeros(self.n_keys, dtype=np.int64)
        self.key_q = np.zeros(self.n_keys)
        self.key_tiles = np.zeros((self.n_keys, len(self._offset)), dtype=np.int64)

    def tile_indices(self, states) -> np.ndarray:
        """Global tile index hit by every tiling, ``(n, n_tilings)`` for states ``(n, n_dims)``."""
        states = np.asarray(states, dtype=np.float64).reshape(-1, self.layout.n_dims)
        u = np.clip((states - self.lows) / (self.highs - self.lows), 0.0, 1.0 - 2.0**-16)
        coords = np.floor(u[:, self._dims] * self._tiles[None, :, None] + self._shift[None, :, None])
        index = np.zeros(coords.shape[:2], dtype=np.int64)
        for j in range(4):
            use = self._ndims > j
            index = np.where(use, index * self._coords + coords[:, :, j].astype(np.int64), index)
        return self._offset + index

    def act(self, state, reward: float | None = None, key: int = 0, terminal: bool = False) -> int:
        """One step for ``key`` (see :meth:`act_batch`); -1 when ``terminal``."""
        actions, _ = self.act_batch(
            np.asarray(state, dtype=np.float64)[None, :], None if reward is None else [reward], [key], [terminal]
        )
        return int(actions[0])

    def act_batch(self, states, rewards=None, keys=None, terminals=None, return_values: bool = False):
        """Records processed in order, as the core does: choose ``a'`` for each state, then update the key's
        previous ``(s, a)`` with its reward (NaN: none, no update) and forget it on ``terminal``.

        Returns ``(actions, values)``: actions (-1 where terminal) and, with ``return_values``, ``q(s, .)`` before
        the record's update.
        """
        states = np.asarray(states, dtype=np.float64)
        if states.ndim != 2 or states.shape[1] != self.layout.n_dims or not np.all(np.isfinite(states)):
            raise ValueError(f"states must be finite with shape (n, {self.layout.n_dims}), not {states.shape}")
        n = states.shape[0]
        keys = np.zeros(n, dtype=np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
        if keys.shape != (n,) or np.any((keys < 0) | (keys >= self.n_keys)):
            raise ValueError(f"keys must be {n} integers in [0, {self.n_keys})")
        rewards = np.full(n, np.nan) if rewards is None else np.asarray(rewards, dtype=np.float64)
        terminals = np.zeros(n, dtype=bool) if terminals is None else np.asarray(terminals, dtype=bool)
        if rewards.shape != (n,) or terminals.shape != (n,):
            raise ValueError(f"rewards and terminals must have shape ({n},)")
        tiles = self.tile_indices(states)
        actions = np.full(n, -1, dtype=np.int64)
        values = np.zeros((n, self.n_actions)) if return_values else None
        w = self.weights
        for r in range(n):
            key = keys[r]
            q = w[tiles[r]].sum(axis=0)
            if values is not None:
                values[r] = q
            chosen_q = 0.0
            if not terminals[r]:
                if self.rng.random() < self.epsilon:
                    actions[r] = self.rng.integers(self.n_actions)
                else:
                    actions[r] = int(np.argmax(q))  # lowest index among ties, as the core
                chosen_q = q[actions[r]]
                self.epsilon *= self.epsilon_decay
            if self.online and not math.isnan(rewards[r]) and self.key_valid[key]:
                target = rewards[r] if terminals[r] else rewards[r] + self.gamma * chosen_q
                w[self.key_tiles[key], self.key_action[key]] += self.alpha * (target - self.key_q[key])
            if terminals[r]:
                self.key_valid[key] = False
            else:
                self.key_valid[key] = True
                self.key_action[key], self.key_q[key] = actions[r], chosen_q
                self.key_tiles[key] = tiles[r]
        return actions, values

    def dump_policy(self) -> np.ndarray:
        """The weights ``(n_tiles, n_actions)`` in the layout's tile order (as ``ParsaCore.dump_policy``)."""
        return self.weights.copy()

    def load_policy(self, weights) -> None:
        """Load ``(n_tiles, n_actions)`` weights in the layout's tile order."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != self.weights.shape:
            raise ValueError(f"weights must have shape {self.weights.shape}, not {weights.shape}")
        self.weights[:] = weights

    def state_dict(self) -> dict:
        """Configuration, weights, epsilon and the random generator's state (keys' previous steps not saved)."""
        return {
            "tiling": tiling_to_dict(self.layout),
            "n_actions": self.n_actions,
            "bounds": (tuple(self.lows), tuple(self.highs)),
            "alpha": self.alpha,
            "gamma": self.gamma,
            "epsilon": self.epsilon,
            "epsilon_decay": self.epsilon_decay,
            "online": self.online,
            "weights": self.weights.copy(),
            "rng": self.rng.bit_generator.state,
            "keys": self.n_keys,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` (the layout and action count must match)."""
        if (
            tiling_to_dict(load_tiling(state["tiling"])) != tiling_to_dict(self.layout)
            or int(state["n_actions"]) != self.n_actions
        ):
            raise ValueError("state_dict is for another tiling layout or action count")
        FloatSarsa.__init__(
            self,
            state["tiling"],
            state["n_actions"],
            state["bounds"],
            state["alpha"],
            state["gamma"],
            state["epsilon"],
            state["epsilon_decay"],
            state["online"],
            0,
            state.get("keys", self.n_keys),
        )
        self.rng.bit_generator.state = state["rng"]
        self.load_policy(state["weights"])


def make_learner(
    backend: str,
    tiling,
    n_actions: int,
    bounds,
    alpha: float,
    gamma: float,
    epsilon: float,
    epsilon_decay: float,
    frac_bits: int,
    seed: int,
    board: str | None = None,
    overlay=None,
    timeout_s: float | None = None,
) -> SarsaLearner:
    """The learner: :class:`FloatSarsa` for ``backend="host"``, else the configured ParSa core of an overlay on
    ``backend`` (``"emu"``, ``"rtl"``, ``"verilator"``, ``"board"``).

    ``alpha`` is the per-tiling step size. ``overlay``: an existing RLOverlay to use instead of loading one.
    ``timeout_s``: the core driver's deadline per operation (None: the driver's default). This is the only place
    that branches on hardware.

    Raises
    ------
    ValueError
        ``backend`` is not one of :data:`~.run.BACKENDS`, or the core refuses the configuration.
    """
    check_backend(backend)
    if backend == "host":
        return FloatSarsa(tiling, n_actions, bounds, alpha, gamma, epsilon, epsilon_decay, seed=seed)
    if overlay is None:
        from ...overlay import load_core  # imported lazily: pynq is needed only for the core

        core = load_core("parsa", backend, board, timeout_s)
    else:
        core = overlay.parsa
        if timeout_s is not None:
            core.timeout_s = timeout_s
    core.configure(
        tiling,
        n_actions,
        bounds,
        alpha=alpha,
        gamma=gamma,
        epsilon=epsilon,
        epsilon_decay=epsilon_decay,
        frac_bits=frac_bits,
        seed=seed,
    )
    return core
