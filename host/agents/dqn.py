r"""Double DQN with prioritized experience replay in the CleanRL ``dqn.py`` style, priorities on the replay core.

Read top to bottom: :class:`Args`, the network (:class:`QNetwork`), the schedules (:func:`linear_schedule`),
checkpoints, and :func:`train`, which follows CleanRL's loop: epsilon-greedy step, store the transition (with the
largest priority so far), and from ``learning_starts`` on, every ``train_freq`` steps one gradient step on a
prioritized batch, then its TD errors become the new priorities; the target network follows every
``target_network_frequency`` steps (``tau = 1``: copy; ``tau < 1``: Polyak averaging).

Double DQN (van Hasselt et al., 2016): the online network picks the next action, the target network values it,

.. math::

    y_i = r_i + \gamma (1 - d_i) \, Q_{\bar\theta}\big(s'_i, \arg\max_a Q_\theta(s'_i, a)\big), \qquad
    \delta_i = y_i - Q_\theta(s_i, a_i), \qquad
    L = \frac{1}{B} \sum_i w_i \, \mathrm{Huber}(\delta_i)

with ``d_i = 1`` only where ``s'_i`` is terminal: a time-limit truncation is bootstrapped from the episode's real
last observation (``infos["final_obs"]`` under SAME_STEP autoreset, see :mod:`.ppo`). Prioritized replay (Schaul
et al., 2016): ``P(i) = p_i^alpha / sum_k p_k^alpha`` with ``p_i = |delta_i| + per_eps``, and importance-sampling
weights ``w_i = (N P(i))^-beta / max_j w_j`` with ``beta`` annealed linearly from ``per_beta`` to 1 over the run
(:mod:`.replay_buffer`). ``double_q=False`` gives the original DQN target ``max_a Q_target(s', a)``.

``replay_backend`` is the only branch on hardware: ``"numpy"`` keeps the priorities in the float64 reference sum tree,
``"emu"``, ``"rtl"`` and ``"board"`` in the replay core of an :class:`~pynq_rl.host.overlay.RLOverlay`, through
its driver's public methods only (``update``, ``sample``, ``clear``, ``state_dict``...). The transitions always stay
in host memory.

Defaults. Tuned on CartPole-v1, seed 0, 150k steps, with the priorities on the numpy and the emu backend (measured
numbers in README.md): a 2x256 ReLU network, Adam at 5e-4 annealed linearly to 0 (a 2x128 network at 1e-3 with target
updates every 1000 steps reached 500 and then collapsed to a last-20 mean of 147, DQN's usual late failure on
CartPole), batch 128, a 50k-transition buffer, one gradient step every 2 environment steps from step 5k,
a hard target update every 500 steps, epsilon 1 -> 0.01 over the first 10% of steps, Huber loss, gradient norm
clipped at 10, PER alpha 0.6 and beta 0.4 -> 1. The 20-episode mean first reaches 450 after 58k-98k steps and
ends at 443-500 (seed 0: 500.0 on emu, 483.4 on numpy).

Outputs go to ``out_dir/run_name/``: ``args.json``, ``metrics.csv`` and ``metrics.jsonl`` (one row every
``log_every`` gradient steps, CleanRL keys ``charts/...``, ``losses/...``), ``episodes.csv`` (one row per finished
episode), ``summary.json`` and ``checkpoint.pt``.
"""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from tqdm.auto import tqdm

from .ppo import make_env, make_envs
from .replay_buffer import PRIORITY_BACKENDS, PrioritizedReplayBuffer, PriorityBackend

__all__ = [
    "Args",
    "QNetwork",
    "REPLAY_BACKENDS",
    "linear_schedule",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]

REPLAY_BACKENDS = PRIORITY_BACKENDS
"""accepted values of :attr:`Args.replay_backend`"""
CHECKPOINT_FORMAT = 1
"""version of the dictionary written by :func:`save_checkpoint`"""


