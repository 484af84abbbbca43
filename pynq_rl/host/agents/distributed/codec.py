"""The wire format of the replay service: numpy arrays <-> the ``Tensor`` / ``Transitions`` messages of
``replay.proto``, with the checks the server relies on, and the gRPC options client and server share.

An array travels as its numpy dtype name, its shape and its C-order little-endian bytes. Decoding never trusts the
message: an unknown dtype, a shape that disagrees with the byte count, or a missing field raises ``ValueError`` with
the field's name in the message, which the server turns into ``INVALID_ARGUMENT``.

A batch of transitions is a dict with the SB3 field names of :data:`TRANSITION_FIELDS`, one row per transition:
``observations`` and ``next_observations`` ``(n, *obs_shape)``, ``actions`` ``(n,)`` int64, ``rewards`` ``(n,)``
float32 (the n-step discounted reward sum), ``discounts`` ``(n,)`` float32 (``gamma**k`` for a k-step transition that
bootstraps, 0 where ``next_observations`` is terminal).

Packed frames (a server with ``obs_dtype="zlib"``): the actor compresses each transition's uint8 observation and next
observation once, as one zlib stream that holds the screens the two frame stacks share once (:func:`pack_batch`), and
the batch carries ``frames`` (a list of those rows) and ``frames_shape`` (the observation shape)
instead of ``observations`` and ``next_observations``. The server stores and forwards the rows as opaque bytes (the
replay core needs only priorities and slots); the learner decompresses the sampled rows (:func:`unpack_batch`).
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import replay_pb2 as pb

__all__ = [
    "TRANSITION_FIELDS",
    "ALLOWED_DTYPES",
    "OBS_DTYPES",
    "check_obs_dtype",
    "COMPRESSIONS",
    "grpc_compression",
    "GRPC_OPTIONS",
    "MAX_MESSAGE_BYTES",
    "TOKEN_ENV",
    "TLS_CA_ENV",
    "ACCESS_ENV",
    "max_sample_rows",
    "resolve_token",
    "read_pem",
    "pem_labels",
    "to_tensor",
    "from_tensor",
    "encode_transitions",
    "decode_transitions",
    "check_batch",
    "FRAME_LEVEL",
    "stored_fields",
    "pack_batch",
    "unpack_batch",
]

MAX_MESSAGE_BYTES = 64 << 20
"""the largest message either end sends or accepts (gRPC refuses a larger one with ``RESOURCE_EXHAUSTED`` before
decoding it)"""
_SAMPLE_ROW_BYTES = 8 + 4 + 4 + 8 + 4 + 8
"""bytes of one sampled row besides its two float32 observations: action int64, reward and discount float32, index
int64, weight float32, version uint64"""
_MESSAGE_OVERHEAD_BYTES = 64 << 10
"""room left in a message for field tags, dtype names and shapes"""


def max_sample_rows(obs_shape: tuple[int, ...], obs_itemsize: int = 4) -> int:
    """How many sampled transitions of observations shaped ``obs_shape`` fit in one ``SampleReply``.

    Parameters
    ----------
    obs_shape : tuple of int
        Shape of one observation (twice per row on the wire: ``observations`` and ``next_observations``).
    obs_itemsize : int
        Bytes per observation element (4: float32, 1: uint8 frames).

    Returns
    -------
    int
        ``(MAX_MESSAGE_BYTES - 64 KiB) // row_bytes``, at least 1.
    """
    row_bytes = 2 * int(obs_itemsize) * int(np.prod(obs_shape, dtype=np.int64)) + _SAMPLE_ROW_BYTES
    return max(1, (MAX_MESSAGE_BYTES - _MESSAGE_OVERHEAD_BYTES) // row_bytes)


GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.so_reuseport", 0),
]
"""channel and server options both ends use: message size limits (64 MiB: a sample of 4096 Atari frames) and no
port sharing (a second server on a port must fail)"""

COMPRESSIONS = ("gzip", "deflate")
"""message compressions client and server may ask gRPC for (None: none)"""


def grpc_compression(name: str | None):
    """The ``grpc.Compression`` for ``name`` (:data:`COMPRESSIONS`), or None for None.

    Raises
    ------
    ValueError
        Any other name.
    """
    import grpc

    if name is None:
        return None
    if name not in COMPRESSIONS:
        raise ValueError(f"compression must be None or one of {COMPRESSIONS}, not {name!r}")
    return grpc.Compression.Gzip if name == "gzip" else grpc.Compression.Deflate


TOKEN_ENV = "PYNQ_RL_REPLAY_TOKEN"
"""environment variable holding the shared token (server and clients read it when given no ``token``)"""


def resolve_token(token: str | None) -> str:
    """The token to use: ``token`` itself, or ``$PYNQ_RL_REPLAY_TOKEN`` when it is None; ``""`` means no token.

    Raises
    ------
    TypeError
        ``token`` is neither None nor a string.
    """
    if token is None:
        return os.environ.get(TOKEN_ENV, "")
    if not isinstance(token, str):
        raise TypeError(f"token must be a string or None, not {type(token).__name__}")
    return token


TLS_CA_ENV = "PYNQ_RL_REPLAY_TLS_CA"
"""environment variable naming the PEM certificate clients trust (and then connect with TLS) when given no
``tls_ca``"""
ACCESS_ENV = (TOKEN_ENV, TLS_CA_ENV)
"""the variables that configure access to a replay server (``pynq-rl train apex`` passes them to every Ray worker)"""


_PEM_BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----")


def read_pem(path: str | os.PathLike, what: str) -> bytes:
    """The bytes of the PEM file ``path``, which ``what`` (``"TLS key"``, ``"tls_ca"``) names in errors.

    Raises
    ------
    ValueError
        The file cannot be read, or holds no ``-----BEGIN `` armour (DER, a typo'd path to some other file): one
        line naming ``what`` and ``path``, for a start-up error rather than a traceback or gRPC's later
        ``empty address list``.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise ValueError(f"{what} {os.fspath(path)}: cannot read it ({error.strerror or error})") from None
    if not pem_labels(data):
        raise ValueError(f"{what} {os.fspath(path)} is not PEM (no '-----BEGIN ' armour)")
    return data


def pem_labels(data: bytes) -> set[str]:
    """The labels of the PEM blocks in ``data`` (``"CERTIFICATE"``, ``"PRIVATE KEY"``, ``"RSA PRIVATE KEY"``, ...)."""
    return {label.decode() for label in _PEM_BEGIN.findall(data)}


TRANSITION_FIELDS = ("observations", "actions", "rewards", "next_observations", "discounts")
"""the fields of a transition batch, in message order"""
ALLOWED_DTYPES = frozenset({"float32", "float64", "int64", "int32", "uint8", "uint64", "bool"})
"""dtypes a Tensor may carry (nothing that needs pickling)"""
MAX_DIMS = 8
"""the largest number of dimensions a Tensor may declare"""


def to_tensor(array: np.ndarray, message: pb.Tensor | None = None) -> pb.Tensor:
    """Fill (or make) a ``Tensor`` message from ``array`` (converted to C order, little endian)."""
    array = np.ascontiguousarray(array)
    if array.dtype.name not in ALLOWED_DTYPES:
        raise TypeError(f"cannot send arrays of dtype {array.dtype.name}; allowed: {sorted(ALLOWED_DTYPES)}")
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    message = pb.Tensor() if message is None else message
    message.dtype = array.dtype.name
    message.shape[:] = array.shape
    message.data = array.tobytes()
    return message


def _elements(shape: tuple[int, ...], field: str) -> int:
    """The element count of ``shape``, in Python integers (an int64 product wraps: ``2**32 * 2**32`` is 0).

    Raises
    ------
    ValueError
        A dimension, or the count, larger than one message of :data:`MAX_MESSAGE_BYTES` could carry (checked
        before anything is allocated or reshaped), naming ``field`` and the shape.
    """
    if any(d > MAX_MESSAGE_BYTES for d in shape):
        raise ValueError(
            f"{field}: shape {shape} has a dimension larger than one message of {MAX_MESSAGE_BYTES} bytes can carry"
        )
    elements = math.prod(shape)
    if elements > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"{field}: shape {shape} has {elements} elements: more elements than one message of "
            f"{MAX_MESSAGE_BYTES} bytes can carry"
        )
    return elements


