"""PPO with the GAE step offloadable to the GAE core: the agent's public face.

``from pynq_rl.host.agents import ppo; ppo.train(ppo.Args(...))`` is the API (the command line's ``pynq-rl train
ppo`` calls it). The room holds one job per module: :mod:`.args` (what a run is asked to do, and its checks),
:mod:`.training` (CleanRL's loop: collect, advantages, update, log), :mod:`.rollout` (the steps of the policy in
every sub-environment), :mod:`.advantages` (GAE on the host, and the interface a GAE core offers instead) and
:mod:`.standardize` (HEPPO's dynamic reward standardization).
"""

from .training import (
    BOUNDS,
    CONTINUOUS_DEFAULTS,
    REWARD_NORMS,
    Args,
    GaeCompute,
    Rollout,
    args_for,
    check_args,
    collect_rollout,
    compute_gae,
    load_checkpoint,
    resolve_args,
    save_checkpoint,
    train,
)

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
