"""The agents' networks: PPO's actor-critic and DQN's Q-network, in torch and in numpy, behind one interface.

:mod:`.learners` is the one place that picks the backend (torch where it exists, numpy on a PYNQ-Z2's 32-bit ARM,
which has no torch wheel); :mod:`.torch_nets` and :mod:`.numpy_nets` hold the two implementations, :mod:`.numpy_nn`
the small float32 MLPs with backward passes and Adam that the numpy ones are made of. Nothing is imported here, so
that importing the room never imports torch.
"""
