"""What a PPO run is asked to do: :class:`Args` (CleanRL's fields, with the GAE offload's), the continuous-control
defaults :func:`args_for` applies to ``Box`` action spaces, and :func:`check_args`, which refuses bad values before any
environment or overlay is built.

A module apart from the training loop (``ppo/training.py``; the ``ppo`` package re-exports both) so that the command
line can list PPO's options, and check them, without importing the training loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from ..common.bounds import COUNT_MAX, Bound, check_bounds, count, fraction, non_negative, positive
from ..common.checks import FieldValueError, check_common
from ..common.envs import action_space_of
from ..common.run import computed, resolve_nn

__all__ = ["Args", "BOUNDS", "CONTINUOUS_DEFAULTS", "Q8_ENCODINGS", "REWARD_NORMS", "args_for", "check_args"]

REWARD_NORMS = (None, "dynamic")
"""accepted values of :attr:`Args.reward_norm`"""
Q8_ENCODINGS = ("runs", "block")
"""accepted values of :attr:`Args.q8_encoding`"""
CONTINUOUS_DEFAULTS = {
    "num_envs": 1,
    "num_steps": 2048,
    "num_minibatches": 32,
    "update_epochs": 10,
    "learning_rate": 3e-4,
    "anneal_lr": True,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "ent_coef": 0.0,
    "clip_vloss": True,
}
"""CleanRL ``ppo_continuous_action.py``'s hyperparameters, which :func:`args_for` uses for ``Box`` action spaces"""


@dataclass
class Args:
    exp_name: str = "ppo"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment"""
    nn: str | None = None
    """the network backend: `torch`, `numpy` (no torch needed: the PYNQ-Z2), or `auto` (None in Python): torch where it
    imports, else numpy"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True` and deterministic algorithms where available"""
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
    """also save a checkpoint every this many environment steps, at the end of the iteration that reaches each
    multiple (0: only at the end)"""
    checkpoint_path: str | None = None
    """where to save the checkpoint (None: `out_dir/run_name/checkpoint.npz`)"""
    resume: str | None = None
    """path of a checkpoint, or the run directory holding it, to resume from
    (model, optimizer, reward statistics and global step; None: start afresh)"""

    # Algorithm specific arguments
    env_id: str = "CartPole-v1"
    """the id of the environment"""
    total_timesteps: int = 300_000
    """total timesteps of the experiments"""
    learning_rate: float = 1e-3
    """the learning rate of the optimizer"""
    num_envs: int = 8
    """the number of parallel game environments"""
    num_steps: int = 128
    """the number of steps to run in each environment per policy rollout"""
    anneal_lr: bool = True
    """Toggle learning rate annealing for policy and value networks"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 4
    """the number of mini-batches"""
    update_epochs: int = 10
    """the K epochs to update the policy"""
    norm_adv: bool = True
    """Toggles advantages normalization"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = False
    """Toggles whether or not to use a clipped loss for the value function, as per the paper."""
    ent_coef: float = 0.0
    """coefficient of the entropy"""
    vf_coef: float = 0.5
    """coefficient of the value function"""
    max_grad_norm: float = 0.5
    """the maximum norm for the gradient clipping"""
    target_kl: float | None = None
    """the target KL divergence threshold (None: no early stop)"""

    # Offload arguments
    backend: str = "emu"
    """where GAE runs: `emu` (the GAE core's bit-exact model), `rtl` (its MyHDL simulation), `verilator` (its converted
    Verilog), `board` (the PL) or `host` (CleanRL's numpy loop, no core)"""
    board: str | None = None
    """the board of the overlay (`Pynq-Z2`, `ZCU106`; None: the board PYNQ reports, or the overlay's default)"""
    timeout_s: float = 5.0
    """deadline of one core operation in seconds (board, `emu`); on `rtl` deadlines are counted in simulated cycles"""
    quantize: bool = True
    """if toggled, the GAE core takes 8-bit codes (`q8_encoding`); else raw fixed point (Q15.16 words)"""
    q8_encoding: str = "runs"
    """the 8-bit encoding: `runs` (a scale and offset per env and 32 steps, 10 bits per element) or `block` (HEPPO's
    one scale and offset per rollout, 8 bits per element, 4-11x the advantage error of `runs` on MuJoCo rollouts)"""
    reward_norm: str | None = None
    """reward standardization before GAE: None or `dynamic` (HEPPO's running mean/std over every reward seen)"""

    # Continuous-control wrappers (CleanRL's ppo_continuous_action)
    norm_obs: bool | None = None
    """normalize observations (NormalizeObservation + clip); None: on for Box action spaces, off for Discrete"""
    norm_reward: bool | None = None
    """normalize rewards (NormalizeReward + clip); None: on for Box action spaces unless `reward_norm` is set"""
    clip_obs: float = 10.0
    """bound of the normalized observations"""
    clip_reward: float = 10.0
    """bound of the normalized rewards"""

    # to be filled in runtime
    batch_size: int = computed(0)
    """the batch size (computed in runtime)"""
    minibatch_size: int = computed(0)
    """the mini-batch size (computed in runtime)"""
    num_iterations: int = computed(0)
    """the number of iterations (computed in runtime)"""


