r"""Double DQN with prioritized experience replay in the CleanRL ``dqn.py`` style, priorities on the replay core.

Read top to bottom: checkpoints, then :func:`train`. What a run is asked to do (:class:`~.dqn.args.Args`,
:func:`~.dqn.args.check_args`) is in :mod:`.args`; the networks come from :func:`~.nets.learners.make_q_learner`, the
schedules from :func:`~.run.linear_schedule`. :func:`train` follows CleanRL's loop: epsilon-greedy step, store the
transition (with the largest priority so far), and from ``learning_starts`` on, every ``train_freq`` steps one gradient
step on a prioritized batch, then its TD errors become the new priorities; the target network follows every
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
(:mod:`.replay.buffer`). ``double_q=False`` gives the original DQN target ``max_a Q_target(s', a)``.

``backend`` is the only branch on hardware: ``"emu"`` (the default), ``"rtl"``, ``"verilator"`` and ``"board"`` keep the
priorities in the replay core of an :class:`~pynq_rl.host.overlay.RLOverlay`, through its driver's public methods only
(``update``, ``sample``, ``clear``, ``state_dict``...); ``"host"`` in the float64 reference sum tree
(:class:`~.priorities.NumpySumTree`, no core). The transitions always stay in host memory.

Defaults. Tuned on CartPole-v1, seed 0, 150k steps, with the priorities on the host and the emu backend (measured
numbers in README.md): a 2x256 ReLU network, Adam at 5e-4 annealed linearly to 0 (a 2x128 network at 1e-3 with target
updates every 1000 steps reached 500 and then collapsed to a last-20 mean of 147, DQN's usual late failure on
CartPole), batch 128, a 50k-transition buffer, one gradient step every 2 environment steps from step 5k,
a hard target update every 500 steps, epsilon 1 -> 0.01 over the first 10% of steps, Huber loss, gradient norm
clipped at 10, PER alpha 0.6 and beta 0.4 -> 1. The 20-episode mean first reaches 450 after 58k-98k steps and
ends at 443-500 (seed 0: 500.0 on emu, 483.4 on host).

Networks. ``nn="torch"`` (the default where torch imports) uses CleanRL's torch :class:`~.torch_nets.QNetwork`;
``nn="numpy"`` the same MLP in numpy (:mod:`.numpy_nets`), which is what runs on a PYNQ-Z2's ARM, where torch has no
wheel. The loop below sees only numpy arrays and the learner's ``q_values``/``learn``/``update_target``.

Outputs go to ``out_dir/run_name/`` (:class:`~.rundir.Run`): ``args.json``, ``metrics.csv`` and ``metrics.jsonl`` (one
row every ``log_every`` gradient steps, CleanRL keys ``charts/...``, ``losses/...``), ``episodes.csv`` (one row per
finished episode), ``summary.json`` and ``checkpoint.npz`` (arrays + JSON header,
:func:`~.checkpoints.save_checkpoint`; also every ``checkpoint_every`` environment steps).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from ..common import checkpoints
from ..common.checks import load_resume
from ..common.envs import discrete_actions, finished_episodes, make_env, make_envs, space_shape
from ..common.interrupts import StopOnSignal, finish
from ..common.run import (
    checkpoint_due,
    limit_torch_threads,
    linear_schedule,
    progress_bar,
    resolve_nn,
    resolved_nn,
    seed_everything,
)
from ..common.rundir import Run, json_safe
from ..common.startup import core_start_text, starting
from ..nets.learners import QLearner, make_q_learner
from ..replay.buffer import PrioritizedReplayBuffer
from ..replay.priorities import PriorityBackend
from .args import BOUNDS, Args, check_args

__all__ = [
    "Args",
    "BOUNDS",
    "check_args",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def save_checkpoint(
    path: str, learner: QLearner, rb: PrioritizedReplayBuffer, args: Args, global_step: int, gradient_steps: int
) -> None:
    """Save everything needed to resume training (:func:`~.checkpoints.save_checkpoint`: arrays + JSON, no pickle).

    Parameters
    ----------
    path : str or os.PathLike
        File to write (``.npz``); written to a temporary file first, then renamed.
    learner : QLearner
        The online and target networks and their optimizer, either backend.
    rb : PrioritizedReplayBuffer
        The replay buffer: transitions, ring position, max priority and the priorities (the core's leaves and PRNG
        state on a core backend).
    args : Args
        The run's arguments.
    global_step : int
        Environment steps taken so far.
    gradient_steps : int
        Gradient steps taken so far.
    """
    checkpoints.save_checkpoint(
        path,
        "dqn",
        {
            **learner.state_dict(),
            "replay_buffer": rb.state_dict(),
            "args": json_safe({k: list(v) if isinstance(v, tuple) else v for k, v in vars(args).items()}),
            "global_step": int(global_step),
            "gradient_steps": int(gradient_steps),
        },
    )


def load_checkpoint(path: str) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`.

    Returns
    -------
    dict
        ``q_network``, ``target_network``, ``optimizer`` (numpy state), ``replay_buffer`` (buffer state dict),
        ``args`` (dict), ``global_step`` and ``gradient_steps``.

    Raises
    ------
    ValueError
        If the file is not a DQN checkpoint of the current format.
    """
    return checkpoints.load_checkpoint(path, "dqn")


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


