"""The boards the tests run on: small builds for the rtl backend, and an overlay per backend.

Test modules import these from here (``from tests.common.boards import ...``); ``tests/conftest.py`` turns them into
fixtures. The rtl backend simulates every clock in Python (~5k cycles/s), so its builds are small; the verilator
backend runs the converted Verilog about a thousand times faster, so it gets the boards' shipped builds.
"""

import dataclasses

import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.overlay import ON_TARGET
from pynq_rl.overlay import spec as S

__all__ = [
    "BACKENDS",
    "RTL_TEST_BOARD",
    "RTL_REPLAY_TEST_BOARD",
    "RTL_PARSA_TEST_BOARD",
    "make_overlay",
    "require_verilator",
    "verilator_missing",
]

BACKENDS = ["emu", "rtl", "verilator", "board"]

#: A small build of the GAE core for the rtl backend (4 lanes, 40 timesteps).
RTL_TEST_BOARD = dataclasses.replace(
    S.board(None), name="Pynq-Z2", cores=(S.CoreSlot("gae", S.GaeSpec(lanes=4, t_max=40), 0x0_0000, 0x1_0000),)
)

#: A small build of the replay core for the rtl backend (64 leaves, 12-bit leaves: UQ6.6).
RTL_REPLAY_TEST_BOARD = dataclasses.replace(
    S.board(None),
    name="Pynq-Z2",
    cores=(S.CoreSlot("replay", S.ReplaySpec(k=4, levels=3, leaf=S.QFormat(12, 6, signed=False)), 0x2_0000, 0x3_0000),),
)

#: A small build of the ParSa core for the rtl backend (4 dims, 3 actions, 2 workers x 64 rows, 4 keys).
RTL_PARSA_TEST_BOARD = dataclasses.replace(
    S.board(None),
    name="Pynq-Z2",
    cores=(
        S.CoreSlot(
            "parsa",
            S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4),
            0x4_0000,
            0x5_0000,
        ),
    ),
)


def verilator_missing() -> str | None:
    """Why the verilator backend cannot build models here (what to install), or None where it can."""
    from pynq_rl.host.backends.verilator_build import VerilatorUnavailable, find_verilator

    try:
        find_verilator()
    except VerilatorUnavailable as error:
        return str(error)
    return None


def require_verilator() -> None:
    """Skip the test, with what to install, where the verilator backend cannot build models."""
    missing = verilator_missing()
    if missing:
        pytest.skip(missing)


def make_overlay(backend: str, board=None, cores=None) -> RLOverlay:
    """An RLOverlay on ``backend`` (the small GAE build on rtl unless ``board`` says otherwise; on verilator the
    default board's shipped build), or skip the test where that backend cannot run here."""
    if backend == "board" and not ON_TARGET:
        pytest.skip("board backend needs a PYNQ board")
    if backend == "verilator":
        require_verilator()
    if backend == "rtl" and board is None:
        board = RTL_TEST_BOARD
    return RLOverlay(backend=backend, board=board, cores=cores)
