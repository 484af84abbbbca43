"""RL agents that offload their kernels to the pynq-rl overlay, one CleanRL-style file each.

The agents (``ppo``, ``dqn``, ``sarsa``, ``distributed.apex``) import gymnasium and, with torch networks, torch, so
they are not imported here; use ``from pynq_rl.host.agents import ppo`` or ``from pynq_rl.host.agents.ppo import
Args, train``. No agent imports another: what they share is in ``run`` (the backend names, schedules, checkpoint
periods, run directory, env factory, seeding, checkpoints), ``options`` (command-line options from an ``Args``
dataclass), ``learners`` (torch or numpy networks) and ``sarsa_learners`` (the float64 Sarsa reference and the ParSa
core). :class:`RewardStandardizer` (HEPPO's dynamic reward standardization) needs only numpy.
"""

from .standardize import RewardStandardizer

__all__ = ["RewardStandardizer"]
