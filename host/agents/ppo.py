r"""PPO for discrete actions in the CleanRL ``ppo.py`` style, with the GAE step offloadable to the GAE core.

Read top to bottom: :class:`Args`, the network (:class:`Agent`), the environments (:func:`make_env`,
:func:`make_envs`), the rollout (:func:`collect_rollout`), the GAE step (:func:`compute_gae`, :class:`GaeCompute`),
checkpoints, and :func:`train`, which follows CleanRL's loop: anneal the learning rate, collect ``num_steps`` steps in
``num_envs`` environments, compute advantages, ``update_epochs`` passes of clipped-surrogate minibatch updates, log.

Conventions of the rollout arrays (``T = num_steps``, ``N = num_envs``)
-----------------------------------------------------------------------
``rewards[T, N]``
    The reward of the transition taken at step ``t``. For the GAE step it is (optionally) standardized and, where the
    episode was **truncated** at ``t`` (time limit, not a terminal state), ``gamma * V(final_obs)`` is folded in, so
    the cut does not look like a terminal state. A **terminated** step gets nothing folded in.
``dones[T, N]``
    1 when env ``n``'s episode ended at step ``t`` (terminated OR truncated): neither ``V_{t+1}`` nor ``A_{t+1}``
    flows back across it. This is the GAE core's convention (``overlay/models/gae.py``); CleanRL and SB3 store the
    same information one step later (``next_done`` / ``episode_starts[t + 1]``).
``values[T + 1, N]``
    ``V(obs_t)``; ``values[T]`` = ``V(next_obs)`` bootstraps the unfinished tail.

Autoreset. The environments are a gymnasium 1.x ``SyncVectorEnv`` with ``autoreset_mode=AutoresetMode.SAME_STEP``:
a sub-environment that ends at step ``t`` is reset inside that same ``step()`` call, the returned observation is
already the first observation of the next episode, and the last observation of the finished episode is in
``infos["final_obs"][n]``. So every step of the rollout is a real transition (none has to be masked, unlike the
default ``NEXT_STEP`` mode whose step after a done is a reset with a dummy reward), ``obs[t + 1]`` is the start of a
new episode exactly where ``dones[t] = 1``, and ``V(final_obs)`` is available for truncation bootstrapping.

GAE (Schulman et al., 2016), with :math:`d_t` = ``dones[t]``:

.. math::

    \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

Special cases: ``lam = 1`` gives the bootstrapped discounted return minus V; ``lam = 0`` the one-step TD error.
``gae_backend="torch"`` runs :func:`compute_gae` (CleanRL's backward loop); ``"emu"``, ``"rtl"`` and ``"board"`` run
the GAE core of an :class:`~pynq_rl.host.overlay.RLOverlay` through its driver's ``compute()`` (float32 numpy in and
out; ``quantize`` selects q8 or raw mode). With ``reward_norm="dynamic"`` the rewards entering GAE are standardized
by HEPPO's running statistics (:class:`~pynq_rl.host.agents.standardize.RewardStandardizer`, updated with every
rollout's raw rewards *before* standardizing it); the truncation bootstrap is folded in *after* standardization,
because V is then learnt in standardized units. Logged episodic returns are always the raw ones.

Defaults. Tuned so that CartPole-v1 is solved within 300k steps for seeds 0-4 (mean return of the last 20
episodes 500, and every 20-episode window after 100k steps at 500). They differ from CleanRL's (4 envs x 128 steps,
lr 2.5e-4, 4 epochs, entropy 0.01, clipped value loss: 409 at 300k steps for seed 0 here; with 8 envs and lr 1e-3
still 310-461 for seeds 0-1): 8 envs x 128 steps, lr 1e-3 annealed to 0, 10 epochs of 4 minibatches, no entropy
bonus, unclipped value loss (CartPole's returns approach 1 / (1 - gamma) = 100, and clipping V's change to +-0.2 per
update slows the critic badly). About 1 minute on one core.

Outputs go to ``out_dir/run_name/``: ``args.json``, ``metrics.csv`` and ``metrics.jsonl`` (one row per update, CleanRL
keys ``charts/...``, ``losses/...``), ``episodes.csv`` (one row per finished episode), ``summary.json`` and
``checkpoint.pt``.
"""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import random
import time
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.categorical import Categorical
from tqdm.auto import tqdm

