"""``GaeCore``: the driver of the GAE core (HEPPO), bound by VLNV, identical on every backend.

One call, :meth:`GaeCore.compute`, means "GAE of these float inputs". The driver validates them, splits any
number of steps into T_MAX-long chunks, encodes each chunk (raw fixed point, or HEPPO's 8-bit block
standardization, one block over all environments of the chunk), streams all its LANES-wide lane-batches through the
core in one operation (the BATCHES register: one DMA transfer each way), waits for DONE with a deadline and decodes
the results back to float32. An operation holds as many lane-batches as the DMA's largest transfer and the batch
counter allow (all of them for any rollout below tens of megabytes).

Chunking over time is exact in real arithmetic: the chunk ``[t0, t1)`` is computed with its bootstrap value
replaced by ``V(s_t1) + lambda * A_t1`` (the lambda-return identity), which folds ``gamma*lambda*A_t1`` into
``delta_{t1-1}``. In fixed point it adds one rounding per chunk boundary. Chunking stays in the driver, one operation
per chunk: the carry ``A_t1`` is an output of the later chunk, so the earlier chunk's input cannot be written before
that chunk has run, and the core would need the carry multiply (and, in q8 mode, a requantization of the bootstrap
row) to chain chunks itself. So T <= T_MAX costs one transfer each way; each further T_MAX steps cost one more.
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

__all__ = ["GaeCore", "GaeSaturationWarning"]


_FLOAT32_MAX = float(np.finfo(np.float32).max)


class GaeSaturationWarning(UserWarning):
    """A fixed-point value saturated: the result is clipped, not wrapped, but no longer exact GAE."""


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
        Default deadline of each wait (DONE, each DMA channel).
    """

    bindto = [S.GAE_VLNV]
    core_name = "gae"
    title = "GAE"

    def __init__(self, description: dict) -> None:
        super().__init__(description)
        fmt = {name: self._field("FORMAT", name) for name in ("DATA_W", "FRAC_BITS", "COEF_FRAC", "CODE_BITS")}
        self.spec = S.GaeSpec(lanes=self._reg("LANES"), t_max=self._reg("T_MAX"), lookahead=self._reg("LOOKAHEAD"),
                              code_bits=fmt["CODE_BITS"], data=S.QFormat(fmt["DATA_W"], fmt["FRAC_BITS"]),
                              coef=S.QFormat(fmt["COEF_FRAC"] + 1, fmt["COEF_FRAC"], signed=False),
                              stream_bytes=self.stream_bytes)

    def _build_parameters(self) -> dict:
        return {"lanes": self.spec.lanes, "t_max": self.spec.t_max, "lookahead": self.spec.lookahead,
                "data_format": str(self.spec.data), "coef_format": str(self.spec.coef),
                "code_bits": self.spec.code_bits, "stream_bytes": self.spec.stream_bytes}

    # -- the one call ---------------------------------------------------------------------------------------------
    def compute(self, rewards, values, dones, gamma: float = 0.99, lam: float = 0.95, quantize: bool = True,
                strict: bool = False, timeout_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
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
        quantize : bool
            True: 8-bit block-standardized codes (HEPPO; error bounded by ``models.gae.error_bound``).
            False: raw Q15.16 fixed point (saturates beyond +-32768).
        strict : bool
            Raise instead of warning when a value saturates.
        timeout_s : float or None
            Deadline of each core operation in seconds (board, ``emu``); None uses :attr:`timeout_s`. On ``rtl`` the
            deadline is counted in simulated cycles (``StreamCore``).

        Returns
        -------
        advantages, returns : np.ndarray
            float32 arrays of shape (T, N); ``returns = advantages + values[:-1]``.

        Raises
        ------
        TypeError
            Non-numeric inputs.
        ValueError
            Mismatched shapes, NaN/inf, gamma or lam outside [0, 1]; with ``strict``, saturation.
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
        absmax = float(max(np.abs(rewards).max(), np.abs(values).max()))
        if quantize and not model.advantage_bound(absmax, gamma, lam) <= _FLOAT32_MAX:
            raise ValueError(f"rewards and values reach {absmax:g} in magnitude: with gamma={gamma}, lam={lam} the "
                             f"advantages could exceed {_FLOAT32_MAX:g}, the largest float32 (the results' type)")
        timeout_s = self.timeout_s if timeout_s is None else check_timeout(timeout_s)
        dones = dones.astype(np.int64)
        advantages = np.empty((n_steps, n_envs), dtype=np.float32)
        returns = np.empty((n_steps, n_envs), dtype=np.float32)
        saturated = False
        group = self._batches_per_operation(min(n_steps, self.spec.t_max), quantize) * self.spec.lanes
        carry = None
        for start in reversed(range(0, n_steps, self.spec.t_max)):
            stop = min(start + self.spec.t_max, n_steps)
            chunk_values = values[start:stop + 1].copy()
            if carry is not None:
                chunk_values[-1] += float(lam) * carry
            for env0 in range(0, n_envs, group):
                envs = slice(env0, min(env0 + group, n_envs))
                adv, ret, sat = self._run(rewards[start:stop, envs], chunk_values[:, envs], dones[start:stop, envs],
                                          float(gamma), float(lam), quantize, timeout_s)
                advantages[start:stop, envs], returns[start:stop, envs] = adv, ret
                saturated |= sat
            carry = advantages[start].astype(np.float64)
        if saturated:
            message = ("GAE core saturated: a reward, value, advantage or return left the fixed-point range "
                       f"({'8-bit block codes' if quantize else f'raw {self.spec.data}'}); results are clipped")
            if strict:
                raise ValueError(message)
            warnings.warn(message, GaeSaturationWarning, stacklevel=2)
        return advantages, returns

    # -- one operation through the core ------------------------------------------------------------------------------
    def _batches_per_operation(self, n_steps: int, quantize: bool) -> int:
        """Lane-batches of ``n_steps`` that one operation may hold: the core's batch counter and the DMA's
        largest transfer each way bound it."""
        spec = self.spec
        mode = S.GaeMode.Q8 if quantize else S.GaeMode.RAW
        per_batch = max((n_steps + 1) * spec.input_record_bytes(mode), n_steps * spec.output_record_bytes)
        return max(1, min(spec.batches_max, self._dma_max_bytes // per_batch))

    def _encode(self, rewards, values, gamma, lam, quantize):
        """Integer codes + dequantization registers + working unit for one operation (one q8 block over all its
        lanes); host-side saturation flag."""
        spec = self.spec
        if quantize:
            absmax = float(max(np.abs(rewards).max(), np.abs(values).max()))
            unit = model.choose_unit(absmax, gamma, lam, spec.data)
            r_block, v_block = model.encode_q8(rewards, unit, spec), model.encode_q8(values, unit, spec)
            regs = {"R_SCALE": r_block.scale, "R_OFFSET": r_block.offset,
                    "V_SCALE": v_block.scale, "V_OFFSET": v_block.offset}
            return S.GaeMode.Q8, r_block.codes, v_block.codes, regs, unit, False
        r_codes, r_sat = fixed.quantize(rewards, spec.data)
        v_codes, v_sat = fixed.quantize(values, spec.data)
        regs = {"R_SCALE": 0, "R_OFFSET": 0, "V_SCALE": 0, "V_OFFSET": 0}
        return S.GaeMode.RAW, r_codes, v_codes, regs, 1.0, r_sat or v_sat

    def _run(self, rewards, values, dones, gamma, lam, quantize, timeout_s):
        spec = self.spec
        n_steps, n_envs = rewards.shape
        n_batches = model.batches(spec, n_envs)
        n_lanes = n_envs - (n_batches - 1) * spec.lanes
        mode, r_codes, v_codes, regs, unit, host_sat = self._encode(rewards, values, gamma, lam, quantize)
        records = model.pack_input(spec, mode, r_codes, v_codes, dones)
        self._check_idle()
        self._write_parameter("T", n_steps)
        self._write_parameter("LANES_USED", n_lanes)
        self._write_parameter("BATCHES", n_batches)
        self._write_parameter("GAMMA", fixed.quantize(gamma, spec.coef)[0])
        self._write_parameter("GAMMA_LAMBDA", fixed.quantize(gamma * lam, spec.coef)[0])
        for name, value in regs.items():
            self._write_parameter(name, value)
        out_bytes = n_batches * n_steps * spec.output_record_bytes
        received = self._transfer(mode, records, out_bytes, timeout_s,
                                  f"T={n_steps}, batches={n_batches}, lanes of the last={n_lanes}",
                                  cycles=spec.cycles(n_steps, n_batches))
        adv_codes, ret_codes = model.unpack_output(spec, received.view(model.output_record_dtype(spec)), n_lanes,
                                                   n_batches)
        scale = spec.data.lsb * unit
        return ((adv_codes * scale).astype(np.float32), (ret_codes * scale).astype(np.float32),
                host_sat or bool(self._last_status & S.Status.SATURATED))

    def _describe_errors(self, status: S.Status, what: str) -> str:
        messages = []
        if status & S.Status.ERR_CONFIG:
            messages.append(f"GAE core refused its configuration (T={self._reg('T')}, "
                            f"LANES_USED={self._reg('LANES_USED')}, BATCHES={self._reg('BATCHES')}, GAMMA={self._reg('GAMMA'):#x}, "
                            f"GAMMA_LAMBDA={self._reg('GAMMA_LAMBDA'):#x})")
        if status & S.Status.ERR_STREAM:
            messages.append("GAE core input stream ended early or ran long (TLAST misplaced)")
        return "; ".join(messages)
