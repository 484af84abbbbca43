"""The replay server's gRPC face: the ``Replay`` service (``replay.proto``) over a :class:`~.server.ReplayServer`,
:func:`serve` to start it and :func:`main`, the command line that runs one (on a board:
``python -m pynq_rl.host.agents.distributed.service --address 127.0.0.1:50051 --backend board``).

Access: the server listens on ``127.0.0.1`` unless given another address (``0.0.0.0`` or a LAN address exposes it to
the network: do that only with a token, and with TLS off a trusted network). With a shared token (``token=`` or the
``PYNQ_RL_REPLAY_TOKEN`` environment variable) every call must carry ``authorization: Bearer <token>`` metadata, checked
by a server interceptor before the request is decoded; a missing or wrong one gets ``UNAUTHENTICATED``. With
``tls=(cert_path, key_path)`` the port speaks TLS (``grpc.ssl_server_credentials``) and clients need the certificate
(or its CA) as ``tls_ca``; :func:`check_tls` checks the two files before anything is bound, so a missing, non-PEM,
swapped or mismatched file is one line naming it.

Requests arrive as raw bytes and are decoded by the servicer, so bytes that are no protobuf of the method's request
get ``INVALID_ARGUMENT`` (``malformed PushRequest: ...``) rather than gRPC's ``INTERNAL``.

Errors map to status codes with the server's message: bad requests (``ValueError``, ``TypeError``, ``KeyError``) to
``INVALID_ARGUMENT``, :class:`~.server.Backpressure` to ``RESOURCE_EXHAUSTED``, :class:`~.server.EmptyReplayError`
to ``FAILED_PRECONDITION``, a closed server to ``UNAVAILABLE`` (the clients retry that one).

Sessions: ``OpenSession`` issues the id under the caller's peer, its address without the port (:func:`peer_host`), so
the per-peer cap on unused ids and the session rate limit (:mod:`.actors`) hold whichever port a caller connects from.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import signal
import ssl
import sys
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from ..replay.priorities import PRIORITY_BACKENDS
from . import codec
from . import replay_pb2 as pb
from . import replay_pb2_grpc as pb_grpc
from .actors import (
    DEFAULT_MAX_ACTORS,
    DEFAULT_MAX_UNUSED_PER_PEER,
    DEFAULT_SESSION_BURST,
    DEFAULT_SESSION_TTL_S,
    DEFAULT_SESSIONS_PER_S,
    ActorTableFull,
    SessionRateLimited,
    UnknownActor,
)
from .server import Backpressure, EmptyReplayError, ReplayServer

__all__ = ["ReplayServicer", "TokenInterceptor", "check_tls", "peer_host", "serve", "main", "DEFAULT_ADDRESS"]

DEFAULT_ADDRESS = "127.0.0.1:50051"
"""where a replay server listens unless told otherwise: loopback only"""


class TokenInterceptor(grpc.ServerInterceptor):
    """A gRPC server interceptor that lets a call through only with ``authorization: Bearer <token>`` metadata.

    The comparison takes constant time (``hmac.compare_digest``); a refused call gets ``UNAUTHENTICATED`` before its
    request is decoded or reaches the replay server.

    Parameters
    ----------
    token : str
        The shared secret (non-empty).
    """

    def __init__(self, token: str) -> None:
        if not isinstance(token, str) or not token:
            raise ValueError(f"token must be a non-empty string, not {token!r}")
        self._expected = f"Bearer {token}".encode()

        def refuse(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong replay token (authorization metadata)")

        self._refusal = grpc.unary_unary_rpc_method_handler(refuse)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        """Continue to the method's handler if the call carries the token, else to a handler that refuses it."""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                given = value.encode() if isinstance(value, str) else bytes(value)
                if hmac.compare_digest(given, self._expected):
                    return continuation(handler_call_details)
        return self._refusal


