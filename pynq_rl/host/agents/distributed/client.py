"""``ReplayClient``: the actors' and the learner's handle on a replay server, over gRPC, with retries.

Retries (all bounded by ``retry_s``, exponential back-off from 10 ms, capped at :data:`MAX_BACKOFF_S`, starting
over at 10 ms for every call):

* ``UNAVAILABLE`` (server restarting, connection lost) on every call: gRPC reconnects the channel by itself, the
  client just tries again, so a learner or actor survives a replay-server restart;
* ``RESOURCE_EXHAUSTED`` (the server's insertion queue is full: back-pressure) on pushes;
* ``DEADLINE_EXCEEDED`` on pushes: safe because pushes carry ``(actor_id, sequence)`` and the server acknowledges a
  duplicate without storing it twice.

``INVALID_ARGUMENT`` becomes ``ValueError`` with the server's message, ``UNAUTHENTICATED`` ``PermissionError``;
anything else, or a retry budget used up, raises :class:`ReplayUnavailable`.

Reconnecting: gRPC's own channel back-off (1 s growing to 120 s by default) would leave a client idle for seconds
after a restarted server listens again. :data:`CHANNEL_OPTIONS` cap it at :data:`MAX_BACKOFF_S`, and a call that
fails with ``UNAVAILABLE`` reopens the channel before its next attempt, so with the capped retry delay a client's
next attempt comes within :data:`MAX_BACKOFF_S` of the server listening.

Access: ``token`` (or ``$PYNQ_RL_REPLAY_TOKEN``) is sent as ``authorization: Bearer <token>`` metadata on every
call; ``tls_ca`` (or ``$PYNQ_RL_REPLAY_TLS_CA``: a PEM certificate, the server's own self-signed one or its CA)
makes the channel TLS.

A client is for one thread at a time (the learner's prefetched samples arrive on gRPC's threads, which is fine); give
each pushing thread its own.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import codec
from . import replay_pb2 as pb
from . import replay_pb2_grpc as pb_grpc

__all__ = ["ReplayClient", "PrefetchingSampler", "ReplayUnavailable", "NotReady", "MAX_BACKOFF_S", "CHANNEL_OPTIONS"]

MAX_BACKOFF_S = 0.25
"""longest wait between two attempts, of a call's retries and of the channel's reconnection"""
CHANNEL_OPTIONS = codec.GRPC_OPTIONS + [
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", int(MAX_BACKOFF_S * 1000)),
]
"""the client channel's options: the shared ones plus reconnection back-off capped at :data:`MAX_BACKOFF_S`"""


class ReplayUnavailable(RuntimeError):
    """The replay server did not answer (or kept refusing) within the retry budget."""


class NotReady(RuntimeError):
    """The server has nothing to sample yet (``FAILED_PRECONDITION``)."""


