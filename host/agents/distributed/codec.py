"""The wire format of the replay service: numpy arrays <-> the ``Tensor`` / ``Transitions`` messages of
``replay.proto``, with the checks the server relies on, and the gRPC options client and server share.

An array travels as its numpy dtype name, its shape and its C-order little-endian bytes. Decoding never trusts the
message: an unknown dtype, a shape that disagrees with the byte count, or a missing field raises ``ValueError`` with
the field's name in the message, which the server turns into ``INVALID_ARGUMENT``.

A batch of transitions is a dict with the SB3 field names of :data:`TRANSITION_FIELDS`, one row per transition:
``observations`` and ``next_observations`` ``(n, *obs_shape)``, ``actions`` ``(n,)`` int64, ``rewards`` ``(n,)``
float32 (the n-step discounted reward sum), ``discounts`` ``(n,)`` float32 (``gamma**k`` for a k-step transition that
bootstraps, 0 where ``next_observations`` is terminal).
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from . import replay_pb2 as pb

__all__ = ["TRANSITION_FIELDS", "ALLOWED_DTYPES", "OBS_DTYPES", "check_obs_dtype", "COMPRESSIONS",
           "grpc_compression", "GRPC_OPTIONS", "MAX_MESSAGE_BYTES", "TOKEN_ENV", "TLS_CA_ENV",
           "ACCESS_ENV", "max_sample_rows",
           "resolve_token", "to_tensor", "from_tensor", "encode_transitions", "decode_transitions", "check_batch"]

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


GRPC_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0)]
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


def from_tensor(message: pb.Tensor, field: str) -> np.ndarray:
    """The array a ``Tensor`` carries (a read-only view of the message bytes).

    Raises
    ------
    ValueError
        Unknown dtype, negative or too many dimensions, or a byte count that is not ``prod(shape) * itemsize``.
    """
    if message.dtype not in ALLOWED_DTYPES:
        raise ValueError(f"{field}: dtype must be one of {sorted(ALLOWED_DTYPES)}, not {message.dtype!r}")
    shape = tuple(int(d) for d in message.shape)
    if len(shape) > MAX_DIMS or any(d < 0 for d in shape):
        raise ValueError(f"{field}: shape must have at most {MAX_DIMS} non-negative dimensions, not {shape}")
    dtype = np.dtype(message.dtype).newbyteorder("<")
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(message.data) != expected:
        raise ValueError(f"{field}: {len(message.data)} bytes of data do not hold a {message.dtype} array of shape "
                         f"{shape} ({expected} bytes)")
    return np.frombuffer(message.data, dtype=dtype).reshape(shape)


def encode_transitions(batch: Mapping[str, np.ndarray], message: pb.Transitions | None = None) -> pb.Transitions:
    """Fill (or make) a ``Transitions`` message from a dict with the fields of :data:`TRANSITION_FIELDS`."""
    message = pb.Transitions() if message is None else message
    missing = [name for name in TRANSITION_FIELDS if name not in batch]
    if missing:
        raise KeyError(f"transition batch lacks the fields {missing}")
    for name in TRANSITION_FIELDS:
        to_tensor(np.asarray(batch[name]), getattr(message, name))
    return message


def decode_transitions(message: pb.Transitions) -> dict[str, np.ndarray]:
    """The dict of arrays a ``Transitions`` message carries (shapes not yet checked: see :func:`check_batch`)."""
    batch = {}
    for name in TRANSITION_FIELDS:
        if not message.HasField(name):
            raise ValueError(f"transitions.{name} is missing")
        batch[name] = from_tensor(getattr(message, name), f"transitions.{name}")
    return batch


OBS_DTYPES = ("float32", "uint8")
"""how a replay server may store observations: float32 vectors (CartPole) or uint8 frames (Atari, 4x84x84)"""


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


def check_batch(batch: Mapping[str, np.ndarray], obs_shape: tuple[int, ...],
                priorities: np.ndarray | None = None, obs_dtype: str = "float32") -> dict[str, np.ndarray]:
    """Check a transition batch against the server's layout; return it converted to the storage dtypes.

    Parameters
    ----------
    batch : mapping of str to array
        The fields of :data:`TRANSITION_FIELDS`.
    obs_shape : tuple of int
        The shape of one observation the server stores.
    priorities : array, optional
        Initial priorities, one per transition: finite and >= 0.
    obs_dtype : str
        How the server stores observations (:data:`OBS_DTYPES`): ``"float32"`` converts any real array;
        ``"uint8"`` (frames) takes uint8 arrays only, so a frame is never silently rounded or wrapped.

    Returns
    -------
    dict
        ``observations``/``next_observations`` float32 (or uint8), ``actions`` int64, ``rewards``/``discounts`` float32 and,
        when given, ``priorities`` float64.

    Raises
    ------
    ValueError
        A field of the wrong shape or kind, an empty batch, non-finite values, discounts outside [0, 1], negative
        actions or priorities.
    """
    if not isinstance(batch, Mapping):
        raise TypeError(f"transitions must be a mapping of {TRANSITION_FIELDS}, not {type(batch).__name__}")
    missing = [name for name in TRANSITION_FIELDS if name not in batch]
    if missing:
        raise ValueError(f"transitions lacks the fields {missing}")
    observations = np.asarray(batch["observations"])
    if observations.ndim != 1 + len(obs_shape) or observations.shape[1:] != tuple(obs_shape):
        raise ValueError(f"transitions.observations must have shape (n, {', '.join(map(str, obs_shape))}), "
                         f"not {observations.shape}")
    n = observations.shape[0]
    check_obs_dtype(obs_dtype)
    if obs_dtype == "uint8":
        for name in ("observations", "next_observations"):
            dtype = np.asarray(batch[name]).dtype
            if dtype != np.uint8:
                raise ValueError(f"transitions.{name} must be uint8 frames on this server, not dtype {dtype}")
    if n < 1:
        raise ValueError("a transition batch must hold at least one transition, not 0")
    shapes = {"next_observations": observations.shape, "actions": (n,), "rewards": (n,), "discounts": (n,)}
    for name, shape in shapes.items():
        if np.shape(batch[name]) != shape:
            raise ValueError(f"transitions.{name} must have shape {shape}, not {np.shape(batch[name])}")
    actions = np.asarray(batch["actions"])
    if not (np.issubdtype(actions.dtype, np.integer) or actions.dtype == np.bool_):
        raise ValueError(f"transitions.actions must be integers, not dtype {actions.dtype}")
    out = {
        "observations": observations.astype(obs_dtype),
        "next_observations": np.asarray(batch["next_observations"]).astype(obs_dtype),
        "actions": actions.astype(np.int64),
        "rewards": np.asarray(batch["rewards"]).astype(np.float32),
        "discounts": np.asarray(batch["discounts"]).astype(np.float32),
    }
    if np.any(out["actions"] < 0):
        raise ValueError(f"transitions.actions must be >= 0, not {int(out['actions'].min())}")
    for name in ("observations", "next_observations", "rewards", "discounts"):
        if out[name].dtype.kind == "f" and not np.all(np.isfinite(out[name])):
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
