"""Distributed Ape-X: many actors, one prioritized replay *between* them and the learner, one learner.

* :mod:`.server` — :class:`ReplayServer`: transition storage + the replay core (any backend), an insertion thread,
  back-pressure and checkpoints (numpy only: it runs on a PYNQ board);
* :mod:`.recovery` — what a checkpoint and the log hold, and the server's recovery from them on start (restore,
  replay the log, set aside a torn tail, ``accept_loss``);
* :mod:`.wal` — the server's write-ahead log (versioned, checksummed records; bad tails set aside, losses counted);
* :mod:`.service` — the gRPC service over a server, :func:`serve` and the command line
  (``python -m pynq_rl.host.agents.distributed.service``; grpcio + protobuf);
* :mod:`.client` — :class:`ReplayClient`: push / sample / update_priorities / stats with retries and reconnection;
* :mod:`.apex_args` — the Ape-X run's hyperparameters (``Args``), importable without Ray or torch (the command line
  lists them from here);
* :mod:`.apex` — the Ape-X actors, the Double-DQN learner and the replay server as Ray actors, and :func:`apex.train`
  (``pynq-rl train apex``);
* :mod:`.redis_baseline` — the baseline layout: actors push to Redis, the learner-side replay pulls from it;
* :mod:`.codec` — numpy arrays <-> ``replay.proto`` messages, with the checks the server applies, and the gRPC
  options both ends share.

Nothing is imported here eagerly: the server side needs no torch or Ray (``from pynq_rl.host.agents.distributed
import server``), the Ray side is imported only where it is used.
"""

__all__ = ["codec", "server", "recovery", "wal", "service", "client", "apex_args", "apex", "redis_baseline"]
