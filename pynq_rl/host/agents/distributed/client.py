"""``ReplayClient``: the actors' and the learner's handle on a replay server, over gRPC, with retries.

Retries (all bounded by ``retry_s``, exponential back-off from 10 ms, capped at :data:`MAX_BACKOFF_S`, starting
over at 10 ms for every call):

* ``UNAVAILABLE`` (server restarting, connection lost) on every call: gRPC reconnects the channel by itself, the
  client just tries again, so a learner or actor survives a replay-server restart;
* ``RESOURCE_EXHAUSTED`` (the server's insertion queue is full: back-pressure) on pushes;
* ``DEADLINE_EXCEEDED`` on pushes: safe because an actor's pushes carry ``(actor_id, sequence)`` and the server
  acknowledges a duplicate without storing it twice; and on samples: a sample stores nothing, so a reply lost to the
  deadline (a server starved on a loaded machine) is only a batch the learner never sees.

Actor identity: a client made with ``actor=True`` opens a session at its first push (the ``OpenSession`` call): the
server issues the actor id (:attr:`ReplayClient.actor_id`, unguessable) that the client's pushes carry, numbered 1, 2,
3, ... (:mod:`.actors`). If the server answers a push with ``NOT_FOUND`` (it restarted and kept nothing under that id,
so nothing pushed under it was kept), the client opens a new session and pushes again under the new id.

``INVALID_ARGUMENT`` becomes ``ValueError`` with the server's message, ``UNAUTHENTICATED`` ``PermissionError``;
anything else, or a retry budget used up, raises :class:`ReplayUnavailable`.

Reconnecting: gRPC's own channel back-off (1 s growing to 120 s by default) would leave a client idle for seconds
after a restarted server listens again. :data:`CHANNEL_OPTIONS` cap it at :data:`MAX_BACKOFF_S`, and a call that
fails with ``UNAVAILABLE`` reopens the channel before its next attempt, so with the capped retry delay a client's
next attempt comes within :data:`MAX_BACKOFF_S` of the server listening.

Access: ``token`` (or ``$PYNQ_RL_REPLAY_TOKEN``) is sent as ``authorization: Bearer <token>`` metadata on every
call; ``tls_ca`` (or ``$PYNQ_RL_REPLAY_TLS_CA``: a PEM certificate, the server's own self-signed one or its CA)
makes the channel TLS. The constructor refuses a ``tls_ca`` that holds no loadable PEM certificate, naming the file,
and warns when a token is about to travel over plaintext to an address that is not loopback.

TLS that cannot work is not retried: a client whose TLS disagrees with the server's (plaintext against TLS, TLS
against plaintext, a certificate ``tls_ca`` did not sign or that names another host) raises :class:`TLSMismatch`
with the reason at the first call, instead of ``UNAVAILABLE`` for ``retry_s``. gRPC reports all of these as
``UNAVAILABLE``; the client tells them from a server that is merely down by the status details (an SSL handshake
error), and a plaintext client that gets ``Socket closed`` probes the port with a TLS handshake of its own.

A client is for one thread at a time (the learner's prefetched samples arrive on gRPC's threads, which is fine); give
each pushing thread its own.
"""

from __future__ import annotations

import collections
import ipaddress
import itertools
import json
import os
import socket
import ssl
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import codec
from . import replay_pb2 as pb
from . import replay_pb2_grpc as pb_grpc

__all__ = [
    "ReplayClient",
    "PrefetchingSampler",
    "ReplayUnavailable",
    "TLSMismatch",
    "NotReady",
    "MAX_BACKOFF_S",
    "CHANNEL_OPTIONS",
    "TLS_PROBE_S",
]

MAX_BACKOFF_S = 0.25
"""longest wait between two attempts, of a call's retries and of the channel's reconnection"""
CHANNEL_OPTIONS = codec.GRPC_OPTIONS + [
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", int(MAX_BACKOFF_S * 1000)),
]
"""the client channel's options: the shared ones plus reconnection back-off capped at :data:`MAX_BACKOFF_S`"""


TLS_PROBE_S = 1.0
"""how long a plaintext client's TLS probe of a port that closed its connection may take"""


class ReplayUnavailable(RuntimeError):
    """The replay server did not answer (or kept refusing) within the retry budget, or cannot be spoken to at all
    (:class:`TLSMismatch`)."""


class TLSMismatch(ReplayUnavailable):
    """The client's TLS settings cannot work with the server's (raised at once: no retry would help); the message
    says what disagrees."""


class _SessionLost(RuntimeError):
    """The server does not know this actor's id (``NOT_FOUND``): open a new session."""


class NotReady(RuntimeError):
    """The server has nothing to sample yet (``FAILED_PRECONDITION``)."""


