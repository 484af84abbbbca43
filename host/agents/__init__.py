"""RL agents that offload their kernels to the pynq-rl overlay, one CleanRL-style file each.

``ppo`` (PPO with the GAE step on the GAE core) imports torch and gymnasium, so it is not imported here; use
``from pynq_rl.host.agents import ppo`` or ``from pynq_rl.host.agents.ppo import Args, train``.
:class:`RewardStandardizer` (HEPPO's dynamic reward standardization) needs only numpy.
"""
from .standardize import RewardStandardizer

__all__ = ["RewardStandardizer"]