def from_tensor(message: pb.Tensor, field: str) -> np.ndarray:
    """The array a ``Tensor`` carries (a read-only view of the message bytes).

    Raises
    ------
    ValueError
        Unknown dtype, negative or too many dimensions, a shape larger than one message could carry, or a byte count
        that is not ``prod(shape) * itemsize`` (all checked before the bytes are reshaped).
    """
    if message.dtype not in ALLOWED_DTYPES:
        raise ValueError(f"{field}: dtype must be one of {sorted(ALLOWED_DTYPES)}, not {message.dtype!r}")
    shape = tuple(int(d) for d in message.shape)
    if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
        raise ValueError(f"{field}: shape must have at most {MAX_DIMS} non-negative dimensions, not {shape}")
    dtype = np.dtype(message.dtype).newbyteorder("<")
    expected = _elements(shape, field) * dtype.itemsize
    if len(message.data) != expected:
        raise ValueError(
            f"{field}: {len(message.data)} bytes of data do not hold a {message.dtype} array of shape "
            f"{shape} ({expected} bytes)"
        )
    return np.frombuffer(message.data, dtype=dtype).reshape(shape)


def encode_transitions(batch: Mapping[str, Any], message: pb.Transitions | None = None) -> pb.Transitions:
    """Fill (or make) a ``Transitions`` message from a dict with the fields of :data:`TRANSITION_FIELDS`: arrays, or a
    packed batch's (:func:`pack_batch`) ``frames`` (a list of bytes) and ``frames_shape`` (a tuple)."""
    message = pb.Transitions() if message is None else message
    packed = "frames" in batch
    fields = stored_fields("zlib" if packed else "uint8")
    missing = [name for name in fields if name not in batch]
    if missing:
        raise KeyError(f"transition batch lacks the fields {missing}")
    for name in fields:
        if name != "frames":
            to_tensor(np.asarray(batch[name]), getattr(message, name))
    if packed:
        message.frames.obs_shape[:] = [int(d) for d in batch["frames_shape"]]
        message.frames.rows.extend(batch["frames"])
    return message


