"""``ParsaCore``: the driver of the ParSa core (OPaL's parallel Sarsa), bound by VLNV, the same on every backend.

The core is a complete online learner: states in, actions out, and one-step Sarsa updates of a tile-coded linear
policy in between, per key (an agent or a network flow). The driver speaks floats and does everything the
hardware should not: it schedules the tilings onto the workers (heaviest first), turns state bounds into offsets
and reciprocal scales (the core never divides), quantizes states, rewards and coefficients, and maps the banked
policy back to the layout's tile order for :meth:`ParsaCore.dump_policy` / :meth:`ParsaCore.load_policy`.

Values (policy weights, rewards, q values) are ``VALUE_W``-bit fixed point with ``frac_bits`` fractional bits
chosen at configuration (OPaL's run-time Q format); states are Q15.16; alpha, gamma, epsilon and its decay UQ1.16.
Anything out of range saturates in the core and raises a :class:`ParsaSaturationWarning` here (an error with
``strict``); NaN or infinite inputs are refused before anything is sent.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...overlay import spec as S
from ...overlay.models import parsa as model
from .arguments import float_array, number, state_mapping
from .parsa_config import ConfigurationPlan, ParsaConfig, coefficient_code, plan_configuration
from .polling import wait_until
from .stream_core import StreamCore
from .tiling_config import tiling_to_dict

__all__ = ["ParsaCore", "ParsaSaturationWarning", "ParsaConfig"]

_WORD = 8


class ParsaSaturationWarning(UserWarning):
    """A state, reward, q value or policy weight left its fixed-point range and was clipped."""


class ParsaCore(StreamCore):
    """Driver of the ParSa core: ``configure(...)`` once, then ``act(state, reward, key)`` every step.

    Attributes
    ----------
    spec : ParsaSpec
        Build parameters as the core reports them.
    config : ParsaConfig or None
        The configuration last loaded by :meth:`configure`.
    strict : bool
        Raise ``ValueError`` instead of warning on saturation.
    """

    bindto = [S.PARSA_VLNV]
    core_name = "parsa"
    title = "ParSa"

    def __init__(self, description: dict) -> None:
        super().__init__(description)
        fmt = {name: self._field("FORMAT", name) for name in ("VALUE_W", "STATE_FRAC", "COEF_FRAC", "MAX_SET_DIMS")}
        self.spec = S.ParsaSpec(
            max_dims=self._reg("MAX_DIMS"),
            max_actions=self._reg("MAX_ACTIONS"),
            workers=self._reg("WORKERS"),
            tiles_per_worker=self._reg("TILES_PER_WORKER"),
            max_tilings=self._reg("MAX_TILINGS"),
            max_set_dims=fmt["MAX_SET_DIMS"],
            keys=self._reg("KEYS"),
            value_w=fmt["VALUE_W"],
            stream_bytes=self.stream_bytes,
        )
        self.config: ParsaConfig | None = None
        self.strict = False
        self._options: int | None = None  # OPTIONS as last written by this driver
        fields = self.registers["MBOX_ACTION"]["fields"]
        # MBOX_ACTION's STATUS flags are consecutive fields (spec.PARSA_MBOX_FLAGS): every value -> its Status
        self._mailbox_flags_lo = fields[S.PARSA_MBOX_FLAGS[0]]["bit_offset"]
        self._mailbox_flags_mask = (1 << len(S.PARSA_MBOX_FLAGS)) - 1
        self._mailbox_status = [
            S.Status(sum(int(S.Status[name]) for i, name in enumerate(S.PARSA_MBOX_FLAGS) if value >> i & 1))
            for value in range(self._mailbox_flags_mask + 1)
        ]
        self._mailbox_done = 1 << fields["DONE"]["bit_offset"]
        self._mailbox_action = fields["ACTION"]["bit_offset"], (1 << fields["ACTION"]["bit_width"]) - 1
        self._mailbox_cycles: tuple = (None, 0)  # (config, cycles of one decision) for the rtl deadline
        self._error_flags = S.Status(S.STATUS_ERROR_MASK)
        self._flag_reward, self._flag_terminal = int(S.ParsaFlag.REWARD), int(S.ParsaFlag.TERMINAL)

    def _build_parameters(self) -> dict:
        return {
            "max_dims": self.spec.max_dims,
            "max_actions": self.spec.max_actions,
            "workers": self.spec.workers,
            "tiles_per_worker": self.spec.tiles_per_worker,
            "max_tilings": self.spec.max_tilings,
            "keys": self.spec.keys,
            "value_w": self.spec.value_w,
        }

    # -- configuration ----------------------------------------------------------------------------------------------
    def configure(
        self,
        tiling,
        n_actions: int,
        bounds,
        alpha: float = 0.1,
        gamma: float = 0.99,
        epsilon: float = 0.1,
        epsilon_decay: float = 1.0,
        frac_bits: int = 8,
        online: bool = True,
        seed: int | None = None,
        clear: bool = True,
        timeout_s: float | None = None,
    ) -> ParsaConfig:
        """Load a tiling layout and the learning parameters; by default also zero the policy.

        Parameters
        ----------
        tiling : TilingLayout, dict, JSON string or path
            The tiling sets (see :mod:`.tiling_config`).
        n_actions : int
            Actions (1..MAX_ACTIONS).
        bounds : (lows, highs)
            Per-dimension state bounds; states outside are clamped to them. Ranges in [2**-7, 2**15].
        alpha : float
            Step size applied to every hit tile (Sutton & Barto's alpha / number of tilings).
        gamma, epsilon, epsilon_decay : float
            Discount, exploration probability, and the factor applied to epsilon after every chosen action.
        frac_bits : int
            Fractional bits of policy values, rewards and q values (0..VALUE_W-2).
        online : bool
            Apply Sarsa updates (False: act greedily/epsilon-greedily with a fixed policy).
        seed : int or None
            Reseed the core's PRNG.

        Raises
        ------
        ValueError
            Anything the build cannot hold (dims, actions, tilings per worker, policy rows), bad bounds or
            coefficients — before the core is touched.
        """
        plan = plan_configuration(
            self.spec, tiling, n_actions, bounds, alpha, gamma, epsilon, epsilon_decay, frac_bits, online, seed
        )
        return self._apply_configuration(plan, clear, timeout_s)

    def _apply_configuration(self, plan: ConfigurationPlan, clear: bool, timeout_s: float | None) -> ParsaConfig:
        """Write a :func:`plan_configuration` to the core (CONFIG, then CLEAR if ``clear``)."""
        spec, config, seed = self.spec, plan.config, plan.seed
        layout, words = config.layout, plan.words
        if seed is not None:
            self.seed = seed
        self._write("N_DIMS", layout.n_dims)
        self._write("N_ACTIONS", config.n_actions)
        self._write("N_TILINGS", len(config.descriptors))
        self._write("FRAC_BITS", config.frac_bits)
        for name, code in plan.coefs.items():
            self._write(name, code)
        self._write_options(config.online, False)
        self._run(S.ParsaMode.CONFIG, words, 0, timeout_s, "configure", cycles=len(words))  # + checks, a word each
        if clear:
            self._run(S.ParsaMode.CLEAR, None, 0, timeout_s, "clear", cycles=spec.tiles_per_worker)
        self.config = config
        return self.config

    def _write_options(self, online: bool, emit_values: bool) -> None:
        """Write OPTIONS if it changes (this driver owns the register, so a cached copy saves a bus write per step)."""
        fields = S.PARSA_REGISTERS["OPTIONS"]["fields"]
        value = int(online) << fields["ONLINE"]["bit_offset"] | int(emit_values) << fields["EMIT_VALUES"]["bit_offset"]
        if value != self._options:
            self._write("OPTIONS", value)
            self._options = value

    def reprogrammed(self) -> None:
        """The PL was programmed again (:meth:`StreamCore.reprogrammed`): the core's tiling layout and policy are
        gone with it, so the driver is unconfigured until :meth:`configure`."""
        super().reprogrammed()
        self.config = None

    def _require_config(self) -> ParsaConfig:
        if self.config is None:
            raise RuntimeError("ParSa core not configured: call configure() first")
        return self.config

    @property
    def online(self) -> bool:
        """Whether Sarsa updates are applied."""
        if self._options is None:
            self._options = self._reg("OPTIONS")
        return bool(self._options >> S.PARSA_REGISTERS["OPTIONS"]["fields"]["ONLINE"]["bit_offset"] & 1)

    @online.setter
    def online(self, value: bool) -> None:
        self._write_options(bool(value), False)

    @property
    def epsilon(self) -> float:
        """Current exploration probability (decays in the core after every chosen action); assignable."""
        return self._reg("EPSILON") / (1 << self.spec.coef.frac)

    @epsilon.setter
    def epsilon(self, value: float) -> None:
        self._write("EPSILON", coefficient_code("epsilon", value, self.spec.coef))

    @property
    def cycles_act(self) -> int:
        """Cycles from the last state record to its action (the core's counter)."""
        return self._reg("CYCLES_ACT")

    @property
    def cycles_update(self) -> int:
        """Cycles of the last Sarsa update pass (0 if the last record applied none)."""
        return self._reg("CYCLES_UPDATE")

    # -- acting -----------------------------------------------------------------------------------------------------
    def _value_codes(self, name: str, x: np.ndarray) -> tuple[np.ndarray, bool]:
        cfg = self._require_config()
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} must be finite")
        lo, hi = -(1 << (self.spec.value_w - 1)), (1 << (self.spec.value_w - 1)) - 1
        scaled = np.floor(x * (1 << cfg.frac_bits) + 0.5)
        return np.clip(scaled, lo, hi).astype(np.int64), bool(np.any((scaled < lo) | (scaled > hi)))

    def _saturated(self, what: str) -> None:
        message = f"ParSa core: {what} left the fixed-point range and was clipped"
        if self.strict:
            raise ValueError(message)
        warnings.warn(message, ParsaSaturationWarning, stacklevel=3)

    def act(
        self, state, reward: float | None = None, key: int = 0, terminal: bool = False, timeout_s: float | None = None
    ) -> int:
        """One step for ``key``: the action for ``state``; ``reward`` (for the key's previous action) trains first.

        With ``terminal``, ``state`` ended the key's episode: the previous action is updated towards ``reward``
        alone, the key forgets it, and -1 is returned (no action).

        The step goes through the register mailbox, not the DMA: the state record is written into the mailbox
        window with one ``mmio.array`` slice assignment (a bus burst of ``n_dims + 2`` words), then START (MODE =
        MAILBOX), then MBOX_ACTION is read until its STATUS bits say DONE (the core holds that read while it decides,
        so one read usually suffices): 3 host MMIO calls and ``n_dims + 4`` register words in steady state
        (:meth:`RLOverlay.bus_stats`). The core acts on the record
        exactly as on a one-record :meth:`act_batch` stream.

        Raises
        ------
        ValueError
            A state of the wrong shape or not finite, a NaN or infinite reward, a key outside [0, KEYS), or (with
            ``strict``) a value that would saturate — before the core is touched.
        RuntimeError
            The core refused the step (ERR_CONFIG; the message names the cause).
        TimeoutError
            No DONE before the deadline (``timeout_s``; on ``rtl``, simulated cycles); the core is reset.
        """
        cfg = self._require_config()
        state = float_array("state", state, 1, "(n_dims,)")
        if state.shape != (cfg.layout.n_dims,):
            raise ValueError(f"state must have shape ({cfg.layout.n_dims},), not {state.shape}")
        if reward is not None:
            reward = number("reward", reward)  # NaN is not "no reward" here: None is
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool) or not 0 <= key < self.spec.keys:
            raise ValueError(
                f"key must be one of the build's {self.spec.keys} keys, an integer in "
                f"[0, {self.spec.keys}), not {key!r}"
            )
        flags = (self._flag_reward if reward is not None else 0) | (self._flag_terminal if terminal else 0)
        # the window's words (the state record's uint32 view, model.mailbox_window), coded with Python scalars:
        # numpy's per-call overhead on one record costs more than the bus accesses on a board
        reward_code, reward_sat = self._value_code(0.0 if reward is None else reward, cfg.frac_bits)
        words, state_sat = [int(key) | flags << 16, reward_code & 0xFFFF_FFFF], False
        scale, lo, hi = float(1 << self.spec.state.frac), self.spec.state.min_code, self.spec.state.max_code
        for x in state.tolist():
            if not -32768.0 < x < 32768.0:
                state_sat = True
                x = min(max(x, -65536.0), 65536.0)  # clipped to the code range below anyway; no float overflow
            words.append(min(max(math.floor(x * scale + 0.5), lo), hi) & 0xFFFF_FFFF)
        if self.strict and (reward_sat or state_sat):  # refused before the core learns from a clipped value
            self._saturated("a state or reward")
        if self._mailbox_cycles[0] is not cfg:
            self._mailbox_cycles = (cfg, self._record_cycles(cfg) + self.spec.state_record_words(cfg.layout.n_dims))
        deadline = self._deadline(timeout_s, self._mailbox_cycles[1])
        self._write_options(self.online, False)
        self._write_burst(S.PARSA_MBOX_WINDOW[0], words)
        self._start(S.ParsaMode.MAILBOX)
        try:
            result = wait_until(
                lambda: self._reg("MBOX_ACTION"),
                lambda value: bool(value & self._mailbox_done),
                deadline,
                lambda value: f"{self.title} core not DONE (MBOX_ACTION={value:#x}, a mailbox decision)",
            )
        except TimeoutError:
            self.reset()
            raise
        status = self._mailbox_status[result >> self._mailbox_flags_lo & self._mailbox_flags_mask]
        if status & self._error_flags:
            raise RuntimeError(self._describe_errors(status, "a mailbox decision"))
        self._last_status = status
        if reward_sat or state_sat or status & S.Status.SATURATED:
            self._saturated("a state, reward, q value or weight")
        action = result >> self._mailbox_action[0] & self._mailbox_action[1]
        return -1 if action == S.PARSA_NO_ACTION else action

    def _value_code(self, x: float, frac_bits: int) -> tuple[int, bool]:
        """One finite value as a VALUE_W code (clipped) and whether it was clipped (:meth:`_value_codes` for one)."""
        lo, hi = -(1 << (self.spec.value_w - 1)), (1 << (self.spec.value_w - 1)) - 1
        x = min(max(x, -(2.0**40)), 2.0**40)  # beyond any code at any frac_bits; no float overflow
        code = math.floor(x * (1 << frac_bits) + 0.5)
        return min(max(code, lo), hi), not lo <= code <= hi

    def _state_codes(self, states: np.ndarray) -> tuple[np.ndarray, bool]:
        """States as STATE-format codes (clipped) and whether any was clipped."""
        codes = np.floor(states * (1 << self.spec.state.frac) + 0.5)
        saturated = bool(np.any(np.abs(states) >= 2.0**15))
        return np.clip(codes, self.spec.state.min_code, self.spec.state.max_code).astype(np.int64), saturated

    def act_batch(
        self,
        states,
        rewards=None,
        keys=None,
        terminals=None,
        return_values: bool = False,
        timeout_s: float | None = None,
    ):
        """Many steps in one DMA transfer, processed in order (each may learn from the ones before).

        Parameters
        ----------
        states : array_like, shape (n, n_dims)
        rewards : array_like of n floats (NaN = no reward for that record), or None
        keys : array_like of n ints in [0, KEYS), or None (all key 0)
        terminals : array_like of n bools, or None
        return_values : bool
            Also return the q values ``(n, n_actions)`` of each state (before its update).

        Returns
        -------
        actions : np.ndarray of int64 (-1 where terminal)
        values : np.ndarray of float64 or None
        """
        cfg = self._require_config()
        states = float_array("states", states, 2, f"(n, {cfg.layout.n_dims})")
        if states.shape[1] != cfg.layout.n_dims:
            raise ValueError(f"states must have shape (n, {cfg.layout.n_dims}), not {states.shape}")
        n = states.shape[0]
        keys = np.zeros(n, dtype=np.int64) if keys is None else np.asarray(keys)
        if (
            keys.shape != (n,)
            or not np.issubdtype(keys.dtype, np.integer)
            or np.any((keys < 0) | (keys >= self.spec.keys))
        ):
            raise ValueError(f"keys must be {n} integers in [0, {self.spec.keys})")
        terminals = np.zeros(n, dtype=bool) if terminals is None else np.asarray(terminals, dtype=bool)
        if terminals.shape != (n,):
            raise ValueError(f"terminals must have shape ({n},), not {terminals.shape}")
        rewards = np.full(n, np.nan) if rewards is None else float_array("rewards", rewards, 1, "(n,)", finite=False)
        if rewards.shape != (n,) or np.any(np.isinf(rewards)):
            raise ValueError(f"rewards must be {n} finite floats (NaN for none)")
        has_reward = ~np.isnan(rewards)
        reward_codes, reward_sat = self._value_codes("rewards", np.where(has_reward, rewards, 0.0))
        state_codes, state_sat = self._state_codes(states)
        flags = has_reward * int(S.ParsaFlag.REWARD) | terminals * int(S.ParsaFlag.TERMINAL)
        if self.strict and (reward_sat or state_sat):  # refused before the core learns from a clipped value
            self._saturated("a state or reward")
        if n == 0:
            return np.zeros(0, np.int64), (np.zeros((0, cfg.n_actions)) if return_values else None)
        words = model.pack_states(keys, flags, reward_codes, state_codes, cfg.layout.n_dims).ravel()
        out_words = self.spec.action_record_words(cfg.n_actions, return_values)
        self._write_options(self.online, return_values)
        out = self._run(
            S.ParsaMode.ACT, words, n * out_words, timeout_s, f"act on {n} states", cycles=n * self._record_cycles(cfg)
        )
        actions, _, _, q_values = model.unpack_actions(out.reshape(n, out_words), cfg.n_actions)
        if reward_sat or state_sat or self._last_status & S.Status.SATURATED:
            self._saturated("a state, reward, q value or weight")
        actions = np.where(actions == S.PARSA_NO_ACTION, -1, actions)
        values = None if q_values is None else q_values / float(1 << cfg.frac_bits)
        return actions, values

    def set_reward(self, key: int, reward: float) -> None:
        """OPaL's reward message: a pending reward for ``key``, used by its next state without a reward."""
        if not isinstance(key, (int, np.integer)) or not 0 <= key < self.spec.keys:
            raise ValueError(f"key must be in [0, {self.spec.keys}), not {key!r}")
        code, saturated = self._value_codes("reward", np.array([reward]))
        if saturated:
            self._saturated("reward")
        self._write("REWARD_KEY", int(key))
        self._write("REWARD", int(code[0]))

    # -- policy -----------------------------------------------------------------------------------------------------
    def dump_banks(self, timeout_s: float | None = None) -> np.ndarray:
        """The raw policy banks ``(workers, tiles_per_worker, max_actions)`` as value codes."""
        out = self._run(
            S.ParsaMode.DUMP_POLICY,
            None,
            self.spec.policy_words,
            timeout_s,
            "dump policy",
            cycles=self._policy_cycles(),
        )
        return model.unpack_policy(out.view(np.uint64), self.spec)

    def load_banks(self, banks: np.ndarray, timeout_s: float | None = None) -> None:
        """Load raw policy banks (value codes) as :meth:`dump_banks` returns them."""
        banks = self._bank_codes(banks)
        self._run(
            S.ParsaMode.LOAD_POLICY, model.pack_policy(banks), 0, timeout_s, "load policy", cycles=self._policy_cycles()
        )
        if self._last_status & S.Status.SATURATED:
            self._saturated("a policy weight")

    def _bank_codes(self, banks) -> np.ndarray:
        """``banks`` checked as :meth:`dump_banks` returns them: integer value codes of the build's shape."""
        banks = np.asarray(banks)
        shape = (self.spec.workers, self.spec.tiles_per_worker, self.spec.max_actions)
        if banks.shape != shape or not np.issubdtype(banks.dtype, np.integer):
            raise ValueError(f"banks must be integer codes of shape {shape}, not {banks.dtype} {banks.shape}")
        return banks

    def _tile_rows(self) -> list[tuple[int, int, int, int]]:
        """(global tile offset, worker, base row, rows) of every tiling, in layout order."""
        cfg = self._require_config()
        by_tiling = {(d.set_index, d.copy): d for d in cfg.descriptors}
        out, offset = [], 0
        for set_index, s in enumerate(cfg.layout.sets):
            for copy in range(s.tilings):
                d = by_tiling[(set_index, copy)]
                out.append((offset, d.worker, d.base, d.rows))
                offset += d.rows
        return out

    def dump_policy(self, timeout_s: float | None = None) -> np.ndarray:
        """The policy as ``(n_tiles, n_actions)`` floats in the layout's tile order (set, copy, row-major tile)."""
        cfg = self._require_config()
        banks = self.dump_banks(timeout_s)
        weights = np.zeros((cfg.layout.n_tiles, cfg.n_actions))
        for offset, worker, base, rows in self._tile_rows():
            weights[offset : offset + rows] = banks[worker, base : base + rows, : cfg.n_actions]
        return weights / float(1 << cfg.frac_bits)

    def load_policy(self, weights, timeout_s: float | None = None) -> None:
        """Load ``(n_tiles, n_actions)`` float weights in the layout's tile order (see :meth:`dump_policy`)."""
        cfg = self._require_config()
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (cfg.layout.n_tiles, cfg.n_actions):
            raise ValueError(f"weights must have shape {(cfg.layout.n_tiles, cfg.n_actions)}, not {weights.shape}")
        codes, saturated = self._value_codes("weights", weights)
        banks = np.zeros((self.spec.workers, self.spec.tiles_per_worker, self.spec.max_actions), dtype=np.int64)
        for offset, worker, base, rows in self._tile_rows():
            banks[worker, base : base + rows, : cfg.n_actions] = codes[offset : offset + rows]
        if saturated:
            self._saturated("a policy weight")
        self._run(
            S.ParsaMode.LOAD_POLICY, model.pack_policy(banks), 0, timeout_s, "load policy", cycles=self._policy_cycles()
        )

    def state_dict(self) -> dict:
        """Configuration, raw policy banks, epsilon and PRNG state (keys' previous steps are not saved)."""
        cfg = self._require_config()
        return {
            "tiling": tiling_to_dict(cfg.layout),
            "n_actions": cfg.n_actions,
            "bounds": (cfg.lows, cfg.highs),
            "alpha": cfg.alpha,
            "gamma": cfg.gamma,
            "epsilon": self.epsilon,
            "epsilon_decay": cfg.epsilon_decay,
            "frac_bits": cfg.frac_bits,
            "online": cfg.online,
            "banks": self.dump_banks(),
            "seed": self.seed,
            "workers": self.spec.workers,
            "tiles_per_worker": self.spec.tiles_per_worker,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (same build). Every field, the banks included, is checked before the core is
        touched, so a refused state leaves the configuration and the policy as they were."""
        fields = (
            "tiling",
            "n_actions",
            "bounds",
            "alpha",
            "gamma",
            "epsilon",
            "epsilon_decay",
            "frac_bits",
            "online",
            "banks",
            "seed",
            "workers",
            "tiles_per_worker",
        )
        state = state_mapping("state", state, fields)
        if (state["workers"], state["tiles_per_worker"]) != (self.spec.workers, self.spec.tiles_per_worker):
            raise ValueError(
                f"state_dict is for {state['workers']} workers x {state['tiles_per_worker']} rows;"
                f" this core has {self.spec.workers} x {self.spec.tiles_per_worker}"
            )
        plan = plan_configuration(
            self.spec,
            state["tiling"],
            state["n_actions"],
            tuple(state["bounds"]),
            state["alpha"],
            state["gamma"],
            state["epsilon"],
            state["epsilon_decay"],
            state["frac_bits"],
            state["online"],
            state["seed"],
        )
        banks = self._bank_codes(state["banks"])
        self._apply_configuration(plan, clear=False, timeout_s=None)
        self.load_banks(banks)

    # -- transfers --------------------------------------------------------------------------------------------------
    def _run(
        self,
        mode: S.ParsaMode,
        words: np.ndarray | None,
        recv_words: int,
        timeout_s: float | None,
        what: str,
        cycles: int,
    ) -> np.ndarray:
        """One operation streaming 64-bit ``words`` in and ``recv_words`` words out; the core's own work takes
        ``cycles`` beyond a cycle per word (what the ``rtl`` deadline is derived from: ``StreamCore._transfer``)."""
        return self._transfer(mode, words, recv_words * _WORD, timeout_s, what, cycles).view(np.uint64)

    def _record_cycles(self, cfg: ParsaConfig) -> int:
        """Cycles one state record can take beyond its stream words: CYCLES_ACT plus CYCLES_UPDATE (spec formulas)."""
        busiest = max(Counter(d.worker for d in cfg.descriptors).values(), default=0)
        return cfg.layout.n_dims + 2 * busiest + self.spec.act_depth + self.spec.update_depth

    def _policy_cycles(self) -> int:
        """A bound on LOAD_POLICY's and DUMP_POLICY's work beyond one cycle per word: a bank read and an emitter
        load per row (DUMP), a row commit per row (LOAD)."""
        return 3 * self.spec.workers * self.spec.tiles_per_worker

    def _describe_errors(self, status: S.Status, what: str) -> str:
        messages = []
        if status & S.Status.ERR_CONFIG:
            messages.append(
                f"ParSa core refused {what} (a register is out of range, the layout does not fit the "
                f"build, the core is not configured, or a key is >= KEYS={self.spec.keys})"
            )
        if status & S.Status.ERR_STREAM:
            messages.append(f"ParSa core input stream of {what} has the wrong length (TLAST misplaced)")
        return "; ".join(messages)
