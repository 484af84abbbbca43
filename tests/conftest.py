"""Shared fixtures: one overlay per backend (skipped where the backend is absent), rtl simulations that always end.

The boards themselves live in :mod:`tests.common.boards`; test modules import them from there.
"""
import pytest

from tests.common.boards import BACKENDS, make_overlay


@pytest.fixture(params=BACKENDS)
def overlay(request):
    """The default board's overlay on each backend (a small build on rtl)."""
    return make_overlay(request.param)


@pytest.fixture
def rtl_simulation():
    """Start MyHDL simulations of a board's cores: ``rtl_simulation(board) -> RtlSimulation``.

    Every simulation it started is ended after the test, pass or fail (a newer one also ends the one before: MyHDL
    allows one live Simulation per process).
    """
    from pynq_rl.host.backends.rtl import RtlSimulation
    started = []

    def start(board, vcd=None):
        started.append(RtlSimulation(board, vcd=vcd))
        return started[-1]

    yield start
    for sim in started:
        sim.end("test finished")


@pytest.fixture(autouse=True)
def _end_rtl_simulation():
    """MyHDL allows one live Simulation per process: end the rtl backend's after every test, so a later test's own
    MyHDL simulation (tests/common, tests/*/test_rtl.py) never meets a leftover one."""
    yield
    from pynq_rl.host.backends import rtl
    if rtl._active is not None:
        rtl._active.end("test finished")
