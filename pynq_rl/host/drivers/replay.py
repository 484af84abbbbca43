"""``ReplayCore``: the driver of the replay core (on-chip prioritized replay), bound by VLNV, the same on every backend.

The core holds the priorities of a prioritized replay buffer (Schaul et al., 2016) in a K-ary sum tree; the
transitions stay in host memory (the agent's buffer). The driver speaks floats:

* :meth:`ReplayCore.update` takes priorities ``p >= 0`` (typically ``|TD error| + eps``), stores ``p**alpha`` as
  leaf codes (round half up; a positive priority never becomes 0; too large ones saturate with a
  :class:`ReplaySaturationWarning`), one SET batch through the DMA;
* :meth:`ReplayCore.sample` draws a stratified batch on the core (its PRNG, or host uniforms) and returns the
  indices, their sampling probabilities ``P(i) = p_i**alpha / sum_k p_k**alpha`` and the importance-sampling
  weights ``(N * P(i))**-beta`` normalized by the batch maximum (``N`` = leaves with nonzero priority; it cancels
  in the normalization, so the weights are ``(min_j c_j / c_i)**beta`` of the sampled leaf codes ``c`` and cost no
  register read);
* :meth:`ReplayCore.state_dict` / :meth:`ReplayCore.load_state_dict` save and restore every leaf and the PRNG
  state exactly (DUMP + SET), so a checkpointed agent resumes with the same priorities and sample stream.

Bad input raises before anything reaches the core (nothing stored is lost on an error); every wait has a deadline.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...overlay import spec as S
from ...overlay.models import replay as model
from .arguments import float_array, integer, integer_codes, number, state_mapping
from .stream_core import StreamCore

__all__ = ["ReplayCore", "ReplaySaturationWarning"]

_RECORD = 8
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce
_SET, _SAMPLE, _SAMPLE_UNIFORM = int(S.ReplayMode.SET), int(S.ReplayMode.SAMPLE), int(S.ReplayMode.SAMPLE_UNIFORM)
_SATURATED = int(S.Status.SATURATED)  # plain ints: IntFlag arithmetic costs a microsecond a time


class ReplaySaturationWarning(UserWarning):
    """A priority**alpha exceeded the largest leaf priority and was clipped to it (sampling is no longer exact)."""


def _as_indices(indices, capacity: int) -> np.ndarray:
    array = np.asarray(indices)
    if array.ndim != 1:
        raise ValueError(f"indices must be 1-D, not shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":  # np.issubdtype(dtype, np.integer), without its microseconds
        raise TypeError(f"indices must be integers, not dtype {array.dtype}")
    # two reductions before the cast (a uint64 2**64-1 must not be reported as -1); the mask only on an error.
    # The ufuncs' own reduce: ndarray.max/min add a Python-level wrapper call each.
    if array.size and (_MAX(array) >= capacity or (array.dtype.kind == "i" and _MIN(array) < 0)):
        i = int(np.flatnonzero((array < 0) | (array >= capacity))[0])
        raise IndexError(f"indices[{i}] = {array[i]} is outside the core's capacity [0, {capacity})")
    return array.astype(np.int64, copy=False)


class ReplayCore(StreamCore):
    """Driver of the replay core: priorities in, stratified prioritized samples out.

    Not constructed directly: ``pynq.Overlay`` binds it by VLNV to ``<hierarchy>/core`` and it finds its DMA at
    ``<hierarchy>/dma``; build parameters are read back from the core's registers.

    Binding CLEARs the tree (one cycle per word of the leaf level), and so does :meth:`reprogrammed`: the core's
    deep levels are UltraRAM on the ZCU106, which has no initial contents to give them, and a core bound again
    without programming the PL still holds the previous user's priorities. Every build then starts from the empty
    tree the model starts from, whatever its memories held.

    Attributes
    ----------
    spec : ReplaySpec
        Build parameters as the core reports them.
    strict : bool
        Raise ``ValueError`` instead of warning when a priority saturates.
    """

    bindto = [S.REPLAY_VLNV]
    core_name = "replay"
    title = "Replay"

    def __init__(self, description: dict) -> None:
        super().__init__(description)
        self.spec = S.ReplaySpec(
            k=self._reg("K"),
            levels=self._reg("LEVELS"),
            leaf=S.QFormat(self._field("FORMAT", "LEAF_W"), self._field("FORMAT", "LEAF_FRAC"), signed=False),
            stream_bytes=self.stream_bytes,
        )
        if self._reg("CAPACITY") != self.spec.capacity:
            raise RuntimeError(
                f"Replay core reports CAPACITY={self._reg('CAPACITY')} but K**LEVELS = {self.spec.capacity}"
            )
        self._alpha = 0.6
        self.strict = False
        self.clear()  # an empty tree whatever the memories held (see the class docstring)

    def reprogrammed(self) -> None:
        """The PL was programmed again (:meth:`StreamCore.reprogrammed`): the tree is CLEARed, as at bind."""
        super().reprogrammed()
        self.clear()

    @property
    def alpha(self) -> float:
        """Priority exponent applied by :meth:`update`: a finite number >= 0 (0 = uniform sampling, 1 = fully
        proportional); 0.6 by default."""
        return self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        self._alpha = number("alpha", value, 0.0, math.inf)

    # -- read-outs --------------------------------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Leaves of the sum tree: the largest replay buffer this core can index."""
        return self.spec.capacity

    @property
    def total_code(self) -> int:
        """The root of the sum tree, exactly, in leaf LSBs."""
        return self._reg("TOTAL_HI") << 32 | self._reg("TOTAL")

    @property
    def total(self) -> float:
        """Sum of every stored ``priority**alpha`` (as quantized)."""
        return self.total_code * self.spec.leaf.lsb

    @property
    def nonzero(self) -> int:
        """Leaves with a nonzero priority (the transitions that can be sampled)."""
        return self._reg("NONZERO")

    def _build_parameters(self) -> dict:
        return {
            "k": self.spec.k,
            "levels": self.spec.levels,
            "capacity": self.capacity,
            "leaf_format": str(self.spec.leaf),
            "stream_bytes": self.spec.stream_bytes,
        }

    # -- operations -------------------------------------------------------------------------------------------------
    def update(self, indices, priorities, timeout_s: float | None = None) -> None:
        """Set the priorities of ``indices`` (insert and update are the same): leaf i stores ``priorities**alpha``.

        Later entries for the same index win. A priority of 0 removes the transition from sampling, also with
        ``alpha = 0`` (uniform replay: every positive priority stores 1).

        Raises
        ------
        TypeError, ValueError, IndexError
            Non-integer or out-of-range indices, mismatched lengths, negative/NaN/inf priorities, and (with
            ``strict``) saturation — all before anything is sent to the core.
        TimeoutError, RuntimeError
            The core or its DMA did not finish in time or reported an error.
        """
        indices = _as_indices(indices, self.capacity)
        if not (type(priorities) is np.ndarray and priorities.dtype == np.float64):  # else already what it becomes
            priorities = float_array("priorities", priorities, finite=False)  # the model names NaN/inf/negatives
        if priorities.shape != indices.shape:
            raise ValueError(f"priorities must have the shape of indices {indices.shape}, not {priorities.shape}")
        # checks, p**alpha, leaf codes and SET records in one pass of the model's host-side encoding
        records, saturated = model.encode_set_records(indices, priorities, self._alpha, self.spec.leaf)
        if saturated:
            message = (
                f"priority**alpha above the largest leaf priority {self.spec.leaf.max_value} "
                f"({self.spec.leaf}) was clipped to it"
            )
            if self.strict:
                raise ValueError(message)
            warnings.warn(message, ReplaySaturationWarning, stacklevel=2)
        self._set_records(records, timeout_s)

    def sample(
        self, n: int, beta: float = 0.4, uniforms=None, timeout_s: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n`` indices with probability proportional to their stored priority, stratified.

        Parameters
        ----------
        n : int
            Batch size (1 .. ``spec.max_count``); sample ``j`` falls in the ``j``-th of ``n`` equal slices of the
            total priority.
        beta : float
            Importance-sampling exponent in [0, 1].
        uniforms : array_like of uint32, optional
            ``n`` uniforms in [0, 2**32) from the host; by default the core's PRNG draws them.

        Returns
        -------
        indices : np.ndarray of int64
        probabilities : np.ndarray of float64
            ``P(i)`` of each sampled index.
        weights : np.ndarray of float32
            ``(N * P(i))**-beta / max(...)`` over the batch.

        Raises
        ------
        ValueError
            Bad ``n``, ``beta`` or ``uniforms``, or nothing to sample (every priority is 0).
        """
        if not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= self.spec.max_count:
            raise ValueError(f"n must be an integer in [1, {self.spec.max_count}], not {n!r}")
        if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= float(beta) <= 1.0):
            raise ValueError(f"beta must be a number in [0, 1], not {beta!r}")
        n = int(n)
        mode = _SAMPLE
        if uniforms is not None:
            uniforms = np.asarray(uniforms)
            if (
                uniforms.shape != (n,)
                or not np.issubdtype(uniforms.dtype, np.integer)
                or np.any(uniforms < 0)
                or np.any(uniforms > 0xFFFF_FFFF)
            ):
                raise ValueError(f"uniforms must be {n} integers in [0, 2**32)")
            mode = _SAMPLE_UNIFORM
        total = self.total_code
        if total == 0:
            raise ValueError("cannot sample: every priority in the replay core is 0 (call update() first)")
        self._write_parameter("COUNT", n)
        self._write_parameter("STRIDE", S.ReplaySpec.stride(n))
        send = None if uniforms is None else model.pack_uniforms(uniforms)
        records = self._run(mode, send, n * _RECORD, timeout_s, f"sample n={n}", n + self.spec.sample_depth)
        # the result records' index and code halves as views of the received bytes (codes stay uint32: every
        # expression below promotes them to float64 exactly, as int64 codes would)
        indices, codes = model.record_words(records.view("<u4"))
        probabilities = codes / float(total)
        # (N * P(i))**-beta / max_j (N * P(j))**-beta = (c_min / c_i)**beta: N and the total cancel
        weights = np.power(float(_MIN(codes)) / codes, float(beta))
        return indices.astype(np.int64), probabilities, weights.astype(np.float32)

    def priorities(self, timeout_s: float | None = None) -> np.ndarray:
        """Every stored leaf priority (``p**alpha`` as quantized, float64), in index order (one DUMP)."""
        return self.dump_codes(timeout_s) * self.spec.leaf.lsb

    def dump_codes(self, timeout_s: float | None = None) -> np.ndarray:
        """Every leaf code (uint32), in index order."""
        nbytes = self.capacity * 4
        return (
            self._run(S.ReplayMode.DUMP, None, nbytes, timeout_s, "dump", self.spec.dump_cycles).view(np.uint32).copy()
        )

    def clear(self, timeout_s: float | None = None) -> None:
        """Set every priority to 0 (nothing can be sampled until the next update)."""
        self._run(S.ReplayMode.CLEAR, None, 0, timeout_s, "clear", self.spec.k ** (self.spec.levels - 1))

    def state_dict(self) -> dict:
        """Everything needed to restore this core exactly: build parameters, alpha, leaf codes, PRNG state."""
        return {
            "k": self.spec.k,
            "levels": self.spec.levels,
            "leaf_width": self.spec.leaf.width,
            "leaf_frac": self.spec.leaf.frac,
            "alpha": self.alpha,
            "codes": self.dump_codes(),
            "seed": self.seed,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`; the build parameters must match (checked before the core is touched)."""
        expected = {
            "k": self.spec.k,
            "levels": self.spec.levels,
            "leaf_width": self.spec.leaf.width,
            "leaf_frac": self.spec.leaf.frac,
        }
        state = state_mapping("state", state, [*expected, "codes", "seed", "alpha"])
        found = {name: state.get(name) for name in expected}
        if found != expected:
            raise ValueError(f"state_dict is for a replay core with {found}, this core has {expected}")
        # every field is checked before the core is touched: a refused state leaves the stored priorities alone
        codes = integer_codes("state['codes']", state["codes"], (self.capacity,), 0, self.spec.leaf.max_code)
        seed = integer("state['seed']", state["seed"], 0, 0xFFFF_FFFF)
        alpha = number("state['alpha']", state["alpha"], 0.0, math.inf)
        self.clear()
        stored = np.flatnonzero(codes)
        self._set_codes(stored, codes[stored], None)
        self.seed = seed
        self.alpha = alpha

    # -- transfers --------------------------------------------------------------------------------------------------
    def _set_codes(self, indices: np.ndarray, codes: np.ndarray, timeout_s: float | None) -> None:
        """SET ``codes`` (already validated) at ``indices``."""
        self._set_records(model.pack_set(indices, codes), timeout_s)

    def _set_records(self, records: np.ndarray, timeout_s: float | None) -> None:
        """SET batches of at most ``max_count`` records (uint64, as :func:`~pynq_rl.overlay.models.replay.pack_set`
        makes them)."""
        chunk = self.spec.max_count
        for start in range(0, len(records), chunk):
            part = records[start : start + chunk]
            self._run(_SET, part, 0, timeout_s, f"set of {len(part)} records", len(part) + self.spec.set_depth)

    def _run(
        self, mode: int, send: np.ndarray | None, recv_bytes: int, timeout_s: float | None, what: str, cycles: int
    ) -> np.ndarray:
        """One operation whose core work takes ``cycles`` (the spec's formula; see ``StreamCore._transfer``)."""
        out = self._transfer(mode, send, recv_bytes, timeout_s, what, cycles)
        if self._last_status & _SATURATED:  # the driver saturates first, so the core never should
            raise RuntimeError(f"Replay core saturated a leaf during {what}: driver and core disagree on the format")
        return out

    def _describe_errors(self, status: S.Status, what: str) -> str:
        messages = []
        if status & S.Status.ERR_CONFIG:
            messages.append(
                f"Replay core refused {what} (COUNT={self._reg('COUNT')}, STRIDE={self._reg('STRIDE')}, "
                f"TOTAL={self.total_code}, or an index beyond capacity {self.capacity})"
            )
        if status & S.Status.ERR_STREAM:
            messages.append(f"Replay core input stream of {what} ended early or ran long (TLAST misplaced)")
        return "; ".join(messages)
