"""The baseline layout of the in-network experience-sampling paper: actors push to Redis, the learner's replay pulls.

Here the prioritized replay lives inside the learner. Actors ``RPUSH`` their serialized batches (the same
``PushRequest`` bytes as the gRPC layout, :mod:`.codec`) onto a Redis list; before each sample the learner-side
replay pulls everything queued (``LRANGE`` + ``LTRIM`` in one ``MULTI``), decodes it, inserts it into its own
storage and priority backend, and then samples locally. Every transition thus crosses the network to the learner,
and the learner pays for moving it into the replay on its critical path: that is what the in-network layout
(:mod:`.server`) saves.

:func:`start_redis` runs Debian's ``redis-server`` (no persistence, loopback only) for tests and benchmarks.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import codec
from . import replay_pb2 as pb
from .server import ReplayServer

__all__ = ["RedisServer", "start_redis", "RedisActorPusher", "RedisLearnerReplay", "DEFAULT_KEY"]

DEFAULT_KEY = "apex:transitions"
"""the Redis list actors push to"""


class RedisServer:
    """A ``redis-server`` child process; use :func:`start_redis`. ``close()`` (or the context manager) stops it.

    Attributes
    ----------
    host : str
        The address it listens on.
    port : int
        The port it listens on.
    """

    def __init__(self, process: subprocess.Popen, host: str, port: int) -> None:
        self.process, self.host, self.port = process, host, port

    def close(self, timeout_s: float = 10.0) -> None:
        """Terminate the server and wait for it (kill after ``timeout_s``)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout_s)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start_redis(
    port: int, host: str = "127.0.0.1", timeout_s: float = 10.0, executable: str = "redis-server"
) -> RedisServer:
    """Start ``redis-server`` on ``host:port`` without persistence and wait until it answers PING.

    Raises
    ------
    FileNotFoundError
        No ``redis-server`` on PATH (Debian: ``apt-get install redis-server``).
    TimeoutError
        It did not answer within ``timeout_s`` (the message carries its output).
    """
    import redis

    path = shutil.which(executable)
    if path is None:
        raise FileNotFoundError(f"{executable} not found on PATH (Debian: apt-get install redis-server)")
    process = subprocess.Popen(
        [
            path,
            "--port",
            str(port),
            "--bind",
            host,
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    server = RedisServer(process, host, port)
    deadline = time.monotonic() + timeout_s
    client = redis.Redis(host=host, port=port)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout is not None else ""
            raise TimeoutError(f"redis-server exited with {process.returncode}: {output}")
        try:
            if client.ping():
                client.close()
                return server
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    server.close()
    raise TimeoutError(f"redis-server on {host}:{port} did not answer within {timeout_s} s")


class RedisActorPusher:
    """An actor's side of the baseline: push batches onto the Redis list.

    Parameters
    ----------
    host, port : str, int
        The Redis server.
    key : str
        The list.
    compress : bool
        Pack each batch's frames (:func:`.codec.pack_batch`: one zlib stream per transition, the in-network actors'
        format) before pushing it (the learner's side must be told: ``compressed``).
    """

    def __init__(self, host: str, port: int, key: str = DEFAULT_KEY, compress: bool = False) -> None:
        import redis

        self.redis = redis.Redis(host=host, port=port)
        self.key = key
        self.compress = bool(compress)

    def push(self, transitions: Mapping[str, np.ndarray], priorities: np.ndarray) -> int:
        """Serialize and ``RPUSH`` one batch; returns the list length after the push."""
        request = pb.PushRequest()
        codec.encode_transitions(codec.pack_batch(transitions) if self.compress else transitions, request.transitions)
        codec.to_tensor(np.asarray(priorities, dtype=np.float64), request.priorities)
        return int(self.redis.rpush(self.key, request.SerializeToString()))

    def close(self) -> None:
        """Close the connection."""
        self.redis.close()


class RedisLearnerReplay:
    """The learner's side of the baseline: a local prioritized replay fed from the Redis list.

    Parameters
    ----------
    host, port : str, int
        The Redis server.
    capacity, obs_shape, backend, alpha, board, seed
        As for :class:`~.server.ReplayServer` (the local storage and priority backend).
    key : str
        The list.
    obs_dtype : str
        How observations are stored (``"float32"`` or ``"uint8"`` frames, as :class:`~.server.ReplayServer`).
    compressed : bool
        The actors pack their frames (:class:`RedisActorPusher` ``compress``): the local replay keeps the packed
        rows (``obs_dtype`` ``"zlib"``, whatever ``obs_dtype`` says) and :meth:`sample` unpacks the sampled ones, as
        the in-network learner does.

    Attributes
    ----------
    replay : ReplayServer
        The local storage (used synchronously through :meth:`ReplayServer.insert`).
    pulled_batches : int
        Batches moved from Redis so far.
    """

    def __init__(
        self,
        host: str,
        port: int,
        capacity: int,
        obs_shape: tuple[int, ...],
        backend: Any = "emu",
        alpha: float = 0.6,
        key: str = DEFAULT_KEY,
        board: Any = None,
        seed: int | None = None,
        obs_dtype: str = "float32",
        compressed: bool = False,
    ) -> None:
        import redis

        self.redis = redis.Redis(host=host, port=port)
        self.key = key
        self.compressed = bool(compressed)
        self.replay = ReplayServer(
            capacity,
            obs_shape,
            backend,
            alpha,
            board=board,
            seed=seed,
            obs_dtype="zlib" if self.compressed else obs_dtype,
        )
        self.pulled_batches = 0

    def pull(self) -> int:
        """Move every queued batch from Redis into the local replay; returns the transitions moved."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.lrange(self.key, 0, -1)
        pipe.ltrim(self.key, 1, 0)  # start > end empties the list, atomically with the read
        blobs, _ = pipe.execute()
        moved = 0
        for blob in blobs:
            request = pb.PushRequest.FromString(blob)
            moved += self.replay.insert(
                codec.decode_transitions(request.transitions), codec.from_tensor(request.priorities, "priorities")
            )
        self.pulled_batches += len(blobs)
        return moved

    def sample(self, batch_size: int, beta: float = 0.4) -> dict[str, np.ndarray]:
        """Pull what the actors pushed, then sample locally (the learner's sample latency includes the pull)."""
        self.pull()
        batch = self.replay.sample(batch_size, beta)
        return codec.unpack_batch(batch) if self.compressed else batch

    def update_priorities(
        self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray | None = None
    ) -> dict[str, int]:
        """Local priority update (see :meth:`ReplayServer.update_priorities`)."""
        return self.replay.update_priorities(indices, priorities, versions)

    def close(self) -> None:
        """Close the connection and the local replay."""
        self.redis.close()
        self.replay.close()
