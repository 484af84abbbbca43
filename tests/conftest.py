"""Shared fixtures: one overlay per backend (skipped where the backend is absent)."""
import dataclasses

import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.overlay import ON_TARGET
from pynq_rl.overlay import spec as S

BACKENDS = ["emu", "rtl", "board"]

#: The rtl backend simulates every clock in Python (~5k cycles/s): its tests use a small build of the GAE core.
RTL_TEST_BOARD = dataclasses.replace(
    S.board(None), name="Pynq-Z2", cores=(S.CoreSlot("gae", S.GaeSpec(lanes=4, t_max=40), 0x0_0000, 0x1_0000),))

#: A small build of the replay core for the rtl backend (64 leaves, 12-bit leaves: UQ6.6).
RTL_REPLAY_TEST_BOARD = dataclasses.replace(
    S.board(None), name="Pynq-Z2",
    cores=(S.CoreSlot("replay", S.ReplaySpec(k=4, levels=3, leaf=S.QFormat(12, 6, signed=False)), 0x2_0000, 0x3_0000),))


def make_overlay(backend: str, board=None) -> RLOverlay:
    """An RLOverlay on ``backend``, or skip the test where that backend cannot run here."""
    if backend == "board" and not ON_TARGET:
        pytest.skip("board backend needs a PYNQ board")
    if backend == "rtl" and board is None:
        board = RTL_TEST_BOARD
    return RLOverlay(backend=backend, board=board)


@pytest.fixture(params=BACKENDS)
def overlay(request) -> RLOverlay:
    """The default board's overlay on each backend (a small build on rtl)."""
    return make_overlay(request.param)
