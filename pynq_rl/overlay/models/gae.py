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

The 8-bit encodings live here too, because their rounding is part of the contract: :func:`encode_q8` (HEPPO's block
standardization, one block per operation) and :func:`encode_runs` (one block per lane and run of records, the
default), with their stream packing (:func:`pack_input`, :func:`pack_input_runs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import fixed
from ..spec import GaeMode, GaeSpec, QFormat

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


@dataclass(frozen=True)
class Q8Block:
    """One block-standardized array: codes plus the registers that dequantize them (HEPPO section IV)."""

    codes: np.ndarray
    """int8-range codes, same shape as the input"""
    scale: int
    """SCALE register: DATA code of the value of one code step, in working units"""
    offset: int
    """OFFSET register: DATA code of the block mean, in working units"""
    error: float
    """bound on ``|x - dequantized(x)|`` for every element, in the input's own units"""


@dataclass(frozen=True)
class Q8Runs:
    """One array coded in runs (q8-runs mode): codes plus every lane's SCALE and OFFSET of every run."""

    codes: np.ndarray
    """int8-range codes, same shape as the input (rows, N)"""
    scale: np.ndarray
    """SCALE of each run and lane, shape (runs, N): DATA code of one code step, in working units"""
    offset: np.ndarray
    """OFFSET of each run and lane, shape (runs, N): DATA code of the run's mid-range, in working units"""
    error: float
    """bound on ``|x - dequantized(x)|`` for every element, in the input's own units"""

    def expanded(self, run_of_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(SCALE, OFFSET) of every element, shape (rows, N): what dequantizes ``codes`` element by element."""
        return self.scale[run_of_rows], self.offset[run_of_rows]


def choose_unit(absmax: float, gamma: float, lam: float, data: QFormat, headroom_bits: int = 1) -> float:
    """Power-of-two working unit ``u`` so that every intermediate of a batch fits DATA with ``headroom_bits`` spare.

    With ``M = max|r|, max|V|`` the magnitudes are bounded by ``|delta| <= (2 + gamma) M``,
    ``|A| <= |delta| / (1 - gamma*lambda)`` and ``|R| <= |A| + M``; ``u`` is the smallest power of two with
    ``bound / u <= DATA.max_value / 2**headroom_bits``. A power of two keeps the rescaling exact in float.
    """
    if not math.isfinite(absmax) or absmax < 0:
        raise ValueError(f"absmax must be finite and >= 0, not {absmax!r}")
    if absmax == 0.0:
        return 1.0
    bound = advantage_bound(absmax, gamma, lam)
    if not math.isfinite(bound):
        raise ValueError(f"absmax {absmax!r} bounds the advantages by {bound!r}: no float64 working unit holds them")
    ratio = bound / (data.max_value / 2**headroom_bits)
    # a subnormal absmax makes ratio underflow to 0: the smallest normal unit still codes every input (as ~0)
    return 2.0 ** max(math.ceil(math.log2(ratio)), -1022) if ratio > 0.0 else 2.0**-1022


def advantage_bound(absmax: float, gamma: float, lam: float) -> float:
    """The bound :func:`choose_unit` works from: ``|A| + M`` for inputs of magnitude at most ``M = absmax``, with
    ``|A| <= (2 + gamma) M / (1 - gamma*lambda)`` (a horizon of 1e6 steps when ``gamma*lambda = 1``)."""
    c = gamma * lam
    horizon = 1.0 / (1.0 - c) if c < 1.0 else 1e6
    return (2.0 + gamma) * absmax * horizon + absmax


def encode_q8(x: np.ndarray, unit: float, spec: GaeSpec) -> Q8Block:
    """Block-standardize ``x`` into CODE_BITS codes that the core dequantizes as ``code * SCALE + OFFSET``.

    The block's mean becomes OFFSET and its largest deviation maps to the largest code, so nothing clips and the
    per-element error is bounded: SCALE is rounded *up* to a DATA code (so ``|x - mean| / SCALE <= 2**(b-1) - 1``)
    and codes round half up, giving ``|x/u - (code * SCALE + OFFSET)| <= SCALE / 2`` (or half an LSB when the
    block is constant). HEPPO scales by the standard deviation instead, which clips heavy tails with unbounded
    error; scaling by the largest deviation is what makes :func:`error_bound` hold for every input.
    """
    x = np.asarray(x, dtype=np.float64)
    fixed.check_finite("x", x)
    data, code = spec.data, spec.code
    y = x / unit
    mean = float(y.mean()) if y.size else 0.0
    offset = int(fixed.quantize(mean, data)[0])
    centered = y - offset * data.lsb
    spread = float(np.max(np.abs(centered))) if y.size else 0.0
    scale = int(math.ceil(spread / code.max_code / data.lsb)) if spread > 0 else 0
    if scale > spec.scale.max_code:
        raise ValueError(
            f"block spread {spread:g} (working units) needs SCALE {scale}, above the register's "
            f"{spec.scale.max_code}: choose a larger unit"
        )
    if scale > 0:
        codes, _ = fixed.quantize(centered / (scale * data.lsb), code)
    else:
        codes = np.zeros(x.shape, dtype=np.int64)
    error = 0.5 * max(scale, 1) * data.lsb * unit
    return Q8Block(codes=codes, scale=scale, offset=offset, error=error)


def encode_runs(x: np.ndarray, unit: float, spec: GaeSpec, run_of_rows: np.ndarray, n_runs: int) -> Q8Runs:
    """Code ``x`` (rows, N) in runs: the rows of each run (``run_of_rows``, ints in ``[0, n_runs)``) of each column
    form one block: OFFSET its mid-range rounded to DATA, SCALE its largest deviation from OFFSET over the largest
    code, rounded up (as :func:`encode_q8`), so ``|x/u - (code * SCALE + OFFSET)| <= SCALE / 2``. The mid-range, not
    the mean, centres the codes: a run of a trending reward or value is skewed, and the mean would spend up to half
    the codes on a side with no elements.

    A run with no rows of ``x`` (the bootstrap record alone carries no reward) gets SCALE = OFFSET = 0. Per-lane runs
    of a few tens of steps follow a slowly varying reward, where one block per operation rounds it the same way
    step after step (an error GAE sums over its 1 / (1 - gamma lambda) horizon).
    """
    x = np.asarray(x, dtype=np.float64)
    fixed.check_finite("x", x)
    run_of_rows = np.asarray(run_of_rows, dtype=np.int64)
    if x.ndim != 2 or run_of_rows.shape != x.shape[:1]:
        raise ValueError(f"expected x (rows, N) and run_of_rows (rows,), not {x.shape} and {run_of_rows.shape}")
    data, code = spec.data, spec.code
    n_cols = x.shape[1]
    scale = np.zeros((n_runs, n_cols), dtype=np.int64)
    offset = np.zeros((n_runs, n_cols), dtype=np.int64)
    codes = np.zeros(x.shape, dtype=np.int64)
    if not x.size:
        return Q8Runs(codes=codes, scale=scale, offset=offset, error=0.5 * data.lsb * unit)
    order = np.argsort(run_of_rows, kind="stable")  # each run's rows together
    runs_sorted = run_of_rows[order]
    starts = np.flatnonzero(np.r_[True, runs_sorted[1:] != runs_sorted[:-1]])
    present = runs_sorted[starts]
    y = x[order] / unit
    middle = (np.maximum.reduceat(y, starts, axis=0) + np.minimum.reduceat(y, starts, axis=0)) / 2
    offset[present], _ = fixed.quantize(middle, data)
    centered = y - offset[runs_sorted] * data.lsb
    spread = np.maximum.reduceat(np.abs(centered), starts, axis=0)
    steps = np.ceil(spread / code.max_code / data.lsb)
    if np.any(steps > spec.scale.max_code):
        raise ValueError(
            f"a run's spread {float(spread.max()):g} (working units) needs SCALE {int(steps.max())}, above the "
            f"register's {spec.scale.max_code}: choose a larger unit"
        )
    scale[present] = steps.astype(np.int64)
    run_scale = scale[runs_sorted]
    coded, _ = fixed.quantize(centered / (np.maximum(run_scale, 1) * data.lsb), code)
    codes[order] = np.where(run_scale > 0, coded, 0)
    error = 0.5 * max(int(scale.max()), 1) * data.lsb * unit
    return Q8Runs(codes=codes, scale=scale, offset=offset, error=error)


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


def input_record_dtype(spec: GaeSpec, mode: GaeMode) -> np.dtype:
    """numpy dtype of one input stream record (see :class:`GaeSpec`): ``reward``, ``value``, ``done`` fields."""
    word = np.dtype("<i4") if GaeMode(mode) == GaeMode.RAW else np.dtype(np.int8)
    lanes = spec.lanes
    return np.dtype(
        {
            "names": ["reward", "value", "done"],
            "formats": [(word, (lanes,)), (word, (lanes,)), (np.uint8, (spec.done_bytes,))],
            "offsets": [0, lanes * word.itemsize, 2 * lanes * word.itemsize],
            "itemsize": spec.input_record_bytes(mode),
        }
    )


def output_record_dtype(spec: GaeSpec) -> np.dtype:
    """numpy dtype of one output stream record: ``advantage`` then ``ret`` (A + V), int32 each."""
    lanes = spec.lanes
    return np.dtype(
        {
            "names": ["advantage", "ret"],
            "formats": [("<i4", (lanes,)), ("<i4", (lanes,))],
            "offsets": [0, 4 * lanes],
            "itemsize": spec.output_record_bytes,
        }
    )


def batches(spec: GaeSpec, n_envs: int) -> int:
    """Lane-batches (the BATCHES register) that ``n_envs`` environments take: ``ceil(n_envs / LANES)``."""
    return -(-n_envs // spec.lanes)


def _to_batches(spec: GaeSpec, x: np.ndarray) -> np.ndarray:
    """(rows, N) -> (B, rows, LANES): lane-batch b holds columns b * LANES ..., zero-padded past N."""
    n_rows, n_envs = x.shape
    n_batches = batches(spec, n_envs)
    padded = np.zeros((n_rows, n_batches * spec.lanes), dtype=x.dtype)
    padded[:, :n_envs] = x
    return padded.reshape(n_rows, n_batches, spec.lanes).transpose(1, 0, 2)


def _from_batches(x: np.ndarray, n_envs: int) -> np.ndarray:
    """(B, rows, LANES) -> (rows, N): the inverse of :func:`_to_batches`."""
    n_batches, n_rows, lanes = x.shape
    return x.transpose(1, 0, 2).reshape(n_rows, n_batches * lanes)[:, :n_envs]


def pack_input(
    spec: GaeSpec,
    mode: GaeMode,
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Pack codes (T, N), (T + 1, N), (T, N) into the input stream of one operation: ``B = ceil(N / LANES)``
    lane-batches of T + 1 records each, back to back (unused lanes of the last batch are 0), each lane-batch's
    records in :meth:`GaeSpec.stream_rows` order (T > T_MAX: its T_MAX chunks from the latest to the earliest).

    ``out``, if given, is a record array of at least B x (T + 1) records to fill in place (e.g. a DMA buffer view).
    """
    n_steps, n_envs = rewards.shape
    n_batches = batches(spec, n_envs)
    n_records = n_batches * (n_steps + 1)
    records = np.zeros(n_records, dtype=input_record_dtype(spec, mode)) if out is None else out[:n_records]
    if out is not None:
        records.view(np.uint8)[:] = 0
    shaped = records.reshape(n_batches, n_steps + 1)
    order = spec.stream_rows(n_steps)
    boot = int(np.flatnonzero(order == n_steps)[0])  # the bootstrap row's position: T of the first chunk
    steps = np.delete(order, boot)  # the time rows, in stream order
    slots = np.delete(np.arange(n_steps + 1), boot)
    chunked = n_steps > spec.t_max
    shaped["value"][:] = _to_batches(spec, values[order] if chunked else values)
    shaped["reward"][:, slots] = _to_batches(spec, rewards[steps] if chunked else rewards)
    done_bits = _to_batches(spec, np.asarray(dones[steps] if chunked else dones, dtype=np.uint8))
    shaped["done"][:, slots] = np.packbits(done_bits, axis=2, bitorder="little")
    return records


def unpack_input(
    spec: GaeSpec, mode: GaeMode, records: np.ndarray, n_lanes: int, n_batches: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`pack_input`: int64 codes (T, N), (T + 1, N) and 0/1 dones (T, N) of ``n_batches``
    lane-batches, the last one ``n_lanes`` wide (``N = (n_batches - 1) * LANES + n_lanes``)."""
    n_envs = (n_batches - 1) * spec.lanes + n_lanes
    shaped = records.reshape(n_batches, -1)
    n_steps = shaped.shape[1] - 1
    order = spec.stream_rows(n_steps)
    boot = int(np.flatnonzero(order == n_steps)[0])
    slots = np.delete(np.arange(n_steps + 1), boot)
    back = np.argsort(order)  # stream position of each time row
    back_steps = np.argsort(np.delete(order, boot))
    values = _from_batches(shaped["value"][:, back].astype(np.int64), n_envs)
    rewards = _from_batches(shaped["reward"][:, slots][:, back_steps].astype(np.int64), n_envs)
    dones = np.unpackbits(shaped["done"][:, slots][:, back_steps], axis=2, bitorder="little", count=spec.lanes)
    return rewards, values, _from_batches(dones.astype(np.int64), n_envs)


def pack_input_runs(
    spec: GaeSpec, rewards: Q8Runs, values: Q8Runs, dones: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """The q8-runs input stream of one operation, as bytes: each lane-batch's records (:func:`pack_input`, q8 record
    format) cut into runs of RUN_LENGTH in stream order, each run after its SCALE and OFFSET header records
    (raw-record format: the reward field the lanes' reward words, the value field their value words).

    ``rewards`` and ``values`` come from :func:`encode_runs` with ``run_of_rows = spec.run_of_rows(T)`` (the
    rewards' rows ``[:T]``). ``out``, if given, is a uint8 array of at least the stream's length to fill in place.
    """
    n_steps, n_envs = rewards.codes.shape
    n_batches, n_rows = batches(spec, n_envs), n_steps + 1
    run_len, n_runs = spec.run_length, spec.runs(n_rows)
    data_bytes, head_bytes = spec.input_record_bytes(GaeMode.Q8_RUNS), spec.header_record_bytes
    records = pack_input(spec, GaeMode.Q8_RUNS, rewards.codes, values.codes, dones)
    per_run = 2 * head_bytes + run_len * data_bytes
    body = np.zeros((n_batches, n_runs, per_run), dtype=np.uint8)
    padded = np.zeros((n_batches, n_runs * run_len * data_bytes), dtype=np.uint8)
    padded[:, : n_rows * data_bytes] = records.view(np.uint8).reshape(n_batches, -1)
    body[:, :, 2 * head_bytes :] = padded.reshape(n_batches, n_runs, -1)
    headers = np.zeros((n_batches, n_runs, 2), dtype=input_record_dtype(spec, GaeMode.RAW))
    for slot, (r_word, v_word) in enumerate(((rewards.scale, values.scale), (rewards.offset, values.offset))):
        headers["reward"][:, :, slot] = _to_batches(spec, r_word)
        headers["value"][:, :, slot] = _to_batches(spec, v_word)
    body[:, :, : 2 * head_bytes] = headers.view(np.uint8).reshape(n_batches, n_runs, -1)
    length = spec.input_batch_bytes(GaeMode.Q8_RUNS, n_steps)
    stream = body.reshape(n_batches, -1)[:, :length].reshape(-1)
    if out is None:
        return stream
    out[: len(stream)] = stream
    return out[: len(stream)]


def unpack_input_runs(
    spec: GaeSpec, stream: np.ndarray, n_steps: int, n_lanes: int, n_batches: int = 1
) -> tuple[np.ndarray, ...]:
    """Inverse of :func:`pack_input_runs`: codes (T, N), (T + 1, N), dones (T, N), then every element's SCALE and
    OFFSET as the core reads them (R_SCALE, R_OFFSET shaped like the rewards, V_SCALE, V_OFFSET like the values;
    a SCALE is the header word's low 25 bits, signed)."""
    n_rows = n_steps + 1
    run_len, n_runs = spec.run_length, spec.runs(n_rows)
    data_bytes, head_bytes = spec.input_record_bytes(GaeMode.Q8_RUNS), spec.header_record_bytes
    per_run = 2 * head_bytes + run_len * data_bytes
    length = spec.input_batch_bytes(GaeMode.Q8_RUNS, n_steps)
    body = np.zeros((n_batches, n_runs * per_run), dtype=np.uint8)
    body[:, :length] = np.asarray(stream, dtype=np.uint8).reshape(n_batches, length)
    body = body.reshape(n_batches, n_runs, per_run)
    records = body[:, :, 2 * head_bytes :].reshape(n_batches, -1)[:, : n_rows * data_bytes].reshape(-1)
    records = records.view(input_record_dtype(spec, GaeMode.Q8_RUNS))
    rewards, values, dones = unpack_input(spec, GaeMode.Q8_RUNS, records, n_lanes, n_batches)
    headers = np.ascontiguousarray(body[:, :, : 2 * head_bytes]).view(input_record_dtype(spec, GaeMode.RAW))
    headers = headers.reshape(n_batches, n_runs, 2)
    n_envs = rewards.shape[1]
    scale_bits = spec.scale.width
    words = {}
    for name, field, slot in (("rs", "reward", 0), ("ro", "reward", 1), ("vs", "value", 0), ("vo", "value", 1)):
        word = _from_batches(headers[field][:, :, slot].astype(np.int64), n_envs)
        if slot == 0:  # the core reads a SCALE word's low bits, signed
            word = ((word & ((1 << scale_bits) - 1)) ^ (1 << (scale_bits - 1))) - (1 << (scale_bits - 1))
        words[name] = word
    run = spec.run_of_rows(n_steps)
    return (
        rewards,
        values,
        dones,
        words["rs"][run[:n_steps]],
        words["ro"][run[:n_steps]],
        words["vs"][run],
        words["vo"][run],
    )


def pack_output(spec: GaeSpec, advantages: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """Pack int codes (T, N) into the output stream of one operation: B lane-batches of T records each (unused
    lanes are 0), each newest first (time T - 1 down to 0, :meth:`GaeSpec.output_rows`)."""
    n_steps, n_envs = advantages.shape
    n_batches = batches(spec, n_envs)
    records = np.zeros(n_batches * n_steps, dtype=output_record_dtype(spec))
    shaped = records.reshape(n_batches, n_steps)
    shaped["advantage"] = _to_batches(spec, advantages[::-1])
    shaped["ret"] = _to_batches(spec, returns[::-1])
    return records


def unpack_output(
    spec: GaeSpec, records: np.ndarray, n_lanes: int, n_batches: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`pack_output`: int64 codes (T, N) of advantages and returns of ``n_batches`` lane-batches,
    the last one ``n_lanes`` wide, in time order (the stream carries them newest first)."""
    n_envs = (n_batches - 1) * spec.lanes + n_lanes
    shaped = records.reshape(n_batches, -1)[:, ::-1]
    return (
        _from_batches(shaped["advantage"].astype(np.int64), n_envs),
        _from_batches(shaped["ret"].astype(np.int64), n_envs),
    )


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
                _check_codes(name, reg.reshape(shape[0], -1), fmt)
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
