"""Evaluate a trained agent: load a run's checkpoint, play seeded episodes with its policy, report the returns.

This is ``pynq-rl eval`` (Stable-Baselines3's ``evaluate_policy``, rl-zoo's ``enjoy``, CleanRL's ``--capture-video``
in one call): :func:`evaluate` takes a run directory (``args.json`` + ``checkpoint.npz``, :class:`~.rundir.Run`) or a
``checkpoint.npz``, rebuilds the agent's policy from the checkpoint exactly as training built it, plays
``episodes`` episodes reset with seeds ``seed, seed + 1, ...`` and returns the returns, their statistics and where
the checkpoint and the videos are, as a JSON-ready dict. Two calls with the same arguments give the same returns.

How each agent's policy is rebuilt (:func:`load_policy`), from the checkpoint's own copy of the run's ``Args``:

PPO
    The actor-critic on the network backend the run saved (``nn``: torch or numpy), with the checkpoint's weights.
    ``deterministic``: the argmax of the actor's logits (``Discrete``), or the Gaussian's mean clipped to the action
    space (``Box``); otherwise an action sampled as in the rollout. With ``norm_obs`` the observations go through the
    wrappers training used (``NormalizeObservation`` then a clip to ``+-clip_obs``), frozen at the checkpoint's
    running statistics; a run with several environments kept one set per environment, and evaluation uses their
    pooled statistics (the mean and variance of every observation the sub-environments saw; with one environment,
    CleanRL's continuous-control default, exactly that environment's). No rewards are normalized: the returns are
    the environment's. PPO offloads only GAE, which evaluation never computes, so ``backend`` is only recorded.
DQN
    The online Q-network on the saved network backend. ``deterministic``: the greedy action (epsilon 0); otherwise
    epsilon-greedy with the run's final epsilon (the exploration schedule at the checkpoint's step). Evaluation needs
    no replay buffer, so ``backend`` (where the priorities lived) is only recorded.
Sarsa
    The learner on ``backend`` (the run's by default): the ParSa core's driver loaded with the checkpoint's policy
    banks, or ``FloatSarsa`` with its float64 weights for ``host``; a core policy and a host one are not
    interchangeable. The core learns online, so evaluation loads the policy with learning switched off (the core's
    ONLINE option, ``FloatSarsa.online``) and never sends a reward: the action is the core's own choice, in its own
    fixed point, from exactly the weights it learnt, and the weights stay as they are. Setting alpha to 0 instead
    would still run the core's update pass, and recomputing the greedy action from the dumped weights in float would
    not be the core's arithmetic. ``deterministic``: epsilon 0 (the greedy action, ties to the lowest index as in
    training); otherwise the run's final epsilon, decaying after every action as in training.

The agents' own random draws (PPO's sampled actions, DQN's and Sarsa's exploration) are seeded with ``seed`` too, so
a stochastic evaluation repeats as well. Nothing is written back: the checkpoint and the run directory are only read.

Videos (``video_dir``): every episode is recorded by gymnasium's ``RecordVideo`` from the environment made with
``render_mode="rgb_array"``. Before any episode runs, :func:`check_video_recording` raises :class:`VideoUnavailable`
if moviepy (which ``RecordVideo`` writes with: ``pip install moviepy``, or gymnasium's ``gymnasium[other]`` extra) is
missing or the environment cannot render frames (classic control needs pygame, ``gymnasium[classic-control]``).
"""

from __future__ import annotations

import errno
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from .common.bounds import COUNT_MAX, check_bounds, count
from .common.checkpoints import checkpoint_agent, load_checkpoint, run_checkpoint
from .common.checks import FieldValueError, check_backend, check_env_id
from .common.envs import discrete_actions, normalized_observations, space_shape
from .common.run import linear_schedule, seed_everything
from .common.startup import core_start_text, starting
from .common.summary_line import AGENT_NAMES
from .nets.learners import make_actor_critic, make_q_learner
from .sarsa.learners import make_learner