@dataclass
class Args:
    exp_name: str = "dqn"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True`"""
    torch_threads: int = 1
    """number of torch intra-op threads (1 on the board's ARM cores and on shared machines)"""
    progress: bool = True
    """if toggled, show a tqdm progress bar"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    save_checkpoint: bool = True
    """if toggled, save a checkpoint at the end of training (and every `checkpoint_every` steps)"""
    checkpoint_every: int = 0
    """also save a checkpoint every this many environment steps (0: only at the end)"""
    checkpoint_path: str | None = None
    """where to save the checkpoint (default: `out_dir/run_name/checkpoint.pt`)"""
    resume: str | None = None
    """path of a checkpoint to resume from (networks, optimizer, replay buffer with its priorities, global step)"""
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
    replay_backend: str = "numpy"
    """where the priorities live: `numpy` (float64 sum tree on the host), `emu`, `rtl` or `board` (the replay core)"""
    board: str | None = None
    """the board of the overlay (`Pynq-Z2`, `ZCU106`; None: the board PYNQ reports, or the overlay's default)"""

    # to be filled in runtime
    num_iterations: int = 0
    """the number of vector-environment steps (computed in runtime)"""


# ---------------------------------------------------------------------------------------------------------------------
# The agent
# ---------------------------------------------------------------------------------------------------------------------
class QNetwork(nn.Module):
    """An MLP from the flattened observation to one Q-value per action (ReLU hidden layers, as CleanRL's).

    Parameters
    ----------
    obs_dim : int
        Size of the flattened observation.
    n_actions : int
        Number of discrete actions.
    hidden_sizes : tuple of int
        Widths of the hidden layers.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden_sizes: tuple[int, ...] = (256, 256)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, n_actions))
        self.network = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q(x, .), shape ``(batch, n_actions)``."""
        return self.network(x.flatten(1))


def linear_schedule(start: float, end: float, duration: float, t: float) -> float:
    """``start`` at ``t = 0``, linearly to ``end`` at ``t = duration``, then ``end`` (CleanRL's schedule)."""
    if duration <= 0:
        return end
    slope = (end - start) / duration
    return max(slope * t + start, end) if end <= start else min(slope * t + start, end)


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def _to_torch_safe(obj: Any) -> Any:
    """numpy arrays to tensors and numpy scalars to Python numbers, so ``torch.load(weights_only=True)`` reads them."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _to_torch_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_torch_safe(v) for v in obj)
    return obj


def _to_numpy(obj: Any) -> Any:
    """The inverse of :func:`_to_torch_safe` for state dicts: tensors back to numpy arrays."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_numpy(v) for v in obj]
    return obj


def save_checkpoint(
    path: str | os.PathLike,
    q_network: nn.Module,
    target_network: nn.Module,
    optimizer: optim.Optimizer,
    rb: PrioritizedReplayBuffer,
    args: Args,
    global_step: int,
    gradient_steps: int,
) -> None:
    """Save everything needed to resume training (plain dicts and tensors, loadable with ``weights_only=True``).

    Parameters
    ----------
    path : str or os.PathLike
        File to write (its directory is created); written to a temporary file first, then renamed.
    q_network, target_network : nn.Module
        The online and target Q-networks.
    optimizer : torch.optim.Optimizer
        Its optimizer (Adam moments and step counts).
    rb : PrioritizedReplayBuffer
        The replay buffer: transitions, ring position, max priority and the priorities (the core's leaves and PRNG
        state on a core backend).
    args : Args
        The run's arguments (saved as a dict).
    global_step : int
        Environment steps taken so far.
    gradient_steps : int
        Gradient steps taken so far.
    """
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    state = {
        "format": CHECKPOINT_FORMAT,
        "agent": "dqn",
        "q_network": q_network.state_dict(),
        "target_network": target_network.state_dict(),
        "optimizer": optimizer.state_dict(),
        "replay_buffer": _to_torch_safe(rb.state_dict()),
        "args": _to_torch_safe(asdict(args)),
        "global_step": int(global_step),
        "gradient_steps": int(gradient_steps),
    }
    tmp = f"{path}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` (the replay buffer's state as numpy arrays).

    Returns
    -------
    dict
        ``q_network``, ``target_network``, ``optimizer`` (state dicts), ``replay_buffer`` (buffer state dict),
        ``args`` (dict), ``global_step``, ``gradient_steps`` and ``format``.

    Raises
    ------
    ValueError
        If the file is not a DQN checkpoint of a known format.
    """
    state = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT or state.get("agent") != "dqn":
        found = (state.get("agent"), state.get("format")) if isinstance(state, dict) else type(state).__name__
        raise ValueError(
            f"{os.fspath(path)!r} is not a pynq-rl DQN checkpoint of format {CHECKPOINT_FORMAT}, not {found!r}"
        )
    state["replay_buffer"] = _to_numpy(state["replay_buffer"])
    return state


# ---------------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------------
_METRIC_KEYS = (
    "global_step",
    "gradient_steps",
    "charts/learning_rate",
    "charts/epsilon",
    "charts/beta",
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/episodes",
    "charts/SPS",
    "losses/td_loss",
    "losses/q_values",
    "losses/abs_td_error",
    "replay/size",
    "replay/total",
    "replay/nonzero",
    "replay/max_priority",
    "replay/mean_weight",
    "time/sample[ms]",
    "time/update[ms]",
    "time/priorities[ms]",
)


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    """NaN (no episode finished since the last row) becomes JSON ``null``."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _check_args(args: Args) -> None:
    """Reject argument values before any environment or overlay is built."""
    if args.replay_backend not in REPLAY_BACKENDS:
        raise ValueError(f"replay_backend must be one of {REPLAY_BACKENDS}, not {args.replay_backend!r}")
    for name in ("num_envs", "total_timesteps", "buffer_size", "batch_size", "train_freq",
                 "target_network_frequency", "torch_threads", "log_every"):
        if int(getattr(args, name)) < 1:
            raise ValueError(f"{name} must be >= 1, not {getattr(args, name)!r}")
    for name in ("learning_starts", "checkpoint_every"):
        if int(getattr(args, name)) < 0:
            raise ValueError(f"{name} must be >= 0, not {getattr(args, name)!r}")
    for name in ("tau", "per_beta", "start_e", "end_e", "exploration_fraction", "gamma"):
        if not 0.0 <= float(getattr(args, name)) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], not {getattr(args, name)!r}")
    if args.tau == 0.0:
        raise ValueError("tau must be in (0, 1], not 0.0 (the target network would never move)")
    if args.per_alpha < 0.0 or args.per_eps <= 0.0 or args.learning_rate <= 0.0:
        raise ValueError(f"per_alpha must be >= 0, per_eps and learning_rate > 0, not {args.per_alpha!r}, "
                         f"{args.per_eps!r}, {args.learning_rate!r}")
    if args.num_envs > args.buffer_size:
        raise ValueError(f"num_envs = {args.num_envs} exceeds buffer_size = {args.buffer_size}")


