"""The ParSa core as an emulated IP: its registers (from ``spec.py``), its streams and its control FSM.

Behaviour seen from the bus, one operation per ``CTRL.START`` (``CTRL.MODE``, see
:class:`~pynq_rl.overlay.spec.ParsaMode`); the state is the bit-exact model
:class:`~pynq_rl.overlay.models.parsa.ParsaModel`:

* START copies the run-time registers into the core and checks them (:meth:`ParsaModel.start_error`); a refused
  START sets ``DONE | ERR_CONFIG`` and nothing else happens.
* CONFIG: N_DIMS dimension records and 2 x N_TILINGS descriptor words up to TLAST; a stream of another length sets
  ``ERR_STREAM``, a layout the build cannot hold ``ERR_CONFIG``; either way the old configuration stays.
* ACT: state records up to TLAST, one action record out per whole record (TLAST on the last); a trailing partial
  record sets ``ERR_STREAM``; a key >= KEYS gets ``PARSA_NO_ACTION`` and ``ERR_CONFIG``. ``EPSILON`` and ``SEED``
  read back live.
* LOAD_POLICY / DUMP_POLICY: every policy row, worker-major; a load of the wrong length sets ``ERR_STREAM`` and
  changes nothing. CLEAR: policy 0, keys forgotten.
* A write of ``REWARD`` stores a pending reward for ``REWARD_KEY``; a write of ``SEED`` reseeds the PRNG.
* ``CTRL.SOFT_RESET`` aborts the operation and clears STATUS; policy and configuration survive.
"""
from __future__ import annotations

import enum

import numpy as np

from ...overlay import spec as S
from ...overlay.models import parsa as model
from .regfile import RegisterFile

__all__ = ["ParsaCoreIP"]

_WORD = 8


class t_state(enum.Enum):
    """Control FSM states."""

    IDLE = 0
    LOAD = 1
    DRAIN = 2