# ---------------------------------------------------------------------------------------------------------------------
class ReplayServicer(pb_grpc.ReplayServicer):
    """The gRPC face of a :class:`ReplayServer`: decodes requests, maps errors to status codes with clear messages.

    :class:`~pynq_rl.host.agents.distributed.actors.UnknownActor` (a push under an id this server did not issue) ->
    ``NOT_FOUND``; ``ValueError``/``TypeError``/``KeyError`` -> ``INVALID_ARGUMENT``; :class:`Backpressure`,
    :class:`~pynq_rl.host.agents.distributed.actors.SessionRateLimited` and
    :class:`~pynq_rl.host.agents.distributed.actors.ActorTableFull` -> ``RESOURCE_EXHAUSTED``;
    :class:`EmptyReplayError` -> ``FAILED_PRECONDITION``; a closed server -> ``UNAVAILABLE``.
    """

    def __init__(self, replay: ReplayServer, push_timeout_s: float = 0.5) -> None:
        self.replay = replay
        self.push_timeout_s = float(push_timeout_s)

    def _call(self, context, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except UnknownActor as error:
            context.abort(grpc.StatusCode.NOT_FOUND, str(error))
        except (ValueError, TypeError, KeyError) as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except (Backpressure, SessionRateLimited, ActorTableFull) as error:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(error))
        except EmptyReplayError as error:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        except RuntimeError as error:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(error))

    def OpenSession(self, request, context):  # noqa: N802 - gRPC names the servicer methods after the proto
        """Issue the actor id this caller's pushes carry (:meth:`ReplayServer.open_session`), counted against the
        caller's host (:func:`peer_host`)."""
        peer = peer_host(context.peer())
        return pb.OpenSessionReply(actor_id=self._call(context, self.replay.open_session, self.push_timeout_s, peer))

    def Push(self, request, context):  # noqa: N802 (gRPC method names)
        """Decode, check and queue one batch; reply with the acknowledgement."""

        def push():
            if not request.HasField("transitions"):
                raise ValueError("transitions is missing")
            if not request.HasField("priorities"):
                raise ValueError("priorities is missing")
            batch = codec.decode_transitions(request.transitions)
            priorities = codec.from_tensor(request.priorities, "priorities")
            return self.replay.push(
                batch, priorities, request.actor_id, request.sequence, self.push_timeout_s, request.SerializeToString()
            )

        ack = self._call(context, push)
        return pb.PushReply(
            accepted=ack["accepted"], duplicate=ack["duplicate"], log_sequence=ack["log_sequence"], queued=ack["queued"]
        )

    def Sample(self, request, context):  # noqa: N802 - gRPC names the servicer methods after the proto
        """Sample on the core and send the batch with indices, weights and slot versions."""
        batch = self._call(context, self.replay.sample, request.batch_size, request.beta)
        reply = pb.SampleReply()
        codec.encode_transitions(batch, reply.transitions)
        codec.to_tensor(batch["indices"], reply.indices)
        codec.to_tensor(batch["weights"], reply.weights)
        codec.to_tensor(batch["versions"], reply.versions)
        return reply

    def UpdatePriorities(self, request, context):  # noqa: N802 - gRPC names the servicer methods after the proto
        """Write the learner's new priorities."""

        def update():
            for name in ("indices", "priorities"):
                if not request.HasField(name):
                    raise ValueError(f"{name} is missing")
            versions = codec.from_tensor(request.versions, "versions") if request.HasField("versions") else None
            return self.replay.update_priorities(
                codec.from_tensor(request.indices, "indices"),
                codec.from_tensor(request.priorities, "priorities"),
                versions,
            )

        result = self._call(context, update)
        return pb.UpdateReply(updated=result["updated"], stale=result["stale"])

    def Stats(self, request, context):  # noqa: N802 - gRPC names the servicer methods after the proto
        """The server's :meth:`ReplayServer.stats` as JSON."""
        return pb.StatsReply(json=json.dumps(self._call(context, self.replay.stats), default=str))

    def Checkpoint(self, request, context):  # noqa: N802 - gRPC names the servicer methods after the proto
        """Checkpoint now."""
        result = self._call(context, self.replay.checkpoint)
        return pb.CheckpointReply(path=result["path"], log_sequence=result["log_sequence"])


_SERVICE = pb.DESCRIPTOR.services_by_name["Replay"]
"""the ``Replay`` service of ``replay.proto``: its methods, with their request and reply messages, are registered"""


