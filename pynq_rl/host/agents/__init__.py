"""RL agents that offload their kernels to the pynq-rl overlay, one CleanRL-style file each.

The agents (``ppo``, ``dqn``, ``sarsa``, ``distributed.apex``) import gymnasium and, with torch networks, torch, so
they are not imported here; use ``from pynq_rl.host.agents import ppo`` or ``from pynq_rl.host.agents.ppo import
Args, train``. What they share is in ``run`` (run directory, env factory, seeding, checkpoints) and ``learners``
(torch or numpy networks). :class:`RewardStandardizer` (HEPPO's dynamic reward standardization) needs only numpy.
"""

from .standardize import RewardStandardizer

__all__ = ["RewardStandardizer"]
