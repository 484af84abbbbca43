"""Shared fixtures: one overlay per backend (skipped where the backend is absent)."""
import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.overlay import ON_TARGET

BACKENDS = ["emu", "rtl", "board"]


def make_overlay(backend: str, board: str | None = None) -> RLOverlay:
    """An RLOverlay on ``backend``, or skip the test where that backend cannot run here."""
    if backend == "board" and not ON_TARGET:
        pytest.skip("board backend needs a PYNQ board")
    if backend == "rtl":
        pytest.skip("rtl backend (MyHDL simulation) is not built yet: GAE-hardware issue")
    return RLOverlay(backend=backend, board=board)


@pytest.fixture(params=BACKENDS)
def overlay(request) -> RLOverlay:
    """The default board's overlay on each backend."""
    return make_overlay(request.param)