class ReplayClient:
    """A gRPC connection to a replay server.

    Parameters
    ----------
    address : str
        ``host:port`` of the server.
    actor_id : str
        Tags pushes for de-duplication (empty: no de-duplication); a restarted actor should use a new id or continue
        its sequence.
    timeout_s : float
        Deadline of one call.
    retry_s : float
        How long a call keeps retrying on the retryable codes before raising :class:`ReplayUnavailable`.
    token : str, optional
        Shared token sent with every call; None: ``$PYNQ_RL_REPLAY_TOKEN`` if set; ``""``: none.
    tls_ca : str or os.PathLike, optional
        PEM file of the certificate(s) to trust: connect with TLS. None: ``$PYNQ_RL_REPLAY_TLS_CA`` if set, else
        plaintext; ``""``: plaintext.
    tls_server_name : str, optional
        Host name to check the server's certificate against when it differs from ``address``'s host.
    compression : str, optional
        ``"gzip"`` or ``"deflate"``: gRPC compresses every request (pushes: Atari frames shrink 10x or more); None:
        none. What the server sends back is compressed as the server is configured (:func:`.service.serve`).
    pack_frames : int, optional
        A zlib level: pack each pushed batch's uint8 frames at it (:func:`.codec.pack_batch`, for a server with
        ``obs_dtype="zlib"``), so they are compressed once, here, and never again. None: push observations as given
        (a batch already packed is sent as is either way). Sampled packed frames are always unpacked on arrival.

    Attributes
    ----------
    retries : int
        Retries made so far (all calls).
    """

    def __init__(
        self,
        address: str,
        actor_id: str = "",
        timeout_s: float = 10.0,
        retry_s: float = 60.0,
        token: str | None = None,
        tls_ca: str | os.PathLike | None = None,
        tls_server_name: str | None = None,
        compression: str | None = None,
        pack_frames: int | None = None,
    ) -> None:
        import grpc

        self._grpc = grpc
        self.address = address
        self.actor_id = actor_id
        self.timeout_s = float(timeout_s)
        self.retry_s = float(retry_s)
        self.retries = 0
        self._sequence = itertools.count(1)
        token = codec.resolve_token(token)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._options = list(CHANNEL_OPTIONS)
        self._credentials = None
        if tls_ca is None:
            tls_ca = os.environ.get(codec.TLS_CA_ENV, "")
        if tls_ca:
            with open(tls_ca, "rb") as f:
                self._credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
            if tls_server_name is not None:
                self._options.append(("grpc.ssl_target_name_override", tls_server_name))
        self._compression = codec.grpc_compression(compression)
        if pack_frames is not None and not (isinstance(pack_frames, (int, np.integer)) and 0 <= pack_frames <= 9):
            raise ValueError(f"pack_frames must be None or a zlib level 0-9, not {pack_frames!r}")
        self.pack_frames = pack_frames
        self._channel = None
        self._connect()

    def _connect(self) -> None:
        """(Re)open the channel: a fresh one connects at its first call, without the old one's back-off state."""
        grpc = self._grpc
        old = self._channel
        self._channel = (
            grpc.insecure_channel(self.address, options=self._options, compression=self._compression)
            if self._credentials is None
            else grpc.secure_channel(
                self.address, self._credentials, options=self._options, compression=self._compression
            )
        )
        self._stub = pb_grpc.ReplayStub(self._channel)
        if old is not None:
            old.close()

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> ReplayClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _invoke(self, method: str, request: Any, retry_codes: tuple, retry_s: float | None = None) -> Any:
        grpc = self._grpc
        deadline = time.monotonic() + (self.retry_s if retry_s is None else retry_s)
        delay = 0.01
        while True:
            try:
                return getattr(self._stub, method)(
                    request, timeout=self.timeout_s, wait_for_ready=False, metadata=self._metadata
                )
            except grpc.RpcError as error:
                code, details = error.code(), error.details()
                refusal = self._refusal(method, error)
                if refusal is not None:
                    raise refusal from None
                if code not in retry_codes or time.monotonic() + delay > deadline:
                    raise ReplayUnavailable(
                        f"replay server {self.address} {method} failed: {code.name}: {details}"
                    ) from None
                self.retries += 1
                if code == grpc.StatusCode.UNAVAILABLE:
                    # a channel that lost its server waits out its own reconnection back-off, measured at 0.6-1.2 s
                    # after a SIGKILLed server came back even with it capped at 250 ms; a new one connects at once
                    self._connect()
                time.sleep(delay)
                delay = min(MAX_BACKOFF_S, delay * 2)

    def _refusal(self, method: str, error: Any) -> Exception | None:
        """The exception for a call the server refused (no retry helps), or None for any other failure."""
        code, details = error.code(), error.details()
        if code == self._grpc.StatusCode.INVALID_ARGUMENT:
            return ValueError(f"replay server {self.address} refused {method}: {details}")
        if code == self._grpc.StatusCode.FAILED_PRECONDITION:
            return NotReady(f"replay server {self.address}: {details}")
        if code == self._grpc.StatusCode.UNAUTHENTICATED:
            return PermissionError(f"replay server {self.address} refused {method}: {details}")
        return None

    # -- calls --------------------------------------------------------------------------------------------------------
    def push(self, transitions: Mapping[str, np.ndarray], priorities: np.ndarray) -> dict[str, Any]:
        """Push a batch with its initial priorities; retried until acknowledged or ``retry_s`` runs out.

        Returns
        -------
        dict
            ``accepted``, ``duplicate``, ``log_sequence``, ``queued`` from the server's acknowledgement.

        Raises
        ------
        ValueError
            The server refused the batch as malformed (or its sequence as too far ahead).
        PermissionError
            The server wants another token (``UNAUTHENTICATED``).
        ReplayUnavailable
            No acknowledgement within ``retry_s``.
        """
        codes = self._grpc.StatusCode
        if self.pack_frames is not None and "frames" not in transitions:
            transitions = codec.pack_batch(transitions, self.pack_frames)
        request = pb.PushRequest(actor_id=self.actor_id, sequence=next(self._sequence) if self.actor_id else 0)
        codec.encode_transitions(transitions, request.transitions)
        codec.to_tensor(np.asarray(priorities, dtype=np.float64), request.priorities)
        reply = self._invoke("Push", request, (codes.UNAVAILABLE, codes.RESOURCE_EXHAUSTED, codes.DEADLINE_EXCEEDED))
        return {
            "accepted": reply.accepted,
            "duplicate": reply.duplicate,
            "log_sequence": reply.log_sequence,
            "queued": reply.queued,
        }

    def sample(self, batch_size: int, beta: float = 0.4) -> dict[str, np.ndarray]:
        """A prioritized batch: transition fields, ``indices``, ``weights``, ``versions`` (numpy arrays).

        Raises
        ------
        NotReady
            Nothing stored yet.
        ValueError, ReplayUnavailable
            As for :meth:`push`.
        """
        codes = self._grpc.StatusCode
        reply = self._invoke(
            "Sample", pb.SampleRequest(batch_size=int(batch_size), beta=float(beta)), (codes.UNAVAILABLE,)
        )
        return _decode_sample(reply)

    def sample_future(self, batch_size: int, beta: float = 0.4) -> Any:
        """Request a batch without waiting: a gRPC future whose ``result()`` is the raw reply (for
        :class:`PrefetchingSampler`; no retries)."""
        return self._stub.Sample.future(
            pb.SampleRequest(batch_size=int(batch_size), beta=float(beta)),
            timeout=self.timeout_s,
            metadata=self._metadata,
        )

    def update_priorities(
        self, indices: np.ndarray, priorities: np.ndarray, versions: np.ndarray | None = None
    ) -> dict[str, int]:
        """Send new priorities for sampled slots; returns ``updated`` and ``stale`` counts."""
        codes = self._grpc.StatusCode
        request = pb.UpdateRequest()
        codec.to_tensor(np.asarray(indices, dtype=np.int64), request.indices)
        codec.to_tensor(np.asarray(priorities, dtype=np.float64), request.priorities)
        if versions is not None:
            codec.to_tensor(np.asarray(versions, dtype=np.uint64), request.versions)
        reply = self._invoke("UpdatePriorities", request, (codes.UNAVAILABLE,))
        return {"updated": reply.updated, "stale": reply.stale}

    def stats(self, retry_s: float | None = None) -> dict[str, Any]:
        """The server's statistics (``ReplayServer.stats``)."""
        reply = self._invoke("Stats", pb.StatsRequest(), (self._grpc.StatusCode.UNAVAILABLE,), retry_s)
        return json.loads(reply.json)

    def checkpoint(self) -> dict[str, Any]:
        """Ask the server to checkpoint now; returns ``path`` and ``log_sequence``."""
        reply = self._invoke("Checkpoint", pb.CheckpointRequest(), (self._grpc.StatusCode.UNAVAILABLE,))
        return {"path": reply.path, "log_sequence": reply.log_sequence}

    def wait_ready(self, timeout_s: float = 30.0, min_size: int = 0, poll_s: float = 0.05) -> dict[str, Any]:
        """Wait until the server answers and stores at least ``min_size`` transitions; returns its stats.

        Raises
        ------
        TimeoutError
            Not reached within ``timeout_s`` (the message gives the last size seen).
        """
        deadline = time.monotonic() + timeout_s
        stats: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                stats = self.stats(retry_s=max(0.0, min(1.0, deadline - time.monotonic())))
                if stats["size"] >= min_size:
                    return stats
            except ReplayUnavailable:
                pass
            time.sleep(poll_s)
        raise TimeoutError(
            f"replay server {self.address} not ready within {timeout_s} s "
            f"(size {stats.get('size', 'unknown')}, wanted {min_size})"
        )


