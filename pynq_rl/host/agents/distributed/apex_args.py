"""Ape-X's arguments (:class:`Args`) and their checks (:func:`check_args`), apart from the driver (:mod:`.apex`) and
the workers (:mod:`.apex_workers`) that both read them, so neither imports the other for them, and so the command
line lists and checks them without Ray or torch (a bad value is refused at once, before Ray starts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.bounds import COUNT_MAX, SAMPLE_MAX, Bound, check_bounds, count, fraction, non_negative, positive
from ..common.checks import FieldValueError, check_backend, check_env_id, check_tensorboard

__all__ = ["Args", "check_args"]


@dataclass
class Args:
    exp_name: str = "apex"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment (actor i uses seed + 1000 (i + 1) + restarts)"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    progress: bool = True
    """if toggled, show a tqdm progress bar (learner updates, evaluation return, actor steps)"""
    tensorboard: bool = False
    """if toggled, also write TensorBoard event files into the run directory (needs tensorboardX)"""
    env_id: str = "CartPole-v1"
    """the id of the environment"""

    # Distribution
    num_actors: int = 2
    """number of Ape-X actors (Ray actors)"""
    backend: str = "emu"
    """where the Ray-hosted replay server keeps the priorities: in the replay core on `emu` (its bit-exact model),
    `rtl`, `verilator` or `board`, or on the `host` (a float64 sum tree, no core); unused with `replay_address`"""
    board: str | None = None
    """the overlay's board for the replay server's core"""
    replay_address: str | None = None
    """host:port of an external replay server (e.g. on a PYNQ board); None: run it as a Ray actor"""
    replay_bind: str = "127.0.0.1"
    """interface the Ray-hosted replay server listens on (0.0.0.0 for actors on other nodes: exposes it, so set
    $PYNQ_RL_REPLAY_TOKEN, which train passes to every Ray worker with $PYNQ_RL_REPLAY_TLS_CA)"""
    checkpoint_dir: str | None = None
    """replay server write-ahead log + checkpoints (Ray-hosted server; None: `out_dir/run_name/replay`)"""
    checkpoint_every_s: float = 30.0
    """replay server checkpoint period"""
    replay_retry_s: float = 120.0
    """how long the actors and the learner keep retrying a replay server that does not answer before the run fails
    (Ray restarting a killed Ray-hosted server took over 30 s on a loaded 2-core machine)"""
    queue_batches: int = 64
    """replay server insertion queue depth (back-pressure beyond it)"""
    ray_num_cpus: int = 4
    """logical CPUs of the local Ray instance started by `train` (actors ask for 1 each, the learner for 1)"""
    ray_address: str | None = None
    """an existing Ray cluster to join (None: start one locally)"""
    actor_max_restarts: int = 10
    """how often Ray restarts a dead actor (and the replay server actor, and the learner)"""

    # Actors
    epsilon_base: float = 0.4
    """Ape-X epsilon schedule base"""
    epsilon_alpha: float = 7.0
    """Ape-X epsilon schedule exponent spread"""
    n_step: int = 3
    """n of the n-step returns"""
    local_buffer_size: int = 50
    """transitions an actor collects before one push"""
    weight_sync_steps: int = 200
    """environment steps between an actor's weight pulls"""
    actor_chunk_steps: int = 500
    """environment steps per Ray task of an actor"""
    actor_max_sps: float = 200.0
    """throttle of each actor in environment steps per second (0: none; the machine here has 2 shared cores)"""

    # Learner
    max_updates: int = 50_000
    """learner gradient steps at most (at the rate limit, CartPole-v1 seed 0 stood at 449.2 of 450 after 30,000,
    the former default; seed 1 solved after 22,400)"""
    updates_per_insert: float = 0.5
    """rate limit: learner updates per transition inserted into the replay (Reverb's samples-per-insert /
    batch_size); the learner waits when it runs ahead of the actors, the actors when they run ahead of the learner,
    so the replay ratio, and with it the learning, is the same however fast each side runs; 0: unlimited"""
    rate_limit_tolerance: float = 100.0
    """learner updates either side may run ahead of the `updates_per_insert` line before it waits"""
    max_seconds: float = 900.0
    """wall-clock budget of the run"""
    learning_starts: int = 1_000
    """transitions in the replay before the learner starts"""
    batch_size: int = 64
    """the batch size sampled from the replay server"""
    sample_prefetch: int = 1
    """batches the learner keeps in flight (`PrefetchingSampler`: drawn while it trains, one batch of priority
    staleness each); 0: sample synchronously"""
    learning_rate: float = 5e-4
    """the learning rate of the optimizer (annealed linearly to 10% over `max_updates`)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    target_network_frequency: int = 250
    """learner updates between hard target-network copies"""
    publish_every: int = 50
    """learner updates between weight publications"""
    learner_chunk_updates: int = 200
    """updates per Ray task of the learner (the driver evaluates between chunks)"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""
    hidden_sizes: tuple[int, ...] = (128, 128)
    """widths of the Q-network's hidden ReLU layers"""
    per_alpha: float = 0.6
    """the priority exponent alpha"""
    per_beta: float = 0.4
    """the initial importance-sampling exponent, annealed to 1 over `max_updates`"""
    per_eps: float = 1e-3
    """added to |TD error| so that no transition gets priority 0"""
    buffer_size: int = 50_000
    """replay capacity (at most the replay core's K**LEVELS)"""
    torch_threads: int = 1
    """torch intra-op threads per process"""

    # Evaluation and stopping
    target_return: float = 450.0
    """stop once the mean of the last `eval_window` greedy evaluation episodes reaches this (inf: never)"""
    eval_window: int = 20
    """evaluation episodes averaged for `target_return`"""
    eval_episodes_per_chunk: int = 2
    """greedy evaluation episodes the driver runs after each learner chunk"""

    extra: dict = field(default_factory=dict)
    """free-form notes stored with the run"""


