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
* ``SEED`` writes reseed the PRNG (during an operation, once it ends); reads of ``SEED``, ``TOTAL``, ``TOTAL_HI``
  and ``NONZERO`` are live. ``COUNT`` and ``STRIDE`` are the values at START, as the HDL latches them.
* ``CYCLES``: records + the spec's pipeline depth of that operation (what the HDL takes with a stream that
  delivers one beat per cycle; SAMPLE_UNIFORM 3 less, counted from its first input beat), DUMP capacity/2 + 3
  (``spec.dump_cycles``), CLEAR K**(LEVELS-1).
* ``CTRL.SOFT_RESET`` aborts the operation and clears STATUS; the stored priorities survive it (the memories
  have no reset), as on the board.
"""

from __future__ import annotations

import numpy as np

from ...overlay import spec as S
from ...overlay.models import replay as model
from .stream_ip import StreamCoreIP, StreamState

__all__ = ["ReplayCoreIP"]

_MODES = {mode.value: mode for mode in S.ReplayMode}  # CTRL.MODE value -> the mode (no enum call per START)
_CLEAR, _DUMP, _SAMPLE = S.ReplayMode.CLEAR, S.ReplayMode.DUMP, S.ReplayMode.SAMPLE
# STATUS flags as plain ints: the emulated bus runs every operation from Python, where IntFlag arithmetic costs a
# microsecond per operation
_SATURATED, _ERR_CONFIG, _ERR_STREAM = (int(S.Status.SATURATED), int(S.Status.ERR_CONFIG), int(S.Status.ERR_STREAM))
_SET = S.ReplayMode.SET


class ReplayCoreIP(StreamCoreIP):
    """Emulated replay core with build parameters ``spec`` (a fresh, empty sum tree)."""

    WRITE_EFFECTS = ("SEED",)

    def __init__(self, spec: S.ReplaySpec) -> None:
        self.spec = spec
        self.tree = model.SumTree(spec)
        self._mode = S.ReplayMode.SET
        super().__init__(S.REPLAY_REGISTERS, spec.parameter_registers())

    def read_register(self, name: str) -> int:
        if name == "TOTAL":
            return self.tree.total & 0xFFFF_FFFF
        if name == "TOTAL_HI":
            return self.tree.total >> 32
        if name == "NONZERO":
            return self.tree.nonzero
        if name == "SEED":
            return self.tree.prng_state
        return self.values[name]

    def on_register(self, name: str, value: int) -> None:
        if name == "SEED":
            self.tree.reseed(value)

    def start(self, mode: int) -> None:
        started = _MODES.get(mode)
        if started is None:
            self.finish(_ERR_CONFIG)
            return
        self._mode = started
        if started == _SET:
            self.begin_load()
        elif started == _CLEAR:
            self.tree.clear()
            self.values["CYCLES"] = self.spec.capacity // self.spec.k
            self.finish()
        elif started == _DUMP:
            self.drain(self.tree.dump(), self.spec.dump_cycles)
        elif not self._sample_config_ok():
            self.finish(_ERR_CONFIG)
        elif started == _SAMPLE:
            self._sample(None)
        else:
            self.begin_load()

    def _sample_config_ok(self) -> bool:
        count, stride = self.started["COUNT"], self.started["STRIDE"]
        return 1 <= count <= self.spec.max_count and count * stride < 1 << 32 and self.tree.total > 0

    def _sample(self, uniforms: np.ndarray | None, flags: S.Status | int = 0) -> None:
        count = self.started["COUNT"] if uniforms is None else len(uniforms)
        indices, codes = self.tree.sample(count, uniforms, self.started["STRIDE"])  # None: the PRNG draws them
        # SAMPLE_UNIFORM counts from its first input beat, after the 3 cycles of START checks
        depth = self.spec.sample_depth - (0 if uniforms is None else 3)
        self.drain(model.pack_results(indices, codes), count + depth, flags)

    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """As :meth:`StreamCoreIP.stream_in`; a SET stream offered whole (TLAST with it, nothing buffered before:
        what the emulated DMA does) is applied from the DMA's bytes without the copies of buffering them."""
        if last and self.state == StreamState.LOAD and not self._inbox:
            self.close_input(data)
            return len(data)
        return super().stream_in(data, last)

    def close_input(self, data: bytes | np.ndarray) -> None:
        whole = len(data) // 8 * 8
        flags = _ERR_STREAM if whole != len(data) else 0  # a partial record trailed the whole ones
        if self._mode == _SET:
            # the records' uint32 halves (index, code) as views of the stream's bytes: no unpacking copies
            indices, codes = model.record_words(np.frombuffer(data, dtype="<u4", count=whole // 4))
            result = self.tree.set(indices, codes)
            if result.saturated:
                flags |= _SATURATED
            if result.rejected:
                flags |= _ERR_CONFIG
            self.values["CYCLES"] = whole // 8 + self.spec.set_depth
            self.finish(flags)
            return
        records = np.frombuffer(data, dtype="<u8", count=whole // 8)
        count = self.started["COUNT"]
        if len(records) != count:
            flags |= _ERR_STREAM
        uniforms = (records[:count] & np.uint64(0xFFFF_FFFF)).astype(np.uint32)
        if len(uniforms) == 0:
            self.finish(flags)
        else:
            self._sample(uniforms, flags)