def _decode_sample(reply: pb.SampleReply) -> dict[str, np.ndarray]:
    batch = codec.decode_transitions(reply.transitions)
    if "frames" in batch:
        batch = codec.unpack_batch(batch)
    batch["indices"] = codec.from_tensor(reply.indices, "indices")
    batch["weights"] = codec.from_tensor(reply.weights, "weights")
    batch["versions"] = codec.from_tensor(reply.versions, "versions")
    return batch


class PrefetchingSampler:
    """Keeps the learner's next batches in flight, so that it does not wait for the replay server.

    :meth:`sample` hands out the batch requested ``depth`` calls earlier (waiting for it only if it has not arrived)
    and requests the next one at once: the server draws it while the learner trains, and gRPC receives it on its
    own threads (the learner's Python thread is free). The price, as with any asynchronous replay (Ape-X's
    learner, Reverb's in-flight samples): a prefetched batch is drawn before the learner's priority updates for
    the ``depth`` batches before it, and with the ``beta`` of the call that requested it. Slot versions still drop
    updates for slots overwritten since they were sampled.

    Errors: a request that fails with ``UNAVAILABLE`` (server restarting) or ``CANCELLED`` (the client reopened its
    channel meanwhile) falls back to :meth:`ReplayClient.sample` and its retries; ``FAILED_PRECONDITION`` raises
    :class:`NotReady`, ``INVALID_ARGUMENT`` ``ValueError``.

    Parameters
    ----------
    client : ReplayClient
        The learner's connection.
    batch_size : int
        Transitions per batch.
    depth : int
        Batches kept in flight (>= 1).

    Attributes
    ----------
    fallbacks : int
        Requests that failed in flight and were served by :meth:`ReplayClient.sample` instead.
    """

    def __init__(self, client: ReplayClient, batch_size: int, depth: int = 1) -> None:
        if not isinstance(depth, (int, np.integer)) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, not {depth!r}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, not {batch_size!r}")
        self.client, self.batch_size, self.depth = client, int(batch_size), int(depth)
        self._in_flight: collections.deque = collections.deque()
        self.fallbacks = 0

    def _request(self, beta: float) -> None:
        self._in_flight.append((self.client.sample_future(self.batch_size, beta), beta))

    def sample(self, beta: float = 0.4) -> dict[str, np.ndarray]:
        """The next prioritized batch (as :meth:`ReplayClient.sample`); keeps ``depth`` more requested."""
        if not self._in_flight:
            self._request(beta)
        future, requested_beta = self._in_flight.popleft()
        try:
            reply = future.result()
        except self.client._grpc.RpcError as error:
            self.cancel()
            refusal = self.client._refusal("Sample", error)
            if refusal is not None:
                raise refusal from None
            self.fallbacks += 1
            batch = self.client.sample(self.batch_size, requested_beta)  # retries UNAVAILABLE, raises the rest
        else:
            batch = _decode_sample(reply)
        while len(self._in_flight) < self.depth:
            self._request(beta)
        return batch

    def cancel(self) -> None:
        """Drop the batches in flight (e.g. before closing the client)."""
        while self._in_flight:
            self._in_flight.popleft()[0].cancel()