def train(args: Args, replay: PriorityBackend | None = None) -> dict[str, Any]:
    """Train Double DQN with prioritized replay and return summary metrics.

    Parameters
    ----------
    args : Args
        The hyperparameters; the "to be filled in runtime" fields are computed here (``args`` is not modified; the
        filled copy is saved in ``args.json`` and in checkpoints).
    replay : PriorityBackend, optional
        A priority store with the replay core driver's public methods (e.g. ``RLOverlay(...).replay`` or a
        :class:`~pynq_rl.host.agents.replay_buffer.NumpySumTree`); it overrides ``args.replay_backend``. If None,
        the buffer builds the backend ``args.replay_backend`` names (an overlay's replay core on ``args.board``).

    Returns
    -------
    dict
        ``episode_returns`` and ``episode_lengths`` (lists, every episode finished in this call),
        ``mean_return_last20`` (NaN if no episode finished), ``best_mean_return20`` (the best mean over 20
        consecutive episodes, NaN if fewer finished), ``global_step``, ``start_step`` (non-zero on resume),
        ``gradient_steps``, ``sps``, ``wall_time_s``, ``run_name``, ``run_dir``, ``checkpoint`` (path or None),
        ``replay_backend``.

    Raises
    ------
    ValueError
        If an argument is out of range, the buffer does not fit the replay core, or ``args.resume`` is not a
        compatible checkpoint.
    TimeoutError, RuntimeError
        From the replay core's driver, if the core does not finish or reports an error (``board`` and ``rtl``).
    """
    _check_args(args)
    args = replace(args)
    args.num_iterations = args.total_timesteps // args.num_envs
    resume_state = load_checkpoint(args.resume) if args.resume else None
    start_step = int(resume_state["global_step"]) if resume_state else 0

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
        obs_space = envs.single_observation_space
        n_actions = int(envs.single_action_space.n)

        q_network = QNetwork(int(np.prod(obs_space.shape)), n_actions, tuple(args.hidden_sizes))
        optimizer = optim.Adam(q_network.parameters(), lr=args.learning_rate)
        target_network = QNetwork(int(np.prod(obs_space.shape)), n_actions, tuple(args.hidden_sizes))
        target_network.load_state_dict(q_network.state_dict())

        # the replay buffer: transitions on the host, priorities in the sum tree (the only branch on hardware)
        rb = PrioritizedReplayBuffer(
            args.buffer_size,
            obs_space.shape,
            obs_space.dtype,
            action_shape=envs.single_action_space.shape,
            action_dtype=np.int64,
            priorities=replay if replay is not None else args.replay_backend,
            alpha=args.per_alpha,
            priority_eps=args.per_eps,
            seed=seed,
            board=args.board,
        )
        gradient_steps = 0
        if resume_state is not None:
            try:
                q_network.load_state_dict(resume_state["q_network"])
                target_network.load_state_dict(resume_state["target_network"])
                optimizer.load_state_dict(resume_state["optimizer"])
                rb.load_state_dict(resume_state["replay_buffer"])
            except (RuntimeError, ValueError, KeyError) as exc:
                raise ValueError(f"checkpoint {args.resume!r} does not fit this agent on {args.env_id} with "
                                 f"replay backend {rb.backend_name}: {exc}") from exc
            gradient_steps = int(resume_state["gradient_steps"])

        def _open(name: str):
            return stack.enter_context(open(os.path.join(run_dir, name), "w", newline="", encoding="utf-8"))

        metrics_csv, metrics_jsonl, episodes_csv = _open("metrics.csv"), _open("metrics.jsonl"), _open("episodes.csv")
        metrics_writer = csv.DictWriter(metrics_csv, fieldnames=_METRIC_KEYS)
        metrics_writer.writeheader()
        episodes_writer = csv.writer(episodes_csv)
        episodes_writer.writerow(["global_step", "charts/episodic_return", "charts/episodic_length"])

        # TRY NOT TO MODIFY: start the game
        global_step = start_step
        start_iteration = start_step // args.num_envs + 1
        start_time = time.time()
        obs, _ = envs.reset(seed=seed)
        episode_returns: list[float] = []
        episode_lengths: list[int] = []
        new_returns: list[float] = []
        new_lengths: list[int] = []
        timings = {"sample": 0.0, "update": 0.0, "priorities": 0.0}
        saved = None
        next_checkpoint = (start_step // args.checkpoint_every + 1) * args.checkpoint_every \
            if args.checkpoint_every else None
        progress = stack.enter_context(tqdm(
            total=args.num_iterations * args.num_envs,
            initial=min(start_step, args.num_iterations * args.num_envs),
            disable=not args.progress,
            unit="step",
            desc=run_name,
            dynamic_ncols=True,
        ))
        for iteration in range(start_iteration, args.num_iterations + 1):
            global_step += args.num_envs
            # ALGO LOGIC: put action logic here
            epsilon = linear_schedule(args.start_e, args.end_e, args.exploration_fraction * args.total_timesteps,
                                      global_step)
            with torch.no_grad():
                q_values = q_network(torch.as_tensor(obs, dtype=torch.float32))
            actions = torch.argmax(q_values, dim=1).numpy()
            explore = np.random.random(args.num_envs) < epsilon
            if explore.any():  # envs.action_space is the seeded one (make_envs), single_action_space is not
                actions = np.where(explore, envs.action_space.sample(), actions)

            # TRY NOT TO MODIFY: execute the game and log data.
            next_obs, rewards, terminations, truncations, infos = envs.step(actions)
            if "_episode" in infos:
                for i in np.flatnonzero(infos["_episode"]):
                    ep_return, ep_length = float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])
                    episode_returns.append(ep_return)
                    episode_lengths.append(ep_length)
                    new_returns.append(ep_return)
                    new_lengths.append(ep_length)
                    episodes_writer.writerow([global_step, ep_return, ep_length])

            # TRY NOT TO MODIFY: save data to replay buffer; handle `final_obs` (SAME_STEP autoreset)
            real_next_obs = next_obs.copy()
            for idx in np.flatnonzero(np.logical_or(terminations, truncations)):
                real_next_obs[idx] = infos["final_obs"][idx]
            rb.add(obs, real_next_obs, actions, rewards, terminations)

            # TRY NOT TO MODIFY: CRUCIAL step easy to overlook
            obs = next_obs

            # ALGO LOGIC: training.
            if global_step > args.learning_starts and iteration % args.train_freq == 0:
                frac = min(1.0, global_step / args.total_timesteps)
                beta = args.per_beta + frac * (1.0 - args.per_beta)
                if args.anneal_lr:
                    optimizer.param_groups[0]["lr"] = (1.0 - frac) * args.learning_rate

                t0 = time.perf_counter()
                data = rb.sample(args.batch_size, beta)
                t1 = time.perf_counter()
                with torch.no_grad():
                    if args.double_q:
                        next_actions = q_network(data.next_observations.float()).argmax(dim=1, keepdim=True)
                        target_max = target_network(data.next_observations.float()).gather(1, next_actions).squeeze(1)
                    else:
                        target_max, _ = target_network(data.next_observations.float()).max(dim=1)
                    td_target = data.rewards + args.gamma * target_max * (1.0 - data.dones)
                old_val = q_network(data.observations.float()).gather(1, data.actions.view(-1, 1)).squeeze(1)
                td_errors = td_target - old_val
                loss = (data.weights * F.smooth_l1_loss(old_val, td_target, reduction="none")).mean()

                # optimize the model
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(q_network.parameters(), args.max_grad_norm)
                optimizer.step()
                t2 = time.perf_counter()
                rb.update_priorities(data.indices, td_errors.detach().numpy())
                t3 = time.perf_counter()
                timings["sample"] += t1 - t0
                timings["update"] += t2 - t1
                timings["priorities"] += t3 - t2
                gradient_steps += 1

                if gradient_steps % args.log_every == 0:
                    sps = int((global_step - start_step) / max(time.time() - start_time, 1e-9))
                    row = {
                        "global_step": global_step,
                        "gradient_steps": gradient_steps,
                        "charts/learning_rate": optimizer.param_groups[0]["lr"],
                        "charts/epsilon": epsilon,
                        "charts/beta": beta,
                        "charts/episodic_return": float(np.mean(new_returns)) if new_returns else math.nan,
                        "charts/episodic_length": float(np.mean(new_lengths)) if new_lengths else math.nan,
                        "charts/episodes": len(new_returns),
                        "charts/SPS": sps,
                        "losses/td_loss": loss.item(),
                        "losses/q_values": old_val.mean().item(),
                        "losses/abs_td_error": td_errors.abs().mean().item(),
                        "replay/size": rb.size(),
                        "replay/total": float(rb.priorities.total),
                        "replay/nonzero": int(rb.priorities.nonzero),
                        "replay/max_priority": rb.max_priority,
                        "replay/mean_weight": data.weights.mean().item(),
                        "time/sample[ms]": 1e3 * timings["sample"] / args.log_every,
                        "time/update[ms]": 1e3 * timings["update"] / args.log_every,
                        "time/priorities[ms]": 1e3 * timings["priorities"] / args.log_every,
                    }
                    metrics_writer.writerow(row)
                    metrics_jsonl.write(json.dumps(_json_safe(row)) + "\n")
                    metrics_csv.flush()
                    metrics_jsonl.flush()
                    episodes_csv.flush()
                    timings = dict.fromkeys(timings, 0.0)
                    new_returns, new_lengths = [], []
                    last20 = episode_returns[-20:]
                    progress.set_postfix(ret20=f"{np.mean(last20):.1f}" if last20 else "-", sps=sps, refresh=False)

            # update target network
            if global_step > args.learning_starts and iteration % max(1, args.target_network_frequency
                                                                      // args.num_envs) == 0:
                for target_param, q_param in zip(target_network.parameters(), q_network.parameters()):
                    target_param.data.copy_(args.tau * q_param.data + (1.0 - args.tau) * target_param.data)

            progress.update(args.num_envs)
            if next_checkpoint is not None and global_step >= next_checkpoint and args.save_checkpoint:
                save_checkpoint(checkpoint_path, q_network, target_network, optimizer, rb, args, global_step,
                                gradient_steps)
                saved = checkpoint_path
                next_checkpoint += args.checkpoint_every

        if args.save_checkpoint:
            save_checkpoint(checkpoint_path, q_network, target_network, optimizer, rb, args, global_step,
                            gradient_steps)
            saved = checkpoint_path

    wall_time_s = time.time() - start_time
    windows = [np.mean(episode_returns[i - 20:i]) for i in range(20, len(episode_returns) + 1)]
    summary = {
        "run_name": run_name,
        "run_dir": run_dir,
        "replay_backend": rb.backend_name,
        "global_step": global_step,
        "start_step": start_step,
        "gradient_steps": gradient_steps,
        "episode_returns": episode_returns,
        "episode_lengths": episode_lengths,
        "mean_return_last20": float(np.mean(episode_returns[-20:])) if episode_returns else math.nan,
        "best_mean_return20": float(max(windows)) if windows else math.nan,
        "sps": int((global_step - start_step) / max(wall_time_s, 1e-9)),
        "wall_time_s": wall_time_s,
        "checkpoint": saved,
    }
    with open(os.path.join(run_dir, "summary.json"), "w", encoding="utf-8") as f:
        short = {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}
        short["episodes"] = len(episode_returns)
        json.dump(_json_safe(short), f, indent=2)
    return summary
