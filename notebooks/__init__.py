"""On-board demo notebooks (``pynq get-notebooks pynq-rl``); each also runs in emulation."""
