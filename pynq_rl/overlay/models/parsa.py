r"""Bit-exact model of the ParSa core (OPaL's parallel Sarsa): tile coding, action choice and online Sarsa updates.

A linear policy over tile-coded features (Sutton & Barto §9.5; OPaL, Simpson 2021): the state is mapped, per
tiling, to one tile; ``q(s, a)`` is the sum of the hit tiles' values for ``a``. Tilings come in *sets*: a set covers
a list of state dimensions with ``tilings`` copies shifted by ``copy / tilings`` of a tile, ``tiles`` tiles per
dimension (plus one when shifted copies exist), densely indexed (no hashing). A set over no dimensions is the
always-hit bias tile.

The hardware splits the tilings over WORKERS tile units (map) and sums their preference vectors (reduce); which
worker owns which tiling is decided on the host by :func:`schedule` (heaviest first, as OPaL's scheduler), so the
core needs no divider and no allocator. The arithmetic (every formula is in the
:class:`~pynq_rl.overlay.spec.ParsaSpec` docstring) is defined here once; the MyHDL core and the emulated core must
match it bit for bit.

Where OPaL's firmware and thesis disagree, this follows the thesis equations: Sarsa's
``delta = r + gamma q(s', a') - q(s, a)`` with gamma (the firmware's cooperative path used alpha), and no division
at run time (its ``quant_div`` divided by the wrong operand). Step sizes are UQ1.16 coefficients rather than values
in the policy's own Q format, so alpha keeps 16 bits of precision at any FRAC_BITS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..spec import PARSA_NO_ACTION, PARSA_REGISTERS, PRNG_ZERO_SEED, ParsaMode, ParsaSpec
from .parsa_kernel import HAVE_NUMBA, act_loop, compiled_act_loop
from .parsa_tiling import SCALE_FRAC, Descriptor, TilingLayout, TilingSet, dimension_codes, float_tile_indices, schedule

__all__ = [
    "TilingSet",
    "TilingLayout",
    "Descriptor",
    "schedule",
    "dimension_codes",
    "ParsaModel",
    "ActResult",
    "pack_descriptors",
    "unpack_descriptors",
    "pack_dimensions",
    "unpack_dimensions",
    "pack_states",
    "unpack_states",
    "pack_actions",
    "unpack_actions",
    "pack_pairs",
    "unpack_pairs",
    "pack_policy",
    "unpack_policy",
    "float_tile_indices",
    "HAVE_NUMBA",
    "SCALE_FRAC",
    "mailbox_window",
]

#: the action record header bits MBOX_ACTION keeps: its ACTION and EXPLORED fields sit where the record has them
_MBOX_KEPT = sum(
    ((1 << f["bit_width"]) - 1) << f["bit_offset"]
    for name, f in PARSA_REGISTERS["MBOX_ACTION"]["fields"].items()
    if name in ("ACTION", "EXPLORED")
)
_U16 = (1 << 16) - 1
_U32 = (1 << 32) - 1


# ---------------------------------------------------------------------------------------------------------------
# Stream records
# ---------------------------------------------------------------------------------------------------------------


def pack_pairs(values: np.ndarray, count: int) -> np.ndarray:
    """``(n, count)`` int32 values packed two per uint64 word: ``(n, ceil(count/2))``."""
    n = values.shape[0]
    padded = np.zeros((n, 2 * ((count + 1) // 2)), dtype=np.int64)
    padded[:, :count] = values
    low = padded[:, 0::2].astype(np.uint64) & np.uint64(_U32)
    high = padded[:, 1::2].astype(np.uint64) & np.uint64(_U32)
    return low | (high << np.uint64(32))


def unpack_pairs(words: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` int32 values of each row of words packed by :func:`pack_pairs`."""
    words = np.asarray(words, dtype=np.uint64)
    both = np.empty(words.shape[:-1] + (2 * words.shape[-1],), dtype=np.int64)
    both[..., 0::2] = (words & np.uint64(_U32)).astype(np.uint32).view(np.int32)
    both[..., 1::2] = (words >> np.uint64(32)).astype(np.uint32).view(np.int32)
    return both[..., :count]


