r"""Ape-X (Horgan et al., 2018) on Ray: many actors, one prioritized replay between them and the learner, one learner.

Layout (in-network experience sampling): actors push n-step transitions with initial priorities to the replay
server, the node the traffic passes through (:mod:`.server`: the replay core + storage behind gRPC); only sampled
batches travel on to the learner, which sends new priorities back. The replay server is a Ray actor when it runs on a
Ray node (:class:`ReplayServerActor`, restarted by Ray from its checkpoint directory), or an external gRPC address
when it runs on a PYNQ board (``replay_address``; start it there with
``python -m pynq_rl.host.agents.distributed.service``).

* **Actors** (:class:`ApexActor`, Ray actors restarted by Ray if they die): actor ``i`` of ``N`` explores with
  ``epsilon_i = epsilon_base ** (1 + epsilon_alpha * i / (N - 1))`` (Ape-X's schedule: 0.4 ** 1 ... 0.4 ** 8), builds
  n-step transitions in a local buffer, computes their initial priorities ``|delta| + per_eps`` from its own copy of
  the network, pushes every ``local_buffer_size`` transitions and pulls the newest weights every
  ``weight_sync_steps`` environment steps.
* **Learner** (:class:`Learner`): Double DQN on prioritized n-step batches,

  .. math::

      y_i = R_i + \gamma_i \, Q_{\bar\theta}\big(s'_i, \arg\max_a Q_\theta(s'_i, a)\big), \qquad
      L = \frac{1}{B} \sum_i w_i \, \mathrm{Huber}\big(y_i - Q_\theta(s_i, a_i)\big)

  with ``R_i = sum_k gamma**k r_{t+k}`` and ``gamma_i = gamma**k`` (0 when ``s'_i`` is terminal; a time-limit cut
  bootstraps), ``w_i`` the importance-sampling weights (``beta`` annealed to 1 over ``max_updates``). It writes
  ``|delta_i| + per_eps`` back as priorities and publishes its weights every ``publish_every`` updates to a
  :class:`ParameterServer` the actors pull from.
* **Driver** (:func:`train`): starts Ray locally unless it is already initialized, launches everything, resubmits
  work chunks (an actor or the learner that died is restarted by Ray and gets its next chunk; the learner resumes
  from the state it saved after its last chunk), evaluates the greedy policy between
  learner chunks, and stops at ``target_return`` (mean of the last ``eval_window`` evaluation episodes), at
  ``max_updates`` or at ``max_seconds``.

The arguments (:class:`~.apex_args.Args`) live in :mod:`.apex_args`, the workers (n-step builder, Ray actors, evaluator)
in :mod:`.apex_workers`; this module holds the driver. Outputs go to ``out_dir/run_name/`` (:class:`~.rundir.Run`):
``args.json``, ``metrics.csv`` / ``metrics.jsonl`` (one row per learner chunk, :data:`METRIC_KEYS`), ``episodes.csv``
(the greedy evaluation episodes: the learning curve ``pynq-rl plot`` draws), ``actor_episodes.csv`` (every actor and
evaluation episode with its actor, epsilon and time) and ``summary.json``."""

from __future__ import annotations

import collections
import csv
import dataclasses
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..common.rundir import Run
from ..common.startup import starting
from . import codec, ray_api
from .apex_args import Args, check_args
from .apex_workers import (
    ApexActor,
    ApexActorHandle,
    Evaluator,
    Learner,
    LearnerHandle,
    NStepBuilder,
    ParameterServer,
    ReplayServerActor,
    ReplayServerHandle,
    actor_epsilon,
    env_spaces,
)
from .client import ReplayClient

METRIC_KEYS = (
    "global_step",
    "updates",
    "chunk_updates",
    "time_s",
    "actor_steps",
    "eval/mean_return",
    "losses/td_loss",
    "losses/q_values",
    "charts/updates_per_s",
    "latency/sample_ms",
    "latency/update_ms",
    "replay/stale_priorities",
    "replay/client_retries",
    "replay/prefetch_fallbacks",
    "charts/rate_limited_s",
    "resumed",
    "pid",
)
"""columns of ``metrics.csv``: one row per learner chunk (``global_step`` = actor environment steps so far)"""