_HOUR = 3600.0
BOUNDS: dict[str, Bound] = {
    "seed": count(0, 2**32 - 1),
    "num_actors": count(1, 1024),
    "checkpoint_every_s": positive(30 * 24 * _HOUR),
    "replay_retry_s": positive(30 * 24 * _HOUR),
    "queue_batches": count(1, 1 << 20),
    "ray_num_cpus": count(1, 1 << 16),
    "actor_max_restarts": count(-1, 1 << 20, note="-1: no limit"),
    "epsilon_base": fraction(),
    "epsilon_alpha": non_negative(),
    "n_step": count(1, 1 << 16),
    "local_buffer_size": count(1, 1 << 20),
    "weight_sync_steps": count(1),
    "actor_chunk_steps": count(1, 1 << 30),
    "actor_max_sps": non_negative(note="0: no throttle"),
    "max_updates": count(1, COUNT_MAX),
    "updates_per_insert": non_negative(note="0: unlimited"),
    "rate_limit_tolerance": non_negative(),
    "max_seconds": positive(365 * 24 * _HOUR),
    "learning_starts": count(0),
    "batch_size": count(1, SAMPLE_MAX),  # the most the replay core samples in one operation
    "sample_prefetch": count(0, 1 << 10, note="0: none"),
    "learning_rate": positive(1.0),
    "gamma": fraction(),
    "target_network_frequency": count(1),
    "publish_every": count(1),
    "learner_chunk_updates": count(1, 1 << 30),
    "max_grad_norm": positive(),
    "hidden_sizes": count(1, 1 << 16),
    "per_alpha": fraction(note="0: uniform sampling, 1: proportional to the priorities"),
    "per_beta": fraction(),
    "per_eps": positive(1.0),
    "buffer_size": count(1, 1 << 30),
    "torch_threads": count(1, 1024),
    "target_return": Bound(-float(COUNT_MAX), float(COUNT_MAX), infinite=True, note="inf: never stop on it"),
    "eval_window": count(1, 1 << 20),
    "eval_episodes_per_chunk": count(1, 1 << 20),
}
"""the range of each numeric option (:mod:`~pynq_rl.host.agents.common.bounds`)"""


def check_args(args: Args) -> None:
    """Reject argument values before Ray starts (the driver's :func:`~.apex.train` calls it first; the command line
    calls it before it even imports Ray).

    Raises
    ------
    FieldValueError
        A value out of range, naming the fields it is about
        (:class:`~pynq_rl.host.agents.common.checks.FieldValueError`; the command line names their flags instead).
    """
    check_bounds(args, BOUNDS)
    check_tensorboard(args.tensorboard)
    check_env_id(args.env_id)
    if args.replay_address is None:
        check_backend(args.backend)
    if not args.hidden_sizes:
        raise FieldValueError("hidden_sizes must be one or more widths, not ()", "hidden_sizes")
    if args.learning_starts > args.buffer_size:
        raise FieldValueError(
            f"learning_starts = {args.learning_starts} exceeds buffer_size = {args.buffer_size}: the learner would "
            "wait for more transitions than the replay holds",
            "learning_starts",
            "buffer_size",
        )
    if (
        args.updates_per_insert > 0
        and 2 * args.rate_limit_tolerance < args.updates_per_insert * (args.local_buffer_size + args.n_step) + 1
    ):
        raise FieldValueError(
            f"rate_limit_tolerance {args.rate_limit_tolerance!r} is too small for pushes of up to "
            f"{args.local_buffer_size + args.n_step} transitions (local_buffer_size {args.local_buffer_size} + "
            f"n_step {args.n_step}) at updates_per_insert {args.updates_per_insert!r}",
            "rate_limit_tolerance",
            "updates_per_insert",
            "local_buffer_size",
            "n_step",
        )
