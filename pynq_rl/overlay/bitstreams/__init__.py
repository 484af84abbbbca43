"""Bitstreams of the overlay per board (``<board>/pynq_rl.bit`` + ``.hwh``); see README.md here."""