def peer_host(peer: str) -> str:
    """A gRPC peer (``context.peer()``) without its port: ``"ipv4:127.0.0.1:5555"`` -> ``"ipv4:127.0.0.1"``,
    ``"ipv6:[::1]:5555"`` -> ``"ipv6:[::1]"``; any other kind (a Unix socket) as it is.

    A client reconnects from a new port each time, so the port says nothing about who it is; its host does.
    """
    scheme, _, address = peer.partition(":")
    host, colon, port = address.rpartition(":")
    if scheme in ("ipv4", "ipv6") and colon and port.isdigit():
        return f"{scheme}:{host}"
    return peer


def _decoding(method: Callable, request_type: type[Message]) -> Callable:
    """``method`` taking the raw request bytes: decoded here, so undecodable ones get ``INVALID_ARGUMENT`` naming the
    message (gRPC's own deserializer would answer ``INTERNAL``, as if the server were broken)."""

    def handle(data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            request = request_type.FromString(data)
        except DecodeError as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {request_type.__name__}: {error}")
        return method(request, context)

    return handle


def _add_servicer(servicer: ReplayServicer, server: Any) -> None:
    """Register ``servicer``'s methods (every one ``replay.proto`` declares) on ``server`` as the generated
    ``add_ReplayServicer_to_server`` does, but with raw-bytes requests decoded by :func:`_decoding`."""
    handlers = {
        method.name: grpc.unary_unary_rpc_method_handler(
            _decoding(getattr(servicer, method.name), getattr(pb, method.input_type.name)),
            response_serializer=getattr(pb, method.output_type.name).SerializeToString,
        )
        for method in _SERVICE.methods
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(_SERVICE.full_name, handlers),))
    if hasattr(server, "add_registered_method_handlers"):  # grpcio >= 1.62: the stubs' registered-method fast path
        server.add_registered_method_handlers(_SERVICE.full_name, handlers)


def check_tls(cert_path: str | os.PathLike, key_path: str | os.PathLike) -> tuple[bytes, bytes]:
    """Read and check a TLS certificate chain and its private key before a server binds with them.

    gRPC reports a bad pair late and vaguely (a traceback for a missing file, ``cannot bind`` for a key that does not
    match); this says which file is wrong and how. The pair is loaded with the standard library's ``ssl`` (no
    ``cryptography`` needed), with a password callback so an encrypted key never prompts.

    Parameters
    ----------
    cert_path, key_path : str or os.PathLike
        PEM certificate chain and PEM private key.

    Returns
    -------
    cert, key : bytes
        The two files' contents, for ``grpc.ssl_server_credentials``.

    Raises
    ------
    ValueError
        One line naming the file: unreadable, not PEM, certificate and key swapped, no certificate or no private key
        in it, an encrypted key, or a key that does not match the certificate.
    """
    cert_name, key_name = os.fspath(cert_path), os.fspath(key_path)
    cert, key = codec.read_pem(cert_path, "TLS certificate"), codec.read_pem(key_path, "TLS key")
    cert_labels, key_labels = codec.pem_labels(cert), codec.pem_labels(key)
    cert_has_key = any(label.endswith("PRIVATE KEY") for label in cert_labels)
    key_has_key = any(label.endswith("PRIVATE KEY") for label in key_labels)
    if "CERTIFICATE" not in cert_labels and cert_has_key and "CERTIFICATE" in key_labels:
        raise ValueError(
            f"TLS certificate {cert_name} and key {key_name} are swapped: the certificate file holds a private key "
            f"and the key file a certificate"
        )
    if "CERTIFICATE" not in cert_labels:
        raise ValueError(f"TLS certificate {cert_name} holds no CERTIFICATE block (found: {_listed(cert_labels)})")
    if not key_has_key:
        raise ValueError(f"TLS key {key_name} holds no PRIVATE KEY block (found: {_listed(key_labels)})")
    if "ENCRYPTED PRIVATE KEY" in key_labels or b"Proc-Type: 4,ENCRYPTED" in key:
        raise ValueError(f"TLS key {key_name} is encrypted: gRPC needs an unencrypted key")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path, password=lambda: b"")
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(
                f"TLS key {key_name} does not match the certificate {cert_name} ({error.reason})"
            ) from None
        raise ValueError(f"TLS certificate {cert_name} and key {key_name} cannot be loaded ({error})") from None
    return cert, key


