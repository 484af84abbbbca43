"""The replay server's gRPC face: the ``Replay`` service (``replay.proto``) over a :class:`~.server.ReplayServer`,
:func:`serve` to start it and :func:`main`, the command line that runs one (on a board:
``python -m pynq_rl.host.agents.distributed.service --address 127.0.0.1:50051 --backend board``).

Errors map to status codes with the server's message: bad requests (``ValueError``, ``TypeError``, ``KeyError``) to
``INVALID_ARGUMENT``, :class:`~.server.Backpressure` to ``RESOURCE_EXHAUSTED``, :class:`~.server.EmptyReplayError`
to ``FAILED_PRECONDITION``, a closed server to ``UNAVAILABLE`` (the clients retry that one).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from concurrent import futures
from typing import Any

from ..priorities import PRIORITY_BACKENDS
from . import codec
from . import replay_pb2 as pb
from . import replay_pb2_grpc as pb_grpc
from .server import Backpressure, EmptyReplayError, ReplayServer

__all__ = ["ReplayServicer", "serve", "main"]


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
        import grpc
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
            return self.replay.push(batch, priorities, request.actor_id, request.sequence, self.push_timeout_s,
                                    request.SerializeToString())
        ack = self._call(context, push)
        return pb.PushReply(accepted=ack["accepted"], duplicate=ack["duplicate"], log_sequence=ack["log_sequence"],
                            queued=ack["queued"])

    def Sample(self, request, context):  # noqa: N802
        """Sample on the core and send the batch with indices, weights and slot versions."""
        batch = self._call(context, self.replay.sample, request.batch_size, request.beta)
        reply = pb.SampleReply()
        codec.encode_transitions(batch, reply.transitions)
        codec.to_tensor(batch["indices"], reply.indices)
        codec.to_tensor(batch["weights"], reply.weights)
        codec.to_tensor(batch["versions"], reply.versions)
        return reply

    def UpdatePriorities(self, request, context):  # noqa: N802
        """Write the learner's new priorities."""
        def update():
            for name in ("indices", "priorities"):
                if not request.HasField(name):
                    raise ValueError(f"{name} is missing")
            versions = codec.from_tensor(request.versions, "versions") if request.HasField("versions") else None
            return self.replay.update_priorities(codec.from_tensor(request.indices, "indices"),
                                                 codec.from_tensor(request.priorities, "priorities"), versions)
        result = self._call(context, update)
        return pb.UpdateReply(updated=result["updated"], stale=result["stale"])

    def Stats(self, request, context):  # noqa: N802
        """The server's :meth:`ReplayServer.stats` as JSON."""
        return pb.StatsReply(json=json.dumps(self._call(context, self.replay.stats), default=str))

    def Checkpoint(self, request, context):  # noqa: N802
        """Checkpoint now."""
        result = self._call(context, self.replay.checkpoint)
        return pb.CheckpointReply(path=result["path"], log_sequence=result["log_sequence"])


def serve(replay: ReplayServer, address: str = "[::]:50051", max_workers: int = 8,
          push_timeout_s: float = 0.5) -> tuple[Any, int]:
    """Start a gRPC server for ``replay`` on ``address`` (port 0 picks a free one).

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
    """
    import grpc
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="replay-rpc"),
                         options=codec.GRPC_OPTIONS)
    pb_grpc.add_ReplayServicer_to_server(ReplayServicer(replay, push_timeout_s), server)
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as error:
        raise RuntimeError(f"cannot bind the replay server to {address}: {error}") from error
    if port == 0:
        raise RuntimeError(f"cannot bind the replay server to {address}")
    server.start()
    return server, port


def main(argv: list[str] | None = None) -> int:
    """``python -m pynq_rl.host.agents.distributed.service``: run a replay server until SIGINT/SIGTERM.

    Prints ``listening on <host>:<port>`` once it accepts requests; on SIGTERM it stops, drains and checkpoints.
    """
    parser = argparse.ArgumentParser(description="Ape-X replay server: the replay core behind gRPC")
    parser.add_argument("--address", default="[::]:50051", help="host:port to listen on (port 0: any free port)")
    parser.add_argument("--capacity", type=int, default=50_000, help="transition slots")
    parser.add_argument("--obs-shape", type=int, nargs="+", default=[4], help="observation shape (CartPole: 4)")
    parser.add_argument("--backend", choices=PRIORITY_BACKENDS, default="emu", help="where the priorities live")
    parser.add_argument("--board", default=None, help="the overlay's board (Pynq-Z2, ZCU106)")
    parser.add_argument("--alpha", type=float, default=0.6, help="priority exponent")
    parser.add_argument("--queue-batches", type=int, default=64, help="insertion queue depth (back-pressure)")
    parser.add_argument("--checkpoint-dir", default=None, help="write-ahead log and checkpoints here; restore on start")
    parser.add_argument("--checkpoint-every-s", type=float, default=None, help="background checkpoint period")
    parser.add_argument("--sync-wal", action="store_true", help="fsync the log before each acknowledgement")
    parser.add_argument("--workers", type=int, default=8, help="gRPC worker threads")
    parser.add_argument("--seed", type=int, default=None, help="sampler seed")
    args = parser.parse_args(argv)
    replay = ReplayServer(args.capacity, tuple(args.obs_shape), args.backend, args.alpha, args.queue_batches,
                          args.checkpoint_dir, args.checkpoint_every_s, args.sync_wal, args.board, args.seed)
    server, port = serve(replay, args.address, args.workers)
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