__all__ = [
    "Args",
    "ApexActor",
    "Learner",
    "ParameterServer",
    "ReplayServerActor",
    "actor_epsilon",
    "NStepBuilder",
    "train",
]


# ---------------------------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the replay server actor keeps it across restarts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "[::]") else "", 0))
        return s.getsockname()[1]


def train(args: Args, on_progress: Any = None) -> dict[str, Any]:
    """Run Ape-X: start (or join) Ray, launch replay server, parameter server, learner and actors; train; clean up.

    Parameters
    ----------
    args : Args
        The configuration.
    on_progress : callable, optional
        Called as ``on_progress(driver_state)`` about once a second, with a dict holding the actor handles
        (``actors``), their last reported process ids (``actor_pids``), ``replay_actor``, ``learner``, ``updates``,
        ``elapsed_s``; tests use it to kill processes mid-run.

    Returns
    -------
    dict
        ``solved``, ``updates``, ``actor_steps``, ``wall_time_s``, ``eval_mean_return`` (last ``eval_window``),
        ``eval_returns``, ``actor_episodes``, ``actor_restarts`` (tasks lost to a dead actor),
        ``actor_rate_limited_s`` (time the actors waited for the learner), ``backend`` (``"external"`` with
        ``replay_address``), ``replay_stats`` and the run directory.

    Raises
    ------
    ValueError
        Bad arguments.
    """
    check_args(args)  # torch_threads is the learner's and the actors' (Ray workers): the caller's own is untouched
    obs_shape, _ = env_spaces(args.env_id)
    run = Run(args, METRIC_KEYS, tensorboard=args.tensorboard)

    started_ray = False
    handles: list[object] = []
    progress = None
    try:
        with starting("starting Ray, the replay server, the learner and the actors", args.progress):
            started_ray = _start_ray(args)
            start = time.perf_counter()
            workers = _launch(args, obs_shape, Path(run.dir), handles)
        progress = tqdm(
            total=args.max_updates, disable=not args.progress, unit="update", desc=run.name, dynamic_ncols=True
        )
        state = _drive(args, workers, run, progress, start, on_progress)
        wall_time = time.perf_counter() - start
        replay_stats = ReplayClient(workers.address).stats(retry_s=args.replay_retry_s)
    except BaseException:
        run.abandon()
        raise
    finally:
        if progress is not None:
            progress.close()
        for handle in handles:
            try:
                ray_api.kill(handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone; Ray raises several types for that
                pass
        if started_ray:
            ray_api.shutdown()

    window = state.eval_returns[-args.eval_window :]
    _write_csv(Path(run.dir) / "actor_episodes.csv", state.actor_episodes)
    return run.finish(
        solved=state.solved,
        stop_reason=state.stop_reason,
        updates=state.updates,
        actor_steps=int(sum(state.actor_steps.values())),
        wall_time_s=wall_time,
        eval_mean_return=float(np.mean(window)) if window else float("nan"),
        eval_episodes=len(state.eval_returns),
        eval_returns=state.eval_returns,
        actor_episodes=sum(1 for e in state.actor_episodes if e["actor"] != "eval"),
        actor_restarts=state.lost_tasks,
        learner_restarts=state.lost_learner_chunks,
        actor_incarnations=len(state.actor_steps),
        actor_rate_limited_s=float(sum(state.actor_waits.values())),
        replay_address=workers.address,
        backend=args.backend if args.replay_address is None else "external",
        replay_stats=replay_stats,
    )


@dataclasses.dataclass
class _Workers:
    """The Ray actors of one run (handles; ``replay_actor`` is None with an external ``replay_address``)."""

    address: str
    replay_actor: ReplayServerHandle | None
    learner: LearnerHandle
    actors: list[ApexActorHandle]
    evaluator: Evaluator


@dataclasses.dataclass
class _DriverState:
    """What the driver's loop has gathered: the learner's progress, the episodes, and what was lost and restarted."""

    actor_episodes: list[dict] = dataclasses.field(default_factory=list)
    eval_returns: list[float] = dataclasses.field(default_factory=list)
    actor_steps: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    actor_waits: dict[tuple, float] = dataclasses.field(default_factory=dict)
    actor_pids: dict[int, int] = dataclasses.field(default_factory=dict)
    lost_tasks: int = 0
    lost_learner_chunks: int = 0
    learner_pid: int | None = None
    updates: int = 0
    solved: bool = False
    stop_reason: str = "max_updates"


def _launch(args: Args, obs_shape: tuple[int, ...], run_dir: Path, handles: list[object]) -> _Workers:
    """Start the replay server (unless ``args.replay_address`` names one), the parameter server, the learner and the
    actors; every handle goes into ``handles`` as soon as it exists, so the caller kills what started on an error."""
    replay_actor: ReplayServerHandle | None = None
    if args.replay_address is None:
        checkpoint_dir = args.checkpoint_dir or str(run_dir / "replay")
        replay_actor = ReplayServerActor.options(max_restarts=args.actor_max_restarts).remote(
            args.buffer_size,
            obs_shape,
            args.backend,
            args.per_alpha,
            args.replay_bind,
            free_port(args.replay_bind),
            checkpoint_dir,
            args.checkpoint_every_s,
            args.queue_batches,
            args.board,
            args.seed,
        )
        handles.append(replay_actor)
        address = ray_api.get(replay_actor.address.remote(), timeout=120)
    else:
        address = args.replay_address
    ReplayClient(address).wait_ready(timeout_s=120)
    # named: the actors and the learner look it up by name (parameter_server_handle)
    parameter_server_name = f"pynq-rl-apex-parameters-{uuid.uuid4().hex}"
    parameter_server = ParameterServer.options(name=parameter_server_name).remote()
    handles.append(parameter_server)
    learner = Learner.options(max_restarts=args.actor_max_restarts, max_task_retries=0).remote(
        args, address, parameter_server_name
    )
    handles.append(learner)
    actors = [
        ApexActor.options(max_restarts=args.actor_max_restarts, max_task_retries=0).remote(
            i, args, address, parameter_server_name
        )
        for i in range(args.num_actors)
    ]
    handles.extend(actors)
    return _Workers(address, replay_actor, learner, actors, Evaluator(args, parameter_server))


def _drive(args: Args, workers: _Workers, run: Run, progress: tqdm, start: float, on_progress: Any) -> _DriverState:
    """The driver's loop: keep every actor on a chunk of steps and the learner on a chunk of updates, evaluate after
    each learner chunk, give a restarted worker its next chunk, and stop at the target return, ``max_updates`` or
    ``max_seconds`` (the learner's last chunk returned)."""
    state = _DriverState()
    pending: dict[ray_api.Ref[dict[str, Any]], tuple[str, int]] = {
        actor.run.remote(args.actor_chunk_steps): ("actor", i) for i, actor in enumerate(workers.actors)
    }
    pending[workers.learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
    while True:
        ready, _ = ray_api.wait(list(pending), num_returns=1, timeout=1.0)
        elapsed = time.perf_counter() - start
        for ref in ready:
            kind, i = pending.pop(ref)
            try:
                result = ray_api.get(ref)
            except ray_api.ACTOR_DIED as error:
                if kind == "learner":  # Ray restarts it; it resumes from its last chunk's state
                    state.lost_learner_chunks += 1
                    if state.lost_learner_chunks > args.actor_max_restarts:
                        raise RuntimeError(f"the learner died {state.lost_learner_chunks} times: {error}") from error
                    pending[workers.learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
                    continue
                state.lost_tasks += 1  # Ray restarts the actor; give the new incarnation its next chunk
                pending[workers.actors[i].run.remote(args.actor_chunk_steps)] = ("actor", i)
                continue
            if kind == "actor":
                state.actor_steps[(i, result["incarnation"])] = result["steps"]
                state.actor_waits[(i, result["incarnation"])] = result["rate_limited_s"]
                state.actor_pids[i] = result["pid"]
                state.actor_episodes.extend(dict(e, time_s=elapsed) for e in result["episodes"])
                pending[workers.actors[i].run.remote(args.actor_chunk_steps)] = ("actor", i)
                continue
            if _learner_chunk_done(args, state, result, elapsed, workers.evaluator, run, progress):
                pending[workers.learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
        if on_progress is not None:
            on_progress(
                {
                    "actors": workers.actors,
                    "actor_pids": dict(state.actor_pids),
                    "replay_actor": workers.replay_actor,
                    "learner": workers.learner,
                    "learner_pid": state.learner_pid,
                    "updates": state.updates,
                    "elapsed_s": elapsed,
                }
            )
        if not any(kind == "learner" for kind, _ in pending.values()):
            return state


def _learner_chunk_done(
    args: Args,
    state: _DriverState,
    result: dict[str, Any],
    elapsed: float,
    evaluator: Evaluator,
    run: Run,
    progress: tqdm,
) -> bool:
    """After a learner chunk: greedy evaluation episodes, the metrics row, the bar; whether to go on (False once
    solved or a budget is spent, with ``state.stop_reason`` saying which)."""
    state.updates, state.learner_pid = result["updates"], result["pid"]
    for _ in range(args.eval_episodes_per_chunk):
        episode = evaluator.episode()
        state.eval_returns.append(episode["return"])
        state.actor_episodes.append(dict(episode, actor="eval", epsilon=0.0, time_s=elapsed))
        run.episode(sum(state.actor_steps.values()), episode["return"], episode["length"])
    window = state.eval_returns[-args.eval_window :]
    result.update(
        {
            "time_s": elapsed,
            "eval/mean_return": float(np.mean(window)),
            "actor_steps": sum(state.actor_steps.values()),
        }
    )
    run.log({key: result.get(key, float("nan")) for key in METRIC_KEYS} | {"global_step": result["actor_steps"]})
    progress.update(min(state.updates, args.max_updates) - progress.n)
    progress.set_postfix(
        eval=f"{result['eval/mean_return']:.1f}",
        actor_steps=result["actor_steps"],
        loss=f"{result['losses/td_loss']:.3f}",
        refresh=False,
    )
    if len(window) >= args.eval_window and np.mean(window) >= args.target_return:
        state.solved, state.stop_reason = True, "target_return"
    elif state.updates >= args.max_updates:
        state.stop_reason = "max_updates"
    elif elapsed >= args.max_seconds:
        state.stop_reason = "max_seconds"
    else:
        return True
    return False


def _start_ray(args: Args) -> bool:
    """Start Ray locally (or join ``args.ray_address``) unless it is already initialized; True if this call did.

    The driver's Ray logger shows errors only: a clean run would otherwise print Ray's start-up notes (the local
    instance started, token authentication enabled) among its own output. The workers' output stays in Ray's session
    logs (``log_to_driver=False``); errors Ray reports to the driver still appear.
    """
    if ray_api.is_initialized():
        return False
    # the replay token and TLS certificate reach the replay server actor, the actors and the learner on every node
    access = {name: os.environ[name] for name in codec.ACCESS_ENV if os.environ.get(name)}
    quiet: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    runtime_env = {"env_vars": access} if access else None
    if args.ray_address:
        ray_api.init(address=args.ray_address, runtime_env=runtime_env, **quiet)
    else:
        ray_api.init(
            num_cpus=args.ray_num_cpus, object_store_memory=100 * 1024 * 1024, runtime_env=runtime_env, **quiet
        )
    return True


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    names = sorted({key for row in rows for key in row})
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
