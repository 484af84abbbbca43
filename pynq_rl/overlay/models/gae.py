r"""Bit-exact model of the GAE core (HEPPO): the arithmetic contract every other layer is checked against.

Generalized Advantage Estimation (Schulman et al., 2016) over a rollout of ``T`` steps and ``N`` lanes:

.. math::

    \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

where ``d_t = 1`` when the episode ended at step ``t`` (neither ``V_{t+1}`` nor ``A_{t+1}`` flows back) and
``V_T`` bootstraps the unfinished tail. Special cases (SB3): lambda = 1 gives the bootstrapped discounted return
minus V; lambda = 0 gives the one-step TD error.

The core computes it with a **k-step lookahead** (HEPPO eq. 10/11) so the loop-carried dependency spans k cycles::

    A_t = delta_t + sum_{j=1}^{k-1} P_j(t) delta_{t+j} + P_k(t) A_{t+k},
    P_j(t) = C**j * prod_{i=0}^{j-1} (1 - d_{t+i}),        C = gamma * lambda

Fixed point (formats in :class:`~pynq_rl.overlay.spec.GaeSpec`; DATA = Q15.16 in int32, COEF = UQ1.23), every
product rounded half up (:func:`~pynq_rl.overlay.fixed.rshift_round`) and every sum saturated to DATA:

1. inputs: raw mode takes DATA words; the q8 modes dequantize ``x = sat(code * SCALE + OFFSET)`` (exact product),
   with one SCALE and OFFSET per operation (q8) or per lane and run of RUN_LENGTH records (q8-runs);
2. ``gv_t = rnd(GAMMA * V_{t+1})`` or 0 when ``d_t``; ``delta_t = sat(r_t + gv_t - V_t)``;
3. ``C**j`` codes from :meth:`GaeSpec.lookahead_powers`; each term ``rnd(C**j * delta_{t+j})`` (0 past ``T``);
4. ``A_t = sat(delta_t + sum_j terms + rnd(C**k * A_{t+k}))``; ``R_t = sat(A_t + V_t)``.

Two implementations share these primitives and must agree bit for bit (tested): a numpy path vectorized over
lanes and over the k independent chains of the lookahead, and, where numba is installed, a compiled loop that is
an order of magnitude faster. Both are deterministic integer code, so they cannot drift apart silently.

The 8-bit encodings, whose rounding is part of the contract, are in :mod:`~pynq_rl.overlay.models.gae_encoding`
(:func:`encode_q8`, HEPPO's block standardization; :func:`encode_runs`, one block per lane and run of records, the
default) and the stream formats in :mod:`~pynq_rl.overlay.models.gae_stream`; this module re-exports both, so
``models.gae`` is the one name a caller needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import fixed
from ..spec import GaeMode, GaeSpec, QFormat
from .gae_encoding import (
    Q8Block,
    Q8Runs,
    advantage_bound,
    choose_unit,
    encode_q8,
    encode_rollout_runs,
    encode_runs,
)
from .gae_stream import (
    batches,
    input_record_dtype,
    output_record_dtype,
    pack_input,
    pack_input_runs,
    pack_output,
    unpack_input,
    unpack_input_runs,
    unpack_output,
)

try:  # numba is optional: the numpy path gives identical bits where no wheel exists
    import numba as _numba
except ImportError:  # pragma: no cover - exercised on machines without numba
    _numba = None  # type: ignore[assignment]  # the numpy path checks for None

__all__ = [
    "GaeResult",
    "Q8Block",
    "Q8Runs",
    "gae_fixed",
    "encode_q8",
    "encode_runs",
    "encode_rollout_runs",
    "choose_unit",
    "advantage_bound",
    "gae_float64",
    "error_bound",
    "input_record_dtype",
    "output_record_dtype",
    "batches",
    "pack_input",
    "unpack_input",
    "pack_input_runs",
    "unpack_input_runs",
    "pack_output",
    "unpack_output",
    "HAVE_NUMBA",
]

HAVE_NUMBA = _numba is not None
"""whether numba imported: the compiled paths are used, with bits identical to the numpy ones"""


@dataclass(frozen=True)
class GaeResult:
    """Output of one core operation (integer DATA codes, as they leave the core)."""

    advantages: np.ndarray
    """A_t codes, shape (T, N), int64"""
    returns: np.ndarray
    """R_t = A_t + V_t codes, shape (T, N), int64"""
    saturated: bool
    """any dequantized input, delta, A or R saturated (the STATUS.SATURATED flag)"""
    cycles: int
    """cycles of the compute phases (the CYCLES register): ``B x (T + CHUNKS x pipeline_depth)`` for N envs in
    ``B = ceil(N / LANES)`` lane-batches of ``CHUNKS = ceil(T / T_MAX)`` chunks (:meth:`GaeSpec.cycles`)"""


def gae_float64(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 reference GAE (the equation in the module docstring, one step at a time)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    not_done = 1.0 - np.asarray(dones, dtype=np.float64)
    advantages = np.zeros_like(rewards)
    lastgaelam = np.zeros(rewards.shape[1:], dtype=np.float64)
    for t in reversed(range(rewards.shape[0])):
        delta = rewards[t] + gamma * not_done[t] * values[t + 1] - values[t]
        lastgaelam = delta + gamma * lam * not_done[t] * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values[:-1]


def error_bound(
    spec: GaeSpec,
    gamma: float,
    lam: float,
    unit: float,
    r_error: float,
    v_error: float,
    delta_absmax: float,
    adv_absmax: float,
) -> float:
    """Worst-case ``|model - float64 reference|`` of advantages and returns, in input units.

    Per step the core injects at most ``e = r_error + (1 + gamma) v_error`` from its inputs, half an LSB per
    rounded product, and coefficient error ``|GAMMA - gamma| * max|V|`` (folded into ``e`` via ``adv_absmax`` as
    a magnitude bound on values too). The lookahead recursion ``A_t = sum_j P_j delta_{t+j} + P_k A_{t+k}``
    contracts errors by ``C**k`` every k steps, so with ``|P_j - C**j| <= (j + 1) 2**-COEF_FRAC``::

        E <= [ sum_{j<k} C**j e + k/2 lsb + sum_{j<k} dP_j |delta| + dP_k |A| ] / (1 - C**k) + v_error + lsb/2

    (the last terms for returns ``R = A + V``). Arguments ``delta_absmax`` / ``adv_absmax`` bound ``|delta|`` and
    ``|A|`` in input units. Returns a float in input units.
    """
    lsb = spec.data.lsb * unit
    coef_lsb = spec.coef.lsb
    c = gamma * lam
    k = spec.lookahead
    e = r_error + (1.0 + gamma) * v_error + 0.5 * lsb + 0.5 * coef_lsb * adv_absmax
    numerator = sum(c**j for j in range(k)) * e + 0.5 * k * lsb
    numerator += sum((j + 1) * coef_lsb * delta_absmax for j in range(1, k)) + (k + 1) * coef_lsb * adv_absmax
    contraction = 1.0 - c**k
    if contraction <= 0.0:  # gamma*lambda == 1: errors add up over the whole rollout
        return float("inf")
    return numerator / contraction + v_error + 0.5 * lsb


def _minmax_numpy(codes: np.ndarray) -> tuple[int, int]:
    return int(codes.min()), int(codes.max())


def _minmax_loop(codes):
    """(min, max) of a 2-D array in one pass (numpy needs two)."""
    lo = hi = codes[0, 0]
    for i in range(codes.shape[0]):
        for j in range(codes.shape[1]):
            x = codes[i, j]
            lo = min(lo, x)
            hi = max(hi, x)
    return lo, hi


_minmax = _numba.njit(nogil=True)(_minmax_loop) if HAVE_NUMBA else _minmax_numpy


_DONE_FORMAT = QFormat(1, 0, signed=False)


def _check_codes(name: str, codes: np.ndarray, fmt: QFormat) -> None:
    if not codes.size:
        return
    lo, hi = _minmax(codes)
    if lo < fmt.min_code or hi > fmt.max_code:
        raise ValueError(f"{name} codes must lie in [{fmt.min_code}, {fmt.max_code}] ({fmt}), not [{lo}, {hi}]")


def gae_fixed(
    spec: GaeSpec,
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    gamma_code: int,
    gamma_lambda_code: int,
    mode: GaeMode = GaeMode.RAW,
    r_scale: int | np.ndarray = 0,
    r_offset: int | np.ndarray = 0,
    v_scale: int | np.ndarray = 0,
    v_offset: int | np.ndarray = 0,
    use_numba: bool | None = None,
) -> GaeResult:
    """Run one GAE operation on integer codes exactly as the core does.

    Parameters
    ----------
    spec : GaeSpec
        Build parameters (formats, lookahead k).
    rewards, values, dones : np.ndarray
        Integer codes, shapes (T, N), (T + 1, N), (T, N): DATA codes in raw mode, CODE_BITS codes in q8 modes;
        dones are 0/1. N may be anything: the core runs it as ``ceil(N / LANES)`` lane-batches of one operation
        (BATCHES), which only CYCLES sees. T may be anything too: beyond T_MAX the core runs each lane-batch as
        CHUNKS chunks whose recursion state carries over, so the result is this one long recursion and again only
        CYCLES sees the chunks (:meth:`GaeSpec.cycles`).
    gamma_code, gamma_lambda_code : int
        GAMMA and GAMMA_LAMBDA register values (COEF format).
    mode : GaeMode
        RAW, Q8 or Q8_RUNS.
    r_scale, r_offset, v_scale, v_offset : int or np.ndarray
        Dequantization codes (DATA format; scales within :attr:`GaeSpec.scale`): the four q8 registers (ints), or
        in q8-runs mode one code per element (arrays shaped like rewards and values: :meth:`Q8Runs.expanded`, or
        :func:`unpack_input_runs`); ignored in raw mode.
    use_numba : bool or None
        Force the compiled (True) or numpy (False) path; None picks numba where installed.

    Returns
    -------
    GaeResult

    Raises
    ------
    ValueError
        If shapes disagree, codes are out of their format's range or a register is out of range: the same
        conditions the core flags with STATUS.ERR_CONFIG.
    """
    rewards = np.asarray(rewards, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    dones = np.asarray(dones, dtype=np.int64)
    if rewards.ndim != 2 or values.shape != (rewards.shape[0] + 1, rewards.shape[1]) or dones.shape != rewards.shape:
        raise ValueError(
            f"expected rewards (T, N), values (T + 1, N), dones (T, N), not "
            f"{rewards.shape}, {values.shape}, {dones.shape}"
        )
    _check_codes("done", dones, _DONE_FORMAT)
    for name, code in (("GAMMA", gamma_code), ("GAMMA_LAMBDA", gamma_lambda_code)):
        if not spec.coef.min_code <= code <= 1 << spec.coef.frac:
            raise ValueError(f"{name} must be a coefficient code in [0, {1 << spec.coef.frac}], not {code!r}")
    data = spec.data
    saturated = False
    if GaeMode(mode) in (GaeMode.Q8, GaeMode.Q8_RUNS):
        _check_codes("reward", rewards, spec.code)
        _check_codes("value", values, spec.code)
        per_element = GaeMode(mode) == GaeMode.Q8_RUNS
        checks = (
            ("R_SCALE", r_scale, spec.scale, rewards.shape),
            ("R_OFFSET", r_offset, data, rewards.shape),
            ("V_SCALE", v_scale, spec.scale, values.shape),
            ("V_OFFSET", v_offset, data, values.shape),
        )
        for name, reg, fmt, shape in checks:
            if per_element:
                reg = np.asarray(reg, dtype=np.int64)
                if reg.shape != shape:
                    raise ValueError(f"{name} must have one code per element, shape {shape}, not {reg.shape}")
                _check_codes(name, reg, fmt)
            elif not fmt.min_code <= reg <= fmt.max_code:
                raise ValueError(f"{name} must be a code in [{fmt.min_code}, {fmt.max_code}], not {reg!r}")
        rewards, sat_r = fixed.saturate(rewards * r_scale + r_offset, data)
        values, sat_v = fixed.saturate(values * v_scale + v_offset, data)
        saturated = sat_r or sat_v
    else:
        _check_codes("reward", rewards, data)
        _check_codes("value", values, data)
    powers = np.asarray(spec.lookahead_powers(gamma_lambda_code), dtype=np.int64)
    if use_numba is None:
        use_numba = HAVE_NUMBA
    if use_numba and not HAVE_NUMBA:
        raise RuntimeError("use_numba=True but numba is not installed (pip install 'pynq-rl[fast]')")
    kernel = _gae_numba if use_numba else _gae_numpy
    advantages, returns, sat = kernel(
        rewards, values, dones, int(gamma_code), powers, spec.coef.frac, data.min_code, data.max_code
    )
    cycles = spec.cycles(rewards.shape[0], batches(spec, rewards.shape[1]))
    return GaeResult(advantages=advantages, returns=returns, saturated=saturated or bool(sat), cycles=cycles)


def _gae_numpy(rewards, values, dones, gamma, powers, cf, lo, hi):
    """The numpy path: deltas and lookahead sums vectorized over (T, N); the recursion over blocks of k rows."""
    rnd, clamp = fixed.rshift_round, fixed.clamp
    n_steps, n_lanes = rewards.shape
    k = len(powers) - 1
    alive = 1 - dones
    gv = rnd(gamma * values[1:], cf) * alive
    raw_delta = rewards + gv - values[:-1]
    delta = clamp(raw_delta, lo, hi)
    sat = bool(np.any(delta != raw_delta))
    # partial[t] = delta_t + sum_{j=1}^{k-1} rnd(C**j prod_{i<j}(1 - d_{t+i}) delta_{t+j}); zero beyond T.
    padded_delta = np.zeros((n_steps + k, n_lanes), dtype=np.int64)
    padded_delta[:n_steps] = delta
    padded_alive = np.zeros((n_steps + k, n_lanes), dtype=np.int64)
    padded_alive[:n_steps] = alive
    partial = delta.copy()
    chain = np.ones((n_steps, n_lanes), dtype=np.int64)
    for j in range(1, k):
        chain = chain * padded_alive[j - 1 : j - 1 + n_steps]
        partial += rnd(powers[j] * chain * padded_delta[j : j + n_steps], cf)
    tail_coef = powers[k] * chain * padded_alive[k - 1 : k - 1 + n_steps]
    # A_t = sat(partial_t + rnd(P_k(t) A_{t+k})): rows t..t+k-1 depend only on rows >= t+k, so go back k at a time.
    adv = np.zeros((n_steps + k, n_lanes), dtype=np.int64)
    for stop in range(n_steps, 0, -k):
        start = max(stop - k, 0)
        raw_adv = partial[start:stop] + rnd(tail_coef[start:stop] * adv[start + k : stop + k], cf)
        adv[start:stop] = clamp(raw_adv, lo, hi)
        sat = sat or bool(np.any(adv[start:stop] != raw_adv))
    adv = adv[:n_steps]
    raw_ret = adv + values[:-1]
    ret = clamp(raw_ret, lo, hi)
    sat = sat or bool(np.any(ret != raw_ret))
    return adv, ret, sat


def _make_gae_loop(k: int):
    """The compiled path for lookahead ``k``: one fused backward pass, row by row, lanes innermost.

    ``k`` is a compile-time constant of each kernel, so the lookahead loop unrolls and the lane loop vectorizes
    (about 1.5x faster than one kernel for every k). ``delta`` and ``adv`` carry k zero rows past T, so the
    lookahead reads need no bounds checks; the done chain past T only ever multiplies those zeros.
    """

    def gae_loop(rewards, values, dones, gamma, powers, cf, lo, hi):
        n_steps, n_lanes = rewards.shape
        adv = np.zeros((n_steps + k, n_lanes), dtype=np.int64)
        delta = np.zeros((n_steps + k, n_lanes), dtype=np.int64)
        ret = np.empty((n_steps, n_lanes), dtype=np.int64)
        half = np.int64(1) << (cf - 1)
        last = n_steps - 1
        saturated = np.zeros(n_lanes, dtype=np.int64)  # per-lane OR of (clamped ^ raw): branch-free flags
        for t in range(last, -1, -1):
            for n in range(n_lanes):
                alive = 1 - dones[t, n]
                raw = rewards[t, n] + ((gamma * values[t + 1, n] + half) >> cf) * alive - values[t, n]
                d = min(max(raw, lo), hi)
                acc = d
                chain = alive
                for j in range(1, k):
                    acc += (powers[j] * chain * delta[t + j, n] + half) >> cf
                    chain *= 1 - dones[min(t + j, last), n]
                acc += (powers[k] * chain * adv[t + k, n] + half) >> cf
                a = min(max(acc, lo), hi)
                raw_ret = a + values[t, n]
                r = min(max(raw_ret, lo), hi)
                saturated[n] |= (d ^ raw) | (a ^ acc) | (r ^ raw_ret)
                delta[t, n] = d
                adv[t, n] = a
                ret[t, n] = r
        return adv[:n_steps], ret, saturated.any()

    return gae_loop


_compiled_kernels: dict = {}


def _gae_numba(rewards, values, dones, gamma, powers, cf, lo, hi):
    """Dispatch to the compiled kernel of this lookahead (compiled once per k and process)."""
    k = len(powers) - 1
    kernel = _compiled_kernels.get(k)
    if kernel is None:
        kernel = _compiled_kernels[k] = _numba.njit(nogil=True)(_make_gae_loop(k))
    return kernel(rewards, values, dones, gamma, powers, cf, lo, hi)
