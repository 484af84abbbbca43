"""Prioritized experience replay on the host: the buffer and the priority stores it samples from.

:mod:`.buffer` is the replay buffer (transitions in numpy, priorities in a sum tree); :mod:`.priorities` the float64
reference sum tree and the replay core behind one interface. DQN samples from them in one process; Ape-X's replay
server (:mod:`pynq_rl.host.agents.distributed`) serves the same stores over gRPC.
"""
