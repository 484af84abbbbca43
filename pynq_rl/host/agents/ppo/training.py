r"""PPO in the CleanRL ``ppo.py`` / ``ppo_continuous_action.py`` style, with the GAE step offloadable to the GAE core.

Read top to bottom: checkpoints, then :func:`train`. What a run is asked to do (:class:`~.ppo.args.Args`,
:func:`~.ppo.args.args_for`, :func:`~.ppo.args.check_args`) is in :mod:`.ppo.args`; the rollout
(:func:`~.rollout.collect_rollout`, with the conventions of its arrays ``rewards[T, N]``, ``dones[T, N]``,
``values[T + 1, N]`` and gymnasium's SAME_STEP autoreset) in :mod:`.rollout`; the networks come from
:func:`~.nets.learners.make_actor_critic` (torch or numpy), the environments and the run directory from :mod:`.run`, the
host GAE loop from :mod:`.advantages`. :func:`train` follows
CleanRL's loop: anneal the learning rate, collect ``num_steps`` steps in ``num_envs`` environments, compute
advantages, ``update_epochs`` passes of clipped-surrogate minibatch updates, log.

GAE (Schulman et al., 2016), with :math:`d_t` = ``dones[t]`` (1 where an episode ended at step ``t``, terminated or
truncated; a truncation's ``gamma * V(final_obs)`` is folded into ``r_t``):

.. math::

    \delta_t = r_t + \gamma (1 - d_t) V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda (1 - d_t) A_{t+1}, \qquad A_T = 0, \qquad R_t = A_t + V_t

Special cases: ``lam = 1`` gives the bootstrapped discounted return minus V; ``lam = 0`` the one-step TD error.
``backend="emu"`` (the default), ``"rtl"``, ``"verilator"`` and ``"board"`` run the GAE core of an
:class:`~pynq_rl.host.overlay.RLOverlay` through its driver's ``compute()`` (float32 numpy in and out; ``quantize``
selects 8-bit codes, ``q8_encoding`` which: q8-runs by default, or raw mode); ``backend="host"`` runs
:func:`compute_gae` (CleanRL's backward loop, in numpy, no core).
With ``reward_norm="dynamic"`` the rewards entering GAE are standardized by HEPPO's running statistics
(:class:`~pynq_rl.host.agents.ppo.standardize.RewardStandardizer`, updated with every rollout's raw rewards *before*
standardizing it); the truncation bootstrap is folded in *after* standardization, because V is then learnt in
standardized units. Logged episodic returns are always the raw ones.

Defaults. Tuned so that CartPole-v1 is solved within 300k steps for seeds 0-4 with GAE on the host loop (mean return
of the last 20 episodes 500, and every 20-episode window after 100k steps at 500); on the emulated q8 core seeds 0-2
end at 500.0 too (README, "Learning curves"). They differ from CleanRL's (4 envs x 128 steps, lr 2.5e-4, 4 epochs,
entropy 0.01, clipped value loss: 409 at 300k steps for seed 0 here; with 8 envs and lr 1e-3 still 310-461 for seeds
0-1): 8 envs x 128 steps, lr 1e-3 annealed to 0, 10 epochs of 4 minibatches, no entropy bonus, unclipped value loss
(CartPole's returns approach 1 / (1 - gamma) = 100, and clipping V's change to +-0.2 per update slows the critic
badly). About 1 minute on one core.

Continuous actions. For a ``Box`` action space the actor is a diagonal Gaussian (CleanRL's
``ppo_continuous_action.py``): the network outputs the mean, a state-independent log-std parameter (initially 0)
gives the spread, log-probabilities and entropies are summed over the action dimensions; the rollout clips the
sampled action to the space's bounds only when it steps the environment. :func:`args_for` fills CleanRL's MuJoCo
defaults (:data:`CONTINUOUS_DEFAULTS`: 1 env x 2048 steps, 32 minibatches, 10 epochs, lr 3e-4 annealed, gamma 0.99,
lambda 0.95, no entropy bonus, clipped value loss) for such an environment. With ``norm_obs`` / ``norm_reward`` (by
default on for ``Box`` spaces; ``norm_reward`` off when ``reward_norm="dynamic"`` replaces it) the environments get
CleanRL's wrappers: gymnasium's ``NormalizeObservation`` + clip to ``+-clip_obs`` per sub-environment, and
``NormalizeReward(gamma)`` + clip to ``+-clip_reward`` (:func:`~.envs.normalized_observations`,
:func:`~.envs.normalized_rewards`); their running statistics are saved in checkpoints. Logged episodic returns stay
raw.

Networks. ``nn="torch"`` (the default where torch imports) uses CleanRL's torch :class:`~.torch_nets.Agent`;
``nn="numpy"`` the same 64-64 tanh actor and critic in numpy (:mod:`.numpy_nets`), which is what runs on a
PYNQ-Z2's ARM, where torch has no wheel. Both take the same steps of the same algorithm; their checkpoints are
interchangeable.

Outputs go to ``out_dir/run_name/`` (:class:`~.rundir.Run`): ``args.json``, ``metrics.csv`` and ``metrics.jsonl`` (one
row per update, CleanRL keys ``charts/...``, ``losses/...``), ``episodes.csv`` (one row per finished episode),
``summary.json`` and ``checkpoint.npz`` (arrays + JSON header, :func:`~.checkpoints.save_checkpoint`; also every
``checkpoint_every`` environment steps, at the end of the iteration that reaches each multiple).
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from ..common import checkpoints
from ..common.checks import FieldWarning, load_resume
from ..common.envs import (
    action_space_of,
    discrete_actions,
    load_normalizer_state,
    make_env,
    make_envs,
    normalized_observations,
    normalized_rewards,
    normalizer_state,
    space_shape,
)
from ..common.interrupts import StopOnSignal, finish
from ..common.run import (
    checkpoint_due,
    limit_torch_threads,
    progress_bar,
    resolve_nn,
    resolved_nn,
    seed_everything,
)
from ..common.rundir import Run, json_safe
from ..common.startup import core_start_text, starting
from ..nets.learners import ActorCritic, make_actor_critic
from .advantages import GaeCompute, compute_gae, offloaded_gae
from .args import BOUNDS, CONTINUOUS_DEFAULTS, REWARD_NORMS, Args, args_for, check_args
from .rollout import Rollout, collect_rollout
from .standardize import RewardStandardizer

__all__ = [
    "Args",
    "BOUNDS",
    "CONTINUOUS_DEFAULTS",
    "args_for",
    "GaeCompute",
    "Rollout",
    "REWARD_NORMS",
    "resolve_args",
    "check_args",
    "collect_rollout",
    "compute_gae",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def save_checkpoint(
    path: str,
    agent: ActorCritic,
    standardizer: RewardStandardizer | None,
    args: Args,
    global_step: int,
    env_stats: dict[str, Any] | None = None,
) -> None:
    """Save everything needed to resume training (:func:`~.checkpoints.save_checkpoint`: arrays + JSON, no pickle).

    Parameters
    ----------
    path : str or os.PathLike
        File to write (``.npz``); written to a temporary file first, then renamed.
    agent : ActorCritic
        The networks and their optimizer, either backend.
    standardizer : RewardStandardizer or None
        HEPPO reward statistics, or None when ``reward_norm`` is off.
    args : Args
        The run's arguments.
    global_step : int
        Environment steps taken so far.
    env_stats : dict, optional
        The normalization wrappers' running statistics (:func:`~.envs.normalizer_state`).
    """
    checkpoints.save_checkpoint(
        path,
        "ppo",
        {
            "env_stats": env_stats or {},
            **agent.state_dict(),
            "standardizer": None if standardizer is None else standardizer.state_dict(),
            "args": json_safe(vars(args)),
            "global_step": int(global_step),
        },
    )


def load_checkpoint(path: str) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`.

    Returns
    -------
    dict
        ``model`` and ``optimizer`` (numpy state), ``standardizer`` (state dict or None), ``args`` (dict),
        ``global_step`` (int) and ``env_stats`` (the normalization wrappers' statistics; absent in older files).

    Raises
    ------
    ValueError
        If the file is not a PPO checkpoint of the current format.
    """
    return checkpoints.load_checkpoint(path, "ppo")


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


