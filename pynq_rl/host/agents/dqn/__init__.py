"""Double DQN with prioritized experience replay, priorities on the replay core: the agent's public face.

``from pynq_rl.host.agents import dqn; dqn.train(dqn.Args(...))`` is the API (``pynq-rl train dqn`` calls it).
:mod:`.args` holds what a run is asked to do and its checks, :mod:`.training` checkpoints and CleanRL's loop; the replay
buffer and its priority stores are in :mod:`pynq_rl.host.agents.replay` (Ape-X's replay server shares them), the
Q-networks in :mod:`pynq_rl.host.agents.nets`.
"""

from .training import BOUNDS, Args, check_args, load_checkpoint, save_checkpoint, train

__all__ = ["Args", "BOUNDS", "check_args", "save_checkpoint", "load_checkpoint", "train"]