__all__ = [
    "AGENTS",
    "BOUNDS",
    "VideoUnavailable",
    "SavedCheckpoint",
    "TrainedPolicy",
    "check_evaluation",
    "find_checkpoint",
    "read_checkpoint",
    "load_policy",
    "check_video_recording",
    "run_episodes",
    "evaluate",
    "evaluation_line",
]

AGENTS = ("ppo", "dqn", "sarsa")
"""the agents whose checkpoints :func:`evaluate` plays"""
BOUNDS = {"episodes": count(1, COUNT_MAX), "seed": count(0, 2**32 - 1)}
"""the range of :func:`evaluate`'s numeric arguments (:mod:`.bounds`)"""
VIDEO_PREFIX = "eval"
"""the videos' file names: ``eval-episode-0.mp4``, ``eval-episode-1.mp4``, ..."""


class VideoUnavailable(RuntimeError):
    """Videos cannot be recorded here: moviepy is missing, or the environment cannot render ``rgb_array`` frames."""


@dataclass(frozen=True)
class _Request:
    """:func:`evaluate`'s numeric arguments, as :func:`~.bounds.check_bounds` checks them."""

    episodes: int
    seed: int


def check_evaluation(episodes: int, seed: int, backend: str | None = None) -> None:
    """Refuse an evaluation's arguments before any file is read or any environment made.

    Raises
    ------
    FieldValueError
        ``episodes`` is not an integer >= 1, ``seed`` not one in [0, 2**32), or ``backend`` not one of
        :data:`~.run.BACKENDS` (naming the argument, which the command line rewords as its flag).
    """
    check_bounds(_Request(episodes, seed), BOUNDS)
    if backend is not None:
        check_backend(backend)


# ---------------------------------------------------------------------------------------------------------------------
# The checkpoint
# ---------------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SavedCheckpoint:
    """One checkpoint as :func:`read_checkpoint` read it."""

    path: str
    """where it was read from"""
    agent: str
    """the agent that saved it, one of :data:`AGENTS`"""
    state: dict[str, Any]
    """everything it holds (:func:`~.checkpoints.load_checkpoint`)"""

    @property
    def args(self) -> dict[str, Any]:
        """The run's filled-in ``Args``, as a dict."""
        return self.state["args"]


def find_checkpoint(source: str | os.PathLike) -> str:
    """The checkpoint ``source`` names: ``source`` itself if it is a file, else the run directory's
    ``checkpoint.npz`` (or the ``checkpoint_path`` its ``args.json`` saved to).

    Raises
    ------
    FileNotFoundError
        Nothing exists at ``source``.
    ValueError
        ``source`` is a directory without ``args.json`` (not a run), or a run that saved no checkpoint.
    """
    path = os.fspath(source)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if not os.path.isdir(path):
        return path
    if not os.path.isfile(os.path.join(path, "args.json")):
        raise ValueError(f"{path!r} is not a run directory (it has no args.json) nor a checkpoint")
    checkpoint = run_checkpoint(path)
    if checkpoint is not None:
        return checkpoint
    raise ValueError(f"run directory {path!r} has no checkpoint.npz (was it trained with --no-save-checkpoint?)")


def read_checkpoint(path: str) -> SavedCheckpoint:
    """Read the checkpoint at ``path``, whichever of :data:`AGENTS` saved it.

    Raises
    ------
    ValueError
        The file is not a pynq-rl checkpoint of the current format, or one of an agent evaluation does not play
        (Ape-X's replay server).
    """
    agent = checkpoint_agent(path)
    if agent not in AGENTS:
        raise ValueError(f"{path!r} is a checkpoint of {agent!r}; evaluation plays those of {', '.join(AGENTS)}")
    return SavedCheckpoint(path, agent, load_checkpoint(path, agent))