def decode_transitions(message: pb.Transitions) -> dict[str, np.ndarray]:
    """The dict of arrays a ``Transitions`` message carries (shapes not yet checked: see :func:`check_batch`).

    A message with packed frames gives ``frames`` (the list of compressed rows, not decompressed) and
    ``frames_shape`` instead of ``observations`` and ``next_observations``.

    Raises
    ------
    ValueError
        A missing field, or a tensor or ``frames.obs_shape`` that :func:`from_tensor` or the frame shape check
        refuses (named).
    """
    packed = message.HasField("frames")
    batch: dict = {}
    for name in stored_fields("zlib" if packed else "uint8"):
        if name == "frames":
            batch["frames"] = list(message.frames.rows)
            batch["frames_shape"] = _frames_shape(message.frames.obs_shape)
            continue
        if not message.HasField(name):
            raise ValueError(f"transitions.{name} is missing")
        batch[name] = from_tensor(getattr(message, name), f"transitions.{name}")
    return batch


def _frames_shape(obs_shape) -> tuple[int, ...]:
    """``transitions.frames.obs_shape`` as a tuple, if it can be the shape of one observation: 1 to :data:`MAX_DIMS`
    dimensions >= 1 whose product fits in a message (:func:`unpack_batch` allocates and reshapes by it).

    Raises
    ------
    ValueError
        Any other shape, named.
    """
    shape = tuple(int(d) for d in obs_shape)
    if not 1 <= len(shape) <= MAX_DIMS or any(d < 1 for d in shape) or math.prod(shape) > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"transitions.frames.obs_shape must be 1 to {MAX_DIMS} dimensions >= 1 of at most {MAX_MESSAGE_BYTES} "
            f"elements in all, not {shape}"
        )
    return shape


