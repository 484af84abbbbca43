r"""Bit-exact model of the replay core (on-chip RMM): a K-ary sum tree of integer priorities.

The tree has ``LEVELS`` levels below the root; level ``l`` holds ``K**l`` nodes and every node is the exact integer
sum of the leaves below it (:meth:`~pynq_rl.overlay.spec.ReplaySpec.level_width` makes it wide enough), so totals
never drift, however many updates run (a float sum tree accumulates rounding error with every update).

Operations, exactly as the core performs them (one kind per START, see :class:`~pynq_rl.overlay.spec.ReplayMode`):

* **set** ``(index, code)`` records in order: ``code`` saturates to the largest leaf code (flag SATURATED), an
  index ``>= capacity`` drops the record (flag ERR_CONFIG); the leaf takes the code and every ancestor adds
  ``code - old``. Later records to the same leaf win.
* **sample** ``n``: stride ``S = floor((2**32 - 1) / n)``, fraction ``x_j = j*S + ((u_j*S) >> 32)`` (UQ0.32),
  target ``t_j = (x_j * TOTAL) >> 32``; from the root down, pick the first child whose inclusive running sum
  exceeds the target and subtract the sums before it. ``t_j < TOTAL`` always, so the descent ends at a leaf with
  a nonzero code whose prefix interval ``[start, start + code)`` contains ``t_j``: leaf ``i`` is drawn with
  probability ``code_i / TOTAL`` up to the stratification. ``u_j`` comes from the core's xorshift32
  (:mod:`.prng`, one step per sample) or from the host.

The driver maps float priorities to codes with :func:`encode_priorities` (round half up, saturate, and a positive
priority never becomes 0, which would make its transition unreachable).

Error against float64 (:func:`sample_float64` samples the same uniforms from the float priorities): the only
difference is the codes. With ``|code_i - p_i 2**f| <= 1/2`` for every leaf that neither saturated nor was raised
to one LSB, the sampling probabilities differ by at most :func:`probability_error_bound` (tested).

Two implementations of every operation share these definitions and agree bit for bit (tested): vectorized numpy,
and, where numba is installed, compiled loops that the emulated core and the benchmarks use.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..spec import PRNG_ZERO_SEED, QFormat, ReplaySpec

try:  # numba is optional: the numpy path gives identical bits where no wheel exists
    import numba as _numba
except ImportError:  # pragma: no cover - exercised on machines without numba
    _numba = None  # type: ignore[assignment]  # the numpy path checks for None

__all__ = [
    "SumTree",
    "SetResult",
    "check_priorities",
    "priority_powers",
    "encode_priorities",
    "encode_set_records",
    "sample_fractions",
    "sample_targets",
    "descend",
    "xorshift32_stream",
    "sample_float64",
    "probability_error_bound",
    "pack_set",
    "pack_uniforms",
    "record_words",
    "unpack_set",
    "unpack_results",
    "pack_results",
    "HAVE_NUMBA",
]

HAVE_NUMBA = _numba is not None
_U32 = (1 << 32) - 1


class SetResult(NamedTuple):
    """Flags of one set batch, as the core raises them in STATUS (a named tuple: one is made per SET, and the
    emulated core runs a SET per driver update)."""

    saturated: bool
    """a code was larger than the largest leaf code and was saturated (SATURATED)"""
    rejected: int
    """records dropped because their index was out of range (any: ERR_CONFIG)"""


# ---------------------------------------------------------------------------------------------------------------
# Host-side encoding and stream records
# ---------------------------------------------------------------------------------------------------------------


def check_priorities(priorities) -> np.ndarray:
    """``priorities`` as float64; ``ValueError`` naming the first one that is negative, NaN or infinite."""
    p = np.asarray(priorities, dtype=np.float64)
    bad = ~np.isfinite(p) | (p < 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"priorities must be finite and >= 0; priorities[{i}] is {p.ravel()[i]!r}")
    return p


def priority_powers(priorities, alpha: float) -> np.ndarray:
    """``p**alpha`` of checked priorities, 0 staying 0 for every alpha: numpy's ``0**0`` is 1, and with
    ``alpha = 0`` (uniform replay) a removed transition must stay unsampleable."""
    p = check_priorities(priorities)
    return np.where(p > 0, np.power(p, float(alpha)), 0.0)


def encode_priorities(priorities: np.ndarray, leaf: QFormat) -> tuple[np.ndarray, bool]:
    """Float priorities (>= 0, finite) to leaf codes: round half up, saturate, and keep positives positive.

    Returns ``(codes, saturated)``. A priority of 0 stays 0 (the leaf is never sampled); a positive priority below
    half an LSB becomes one LSB rather than 0, so no stored transition silently becomes unreachable.

    Raises
    ------
    ValueError
        A priority is negative, NaN or infinite.
    """
    p = np.asarray(priorities, dtype=np.float64)
    if _numba is not None:  # one compiled pass: the same checks and the same float64 operations
        codes = np.empty(p.shape, dtype=np.int64)
        first_bad, saturated = _kernels()["encode"](p.reshape(-1), 2.0**leaf.frac, leaf.max_code, codes.reshape(-1))
        if first_bad >= 0:
            raise ValueError(f"priorities must be finite and >= 0; priorities[{first_bad}] is {p.ravel()[first_bad]!r}")
        return codes, bool(saturated)
    check_priorities(p)
    scaled = np.floor(p * (2.0**leaf.frac) + 0.5)
    clipped = np.minimum(scaled, leaf.max_code)
    codes = clipped.astype(np.int64)
    codes[(codes == 0) & (p > 0)] = 1
    return codes, bool(np.any(scaled > leaf.max_code))


def encode_set_records(
    indices: np.ndarray, priorities: np.ndarray, alpha: float, leaf: QFormat
) -> tuple[np.ndarray, bool]:
    """The SET records that store ``priorities**alpha`` at ``indices``, and whether a code saturated.

    Bit for bit ``pack_set(indices, encode_priorities(priority_powers(priorities, alpha), leaf)[0])`` and the same
    ``ValueError`` for a priority that is negative, NaN or infinite (or whose power overflows to infinity): the
    host side of one ``update`` in one compiled pass over the checks, the encoding and the packing where numba is
    installed (the powers stay numpy's ``np.power``, so the codes cannot depend on which pow ran). ``indices``
    must fit 32 bits (the driver checked them against the capacity).
    """
    p = np.asarray(priorities, dtype=np.float64).reshape(-1)
    index = np.asarray(indices).reshape(-1)
    if index.shape != p.shape:
        raise ValueError(f"indices and priorities differ in length: {index.shape} vs {p.shape}")
    if _numba is None:
        codes, saturated = encode_priorities(priority_powers(p, alpha), leaf)
        return pack_set(index, codes), saturated
    kernels = _kernels()
    first_bad = kernels["first_bad"](p)  # before the powers: a refused batch raises no numpy warning first
    if first_bad < 0:
        powers = np.power(p, float(alpha))
        records = np.empty(p.shape, dtype=np.uint64)
        first_bad, saturated = kernels["encode_records"](p, powers, index, 2.0**leaf.frac, leaf.max_code, records)
        if first_bad < 0:
            return records, bool(saturated)
        p = powers  # a power that overflowed: refused as encode_priorities refuses it
    raise ValueError(f"priorities must be finite and >= 0; priorities[{first_bad}] is {p[first_bad]!r}")


def pack_set(indices: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Set records (uint64: index in bits [31:0], code in [63:32]) for indices and codes that fit 32 bits.

    Written as the stream carries them, two little-endian 32-bit words per record (index, then code): two
    assignments rather than two conversions, a shift and an or (the emulated core packs every sampled batch)."""
    indices, codes = np.asarray(indices), np.asarray(codes)
    if indices.shape != codes.shape:
        indices, codes = np.broadcast_arrays(indices, codes)
    words = np.empty(2 * indices.size, dtype="<u4")
    low, high = record_words(words)
    low[:], high[:] = indices.reshape(-1), codes.reshape(-1)
    return words.view("<u8").reshape(indices.shape)


def record_words(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The records of a stream read as little-endian 32-bit ``words`` (two per record), split without a copy:
    views of their bits [31:0] (index, uniform) and [63:32] (code)."""
    return words[0::2], words[1::2]


def unpack_set(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, codes)`` of set records (int64)."""
    low, high = record_words(np.ascontiguousarray(records, dtype="<u8").view("<u4"))
    return low.astype(np.int64), high.astype(np.int64)


def pack_uniforms(uniforms: np.ndarray) -> np.ndarray:
    """Uniform records (uint64, ``u`` in bits [31:0]) for SAMPLE_UNIFORM."""
    return np.asarray(uniforms, dtype=np.uint32).astype(np.uint64)


def pack_results(indices: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Result records (uint64: index in bits [31:0], leaf code in [63:32])."""
    return pack_set(indices, codes)


def unpack_results(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, codes)`` of result records."""
    return unpack_set(records)


# ---------------------------------------------------------------------------------------------------------------
# The sampling arithmetic
# ---------------------------------------------------------------------------------------------------------------


def xorshift32_stream(state: int, count: int) -> tuple[np.ndarray, int]:
    """``count`` xorshift32 outputs from ``state`` (not a seed: 0 is mapped at reseed) and the final state."""
    if _numba is not None:
        out = np.empty(count, dtype=np.uint32)
        final = _kernels()["xorshift"](np.int64(state), out)
        return out, int(final)
    out = np.empty(count, dtype=np.uint32)
    for i in range(count):
        state ^= (state << 13) & _U32
        state ^= state >> 17
        state ^= (state << 5) & _U32
        out[i] = state
    return out, state


def sample_fractions(uniforms: np.ndarray, stride: int | None = None) -> np.ndarray:
    """UQ0.32 fractions ``x_j = j*S + ((u_j*S) >> 32)`` of a stratified batch.

    ``S`` is the STRIDE register, by default ``floor((2**32 - 1) / n)`` for ``n`` uniforms; the core refuses
    strides with ``n * S >= 2**32``, so every fraction is below 1.
    """
    u = np.asarray(uniforms, dtype=np.uint64)
    stride = ReplaySpec.stride(len(u)) if stride is None else int(stride)
    if stride < 0 or len(u) * stride >= 1 << 32:
        raise ValueError(f"stride {stride} is out of range for {len(u)} samples (count * stride must be < 2**32)")
    s = np.uint64(stride)
    return np.arange(len(u), dtype=np.uint64) * s + ((u * s) >> np.uint64(32))


def sample_targets(total: int, uniforms: np.ndarray, stride: int | None = None) -> np.ndarray:
    """Stratified targets ``(x_j * total) >> 32`` in leaf LSBs, each below ``total`` (int64).

    ``total`` may exceed 32 bits: the product is split as ``x*hi + ((x*lo) >> 32)`` so nothing overflows 64 bits.
    """
    x = sample_fractions(uniforms, stride)
    hi, lo = np.uint64(total >> 32), np.uint64(total & _U32)
    return (x * hi + ((x * lo) >> np.uint64(32))).astype(np.int64)


def descend(levels: list[np.ndarray], k: int, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From the root down, the leaf each target falls in: ``(indices, leaf codes)`` (targets must be < total)."""
    node = np.zeros(len(targets), dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64).copy()
    rows = np.arange(len(target))
    for level in levels[1:]:
        children = level.reshape(-1, k)[node]  # (n, k): the k children of each current node
        running = np.cumsum(children, axis=1)
        pick = np.sum(running <= target[:, None], axis=1)  # first child whose running sum exceeds the target
        target -= running[rows, pick] - children[rows, pick]  # subtract the sums of the children before it
        node = node * k + pick
    return node, levels[-1][node]


# ---------------------------------------------------------------------------------------------------------------
# The core's state
# ---------------------------------------------------------------------------------------------------------------


class SumTree:
    """The replay core's state (every level of the sum tree, the PRNG, the nonzero-leaf count) and operations.

    Parameters
    ----------
    spec : ReplaySpec
        Build parameters (K, LEVELS, leaf format).
    use_numba : bool or None
        Use the compiled loops (default: when numba is installed); False forces the numpy path.
    """

    def __init__(self, spec: ReplaySpec, use_numba: bool | None = None) -> None:
        self.spec = spec
        self.use_numba = HAVE_NUMBA if use_numba is None else bool(use_numba and HAVE_NUMBA)
        self.levels = [np.zeros(spec.k**level, dtype=np.int64) for level in range(spec.levels + 1)]
        self.prng_state = PRNG_ZERO_SEED
        self.nonzero = 0

    # -- read-outs ------------------------------------------------------------------------------------------------
    @property
    def total(self) -> int:
        """the root: sum of every leaf code"""
        return int(self.levels[0][0])

    @property
    def leaves(self) -> np.ndarray:
        """leaf codes (read-only view)"""
        view = self.levels[-1].view()
        view.flags.writeable = False
        return view

    def dump(self) -> np.ndarray:
        """Every leaf code in index order, as the DUMP stream carries them (uint32)."""
        return self.levels[-1].astype(np.uint32)

    # -- operations -----------------------------------------------------------------------------------------------
    def reseed(self, seed: int) -> None:
        """Write the SEED register: the PRNG state becomes ``seed`` (0 becomes ``PRNG_ZERO_SEED``)."""
        if not 0 <= int(seed) <= _U32:
            raise ValueError(f"seed must be a 32-bit unsigned integer, not {seed!r}")
        self.prng_state = int(seed) or PRNG_ZERO_SEED

    def clear(self) -> None:
        """CLEAR: every node and leaf becomes 0 (the PRNG state is kept)."""
        for level in self.levels:
            level[:] = 0
        self.nonzero = 0

    def set(self, indices: np.ndarray, codes: np.ndarray) -> SetResult:
        """SET: apply ``(index, code)`` records in order (codes as carried by the stream: any uint32)."""
        if self.use_numba:  # integer arrays go in as they are (views included): the kernel widens each value
            if not (isinstance(indices, np.ndarray) and indices.dtype.kind in "iu" and indices.ndim == 1):
                indices = np.asarray(indices, dtype=np.int64).reshape(-1)
            if not (isinstance(codes, np.ndarray) and codes.dtype.kind in "iu" and codes.ndim == 1):
                codes = np.asarray(codes, dtype=np.int64).reshape(-1)
        else:
            indices = np.asarray(indices, dtype=np.int64).ravel()
            codes = np.asarray(codes, dtype=np.int64).ravel()
        if indices.shape != codes.shape:
            raise ValueError(f"indices and codes differ in length: {indices.shape} vs {codes.shape}")
        if self.use_numba:  # one compiled pass checks, saturates and applies the records in order
            changed, rejected, saturated = _kernels()["set"](
                tuple(self.levels), indices, codes, self.spec.k_bits, self.spec.leaf.max_code
            )
            self.nonzero += int(changed)
            return SetResult(bool(saturated), int(rejected))
        capacity, max_code = self.spec.capacity, self.spec.leaf.max_code
        valid = (indices >= 0) & (indices < capacity)
        rejected = int(len(indices) - np.count_nonzero(valid))
        saturated = bool(np.any(codes[valid] > max_code))
        indices, codes = indices[valid], np.minimum(codes[valid], max_code)
        if len(indices):
            self._set_numpy(indices, codes)
        return SetResult(saturated, rejected)

    def _set_numpy(self, indices: np.ndarray, codes: np.ndarray) -> None:
        # Later records win: keep the last record of every index, then add each leaf's net change to its ancestors.
        reversed_unique, first_in_reversed = np.unique(indices[::-1], return_index=True)
        final = codes[::-1][first_in_reversed]
        leaves = self.levels[-1]
        old = leaves[reversed_unique]
        delta = final - old
        leaves[reversed_unique] = final
        self.nonzero += int(np.count_nonzero(final) - np.count_nonzero(old))
        node = reversed_unique
        for level in reversed(self.levels[:-1]):
            node = node >> self.spec.k_bits
            np.add.at(level, node, delta)

    def sample(
        self, count: int, uniforms: np.ndarray | None = None, stride: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """SAMPLE (``uniforms`` None: draw them from the PRNG, advancing it) or SAMPLE_UNIFORM: ``(indices, codes)``.

        ``stride`` is the STRIDE register (default ``ReplaySpec.stride(count)``).

        Raises
        ------
        ValueError
            ``count`` outside ``[1, max_count]``, ``count * stride >= 2**32``, the tree is empty (TOTAL = 0; the
            core refuses all three with ERR_CONFIG), or ``uniforms`` is not ``count`` values in [0, 2**32).
        """
        if not 1 <= count <= self.spec.max_count:
            raise ValueError(f"count must be in [1, {self.spec.max_count}], not {count!r}")
        if self.total == 0:
            raise ValueError("cannot sample from an empty sum tree (TOTAL is 0)")
        stride = ReplaySpec.stride(count) if stride is None else int(stride)
        if stride < 0 or count * stride >= 1 << 32:
            raise ValueError(f"stride {stride} is out of range for {count} samples (count * stride must be < 2**32)")
        if uniforms is None and self.use_numba:  # PRNG, targets and descent in one compiled pass
            indices, codes = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
            self.prng_state = int(
                _kernels()["sample"](
                    tuple(self.levels[1:]), self.spec.k, self.prng_state, stride, self.total, indices, codes
                )
            )
            return indices, codes
        if uniforms is None:
            uniforms, self.prng_state = xorshift32_stream(self.prng_state, count)
        else:
            uniforms = np.asarray(uniforms)
            if uniforms.shape != (count,) or np.any(uniforms < 0) or np.any(uniforms > _U32):
                raise ValueError(f"uniforms must be {count} integers in [0, 2**32)")
        return self.find(sample_targets(self.total, uniforms, stride))

    def find(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The descent alone: ``(indices, codes)`` of the leaves whose prefix intervals hold ``targets`` (< total)."""
        targets = np.asarray(targets, dtype=np.int64)
        if len(targets) and (targets.min() < 0 or targets.max() >= self.total):
            raise ValueError(f"targets must be in [0, total={self.total})")
        if self.use_numba:
            out = np.empty(len(targets), dtype=np.int64)
            _kernels()["descend"](tuple(self.levels[1:]), self.spec.k, targets, out)
            return out, self.levels[-1][out]
        return descend(self.levels, self.spec.k, targets)


# ---------------------------------------------------------------------------------------------------------------
# Float64 reference and error bound
# ---------------------------------------------------------------------------------------------------------------


def sample_float64(priorities: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Stratified proportional sampling in float64 with the same uniforms: ``x_j = (j + u_j / 2**32) / n``."""
    p = np.asarray(priorities, dtype=np.float64)
    cumulative = np.cumsum(p)
    n = len(uniforms)
    x = (np.arange(n) + np.asarray(uniforms, dtype=np.float64) / 2.0**32) / n
    return np.minimum(np.searchsorted(cumulative, x * cumulative[-1], side="right"), len(p) - 1)


def probability_error_bound(priorities: np.ndarray, leaf: QFormat) -> float:
    """Largest ``|code_i/sum(codes) - p_i/sum(p)|`` the leaf quantization allows (no saturation, no raise to 1 LSB).

    With ``c_i = p_i 2**f + e_i``, ``|e_i| <= 1/2``, ``C = sum c``, ``P = sum p 2**f``:
    ``|c_i/C - p_i 2**f/P| <= (|e_i| + (p_i 2**f/P) |C - P|) / C <= (1/2 + n/2) / C``.
    """
    codes, _ = encode_priorities(priorities, leaf)
    return (0.5 + 0.5 * len(codes)) / float(codes.sum())


# ---------------------------------------------------------------------------------------------------------------
# Compiled loops
# ---------------------------------------------------------------------------------------------------------------

_compiled: dict = {}


def _kernels() -> dict:
    """The numba loops, compiled once per process on first use."""
    if _compiled:
        return _compiled
    njit = _numba.njit(nogil=True, cache=False)

    @njit
    def xorshift(state, out):
        s = np.int64(state)
        for i in range(out.shape[0]):
            s ^= (s << 13) & 0xFFFFFFFF
            s ^= s >> 17
            s ^= (s << 5) & 0xFFFFFFFF
            out[i] = s
        return s

    @njit
    def leaf_code(value, scale, ceiling):
        # one finite value >= 0 -> (its leaf code, whether it saturated): round half up, clamp, nonzero stays >= 1
        scaled = np.floor(value * scale + 0.5)
        saturated = scaled > ceiling
        if saturated:
            scaled = ceiling
        code = np.int64(scaled)
        if code == 0 and value > 0.0:
            code = np.int64(1)
        return code, saturated

    @njit
    def encode(p, scale, max_code, out):
        # encode_priorities element by element: returns (first bad index or -1, saturated)
        saturated = False
        ceiling = np.float64(max_code)
        for i in range(p.shape[0]):
            value = p[i]
            if not value >= 0.0 or value == np.inf:  # negative, NaN or infinite
                return i, saturated
            code, clipped = leaf_code(value, scale, ceiling)
            saturated |= clipped
            out[i] = code
        return -1, saturated

    @njit
    def first_bad(p):
        # check_priorities: the first value that is negative, NaN or infinite, or -1
        for i in range(p.shape[0]):
            value = p[i]
            if not value >= 0.0 or value == np.inf:
                return i
        return -1

    @njit
    def encode_records(p, powers, indices, scale, max_code, out):
        # encode_set_records after first_bad(p): priority_powers' zero rule, encode_priorities on the power,
        # pack_set; returns (first power that overflowed (or is NaN) or -1, saturated)
        saturated = False
        ceiling = np.float64(max_code)
        for i in range(p.shape[0]):
            power = powers[i] if p[i] > 0.0 else 0.0
            if not power >= 0.0 or power == np.inf:  # encode_priorities refuses it
                return i, saturated
            code, clipped = leaf_code(power, scale, ceiling)
            saturated |= clipped
            out[i] = (np.uint64(code) << np.uint64(32)) | np.uint64(indices[i])
        return -1, saturated

    @njit
    def set_records(levels, indices, codes, k_bits, max_code):
        # SET with the core's checks: returns (change in nonzero leaves, records rejected, saturated). Indices and
        # codes may be any integer arrays (the uint32 halves of the stream's records, viewed in place): both are
        # widened to int64 first, as the numpy path converts them.
        leaves = levels[len(levels) - 1]
        capacity = leaves.shape[0]
        changed = 0
        rejected = 0
        saturated = False
        for r in range(indices.shape[0]):
            i = np.int64(indices[r])
            if i < 0 or i >= capacity:
                rejected += 1
                continue
            new = np.int64(codes[r])
            if new > max_code:
                saturated = True
                new = max_code
            old = leaves[i]
            delta = new - old
            if delta == 0:
                continue
            changed += (new != 0) - (old != 0)
            leaves[i] = new
            node = i
            for depth in range(len(levels) - 2, -1, -1):
                node >>= k_bits
                levels[depth][node] += delta
        return changed, rejected, saturated

    @njit
    def sample_prng(levels, k, state, stride, total, out, out_codes):
        # SAMPLE: xorshift32 uniforms, stratified targets (x * total) >> 32 split as x*hi + ((x*lo) >> 32), then
        # the descent level by level over the whole batch (independent loads of different samples overlap).
        n = out.shape[0]
        s = np.int64(state)
        s_stride = np.uint64(stride)
        hi, lo, shift = np.uint64(total >> 32), np.uint64(total & 0xFFFFFFFF), np.uint64(32)
        target = np.empty(n, dtype=np.int64)
        for j in range(n):
            s ^= (s << 13) & 0xFFFFFFFF
            s ^= s >> 17
            s ^= (s << 5) & 0xFFFFFFFF
            x = np.uint64(j) * s_stride + ((np.uint64(s) * s_stride) >> shift)
            target[j] = np.int64(x * hi + ((x * lo) >> shift))
            out[j] = 0
        for level in levels:
            for j in range(n):
                base = out[j] * k
                t = target[j]
                child = 0
                while child < k - 1 and t >= level[base + child]:  # the last child needs no compare
                    t -= level[base + child]
                    child += 1
                target[j] = t
                out[j] = base + child
        leaves = levels[len(levels) - 1]
        for j in range(n):
            out_codes[j] = leaves[out[j]]
        return s

    @njit
    def descend_loop(levels, k, targets, out):
        for j in range(targets.shape[0]):
            target = targets[j]
            node = 0
            for level in levels:
                base = node * k
                child = 0
                while child < k - 1 and target >= level[base + child]:  # the last child needs no compare
                    target -= level[base + child]
                    child += 1
                node = base + child
            out[j] = node

    _compiled.update(
        xorshift=xorshift,
        encode=encode,
        first_bad=first_bad,
        encode_records=encode_records,
        set=set_records,
        sample=sample_prng,
        descend=descend_loop,
    )
    return _compiled