from .standardize import RewardStandardizer

__all__ = [
    "Args",
    "Agent",
    "GaeCompute",
    "Rollout",
    "GAE_BACKENDS",
    "REWARD_NORMS",
    "make_env",
    "make_envs",
    "collect_rollout",
    "compute_gae",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]

GAE_BACKENDS = ("torch", "emu", "rtl", "board")
"""accepted values of :attr:`Args.gae_backend`"""
REWARD_NORMS = (None, "dynamic")
"""accepted values of :attr:`Args.reward_norm`"""
CHECKPOINT_FORMAT = 1
"""version of the dictionary written by :func:`save_checkpoint`"""


@dataclass
class Args:
    exp_name: str = "ppo"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True` and deterministic algorithms where available"""
    torch_threads: int = 1
    """number of torch intra-op threads (1 on the board's ARM cores and on shared machines)"""
    progress: bool = True
    """if toggled, show a tqdm progress bar"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    save_checkpoint: bool = True
    """if toggled, save a checkpoint at the end of training (and every `checkpoint_every` iterations)"""
    checkpoint_every: int = 0
    """also save a checkpoint every this many iterations (0: only at the end)"""
    checkpoint_path: str | None = None
    """where to save the checkpoint (default: `out_dir/run_name/checkpoint.pt`)"""
    resume: str | None = None
    """path of a checkpoint to resume from (model, optimizer, reward statistics and global step)"""

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
    """the target KL divergence threshold"""

    # Offload arguments
    gae_backend: str = "torch"
    """where GAE runs: `torch` (host loop), `emu` (bit-exact model), `rtl` (MyHDL simulation) or `board` (the PL)"""
    board: str | None = None
    """the board of the overlay (`Pynq-Z2`, `ZCU106`; None: the board PYNQ reports, or the overlay's default)"""
    quantize: bool = True
    """if toggled, the GAE core runs in q8 mode (8-bit codes, HEPPO); else in raw mode (full-width fixed point)"""
    reward_norm: str | None = None
    """reward standardization before GAE: None or `dynamic` (HEPPO's running mean/std over every reward seen)"""

    # to be filled in runtime
    batch_size: int = 0
    """the batch size (computed in runtime)"""
    minibatch_size: int = 0
    """the mini-batch size (computed in runtime)"""
    num_iterations: int = 0
    """the number of iterations (computed in runtime)"""


# ---------------------------------------------------------------------------------------------------------------------
# The agent
# ---------------------------------------------------------------------------------------------------------------------
def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    """Orthogonal weights with gain ``std`` and constant bias, as in CleanRL."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """Separate actor and critic MLPs (64-64 tanh), as CleanRL's ``ppo.py``.

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions.
    """

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """Return V(x), shape ``(batch, 1)``."""
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample (or evaluate) an action: returns ``(action, log_prob, entropy, value)``."""
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


# ---------------------------------------------------------------------------------------------------------------------
# Environments
# ---------------------------------------------------------------------------------------------------------------------
def make_env(env_id: str, **kwargs: Any):
    """Return a thunk that makes one ``env_id`` environment (for ``gym.vector.SyncVectorEnv``)."""

    def thunk() -> gym.Env:
        return gym.make(env_id, **kwargs)

    return thunk


def make_envs(env_fns: list, seed: int | None = None) -> gym.vector.VectorEnv:
    """Build the vector environment the agent expects: SAME_STEP autoreset plus episode statistics.

    Parameters
    ----------
    env_fns : list of callables
        One thunk per sub-environment (see :func:`make_env`).
    seed : int, optional
        If given, seeds the action space (the environments are seeded by the first ``reset(seed=...)``).

    Returns
    -------
    gym.vector.VectorEnv
        ``RecordEpisodeStatistics(SyncVectorEnv(env_fns, autoreset_mode=SAME_STEP))``.
    """
    envs = gym.vector.SyncVectorEnv(env_fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    if seed is not None:
        envs.action_space.seed(seed)
    return envs


# ---------------------------------------------------------------------------------------------------------------------
# Rollout
# ---------------------------------------------------------------------------------------------------------------------
class Rollout(NamedTuple):
    """One rollout of ``T`` steps in ``N`` environments (torch tensors; see the module docstring for conventions)."""

    observations: torch.Tensor
    """obs_t, shape (T, N, *obs_shape)"""
    actions: torch.Tensor
    """a_t, shape (T, N, *action_shape)"""
    log_probs: torch.Tensor
    """log pi(a_t | obs_t) at collection time, shape (T, N)"""
    rewards: torch.Tensor
    """raw environment rewards r_t, shape (T, N)"""
    dones: torch.Tensor
    """1.0 where the episode ended at step t (terminated or truncated), shape (T, N)"""
    values: torch.Tensor
    """V(obs_t) and, in row T, V(next_obs), shape (T + 1, N)"""
    truncation_bootstraps: torch.Tensor
    """gamma * V(final_obs) where the episode was truncated (and not terminated) at step t, else 0; shape (T, N)"""
    episodes: list
    """(global_step, return, length) of every episode that ended during the rollout"""


def collect_rollout(
    envs: gym.vector.VectorEnv,
    agent: nn.Module,
    next_obs: torch.Tensor,
    num_steps: int,
    gamma: float,
    global_step: int = 0,
) -> tuple[Rollout, torch.Tensor, int]:
    """Run the policy for ``num_steps`` steps in every sub-environment.

    Parameters
    ----------
    envs : gym.vector.VectorEnv
        Built by :func:`make_envs` (SAME_STEP autoreset; episode statistics are read if present).
    agent : nn.Module
        Anything with :meth:`Agent.get_action_and_value` and :meth:`Agent.get_value`.
    next_obs : torch.Tensor
        The current observations, shape ``(N, *obs_shape)``.
    num_steps : int
        Rollout length ``T``.
    gamma : float
        Discount factor, for the truncation bootstrap ``gamma * V(final_obs)``.
    global_step : int, optional
        Environment steps taken before this rollout (for episode logging).

    Returns
    -------
    rollout : Rollout
        The collected tensors.
    next_obs : torch.Tensor
        Observations after the last step (the start of the next rollout).
    global_step : int
        Updated step counter (``+ num_steps * N``).

    Raises
    ------
    ValueError
        If ``envs`` does not autoreset in SAME_STEP mode (the truncation bootstrap needs ``infos["final_obs"]``, and
        in NEXT_STEP mode every step after a done would be a dummy transition).
    """
    mode = envs.metadata.get("autoreset_mode")
    if mode != gym.vector.AutoresetMode.SAME_STEP:
        raise ValueError(f"envs must autoreset in SAME_STEP mode (build them with make_envs), not {mode!r}")
    num_envs = envs.num_envs
    obs_shape = envs.single_observation_space.shape
    act_shape = envs.single_action_space.shape
    obs = torch.zeros((num_steps, num_envs) + obs_shape)
    actions = torch.zeros((num_steps, num_envs) + act_shape, dtype=torch.long)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps + 1, num_envs))
    bootstraps = torch.zeros((num_steps, num_envs))
    episodes = []

    for step in range(num_steps):
        global_step += num_envs
        obs[step] = next_obs

        # ALGO LOGIC: action logic
        with torch.no_grad():
            action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
        actions[step] = action
        logprobs[step] = logprob

        # TRY NOT TO MODIFY: execute the game and log data.
        next_obs_np, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
        rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
        dones[step] = torch.as_tensor(np.logical_or(terminations, truncations), dtype=torch.float32)
        next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)

        # truncation: the episode did not end in a terminal state, so bootstrap with V of its real last observation
        truncated_only = np.flatnonzero(np.logical_and(truncations, np.logical_not(terminations)))
        if truncated_only.size:
            final_obs = torch.as_tensor(np.stack([infos["final_obs"][i] for i in truncated_only]), dtype=torch.float32)
            with torch.no_grad():
                final_values = agent.get_value(final_obs).flatten()
            bootstraps[step, torch.as_tensor(truncated_only)] = gamma * final_values

        if "_episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                episodes.append((global_step, float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])))

    with torch.no_grad():
        values[num_steps] = agent.get_value(next_obs).flatten()
    rollout = Rollout(obs, actions, logprobs, rewards, dones, values, bootstraps, episodes)
    return rollout, next_obs, global_step


# ---------------------------------------------------------------------------------------------------------------------
# GAE
# ---------------------------------------------------------------------------------------------------------------------
class GaeCompute(Protocol):
    """What the agent needs from a GAE core: the driver's ``compute()`` (``RLOverlay(...).gae`` or a test fake)."""

    def compute(
        self, rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, *, gamma: float, lam: float, quantize: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """GAE of float32 ``rewards[T, N]``, ``values[T + 1, N]``, ``dones[T, N]``: float32 (advantages, returns)."""
        ...


def compute_gae(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Generalized advantage estimation, CleanRL's backward loop in torch.

    .. math::

        \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
        A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

    (Schulman et al., 2016). ``lam = 1``: bootstrapped discounted return minus V; ``lam = 0``: one-step TD error.

    Parameters
    ----------
    rewards : torch.Tensor
        ``r_t``, shape ``(T, N)`` (truncation bootstrap already folded in).
    values : torch.Tensor
        ``V_t``, shape ``(T + 1, N)``; row ``T`` bootstraps the tail.
    dones : torch.Tensor
        ``d_t`` = 1 where the episode ended at step ``t``, shape ``(T, N)``.
    gamma : float
        Discount factor.
    lam : float
        GAE lambda.

    Returns
    -------
    advantages : torch.Tensor
        ``A_t``, shape ``(T, N)``, dtype of ``rewards``.
    returns : torch.Tensor
        ``R_t = A_t + V_t``, shape ``(T, N)``.

    Raises
    ------
    ValueError
        If the shapes do not agree.
    """
    if rewards.ndim != 2 or dones.shape != rewards.shape or values.shape != (rewards.shape[0] + 1, rewards.shape[1]):
        raise ValueError(
            f"expected rewards (T, N), values (T + 1, N), dones (T, N), not rewards {tuple(rewards.shape)}, "
            f"values {tuple(values.shape)}, dones {tuple(dones.shape)}"
        )
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(rewards[0])
    for t in reversed(range(num_steps)):
        nextnonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    returns = advantages + values[:-1]
    return advantages, returns


def _offloaded_gae(
    gae: GaeCompute, rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, args: Args
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``gae.compute`` on float32 numpy copies and bring the float32 results back as tensors."""
    r = rewards.detach().cpu().numpy().astype(np.float32)
    v = values.detach().cpu().numpy().astype(np.float32)
    d = dones.detach().cpu().numpy().astype(np.float32)
    advantages, returns = gae.compute(r, v, d, gamma=args.gamma, lam=args.gae_lambda, quantize=args.quantize)
    advantages, returns = np.asarray(advantages), np.asarray(returns)
    if advantages.shape != r.shape or returns.shape != r.shape:
        raise RuntimeError(
            f"GAE backend returned advantages {advantages.shape} and returns {returns.shape}, expected {r.shape}"
        )
    return (torch.as_tensor(advantages, dtype=torch.float32), torch.as_tensor(returns, dtype=torch.float32))


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def save_checkpoint(
    path: str | os.PathLike,
    agent: nn.Module,
    optimizer: optim.Optimizer,
    standardizer: RewardStandardizer | None,
    args: Args,
    global_step: int,
) -> None:
    """Save everything needed to resume training (plain dicts and tensors, loadable with ``weights_only=True``).

    Parameters
    ----------
    path : str or os.PathLike
        File to write (its directory is created); written to a temporary file first, then renamed.
    agent : nn.Module
        The policy/value network.
    optimizer : torch.optim.Optimizer
        Its optimizer (Adam moments and step counts).
    standardizer : RewardStandardizer or None
        HEPPO reward statistics, or None when ``reward_norm`` is off.
    args : Args
        The run's arguments (saved as a dict).
    global_step : int
        Environment steps taken so far.
    """
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    state = {
        "format": CHECKPOINT_FORMAT,
        "model": agent.state_dict(),
        "optimizer": optimizer.state_dict(),
        "standardizer": None if standardizer is None else standardizer.state_dict(),
        "args": asdict(args),
        "global_step": int(global_step),
    }
    tmp = f"{path}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file.

    Returns
    -------
    dict
        ``model`` (state dict), ``optimizer`` (state dict), ``standardizer`` (state dict or None), ``args`` (dict),
        ``global_step`` (int) and ``format`` (int).

    Raises
    ------
    ValueError
        If the file is not a checkpoint of a known format.
    """
    state = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(
            f"{os.fspath(path)!r} is not a pynq-rl PPO checkpoint of format {CHECKPOINT_FORMAT}, not {found!r}"
        )
    return state


# ---------------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------------
_METRIC_KEYS = (
    "global_step",
    "iteration",
    "charts/learning_rate",
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/episodes",
    "charts/SPS",
    "charts/reward_mean",
    "charts/reward_std",
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
    "losses/old_approx_kl",
    "losses/approx_kl",
    "losses/clipfrac",
    "losses/explained_variance",
    "time/rollout[ms]",
    "time/gae[ms]",
    "time/update[ms]",
)


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    """NaN (no episode finished, no reward statistics) becomes JSON ``null``."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _check_args(args: Args) -> None:
    """Reject argument combinations before any environment or overlay is built."""
    if args.gae_backend not in GAE_BACKENDS:
        raise ValueError(f"gae_backend must be one of {GAE_BACKENDS}, not {args.gae_backend!r}")
    if args.reward_norm not in REWARD_NORMS:
        raise ValueError(f"reward_norm must be one of {REWARD_NORMS}, not {args.reward_norm!r}")
    for name in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "total_timesteps", "torch_threads"):
        if int(getattr(args, name)) < 1:
            raise ValueError(f"{name} must be >= 1, not {getattr(args, name)!r}")
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.num_minibatches:
        raise ValueError(
            f"num_envs * num_steps = {batch_size} is not divisible by num_minibatches = {args.num_minibatches}"
        )
    if args.total_timesteps < batch_size:
        raise ValueError(
            f"total_timesteps = {args.total_timesteps} is smaller than one batch (num_envs * num_steps = {batch_size})"
        )
    if args.checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be >= 0, not {args.checkpoint_every!r}")


def train(args: Args, gae: GaeCompute | None = None) -> dict[str, Any]:
    """Train PPO and return summary metrics.

    Parameters
    ----------
    args : Args
        The hyperparameters; the "to be filled in runtime" fields are computed here (``args`` is not modified; the
        filled copy is saved in ``args.json`` and in checkpoints).
    gae : GaeCompute, optional
        An object whose ``compute(rewards, values, dones, *, gamma, lam, quantize)`` does the GAE step. It overrides
        ``args.gae_backend``. If None, ``gae_backend="torch"`` uses :func:`compute_gae` and any other backend uses
        ``RLOverlay(backend=args.gae_backend, board=args.board).gae``.

    Returns
    -------
    dict
        ``episode_returns`` and ``episode_lengths`` (lists, every episode finished in this call, raw rewards),
        ``mean_return_last20`` (NaN if no episode finished), ``global_step``, ``start_step`` (non-zero on resume),
        ``iterations``, ``sps``, ``wall_time_s``, ``run_name``, ``run_dir``, ``checkpoint`` (path or None),
        ``reward_stats`` (the standardizer's state or None).

    Raises
    ------
    ValueError
        If an argument is out of range, or ``args.resume`` is not a compatible checkpoint.
    RuntimeError
        If the GAE backend returns arrays of the wrong shape.
    TimeoutError
        From the GAE core's driver, if the core does not finish (``board`` and ``rtl`` backends).

    Warns
    -----
    RuntimeWarning
        With ``reward_norm="dynamic"``, once, if every reward seen so far is the same constant (CartPole's +1):
        the standardized rewards are then all 0 and the agent cannot learn.
    """
    _check_args(args)
    args = replace(args)
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = args.total_timesteps // args.batch_size
    resume_state = load_checkpoint(args.resume) if args.resume else None
    start_step = int(resume_state["global_step"]) if resume_state else 0

    # the GAE step: injected, the host torch loop, or the overlay's GAE core (the only branch on hardware)
    if gae is None and args.gae_backend != "torch":
        from ..overlay import RLOverlay  # imported lazily: pynq is needed only for offload

        gae = RLOverlay(backend=args.gae_backend, board=args.board).gae

    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = os.path.join(args.out_dir, run_name)
    os.makedirs(run_dir, exist_ok=True)
    checkpoint_path = args.checkpoint_path or os.path.join(run_dir, "checkpoint.pt")
    with open(os.path.join(run_dir, "args.json"), "w", encoding="utf-8") as f:
        json.dump(asdict(args), f, indent=2)

    with contextlib.ExitStack() as stack:
        stack.callback(torch.set_num_threads, torch.get_num_threads())
        torch.set_num_threads(args.torch_threads)

        # TRY NOT TO MODIFY: seeding (a resumed run continues with fresh random streams, offset by its global step)
        seed = args.seed + start_step
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.backends.cudnn.deterministic = args.torch_deterministic

        # env setup
        envs = make_envs([make_env(args.env_id) for _ in range(args.num_envs)], seed=seed)
        stack.callback(envs.close)
        if not isinstance(envs.single_action_space, gym.spaces.Discrete):
            raise ValueError(f"only discrete action spaces are supported, not {envs.single_action_space!r}")

        agent = Agent(int(np.prod(envs.single_observation_space.shape)), int(envs.single_action_space.n))
        optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
        standardizer = RewardStandardizer() if args.reward_norm == "dynamic" else None
        if resume_state is not None:
            try:
                agent.load_state_dict(resume_state["model"])
                optimizer.load_state_dict(resume_state["optimizer"])
            except (RuntimeError, ValueError, KeyError) as exc:
                raise ValueError(f"checkpoint {args.resume!r} does not fit this agent on {args.env_id}: {exc}") from exc
            if standardizer is not None and resume_state["standardizer"] is not None:
                standardizer.load_state_dict(resume_state["standardizer"])
            elif standardizer is not None:
                warnings.warn(f"checkpoint {args.resume!r} has no reward statistics; they start at zero", stacklevel=2)

        def _open(name: str):
            return stack.enter_context(open(os.path.join(run_dir, name), "w", newline="", encoding="utf-8"))

        metrics_csv, metrics_jsonl, episodes_csv = _open("metrics.csv"), _open("metrics.jsonl"), _open("episodes.csv")
        metrics_writer = csv.DictWriter(metrics_csv, fieldnames=_METRIC_KEYS)
        metrics_writer.writeheader()
        episodes_writer = csv.writer(episodes_csv)
        episodes_writer.writerow(["global_step", "charts/episodic_return", "charts/episodic_length"])

        # TRY NOT TO MODIFY: start the game
        global_step = start_step
        start_iteration = start_step // args.batch_size + 1
        start_time = time.time()
        next_obs, _ = envs.reset(seed=seed)
        next_obs = torch.as_tensor(next_obs, dtype=torch.float32)
        episode_returns: list[float] = []
        episode_lengths: list[int] = []
        iterations = 0
        saved = None
        warned_constant = False
        progress = stack.enter_context(tqdm(
            total=args.num_iterations * args.batch_size,
            initial=min(start_step, args.num_iterations * args.batch_size),
            disable=not args.progress,
            unit="step",
            desc=run_name,
            dynamic_ncols=True,
        ))
        for iteration in range(start_iteration, args.num_iterations + 1):
            # Annealing the rate if instructed to do so.
            if args.anneal_lr:
                frac = 1.0 - (iteration - 1.0) / args.num_iterations
                optimizer.param_groups[0]["lr"] = frac * args.learning_rate

            t0 = time.perf_counter()
            rollout, next_obs, global_step = collect_rollout(
                envs, agent, next_obs, args.num_steps, args.gamma, global_step
            )
            for step, ep_return, ep_length in rollout.episodes:
                episode_returns.append(ep_return)
                episode_lengths.append(ep_length)
                episodes_writer.writerow([step, ep_return, ep_length])

            # rewards that enter GAE: HEPPO standardization (statistics include this rollout), then the
            # truncation bootstrap gamma * V(final_obs), which is already in the units V is learnt in
            t1 = time.perf_counter()
            gae_rewards = rollout.rewards
            if standardizer is not None:
                raw = rollout.rewards.numpy()
                standardizer.update(raw)
                gae_rewards = torch.as_tensor(standardizer.standardize(raw))
                if standardizer.std == 0.0 and not warned_constant:
                    warnings.warn(
                        f"reward_norm='dynamic': every reward seen so far equals {standardizer.mean:g}, so the "
                        "standardized rewards are all 0 and carry no learning signal", RuntimeWarning, stacklevel=2
                    )
                    warned_constant = True
            gae_rewards = gae_rewards + rollout.truncation_bootstraps
            if gae is None:
                advantages, returns = compute_gae(
                    gae_rewards, rollout.values, rollout.dones, args.gamma, args.gae_lambda
                )
            else:
                advantages, returns = _offloaded_gae(gae, gae_rewards, rollout.values, rollout.dones, args)
            t2 = time.perf_counter()

            # flatten the batch
            b_obs = rollout.observations.reshape((-1,) + envs.single_observation_space.shape)
            b_logprobs = rollout.log_probs.reshape(-1)
            b_actions = rollout.actions.reshape((-1,) + envs.single_action_space.shape)
            b_advantages = advantages.reshape(-1)
            b_returns = returns.reshape(-1)
            b_values = rollout.values[:-1].reshape(-1)

            # Optimizing the policy and value network
            b_inds = np.arange(args.batch_size)
            clipfracs = []
            for epoch in range(args.update_epochs):
                np.random.shuffle(b_inds)
                for start in range(0, args.batch_size, args.minibatch_size):
                    end = start + args.minibatch_size
                    mb_inds = b_inds[start:end]

                    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                    logratio = newlogprob - b_logprobs[mb_inds]
                    ratio = logratio.exp()

                    with torch.no_grad():
                        # calculate approx_kl http://joschu.net/blog/kl-approx.html
                        old_approx_kl = (-logratio).mean()
                        approx_kl = ((ratio - 1) - logratio).mean()
                        clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                    mb_advantages = b_advantages[mb_inds]
                    if args.norm_adv:
                        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                    # Policy loss
                    pg_loss1 = -mb_advantages * ratio
                    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                    # Value loss
                    newvalue = newvalue.view(-1)
                    if args.clip_vloss:
                        v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                        v_clipped = b_values[mb_inds] + torch.clamp(
                            newvalue - b_values[mb_inds],
                            -args.clip_coef,
                            args.clip_coef,
                        )
                        v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                        v_loss = 0.5 * v_loss_max.mean()
                    else:
                        v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                    entropy_loss = entropy.mean()
                    loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()

                if args.target_kl is not None and approx_kl > args.target_kl:
                    break
            t3 = time.perf_counter()

            y_pred, y_true = b_values.numpy(), b_returns.numpy()
            var_y = np.var(y_true)
            explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

            # TRY NOT TO MODIFY: record rewards for plotting purposes
            iterations += 1
            sps = int((global_step - start_step) / max(time.time() - start_time, 1e-9))
            ep_r = [r for _, r, _ in rollout.episodes]
            ep_l = [n for _, _, n in rollout.episodes]
            row = {
                "global_step": global_step,
                "iteration": iteration,
                "charts/learning_rate": optimizer.param_groups[0]["lr"],
                "charts/episodic_return": float(np.mean(ep_r)) if ep_r else math.nan,
                "charts/episodic_length": float(np.mean(ep_l)) if ep_l else math.nan,
                "charts/episodes": len(ep_r),
                "charts/SPS": sps,
                "charts/reward_mean": standardizer.mean if standardizer else math.nan,
                "charts/reward_std": standardizer.std if standardizer else math.nan,
                "losses/value_loss": v_loss.item(),
                "losses/policy_loss": pg_loss.item(),
                "losses/entropy": entropy_loss.item(),
                "losses/old_approx_kl": old_approx_kl.item(),
                "losses/approx_kl": approx_kl.item(),
                "losses/clipfrac": float(np.mean(clipfracs)),
                "losses/explained_variance": float(explained_var),
                "time/rollout[ms]": 1e3 * (t1 - t0),
                "time/gae[ms]": 1e3 * (t2 - t1),
                "time/update[ms]": 1e3 * (t3 - t2),
            }
            metrics_writer.writerow(row)
            metrics_jsonl.write(json.dumps(_json_safe(row)) + "\n")
            metrics_csv.flush()
            metrics_jsonl.flush()
            episodes_csv.flush()

            progress.update(args.batch_size)
            last20 = episode_returns[-20:]
            progress.set_postfix(ret20=f"{np.mean(last20):.1f}" if last20 else "-", sps=sps, refresh=False)

            if args.save_checkpoint and args.checkpoint_every and iteration % args.checkpoint_every == 0:
                save_checkpoint(checkpoint_path, agent, optimizer, standardizer, args, global_step)
                saved = checkpoint_path

        if args.save_checkpoint:
            save_checkpoint(checkpoint_path, agent, optimizer, standardizer, args, global_step)
            saved = checkpoint_path

    wall_time_s = time.time() - start_time
    summary = {
        "run_name": run_name,
        "run_dir": run_dir,
        "global_step": global_step,
        "start_step": start_step,
        "iterations": iterations,
        "episode_returns": episode_returns,
        "episode_lengths": episode_lengths,
        "mean_return_last20": float(np.mean(episode_returns[-20:])) if episode_returns else math.nan,
        "sps": int((global_step - start_step) / max(wall_time_s, 1e-9)),
        "wall_time_s": wall_time_s,
        "checkpoint": saved,
        "reward_stats": standardizer.state_dict() if standardizer else None,
    }
    with open(os.path.join(run_dir, "summary.json"), "w", encoding="utf-8") as f:
        short = {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}
        short["episodes"] = len(episode_returns)
        json.dump(_json_safe(short), f, indent=2)
    return summary
