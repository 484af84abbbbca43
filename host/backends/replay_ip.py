"""The replay core as an emulated IP: its registers (from ``spec.py``), its streams and its control FSM.

Behaviour seen from the bus, one operation per ``CTRL.START`` (``CTRL.MODE`` selects it, see
:class:`~pynq_rl.overlay.spec.ReplayMode`); the state is the bit-exact model
:class:`~pynq_rl.overlay.models.replay.SumTree`:

* SET: set records are accepted until TLAST and applied in order; an out-of-range index drops its record and sets
  ``ERR_CONFIG``, an oversized code saturates and sets ``SATURATED``; a stream that is not whole 8-byte records
  sets ``ERR_STREAM`` (its whole records are still applied, as the hardware does beat by beat). No output.
* SAMPLE: refused with ``DONE | ERR_CONFIG`` when ``COUNT`` is outside ``[1, max_count]``, ``COUNT * STRIDE >=
  2**32`` or ``TOTAL == 0``; otherwise ``COUNT`` result records leave on the output stream (TLAST on the last).
* SAMPLE_UNIFORM: the same checks; then ``COUNT`` uniform records are expected up to TLAST. A stream that ends
  early yields the results of the records received (TLAST on the last of them) and ``ERR_STREAM``; extra records
  are swallowed up to TLAST with ``ERR_STREAM``.
* DUMP: every leaf code as a ``uint32``, index order. CLEAR: everything 0.
* ``SEED`` writes reseed the PRNG; reads of ``SEED``, ``TOTAL``, ``TOTAL_HI`` and ``NONZERO`` are live.
* ``CYCLES``: records + the spec's pipeline depth of that operation (what the HDL takes with a stream that
  delivers one beat per cycle).
* ``CTRL.SOFT_RESET`` aborts the operation and clears STATUS; the stored priorities survive it (the memories
  have no reset), as on the board.
"""
from __future__ import annotations

import enum

import numpy as np

from ...overlay import spec as S
from ...overlay.models import replay as model
from .regfile import RegisterFile

__all__ = ["ReplayCoreIP"]

_RECORD = 8


class t_state(enum.Enum):
    """Control FSM states."""

    IDLE = 0
    LOAD = 1
    DRAIN = 2


