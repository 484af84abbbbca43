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

#: A small build of the ParSa core for the rtl backend (4 dims, 3 actions, 2 workers x 64 rows, 4 keys).
RTL_PARSA_TEST_BOARD = dataclasses.replace(
    S.board(None), name="Pynq-Z2",
    cores=(S.CoreSlot("parsa", S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8,
                                           keys=4), 0x4_0000, 0x5_0000),))


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


@pytest.fixture(autouse=True)
def _end_rtl_simulation():
    """MyHDL allows one live Simulation per process: end the rtl backend's after every test, so a later test's own
    MyHDL simulation (tests/common, tests/*/test_rtl.py) never meets a leftover one."""
    yield
    from pynq_rl.host.backends import rtl
    if rtl._active is not None:
        rtl._active.end("test finished")
