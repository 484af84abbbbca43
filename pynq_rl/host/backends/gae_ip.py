"""The GAE core as an emulated IP: its registers (from ``spec.py``), its streams and its control FSM.

Behaviour seen from the bus, operation by operation (the ``emu`` backend; the ``rtl`` backend serves the same
traffic from the MyHDL simulation):

* ``CTRL.START`` checks the configuration (``1 <= T <= T_MAX``, ``1 <= LANES_USED <= LANES``,
  ``1 <= BATCHES <= batches_max``, ``1 <= CHUNKS <= chunks_max``, coefficients at most 1.0, a known MODE). A bad
  one sets ``DONE | ERR_CONFIG`` and nothing else happens. Otherwise the operation's parameters are the registers'
  values at START (writes while BUSY take effect at the next START, as in the HDL) and the core is ``BUSY``; it accepts
  ``BATCHES x (S + 1)`` input records, ``S = T + (CHUNKS - 1) x T_MAX`` steps per lane-batch (its chunks latest
  first, :meth:`~pynq_rl.overlay.spec.GaeSpec.stream_rows`), in q8-runs mode with two header records ahead of
  every run of RUN_LENGTH records.
* LOAD: stream bytes are accepted while loading; the record count must end exactly at TLAST, else
  ``ERR_STREAM`` (extra bytes are swallowed up to TLAST so the DMA never hangs).
* COMPUTE: the bit-exact model (:func:`pynq_rl.overlay.models.gae.gae_fixed`) over all the batches' lanes;
  the chunks of a lane-batch are one long recursion. ``CYCLES`` = :meth:`~pynq_rl.overlay.spec.GaeSpec.cycles`,
  ``SATURATED`` if anything saturated.
* DRAIN: ``BATCHES x S`` output records leave on the output stream (TLAST on the last byte); then ``DONE``.

The emulation sees the whole input at TLAST, so it cannot tell a TLAST inside an earlier batch from a short stream;
both are ``ERR_STREAM``, as in the HDL.
* ``CTRL.SOFT_RESET`` aborts whatever runs, flushes both streams and clears STATUS.
"""

from __future__ import annotations

import numpy as np

from ...overlay import spec as S
from ...overlay.models import gae as model
from .stream_ip import StreamCoreIP

__all__ = ["GaeCoreIP"]


class GaeCoreIP(StreamCoreIP):
    """Emulated GAE core with build parameters ``spec``.

    Parameters
    ----------
    spec : GaeSpec
        Build parameters; the read-only parameter registers report them.
    """

    def __init__(self, spec: S.GaeSpec) -> None:
        self.spec = spec
        self._mode = S.GaeMode.RAW
        super().__init__(S.GAE_REGISTERS, spec.parameter_registers())

    def _signed(self, name: str, values: dict[str, int] | None = None) -> int:
        value = (self.values if values is None else values)[name]
        return value - (1 << 32) if value & (1 << 31) else value

    def _config_ok(self, mode: int) -> bool:
        one = 1 << self.spec.coef.frac
        scale = self.spec.scale
        scales_ok = mode != S.GaeMode.Q8 or all(
            scale.min_code <= self._signed(name) <= scale.max_code for name in ("R_SCALE", "V_SCALE")
        )
        return (
            1 <= self.values["T"] <= self.spec.t_max
            and 1 <= self.values["LANES_USED"] <= self.spec.lanes
            and 1 <= self.values["BATCHES"] <= self.spec.batches_max
            and 1 <= self.values["CHUNKS"] <= self.spec.chunks_max
            and self.values["GAMMA"] <= one
            and self.values["GAMMA_LAMBDA"] <= one
            and mode in {m.value for m in S.GaeMode}
            and scales_ok
        )

    def start(self, mode: int) -> None:
        if not self._config_ok(mode):
            self.finish(S.Status.ERR_CONFIG)
            return
        self._mode = S.GaeMode(mode)
        self.begin_load()

    def close_input(self, data: bytes) -> None:
        """TLAST: exactly BATCHES x (S + 1) records (and in q8-runs mode their runs' header
        records), or ERR_STREAM (the bytes up to TLAST were swallowed, so the DMA
        never hangs)."""
        spec, mode, v = self.spec, self._mode, self.started  # the registers at START
        n_batches = v["BATCHES"]
        n_steps = v["T"] + (v["CHUNKS"] - 1) * spec.t_max
        expected = n_batches * spec.input_batch_bytes(mode, n_steps)
        if len(data) != expected:
            self.finish(S.Status.ERR_STREAM)
            return
        scales: tuple[int | np.ndarray, ...]  # R_SCALE, R_OFFSET, V_SCALE, V_OFFSET
        if mode == S.GaeMode.Q8_RUNS:  # every element's scale and offset from its run's header records
            stream = np.frombuffer(data, dtype=np.uint8)
            rewards, values, dones, *scales_per_element = model.unpack_input_runs(
                spec, stream, n_steps, v["LANES_USED"], n_batches
            )
            scales = tuple(scales_per_element)
        else:
            records = np.frombuffer(data, dtype=model.input_record_dtype(spec, mode))
            rewards, values, dones = model.unpack_input(spec, mode, records, v["LANES_USED"], n_batches)
            scales = tuple(self._signed(name, v) for name in ("R_SCALE", "R_OFFSET", "V_SCALE", "V_OFFSET"))
        r_scale, r_offset, v_scale, v_offset = scales
        result = model.gae_fixed(
            spec, rewards, values, dones, v["GAMMA"], v["GAMMA_LAMBDA"], mode, r_scale, r_offset, v_scale, v_offset
        )
        output = model.pack_output(spec, result.advantages, result.returns)
        self.drain(output, result.cycles, S.Status.SATURATED if result.saturated else S.Status(0))