def _listed(labels: set[str]) -> str:
    """PEM block labels for a message, sorted."""
    return ", ".join(sorted(labels))


def serve(
    replay: ReplayServer,
    address: str = DEFAULT_ADDRESS,
    max_workers: int = 8,
    push_timeout_s: float = 0.5,
    token: str | None = None,
    tls: tuple[str | os.PathLike, str | os.PathLike] | None = None,
    compression: str | None = None,
) -> tuple[Any, int]:
    """Start a gRPC server for ``replay`` on ``address`` (port 0 picks a free one).

    Parameters
    ----------
    replay : ReplayServer
        What to serve.
    address : str
        ``host:port``; the default listens on loopback only. ``0.0.0.0:port`` exposes the server to every network
        the machine is on: give it a token (and TLS off a trusted network).
    max_workers : int
        gRPC worker threads.
    push_timeout_s : float
        How long a push waits for room in the insertion queue before ``RESOURCE_EXHAUSTED``.
    token : str, optional
        Shared token every call must carry (:class:`TokenInterceptor`); None: ``$PYNQ_RL_REPLAY_TOKEN`` if set,
        ``""``: no authentication.
    tls : (str, str), optional
        PEM certificate chain and private key paths: serve TLS instead of plaintext.
    compression : str, optional
        ``"gzip"`` or ``"deflate"``: gRPC compresses every reply (sampled batches of Atari frames); None: none.

    Returns
    -------
    server : grpc.Server
        Started; stop it with ``server.stop(grace)``.
    port : int
        The bound port.

    Raises
    ------
    RuntimeError
        The address could not be bound.
    ValueError
        A TLS file is missing or wrong (:func:`check_tls`), found before anything is bound.
    """
    token = codec.resolve_token(token)
    credentials = None
    if tls is not None:
        cert, key = check_tls(*tls)
        credentials = grpc.ssl_server_credentials([(key, cert)])
    interceptors = [TokenInterceptor(token)] if token else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="replay-rpc"),
        options=codec.GRPC_OPTIONS,
        interceptors=interceptors,
        compression=codec.grpc_compression(compression),
    )
    _add_servicer(ReplayServicer(replay, push_timeout_s), server)
    try:
        port = (
            server.add_insecure_port(address) if credentials is None else server.add_secure_port(address, credentials)
        )
    except RuntimeError as error:
        raise RuntimeError(f"cannot bind the replay server to {address}: {error}") from error
    if port == 0:
        raise RuntimeError(f"cannot bind the replay server to {address}")
    server.start()
    return server, port


