"""RL agents that offload their kernels to the pynq-rl overlay, one room each.

- :mod:`.ppo`, :mod:`.dqn`, :mod:`.sarsa`: the agents (``from pynq_rl.host.agents import ppo``;
  ``ppo.train(ppo.Args(...))``), each a package whose ``__init__`` is its public face and whose ``training`` module
  reads top to bottom like CleanRL's file; :mod:`.distributed`: Ape-X (Ray actors, the gRPC replay server).
- :mod:`.nets`: the networks, in torch and in numpy (a PYNQ-Z2's 32-bit ARM has no torch), behind one interface.
- :mod:`.replay`: the prioritized replay buffer and its priority stores (DQN's and the replay server's).
- :mod:`.common`: what every agent shares (checks, command-line options, run directories, environments,
  checkpoints, Ctrl-C, the start-up and summary lines).
- :mod:`.evaluate` and :mod:`.plot`: what reads a finished run (``pynq-rl eval``, ``pynq-rl plot``).

No agent imports another, and nothing is imported here: the agents import gymnasium and, with torch networks, torch.
"""
