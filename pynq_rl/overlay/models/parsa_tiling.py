"""The ParSa core's tile-coding layout on the host side: tiling sets, the layout, the per-worker descriptors the
hardware reads and the scheduler that assigns tilings to workers (heaviest first, as OPaL's scheduler), plus the
dimension codes (offset and UQ8.24 scale per dimension, so the core needs no divider).

Part of the bit-exact model (:mod:`pynq_rl.overlay.models.parsa` re-exports every name); numpy and the spec only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..spec import ParsaSpec

__all__ = ["TilingSet", "TilingLayout", "Descriptor", "schedule", "dimension_codes", "float_tile_indices", "SCALE_FRAC"]

SCALE_FRAC = 24
"""fractional bits of a dimension's SCALE (UQ8.24)"""
_U32 = (1 << 32) - 1


@dataclass(frozen=True)
class TilingSet:
    """``tilings`` shifted copies of a grid of ``tiles`` tiles per dimension over the state dimensions ``dims``."""

    dims: tuple[int, ...]
    """state dimensions covered (empty: the always-hit bias tile)"""
    tilings: int = 8
    """shifted copies"""
    tiles: int = 6
    """tiles per dimension"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        if len(set(self.dims)) != len(self.dims) or any(d < 0 for d in self.dims):
            raise ValueError(f"TilingSet dims must be distinct non-negative indices, not {self.dims}")
        if not 1 <= self.tilings <= 256 or not 1 <= self.tiles <= 255:
            raise ValueError(f"TilingSet needs 1..256 tilings and 1..255 tiles, not {self.tilings}, {self.tiles}")

    @property
    def coordinates(self) -> int:
        """tile coordinates per dimension: one extra tile when shifted copies exist"""
        return self.tiles + (1 if self.tilings > 1 else 0)

    @property
    def tiles_per_tiling(self) -> int:
        """rows one copy occupies"""
        return self.coordinates ** len(self.dims)


@dataclass(frozen=True)
class TilingLayout:
    """An ordered list of tiling sets over an ``n_dims``-dimensional state."""

    sets: tuple[TilingSet, ...]
    n_dims: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sets", tuple(self.sets))
        if not self.sets:
            raise ValueError("a TilingLayout needs at least one tiling set")
        for s in self.sets:
            if any(d >= self.n_dims for d in s.dims):
                raise ValueError(f"tiling set over {s.dims} uses a dimension >= n_dims={self.n_dims}")

    @property
    def n_tilings(self) -> int:
        """tilings (copies) over all sets"""
        return sum(s.tilings for s in self.sets)

    @property
    def n_tiles(self) -> int:
        """tiles over all tilings"""
        return sum(s.tilings * s.tiles_per_tiling for s in self.sets)


@dataclass(frozen=True)
class Descriptor:
    """One tiling as a worker sees it: which dims, how to index, where its rows start in the worker's bank."""

    worker: int
    dims: tuple[int, ...]
    tiles: int
    n_t: int
    shift: int
    """copy offset in UQ0.16 tile fractions: floor(copy * 2**16 / tilings)"""
    base: int
    set_index: int = 0
    """the tiling set it came from (host bookkeeping, not sent)"""
    copy: int = 0
    """the copy within its set (host bookkeeping, not sent)"""

    @property
    def rows(self) -> int:
        """rows the tiling occupies"""
        return self.n_t ** len(self.dims)


def schedule(layout: TilingLayout, spec: ParsaSpec) -> list[Descriptor]:
    """Assign every tiling to a worker, heaviest first (longest-processing-time), and give it its rows.

    A worker reads one tiling's row per cycle, so the busiest worker's tiling count sets both CYCLES_ACT and
    CYCLES_UPDATE: tilings are taken in decreasing size (ties in layout order) and each goes to the worker with the
    fewest tilings so far among those with room for its rows (then fewest rows, then lowest index). When that
    runs out of room somewhere, the layout is scheduled again the way OPaL's heaviest-first scheduler balances
    memory: each tiling to the worker with the fewest rows (then fewest tilings, lowest index), which packs the
    banks best but may leave one worker more tilings. Returns descriptors in worker order, each worker's tilings in
    assignment order. Raises ``ValueError`` naming the limit when the layout does not fit the build (dims per set,
    tilings per worker, rows per bank).
    """
    tilings = []
    for set_index, s in enumerate(layout.sets):
        if len(s.dims) > spec.max_set_dims:
            raise ValueError(
                f"tiling set {set_index} covers {len(s.dims)} dims; this build allows {spec.max_set_dims} per set"
            )
        for copy in range(s.tilings):
            tilings.append((s.tiles_per_tiling, set_index, copy, s))
    if len(tilings) > spec.workers * spec.max_tilings:
        raise ValueError(f"{len(tilings)} tilings exceed the build's {spec.workers} workers x {spec.max_tilings}")
    tilings.sort(key=lambda t: -t[0])  # stable: ties keep layout order
    for balance in ("tilings", "rows"):
        owned = _assign(tilings, spec, balance)
        if owned is not None:
            return [d for per_worker in owned for d in per_worker]
    raise ValueError(
        f"the layout needs {layout.n_tiles} policy rows; spread over {spec.workers} workers "
        f"a bank would need more than its {spec.tiles_per_worker} rows"
    )