BOUNDS: dict[str, Bound] = {
    "seed": count(0, 2**32 - 1),
    "torch_threads": count(1, 1024),
    "checkpoint_every": count(0, note="0: only at the end"),
    "total_timesteps": count(1, COUNT_MAX),
    "learning_rate": positive(1.0),
    "num_envs": count(1, 4096),
    "num_steps": count(1, 1 << 20),
    "gamma": fraction(),
    "gae_lambda": fraction(),
    "num_minibatches": count(1, 1 << 20),
    "update_epochs": count(1, 1 << 20),
    "clip_coef": positive(),
    "ent_coef": non_negative(),
    "vf_coef": non_negative(),
    "max_grad_norm": positive(),
    "target_kl": positive(note="None: no early stop"),
    "timeout_s": positive(),
    "clip_obs": positive(),
    "clip_reward": positive(),
}
"""the range of each numeric option (:mod:`.bounds`)"""


def args_for(env_id: str, **overrides: Any) -> Args:
    """:class:`Args` for ``env_id``: CleanRL's continuous-control defaults (:data:`CONTINUOUS_DEFAULTS`) when its action
    space is a ``Box``, the discrete defaults otherwise; ``overrides`` win over both.

    Raises
    ------
    TypeError
        If an override is not a field of :class:`Args`.
    """
    space = action_space_of(env_id)
    defaults = dict(CONTINUOUS_DEFAULTS) if isinstance(space, gym.spaces.Box) else {}
    return Args(env_id=env_id, **{**defaults, **overrides})


def check_args(args: Args) -> None:
    """Reject argument values and combinations before any environment or overlay is built.

    Raises
    ------
    FieldValueError
        A value out of range, naming the fields it is about (:class:`~.checks.FieldValueError`; the command line names
        their flags instead).
    """
    check_bounds(args, BOUNDS)
    check_common(args)
    if args.reward_norm not in REWARD_NORMS:
        raise FieldValueError(f"reward_norm must be one of {REWARD_NORMS}, not {args.reward_norm!r}", "reward_norm")
    if args.q8_encoding not in Q8_ENCODINGS:
        raise FieldValueError(f"q8_encoding must be one of {Q8_ENCODINGS}, not {args.q8_encoding!r}", "q8_encoding")
    resolve_nn(args.nn)
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.num_minibatches:
        raise FieldValueError(
            f"num_envs * num_steps = {batch_size} is not divisible by num_minibatches = {args.num_minibatches}",
            "num_envs",
            "num_steps",
            "num_minibatches",
        )
    if args.total_timesteps < batch_size:
        raise FieldValueError(
            f"total_timesteps = {args.total_timesteps} is smaller than one batch (num_envs * num_steps = {batch_size})",
            "total_timesteps",
            "num_envs",
            "num_steps",
        )
