"""The agents' two network backends side by side: numpy (what a PYNQ-Z2 runs) against torch, learning and speed.

Two parts, both from one run:

* **Step costs** (always): the time of one PPO minibatch update (64-64 tanh actor and critic, minibatch 256,
  CartPole shapes), one PPO action step (8 environments), one DQN gradient step (2x256 ReLU, batch 128) and one DQN
  action (1 environment), numpy against torch, interleaved repetition by repetition, medians; torch pinned to one
  thread (as the agents run it), numpy's BLAS too (the script sets ``OPENBLAS_NUM_THREADS=1`` unless given).
* **Learning runs** (``--learn``): ``ppo`` on CartPole-v1 for ``--ppo-steps`` steps with GAE on the emulated core
  (q8) and ``dqn`` for ``--dqn-steps`` steps with its priorities on the emulated replay core, seed ``--seed``, once
  per network backend: the mean return of the last 20 episodes (and DQN's best 20-episode mean), steps/s and wall
  time. The agents' acceptance bar (their slow tests): PPO >= 450 within 300k steps, DQN >= 450 within 150k.

Run: ``python benchmarks/agents_nn.py [--learn] [--repeats 7] [--out benchmarks/results]``; writes
``agents_nn.json`` and ``agents_nn.md`` under ``--out``. Without torch only the numpy columns are filled.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # run as a script: its own BLAS on one thread, set before numpy loads (a test importing
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # the module keeps its threads)
        os.environ.setdefault(_var, "1")

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, seconds_per_call

from pynq_rl.host.agents import dqn, ppo
from pynq_rl.host.agents.common.run import torch_available
from pynq_rl.host.agents.nets.learners import make_actor_critic, make_q_learner


def step_costs(nn: str, rng: np.random.Generator) -> dict[str, Callable[[], object]]:
    """One callable per timed operation, on network backend ``nn``, with CartPole-sized inputs."""
    actor_critic = make_actor_critic(nn, 4, 2, 1e-3, rng)
    q_learner = make_q_learner(nn, 4, 2, (256, 256), 5e-4, rng)
    obs8 = rng.normal(size=(8, 4)).astype(np.float32)
    obs1 = obs8[:1]
    mb = (
        rng.normal(size=(256, 4)).astype(np.float32),
        rng.integers(0, 2, 256),
        np.full(256, np.log(0.5)),
        rng.normal(size=256),
        rng.normal(size=256),
        rng.normal(size=256),
    )
    coefs = dict(clip_coef=0.2, ent_coef=0.0, vf_coef=0.5, clip_vloss=False, norm_adv=True, max_grad_norm=0.5)
    batch = (
        rng.normal(size=(128, 4)).astype(np.float32),
        rng.integers(0, 2, 128),
        rng.normal(size=(128, 4)).astype(np.float32),
        rng.normal(size=128).astype(np.float32),
        np.zeros(128, np.float32),
        np.ones(128, np.float32),
    )
    return {
        "ppo_update[us]": lambda: actor_critic.learn(*mb, **coefs),
        "ppo_act[us]": lambda: actor_critic.act(obs8),
        "dqn_update[us]": lambda: q_learner.learn(*batch, gamma=0.99, double_q=True, max_grad_norm=10.0),
        "dqn_act[us]": lambda: q_learner.q_values(obs1),
    }


def measure_step_costs(backends: list[str], repeats: int, min_time_s: float) -> dict[str, dict[str, float]]:
    """Median microseconds per operation and backend, repetitions interleaved across backends."""
    ops = {nn: step_costs(nn, np.random.default_rng(0)) for nn in backends}
    samples: dict[str, dict[str, list[float]]] = {nn: {k: [] for k in ops[nn]} for nn in backends}
    for _ in range(repeats):
        for nn in backends:
            for key, fn in ops[nn].items():
                fn()  # warm
                samples[nn][key].append(1e6 * seconds_per_call(fn, min_time_s))
    return {nn: {k: statistics.median(v) for k, v in per.items()} for nn, per in samples.items()}


def learning_runs(backends: list[str], seed: int, ppo_steps: int, dqn_steps: int) -> list[dict]:
    """PPO (GAE on the emulated core) and DQN (priorities on the emulated core) once per network backend."""
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for nn in backends:
            s = ppo.train(
                ppo.Args(
                    total_timesteps=ppo_steps,
                    seed=seed,
                    nn=nn,
                    backend="emu",
                    out_dir=out,
                    progress=False,
                    save_checkpoint=False,
                )
            )
            rows.append(
                {
                    "agent": "ppo",
                    "nn": nn,
                    "offload": "GAE on emu (q8)",
                    "steps": s["global_step"],
                    "mean_return_last20": s["mean_return_last20"],
                    "best_mean_return20": None,
                    "sps": s["sps"],
                    "wall_time_s": s["wall_time_s"],
                }
            )
            d = dqn.train(
                dqn.Args(
                    total_timesteps=dqn_steps,
                    seed=seed,
                    nn=nn,
                    backend="emu",
                    out_dir=out,
                    progress=False,
                    save_checkpoint=False,
                )
            )
            rows.append(
                {
                    "agent": "dqn",
                    "nn": nn,
                    "offload": "priorities on emu",
                    "steps": d["global_step"],
                    "mean_return_last20": d["mean_return_last20"],
                    "best_mean_return20": d["best_mean_return20"],
                    "sps": d["sps"],
                    "wall_time_s": d["wall_time_s"],
                }
            )
    return rows


def render(result: dict) -> str:
    """The Markdown page."""
    env = result["environment"]
    lines = [
        "# Agents: numpy networks (the PYNQ-Z2's) against torch",
        "",
        f"Generated by `benchmarks/agents_nn.py` ({env.get('date', '')}, commit {env.get('git_commit', '?')}); "
        f"Python {env.get('python')}, numpy {env.get('numpy')}, torch {result['torch_version']}; "
        f"{env.get('cpu_count')} CPUs shared with other jobs. Medians of {result['repeats']} interleaved "
        "repetitions; torch on one thread.",
        "",
        "## Step costs (CartPole shapes)",
        "",
        "| operation | numpy [us] | torch [us] | numpy / torch time |",
        "|---|---:|---:|---:|",
    ]
    costs = result["step_costs"]
    for key in costs.get("numpy", {}):
        n, t = costs["numpy"][key], costs.get("torch", {}).get(key)
        ratio = f"{n / t:.2f}" if t else "-"
        lines.append(
            f"| {key.replace('[us]', '')} | {n:.1f} | {t:.1f} | {ratio} |"
            if t
            else f"| {key.replace('[us]', '')} | {n:.1f} | - | - |"
        )
    if result["learning"]:
        lines += [
            "",
            f"## Learning on CartPole-v1 (seed {result['seed']})",
            "",
            "| agent | networks | offload | steps | mean return, last 20 | best 20-episode mean | steps/s | "
            "wall time [s] |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for row in result["learning"]:
            best = "-" if row["best_mean_return20"] is None else f"{row['best_mean_return20']:.1f}"
            lines.append(
                f"| {row['agent']} | {row['nn']} | {row['offload']} | {row['steps']:,} | "
                f"{row['mean_return_last20']:.1f} | {best} | {row['sps']:,} | {row['wall_time_s']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repetitions of the step costs")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per timed repetition")
    parser.add_argument("--learn", action="store_true", help="also run the learning runs (minutes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ppo-steps", type=int, default=300_000)
    parser.add_argument("--dqn-steps", type=int, default=150_000)
    parser.add_argument("--out", default="benchmarks/results", help="directory for agents_nn.json/.md")
    args = parser.parse_args(argv)
    backends = ["numpy"] + (["torch"] if torch_available() else [])
    if "torch" in backends:
        import torch

        torch.set_num_threads(1)
    env = environment(torch="torch" in backends)
    result = {
        "environment": env,
        "torch_version": env.get("torch", "not installed"),
        "repeats": args.repeats,
        "seed": args.seed,
        "step_costs": measure_step_costs(backends, args.repeats, args.min_time),
        "learning": learning_runs(backends, args.seed, args.ppo_steps, args.dqn_steps) if args.learn else [],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "agents_nn.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    page = render(result)
    (out / "agents_nn.md").write_text(page)
    print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
