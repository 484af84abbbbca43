r"""Tile-coded linear Sarsa in the CleanRL style, learning inside the ParSa core (OPaL's in-network Sarsa).

Read top to bottom: :class:`Args`, the tile coding's defaults (:func:`default_tiling`, :func:`env_bounds`), the
episode loop (:func:`run_episode`), checkpoints, and :func:`train`. The learners are in :mod:`.sarsa.learners`: the
float64 host reference (:class:`~.sarsa.learners.FloatSarsa`) and the factory that is the only branch on hardware
(:func:`~.sarsa.learners.make_learner`).

The ParSa core is a complete online learner: the agent sends the state (and the reward of the key's previous
action) and gets the next action back; the core applies the Sarsa update itself. So this agent is only a
gymnasium loop around ``act()``; with ``backend="host"`` the same loop drives :class:`~.sarsa.learners.FloatSarsa`,
a float64 implementation of the same algorithm, for comparison.

Sarsa (Rummery & Niranjan 1994; Sutton & Barto 2018, §10.1, episodic semi-gradient Sarsa) with a linear
tile-coded action-value function ``q(s, a) = sum_{i in F(s)} w[i, a]`` (one hit tile per tiling):

.. math::

    \delta = r + \gamma \, q(s', a') - q(s, a), \qquad w[i, a] \mathrel{+}= \alpha \, \delta
    \quad \forall i \in F(s), \qquad \delta = r - q(s, a) \text{ if } s' \text{ is terminal}

``alpha`` here is the step size per tiling (Sutton & Barto's ``alpha / n_tilings``; :attr:`Args.alpha` is the
book's alpha and is divided by the number of tilings). Actions are epsilon-greedy with ties broken towards the
lowest action index; epsilon is multiplied by ``epsilon_decay`` after every chosen action. As in the core,
``q(s, a)`` in delta is the value the key stored when it chose ``a`` (not recomputed after the updates made in
between; OPaL's design), and ``q(s', .)`` is read before the update.

Episode ends and keys (the core keeps, per key, the previous ``(s, a, q)``):

* **terminated** (MountainCar reached the goal): ``act(s', r, terminal=True)`` updates towards ``r`` alone and the
  key forgets its previous step.
* **truncated** (the time limit; not a property of the state): ``act(s', r)`` as a normal step: the update
  bootstraps on ``q(s', a')``. The action ``a'`` it returns is never executed; the key now holds ``(s', a')``, and
  the next episode's first ``act(s0)`` carries **no reward** (no REWARD flag), so the core applies no update and
  overwrites the key's memory with ``(s0, a0)``: nothing leaks across episodes (this loop never writes the
  core's pending-reward register, ``set_reward``, which that first record would otherwise consume). Sending
  TERMINAL instead would treat the time limit as a zero-value state (biased); keeping the key and sending the next
  episode's first reward would update the truncation state towards a transition that never happened. The
  discarded ``a'`` costs one PRNG draw and one epsilon decay, in the float reference too, so both follow the same
  schedule.

``q`` values, rewards and weights are ``VALUE_W``-bit fixed point with ``frac_bits`` fractional bits in the core:
MountainCar's values reach about -130 (gamma = 1), so with 16 bits ``frac_bits = 6`` (range +-512, step 1/64)
leaves headroom; ``frac_bits = 8`` saturates.

Defaults: Sutton & Barto's MountainCar setup (Figure 10.1/10.2): 8 tilings of 8x8 tiles over (position,
velocity), gamma = 1, epsilon = 0 (exploration from the optimistic zero initial values: every reward is -1), but
alpha = 0.3 (0.3/8 per tiling) instead of their 0.5: 0.5 learns fastest over the first ~100 episodes but then
oscillates (mean return over episodes 301-500 about -150 in float64, seeds 0-4), 0.3 settles near -122 (README,
"Sarsa on the ParSa core", has the sweep).

Outputs go to ``out_dir/run_name/``: ``args.json``, ``metrics.csv`` and ``metrics.jsonl`` (one row per episode,
keys ``charts/...``), ``episodes.csv``, ``summary.json`` and ``checkpoint.npz`` (arrays + a JSON header, no pickle;
:class:`~.rundir.Run` and :func:`~.checkpoints.save_checkpoint`; also every ``checkpoint_every`` environment steps,
after the episode that reaches each multiple).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

import gymnasium as gym
import numpy as np

from ...drivers.tiling_config import load_tiling
from ..common import checkpoints
from ..common.bounds import COUNT_MAX, Bound, check_bounds, count, fraction, positive
from ..common.checks import FieldValueError, FieldWarning, check_common, load_resume
from ..common.envs import discrete_actions
from ..common.interrupts import StopOnSignal, finish
from ..common.run import checkpoint_due, computed, progress_bar
from ..common.rundir import Run, json_safe
from ..common.startup import core_start_text, starting
from .learners import CoreCounters, FloatSarsa, SarsaLearner, make_learner

__all__ = [
    "Args",
    "BOUNDS",
    "check_args",
    "FloatSarsa",
    "SarsaLearner",
    "make_learner",
    "default_tiling",
    "env_bounds",
    "run_episode",
    "evaluate",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]


@dataclass
class Args:
    exp_name: str = "sarsa"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment (environment resets, the learner's random stream)"""
    progress: bool = True
    """if toggled, show a tqdm progress bar"""
    tensorboard: bool = False
    """if toggled, also write TensorBoard event files into the run directory (needs tensorboardX)"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    save_checkpoint: bool = True
    """if toggled, save a checkpoint at the end of training (and every `checkpoint_every` environment steps)"""
    checkpoint_every: int = 0
    """also save a checkpoint every this many environment steps, after the episode that reaches each multiple (0:
    only at the end)"""
    checkpoint_path: str | None = None
    """where to save the checkpoint (None: `out_dir/run_name/checkpoint.npz`)"""
    resume: str | None = None
    """path of a checkpoint, or the run directory holding it, to resume from
    (policy, epsilon, random state, episodes done; None: start afresh)"""

    # Algorithm specific arguments
    env_id: str = "MountainCar-v0"
    """the id of the environment (discrete actions, Box observations)"""
    episodes: int = 500
    """episodes to run (in total, counting those of a resumed checkpoint)"""
    tilings: int = 8
    """shifted tilings of the default layout (one set over all observation dims)"""
    tiles: int = 8
    """tiles per dimension of the default layout"""
    tiling: str | None = None
    """a tiling layout (JSON string or path, see `pynq_rl/host/drivers/tiling_config.py`) replacing the default"""
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """(lows, highs) of the observation for tile coding (None: the observation space's, which must be finite); on the
    command line LOWS:HIGHS, e.g. --bounds=-2.4,-3,-0.21,-3.5:2.4,3,0.21,3.5 for CartPole"""
    alpha: float = 0.3
    """the step size, Sutton & Barto's alpha: each tiling's weight moves by alpha / n_tilings * delta"""
    gamma: float = 1.0
    """the discount factor gamma"""
    epsilon: float = 0.0
    """the initial exploration probability"""
    epsilon_decay: float = 1.0
    """factor applied to epsilon after every chosen action (the core rounds epsilon half up in UQ1.16, so it stops
    decaying near 2**-17 / (1 - epsilon_decay): 0.5 for 1 - 2**-16, 0.07 for 0.9999, 0.0076 for 0.999)"""
    frac_bits: int = 6
    """fractional bits of the core's values, rewards and weights (16-bit values: MountainCar needs <= 6)"""

    # Offload arguments
    backend: str = "emu"
    """where Sarsa runs: in the ParSa core on `emu` (its bit-exact model), `rtl` (MyHDL), `verilator` (its converted
    Verilog) or `board` (the PL), or on the `host` (FloatSarsa, the float64 reference, no core)"""
    board: str | None = None
    """the board of the overlay (`Pynq-Z2`, `ZCU106`; None: the board PYNQ reports, or the overlay's default)"""
    timeout_s: float = 5.0
    """deadline of one core operation in seconds (board, `emu`); on `rtl` deadlines are counted in simulated cycles"""
    key: int = 0
    """the core key (agent slot) this agent uses"""

    # to be filled in runtime
    n_tilings: int = computed(0)
    """tilings of the layout (computed in runtime)"""
    step_size: float = computed(0.0)
    """alpha / n_tilings, the per-tiling step size sent to the core (computed in runtime)"""


def default_tiling(n_dims: int, tilings: int = 8, tiles: int = 8) -> dict:
    """One tiling set over all ``n_dims`` observation dims (at most 4: the core's MAX_SET_DIMS)."""
    if not 1 <= n_dims <= 4:
        raise ValueError(
            f"the default layout tiles all dims jointly, which needs 1..4 dims, not {n_dims}; "
            "give a layout with `tiling`"
        )
    return {"n_dims": n_dims, "tilings": [{"dims": list(range(n_dims)), "tilings": tilings, "tiles": tiles}]}


def env_bounds(env: gym.Env, bounds=None) -> tuple[np.ndarray, np.ndarray]:
    """``(lows, highs)`` for tile coding: ``bounds`` if given, else the (finite) observation space's."""
    if bounds is not None:
        lows, highs = (np.asarray(b, dtype=np.float64).ravel() for b in bounds)
        shape = getattr(env.observation_space, "shape", None)
        n_dims = int(np.prod(shape)) if shape else None
        if n_dims is not None and not len(lows) == len(highs) == n_dims:
            raise ValueError(
                f"bounds give {len(lows)} lows and {len(highs)} highs; the observation has {n_dims} dimensions"
            )
    else:
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"Sarsa needs a Box observation space, not {space!r}")
        lows, highs = space.low.astype(np.float64).ravel(), space.high.astype(np.float64).ravel()
    if not (np.all(np.isfinite(lows)) and np.all(np.isfinite(highs))):
        raise ValueError(
            f"observation bounds must be finite for tile coding (give `bounds`; on the command line "
            f"--bounds=LOWS:HIGHS), not {lows}, {highs}"
        )
    return lows, highs


