"""Adapters that let other RL libraries use the cores: :mod:`pynq_rl.host.integrations.sb3` (Stable-Baselines3)
and :mod:`pynq_rl.host.integrations.rllib` (RLlib).

Each adapter imports its library on import and names the extra that installs it when the library is missing;
importing this package imports none of them.
"""