"""the range of each numeric option (:mod:`.bounds`)"""


def train(args: Args, replay: PriorityBackend | None = None) -> dict[str, Any]:
    """Train Double DQN with prioritized replay and return summary metrics.

    Parameters
    ----------
    args : Args
        The hyperparameters; the "to be filled in runtime" fields are computed here (``args`` is not modified; the
        filled copy is saved in ``args.json`` and in checkpoints).
    replay : PriorityBackend, optional
        A priority store with the replay core driver's public methods (e.g. ``RLOverlay(...).replay`` or a
        :class:`~pynq_rl.host.agents.replay.priorities.NumpySumTree`); it overrides ``args.backend``. If None, the
        buffer builds the store ``args.backend`` names (an overlay's replay core on
        ``args.board``, or the sum tree for ``"host"``).

    Returns
    -------
    dict
        ``episode_returns`` and ``episode_lengths`` (lists, every episode finished in this call),
        ``mean_return_last20`` (NaN if no episode finished), ``best_mean_return20`` (the best mean over 20
        consecutive episodes, NaN if fewer finished), ``global_step``, ``start_step`` (non-zero on resume),
        ``gradient_steps``, ``sps``, ``wall_time_s``, ``run_name``, ``run_dir``, ``checkpoint`` (path or None),
        ``backend`` (``args.backend``, or the class name of an injected ``replay``), ``nn``, ``interrupted`` (and
        ``signal`` when true).

    Raises
    ------
    ValueError
        If an argument is out of range, the buffer does not fit the replay core, or ``args.resume`` is not a
        compatible checkpoint.
    TimeoutError, RuntimeError
        From the replay core's driver, if the core does not finish or reports an error (``board`` and ``rtl``).
    TrainingInterrupted
        On SIGINT or SIGTERM during training (:mod:`.interrupts`): the environment step under way is finished, the
        checkpoint and ``summary.json`` (``"interrupted": true``) are written, and the summary travels with the
        exception.

    Warns
    -----
    FieldWarning
        ``total_timesteps`` does not exceed ``learning_starts`` (:func:`~pynq_rl.host.agents.dqn.check_args`).
    """
    check_args(args)
    args = replace(args, nn=resolve_nn(args.nn))
    backend = args.backend if replay is None else type(replay).__name__
    args.num_iterations = args.total_timesteps // args.num_envs
    resume_state = load_resume(args.resume, "dqn") if args.resume else None
    start_step = int(resume_state["global_step"]) if resume_state else 0

    with contextlib.ExitStack() as stack:
        limit_torch_threads(stack, resolved_nn(args.nn), args.torch_threads)
        # TRY NOT TO MODIFY: seeding (a resumed run continues with fresh random streams, offset by its global step)
        seed = args.seed + start_step
        rng = seed_everything(seed, resolved_nn(args.nn), torch_deterministic=args.torch_deterministic)
        envs = _make_envs(args, seed, stack)
        learner = _make_learner(args, envs, rng)
        rb = _make_buffer(args, envs, replay, seed)
        gradient_steps = 0
        if resume_state is not None:
            gradient_steps = _restore(args, resume_state, learner, rb, backend)
        run = stack.enter_context(Run(args, _METRIC_KEYS, tensorboard=args.tensorboard))
        checkpoint_path = args.checkpoint_path or run.path("checkpoint.npz")

        # TRY NOT TO MODIFY: start the game
        global_step = start_step
        obs, _ = envs.reset(seed=seed)
        new_returns: list[float] = []
        new_lengths: list[int] = []
        timings = {"sample": 0.0, "update": 0.0, "priorities": 0.0}
        saved = None
        total = args.num_iterations * args.num_envs
        progress = stack.enter_context(progress_bar(total, start_step, args.progress, run.name))
        stop = stack.enter_context(StopOnSignal())  # Ctrl-C / SIGTERM: finish the step, save, summarize
        for iteration in range(start_step // args.num_envs + 1, args.num_iterations + 1):
            if stop.requested():
                break
            global_step += args.num_envs
            # ALGO LOGIC: put action logic here
            epsilon = linear_schedule(
                args.start_e, args.end_e, args.exploration_fraction * args.total_timesteps, global_step
            )
            actions = _act(args, learner, envs, obs, epsilon)

            # TRY NOT TO MODIFY: execute the game and log data.
            next_obs, rewards, terminations, truncations, infos = envs.step(actions)
            for _, ep_return, ep_length in finished_episodes(infos):
                run.episode(global_step, ep_return, ep_length)
                new_returns.append(ep_return)
                new_lengths.append(ep_length)

            # TRY NOT TO MODIFY: save data to replay buffer; handle `final_obs` (SAME_STEP autoreset)
            rb.add(obs, _real_next_obs(next_obs, terminations, truncations, infos), actions, rewards, terminations)

            # TRY NOT TO MODIFY: CRUCIAL step easy to overlook
            obs = next_obs

            # ALGO LOGIC: training.
            if global_step > args.learning_starts and iteration % args.train_freq == 0:
                step = _learn(args, learner, rb, global_step, timings)
                gradient_steps += 1
                if gradient_steps % args.log_every == 0:
                    sps = run.sps(global_step - start_step)
                    run.log(
                        _metrics(
                            args,
                            global_step,
                            gradient_steps,
                            learner,
                            rb,
                            step,
                            epsilon,
                            new_returns,
                            new_lengths,
                            timings,
                            sps,
                        )
                    )
                    timings = dict.fromkeys(timings, 0.0)
                    new_returns, new_lengths = [], []
                    last20 = run.mean_return(20)
                    progress.set_postfix(ret20="-" if math.isnan(last20) else f"{last20:.1f}", sps=sps, refresh=False)

            # update target network
            if (
                global_step > args.learning_starts
                and iteration % max(1, args.target_network_frequency // args.num_envs) == 0
            ):
                learner.update_target(args.tau)

            progress.update(args.num_envs)
            if args.save_checkpoint and checkpoint_due(global_step - args.num_envs, global_step, args.checkpoint_every):
                save_checkpoint(checkpoint_path, learner, rb, args, global_step, gradient_steps)
                saved = checkpoint_path
        stop.close()

        if args.save_checkpoint:
            save_checkpoint(checkpoint_path, learner, rb, args, global_step, gradient_steps)
            saved = checkpoint_path

        summary = run.finish(
            nn=args.nn,
            backend=backend,
            global_step=global_step,
            start_step=start_step,
            gradient_steps=gradient_steps,
            best_mean_return20=_best_mean(run.episode_returns, 20),
            sps=run.sps(global_step - start_step),
            checkpoint=saved,
            **stop.summary_fields(),
        )
    return finish(summary, stop)


# ---------------------------------------------------------------------------------------------------------------------
# The phases of train(), in the order the loop runs them
# ---------------------------------------------------------------------------------------------------------------------
def _make_envs(args: Args, seed: int, stack: contextlib.ExitStack) -> gym.vector.VectorEnv:
    """``num_envs`` environments (closed when ``stack`` unwinds; :func:`_make_learner`, next, refuses an action
    space that is not ``Discrete``)."""
    envs = make_envs([make_env(args.env_id) for _ in range(args.num_envs)], seed=seed)
    stack.callback(envs.close)
    return envs


def _make_learner(args: Args, envs: gym.vector.VectorEnv, rng: np.random.Generator) -> QLearner:
    """The online and target Q-networks with their optimizer, either network backend."""
    n_obs = int(np.prod(space_shape(envs.single_observation_space)))
    n_actions = discrete_actions(envs.single_action_space)  # ValueError for any other action space
    return make_q_learner(resolved_nn(args.nn), n_obs, n_actions, tuple(args.hidden_sizes), args.learning_rate, rng)


def _make_buffer(
    args: Args, envs: gym.vector.VectorEnv, replay: PriorityBackend | None, seed: int
) -> PrioritizedReplayBuffer:
    """The replay buffer: transitions on the host, priorities in the sum tree ``replay`` or ``args.backend`` names
    (the only branch on hardware: the replay core)."""
    obs_space = envs.single_observation_space
    with starting(core_start_text("replay", args.backend) if replay is None else None, args.progress):
        return PrioritizedReplayBuffer(
            args.buffer_size,
            space_shape(obs_space),
            obs_space.dtype,
            action_shape=space_shape(envs.single_action_space),
            action_dtype=np.int64,
            priorities=replay if replay is not None else args.backend,
            alpha=args.per_alpha,
            priority_eps=args.per_eps,
            seed=seed,
            board=args.board,
            timeout_s=args.timeout_s,
        )


def _restore(args: Args, state: dict[str, Any], learner: QLearner, rb: PrioritizedReplayBuffer, backend: str) -> int:
    """Load a checkpoint's networks and replay buffer (priorities included); the gradient steps it had taken."""
    try:
        learner.load_state_dict(state)
        rb.load_state_dict(state["replay_buffer"])
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(
            f"checkpoint {args.resume!r} does not fit this agent on {args.env_id} with backend {backend}: {exc}"
        ) from exc
    return int(state["gradient_steps"])


def _act(args: Args, learner: QLearner, envs: gym.vector.VectorEnv, obs: np.ndarray, epsilon: float) -> np.ndarray:
    """Epsilon-greedy actions for every sub-environment: greedy on the Q-values, each replaced by a random one with
    probability ``epsilon``."""
    actions = learner.q_values(np.asarray(obs, np.float32)).argmax(axis=1)
    explore = np.random.random(args.num_envs) < epsilon
    if explore.any():  # envs.action_space is the seeded one (make_envs), single_action_space is not
        actions = np.where(explore, envs.action_space.sample(), actions)
    return actions


def _real_next_obs(
    next_obs: np.ndarray, terminations: np.ndarray, truncations: np.ndarray, infos: dict[str, Any]
) -> np.ndarray:
    """The observations each transition really led to: where an episode ended, the final one (gymnasium's
    SAME_STEP autoreset puts it in ``infos["final_obs"]``; ``next_obs`` is already the next episode's first)."""
    real_next_obs = next_obs.copy()
    for idx in np.flatnonzero(np.logical_or(terminations, truncations)):
        real_next_obs[idx] = infos["final_obs"][idx]
    return real_next_obs


def _learn(
    args: Args, learner: QLearner, rb: PrioritizedReplayBuffer, global_step: int, timings: dict[str, float]
) -> dict[str, Any]:
    """One gradient step on a prioritized minibatch, its TD errors back into the sum tree; the step's losses with
    ``beta`` and the minibatch's mean importance weight. ``timings`` accumulates each phase's seconds."""
    frac = min(1.0, global_step / args.total_timesteps)
    beta = args.per_beta + frac * (1.0 - args.per_beta)
    if args.anneal_lr:
        learner.learning_rate = (1.0 - frac) * args.learning_rate

    t0 = time.perf_counter()
    data = rb.sample(args.batch_size, beta)
    t1 = time.perf_counter()
    step = learner.learn(
        data.observations,
        data.actions,
        data.next_observations,
        data.rewards,
        data.dones,
        data.weights,
        gamma=args.gamma,
        double_q=args.double_q,
        max_grad_norm=args.max_grad_norm,
    )
    t2 = time.perf_counter()
    rb.update_priorities(data.indices, step["td_errors"])
    t3 = time.perf_counter()
    timings["sample"] += t1 - t0
    timings["update"] += t2 - t1
    timings["priorities"] += t3 - t2
    return {**step, "beta": beta, "mean_weight": float(data.weights.mean())}


def _metrics(
    args: Args,
    global_step: int,
    gradient_steps: int,
    learner: QLearner,
    rb: PrioritizedReplayBuffer,
    step: dict[str, Any],
    epsilon: float,
    new_returns: list[float],
    new_lengths: list[int],
    timings: dict[str, float],
    sps: int,
) -> dict[str, Any]:
    """One ``metrics.csv`` row, CleanRL's keys (:data:`_METRIC_KEYS`): the episodes since the last row, the last
    gradient step's losses, the replay store's state and the mean time per gradient step of each phase."""
    return {
        "global_step": global_step,
        "gradient_steps": gradient_steps,
        "charts/learning_rate": learner.learning_rate,
        "charts/epsilon": epsilon,
        "charts/beta": step["beta"],
        "charts/episodic_return": float(np.mean(new_returns)) if new_returns else math.nan,
        "charts/episodic_length": float(np.mean(new_lengths)) if new_lengths else math.nan,
        "charts/episodes": len(new_returns),
        "charts/SPS": sps,
        "losses/td_loss": step["loss"],
        "losses/q_values": step["q_values"],
        "losses/abs_td_error": float(np.abs(step["td_errors"]).mean()),
        "replay/size": rb.size(),
        "replay/total": float(rb.priorities.total),
        "replay/nonzero": int(rb.priorities.nonzero),
        "replay/max_priority": rb.max_priority,
        "replay/mean_weight": step["mean_weight"],
        "time/sample[ms]": 1e3 * timings["sample"] / args.log_every,
        "time/update[ms]": 1e3 * timings["update"] / args.log_every,
        "time/priorities[ms]": 1e3 * timings["priorities"] / args.log_every,
    }


def _best_mean(returns: list[float], window: int) -> float:
    """The best mean over ``window`` consecutive episodes (NaN if fewer finished)."""
    means = [np.mean(returns[i - window : i]) for i in range(window, len(returns) + 1)]
    return float(max(means)) if means else math.nan
