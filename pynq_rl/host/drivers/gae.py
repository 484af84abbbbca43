"""``GaeCore``: the driver of the GAE core (HEPPO), bound by VLNV, identical on every backend.

One call, :meth:`GaeCore.compute`, means "GAE of these float inputs". The driver validates them, encodes them (8-bit
codes in runs of RUN_LENGTH steps per lane, each run with its own scale and offset, by default; HEPPO's 8-bit block
standardization with one block over everything one operation holds; or raw fixed point), streams all
LANES-wide lane-batches (the BATCHES register) of all T steps (the CHUNKS register) through the core in one
operation, one DMA transfer each way, waits for DONE with a deadline and decodes the results back to float32. An
operation holds as many lane-batches as the DMA's largest transfer and the batch counter allow (all of them for any
rollout below tens of megabytes); a bigger rollout takes one operation per group of lane-batches.

Any T is one operation: the core chains T_MAX chunks itself. Each lane-batch streams its chunks from the latest
to the earliest (:meth:`~pynq_rl.overlay.spec.GaeSpec.stream_rows`) and gets its results back newest first
(:meth:`~pynq_rl.overlay.spec.GaeSpec.output_rows`: the core drains a chunk while it writes it back; decoding flips
them with a view); the PEs keep their recursion state from one chunk to the next, so the result is the
one-long-sequence recursion bit for bit (no carry folded into a bootstrap value, no extra rounding); in q8-runs mode
the runs go on across the chunks, and in q8 (block) mode one block (one set of scale registers) covers them all.

Parameter registers are cached (``StreamCore._write_parameter``); the four q8 (block) scale registers, which change
with every rollout, go out as one burst (all four whenever any differs; the other modes leave them alone, as the
core reads them only in q8 block mode; q8-runs carries its scales in the stream). Measured on ``emu``
(``RLOverlay.bus_stats``), steady state, 64 envs x 1024 or 2560 steps on the Pynq-Z2 build: 10 host register calls in
raw and q8-runs mode (5 reads, 5 writes: START and the DMA's), 11 in q8 block mode (the scales' burst, 4 words), and
one DMA transfer each way.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...overlay import fixed
from ...overlay import spec as S
from ...overlay.models import gae as model
from .arguments import float_array, number
from .polling import check_timeout
from .stream_core import StreamCore

__all__ = ["GaeCore", "GaeSaturationWarning", "QUANTIZE_MODES"]


_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)
"""the smallest normal float32: q8 results of inputs below it would be subnormal (fewer bits) or 0"""

#: The q8 dequantization registers, consecutive in the register map (one burst).
_SCALE_REGISTERS = ("R_SCALE", "R_OFFSET", "V_SCALE", "V_OFFSET")


QUANTIZE_MODES = {True: S.GaeMode.Q8_RUNS, "runs": S.GaeMode.Q8_RUNS, "block": S.GaeMode.Q8, False: S.GaeMode.RAW}
"""``compute(quantize=...)`` values and the core mode each selects: True is the default 8-bit mode, q8-runs"""


def _mode_of(quantize: bool | str) -> S.GaeMode:
    """The core mode ``quantize`` names (:data:`QUANTIZE_MODES`), or a ValueError naming the choices."""
    if isinstance(quantize, (bool, np.bool_)) or quantize in ("runs", "block"):
        return QUANTIZE_MODES[bool(quantize) if isinstance(quantize, (bool, np.bool_)) else quantize]
    raise ValueError(f"quantize must be True, False, 'runs' or 'block', not {quantize!r}")


class GaeSaturationWarning(UserWarning):
    """A fixed-point value saturated: the result is clipped, not wrapped, but no longer exact GAE."""


def _check_q8_magnitude(absmax: float, gamma: float, lam: float) -> None:
    """Refuse 8-bit inputs whose float32 results cannot hold their magnitude.

    The 8-bit modes scale every block to its own magnitude (a power-of-two unit), so their error bound is relative to
    it at any scale the float64 model holds; the float32 results keep it only inside float32's normal range. Below
    it every result would be a subnormal or 0, silently outside the bound; above it the advantages would overflow.
    """
    if 0.0 < absmax < _FLOAT32_TINY:
        raise ValueError(
            f"rewards and values reach at most {absmax:g} in magnitude, below {_FLOAT32_TINY:g}, the smallest normal "
            "float32 (the results' type): every result would round to a subnormal or 0; scale them up, or use "
            "quantize=False (raw fixed point, which rounds them to 0 as documented)"
        )
    if not model.advantage_bound(absmax, gamma, lam) <= _FLOAT32_MAX:
        raise ValueError(
            f"rewards and values reach {absmax:g} in magnitude: with gamma={gamma}, lam={lam} the "
            f"advantages could exceed {_FLOAT32_MAX:g}, the largest float32 (the results' type)"
        )


class GaeCore(StreamCore):
    """Driver of the GAE core: ``compute(rewards, values, dones, gamma, lam)`` on the FPGA (or its emulation).

    Not constructed directly: ``pynq.Overlay`` binds it by VLNV to ``<hierarchy>/core`` and it finds its DMA at
    ``<hierarchy>/dma``. Build parameters are read back from the core's registers.

    Attributes
    ----------
    spec : GaeSpec
        Build parameters as the core reports them.
    dma : pynq.lib.dma.DMA
        The AXI DMA that streams this core's input and output.
    timeout_s : float
        Default deadline of one operation (one deadline covers its DMA transfers and the wait for DONE).
    """

    bindto = [S.GAE_VLNV]
    core_name = "gae"
    title = "GAE"

    def __init__(self, description: dict) -> None:
        super().__init__(description)
        fmt = {name: self._field("FORMAT", name) for name in ("DATA_W", "FRAC_BITS", "COEF_FRAC", "CODE_BITS")}
        self.spec = S.GaeSpec(
            lanes=self._reg("LANES"),
            t_max=self._reg("T_MAX"),
            lookahead=self._reg("LOOKAHEAD"),
            code_bits=fmt["CODE_BITS"],
            run_length=self._reg("RUN_LENGTH"),
            data=S.QFormat(fmt["DATA_W"], fmt["FRAC_BITS"]),
            coef=S.QFormat(fmt["COEF_FRAC"] + 1, fmt["COEF_FRAC"], signed=False),
            stream_bytes=self.stream_bytes,
        )

    def _build_parameters(self) -> dict:
        return {
            "lanes": self.spec.lanes,
            "t_max": self.spec.t_max,
            "lookahead": self.spec.lookahead,
            "data_format": str(self.spec.data),
            "coef_format": str(self.spec.coef),
            "code_bits": self.spec.code_bits,
            "run_length": self.spec.run_length,
            "stream_bytes": self.spec.stream_bytes,
        }

    # -- the one call ---------------------------------------------------------------------------------------------
    def compute(
        self,
        rewards,
        values,
        dones,
        gamma: float = 0.99,
        lam: float = 0.95,
        quantize: bool | str = True,
        strict: bool = False,
        timeout_s: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Generalized Advantage Estimation on the core.

        Parameters
        ----------
        rewards : array_like, shape (T, N)
            ``rewards[t, n]``: reward of env n at step t (for a truncated episode, with gamma * V(final obs)
            already folded in).
        values : array_like, shape (T + 1, N)
            ``values[t] = V(s_t)``; ``values[T]`` bootstraps the unfinished tail.
        dones : array_like, shape (T, N)
            1 where env n's episode ended at step t: neither V(s_{t+1}) nor A_{t+1} flows back into step t.
        gamma, lam : float
            Discount and GAE lambda, each in [0, 1].
        quantize : bool or str
            True or ``"runs"``: 8-bit codes, each lane's runs of RUN_LENGTH steps standardized on their own (a scale
            and an offset per lane and run in the stream: 10 bits per element for runs of 32). ``"block"``: HEPPO's
            block standardization, one scale and offset per operation (8 bits per element; its error grows with
            the spread of the whole rollout, measured 4-11x the default's on PPO rollouts). Both are bounded by
            ``models.gae.error_bound`` plus the rounding to float32 of the results (half a float32 ulp). False: raw
            Q15.16 fixed point (saturates beyond +-32768; magnitudes below half its LSB, 2**-17, become 0).
        strict : bool
            Raise instead of warning when a value saturates.
        timeout_s : float or None
            Deadline of each core operation in seconds (board, ``emu``); None uses the driver's
            :attr:`~pynq_rl.host.drivers.stream_core.StreamCore.timeout_s`. On ``rtl`` the deadline is counted in
            simulated cycles (``StreamCore``).

        Returns
        -------
        advantages, returns : np.ndarray
            float32 arrays of shape (T, N); ``returns = advantages + values[:-1]``.

        Raises
        ------
        TypeError
            Non-numeric inputs.
        ValueError
            Mismatched shapes, NaN/inf, gamma or lam outside [0, 1]; in the 8-bit modes, rewards and values whose
            largest magnitude (when not 0) is below float32's smallest normal or whose advantages could pass its
            largest (the results are float32); with ``strict``, saturation.
        TimeoutError
            The core or its DMA did not finish within the deadline.
        RuntimeError
            The core or the DMA reported an error.
        """
        rewards = float_array("rewards", rewards, 2, "(T, N)")
        values = float_array("values", values, 2, "(T + 1, N)")
        dones = float_array("dones", dones, 2, "(T, N)")
        n_steps, n_envs = rewards.shape
        if n_steps < 1 or n_envs < 1:
            raise ValueError(f"rewards must have at least one step and one env, not shape {rewards.shape}")
        if values.shape != (n_steps + 1, n_envs):
            raise ValueError(f"values must have shape (T + 1, N) = {(n_steps + 1, n_envs)}, not {values.shape}")
        if dones.shape != (n_steps, n_envs):
            raise ValueError(f"dones must have shape (T, N) = {(n_steps, n_envs)}, not {dones.shape}")
        if not np.all((dones == 0) | (dones == 1)):
            raise ValueError("dones must be 0 or 1 (or booleans)")
        gamma, lam = number("gamma", gamma, 0.0, 1.0), number("lam", lam, 0.0, 1.0)
        mode = _mode_of(quantize)
        quantize = mode != S.GaeMode.RAW
        absmax = float(max(np.abs(rewards).max(), np.abs(values).max()))
        if quantize:
            _check_q8_magnitude(absmax, gamma, lam)
        timeout_s = self.timeout_s if timeout_s is None else check_timeout(timeout_s)
        dones = dones.astype(np.int64)
        advantages = np.empty((n_steps, n_envs), dtype=np.float32)
        returns = np.empty((n_steps, n_envs), dtype=np.float32)
        saturated = False
        group = self._batches_per_operation(n_steps, mode) * self.spec.lanes
        for env0 in range(0, n_envs, group):
            envs = slice(env0, min(env0 + group, n_envs))
            adv, ret, sat = self._run(
                rewards[:, envs], values[:, envs], dones[:, envs], float(gamma), float(lam), mode, timeout_s
            )
            advantages[:, envs], returns[:, envs] = adv, ret
            saturated |= sat
        if saturated:
            message = (
                "GAE core saturated: a reward, value, advantage or return left the fixed-point range "
                f"({'8-bit codes' if quantize else f'raw {self.spec.data}'}); results are clipped"
            )
            if strict:
                raise ValueError(message)
            warnings.warn(message, GaeSaturationWarning, stacklevel=2)
        return advantages, returns

    # -- one operation through the core ------------------------------------------------------------------------------
    def _batches_per_operation(self, n_steps: int, mode: S.GaeMode) -> int:
        """Lane-batches of ``n_steps`` (all their chunks) that one operation may hold: the core's batch counter and
        the DMA's largest transfer each way bound it.

        Raises
        ------
        ValueError
            One lane-batch of ``n_steps`` alone exceeds the DMA's largest transfer or the chunk counter.
        """
        spec = self.spec
        per_batch = max(spec.input_batch_bytes(mode, n_steps), n_steps * spec.output_record_bytes)
        chunks, _ = spec.chunking(n_steps)
        if per_batch > self._dma_max_bytes or chunks > spec.chunks_max:
            raise ValueError(
                f"T={n_steps} steps: one lane-batch is {per_batch} bytes ({chunks} chunks of T_MAX="
                f"{spec.t_max}), above the DMA's largest transfer ({self._dma_max_bytes} bytes) or "
                f"the core's {spec.chunks_max} chunks; split the rollout over time"
            )
        return max(1, min(spec.batches_max, self._dma_max_bytes // per_batch))

    def _encode(self, rewards, values, dones, gamma, lam, mode):
        """The input stream of one operation in ``mode`` (q8 modes: one working unit over all its lanes), the q8
        block registers (None in the other modes), the working unit and the host-side saturation flag."""
        spec = self.spec
        if mode == S.GaeMode.RAW:
            r_codes, r_sat = fixed.quantize(rewards, spec.data)
            v_codes, v_sat = fixed.quantize(values, spec.data)
            return model.pack_input(spec, mode, r_codes, v_codes, dones), None, 1.0, r_sat or v_sat
        absmax = float(max(np.abs(rewards).max(), np.abs(values).max()))
        unit = model.choose_unit(absmax, gamma, lam, spec.data)
        if mode == S.GaeMode.Q8_RUNS:
            r_runs, v_runs = model.encode_rollout_runs(rewards, values, unit, spec)
            return model.pack_input_runs(spec, r_runs, v_runs, dones), None, unit, False
        r_block, v_block = model.encode_q8(rewards, unit, spec), model.encode_q8(values, unit, spec)
        registers = [r_block.scale, r_block.offset, v_block.scale, v_block.offset]
        return model.pack_input(spec, mode, r_block.codes, v_block.codes, dones), registers, unit, False

    def _run(self, rewards, values, dones, gamma, lam, mode, timeout_s):
        spec = self.spec
        n_steps, n_envs = rewards.shape
        n_batches = model.batches(spec, n_envs)
        n_lanes = n_envs - (n_batches - 1) * spec.lanes
        stream, registers, unit, host_sat = self._encode(rewards, values, dones, gamma, lam, mode)
        n_chunks, first = spec.chunking(n_steps)
        self._check_idle()
        self._write_parameter("T", first)
        self._write_parameter("CHUNKS", n_chunks)
        self._write_parameter("LANES_USED", n_lanes)
        self._write_parameter("BATCHES", n_batches)
        self._write_parameter("GAMMA", int(fixed.quantize(gamma, spec.coef)[0]))
        self._write_parameter("GAMMA_LAMBDA", int(fixed.quantize(gamma * lam, spec.coef)[0]))
        if registers is not None:  # q8 block mode only (START checks them only then)
            self._write_scales(registers)
        out_bytes = n_batches * n_steps * spec.output_record_bytes
        received = self._transfer(
            mode,
            stream,
            out_bytes,
            timeout_s,
            f"T={n_steps}{f' ({n_chunks} chunks)' if n_chunks > 1 else ''}, "
            f"batches={n_batches}, lanes of the last={n_lanes}",
            cycles=spec.cycles(n_steps, n_batches),
        )
        adv_codes, ret_codes = model.unpack_output(
            spec, received.view(model.output_record_dtype(spec)), n_lanes, n_batches
        )
        scale = spec.data.lsb * unit
        return (
            (adv_codes * scale).astype(np.float32),
            (ret_codes * scale).astype(np.float32),
            host_sat or bool(self._last_status & S.Status.SATURATED),
        )

    def _write_scales(self, values: list[int]) -> None:
        """R_SCALE, R_OFFSET, V_SCALE, V_OFFSET (consecutive registers) as one burst when any of them differs from
        what this driver last wrote; the cache then holds all four (it stays coherent: every one was written)."""
        words = [int(value) & 0xFFFF_FFFF for value in values]
        if any(self._parameters.get(name) != word for name, word in zip(_SCALE_REGISTERS, words)):
            self._write_burst(_SCALE_REGISTERS[0], words)
            self._parameters.update(zip(_SCALE_REGISTERS, words))

    def _describe_errors(self, status: S.Status, what: str) -> str:
        messages = []
        if status & S.Status.ERR_CONFIG:
            messages.append(
                f"GAE core refused its configuration (T={self._reg('T')}, CHUNKS={self._reg('CHUNKS')}, "
                f"LANES_USED={self._reg('LANES_USED')}, BATCHES={self._reg('BATCHES')}, GAMMA={self._reg('GAMMA'):#x}, "
                f"GAMMA_LAMBDA={self._reg('GAMMA_LAMBDA'):#x})"
            )
        if status & S.Status.ERR_STREAM:
            messages.append("GAE core input stream ended early or ran long (TLAST misplaced)")
        return "; ".join(messages)