def pack_dimensions(offsets: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Dimension records: OFFSET in bits [31:0], SCALE in [63:32]."""
    return (np.asarray(offsets, dtype=np.int64).astype(np.uint64) & np.uint64(_U32)) | (
        np.asarray(scales, dtype=np.uint64) << np.uint64(32)
    )


def unpack_dimensions(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets int64, scales int64)`` of dimension records."""
    words = np.asarray(words, dtype=np.uint64)
    offsets = (words & np.uint64(_U32)).astype(np.uint32).view(np.int32).astype(np.int64)
    return offsets, (words >> np.uint64(32)).astype(np.int64)


def pack_policy(banks: np.ndarray) -> np.ndarray:
    """The LOAD/DUMP_POLICY stream of ``(workers, tiles_per_worker, max_actions)`` values: worker-major rows."""
    banks = np.asarray(banks, dtype=np.int64)
    return pack_pairs(banks.reshape(-1, banks.shape[-1]), banks.shape[-1]).ravel()


def unpack_policy(words: np.ndarray, spec: ParsaSpec) -> np.ndarray:
    """``(workers, tiles_per_worker, max_actions)`` values of a policy stream."""
    per_row = (spec.max_actions + 1) // 2
    values = unpack_pairs(np.asarray(words, dtype=np.uint64).reshape(-1, per_row), spec.max_actions)
    return values.reshape(spec.workers, spec.tiles_per_worker, spec.max_actions)


def pack_descriptors(descriptors: list[Descriptor]) -> np.ndarray:
    """Two words per descriptor (see ParsaSpec)."""
    words = np.zeros(2 * len(descriptors), dtype=np.uint64)
    for i, d in enumerate(descriptors):
        words[2 * i] = d.worker | len(d.dims) << 8 | d.tiles << 16 | d.n_t << 24 | d.base << 32
        words[2 * i + 1] = sum(dim << (8 * j) for j, dim in enumerate(d.dims)) | d.shift << 32
    return words


def unpack_descriptors(words: np.ndarray) -> list[Descriptor]:
    """Descriptors from their two-word records (dims beyond the count are ignored)."""
    values = [int(w) for w in np.asarray(words, dtype=np.uint64)]
    out = []
    for w0, w1 in zip(values[0::2], values[1::2]):
        ndims = (w0 >> 8) & 0xFF
        dims = tuple((w1 >> (8 * j)) & 0xFF for j in range(min(ndims, 4)))
        dims += (0,) * max(ndims - 4, 0)  # a count beyond 4 keeps its length, so the core's check refuses it
        out.append(Descriptor(w0 & 0xFF, dims, (w0 >> 16) & 0xFF, (w0 >> 24) & 0xFF, (w1 >> 32) & _U16, w0 >> 32))
    return out


def pack_states(keys, flags, rewards, states, n_dims: int) -> np.ndarray:
    """State records, ``(n, 1 + ceil(n_dims/2))`` words: header (key, flags, reward) then state word pairs."""
    keys, flags = np.asarray(keys, dtype=np.uint64), np.asarray(flags, dtype=np.uint64)
    rewards = np.asarray(rewards, dtype=np.int64).astype(np.uint64) & np.uint64(_U32)
    states = np.asarray(states, dtype=np.int64).reshape(len(keys), n_dims)
    header = (keys & np.uint64(_U16)) | ((flags & np.uint64(0xFF)) << np.uint64(16)) | (rewards << np.uint64(32))
    return np.concatenate([header[:, None], pack_pairs(states, n_dims)], axis=1)


def unpack_states(words: np.ndarray, n_dims: int):
    """``(keys, flags, rewards, states)`` of state records (``words`` shaped ``(n, record words)``)."""
    words = np.asarray(words, dtype=np.uint64)
    header = words[:, 0]
    keys = (header & np.uint64(_U16)).astype(np.int64)
    flags = ((header >> np.uint64(16)) & np.uint64(0xFF)).astype(np.int64)
    rewards = (header >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
    return keys, flags, rewards, unpack_pairs(words[:, 1:], n_dims)


def pack_actions(actions, explored, q_chosen, q_values=None, n_actions: int = 0) -> np.ndarray:
    """Action records: header (action, explored, q[a]) then, with ``q_values``, the q value pairs."""
    header = (
        (np.asarray(actions, dtype=np.uint64) & np.uint64(_U16))
        | (np.asarray(explored, dtype=np.uint64) << np.uint64(16))
        | ((np.asarray(q_chosen, dtype=np.int64).astype(np.uint64) & np.uint64(_U32)) << np.uint64(32))
    )
    if q_values is None:
        return header[:, None]
    return np.concatenate([header[:, None], pack_pairs(np.asarray(q_values, dtype=np.int64), n_actions)], axis=1)


def unpack_actions(words: np.ndarray, n_actions: int = 0):
    """``(actions, explored, q_chosen, q_values or None)`` of action records shaped ``(n, record words)``."""
    words = np.asarray(words, dtype=np.uint64)
    header = words[:, 0]
    actions = (header & np.uint64(_U16)).astype(np.int64)
    explored = ((header >> np.uint64(16)) & np.uint64(1)).astype(bool)
    q_chosen = (header >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
    q_values = unpack_pairs(words[:, 1:], n_actions) if words.shape[1] > 1 else None
    return actions, explored, q_chosen, q_values


# ---------------------------------------------------------------------------------------------------------------
# The core's state and operations
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ActResult:
    """Outputs and flags of one ACT batch."""

    actions: np.ndarray
    """chosen action per record (PARSA_NO_ACTION for TERMINAL or rejected records)"""
    explored: np.ndarray
    """True where the action was the epsilon-greedy random choice"""
    q_values: np.ndarray
    """(n, n_actions) q(s, .) before the update (zeros for rejected records)"""
    q_chosen: np.ndarray
    """q(s, a) of the chosen action (0 when none)"""
    saturated: bool = False
    rejected: int = 0
    """records with a key >= KEYS"""
    cycles_act: int = 0
    cycles_update: int = 0
    """CYCLES_ACT / CYCLES_UPDATE of the last record"""
    cycles: int = 0
    """CYCLES of the batch"""
    updates: int = field(default=0)
    """Sarsa updates applied"""


class ParsaModel:
    """The ParSa core's state: registers, tiling configuration, policy banks, per-key memory, PRNG.

    Parameters
    ----------
    spec : ParsaSpec
        Build parameters.
    use_numba : bool or None
        Use the compiled act loop (default: when numba is installed); False forces the numpy path.
    """

    def __init__(self, spec: ParsaSpec, use_numba: bool | None = None) -> None:
        self.spec = spec
        self.use_numba = HAVE_NUMBA if use_numba is None else bool(use_numba and HAVE_NUMBA)
        self.n_dims = 1
        self.n_actions = 1
        self.frac_bits = 0
        one = 1 << spec.coef.frac
        self.alpha, self.gamma, self.epsilon, self.epsilon_decay = 0, 0, 0, one
        self.online, self.emit_values = True, False
        self.prng_state = PRNG_ZERO_SEED
        self.banks = np.zeros((spec.workers, spec.tiles_per_worker, spec.max_actions), dtype=np.int64)
        self.offsets = np.zeros(spec.max_dims, dtype=np.int64)
        self.scales = np.zeros(spec.max_dims, dtype=np.int64)
        self._set_descriptors([])
        self.configured_dims = 0
        self.clear()

    # -- configuration ------------------------------------------------------------------------------------------
    def _set_descriptors(self, descriptors: list[Descriptor]) -> None:
        n = len(descriptors)
        self.descriptors = list(descriptors)
        self.d_worker = np.array([d.worker for d in descriptors], dtype=np.int64)
        self.d_ndims = np.array([len(d.dims) for d in descriptors], dtype=np.int64)
        self.d_dims = np.zeros((n, 4), dtype=np.int64)
        for i, d in enumerate(descriptors):
            self.d_dims[i, : len(d.dims)] = d.dims
        self.d_tiles = np.array([d.tiles for d in descriptors], dtype=np.int64)
        self.d_nt = np.array([d.n_t for d in descriptors], dtype=np.int64)
        self.d_shift = np.array([d.shift for d in descriptors], dtype=np.int64)
        self.d_base = np.array([d.base for d in descriptors], dtype=np.int64)
        # tilings per worker, counted in int64 (np.bincount wants np.intp, which on the PYNQ-Z2's 32-bit ARM refuses
        # int64 input: configure() raised TypeError there)
        per_worker = np.zeros(max(self.spec.workers, 1), dtype=np.int64)
        np.add.at(per_worker, self.d_worker, 1)
        self.busiest = int(per_worker.max())

    def configure(self, offsets: np.ndarray, scales: np.ndarray, descriptors: list[Descriptor]) -> bool:
        """CONFIG: load dimension records and tiling descriptors; False (ERR_CONFIG, nothing changed) if invalid.

        The core checks what would otherwise corrupt memory: counts (N_DIMS, N_TILINGS against the build),
        worker indices, tilings per worker, dims per tiling and dim indices, ``n_t >= tiles`` and ``n_t <=
        tiles + 1``, and each tiling's rows inside its worker's bank.
        """
        spec = self.spec
        if not 1 <= self.n_dims <= spec.max_dims or len(offsets) != self.n_dims or len(scales) != self.n_dims:
            return False
        if not 1 <= len(descriptors) <= spec.workers * spec.max_tilings:
            return False
        counts = [0] * spec.workers
        for d in descriptors:
            if not (
                0 <= d.worker < spec.workers
                and len(d.dims) <= spec.max_set_dims
                and all(0 <= k < self.n_dims for k in d.dims)
                and 1 <= d.tiles
                and d.tiles <= d.n_t <= d.tiles + 1
                and 0 <= d.shift <= _U16
                and d.base + d.rows <= spec.tiles_per_worker
            ):
                return False
            counts[d.worker] += 1
            if counts[d.worker] > spec.max_tilings:
                return False
        self.offsets[:] = 0
        self.scales[:] = 0
        self.offsets[: self.n_dims] = offsets
        self.scales[: self.n_dims] = scales
        self._set_descriptors(descriptors)
        self.configured_dims = self.n_dims
        self._forget_keys()
        return True

    def start_error(self, mode: int) -> str | None:
        """Why START in ``mode`` is refused (ERR_CONFIG, nothing happens), or None.

        Every mode needs a known MODE; CONFIG needs 1 <= N_DIMS <= MAX_DIMS; ACT (and MAILBOX) needs 1 <= N_ACTIONS <=
        MAX_ACTIONS, ALPHA, GAMMA, EPSILON and EPSILON_DECAY at most 1.0, and a loaded configuration made with
        the current N_DIMS.
        (N_TILINGS is checked against the build when CONFIG's stream is checked.)
        """
        one = 1 << self.spec.coef.frac
        if mode not in {m.value for m in ParsaMode}:
            return f"unknown mode {mode}"
        if mode == ParsaMode.CONFIG and not 1 <= self.n_dims <= self.spec.max_dims:
            return f"N_DIMS={self.n_dims} outside [1, {self.spec.max_dims}]"
        if mode in (ParsaMode.ACT, ParsaMode.MAILBOX):
            if not 1 <= self.n_actions <= self.spec.max_actions:
                return f"N_ACTIONS={self.n_actions} outside [1, {self.spec.max_actions}]"
            if max(self.alpha, self.gamma, self.epsilon, self.epsilon_decay) > one:
                return "a coefficient (ALPHA, GAMMA, EPSILON, EPSILON_DECAY) exceeds 1.0"
            if not self.descriptors:
                return "no tiling configuration loaded (CONFIG first)"
            if self.n_dims != self.configured_dims:
                return f"N_DIMS={self.n_dims} differs from the {self.configured_dims} of the loaded configuration"
        return None

    def reseed(self, seed: int) -> None:
        """Write SEED (0 becomes PRNG_ZERO_SEED)."""
        self.prng_state = int(seed) & _U32 or PRNG_ZERO_SEED

    def _forget_keys(self) -> None:
        keys, n = self.spec.keys, max(len(self.descriptors), 1)
        self.key_valid = np.zeros(keys, dtype=np.int64)
        self.key_action = np.zeros(keys, dtype=np.int64)
        self.key_q = np.zeros(keys, dtype=np.int64)
        self.key_rows = np.zeros((keys, n), dtype=np.int64)
        self.pending_valid = np.zeros(keys, dtype=np.int64)
        self.pending_reward = np.zeros(keys, dtype=np.int64)

    def clear(self) -> None:
        """CLEAR: zero policy, forget every key's previous state-action and pending reward."""
        self.banks[:] = 0
        self._forget_keys()

    def set_pending_reward(self, key: int, reward_code: int) -> bool:
        """REWARD register write for REWARD_KEY ``key``; returns whether it saturated. Ignored for key >= KEYS."""
        if not 0 <= key < self.spec.keys:
            return False
        lo, hi = self._value_range()
        self.pending_valid[key] = 1
        self.pending_reward[key] = min(max(_signed32(reward_code), lo), hi)
        return not lo <= _signed32(reward_code) <= hi

    def _value_range(self) -> tuple[int, int]:
        return -(1 << (self.spec.value_w - 1)), (1 << (self.spec.value_w - 1)) - 1

    # -- policy transfers ---------------------------------------------------------------------------------------
    def load_policy(self, values: np.ndarray) -> bool:
        """LOAD_POLICY: ``(workers, tiles_per_worker, max_actions)`` int32 values, saturated to VALUE_W.

        Returns whether any value saturated.
        """
        lo, hi = self._value_range()
        values = np.asarray(values, dtype=np.int64).reshape(self.banks.shape)
        self.banks[:] = np.clip(values, lo, hi)
        return bool(np.any((values < lo) | (values > hi)))

    def dump_policy(self) -> np.ndarray:
        """DUMP_POLICY: the banks as ``(workers, tiles_per_worker, max_actions)`` int64."""
        return self.banks.copy()

    # -- act ------------------------------------------------------------------------------------------------------
    def positions(self, state: np.ndarray) -> np.ndarray:
        """UQ0.16 positions ``u_d`` of one or more states (int64 array ``(..., n_dims)``)."""
        diff = np.clip(np.asarray(state, dtype=np.int64) - self.offsets[: self.n_dims], 0, (1 << 31) - 1)
        return np.minimum((diff * self.scales[: self.n_dims]) >> SCALE_FRAC, _U16)

    def rows(self, u: np.ndarray) -> np.ndarray:
        """Row hit by each descriptor for positions ``u`` (one state)."""
        coords = (u[self.d_dims] * self.d_tiles[:, None] + self.d_shift[:, None]) >> 16
        index = np.zeros(len(self.descriptors), dtype=np.int64)
        for j in range(4):
            use = self.d_ndims > j
            index = np.where(use, index * self.d_nt + coords[:, j], index)
        return self.d_base + index

    def act(self, keys, flags, rewards, states) -> ActResult:
        """ACT: process state records in order (see ParsaSpec for the arithmetic)."""
        keys = np.asarray(keys, dtype=np.int64)
        flags = np.asarray(flags, dtype=np.int64)
        rewards = np.asarray(rewards, dtype=np.int64)
        states = np.asarray(states, dtype=np.int64).reshape(len(keys), self.n_dims)
        n = len(keys)
        actions = np.full(n, PARSA_NO_ACTION, dtype=np.int64)
        explored = np.zeros(n, dtype=np.int64)
        q_values = np.zeros((n, self.n_actions), dtype=np.int64)
        q_chosen = np.zeros(n, dtype=np.int64)
        stats = np.zeros(5, dtype=np.int64)  # saturated, rejected, updates, cycles, last update cycles
        params = np.array(
            [
                self.n_dims,
                self.n_actions,
                self.alpha,
                self.gamma,
                self.epsilon,
                self.epsilon_decay,
                int(self.online),
                self.prng_state,
                self.spec.value_w,
                self.spec.coef.frac,
                self.busiest,
                self.spec.act_depth,
                self.spec.update_depth,
                self.spec.state_record_words(self.n_dims),
            ],
            dtype=np.int64,
        )
        if len(self.descriptors) == 0:
            stats[1] = n  # nothing configured: every record is rejected
        else:
            step = compiled_act_loop() if self.use_numba else act_loop
            step(
                params,
                self.offsets,
                self.scales,
                self.d_worker,
                self.d_ndims,
                self.d_dims,
                self.d_tiles,
                self.d_nt,
                self.d_shift,
                self.d_base,
                self.banks,
                self.key_valid,
                self.key_action,
                self.key_q,
                self.key_rows,
                self.pending_valid,
                self.pending_reward,
                keys,
                flags,
                rewards,
                states,
                actions,
                explored,
                q_values,
                q_chosen,
                stats,
            )
        self.epsilon, self.prng_state = int(params[4]), int(params[7])
        return ActResult(
            actions,
            explored.astype(bool),
            q_values,
            q_chosen,
            bool(stats[0]),
            int(stats[1]),
            cycles_act=self.n_dims + self.busiest + self.spec.act_depth if n else 0,
            cycles_update=int(stats[4]),
            cycles=int(stats[3]),
            updates=int(stats[2]),
        )

    def mailbox(self, window: Sequence[int] | np.ndarray) -> tuple[ActResult, int, int]:
        """MAILBOX: ACT on the one state record in the mailbox window, its 32-bit words in stream order (MBOX_KEY,
        MBOX_REWARD, MBOX_STATE_0.., at least ``2 + n_dims``; the rest is ignored).

        Returns the one-record :class:`ActResult` (CYCLES as a one-record ACT stream) and MBOX_ACTION's kept bits
        (action, explored; STATUS is live, the caller adds it) and MBOX_Q (q[a] as an unsigned 32-bit word).
        """
        words = [int(w) & _U32 for w in window[: 2 + self.n_dims]]  # unpack_states of the record, one scalar each
        result = self.act(
            np.array([words[0] & _U16]),
            np.array([words[0] >> 16 & 0xFF]),
            np.array([_signed32(words[1])]),
            np.array([[_signed32(w) for w in words[2:]]], np.int64),
        )
        header = (
            (int(result.actions[0]) & _U16) | int(result.explored[0]) << 16 | (int(result.q_chosen[0]) & _U32) << 32
        )  # pack_actions' header word
        return result, header & _MBOX_KEPT, header >> 32


def mailbox_window(key: int, flags: int, reward: int, state: np.ndarray) -> np.ndarray:
    """The mailbox window's words (uint32) of one state record: what the host writes in one burst from MBOX_KEY."""
    record = pack_states([key], [flags], [reward], np.asarray(state, dtype=np.int64)[None, :], len(state))
    return record.view(np.uint32)[0, : 2 + len(state)]


def _signed32(x: int) -> int:
    x = int(x) & _U32
    return x - (1 << 32) if x >> 31 else x
