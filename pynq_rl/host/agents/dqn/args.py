"""What a DQN run is asked to do: :class:`Args` (CleanRL's fields, with prioritized replay's and the replay core's),
the range of every numeric one (:data:`BOUNDS`) and :func:`check_args`, which refuses bad values before any
environment, overlay or run directory exists.

Apart from :mod:`.training` so that the command line can list DQN's options, and check them, without importing the
training loop.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from ..common.bounds import COUNT_MAX, SAMPLE_MAX, Bound, check_bounds, count, fraction, positive
from ..common.checks import FieldValueError, FieldWarning, check_common
from ..common.run import computed, resolve_nn

__all__ = ["Args", "BOUNDS", "check_args"]


@dataclass
class Args:
    exp_name: str = "dqn"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment"""
    nn: str | None = None
    """the network backend: `torch`, `numpy` (no torch needed: the PYNQ-Z2), or `auto` (None in Python): torch where it
    imports, else numpy"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True`"""
    torch_threads: int = 1
    """number of torch intra-op threads (1 on the board's ARM cores and on shared machines)"""
    progress: bool = True
    """if toggled, show a tqdm progress bar"""
    tensorboard: bool = False
    """if toggled, also write TensorBoard event files into the run directory (needs tensorboardX)"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    save_checkpoint: bool = True
    """if toggled, save a checkpoint at the end of training (and every `checkpoint_every` environment steps)"""
    checkpoint_every: int = 0
    """also save a checkpoint every this many environment steps (0: only at the end)"""
    checkpoint_path: str | None = None
    """where to save the checkpoint (None: `out_dir/run_name/checkpoint.npz`)"""
    resume: str | None = None
    """path of a checkpoint, or the run directory holding it, to resume from
    (networks, optimizer, replay buffer with its priorities, global step; None: start afresh)"""
    log_every: int = 100
    """write a metrics row every this many gradient steps"""

    # Algorithm specific arguments
    env_id: str = "CartPole-v1"
    """the id of the environment"""
    total_timesteps: int = 150_000
    """total timesteps of the experiments"""
    learning_rate: float = 5e-4
    """the learning rate of the optimizer"""
    anneal_lr: bool = True
    """if toggled, the learning rate decays linearly to 0 over `total_timesteps`"""
    num_envs: int = 1
    """the number of parallel game environments"""
    buffer_size: int = 50_000
    """the replay memory buffer size (at most the replay core's capacity)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    tau: float = 1.0
    """the target network update rate (1: hard copy)"""
    target_network_frequency: int = 500
    """the timesteps it takes to update the target network"""
    batch_size: int = 128
    """the batch size of sample from the replay memory"""
    start_e: float = 1.0
    """the starting epsilon for exploration"""
    end_e: float = 0.01
    """the ending epsilon for exploration"""
    exploration_fraction: float = 0.1
    """the fraction of `total_timesteps` it takes from start_e to go end_e"""
    learning_starts: int = 5_000
    """timestep to start learning"""
    train_freq: int = 2
    """the frequency of training (environment steps per gradient step)"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """widths of the Q-network's hidden ReLU layers"""
    double_q: bool = True
    """if toggled, Double DQN targets (online argmax, target value); else the max of the target network"""

    # Prioritized replay arguments
    per_alpha: float = 0.6
    """the priority exponent alpha (0: uniform replay)"""
    per_beta: float = 0.4
    """the initial importance-sampling exponent beta, annealed linearly to 1 over `total_timesteps`"""
    per_eps: float = 1e-6
    """added to |TD error| so that no transition gets priority 0"""

    # Offload arguments
    backend: str = "emu"
    """where the priorities live: in the replay core on `emu` (its bit-exact model), `rtl` (MyHDL), `verilator` (its
    converted Verilog) or `board` (the PL), or on the `host` (a float64 sum tree, no core)"""
    board: str | None = None
    """the board of the overlay (`Pynq-Z2`, `ZCU106`; None: the board PYNQ reports, or the overlay's default)"""
    timeout_s: float = 5.0
    """deadline of one core operation in seconds (board, `emu`); on `rtl` deadlines are counted in simulated cycles"""

    # to be filled in runtime
    num_iterations: int = computed(0)
    """the number of vector-environment steps (computed in runtime)"""


BOUNDS: dict[str, Bound] = {
    "seed": count(0, 2**32 - 1),
    "torch_threads": count(1, 1024),
    "checkpoint_every": count(0, note="0: only at the end"),
    "log_every": count(1),
    "total_timesteps": count(1, COUNT_MAX),
    "learning_rate": positive(1.0),
    "num_envs": count(1, 4096),
    "buffer_size": count(1, 1 << 30),
    "gamma": fraction(),
    "tau": fraction(low_open=True, note="0: the target network would never move"),
    "target_network_frequency": count(1),
    "batch_size": count(1, SAMPLE_MAX),  # the most the replay core samples in one operation
    "start_e": fraction(),
    "end_e": fraction(),
    "exploration_fraction": fraction(),
    "learning_starts": count(0),
    "train_freq": count(1),
    "max_grad_norm": positive(),
    "hidden_sizes": count(1, 1 << 16),
    "per_alpha": fraction(note="0: uniform sampling, 1: proportional to the priorities"),
    "per_beta": fraction(),
    "per_eps": positive(1.0),
    "timeout_s": positive(),
}


def check_args(args: Args) -> None:
    """Reject argument values before any environment or overlay is built; warn about a run too short to learn.

    Raises
    ------
    FieldValueError
        A value out of range, naming the fields it is about (:class:`~.checks.FieldValueError`; the command line names
        their flags instead).

    Warns
    -----
    FieldWarning
        ``total_timesteps`` does not exceed ``learning_starts``: no gradient step would be taken.
    """
    check_bounds(args, BOUNDS)
    check_common(args)
    resolve_nn(args.nn)
    if not args.hidden_sizes:
        raise FieldValueError("hidden_sizes must be one or more widths, not ()", "hidden_sizes")
    if args.num_envs > args.buffer_size:
        raise FieldValueError(
            f"num_envs = {args.num_envs} exceeds buffer_size = {args.buffer_size}", "num_envs", "buffer_size"
        )
    if args.total_timesteps <= args.learning_starts:
        warnings.warn(
            FieldWarning(
                f"total_timesteps = {args.total_timesteps} does not exceed learning_starts = {args.learning_starts}: "
                "the run only collects experience and takes no gradient step (raise total_timesteps or lower "
                "learning_starts)",
                "total_timesteps",
                "learning_starts",
            ),
            stacklevel=3,
        )