# ---------------------------------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------------------------------
@dataclass
class TrainedPolicy:
    """A checkpoint's policy, rebuilt as its run trained it (see the module docstring for each agent)."""

    agent: str
    """``"ppo"``, ``"dqn"`` or ``"sarsa"``"""
    env_id: str
    """the environment the run trained on"""
    backend: str
    """the backend evaluation runs on (for PPO and DQN only recorded)"""
    checkpoint: str
    """the checkpoint's path"""
    learner: Any
    """the rebuilt learner: an ``ActorCritic``, a ``QLearner`` or a ``SarsaLearner`` (learning off)"""
    act: Callable[[np.ndarray], Any]
    """one observation (as :meth:`TrainedPolicy.wrap`'s environment returns it) -> the action to step it with"""
    observation_wrapper: Callable[[gym.Env], gym.Env] | None = None
    """what training put between the environment and the policy (PPO's frozen observation normalization), if
    anything"""

    def wrap(self, env: gym.Env) -> gym.Env:
        """``env`` as the policy observes it."""
        return env if self.observation_wrapper is None else self.observation_wrapper(env)


def _spaces(env_id: str) -> tuple[gym.Space, gym.Space]:
    """``(observation_space, action_space)`` of ``env_id`` (made once and closed)."""
    check_env_id(env_id)
    env = gym.make(env_id)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _pooled_statistics(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, float]:
    """``(mean, var, count)`` of all the observations behind several running statistics (parallel variance)."""
    counts = np.array([float(row["count"]) for row in rows])
    means = np.stack([np.asarray(row["mean"], np.float64) for row in rows])
    variances = np.stack([np.asarray(row["var"], np.float64) for row in rows])
    total = counts.sum()
    mean = (counts[:, None] * means).sum(axis=0) / total
    var = (counts[:, None] * (variances + (means - mean) ** 2)).sum(axis=0) / total
    return mean, var, float(total)


def _frozen_observation_normalization(env_stats: dict[str, Any], clip_obs: float) -> Callable[[gym.Env], gym.Env]:
    """Training's observation wrappers (:func:`~.envs.normalized_observations`) at the checkpoint's statistics, no
    longer updated."""
    rows = list(env_stats.get("obs_rms") or [])
    if not rows:
        raise ValueError("the run normalized its observations but the checkpoint holds no observation statistics")
    mean, var, total = _pooled_statistics(rows)

    def wrap(env: gym.Env) -> gym.Env:
        wrapped = normalized_observations(lambda: env, clip_obs)()
        normalizer = wrapped.env if isinstance(wrapped, gym.Wrapper) else None  # TransformObservation(clip) around it
        if not isinstance(normalizer, gym.wrappers.NormalizeObservation):
            raise RuntimeError(f"normalized_observations() does not wrap NormalizeObservation directly: {wrapped}")
        if normalizer.obs_rms.mean.shape != mean.shape:
            raise ValueError(
                f"the checkpoint's observation statistics have shape {mean.shape}, the environment's "
                f"observations {normalizer.obs_rms.mean.shape}"
            )
        normalizer.obs_rms.mean, normalizer.obs_rms.var, normalizer.obs_rms.count = mean, var, total
        normalizer.update_running_mean = False
        return wrapped

    return wrap