OBS_DTYPES = ("float32", "uint8", "zlib")
"""how a replay server may store observations: float32 vectors (CartPole), uint8 frames (Atari, 4x84x84), or uint8
frames packed by the actor (:func:`pack_batch`), stored and sampled as the compressed rows"""
FRAME_LEVEL = 6
"""zlib level of :func:`pack_batch`. Measured on a sampled batch of 32 synthetic Breakout transitions
(``benchmarks/apex_topology.py``, 1.81 MB raw): 17.4 KB packed at level 6 (3.5 ms to pack, 0.8 ms to unpack), 27.3 KB
at 3, 56.0 KB at 1, 16.4 KB at 9 (17 ms to pack); gzip-6 of the whole reply, what gRPC compression did, is 23.3 KB
and 6.1 ms on the replay node per sample"""
_ZLIB_SLACK = 1024
"""bytes a packed row may exceed two observations by (its shift byte, and zlib's 5 bytes per 16 KiB stored block
plus header on incompressible screens)"""


def stored_fields(obs_dtype: str) -> tuple[str, ...]:
    """The fields a batch carries for a server storing ``obs_dtype``: :data:`TRANSITION_FIELDS`, or with
    ``"zlib"`` ``frames`` in place of ``observations`` and ``next_observations``."""
    if check_obs_dtype(obs_dtype) == "zlib":
        return ("frames", "actions", "rewards", "discounts")
    return TRANSITION_FIELDS


def _stack_shift(observation: np.ndarray, next_observation: np.ndarray) -> int:
    """The smallest ``k`` with ``next_observation[:S - k] == observation[k:]`` (a frame stack ``S`` long moved on by
    ``k`` screens: 1 for a 1-step transition, n for an n-step one); ``S`` when they share nothing."""
    stack = len(observation)
    for k in range(stack):
        if np.array_equal(next_observation[: stack - k], observation[k:]):
            return k
    return stack


def pack_batch(batch: Mapping[str, np.ndarray], level: int = FRAME_LEVEL) -> dict:
    """``batch`` with its uint8 ``observations`` and ``next_observations`` packed: one zlib stream per transition.

    Row ``i`` is ``zlib.compress(bytes([k]) + observations[i] + next_observations[i][S - k:])``: the frame stack's
    first axis (``S`` screens) moves on by ``k`` screens from one observation to the next, so only the ``k`` new
    screens are stored (``k = S``: nothing shared, the whole next observation). zlib alone finds few of those
    repeats: at level 6 its match search gives up before it reaches a screen 21 KB back.

    Returns
    -------
    dict
        The other fields as given, ``frames`` (a list of bytes, one row per transition) and ``frames_shape`` (the
        shape of one observation).

    Raises
    ------
    ValueError
        Observations that are not uint8 arrays of one shape with at least one row, or a level outside 0-9.
    """
    if not (isinstance(level, (int, np.integer)) and 0 <= int(level) <= 9):
        raise ValueError(f"level must be an integer zlib level 0-9, not {level!r}")
    observations, next_observations = np.asarray(batch["observations"]), np.asarray(batch["next_observations"])
    for name, array in (("observations", observations), ("next_observations", next_observations)):
        if array.dtype != np.uint8 or array.ndim < 2:
            raise ValueError(
                f"{name} must be uint8 frames shaped (n, *obs_shape) to pack, not {array.dtype} of shape {array.shape}"
            )
    if observations.shape != next_observations.shape or len(observations) < 1:
        raise ValueError(
            f"observations {observations.shape} and next_observations {next_observations.shape} must "
            f"have one shape and at least one row"
        )
    stack = observations.shape[1]
    rows = []
    for observation, next_observation in zip(observations, next_observations):
        k = _stack_shift(observation, next_observation)
        rows.append(
            zlib.compress(bytes([k]) + observation.tobytes() + next_observation[stack - k :].tobytes(), int(level))
        )
    out: dict[str, Any] = {
        name: value for name, value in batch.items() if name not in ("observations", "next_observations")
    }
    out["frames"] = rows
    out["frames_shape"] = observations.shape[1:]
    return out


