"""The three agents learning with their core on ``verilator`` (the converted Verilog) next to ``emu`` (the model).

What: each agent trains twice in one run, its core on ``emu`` (the bit-exact numpy model) and then on
``verilator`` (the Verilog ``pynq-rl build verilog`` writes for the board, compiled by Verilator behind the C++ AXI
harness), same seed, same arguments:

* ``ppo``: PPO on CartPole-v1, GAE on the GAE core (``backend``, q8-runs: the default 8-bit codes), ``--ppo-steps``
  (300k: the length the README's CartPole claim and the slow verilator test use) steps;
* ``dqn``: Double DQN with prioritized replay on CartPole-v1, priorities in the replay core (``backend``),
  ``--dqn-steps`` (the agent's default, 150k, with which dqn.py's docstring and the README report CartPole solved);
* ``sarsa``: tile-coded Sarsa in the ParSa core (``backend``) on MountainCar-v0, the agent's default settings,
  ``--sarsa-episodes`` (500, the README's acceptance length) episodes.

For each run: the mean return of the last 20 episodes, the best 20-episode mean and the first episode (and its
step) at which the 20-episode mean reached the solved bar (475 on CartPole-v1, gymnasium's threshold; -150 on
MountainCar, the README's Sarsa acceptance bar), for Sarsa also the mean steps of the last 20 episodes and the
episodes that reached the goal, the wall time of the ``train()`` call (loading the core included), and for
``verilator`` the ratio of its wall time to ``emu``'s and whether its episodes (returns and lengths) are identical to
``emu``'s, which they should be: the backends are bit-exact, so the same seed gives the same advantages, priorities
and actions. Before each timed run a tiny untimed one on the same backend (its time is reported as the warm-up)
pays the one-time costs of the process: numba compiling the emu models (uncached, seconds), loading the verilated
model's library, first imports; otherwise whichever backend ran first would carry them.

Why: ``emu`` is what the agents are tuned and tested on; this shows the Verilog that goes into the bitstream
learning the same way, and what it costs in time. The two backends of one agent run back to back, so a neighbour on
the shared machine slows both alike; the ratio still moves with the load.

How: ``python benchmarks/verilator_agents.py [--ppo-steps 300000] [--dqn-steps 150000] [--sarsa-episodes 500]
[--seed 0] [--nn torch|numpy] [--out benchmarks/results]`` writes ``verilator_agents.json`` and
``verilator_agents.md`` under ``--out`` (each run writes its logs into a temporary run directory, removed at the
end). The first verilator run of a core builds its model (minutes) unless ``~/.cache/pynq-rl/verilator`` holds
it. Without Verilator the verilator rows are ``unavailable`` and the emu rows still run. Defaults take about 10
minutes on a 2-core machine at a load of 2 (the two DQN runs are most of it).
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # run as a script: its own BLAS on one thread, set before numpy loads (a test importing
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # the module keeps its threads)
        os.environ.setdefault(_var, "1")

import argparse
import csv
import json
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, failed_rows, write_results

from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.common.run import resolve_nn
from pynq_rl.overlay import spec as S

NAME = "verilator_agents"
BACKENDS = ("emu", "verilator")
AGENTS = ("ppo", "dqn", "sarsa")
ENVS = {"ppo": "CartPole-v1", "dqn": "CartPole-v1", "sarsa": "MountainCar-v0"}
OFFLOAD = {"ppo": "GAE core (q8-runs)", "dqn": "replay core (priorities)", "sarsa": "ParSa core (Sarsa in the core)"}
SOLVED = {"ppo": 475.0, "dqn": 475.0, "sarsa": -150.0}
"""the 20-episode mean that counts as solved: CartPole-v1's reward threshold; the README's Sarsa bar on MountainCar"""
WINDOW = 20


def verilator_status() -> tuple[str, str]:
    """``("ok", version)`` where Verilator can build models, else ``("unavailable: <reason>", "")``."""
    from pynq_rl.host.backends.verilator_build import VerilatorUnavailable, find_verilator

    try:
        return "ok", find_verilator().version
    except VerilatorUnavailable as error:
        return f"unavailable: {error}", ""


def read_episodes(run_dir: str) -> tuple[list[int], list[float], list[int]]:
    """The run's ``episodes.csv``: global step at each episode's end, its return and its length."""
    with open(os.path.join(run_dir, "episodes.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return (
        [int(r["global_step"]) for r in rows],
        [float(r["charts/episodic_return"]) for r in rows],
        [int(r["charts/episodic_length"]) for r in rows],
    )


def read_terminated(run_dir: str) -> list[bool]:
    """Per episode of a Sarsa run, whether it reached the goal (``charts/terminated`` in ``metrics.jsonl``)."""
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        return [bool(json.loads(line)["charts/terminated"]) for line in f if line.strip()]


def window_means(returns: list[float]) -> np.ndarray:
    """The mean of every ``WINDOW`` consecutive episodes (empty with fewer episodes)."""
    if len(returns) < WINDOW:
        return np.zeros(0)
    return np.convolve(np.asarray(returns, dtype=np.float64), np.ones(WINDOW) / WINDOW, mode="valid")


def first_solved(returns: list[float], bar: float) -> int | None:
    """The 1-based episode that completes the first ``WINDOW``-episode window averaging ``bar`` or better."""
    hits = np.flatnonzero(window_means(returns) >= bar)
    return int(hits[0]) + WINDOW if hits.size else None


def train_ppo(backend: str, args: argparse.Namespace, out_dir: str) -> dict:
    """PPO on CartPole-v1 with the default hyperparameters, GAE on the core of ``backend``."""
    return ppo.train(
        ppo.Args(
            total_timesteps=args.ppo_steps,
            seed=args.seed,
            nn=args.nn,
            backend=backend,
            out_dir=out_dir,
            progress=False,
            save_checkpoint=False,
        )
    )


def train_dqn(backend: str, args: argparse.Namespace, out_dir: str) -> dict:
    """Double DQN + PER on CartPole-v1 with the default hyperparameters, priorities on the core of ``backend``."""
    return dqn.train(
        dqn.Args(
            total_timesteps=args.dqn_steps,
            seed=args.seed,
            nn=args.nn,
            backend=backend,
            learning_starts=args.dqn_learning_starts,
            out_dir=out_dir,
            progress=False,
            save_checkpoint=False,
        )
    )


def train_sarsa(backend: str, args: argparse.Namespace, out_dir: str) -> dict:
    """Sarsa on MountainCar-v0 with the default settings, in the ParSa core of ``backend``."""
    return sarsa.train(
        sarsa.Args(
            episodes=args.sarsa_episodes,
            seed=args.seed,
            backend=backend,
            out_dir=out_dir,
            progress=False,
            save_checkpoint=False,
        )
    )


TRAINERS: dict[str, Callable[[str, argparse.Namespace, str], dict]] = {
    "ppo": train_ppo,
    "dqn": train_dqn,
    "sarsa": train_sarsa,
}


def summarize(agent: str, summary: dict, wall_time_s: float) -> dict:
    """The row's learning metrics from a finished run's summary and its run directory."""
    steps, returns, lengths = read_episodes(summary["run_dir"])
    means = window_means(returns)
    solved_episode = first_solved(returns, SOLVED[agent])
    row = {
        "steps": int(summary["global_step"]),
        "episodes": len(returns),
        "mean_return_last20": float(np.mean(returns[-WINDOW:])) if returns else math.nan,
        "best_mean_return20": float(means.max()) if means.size else math.nan,
        "solved_bar": SOLVED[agent],
        "first_solved_episode": solved_episode,
        "first_solved_step": steps[solved_episode - 1] if solved_episode else None,
        "wall_time_s": round(wall_time_s, 2),
        "sps": int(summary["sps"]),
        "episode_returns": returns,
        "episode_lengths": lengths,
    }
    if agent == "sarsa":
        terminated = read_terminated(summary["run_dir"])
        row |= {
            "mean_steps_last20": float(np.mean(lengths[-WINDOW:])) if lengths else math.nan,
            "goal_episodes": int(sum(terminated)),
            "first_goal_episode": terminated.index(True) + 1 if any(terminated) else None,
            "saturation_warnings": int(summary["saturation_warnings"]),
        }
    return row


def warm_up(agent: str, backend: str, args: argparse.Namespace, out_dir: Path) -> float:
    """A tiny untimed run of ``agent`` on ``backend`` (PPO one rollout, DQN 200 gradient steps, Sarsa one episode),
    so that one-time costs (numba compiling the emu models, loading a verilated model's library, first imports) are
    not in the timed run; its wall time in seconds."""
    tiny = argparse.Namespace(
        **vars(args) | {"ppo_steps": 1024, "dqn_steps": 600, "dqn_learning_starts": 200, "sarsa_episodes": 1}
    )
    start = time.perf_counter()
    TRAINERS[agent](backend, tiny, str(out_dir))
    return time.perf_counter() - start


def run_one(agent: str, backend: str, args: argparse.Namespace, work_dir: Path) -> dict:
    """Train ``agent`` with its core on ``backend`` once, after a warm-up; a row with ``status`` "ok" or the error."""
    row = {
        "key": f"{agent}/{backend}",
        "agent": agent,
        "env": ENVS[agent],
        "backend": backend,
        "offload": OFFLOAD[agent],
    }
    out_dir = work_dir / f"{agent}_{backend}"
    print(f"{agent} on {backend} ...", flush=True)
    try:
        row["warm_up_s"] = round(warm_up(agent, backend, args, work_dir / f"{agent}_{backend}_warm_up"), 2)
        start = time.perf_counter()
        summary = TRAINERS[agent](backend, args, str(out_dir))
    except Exception as error:  # noqa: BLE001 - a failed run is a row of the table, the others still run
        traceback.print_exc()
        return row | {"status": f"error: {type(error).__name__}: {error}"}
    row |= summarize(agent, summary, time.perf_counter() - start) | {"status": "ok"}
    print(f"  mean return, last {WINDOW}: {row['mean_return_last20']:.1f}; {row['wall_time_s']:.1f} s", flush=True)
    return row


def compare_to_emu(rows: list[dict]) -> None:
    """Fill each verilator row's wall-time ratio to emu and whether its episodes are identical to emu's."""
    emu = {r["agent"]: r for r in rows if r["backend"] == "emu" and r["status"] == "ok"}
    for row in rows:
        base = emu.get(row["agent"])
        if row["backend"] == "emu" or row["status"] != "ok" or base is None:
            continue
        row["wall_time_ratio_to_emu"] = round(row["wall_time_s"] / base["wall_time_s"], 3)
        row["identical_to_emu"] = (
            row["episode_returns"] == base["episode_returns"] and row["episode_lengths"] == base["episode_lengths"]
        )
    for row in rows:  # the lengths only served the comparison: on both tasks a return is +-its length
        row.pop("episode_lengths", None)


def measure(args: argparse.Namespace, verilator: str) -> list[dict]:
    """Every agent on every backend, an agent's two backends back to back; verilator rows are skipped with the
    reason where Verilator is unavailable."""
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"{NAME}_") as work:
        for agent in AGENTS:
            for backend in BACKENDS:
                if backend == "verilator" and verilator != "ok":
                    rows.append(
                        {
                            "key": f"{agent}/{backend}",
                            "agent": agent,
                            "env": ENVS[agent],
                            "backend": backend,
                            "offload": OFFLOAD[agent],
                            "status": verilator,
                        }
                    )
                    continue
                rows.append(run_one(agent, backend, args, Path(work)))
    compare_to_emu(rows)
    return rows


def _fmt(x: float | int | None, spec: str = ".1f") -> str:
    """A number for the table, ``-`` for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def render(result: dict) -> str:
    """The Markdown page."""
    env, cfg = result["environment"], result["config"]
    lines = [
        "# The agents with their core on verilator (the converted Verilog) and on emu (the model)",
        "",
        f"Generated by `benchmarks/verilator_agents.py` ({env.get('date', '')}, commit {env.get('git_commit', '?')}, "
        f"{env.get('git_describe', '')}); Python {env.get('python')}, numpy {env.get('numpy')}, networks "
        f"{cfg['nn']}{' ' + env['torch'] if cfg['nn'] == 'torch' and 'torch' in env else ''} on one thread, "
        f"Verilator {result['verilator_version'] or '-'}; {env.get('cpu_count')} CPUs ({env.get('processor')}) "
        f"shared with other jobs, 1-minute load {_fmt(env.get('loadavg_1min_at_start'))} at the start. "
        f"Board build {cfg['board']}, seed {cfg['seed']}; each run's wall time is its `train()` call, loading the core "
        f"included, after an untimed tiny run on the same backend (warm-up: numba compiling the emu models, loading "
        f"the verilated model's library); an agent's two backends ran back to back.",
        "",
        f"Runs: PPO {cfg['ppo_steps']:,} steps (GAE in q8-runs), DQN + PER {cfg['dqn_steps']:,} steps (learning "
        "from step "
        f"{cfg['dqn_learning_starts']:,}), Sarsa {cfg['sarsa_episodes']:,} episodes; every other argument the agent's "
        f"default. Solved: a {WINDOW}-episode mean >= {SOLVED['ppo']:g} on CartPole-v1 (gymnasium's threshold), "
        f">= {SOLVED['sarsa']:g} on MountainCar-v0 (the README's Sarsa bar).",
        "",
        f"| agent | env | core | backend | steps | episodes | mean return, last {WINDOW} | best {WINDOW}-episode mean "
        f"| solved at step (episode) | wall time [s] | steps/s | time / emu | episodes identical to emu "
        f"| warm-up [s] |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in result["rows"]:
        if r["status"] != "ok":
            lines.append(
                f"| {r['agent']} | {r['env']} | {r['offload']} | {r['backend']} | {r['status']} | | | | | | | | | |"
            )
            continue
        solved = (
            f"{r['first_solved_step']:,} ({r['first_solved_episode']})" if r["first_solved_episode"] else "not reached"
        )
        identical = {True: "yes", False: "**no**"}.get(r.get("identical_to_emu"), "-")
        lines.append(
            f"| {r['agent']} | {r['env']} | {r['offload']} | {r['backend']} | {r['steps']:,} | "
            f"{r['episodes']:,} | {_fmt(r['mean_return_last20'])} | {_fmt(r['best_mean_return20'])} | "
            f"{solved} | {_fmt(r['wall_time_s'])} | {r['sps']:,} | "
            f"{_fmt(r.get('wall_time_ratio_to_emu'), '.2f')} | {identical} | {_fmt(r['warm_up_s'])} |"
        )
    sarsa_rows = [r for r in result["rows"] if r["agent"] == "sarsa" and r["status"] == "ok"]
    if sarsa_rows:
        lines += [
            "",
            "Sarsa on MountainCar-v0 (200 steps at most per episode, -1 per step):",
            "",
            f"| backend | mean steps, last {WINDOW} | episodes reaching the goal | first episode at the goal "
            "| saturation warnings |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in sarsa_rows:
            lines.append(
                f"| {r['backend']} | {_fmt(r['mean_steps_last20'])} | {r['goal_episodes']} of "
                f"{r['episodes']} | {_fmt(r['first_goal_episode'], 'd')} | {r['saturation_warnings']} |"
            )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppo-steps", type=int, default=300_000, help="PPO environment steps")
    parser.add_argument("--dqn-steps", type=int, default=dqn.Args.total_timesteps, help="DQN environment steps")
    parser.add_argument(
        "--dqn-learning-starts",
        type=int,
        default=dqn.Args.learning_starts,
        help="DQN step of the first gradient step (lower it for a short run to reach the replay core's "
        "sample and update)",
    )
    parser.add_argument("--sarsa-episodes", type=int, default=500, help="Sarsa episodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--nn",
        choices=("torch", "numpy"),
        default=None,
        help="the PPO and DQN networks (default: torch where it imports, as the agents do)",
    )
    parser.add_argument("--out", default="benchmarks/results", help=f"directory for {NAME}.json/.md")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int | str:
    """Run every agent on both backends, write the results; non-zero if a run failed."""
    args = parse_args(argv)
    args.nn = resolve_nn(args.nn)
    if args.nn == "torch":
        import torch

        torch.set_num_threads(1)
    start = time.perf_counter()
    verilator, version = verilator_status()
    result = {
        "environment": environment(torch=args.nn == "torch"),
        "verilator_version": version,
        "config": {
            "seed": args.seed,
            "nn": args.nn,
            "board": S.board(None).name,
            "ppo_steps": args.ppo_steps,
            "dqn_steps": args.dqn_steps,
            "dqn_learning_starts": args.dqn_learning_starts,
            "sarsa_episodes": args.sarsa_episodes,
        },
        "rows": measure(args, verilator),
    }
    result["wall[s]"] = round(time.perf_counter() - start, 1)
    write_results(Path(args.out), NAME, result, render(result))
    return failed_rows(result)


if __name__ == "__main__":
    raise SystemExit(main())