# ---------------------------------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------------------------------
def run_episode(
    env: gym.Env, learner: SarsaLearner, key: int = 0, seed: int | None = None, max_steps: int | None = None
) -> tuple[float, int, bool]:
    """Run one episode with ``learner`` acting (and learning, if online) under ``key``.

    Termination sends the final state as TERMINAL; truncation sends it as a normal step (bootstrapped) and drops
    the returned action; the first step carries no reward (see the module docstring).

    Returns
    -------
    (episodic_return, episodic_length, terminated)
    """
    obs, _ = env.reset(seed=seed)
    action = learner.act(obs, None, key)
    episodic_return, length = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(action)
        episodic_return += float(reward)
        length += 1
        if terminated:
            learner.act(obs, float(reward), key, terminal=True)
            return episodic_return, length, True
        action = learner.act(obs, float(reward), key)  # truncated: bootstraps on q(s', a'), a' is dropped
        if truncated or (max_steps is not None and length >= max_steps):
            return episodic_return, length, False


def evaluate(env: gym.Env, learner: SarsaLearner, episodes: int, seed: int, key: int = 0) -> list[float]:
    """Greedy returns of ``episodes`` episodes with updates off (epsilon 0); restores online and epsilon."""
    online, epsilon = learner.online, learner.epsilon
    learner.online, learner.epsilon = False, 0.0
    try:
        return [run_episode(env, learner, key, seed=seed + i)[0] for i in range(episodes)]
    finally:
        learner.online, learner.epsilon = online, epsilon


