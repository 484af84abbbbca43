"""The GAE core's stream formats: input records (raw, q8, and q8-runs with its header records) and output records,
packed and unpacked exactly as the core reads and writes them (:class:`~pynq_rl.overlay.spec.GaeSpec` documents the
formats); an operation's environments go in LANES-wide lane-batches, its steps in the chunk order of
:meth:`~pynq_rl.overlay.spec.GaeSpec.stream_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spec import GaeMode, GaeSpec
from .gae_encoding import Q8Runs

__all__ = [
    "input_record_dtype",
    "output_record_dtype",
    "batches",
    "pack_input",
    "unpack_input",
    "pack_input_runs",
    "unpack_input_runs",
    "pack_output",
    "unpack_output",
]


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


@dataclass(frozen=True)
class _RunsLayout:
    """Where the bytes of one lane-batch's q8-runs stream go: runs of ``2 x header`` bytes then ``run_length`` data
    records, the last run cut short (``length`` bytes in all)."""

    spec: GaeSpec
    n_steps: int

    @property
    def n_rows(self) -> int:
        return self.n_steps + 1

    @property
    def n_runs(self) -> int:
        return self.spec.runs(self.n_rows)

    @property
    def data_bytes(self) -> int:
        return self.spec.input_record_bytes(GaeMode.Q8_RUNS)

    @property
    def head_bytes(self) -> int:
        return 2 * self.spec.header_record_bytes

    @property
    def per_run(self) -> int:
        return self.head_bytes + self.spec.run_length * self.data_bytes

    @property
    def length(self) -> int:
        return self.spec.input_batch_bytes(GaeMode.Q8_RUNS, self.n_steps)


def pack_input_runs(spec: GaeSpec, rewards: Q8Runs, values: Q8Runs, dones: np.ndarray) -> np.ndarray:
    """The q8-runs input stream of one operation, as bytes: each lane-batch's records (:func:`pack_input`, q8 record
    format) cut into runs of RUN_LENGTH in stream order, each run after its SCALE and OFFSET header records
    (raw-record format: the reward field the lanes' reward words, the value field their value words).

    ``rewards`` and ``values`` come from :func:`~pynq_rl.overlay.models.gae_encoding.encode_rollout_runs`.
    """
    n_steps, n_envs = rewards.codes.shape
    n_batches, lay = batches(spec, n_envs), _RunsLayout(spec, n_steps)
    records = pack_input(spec, GaeMode.Q8_RUNS, rewards.codes, values.codes, dones)
    data = np.zeros((n_batches, lay.n_runs * spec.run_length * lay.data_bytes), dtype=np.uint8)
    data[:, : lay.n_rows * lay.data_bytes] = records.view(np.uint8).reshape(n_batches, -1)
    headers = np.zeros((n_batches, lay.n_runs, 2), dtype=input_record_dtype(spec, GaeMode.RAW))
    for slot, (r_word, v_word) in enumerate(((rewards.scale, values.scale), (rewards.offset, values.offset))):
        headers["reward"][:, :, slot] = _to_batches(spec, r_word)
        headers["value"][:, :, slot] = _to_batches(spec, v_word)
    body = np.zeros((n_batches, lay.n_runs, lay.per_run), dtype=np.uint8)
    body[:, :, : lay.head_bytes] = headers.view(np.uint8).reshape(n_batches, lay.n_runs, -1)
    body[:, :, lay.head_bytes :] = data.reshape(n_batches, lay.n_runs, -1)
    return body.reshape(n_batches, -1)[:, : lay.length].reshape(-1)


def unpack_input_runs(
    spec: GaeSpec, stream: np.ndarray, n_steps: int, n_lanes: int, n_batches: int = 1
) -> tuple[np.ndarray, ...]:
    """Inverse of :func:`pack_input_runs`: codes (T, N), (T + 1, N), dones (T, N), then every element's SCALE and
    OFFSET as the core reads them (R_SCALE, R_OFFSET shaped like the rewards, V_SCALE, V_OFFSET like the values;
    a SCALE is the header word's low 25 bits, signed)."""
    lay = _RunsLayout(spec, n_steps)
    body = np.zeros((n_batches, lay.n_runs * lay.per_run), dtype=np.uint8)
    body[:, : lay.length] = np.asarray(stream, dtype=np.uint8).reshape(n_batches, lay.length)
    body = body.reshape(n_batches, lay.n_runs, lay.per_run)
    records = body[:, :, lay.head_bytes :].reshape(n_batches, -1)[:, : lay.n_rows * lay.data_bytes].reshape(-1)
    records = records.view(input_record_dtype(spec, GaeMode.Q8_RUNS))
    rewards, values, dones = unpack_input(spec, GaeMode.Q8_RUNS, records, n_lanes, n_batches)
    headers = np.ascontiguousarray(body[:, :, : lay.head_bytes]).view(input_record_dtype(spec, GaeMode.RAW))
    headers = headers.reshape(n_batches, lay.n_runs, 2)
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