class ParsaCoreIP(RegisterFile):
    """Emulated ParSa core with build parameters ``spec`` (unconfigured, policy 0)."""

    def __init__(self, spec: S.ParsaSpec) -> None:
        self.spec = spec
        self.core = model.ParsaModel(spec)
        super().__init__(S.PARSA_REGISTERS)

    def reset(self) -> None:
        super().reset()
        self.values.update(self.spec.parameter_registers())
        self.values["EPSILON_DECAY"] = 1 << self.spec.coef.frac
        self._abort()

    def _abort(self) -> None:
        self.state = t_state.IDLE
        self._mode = S.ParsaMode.ACT
        self._inbox = bytearray()
        self._outbox = np.zeros(0, dtype=np.uint8)

    # -- registers --------------------------------------------------------------------------------------------------
    def read_register(self, name: str) -> int:
        if name == "SEED":
            return self.core.prng_state
        return self.values[name]

    def _set_status(self, flags: S.Status) -> None:
        self.values["STATUS"] = int(flags)

    def _finish(self, flags: S.Status = S.Status(0)) -> None:
        self.state = t_state.IDLE
        self._set_status(flags | S.Status.DONE)

    def on_write(self, name: str, value: int) -> None:
        if name == "SEED":
            self.core.reseed(value)
        elif name == "REWARD":
            self.core.set_pending_reward(self.values["REWARD_KEY"], value)
        elif name == "CTRL":
            if value & S.Ctrl.SOFT_RESET:
                self._abort()
                self._set_status(S.Status(0))
            elif value & S.Ctrl.START and self.state == t_state.IDLE:
                self._start(self.field("CTRL", "MODE"))

    def _load_registers(self) -> None:
        core, v = self.core, self.values
        core.n_dims, core.n_actions, core.frac_bits = v["N_DIMS"], v["N_ACTIONS"], v["FRAC_BITS"]
        core.alpha, core.gamma = v["ALPHA"], v["GAMMA"]
        core.epsilon, core.epsilon_decay = v["EPSILON"], v["EPSILON_DECAY"]
        core.online, core.emit_values = bool(self.field("OPTIONS", "ONLINE")), bool(self.field("OPTIONS", "EMIT_VALUES"))

    def _start(self, mode: int) -> None:
        self._set_status(S.Status.BUSY)  # START clears DONE and the sticky flags
        self.values["CYCLES"] = 0
        self._load_registers()
        if self.core.start_error(mode) is not None:
            self._finish(S.Status.ERR_CONFIG)
            return
        self._mode = S.ParsaMode(mode)
        self._inbox = bytearray()
        if self._mode == S.ParsaMode.CLEAR:
            self.core.clear()
            self.values["CYCLES"] = self.spec.tiles_per_worker
            self._finish()
        elif self._mode == S.ParsaMode.DUMP_POLICY:
            self._drain(model.pack_policy(self.core.dump_policy()), self.spec.policy_words)
        else:
            self.state = t_state.LOAD

    def _drain(self, words: np.ndarray, cycles: int, flags: S.Status = S.Status(0)) -> None:
        self.values["CYCLES"] = cycles
        if len(words) == 0:
            self._finish(flags)
            return
        self._outbox = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
        self.state = t_state.DRAIN
        self._set_status(S.Status.BUSY | flags)

    # -- AXI-Stream endpoints (the DMA model calls these) ---------------------------------------------------------
    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Accept words while loading (back-pressure otherwise); TLAST closes the operation."""
        if self.state != t_state.LOAD:
            return 0
        self._inbox += data.tobytes()
        if last:
            self._close_input()
        return len(data)

    def _close_input(self) -> None:
        whole = len(self._inbox) // _WORD * _WORD
        partial = whole != len(self._inbox)
        words = np.frombuffer(bytes(self._inbox[:whole]), dtype="<u8")
        self._inbox = bytearray()
        handler = {S.ParsaMode.CONFIG: self._config, S.ParsaMode.LOAD_POLICY: self._load_policy,
                   S.ParsaMode.ACT: self._act}[self._mode]
        handler(words, partial)

    def _config(self, words: np.ndarray, partial: bool) -> None:
        n_dims, n_tilings = self.core.n_dims, self.values["N_TILINGS"]
        if partial or len(words) != n_dims + 2 * n_tilings:
            self._finish(S.Status.ERR_STREAM)
            return
        offsets, scales = model.unpack_dimensions(words[:n_dims])
        ok = self.core.configure(offsets, scales, model.unpack_descriptors(words[n_dims:]))
        self.values["CYCLES"] = len(words)
        self._finish(S.Status(0) if ok else S.Status.ERR_CONFIG)

    def _load_policy(self, words: np.ndarray, partial: bool) -> None:
        if partial or len(words) != self.spec.policy_words:
            self._finish(S.Status.ERR_STREAM)
            return
        saturated = self.core.load_policy(model.unpack_policy(words, self.spec))
        self.values["CYCLES"] = len(words)
        self._finish(S.Status.SATURATED if saturated else S.Status(0))

    def _act(self, words: np.ndarray, partial: bool) -> None:
        per_record = self.spec.state_record_words(self.core.n_dims)
        n = len(words) // per_record
        flags = S.Status.ERR_STREAM if partial or n * per_record != len(words) else S.Status(0)
        keys, record_flags, rewards, states = model.unpack_states(words[:n * per_record].reshape(n, per_record),
                                                                  self.core.n_dims)
        result = self.core.act(keys, record_flags, rewards, states)
        self.values["EPSILON"] = self.core.epsilon
        self.values["CYCLES_ACT"], self.values["CYCLES_UPDATE"] = result.cycles_act, result.cycles_update
        flags |= S.Status.SATURATED if result.saturated else S.Status(0)
        flags |= S.Status.ERR_CONFIG if result.rejected else S.Status(0)
        values = result.q_values if self.core.emit_values else None
        out = model.pack_actions(result.actions, result.explored, result.q_chosen, values, self.core.n_actions)
        self._drain(out.ravel(), result.cycles, flags)

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Emit up to ``max_bytes`` output bytes while draining; TLAST with the final byte."""
        if self.state != t_state.DRAIN:
            return np.zeros(0, dtype=np.uint8), False
        data, self._outbox = self._outbox[:max_bytes], self._outbox[max_bytes:]
        last = len(self._outbox) == 0
        if last:
            self._finish(S.Status(self.values["STATUS"]) & ~S.Status.BUSY)
        return data, last