class ReplayCoreIP(RegisterFile):
    """Emulated replay core with build parameters ``spec`` (a fresh, empty sum tree)."""

    def __init__(self, spec: S.ReplaySpec) -> None:
        self.spec = spec
        self.tree = model.SumTree(spec)
        super().__init__(S.REPLAY_REGISTERS)

    def reset(self) -> None:
        super().reset()
        self.values.update(self.spec.parameter_registers())
        self._abort()

    def _abort(self) -> None:
        self.state = t_state.IDLE
        self._mode = S.ReplayMode.SET
        self._inbox = bytearray()
        self._outbox = np.zeros(0, dtype=np.uint8)

    # -- registers --------------------------------------------------------------------------------------------------
    def read_register(self, name: str) -> int:
        live = {"TOTAL": lambda: self.tree.total & 0xFFFF_FFFF, "TOTAL_HI": lambda: self.tree.total >> 32,
                "NONZERO": lambda: self.tree.nonzero, "SEED": lambda: self.tree.prng_state}
        return live[name]() if name in live else self.values[name]

    def _set_status(self, flags: S.Status) -> None:
        self.values["STATUS"] = int(flags)

    def _finish(self, flags: S.Status = S.Status(0)) -> None:
        self.state = t_state.IDLE
        self._set_status(flags | S.Status.DONE)

    def on_write(self, name: str, value: int) -> None:
        if name == "SEED":
            self.tree.reseed(value)
            return
        if name != "CTRL":
            return
        if value & S.Ctrl.SOFT_RESET:
            self._abort()
            self._set_status(S.Status(0))
            return
        if value & S.Ctrl.START and self.state == t_state.IDLE:
            self._start(self.field("CTRL", "MODE"))

    def _start(self, mode: int) -> None:
        self.values["CYCLES"] = 0
        self._set_status(S.Status.BUSY)  # START clears DONE and the sticky flags
        if mode not in {m.value for m in S.ReplayMode}:
            self._finish(S.Status.ERR_CONFIG)
            return
        self._mode = S.ReplayMode(mode)
        self._inbox = bytearray()
        if self._mode == S.ReplayMode.CLEAR:
            self.tree.clear()
            self.values["CYCLES"] = self.spec.capacity // self.spec.k + 1
            self._finish()
        elif self._mode == S.ReplayMode.DUMP:
            self._drain(self.tree.dump().view(np.uint8), self.spec.capacity // 2 + 1)
        elif self._mode == S.ReplayMode.SET:
            self.state = t_state.LOAD
            self._set_status(S.Status.BUSY)
        elif not self._sample_config_ok():
            self._finish(S.Status.ERR_CONFIG)
        elif self._mode == S.ReplayMode.SAMPLE:
            self._sample(None)
        else:
            self.state = t_state.LOAD
            self._set_status(S.Status.BUSY)

    def _sample_config_ok(self) -> bool:
        count, stride = self.values["COUNT"], self.values["STRIDE"]
        return 1 <= count <= self.spec.max_count and count * stride < 1 << 32 and self.tree.total > 0

    def _sample(self, uniforms: np.ndarray | None, flags: S.Status = S.Status(0)) -> None:
        count = self.values["COUNT"] if uniforms is None else len(uniforms)
        stride = self.values["STRIDE"]
        if uniforms is None:
            uniforms, self.tree.prng_state = model.xorshift32_stream(self.tree.prng_state, count)
        indices, codes = self.tree.find(model.sample_targets(self.tree.total, uniforms, stride))
        records = model.pack_results(indices, codes)
        self._drain(records.view(np.uint8), count + self.spec.sample_depth, flags)

    def _drain(self, data: np.ndarray, cycles: int, flags: S.Status = S.Status(0)) -> None:
        self.values["CYCLES"] = cycles
        if len(data) == 0:
            self._finish(flags)
            return
        self._outbox = data
        self.state = t_state.DRAIN
        self._set_status(S.Status.BUSY | flags)

    # -- AXI-Stream endpoints (the DMA model calls these) ---------------------------------------------------------
    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Accept records while loading (back-pressure otherwise); TLAST closes the operation."""
        if self.state != t_state.LOAD:
            return 0
        self._inbox += data.tobytes()
        if last:
            self._close_input()
        return len(data)

    def _close_input(self) -> None:
        whole = len(self._inbox) // _RECORD * _RECORD
        flags = S.Status.ERR_STREAM if whole != len(self._inbox) else S.Status(0)
        records = np.frombuffer(bytes(self._inbox[:whole]), dtype="<u8")
        self._inbox = bytearray()
        if self._mode == S.ReplayMode.SET:
            indices, codes = model.unpack_set(records)
            result = self.tree.set(indices, codes)
            flags |= S.Status.SATURATED if result.saturated else S.Status(0)
            flags |= S.Status.ERR_CONFIG if result.rejected else S.Status(0)
            self.values["CYCLES"] = len(records) + self.spec.set_depth
            self._finish(flags)
            return
        count = self.values["COUNT"]
        if len(records) != count:
            flags |= S.Status.ERR_STREAM
        uniforms = (records[:count] & np.uint64(0xFFFF_FFFF)).astype(np.uint32)
        if len(uniforms) == 0:
            self._finish(flags)
        else:
            self._sample(uniforms, flags)

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Emit up to ``max_bytes`` output bytes while draining; TLAST with the final byte."""
        if self.state != t_state.DRAIN:
            return np.zeros(0, dtype=np.uint8), False
        data, self._outbox = self._outbox[:max_bytes], self._outbox[max_bytes:]
        last = len(self._outbox) == 0
        if last:
            self._finish(S.Status(self.values["STATUS"]) & ~S.Status.BUSY)
        return data, last