def resolve_args(args: Args) -> Args:
    """The arguments :func:`train` runs with and saves in ``args.json``: ``args`` checked, ``nn`` resolved,
    observation and reward normalization decided by the action space where left None (on for a Box task, reward
    normalization only without ``reward_norm``), the batch sizes derived. A copy; ``args`` is not changed.

    Raises
    ------
    ValueError
        An invalid field (:func:`check_args`), or an action space PPO does not support (Discrete and
        one-dimensional Box are).
    """
    check_args(args)
    space = action_space_of(args.env_id)
    if not isinstance(space, (gym.spaces.Discrete, gym.spaces.Box)) or (
        isinstance(space, gym.spaces.Box) and len(space.shape) != 1
    ):
        raise ValueError(f"PPO supports Discrete and one-dimensional Box action spaces, not {space!r}")
    continuous = isinstance(space, gym.spaces.Box)
    args = replace(
        args,
        nn=resolve_nn(args.nn),
        norm_obs=continuous if args.norm_obs is None else bool(args.norm_obs),
        norm_reward=(continuous and args.reward_norm is None) if args.norm_reward is None else bool(args.norm_reward),
    )
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = args.total_timesteps // args.batch_size
    return args


def train(args: Args, gae: GaeCompute | None = None) -> dict[str, Any]:
    """Train PPO and return summary metrics.

    Parameters
    ----------
    args : Args
        The hyperparameters; the "to be filled in runtime" fields are computed here (``args`` is not modified; the
        filled copy is saved in ``args.json`` and in checkpoints, with ``nn``, ``norm_obs`` and ``norm_reward``
        resolved). Use :func:`args_for` to get CleanRL's continuous-control defaults for a ``Box`` environment.
    gae : GaeCompute, optional
        An object whose ``compute(rewards, values, dones, *, gamma, lam, quantize)`` does the GAE step. It overrides
        ``args.backend``. If None, ``backend="host"`` uses :func:`compute_gae` and any other backend the GAE core of
        ``load_core("gae", args.backend, args.board, args.timeout_s)``.

    Returns
    -------
    dict
        ``episode_returns`` and ``episode_lengths`` (lists, every episode finished in this call, raw rewards),
        ``mean_return_last20`` (NaN if no episode finished), ``global_step``, ``start_step`` (non-zero on resume),
        ``iterations``, ``sps``, ``wall_time_s``, ``run_name``, ``run_dir``, ``checkpoint`` (path or None),
        ``reward_stats`` (the standardizer's state or None), ``nn``, ``backend`` (``args.backend``, or the class name
        of an injected ``gae``), ``interrupted`` (and ``signal`` when true).

    Raises
    ------
    ValueError
        If an argument is out of range, the action space is neither ``Discrete`` nor a 1-D ``Box``, or
        ``args.resume`` is not a compatible checkpoint.
    RuntimeError
        If the GAE backend returns arrays of the wrong shape.
    TimeoutError
        From the GAE core's driver, if the core does not finish (``board`` and ``rtl`` backends).
    TrainingInterrupted
        On SIGINT or SIGTERM during training (:mod:`.interrupts`): the iteration under way is finished, the checkpoint
        and ``summary.json`` (``"interrupted": true``) are written, and the summary travels with the exception.

    Warns
    -----
    FieldWarning
        A ``RuntimeWarning``: with ``reward_norm="dynamic"``, once, if every reward seen so far is the same constant
        (CartPole's +1): the standardized rewards are then all 0 and the agent cannot learn.
    """
    args = resolve_args(args)
    resume_state = load_resume(args.resume, "ppo") if args.resume else None
    start_step = int(resume_state["global_step"]) if resume_state else 0
    gae, backend = _gae_step(args, gae)

    with contextlib.ExitStack() as stack:
        limit_torch_threads(stack, resolved_nn(args.nn), args.torch_threads)
        # TRY NOT TO MODIFY: seeding (a resumed run continues with fresh random streams, offset by its global step)
        seed = args.seed + start_step
        rng = seed_everything(seed, resolved_nn(args.nn), torch_deterministic=args.torch_deterministic)
        envs = _make_envs(args, seed, stack)
        agent = _make_agent(args, envs, rng)
        standardizer = RewardStandardizer() if args.reward_norm == "dynamic" else None
        if resume_state is not None:
            _restore(args, resume_state, agent, envs, standardizer)
        run = stack.enter_context(Run(args, _METRIC_KEYS, tensorboard=args.tensorboard))
        checkpoint_path = args.checkpoint_path or run.path("checkpoint.npz")

        # TRY NOT TO MODIFY: start the game
        global_step = start_step
        next_obs, _ = envs.reset(seed=seed)
        iterations, saved, warned_constant = 0, None, False
        total = args.num_iterations * args.batch_size
        progress = stack.enter_context(progress_bar(total, start_step, args.progress, run.name))
        stop = stack.enter_context(StopOnSignal())  # Ctrl-C / SIGTERM: finish the iteration, save, summarize
        for iteration in range(start_step // args.batch_size + 1, args.num_iterations + 1):
            if stop.requested():
                break
            if args.anneal_lr:  # Annealing the rate if instructed to do so.
                agent.learning_rate = (1.0 - (iteration - 1.0) / args.num_iterations) * args.learning_rate

            t0 = time.perf_counter()
            previous_step = global_step
            rollout, next_obs, global_step = collect_rollout(
                envs, agent, next_obs, args.num_steps, args.gamma, global_step
            )
            for step, ep_return, ep_length in rollout.episodes:
                run.episode(step, ep_return, ep_length)
            t1 = time.perf_counter()
            gae_rewards, warned_constant = _gae_rewards(rollout, standardizer, warned_constant)
            advantages, returns = _advantages(args, gae, rollout, gae_rewards)
            t2 = time.perf_counter()
            losses = _update(args, agent, rollout, advantages, returns)
            t3 = time.perf_counter()

            # TRY NOT TO MODIFY: record rewards for plotting purposes
            iterations += 1
            sps = run.sps(global_step - start_step)
            run.log(_metrics(global_step, iteration, agent, rollout, standardizer, losses, sps, (t0, t1, t2, t3)))
            last20 = run.mean_return(20)  # set before the update redraws the bar: it shows this rollout's ret20
            progress.set_postfix(ret20="-" if math.isnan(last20) else f"{last20:.1f}", sps=sps, refresh=False)
            progress.update(args.batch_size)

            if args.save_checkpoint and checkpoint_due(previous_step, global_step, args.checkpoint_every):
                save_checkpoint(checkpoint_path, agent, standardizer, args, global_step, normalizer_state(envs))
                saved = checkpoint_path
        stop.close()

        if args.save_checkpoint:
            save_checkpoint(checkpoint_path, agent, standardizer, args, global_step, normalizer_state(envs))
            saved = checkpoint_path

        summary = run.finish(
            nn=args.nn,
            backend=backend,
            global_step=global_step,
            start_step=start_step,
            iterations=iterations,
            sps=run.sps(global_step - start_step),
            checkpoint=saved,
            reward_stats=standardizer.state_dict() if standardizer else None,
            **stop.summary_fields(),
        )
    return finish(summary, stop)


# ---------------------------------------------------------------------------------------------------------------------
# The phases of train(), in the order the loop runs them
# ---------------------------------------------------------------------------------------------------------------------
def _gae_step(args: Args, gae: GaeCompute | None) -> tuple[GaeCompute | None, str]:
    """The GAE step and its name in the summary: the injected one, the host loop (None), or the overlay's GAE core
    (the only branch on hardware)."""
    backend = args.backend if gae is None else type(gae).__name__
    if gae is None and args.backend != "host":
        from ...overlay import load_core  # imported lazily: pynq is needed only for offload

        with starting(core_start_text("GAE", args.backend), args.progress):
            gae = load_core("gae", args.backend, args.board, args.timeout_s)
    return gae, backend


def _make_envs(args: Args, seed: int, stack: contextlib.ExitStack) -> gym.vector.VectorEnv:
    """``num_envs`` environments, with CleanRL's normalization wrappers for continuous control where asked; closed
    when ``stack`` unwinds."""
    env_fns = [make_env(args.env_id) for _ in range(args.num_envs)]
    if args.norm_obs:
        env_fns = [normalized_observations(fn, args.clip_obs) for fn in env_fns]
    envs = make_envs(env_fns, seed=seed)
    stack.callback(envs.close)
    if args.norm_reward:
        envs = normalized_rewards(envs, args.gamma, args.clip_reward)
    return envs


def _make_agent(args: Args, envs: gym.vector.VectorEnv, rng: np.random.Generator) -> ActorCritic:
    """The actor-critic for the environments' spaces: categorical for ``Discrete``, diagonal Gaussian for ``Box``."""
    space = envs.single_action_space
    continuous = isinstance(space, gym.spaces.Box)
    n_actions = int(np.prod(space_shape(space))) if continuous else discrete_actions(space)
    n_obs = int(np.prod(space_shape(envs.single_observation_space)))
    return make_actor_critic(resolved_nn(args.nn), n_obs, n_actions, args.learning_rate, rng, continuous=continuous)


def _restore(
    args: Args,
    state: dict[str, Any],
    agent: ActorCritic,
    envs: gym.vector.VectorEnv,
    standardizer: RewardStandardizer | None,
) -> None:
    """Load a checkpoint's networks, normalization statistics and reward statistics, each with an error that says
    which part does not fit."""
    try:
        agent.load_state_dict(state)
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(f"checkpoint {args.resume!r} does not fit this agent on {args.env_id}: {exc}") from exc
    try:
        load_normalizer_state(envs, state.get("env_stats") or {})
    except (ValueError, KeyError) as exc:
        raise ValueError(f"checkpoint {args.resume!r} does not fit this run's normalization: {exc}") from exc
    if standardizer is not None and state["standardizer"] is not None:
        standardizer.load_state_dict(state["standardizer"])
    elif standardizer is not None:
        warnings.warn(f"checkpoint {args.resume!r} has no reward statistics; they start at zero", stacklevel=3)


def _gae_rewards(
    rollout: Rollout, standardizer: RewardStandardizer | None, warned_constant: bool
) -> tuple[np.ndarray, bool]:
    """The rewards that enter GAE, and whether the constant-reward warning has been given.

    HEPPO's standardization first (its statistics include this rollout), then the truncation bootstrap
    ``gamma * V(final_obs)``, which is already in the units V is learnt in.
    """
    gae_rewards = rollout.rewards
    if standardizer is not None:
        standardizer.update(rollout.rewards)
        gae_rewards = standardizer.standardize(rollout.rewards).astype(np.float32)
        if standardizer.std == 0.0 and not warned_constant:
            warnings.warn(
                FieldWarning(
                    f"reward_norm 'dynamic': every reward seen so far equals {standardizer.mean:g}, so the "
                    "standardized rewards are all 0 and carry no learning signal",
                    "reward_norm",
                ),
                stacklevel=3,
            )
            warned_constant = True
    return gae_rewards + rollout.truncation_bootstraps, warned_constant


def _advantages(
    args: Args, gae: GaeCompute | None, rollout: Rollout, gae_rewards: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns ``[T, N]``: CleanRL's backward loop on the host (``gae`` None), or the GAE core."""
    if gae is None:
        return compute_gae(gae_rewards, rollout.values, rollout.dones, args.gamma, args.gae_lambda)
    return offloaded_gae(
        gae,
        gae_rewards,
        rollout.values,
        rollout.dones,
        gamma=args.gamma,
        lam=args.gae_lambda,
        quantize=args.q8_encoding if args.quantize else False,
    )


def _update(
    args: Args, agent: ActorCritic, rollout: Rollout, advantages: np.ndarray, returns: np.ndarray
) -> dict[str, float]:
    """``update_epochs`` passes of clipped-surrogate minibatch updates over the flattened batch (early stop at
    ``target_kl``); the last minibatch's losses, the mean clip fraction and the value function's explained variance.
    """
    obs_shape = rollout.observations.shape[2:]
    act_shape = rollout.actions.shape[2:]
    b_obs = rollout.observations.reshape((-1,) + obs_shape)
    b_logprobs = rollout.log_probs.reshape(-1)
    b_actions = rollout.actions.reshape((-1,) + act_shape)
    b_advantages = advantages.reshape(-1)
    b_returns = returns.reshape(-1)
    b_values = rollout.values[:-1].reshape(-1)

    b_inds = np.arange(args.batch_size)
    clipfracs = []
    for _epoch in range(args.update_epochs):
        np.random.shuffle(b_inds)
        for start in range(0, args.batch_size, args.minibatch_size):
            mb_inds = b_inds[start : start + args.minibatch_size]
            losses = agent.learn(
                b_obs[mb_inds],
                b_actions[mb_inds],
                b_logprobs[mb_inds],
                b_advantages[mb_inds],
                b_returns[mb_inds],
                b_values[mb_inds],
                clip_coef=args.clip_coef,
                ent_coef=args.ent_coef,
                vf_coef=args.vf_coef,
                clip_vloss=args.clip_vloss,
                norm_adv=args.norm_adv,
                max_grad_norm=args.max_grad_norm,
            )
            clipfracs.append(losses["clipfrac"])
        if args.target_kl is not None and losses["approx_kl"] > args.target_kl:
            break

    var_y = np.var(b_returns)
    explained_var = np.nan if var_y == 0 else 1 - np.var(b_returns - b_values) / var_y
    return {**losses, "clipfrac": float(np.mean(clipfracs)), "explained_variance": float(explained_var)}


def _metrics(
    global_step: int,
    iteration: int,
    agent: ActorCritic,
    rollout: Rollout,
    standardizer: RewardStandardizer | None,
    losses: dict[str, float],
    sps: int,
    times: tuple[float, float, float, float],
) -> dict[str, Any]:
    """One ``metrics.csv`` row, CleanRL's keys (:data:`_METRIC_KEYS`); ``times`` are the phase boundaries."""
    t0, t1, t2, t3 = times
    ep_r = [r for _, r, _ in rollout.episodes]
    ep_l = [n for _, _, n in rollout.episodes]
    return {
        "global_step": global_step,
        "iteration": iteration,
        "charts/learning_rate": agent.learning_rate,
        "charts/episodic_return": float(np.mean(ep_r)) if ep_r else math.nan,
        "charts/episodic_length": float(np.mean(ep_l)) if ep_l else math.nan,
        "charts/episodes": len(ep_r),
        "charts/SPS": sps,
        "charts/reward_mean": standardizer.mean if standardizer else math.nan,
        "charts/reward_std": standardizer.std if standardizer else math.nan,
        "losses/value_loss": losses["v_loss"],
        "losses/policy_loss": losses["pg_loss"],
        "losses/entropy": losses["entropy"],
        "losses/old_approx_kl": losses["old_approx_kl"],
        "losses/approx_kl": losses["approx_kl"],
        "losses/clipfrac": losses["clipfrac"],
        "losses/explained_variance": losses["explained_variance"],
        "time/rollout[ms]": 1e3 * (t1 - t0),
        "time/gae[ms]": 1e3 * (t2 - t1),
        "time/update[ms]": 1e3 * (t3 - t2),
    }