def main(argv: list[str] | None = None) -> int:
    """``python -m pynq_rl.host.agents.distributed.service``: run a replay server until SIGINT/SIGTERM.

    Prints ``listening on <host>:<port>`` once it accepts requests; on SIGTERM it stops, drains and checkpoints.
    Returns 1 with ``error: ...`` on stderr if the server refuses to start: a bad TLS file (checked first, before the
    replay server restores anything), a damaged checkpoint or log, an address it cannot bind, an option out of range
    (``--max-actors 0``).
    """
    parser = argparse.ArgumentParser(description="Ape-X replay server: the replay core behind gRPC")
    parser.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        help="host:port to listen on (port 0: any free port); the default is loopback only, "
        "0.0.0.0:PORT exposes the server to the network (set a token: $" + codec.TOKEN_ENV + ")",
    )
    parser.add_argument("--tls-cert", default=None, help="PEM certificate chain: serve TLS (with --tls-key)")
    parser.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    parser.add_argument("--capacity", type=int, default=50_000, help="transition slots")
    parser.add_argument("--obs-shape", type=int, nargs="+", default=[4], help="observation shape (CartPole: 4)")
    parser.add_argument(
        "--obs-dtype",
        choices=codec.OBS_DTYPES,
        default="float32",
        help="stored observations: float32 vectors, uint8 frames (Atari: --obs-shape 4 84 84), or "
        "zlib: uint8 frames the actors packed (ReplayClient pack_frames), kept packed",
    )
    parser.add_argument(
        "--compression",
        choices=codec.COMPRESSIONS,
        default=None,
        help="gRPC compression of the replies (sampled batches); default: none",
    )
    parser.add_argument("--backend", choices=PRIORITY_BACKENDS, default="emu", help="where the priorities live")
    parser.add_argument("--board", default=None, help="the overlay's board (Pynq-Z2, ZCU106)")
    parser.add_argument("--alpha", type=float, default=0.6, help="priority exponent")
    parser.add_argument("--queue-batches", type=int, default=64, help="insertion queue depth (back-pressure)")
    parser.add_argument("--checkpoint-dir", default=None, help="write-ahead log and checkpoints here; restore on start")
    parser.add_argument("--checkpoint-every-s", type=float, default=None, help="background checkpoint period")
    parser.add_argument("--sync-wal", action="store_true", help="fsync the log before each acknowledgement")
    parser.add_argument(
        "--accept-loss",
        action="store_true",
        help="start even if the log is damaged so that acknowledged records are lost (counted, and "
        "the bad tail kept in a side file); default: refuse to start",
    )
    _add_session_options(parser)
    parser.add_argument("--workers", type=int, default=8, help="gRPC worker threads")
    parser.add_argument("--seed", type=int, default=None, help="sampler seed")
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    try:
        if args.tls_cert is not None:
            check_tls(args.tls_cert, args.tls_key)
        replay = ReplayServer(
            args.capacity,
            tuple(args.obs_shape),
            args.backend,
            args.alpha,
            args.queue_batches,
            args.checkpoint_dir,
            args.checkpoint_every_s,
            args.sync_wal,
            args.board,
            args.seed,
            accept_loss=args.accept_loss,
            obs_dtype=args.obs_dtype,
            max_actors=args.max_actors,
            session_ttl_s=args.session_ttl_s,
            max_unused_per_peer=args.max_unused_per_peer,
            sessions_per_s=args.sessions_per_s,
            session_burst=args.session_burst,
        )
    except ValueError as error:  # a bad TLS file, a refused recovery or a bad argument: one line, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    tls = None if args.tls_cert is None else (args.tls_cert, args.tls_key)
    try:
        server, port = serve(replay, args.address, args.workers, tls=tls, compression=args.compression)
    except (ValueError, RuntimeError) as error:  # a TLS file changed since the check, an address taken
        print(f"error: {error}", file=sys.stderr)
        replay.close()
        return 1
    host = args.address.rsplit(":", 1)[0]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"listening on {host}:{port} restored={json.dumps(replay.restored)}", flush=True)
    stop.wait()
    server.stop(grace=2.0).wait()
    replay.close(checkpoint=args.checkpoint_dir is not None)
    return 0


def _add_session_options(parser: argparse.ArgumentParser) -> None:
    """The actor-table options of :func:`main` (:class:`~.server.ReplayServer` checks their ranges)."""
    parser.add_argument(
        "--max-actors",
        type=int,
        default=DEFAULT_MAX_ACTORS,
        help="actor ids kept; only live sessions (an acknowledged push) fill the table, and a restart from the "
        "checkpoint keeps them, so raise this if it refuses sessions",
    )
    parser.add_argument(
        "--session-ttl-s",
        type=float,
        default=DEFAULT_SESSION_TTL_S,
        help="seconds an issued actor id no push has used is kept",
    )
    parser.add_argument(
        "--max-unused-per-peer",
        type=int,
        default=DEFAULT_MAX_UNUSED_PER_PEER,
        help="unused actor ids one host may hold (one more evicts its oldest)",
    )
    parser.add_argument(
        "--sessions-per-s",
        type=float,
        default=DEFAULT_SESSIONS_PER_S,
        help="sessions one host may open a second beyond its burst (refused with RESOURCE_EXHAUSTED, retried)",
    )
    parser.add_argument(
        "--session-burst",
        type=int,
        default=DEFAULT_SESSION_BURST,
        help="sessions one host may open at once",
    )


if __name__ == "__main__":
    sys.exit(main())