def unpack_batch(batch: Mapping[str, np.ndarray]) -> dict:
    """``batch`` with packed ``frames`` (:func:`pack_batch`) turned back into uint8 ``observations`` and
    ``next_observations``.

    Raises
    ------
    ValueError
        A row that is not one complete zlib stream of a valid shift and the screens it implies (the message names
        the row).
    """
    shape = tuple(int(d) for d in batch["frames_shape"])
    stack, screen = shape[0], int(np.prod(shape[1:], dtype=np.int64))
    n = len(batch["frames"])
    observations = np.empty((n,) + shape, dtype=np.uint8)
    next_observations = np.empty((n,) + shape, dtype=np.uint8)
    for i, row in enumerate(batch["frames"]):
        stream = zlib.decompressobj()
        try:
            data = stream.decompress(row, 1 + 2 * stack * screen + 1)
        except zlib.error as error:
            raise ValueError(f"frames row {i} is not a zlib stream ({error})") from None
        k = data[0] if data else stack + 1
        if k > stack or len(data) != 1 + (stack + k) * screen or not stream.eof or stream.unused_data:
            raise ValueError(
                f"frames row {i} does not hold a shift and the screens of two uint8 observations of shape {shape}"
            )
        screens = np.frombuffer(data, dtype=np.uint8, offset=1).reshape((stack + k,) + shape[1:])
        observations[i] = screens[:stack]
        next_observations[i] = screens[k:]
    out = {name: value for name, value in batch.items() if name not in ("frames", "frames_shape")}
    out["observations"] = observations
    out["next_observations"] = next_observations
    return out


def check_obs_dtype(obs_dtype: str) -> str:
    """``obs_dtype`` if it is one of :data:`OBS_DTYPES`.

    Raises
    ------
    ValueError
        Any other value.
    """
    if obs_dtype not in OBS_DTYPES:
        raise ValueError(f"obs_dtype must be one of {OBS_DTYPES}, not {obs_dtype!r}")
    return obs_dtype


def check_batch(
    batch: Mapping[str, np.ndarray],
    obs_shape: tuple[int, ...],
    priorities: np.ndarray | None = None,
    obs_dtype: str = "float32",
) -> dict[str, np.ndarray]:
    """Check a transition batch against the server's layout; return it converted to the storage dtypes.

    Parameters
    ----------
    batch : mapping of str to array
        The fields of :func:`stored_fields` (with ``"zlib"``: ``frames`` and ``frames_shape``, see
        :func:`pack_batch`).
    obs_shape : tuple of int
        The shape of one observation the server stores.
    priorities : array, optional
        Initial priorities, one per transition: finite and >= 0.
    obs_dtype : str
        How the server stores observations (:data:`OBS_DTYPES`): ``"float32"`` converts any real array;
        ``"uint8"`` (frames) takes uint8 arrays only, so a frame is never silently rounded or wrapped; ``"zlib"``
        takes packed frames only, and checks their count, shape and sizes without decompressing them (a damaged
        row is refused by :func:`unpack_batch` at the learner).

    Returns
    -------
    dict
        ``observations``/``next_observations`` float32 (or uint8; with ``"zlib"``: ``frames``, a list of bytes),
        ``actions`` int64, ``rewards``/``discounts`` float32 and,
        when given, ``priorities`` float64.

    Raises
    ------
    ValueError
        A field of the wrong shape or kind, an empty batch, non-finite values, discounts outside [0, 1], negative
        actions or priorities.
    """
    fields = stored_fields(obs_dtype)
    if not isinstance(batch, Mapping):
        raise TypeError(f"transitions must be a mapping of {fields}, not {type(batch).__name__}")
    if obs_dtype == "zlib" and "frames" not in batch and "observations" in batch:
        raise ValueError(
            "this server stores packed frames (obs_dtype zlib): push frames (codec.pack_batch), not observations"
        )
    if obs_dtype != "zlib" and "frames" in batch:
        raise ValueError(f"this server stores {obs_dtype} observations: push observations, not packed frames")
    missing = [name for name in fields if name not in batch]
    if missing:
        raise ValueError(f"transitions lacks the fields {missing}")
    if obs_dtype == "zlib":
        return _check_packed(batch, obs_shape, priorities)
    observations = np.asarray(batch["observations"])
    if observations.ndim != 1 + len(obs_shape) or observations.shape[1:] != tuple(obs_shape):
        raise ValueError(
            f"transitions.observations must have shape (n, {', '.join(map(str, obs_shape))}), not {observations.shape}"
        )
    n = observations.shape[0]
    if obs_dtype == "uint8":
        for name in ("observations", "next_observations"):
            dtype = np.asarray(batch[name]).dtype
            if dtype != np.uint8:
                raise ValueError(f"transitions.{name} must be uint8 frames on this server, not dtype {dtype}")
    if n < 1:
        raise ValueError("a transition batch must hold at least one transition, not 0")
    if np.shape(batch["next_observations"]) != observations.shape:
        raise ValueError(
            f"transitions.next_observations must have shape {observations.shape}, not "
            f"{np.shape(batch['next_observations'])}"
        )
    out = {
        "observations": observations.astype(obs_dtype),
        "next_observations": np.asarray(batch["next_observations"]).astype(obs_dtype),
    }
    for name in ("observations", "next_observations"):
        if out[name].dtype.kind == "f" and not np.all(np.isfinite(out[name])):
            raise ValueError(f"transitions.{name} holds NaN or infinite values")
    return _check_rows(batch, n, out, priorities)