# ---------------------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------------------
def save_checkpoint(
    path: str | os.PathLike,
    learner: SarsaLearner,
    args: Args,
    episode: int,
    episode_returns: list[float],
    global_step: int,
) -> None:
    """Save the learner's ``state_dict`` (policy, epsilon, random state), the args and the progress.

    :func:`~.checkpoints.save_checkpoint`: arrays + a JSON header, no pickle; written to a temporary file, then renamed.
    """
    checkpoints.save_checkpoint(
        path,
        "sarsa",
        {
            "backend": args.backend,
            "learner": learner.state_dict(),
            "args": json_safe(asdict(args)),
            "episode": int(episode),
            "episode_returns": [float(r) for r in episode_returns],
            "global_step": int(global_step),
        },
    )


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`.

    Raises
    ------
    ValueError
        If the file is not a Sarsa checkpoint of the current format.
    """
    return checkpoints.load_checkpoint(path, "sarsa")


# ---------------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------------
_METRIC_KEYS = (
    "episode",
    "global_step",
    "charts/episodic_return",
    "charts/episodic_length",
    "charts/terminated",
    "charts/epsilon",
    "charts/return_mean20",
    "charts/SPS",
    "core/cycles_act",
    "core/cycles_update",
    "time/episode[ms]",
)


BOUNDS: dict[str, Bound] = {
    "seed": count(0, 2**32 - 1),
    "checkpoint_every": count(0, note="0: only at the end"),
    "episodes": count(1, COUNT_MAX),
    "tilings": count(1, 256),
    "tiles": count(1, 255),
    "alpha": fraction(low_open=True, note="0: nothing would be learnt"),
    "gamma": fraction(),
    "epsilon": fraction(),
    "epsilon_decay": fraction(),
    "frac_bits": count(0, 30, note="the build may allow fewer: its value width - 2"),
    "timeout_s": positive(),
    "key": count(0, 2**31 - 1, note="the build has fewer: its key count"),
}
"""the range of each numeric option (:mod:`.bounds`; ``tilings`` and ``tiles`` as a tiling layout allows them)"""


def check_args(args: Args) -> None:
    """Reject argument values before any environment or overlay is built.

    Raises
    ------
    FieldValueError
        A value out of range, naming the fields it is about (:class:`~.checks.FieldValueError`; the command line names
        their flags instead).
    """
    check_bounds(args, BOUNDS)
    check_common(args)
    if args.bounds is not None:
        _check_observation_bounds(args.bounds)


def _check_observation_bounds(bounds: Any) -> None:
    """``bounds`` as ``(lows, highs)``: two equally long sequences of finite numbers, each low below its high."""
    try:
        lows, highs = (np.asarray(side, dtype=np.float64) for side in bounds)
        valid = lows.ndim == 1 and lows.shape == highs.shape and lows.size > 0
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise FieldValueError(f"bounds must be (lows, highs) of equal length, not {bounds!r}", "bounds")
    if not (np.isfinite(lows).all() and np.isfinite(highs).all() and (lows < highs).all()):
        raise FieldValueError(
            f"bounds must be finite with each low below its high, not {lows.tolist()}:{highs.tolist()}", "bounds"
        )


def train(args: Args, overlay=None) -> dict[str, Any]:
    """Train tile-coded Sarsa for ``args.episodes`` episodes and return summary metrics.

    Parameters
    ----------
    args : Args
        The hyperparameters (not modified; the filled copy is saved in ``args.json`` and the checkpoint).
    overlay : RLOverlay or None
        An overlay to use for a core backend instead of loading one.

    Returns
    -------
    dict
        ``episode_returns``, ``episode_lengths`` (this call's episodes), ``mean_return_last20``, ``episodes``,
        ``start_episode`` (non-zero on resume), ``global_step``, ``sps``, ``wall_time_s``, ``run_name``,
        ``run_dir``, ``checkpoint`` (path or None), ``backend``, ``saturation_warnings``, ``interrupted`` (and
        ``signal`` when true).

    Raises
    ------
    ValueError
        An argument out of range, infinite observation bounds without ``bounds``, a layout the core's build cannot
        hold, or an incompatible ``resume`` checkpoint.
    TimeoutError
        From the core's driver if the core does not answer (``board`` and ``rtl`` backends).
    TrainingInterrupted
        On SIGINT or SIGTERM during training (:mod:`.interrupts`): the episode under way is finished, the checkpoint
        (the episodes done so far) and ``summary.json`` (``"interrupted": true``) are written, and the summary
        travels with the exception.

    Warns
    -----
    FieldWarning
        Once, at the end, if episodes saturated the core's fixed-point values (``frac_bits`` too high).
    """
    check_args(args)
    args = replace(args)
    resume_state = load_resume(args.resume, "sarsa") if args.resume else None
    start_episode = int(resume_state["episode"]) if resume_state else 0
    start_step = int(resume_state["global_step"]) if resume_state else 0

    env = gym.make(args.env_id)
    try:
        learner = _make_learner(args, env, overlay)
        if resume_state is not None:
            _restore(args, resume_state, learner)

        run = Run(args, _METRIC_KEYS, tensorboard=args.tensorboard)
        checkpoint_path = args.checkpoint_path or run.path("checkpoint.npz")
        episode_returns: list[float] = list(resume_state["episode_returns"]) if resume_state else []
        global_step = start_step
        saturations = 0
        with contextlib.ExitStack() as stack:
            stack.enter_context(run)
            progress = stack.enter_context(progress_bar(args.episodes, start_episode, args.progress, run.name, "ep"))
            stop = stack.enter_context(StopOnSignal())  # Ctrl-C / SIGTERM: finish the episode, save, summarize
            episodes_done = start_episode
            for episode in range(start_episode, args.episodes):
                if stop.requested():
                    break
                t0 = time.perf_counter()
                # TRY NOT TO MODIFY: seeding: the first reset of the run is seeded, later ones continue its stream
                seed = args.seed + episode if episode == start_episode else None
                ep_return, ep_length, terminated, saturated = _play(env, learner, args.key, seed)
                saturations += saturated
                global_step += ep_length
                episodes_done = episode + 1
                episode_returns.append(ep_return)
                run.episode(global_step, ep_return, ep_length)
                sps = run.sps(global_step - start_step)
                row = _metrics(
                    args, episode, global_step, ep_return, ep_length, terminated, learner, episode_returns, sps
                )
                run.log({**row, "time/episode[ms]": 1e3 * (time.perf_counter() - t0)})
                progress.set_postfix(ret20=f"{row['charts/return_mean20']:.1f}", sps=sps, refresh=False)
                progress.update(1)  # redraws the bar with this episode's ret20
                if args.save_checkpoint and checkpoint_due(global_step - ep_length, global_step, args.checkpoint_every):
                    save_checkpoint(checkpoint_path, learner, args, episode + 1, episode_returns, global_step)
        if saturations:
            warnings.warn(
                FieldWarning(
                    f"{saturations} episodes saturated the core's {args.frac_bits}-fractional-bit values; lower "
                    "frac_bits",
                    "frac_bits",
                ),
                stacklevel=2,
            )
        saved = None
        if args.save_checkpoint:
            save_checkpoint(checkpoint_path, learner, args, episodes_done, episode_returns, global_step)
            saved = checkpoint_path
    finally:
        env.close()

    summary = run.finish(
        backend=args.backend,
        episodes=len(episode_returns),
        start_episode=start_episode,
        global_step=global_step,
        mean_return_last20=float(np.mean(episode_returns[-20:])) if episode_returns else math.nan,
        sps=run.sps(global_step - start_step),
        checkpoint=saved,
        saturation_warnings=saturations,
        **stop.summary_fields(),
    )
    return finish(summary, stop)


# ---------------------------------------------------------------------------------------------------------------------
# The phases of train(), in the order the loop runs them
# ---------------------------------------------------------------------------------------------------------------------
def _make_learner(args: Args, env: gym.Env, overlay: Any) -> SarsaLearner:
    """The tile coding (``args.tiling``, or the default one for the observation's dimensions) and the learner on
    ``args.backend``; fills in ``args.n_tilings`` and ``args.step_size`` (``alpha`` shared among the tilings)."""
    n_actions = discrete_actions(env.action_space)  # first: a Box action space is the error to name, not its bounds
    lows, highs = env_bounds(env, args.bounds)
    tiling = (
        load_tiling(args.tiling) if args.tiling else load_tiling(default_tiling(len(lows), args.tilings, args.tiles))
    )
    if tiling.n_dims != len(lows):
        raise ValueError(f"the tiling covers {tiling.n_dims} dims; the observation has {len(lows)}")
    args.n_tilings = tiling.n_tilings
    args.step_size = args.alpha / tiling.n_tilings
    with starting(core_start_text("ParSa", args.backend) if overlay is None else None, args.progress):
        return make_learner(
            args.backend,
            tiling,
            n_actions,
            (lows, highs),
            args.step_size,
            args.gamma,
            args.epsilon,
            args.epsilon_decay,
            args.frac_bits,
            args.seed,
            args.board,
            overlay,
            args.timeout_s,
        )


def _restore(args: Args, state: dict[str, Any], learner: SarsaLearner) -> None:
    """Load a checkpoint's weights and exploration state; a host (float64) and a core policy are not
    interchangeable, so the checkpoint's backend must be on the same side."""
    saved_on_host = state["backend"] in ("host", "float")  # checkpoints written before "host" was named say "float"
    if saved_on_host != (args.backend == "host"):
        raise ValueError(
            f"checkpoint {args.resume!r} is from backend {state['backend']!r}; "
            f"a host (float64) and a core policy are not interchangeable"
        )
    learner.load_state_dict(state["learner"])


def _play(env: gym.Env, learner: SarsaLearner, key: int, seed: int | None) -> tuple[float, int, bool, int]:
    """One learning episode (:func:`run_episode`): its return, length, whether it terminated, and how many
    times it saturated the core's fixed-point values (counted, not repeated; other warnings pass through)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ep_return, ep_length, terminated = run_episode(env, learner, key, seed=seed)
    saturated = 0
    for w in caught:
        if w.category.__name__ == "ParsaSaturationWarning":
            saturated += 1
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return ep_return, ep_length, terminated, saturated


def _metrics(
    args: Args,
    episode: int,
    global_step: int,
    ep_return: float,
    ep_length: int,
    terminated: bool,
    learner: SarsaLearner,
    episode_returns: list[float],
    sps: int,
) -> dict[str, Any]:
    """The episode's ``metrics.csv`` row, without its wall time (:data:`_METRIC_KEYS`); the core's cycle
    counters on a core backend."""
    core = cast(CoreCounters, learner) if args.backend != "host" else None  # a ParsaCore on a core backend
    return {
        "episode": episode + 1,
        "global_step": global_step,
        "charts/episodic_return": ep_return,
        "charts/episodic_length": ep_length,
        "charts/terminated": int(terminated),
        "charts/epsilon": float(learner.epsilon),
        "charts/return_mean20": float(np.mean(episode_returns[-20:])),
        "charts/SPS": sps,
        "core/cycles_act": core.cycles_act if core is not None else math.nan,
        "core/cycles_update": core.cycles_update if core is not None else math.nan,
    }