def _actor_output(learner: Any, nn: str) -> Callable[[np.ndarray], np.ndarray]:
    """The actor network's output for a batch of observations (logits, or the Gaussian's mean) on network backend
    ``nn``: the deterministic policy reads it, and the learners expose only sampled actions."""
    if nn == "torch":
        import torch

        def forward(obs: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return learner.agent.actor(torch.as_tensor(obs, dtype=torch.float32)).numpy()

        return forward
    return learner.actor


def _ppo_policy(saved: SavedCheckpoint, backend: str | None, deterministic: bool, seed: int) -> TrainedPolicy:
    args = saved.args
    observation_space, action_space = _spaces(args["env_id"])
    box = action_space if isinstance(action_space, gym.spaces.Box) else None
    continuous = box is not None
    n_actions = int(np.prod(space_shape(action_space))) if continuous else discrete_actions(action_space)
    rng = seed_everything(seed, args["nn"], torch_deterministic=args["torch_deterministic"])
    learner = make_actor_critic(
        args["nn"], int(np.prod(space_shape(observation_space))), n_actions, args["learning_rate"], rng, continuous
    )
    try:
        learner.load_state_dict(saved.state)
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(f"checkpoint {saved.path!r} does not fit PPO on {args['env_id']}: {exc}") from exc
    actor = _actor_output(learner, args["nn"])

    def act(obs: np.ndarray) -> Any:
        batch = np.asarray(obs, np.float32)[None]
        if deterministic:
            output = actor(batch)[0]
            return np.clip(output, box.low, box.high) if box is not None else int(np.argmax(output))
        action = learner.act(batch)[0][0]
        return np.clip(action, box.low, box.high) if box is not None else int(action)

    wrapper = (
        _frozen_observation_normalization(saved.state.get("env_stats") or {}, args["clip_obs"])
        if args["norm_obs"]
        else None
    )
    return TrainedPolicy("ppo", args["env_id"], backend or args["backend"], saved.path, learner, act, wrapper)


def _dqn_policy(saved: SavedCheckpoint, backend: str | None, deterministic: bool, seed: int) -> TrainedPolicy:
    args = saved.args
    observation_space, action_space = _spaces(args["env_id"])
    n_actions = discrete_actions(action_space)
    rng = seed_everything(seed, args["nn"], torch_deterministic=args["torch_deterministic"])
    learner = make_q_learner(
        args["nn"],
        int(np.prod(space_shape(observation_space))),
        n_actions,
        tuple(args["hidden_sizes"]),
        args["learning_rate"],
        rng,
    )
    try:
        learner.load_state_dict(saved.state)
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(f"checkpoint {saved.path!r} does not fit DQN on {args['env_id']}: {exc}") from exc
    epsilon = 0.0 if deterministic else _final_epsilon(args, int(saved.state["global_step"]))

    def act(obs: np.ndarray) -> int:
        if epsilon > 0 and rng.random() < epsilon:
            return int(rng.integers(n_actions))
        return int(learner.q_values(np.asarray(obs, np.float32)[None]).argmax(axis=1)[0])

    return TrainedPolicy("dqn", args["env_id"], backend or args["backend"], saved.path, learner, act)


def _final_epsilon(args: dict[str, Any], global_step: int) -> float:
    """DQN's exploration probability at ``global_step`` of the run with ``args`` (its linear schedule)."""
    duration = args["exploration_fraction"] * args["total_timesteps"]
    return linear_schedule(args["start_e"], args["end_e"], duration, global_step)


def _sarsa_policy(
    saved: SavedCheckpoint, backend: str | None, deterministic: bool, seed: int, progress: bool
) -> TrainedPolicy:
    args = saved.args
    trained_on = "host" if saved.state["backend"] in ("host", "float") else saved.state["backend"]
    backend = backend or trained_on
    if (backend == "host") != (trained_on == "host"):
        raise FieldValueError(
            f"checkpoint {saved.path!r} is from backend {trained_on!r}, not {backend!r}: a host (float64) and a core "
            "policy are not interchangeable",
            "backend",
        )
    state = dict(saved.state["learner"], online=False)  # learning off: the weights stay the ones it learnt
    if deterministic:
        state["epsilon"] = 0.0
    if backend == "host":
        state["rng"] = np.random.default_rng(seed).bit_generator.state
    else:
        state["seed"] = seed
    with starting(core_start_text("ParSa", backend), progress):
        learner = make_learner(
            backend,
            state["tiling"],
            int(state["n_actions"]),
            state["bounds"],
            state["alpha"],
            state["gamma"],
            state["epsilon"],
            state["epsilon_decay"],
            int(args["frac_bits"]),
            seed,
            args.get("board"),
            None,
            args.get("timeout_s"),
        )
    learner.load_state_dict(state)
    key = int(args["key"])

    def act(obs: np.ndarray) -> int:
        return int(learner.act(obs, None, key))  # no reward: nothing to learn from, even with ONLINE set

    return TrainedPolicy("sarsa", args["env_id"], backend, saved.path, learner, act)


def load_policy(
    source: str | os.PathLike,
    backend: str | None = None,
    deterministic: bool = True,
    seed: int = 0,
    *,
    progress: bool = False,
) -> TrainedPolicy:
    """The policy of the checkpoint ``source`` names (a run directory or a ``checkpoint.npz``), rebuilt as its run
    trained it (the module docstring says how, per agent).

    Parameters
    ----------
    source : str or os.PathLike
        A run directory or a checkpoint (:func:`find_checkpoint`).
    backend : str, optional
        Where the agent's kernel runs (None: the run's); only Sarsa's policy runs on it.
    deterministic : bool
        The greedy action / the Gaussian's mean, else the agent's sampling or exploration.
    seed : int
        Seed of the agent's own random draws.
    progress : bool
        Show a status line while a slow core (``rtl``, ``verilator``) starts.

    Raises
    ------
    FileNotFoundError, ValueError
        From :func:`find_checkpoint` and :func:`read_checkpoint`, or a checkpoint that does not fit its environment.
    FieldValueError
        A Sarsa checkpoint asked to run on a backend its policy does not fit (host against a core).
    """
    return _policy_of(read_checkpoint(find_checkpoint(source)), backend, deterministic, seed, progress)


def _policy_of(
    saved: SavedCheckpoint, backend: str | None, deterministic: bool, seed: int, progress: bool
) -> TrainedPolicy:
    """:func:`load_policy` for a checkpoint already read."""
    if saved.agent == "sarsa":
        return _sarsa_policy(saved, backend, deterministic, seed, progress)
    build = _ppo_policy if saved.agent == "ppo" else _dqn_policy
    return build(saved, backend, deterministic, seed)


# ---------------------------------------------------------------------------------------------------------------------
# Episodes, videos, the result
# ---------------------------------------------------------------------------------------------------------------------
def check_video_recording(env_id: str) -> None:
    """Raise :class:`VideoUnavailable` unless videos of ``env_id`` can be recorded here: moviepy imports (gymnasium's
    ``RecordVideo`` writes with it) and the environment renders ``rgb_array`` frames (one frame is rendered)."""
    if importlib.util.find_spec("moviepy") is None:
        raise VideoUnavailable(
            "recording videos needs moviepy, which gymnasium's RecordVideo writes them with: "
            'pip install "pynq-rl[video]" (or pip install moviepy)'
        )
    check_env_id(env_id)
    env = gym.make(env_id)
    render_modes = env.metadata.get("render_modes", ())
    env.close()
    if "rgb_array" not in render_modes:
        raise VideoUnavailable(f"{env_id} cannot render rgb_array frames, so it cannot be recorded")
    env = gym.make(env_id, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        try:
            frame = env.render()
        except gym.error.DependencyNotInstalled as exc:
            raise VideoUnavailable(f"recording videos of {env_id} needs its renderer: {exc}") from exc
        if not isinstance(frame, np.ndarray):
            raise VideoUnavailable(f"{env_id} rendered {type(frame).__name__}, not an rgb_array frame")
    finally:
        env.close()


def _make_env(env_id: str, video_dir: str | None) -> gym.Env:
    """The evaluation environment; with ``video_dir``, every episode recorded there."""
    if video_dir is None:
        return gym.make(env_id)
    env = gym.make(env_id, render_mode="rgb_array")
    return gym.wrappers.RecordVideo(env, video_dir, episode_trigger=lambda _: True, name_prefix=VIDEO_PREFIX)


def run_episodes(
    env: gym.Env, act: Callable[[np.ndarray], Any], episodes: int, seed: int
) -> tuple[list[float], list[int]]:
    """Play ``episodes`` episodes of ``act`` in ``env``, episode ``i`` reset with seed ``seed + i``, to its
    termination or truncation; ``(returns, lengths)``."""
    returns, lengths = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        episode_return, length, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            episode_return += float(reward)
            length += 1
            done = terminated or truncated
        returns.append(episode_return)
        lengths.append(length)
    return returns, lengths


def evaluate(
    source: str | os.PathLike,
    episodes: int = 10,
    seed: int = 0,
    backend: str | None = None,
    deterministic: bool = True,
    video_dir: str | os.PathLike | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Play a trained agent's policy for ``episodes`` seeded episodes and report its returns.

    Parameters
    ----------
    source : str or os.PathLike
        A run directory (``args.json`` and ``checkpoint.npz``) or a checkpoint of PPO, DQN or Sarsa.
    episodes : int
        Episodes to play (>= 1).
    seed : int
        Episode ``i`` is reset with seed ``seed + i``; the agent's own random draws are seeded with it too.
    backend : str, optional
        Where the agent's kernel runs (None: the run's). Only Sarsa's policy runs on it; PPO (GAE) and DQN (replay)
        evaluate without their offloaded kernel, and the backend is only recorded.
    deterministic : bool
        PPO: the argmax or the Gaussian's mean; DQN and Sarsa: the greedy action. False: PPO samples, DQN and Sarsa
        explore with the run's final epsilon.
    video_dir : str or os.PathLike, optional
        Record every episode there (gymnasium's ``RecordVideo``, ``eval-episode-<i>.mp4``).
    progress : bool
        Show a status line while a slow core (``rtl``, ``verilator``) starts.

    Returns
    -------
    dict
        JSON-ready: ``agent``, ``env_id``, ``episodes``, ``seed``, ``deterministic``, ``backend``, ``mean_return``,
        ``std_return`` (over episodes, ddof 0), ``min_return``, ``max_return``, ``mean_length``, ``returns``,
        ``lengths``, ``checkpoint`` (its path) and ``video_dir`` (None without videos).

    Raises
    ------
    FieldValueError
        ``episodes``, ``seed`` or ``backend`` out of range (:func:`check_evaluation`), before anything is read.
    FileNotFoundError, ValueError
        ``source`` does not exist, is not a run directory or a checkpoint of PPO, DQN or Sarsa, or does not fit its
        environment (:func:`load_policy`).
    VideoUnavailable
        With ``video_dir``, before any episode: moviepy is missing or the environment renders no frames.
    """
    check_evaluation(episodes, seed, backend)
    saved = read_checkpoint(find_checkpoint(source))
    env_id = saved.args["env_id"]
    video_dir = None if video_dir is None else os.fspath(video_dir)
    if video_dir is not None:
        check_video_recording(env_id)
    policy = _policy_of(saved, backend, deterministic, seed, progress)
    env = policy.wrap(_make_env(env_id, video_dir))
    try:
        returns, lengths = run_episodes(env, policy.act, episodes, seed)
    finally:
        env.close()
    return {
        "agent": policy.agent,
        "env_id": env_id,
        "episodes": episodes,
        "seed": seed,
        "deterministic": deterministic,
        "backend": policy.backend,
        "mean_return": float(np.mean(returns)),
        "std_return": float(np.std(returns)),
        "min_return": float(np.min(returns)),
        "max_return": float(np.max(returns)),
        "mean_length": float(np.mean(lengths)),
        "returns": returns,
        "lengths": lengths,
        "checkpoint": saved.path,
        "video_dir": video_dir,
    }


def evaluation_line(result: dict[str, Any]) -> str:
    """The plain line ``pynq-rl eval`` ends with, for :func:`evaluate`'s ``result``::

        PPO on CartPole-v1: mean return 500.0 +- 0.0 over 10 episodes (min 500.0, max 500.0), deterministic, ...

    (it goes on ``... seed 0; checkpoint runs/.../checkpoint.npz``, then ``; videos in DIR`` if they were recorded).
    """
    name = AGENT_NAMES.get(result["agent"], result["agent"])
    episodes = f"{result['episodes']} episode{'s' if result['episodes'] != 1 else ''}"
    returns = f"mean return {result['mean_return']:.1f} +- {result['std_return']:.1f} over {episodes}"
    extremes = f"(min {result['min_return']:.1f}, max {result['max_return']:.1f})"
    policy = "deterministic" if result["deterministic"] else "stochastic"
    text = f"{name} on {result['env_id']}: {returns} {extremes}, {policy}, seed {result['seed']}"
    text += f"; checkpoint {result['checkpoint']}"
    return text + (f"; videos in {result['video_dir']}" if result["video_dir"] else "")