def _check_packed(batch: Mapping, obs_shape: tuple[int, ...], priorities: np.ndarray | None) -> dict:
    """:func:`check_batch` for packed frames: a list of bytes rows for ``obs_shape``, each no longer than a zlib
    stream of two observations can be (not decompressed: the server never looks inside)."""
    frames = batch["frames"]
    if not isinstance(frames, (list, tuple)) or not all(isinstance(row, bytes) for row in frames):
        raise ValueError("transitions.frames must be a list of bytes, one compressed row per transition")
    n = len(frames)
    if n < 1:
        raise ValueError("a transition batch must hold at least one transition, not 0")
    shape = tuple(int(d) for d in batch.get("frames_shape", ()))
    if shape != tuple(obs_shape):
        raise ValueError(
            f"transitions.frames hold observations of shape {shape}, this server stores {tuple(obs_shape)}"
        )
    limit = 2 * int(np.prod(obs_shape, dtype=np.int64)) + _ZLIB_SLACK
    bad = [i for i, row in enumerate(frames) if not 0 < len(row) <= limit]
    if bad:
        raise ValueError(
            f"transitions.frames row {bad[0]} has {len(frames[bad[0]])} bytes: a packed row of two "
            f"observations has 1 to {limit}"
        )
    return _check_rows(batch, n, {"frames": list(frames)}, priorities)


def _check_rows(batch: Mapping, n: int, out: dict, priorities: np.ndarray | None) -> dict:
    """The per-transition scalar fields and priorities of :func:`check_batch`, added to ``out``."""
    for name in ("actions", "rewards", "discounts"):
        if np.shape(batch[name]) != (n,):
            raise ValueError(f"transitions.{name} must have shape {(n,)}, not {np.shape(batch[name])}")
    actions = np.asarray(batch["actions"])
    if not (np.issubdtype(actions.dtype, np.integer) or actions.dtype == np.bool_):
        raise ValueError(f"transitions.actions must be integers, not dtype {actions.dtype}")
    out.update(
        actions=actions.astype(np.int64),
        rewards=np.asarray(batch["rewards"]).astype(np.float32),
        discounts=np.asarray(batch["discounts"]).astype(np.float32),
    )
    if np.any(out["actions"] < 0):
        raise ValueError(f"transitions.actions must be >= 0, not {int(out['actions'].min())}")
    for name in ("rewards", "discounts"):
        if not np.all(np.isfinite(out[name])):
            raise ValueError(f"transitions.{name} holds NaN or infinite values")
    if np.any((out["discounts"] < 0) | (out["discounts"] > 1)):
        raise ValueError("transitions.discounts must lie in [0, 1] (gamma**k, 0 at a terminal state)")
    if priorities is not None:
        try:
            priorities = np.asarray(priorities, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"priorities must be numbers, one per transition ({error})") from None
        if priorities.shape != (n,):
            raise ValueError(f"priorities must have shape ({n},), one per transition, not {priorities.shape}")
        if not np.all(np.isfinite(priorities)) or np.any(priorities < 0):
            raise ValueError("priorities must be finite and >= 0")
        out["priorities"] = priorities
    return out
