"""The GAE core's 8-bit encodings: how the driver turns float rewards and values into the codes the core dequantizes
as ``sat(code * SCALE + OFFSET)``, and the working unit that keeps every intermediate inside DATA.

Their rounding is part of the core's contract (:mod:`pynq_rl.overlay.models.gae` bounds the result with it):
:func:`encode_q8` is HEPPO's block standardization, one block per operation (q8 block mode); :func:`encode_runs`
gives every lane's run of RUN_LENGTH records its own block (q8-runs, the default), and :func:`encode_rollout_runs`
applies it to one operation's rewards and values as its stream holds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import fixed
from ..spec import GaeSpec, QFormat

__all__ = [
    "Q8Block",
    "Q8Runs",
    "choose_unit",
    "advantage_bound",
    "encode_q8",
    "encode_runs",
    "encode_rollout_runs",
]


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
    scale = np.zeros((n_runs, x.shape[1]), dtype=np.int64)
    offset = np.zeros((n_runs, x.shape[1]), dtype=np.int64)
    if not x.size:
        return Q8Runs(codes=np.zeros(x.shape, dtype=np.int64), scale=scale, offset=offset, error=0.5 * data.lsb * unit)
    # each run's rows together: already so in stream order when the lane-batch is one chunk (the usual case), so the
    # gather and scatter of a sort are only paid when runs interleave
    in_order = bool(np.all(run_of_rows[1:] >= run_of_rows[:-1]))
    order = None if in_order else np.argsort(run_of_rows, kind="stable")
    runs_sorted = run_of_rows if order is None else run_of_rows[order]
    y = (x if order is None else x[order]) / unit
    starts = np.flatnonzero(np.r_[True, runs_sorted[1:] != runs_sorted[:-1]])
    rows_per_run = np.diff(np.r_[starts, len(runs_sorted)])
    present = runs_sorted[starts]
    highest, lowest = np.maximum.reduceat(y, starts, axis=0), np.minimum.reduceat(y, starts, axis=0)
    run_offset, _ = fixed.quantize((highest + lowest) / 2, data)
    middle = run_offset * data.lsb
    spread = np.maximum(highest - middle, middle - lowest)  # the largest |y - OFFSET| is at the run's max or min
    steps = np.ceil(spread / code.max_code / data.lsb)
    if np.any(steps > spec.scale.max_code):
        raise ValueError(
            f"a run's spread {float(spread.max()):g} (working units) needs SCALE {int(steps.max())}, above the "
            f"register's {spec.scale.max_code}: choose a larger unit"
        )
    offset[present], scale[present] = run_offset, steps.astype(np.int64)
    # in place on y (a fresh array): each full-size temporary is a fresh mapping whose page faults cost about as
    # much as the arithmetic
    y -= np.repeat(middle, rows_per_run, axis=0)
    y /= np.repeat(np.maximum(steps, 1) * data.lsb, rows_per_run, axis=0)
    coded, _ = fixed.quantize(y, code)
    coded[np.repeat(steps == 0, rows_per_run, axis=0)] = 0
    if order is None:
        codes = coded
    else:
        codes = np.empty_like(coded)
        codes[order] = coded
    error = 0.5 * max(int(scale.max()), 1) * data.lsb * unit
    return Q8Runs(codes=codes, scale=scale, offset=offset, error=error)


def encode_rollout_runs(rewards: np.ndarray, values: np.ndarray, unit: float, spec: GaeSpec) -> tuple[Q8Runs, Q8Runs]:
    """One operation's rewards (T, N) and values (T + 1, N) coded in q8-runs: the runs are those of the records in
    stream order (:meth:`GaeSpec.run_of_rows`), so a run may span a chunk boundary; the bootstrap record carries a
    value and no reward. What :func:`~pynq_rl.overlay.models.gae_stream.pack_input_runs` sends."""
    n_steps = np.shape(rewards)[0]
    run, n_runs = spec.run_of_rows(n_steps), spec.runs(n_steps + 1)
    return encode_runs(rewards, unit, spec, run[:n_steps], n_runs), encode_runs(values, unit, spec, run, n_runs)
