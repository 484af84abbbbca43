"""The one plain line a ``pynq-rl train`` run ends with: the return it reached and where its run directory is.

::

    PPO on CartPole-v1: final return 381.2 (mean of the last 20 episodes) after 49,152 steps; run in runs/C...
    Sarsa on MountainCar-v0: final return -122.4 (mean of the last 20 episodes) after 500 episodes (61,234 step...
    Ape-X on CartPole-v1: final return 452.0 (mean of the last 20 greedy evaluation episodes) after 22,400 upda...
    DQN on CartPole-v1: interrupted by SIGINT after 12,000 of 150,000 steps: return 23.5 (mean of the last 20 ...

(each line goes on: ``...; run in DIR``, and for an interrupted run ``; to continue, run the same command with
--resume DIR/checkpoint.npz``).

The command line prints it on stderr, after the summary's JSON on stdout (which stays one JSON document that tools
parse).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["AGENT_NAMES", "summary_line"]

AGENT_NAMES = {"ppo": "PPO", "dqn": "DQN", "sarsa": "Sarsa", "apex": "Ape-X"}
"""how the line names each ``train`` sub-command's agent"""
WINDOW = 20
"""the episodes the summaries' final return is the mean of (``mean_return_last20``, Ape-X's ``eval_window``)"""


def _progress(agent: str, summary: dict[str, Any], config: Any) -> tuple[int, int, str]:
    """``(done, budget, unit and detail)``: how far the run got, the budget it had, and what they count
    (``"episodes (61,234 steps)"``)."""
    steps = int(summary.get("global_step", 0))
    if agent == "sarsa":
        return int(summary.get("episodes", 0)), int(config.episodes), f"episodes ({steps:,} steps)"
    if agent == "apex":
        actor_steps = int(summary.get("actor_steps", 0))
        return int(summary.get("updates", 0)), int(config.max_updates), f"updates ({actor_steps:,} actor steps)"
    if agent == "ppo":  # PPO runs whole rollouts of num_envs * num_steps: its budget is the steps it will take
        batch = int(config.num_envs) * int(config.num_steps)
        return steps, int(config.total_timesteps) // batch * batch, "steps"
    return steps, int(config.total_timesteps), "steps"


def _return(agent: str, summary: dict[str, Any], config: Any) -> str | None:
    """``381.2 (mean of the last 20 episodes)``, or None if no episode finished."""
    if agent == "apex":
        value = summary.get("eval_mean_return", math.nan)
        count, kind = min(config.eval_window, summary.get("eval_episodes", 0)), "greedy evaluation episodes"
    else:
        value = summary.get("mean_return_last20", math.nan)
        count = summary["episodes"] if "episodes" in summary else len(summary.get("episode_returns", ()))
        count, kind = min(WINDOW, count), "episodes"
    if not count or value is None or not math.isfinite(float(value)):
        return None
    return f"{float(value):.1f} (mean of the last {count} {kind if count > 1 else kind[:-1]})"


def summary_line(agent: str, env_id: str, summary: dict[str, Any], config: Any) -> str:
    """The plain line for ``train <agent>``'s ``summary`` (what its ``train`` returned), run with ``config`` (its
    ``Args``): agent, environment, the return reached, how far the run got, its run directory; for an interrupted
    run the signal and how to continue it."""
    name = AGENT_NAMES.get(agent, agent)
    count, budget, unit = _progress(agent, summary, config)
    done = f"{count:,} {unit}"
    reached = _return(agent, summary, config)
    where = f"run in {summary.get('run_dir')}"
    if summary.get("interrupted"):
        signal = summary.get("signal", "a signal")
        text = f"{name} on {env_id}: interrupted by {signal} after {count:,} of {budget:,} {unit}"
        text += f": return {reached}" if reached else ": no episode finished"
        resume = summary.get("checkpoint")
        return f"{text}; {where}" + (f"; to continue, run the same command with --resume {resume}" if resume else "")
    if reached is None:
        return f"{name} on {env_id}: no episode finished after {done}; {where}"
    return f"{name} on {env_id}: final return {reached} after {done}; {where}"
