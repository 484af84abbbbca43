"""The GAE core as an emulated IP: its registers (from ``spec.py``), its streams and its control FSM.

Behaviour seen from the bus, operation by operation (the ``emu`` backend; the ``rtl`` backend serves the same
traffic from the MyHDL simulation):

* ``CTRL.START`` checks the configuration (``1 <= T <= T_MAX``, ``1 <= LANES_USED <= LANES``, coefficients at
  most 1.0, a known MODE). A bad one sets ``DONE | ERR_CONFIG`` and nothing else happens. Otherwise the core is
  ``BUSY`` and accepts ``T + 1`` input records.
* LOAD: stream bytes are accepted while loading; the record count must end exactly at TLAST, else
  ``ERR_STREAM`` (extra bytes are swallowed up to TLAST so the DMA never hangs).
* COMPUTE: the bit-exact model (:func:`pynq_rl.overlay.models.gae.gae_fixed`); ``CYCLES`` = T + pipeline depth,
  ``SATURATED`` if anything saturated.
* DRAIN: ``T`` output records leave on the output stream (TLAST on the last byte); then ``DONE``.
* ``CTRL.SOFT_RESET`` aborts whatever runs, flushes both streams and clears STATUS.
"""
from __future__ import annotations

import enum

import numpy as np

from ...overlay import spec as S
from ...overlay.models import gae as model
from .regfile import RegisterFile

__all__ = ["GaeCoreIP"]


class t_state(enum.Enum):
    """Control FSM states (the HDL enum of the same name)."""

    IDLE = 0
    LOAD = 1
    DRAIN = 2


class GaeCoreIP(RegisterFile):
    """Emulated GAE core with build parameters ``spec``.

    Parameters
    ----------
    spec : GaeSpec
        Build parameters; the read-only parameter registers report them.
    """

    def __init__(self, spec: S.GaeSpec) -> None:
        self.spec = spec
        super().__init__(S.GAE_REGISTERS)

    def reset(self) -> None:
        super().reset()
        self.values.update(self.spec.parameter_registers())
        self._abort()

    def _abort(self) -> None:
        self.state = t_state.IDLE
        self._inbox = bytearray()
        self._expected = 0
        self._overrun = False
        self._outbox = np.zeros(0, dtype=np.uint8)
        self._mode = S.GaeMode.RAW

    def _set_status(self, flags: S.Status) -> None:
        self.values["STATUS"] = int(flags)

    def on_write(self, name: str, value: int) -> None:
        if name != "CTRL":
            return
        if value & S.Ctrl.SOFT_RESET:
            self._abort()
            self._set_status(S.Status(0))
            return
        if value & S.Ctrl.START and self.state == t_state.IDLE:
            self._start(self.field("CTRL", "MODE"))

    def _signed(self, name: str) -> int:
        value = self.values[name]
        return value - (1 << 32) if value & (1 << 31) else value

    def _config_ok(self, mode: int) -> bool:
        one = 1 << self.spec.coef.frac
        scale = self.spec.scale
        scales_ok = mode != S.GaeMode.Q8 or all(scale.min_code <= self._signed(name) <= scale.max_code
                                                for name in ("R_SCALE", "V_SCALE"))
        return (1 <= self.values["T"] <= self.spec.t_max and 1 <= self.values["LANES_USED"] <= self.spec.lanes
                and self.values["GAMMA"] <= one and self.values["GAMMA_LAMBDA"] <= one
                and mode in {m.value for m in S.GaeMode} and scales_ok)

    def _start(self, mode: int) -> None:
        self.values["CYCLES"] = 0
        if not self._config_ok(mode):
            self._set_status(S.Status.DONE | S.Status.ERR_CONFIG)
            return
        self._mode = S.GaeMode(mode)
        self._expected = (self.values["T"] + 1) * self.spec.input_record_bytes(self._mode)
        self._inbox, self._overrun = bytearray(), False
        self.state = t_state.LOAD
        self._set_status(S.Status.BUSY)

    # -- AXI-Stream endpoints (the DMA model calls these) ---------------------------------------------------------
    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Accept input bytes while loading (back-pressure otherwise); TLAST closes the load."""
        if self.state != t_state.LOAD:
            return 0
        room = self._expected - len(self._inbox)
        self._inbox += data[:room].tobytes()
        self._overrun |= len(data) > room
        if last:
            if self._overrun or len(self._inbox) != self._expected:
                self.state = t_state.IDLE
                self._set_status(S.Status.DONE | S.Status.ERR_STREAM)
            else:
                self._compute()
        return len(data)

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Emit up to ``max_bytes`` output bytes while draining; TLAST with the final byte."""
        if self.state != t_state.DRAIN:
            return np.zeros(0, dtype=np.uint8), False
        data, self._outbox = self._outbox[:max_bytes], self._outbox[max_bytes:]
        last = len(self._outbox) == 0
        if last:
            self.state = t_state.IDLE
            self._set_status(S.Status(self.values["STATUS"]) & ~S.Status.BUSY | S.Status.DONE)
        return data, last

    def _compute(self) -> None:
        spec, mode, v = self.spec, self._mode, self.values
        records = np.frombuffer(bytes(self._inbox), dtype=model.input_record_dtype(spec, mode))
        rewards, values, dones = model.unpack_input(spec, mode, records, v["LANES_USED"])
        signed = {name: self._signed(name) for name in ("R_SCALE", "R_OFFSET", "V_SCALE", "V_OFFSET")}
        result = model.gae_fixed(spec, rewards, values, dones, v["GAMMA"], v["GAMMA_LAMBDA"], mode,
                                 signed["R_SCALE"], signed["R_OFFSET"], signed["V_SCALE"], signed["V_OFFSET"])
        self._outbox = model.pack_output(spec, result.advantages, result.returns).view(np.uint8).ravel()
        v["CYCLES"] = result.cycles
        status = S.Status.BUSY | (S.Status.SATURATED if result.saturated else S.Status(0))
        self._set_status(status)
        self.state = t_state.DRAIN