class ReplayClient:
    """A gRPC connection to a replay server.

    Parameters
    ----------
    address : str
        ``host:port`` of the server.
    actor : bool
        Push as an actor: under an id the server issues (a session, opened at the first push) with numbered pushes,
        so a retried push is stored once and no one else can push as this actor. False: pushes are not
        de-duplicated (the learner, tools).
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
    actor_id : str or None
        The id the server issued for this actor's pushes (None before the first push, and without ``actor``).
    retries : int
        Retries made so far (all calls).

    Raises
    ------
    ValueError
        A ``tls_ca`` that cannot be read, is not PEM or holds no certificate that loads (one line naming it).

    Warns
    -----
    UserWarning
        A token about to travel over plaintext to an address that is not loopback (127.0.0.0/8, ``::1``,
        ``localhost``).
    """

    def __init__(
        self,
        address: str,
        actor: bool = False,
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
        if not isinstance(actor, bool):
            raise TypeError(f"actor must be a bool (push as an actor, under an id the server issues), not {actor!r}")
        self.actor = actor
        self.actor_id: str | None = None
        self.timeout_s = float(timeout_s)
        self.retry_s = float(retry_s)
        self.retries = 0
        self._sequence = itertools.count(1)
        token = codec.resolve_token(token)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._options: list[tuple[str, int | str]] = list(CHANNEL_OPTIONS)
        self._credentials = None
        if tls_ca is None:
            tls_ca = os.environ.get(codec.TLS_CA_ENV, "")
        self._tls_ca = os.fspath(tls_ca) if tls_ca else None
        self._server_name = tls_server_name
        if self._tls_ca:
            self._credentials = grpc.ssl_channel_credentials(root_certificates=_read_ca(self._tls_ca))
            if tls_server_name is not None:
                self._options.append(("grpc.ssl_target_name_override", tls_server_name))
        elif token and not _is_loopback(address):
            warnings.warn(
                f"the replay token will travel in clear to {address}: a plaintext channel to a non-loopback address "
                f"(give tls_ca, or ${codec.TLS_CA_ENV}, to use TLS)",
                stacklevel=2,
            )
        self._compression = codec.grpc_compression(compression)
        if pack_frames is not None and not (isinstance(pack_frames, (int, np.integer)) and 0 <= pack_frames <= 9):
            raise ValueError(f"pack_frames must be None or a zlib level 0-9, not {pack_frames!r}")
        self.pack_frames = pack_frames
        self._channel: grpc.Channel | None = None
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
        if self._channel is not None:  # always open after __init__
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
                mismatch = self._tls_mismatch(details) if code == grpc.StatusCode.UNAVAILABLE else None
                if mismatch is not None:
                    raise TLSMismatch(
                        f"replay server {self.address} {method} failed: UNAVAILABLE: {mismatch}"
                    ) from None
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
        if code == self._grpc.StatusCode.NOT_FOUND:
            return _SessionLost(details)
        return None

    def _tls_mismatch(self, details: str | None) -> str | None:
        """Why this client's TLS cannot work with the server, judged from an ``UNAVAILABLE`` call's details, or None
        when they point at a server that is down or restarting (retried as before)."""
        details = details or ""
        if self._credentials is not None:
            if "CERTIFICATE_VERIFY_FAILED" in details:
                return f"the server's certificate is not signed by tls_ca {self._tls_ca} (CERTIFICATE_VERIFY_FAILED)"
            if "is not in peer certificate" in details:
                name = self._server_name or _split_address(self.address)[0]
                return f"the server's certificate does not name {name} (tls_server_name: the name it holds)"
            if "WRONG_VERSION_NUMBER" in details:
                return "the server does not speak TLS (a plaintext server?): drop tls_ca, or serve with --tls-cert"
            if "handshake failed" in details.lower() and "SSL_ERROR_SSL" in details:  # a protocol error, not I/O
                return f"TLS with tls_ca {self._tls_ca} failed: {details.rsplit(': ', 1)[-1]}"
            return None
        if "Socket closed" in details and _speaks_tls(self.address):
            return f"the server speaks TLS and this client plaintext: give tls_ca (or ${codec.TLS_CA_ENV})"
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
        request = pb.PushRequest()
        codec.encode_transitions(transitions, request.transitions)
        codec.to_tensor(np.asarray(priorities, dtype=np.float64), request.priorities)
        retry_codes = (codes.UNAVAILABLE, codes.RESOURCE_EXHAUSTED, codes.DEADLINE_EXCEEDED)
        if self.actor:
            actor_id = self._open_session() if self.actor_id is None else self.actor_id
            request.actor_id, request.sequence = actor_id, next(self._sequence)
        try:
            reply = self._invoke("Push", request, retry_codes)
        except _SessionLost:  # the server kept nothing under the old id: a new session cannot store anything twice
            request.actor_id, request.sequence = self._open_session(), next(self._sequence)
            try:
                reply = self._invoke("Push", request, retry_codes)
            except _SessionLost as lost:  # forgotten again at once: the server is restarting over and over
                raise ReplayUnavailable(f"replay server {self.address} Push failed: NOT_FOUND: {lost}") from None
        return {
            "accepted": reply.accepted,
            "duplicate": reply.duplicate,
            "log_sequence": reply.log_sequence,
            "queued": reply.queued,
        }

    def _open_session(self) -> str:
        """Have the server issue this actor's id (returned); its pushes are numbered from 1 again.

        Retried like a push (a server busy checkpointing, or this host opening sessions faster than the server's rate
        limit, answers ``RESOURCE_EXHAUSTED``; a starved one may miss the deadline): an id issued whose reply was lost
        is never pushed under, so it stores nothing and the server forgets it once it expires unused.
        """
        codes = self._grpc.StatusCode
        retry_codes = (codes.UNAVAILABLE, codes.RESOURCE_EXHAUSTED, codes.DEADLINE_EXCEEDED)
        reply = self._invoke("OpenSession", pb.OpenSessionRequest(), retry_codes)
        actor_id: str = reply.actor_id
        self.actor_id, self._sequence = actor_id, itertools.count(1)
        return actor_id

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
        request = pb.SampleRequest(batch_size=int(batch_size), beta=float(beta))
        return _decode_sample(self._invoke("Sample", request, (codes.UNAVAILABLE, codes.DEADLINE_EXCEEDED)))

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
        TLSMismatch
            The client cannot speak the server's TLS (at once, not after ``timeout_s``).
        """
        deadline = time.monotonic() + timeout_s
        stats: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                stats = self.stats(retry_s=max(0.0, min(1.0, deadline - time.monotonic())))
                if stats["size"] >= min_size:
                    return stats
            except TLSMismatch:
                raise
            except ReplayUnavailable:
                pass
            time.sleep(poll_s)
        raise TimeoutError(
            f"replay server {self.address} not ready within {timeout_s} s "
            f"(size {stats.get('size', 'unknown')}, wanted {min_size})"
        )


def _read_ca(path: str) -> bytes:
    """The PEM certificates of ``tls_ca``, checked to load (gRPC itself would only fail each call with ``empty
    address list``).

    Raises
    ------
    ValueError
        ``path`` is unreadable, not PEM, holds no ``CERTIFICATE`` block, or none that loads: one line naming it.
    """
    data = codec.read_pem(path, "tls_ca")
    labels = codec.pem_labels(data)
    if "CERTIFICATE" not in labels:
        raise ValueError(f"tls_ca {path} holds no CERTIFICATE block (found: {', '.join(sorted(labels))})")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data.decode("ascii", "replace"))
    except ssl.SSLError as error:
        raise ValueError(f"tls_ca {path} holds no certificate that can be loaded ({error})") from None
    return data


def _split_address(address: str) -> tuple[str | None, int | None]:
    """(host, port) of a gRPC target (``host:port``, ``[v6]:port``, ``dns:///host:port``, ``ipv4:a.b.c.d:port``);
    host None for a Unix socket, port None when the target names none."""
    if address.startswith(("unix:", "unix-abstract:", "vsock:")):
        return None, None
    for scheme in ("ipv4:", "ipv6:"):
        if address.startswith(scheme):
            address = address[len(scheme) :].split(",")[0]
    if address.startswith("dns:"):
        address = address[len("dns:") :].rsplit("/", 1)[-1]
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif address.count(":") == 1:
        host, port = address.split(":")
    else:
        host, port = address, ""
    return host, int(port) if port.isdigit() else None


def _is_loopback(address: str) -> bool:
    """Whether ``address`` stays on this machine: a Unix socket, ``localhost``, 127.0.0.0/8 or ::1 (also v4-mapped)."""
    host = _split_address(address)[0]
    if host is None or host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _speaks_tls(address: str) -> bool:
    """Whether the server at ``address`` completes a TLS handshake (not verified: this only tells a TLS port from a
    plaintext one), within :data:`TLS_PROBE_S`. False for anything that cannot be probed or does not answer."""
    host, port = _split_address(address)
    if host is None or port is None:
        return False
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((host, port), timeout=TLS_PROBE_S) as sock, context.wrap_socket(sock):
            return True
    except OSError:  # refused, timed out, or a handshake that failed (ssl.SSLError is an OSError)
        return False


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

    Errors: a request that fails with ``UNAVAILABLE`` (server restarting), ``DEADLINE_EXCEEDED`` (server starved) or
    ``CANCELLED`` (the client reopened its channel meanwhile) falls back to :meth:`ReplayClient.sample` and its
    retries; ``FAILED_PRECONDITION`` raises :class:`NotReady`, ``INVALID_ARGUMENT`` ``ValueError``.

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
            batch = self.client.sample(self.batch_size, requested_beta)  # with ReplayClient.sample's retries
        else:
            batch = _decode_sample(reply)
        while len(self._in_flight) < self.depth:
            self._request(beta)
        return batch

    def cancel(self) -> None:
        """Drop the batches in flight (e.g. before closing the client)."""
        while self._in_flight:
            self._in_flight.popleft()[0].cancel()
