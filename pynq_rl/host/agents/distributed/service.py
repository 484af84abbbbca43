"""The replay server's gRPC face: the ``Replay`` service (``replay.proto``) over a :class:`~.server.ReplayServer`,
:func:`serve` to start it and :func:`main`, the command line that runs one (on a board:
``python -m pynq_rl.host.agents.distributed.service --address 127.0.0.1:50051 --backend board``).

Access: the server listens on ``127.0.0.1`` unless given another address (``0.0.0.0`` or a LAN address exposes it to
the network: do that only with a token, and with TLS off a trusted network). With a shared token (``token=`` or the
``PYNQ_RL_REPLAY_TOKEN`` environment variable) every call must carry ``authorization: Bearer <token>`` metadata, checked
by a server interceptor before the request is decoded; a missing or wrong one gets ``UNAUTHENTICATED``. With
``tls=(cert_path, key_path)`` the port speaks TLS (``grpc.ssl_server_credentials``) and clients need the certificate
(or its CA) as ``tls_ca``.

Errors map to status codes with the server's message: bad requests (``ValueError``, ``TypeError``, ``KeyError``) to
``INVALID_ARGUMENT``, :class:`~.server.Backpressure` to ``RESOURCE_EXHAUSTED``, :class:`~.server.EmptyReplayError`
to ``FAILED_PRECONDITION``, a closed server to ``UNAVAILABLE`` (the clients retry that one).
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from ..priorities import PRIORITY_BACKENDS
from . import codec
from . import replay_pb2 as pb
from . import replay_pb2_grpc as pb_grpc
from .server import Backpressure, EmptyReplayError, ReplayServer

__all__ = ["ReplayServicer", "TokenInterceptor", "serve", "main", "DEFAULT_ADDRESS"]

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

    ``ValueError``/``TypeError``/``KeyError`` -> ``INVALID_ARGUMENT``; :class:`Backpressure` ->
    ``RESOURCE_EXHAUSTED``; :class:`EmptyReplayError` -> ``FAILED_PRECONDITION``; a closed server -> ``UNAVAILABLE``.
    """

    def __init__(self, replay: ReplayServer, push_timeout_s: float = 0.5) -> None:
        self.replay = replay
        self.push_timeout_s = float(push_timeout_s)

    def _call(self, context, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, TypeError, KeyError) as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except Backpressure as error:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(error))
        except EmptyReplayError as error:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        except RuntimeError as error:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(error))

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
    OSError
        A TLS file could not be read.
    """
    token = codec.resolve_token(token)
    credentials = None
    if tls is not None:
        cert_path, key_path = tls
        with open(cert_path, "rb") as f:
            cert = f.read()
        with open(key_path, "rb") as f:
            key = f.read()
        credentials = grpc.ssl_server_credentials([(key, cert)])
    interceptors = [TokenInterceptor(token)] if token else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="replay-rpc"),
        options=codec.GRPC_OPTIONS,
        interceptors=interceptors,
        compression=codec.grpc_compression(compression),
    )
    pb_grpc.add_ReplayServicer_to_server(ReplayServicer(replay, push_timeout_s), server)
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
    Returns 1 with ``error: ...`` on stderr if the server refuses to start (a damaged checkpoint or log).
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
    parser.add_argument("--workers", type=int, default=8, help="gRPC worker threads")
    parser.add_argument("--seed", type=int, default=None, help="sampler seed")
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    try:
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
        )
    except ValueError as error:  # a refused recovery or a bad argument: one line, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    tls = None if args.tls_cert is None else (args.tls_cert, args.tls_key)
    server, port = serve(replay, args.address, args.workers, tls=tls, compression=args.compression)
    host = args.address.rsplit(":", 1)[0]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"listening on {host}:{port} restored={json.dumps(replay.restored)}", flush=True)
    stop.wait()
    server.stop(grace=2.0).wait()
    replay.close(checkpoint=args.checkpoint_dir is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
