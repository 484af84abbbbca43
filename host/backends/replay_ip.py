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
  delivers one beat per cycle; SAMPLE_UNIFORM 3 less, counted from its first input beat), DUMP capacity/2 + 3
  (``spec.dump_cycles``), CLEAR K**(LEVELS-1).
* ``CTRL.SOFT_RESET`` aborts the operation and clears STATUS; the stored priorities survive it (the memories
  have no reset), as on the board.
"""
from __future__ import annotations

import numpy as np

from ...overlay import spec as S
from ...overlay.models import replay as model
from .stream_ip import StreamCoreIP

__all__ = ["ReplayCoreIP"]

_MODES = frozenset(mode.value for mode in S.ReplayMode)


class ReplayCoreIP(StreamCoreIP):
    """Emulated replay core with build parameters ``spec`` (a fresh, empty sum tree)."""

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
        if mode not in _MODES:
            self.finish(S.Status.ERR_CONFIG)
            return
        self._mode = S.ReplayMode(mode)
        if self._mode == S.ReplayMode.CLEAR:
            self.tree.clear()
            self.values["CYCLES"] = self.spec.capacity // self.spec.k
            self.finish()
        elif self._mode == S.ReplayMode.DUMP:
            self.drain(self.tree.dump(), self.spec.dump_cycles)
        elif self._mode == S.ReplayMode.SET:
            self.begin_load()
        elif not self._sample_config_ok():
            self.finish(S.Status.ERR_CONFIG)
        elif self._mode == S.ReplayMode.SAMPLE:
            self._sample(None)
        else:
            self.begin_load()

    def _sample_config_ok(self) -> bool:
        count, stride = self.values["COUNT"], self.values["STRIDE"]
        return 1 <= count <= self.spec.max_count and count * stride < 1 << 32 and self.tree.total > 0

    def _sample(self, uniforms: np.ndarray | None, flags: S.Status = S.Status(0)) -> None:
        count = self.values["COUNT"] if uniforms is None else len(uniforms)
        indices, codes = self.tree.sample(count, uniforms, self.values["STRIDE"])  # None: the PRNG draws them
        # SAMPLE_UNIFORM counts from its first input beat, after the 3 cycles of START checks
        depth = self.spec.sample_depth - (0 if uniforms is None else 3)
        self.drain(model.pack_results(indices, codes), count + depth, flags)

    def close_input(self, data: bytes) -> None:
        records, partial = self.words(data)
        flags = S.Status.ERR_STREAM if partial else S.Status(0)
        if self._mode == S.ReplayMode.SET:
            indices, codes = model.unpack_set(records)
            result = self.tree.set(indices, codes)
            flags |= S.Status.SATURATED if result.saturated else S.Status(0)
            flags |= S.Status.ERR_CONFIG if result.rejected else S.Status(0)
            self.values["CYCLES"] = len(records) + self.spec.set_depth
            self.finish(flags)
            return
        count = self.values["COUNT"]
        if len(records) != count:
            flags |= S.Status.ERR_STREAM
        uniforms = (records[:count] & np.uint64(0xFFFF_FFFF)).astype(np.uint32)
        if len(uniforms) == 0:
            self.finish(flags)
        else:
            self._sample(uniforms, flags)