def _assign(tilings: list[tuple], spec: ParsaSpec, balance: str) -> list[list[Descriptor]] | None:
    """One greedy pass of :func:`schedule` balancing ``"tilings"`` or ``"rows"``; None when a tiling finds no
    worker with room."""
    rows = [0] * spec.workers
    owned: list[list[Descriptor]] = [[] for _ in range(spec.workers)]
    for size, set_index, copy, s in tilings:
        if balance == "tilings":
            candidates = [
                w
                for w in range(spec.workers)
                if len(owned[w]) < spec.max_tilings and rows[w] + size <= spec.tiles_per_worker
            ]
            worker = min(candidates, key=lambda w: (len(owned[w]), rows[w], w), default=None)
        else:
            candidates = [w for w in range(spec.workers) if len(owned[w]) < spec.max_tilings]
            worker = min(candidates, key=lambda w: (rows[w], len(owned[w]), w))
            if rows[worker] + size > spec.tiles_per_worker:
                worker = None
        if worker is None:
            return None
        shift = (copy << 16) // s.tilings
        owned[worker].append(Descriptor(worker, s.dims, s.tiles, s.coordinates, shift, rows[worker], set_index, copy))
        rows[worker] += size
    return owned


def dimension_codes(lows, highs) -> tuple[np.ndarray, np.ndarray]:
    """OFFSET (Q15.16) and SCALE (UQ8.24) codes of each dimension's bounds ``[low, high]``.

    ``u = (s - low) / (high - low)`` becomes ``((s_code - offset) * scale) >> 24`` with ``scale = round(2**24 /
    (high - low))`` per state unit: the hardware multiplies, never divides. Ranges must lie in
    [2**-7, 2**15] so that scale fits 32 bits and keeps at least 9 significant bits.
    """
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    if lows.shape != highs.shape or lows.ndim != 1:
        raise ValueError(f"lows and highs must be 1-D of one length, not {lows.shape} and {highs.shape}")
    if not (np.all(np.isfinite(lows)) and np.all(np.isfinite(highs))):
        raise ValueError("state bounds must be finite (clip infinite observation bounds to the range you expect)")
    span = highs - lows
    if np.any(span < 2.0**-7) or np.any(span > 2.0**15):
        i = int(np.flatnonzero((span < 2.0**-7) | (span > 2.0**15))[0])
        raise ValueError(f"dimension {i}: range high - low = {span[i]!r} must be in [2**-7, 2**15]")
    if np.any(np.abs(lows) >= 2.0**15):
        raise ValueError("state lower bounds must be within the Q15.16 range (|low| < 32768)")
    offsets = np.floor(lows * 65536.0 + 0.5).astype(np.int64)
    scales = np.floor(2.0**SCALE_FRAC / span + 0.5).astype(np.int64)
    return offsets, np.minimum(scales, _U32)


def float_tile_indices(layout: TilingLayout, lows, highs, state) -> list[int]:
    """Float64 reference tile coding: the global tile index hit by each tiling (layout order, copy order).

    Global index = the tiling's offset in layout order + row within the tiling; the same rows as the model's up to
    the quantization of the state (positions within 2**-12 of a tile edge may differ).
    """
    u = np.clip((np.asarray(state, float) - lows) / (np.asarray(highs, float) - lows), 0.0, 1.0 - 2.0**-16)
    out, offset = [], 0
    for s in layout.sets:
        for copy in range(s.tilings):
            index = 0
            for d in s.dims:
                index = index * s.coordinates + int(math.floor(u[d] * s.tiles + copy / s.tilings))
            out.append(offset + index)
            offset += s.tiles_per_tiling
    return out
