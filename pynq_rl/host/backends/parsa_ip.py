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
* MAILBOX: ACT on the one record in the mailbox window (MBOX_KEY, MBOX_REWARD, MBOX_STATE_*), no streams; the
  action record's header goes to MBOX_ACTION (with the live STATUS bits) and MBOX_Q.
* A write of ``REWARD`` stores a pending reward for ``REWARD_KEY``; a write of ``SEED`` reseeds the PRNG; a write
  of ``EPSILON`` sets the live value. During an operation these three act once it ends (as the HDL holds them);
  every other register counts as it was at START (``N_TILINGS`` too, read when CONFIG's input closes).
* ``CTRL.SOFT_RESET`` aborts the operation and clears STATUS; policy and configuration survive.
"""

from __future__ import annotations

import numpy as np

from ...overlay import spec as S
from ...overlay.models import parsa as model
from .stream_ip import StreamCoreIP

__all__ = ["ParsaCoreIP"]


class ParsaCoreIP(StreamCoreIP):
    """Emulated ParSa core with build parameters ``spec`` (unconfigured, policy 0)."""

    WRITE_EFFECTS = ("EPSILON", "SEED", "REWARD")

    def __init__(self, spec: S.ParsaSpec) -> None:
        self.spec = spec
        self.core = model.ParsaModel(spec)
        self._mode = S.ParsaMode.ACT
        fields = S.PARSA_REGISTERS["MBOX_ACTION"]["fields"]
        self._mbox_flags = [(int(S.Status[name]), 1 << fields[name]["bit_offset"]) for name in S.PARSA_MBOX_FLAGS]
        super().__init__(S.PARSA_REGISTERS, spec.parameter_registers())

    def read_register(self, name: str) -> int:
        if name == "SEED":
            return self.core.prng_state
        if name == "MBOX_ACTION":
            status = self.values["STATUS"]
            return self.values[name] | sum(mbox for flag, mbox in self._mbox_flags if status & flag)
        return self.values[name]

    def on_register(self, name: str, value: int) -> None:
        if name == "SEED":
            self.core.reseed(value)
        elif name == "REWARD":
            self.core.set_pending_reward(self.values["REWARD_KEY"], value)

    def _load_registers(self) -> None:
        core, v = self.core, self.values
        core.n_dims, core.n_actions, core.frac_bits = v["N_DIMS"], v["N_ACTIONS"], v["FRAC_BITS"]
        core.alpha, core.gamma = v["ALPHA"], v["GAMMA"]
        core.epsilon, core.epsilon_decay = v["EPSILON"], v["EPSILON_DECAY"]
        core.online, core.emit_values = (
            bool(self.field("OPTIONS", "ONLINE")),
            bool(self.field("OPTIONS", "EMIT_VALUES")),
        )

    def start(self, mode: int) -> None:
        self._load_registers()
        if self.core.start_error(mode) is not None:
            self.finish(S.Status.ERR_CONFIG)
            return
        self._mode = S.ParsaMode(mode)
        if self._mode == S.ParsaMode.CLEAR:
            self.core.clear()
            self.values["CYCLES"] = self.spec.tiles_per_worker
            self.finish()
        elif self._mode == S.ParsaMode.DUMP_POLICY:
            self.drain(model.pack_policy(self.core.dump_policy()), self.spec.policy_words)
        elif self._mode == S.ParsaMode.MAILBOX:
            self._mailbox()
        else:
            self.begin_load()

    def close_input(self, data: bytes) -> None:
        words, partial = self.words(data)
        handler = {
            S.ParsaMode.CONFIG: self._config,
            S.ParsaMode.LOAD_POLICY: self._load_policy,
            S.ParsaMode.ACT: self._act,
        }[self._mode]
        handler(words, partial)

    def _config(self, words: np.ndarray, partial: bool) -> None:
        n_dims, n_tilings = self.core.n_dims, self.started["N_TILINGS"]
        if partial or len(words) != n_dims + 2 * n_tilings:
            self.finish(S.Status.ERR_STREAM)
            return
        offsets, scales = model.unpack_dimensions(words[:n_dims])
        ok = self.core.configure(offsets, scales, model.unpack_descriptors(words[n_dims:]))
        self.values["CYCLES"] = len(words)
        self.finish(S.Status(0) if ok else S.Status.ERR_CONFIG)

    def _load_policy(self, words: np.ndarray, partial: bool) -> None:
        if partial or len(words) != self.spec.policy_words:
            self.finish(S.Status.ERR_STREAM)
            return
        saturated = self.core.load_policy(model.unpack_policy(words, self.spec))
        self.values["CYCLES"] = len(words)
        self.finish(S.Status.SATURATED if saturated else S.Status(0))

    def _mailbox(self) -> None:
        """MAILBOX: the window's record through the model; the result to MBOX_ACTION / MBOX_Q, no stream."""
        values = self.values
        result, kept, q = self.core.mailbox([values[name] for name in S.PARSA_MBOX_WINDOW[: 2 + self.core.n_dims]])
        self._act_registers(result)
        self.values["MBOX_ACTION"], self.values["MBOX_Q"] = kept, q
        self.values["CYCLES"] = result.cycles
        self.finish(self._act_flags(result))

    def _act_registers(self, result: model.ActResult) -> None:
        self.values["EPSILON"] = self.core.epsilon
        self.values["CYCLES_ACT"], self.values["CYCLES_UPDATE"] = result.cycles_act, result.cycles_update

    @staticmethod
    def _act_flags(result: model.ActResult) -> S.Status:
        flags = S.Status.SATURATED if result.saturated else S.Status(0)
        return flags | (S.Status.ERR_CONFIG if result.rejected else S.Status(0))

    def _act(self, words: np.ndarray, partial: bool) -> None:
        per_record = self.spec.state_record_words(self.core.n_dims)
        n = len(words) // per_record
        flags = S.Status.ERR_STREAM if partial or n * per_record != len(words) else S.Status(0)
        keys, record_flags, rewards, states = model.unpack_states(
            words[: n * per_record].reshape(n, per_record), self.core.n_dims
        )
        result = self.core.act(keys, record_flags, rewards, states)
        self._act_registers(result)
        flags |= self._act_flags(result)
        values = result.q_values if self.core.emit_values else None
        out = model.pack_actions(result.actions, result.explored, result.q_chosen, values, self.core.n_actions)
        self.drain(out.ravel(), result.cycles, flags)
