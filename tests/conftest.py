"""Shared fixtures: one overlay per backend (skipped where the backend is absent), rtl simulations that always end.

The boards themselves live in :mod:`tests.common.boards`; test modules import them from there.
"""

import os
import sys
from pathlib import Path

import pytest

# One OpenBLAS thread in every test process and what it starts, set before numpy loads (each worker imports this file
# first). The agents' networks and the models multiply small matrices: a second BLAS thread adds nothing but its
# spin-wait (3.0 of a numpy PPO run's 9.6 CPU seconds were OpenBLAS's in sys time), and on two cores shared by two
# workers and a background rung that spinning takes the core another test needs. A test that reproduces a figure made
# with more threads sets the count itself (the README's main job runs with two).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
if "numpy" in sys.modules:  # too late for this process's BLAS: its subprocesses still get one thread
    import warnings

    warnings.warn("numpy was imported before tests/conftest.py: this process keeps its BLAS threads", stacklevel=1)

from tests.common.boards import BACKENDS, make_overlay

BOARD_SMOKE_FILES = ("gae/test_driver.py", "replay/test_driver.py", "parsa/test_driver.py")
"""the driver tests whose emu cases must pass on the board's ARM (``pytest -m board_smoke``, which
tools/armhf_check.sh runs in a 32-bit ARM userland): they need pytest and the base install only, no torch, numba,
scipy or hypothesis"""


LONGEST_FILES = (
    "agents/test_dqn.py",
    "formal/test_checks.py",
    "test_timing.py",
    "verilator/test_long_sequences.py",
    "agents/test_ppo.py",
    "agents/distributed/test_apex_ray.py",
    "agents/test_ppo_continuous.py",
    "gae/test_rtl.py",
    "parsa/test_build.py",
    "test_docs_extra.py",
    "verilator/test_agents.py",
    "replay/test_resources.py",
    "test_bus_stats.py",
    "test_overlay_report.py",
    "gae/test_verilog.py",
    "test_deadlines.py",
    "test_packaging.py",
    "verilator/test_equivalence.py",
    "test_benchmark_verilator_speed.py",
    "parsa/test_verilog.py",
    "verilator/test_cache_integrity.py",
)
"""the longest files, longest first (``--durations`` summed per file in a clean-clone ``.ci/run``, 2026-12-03, the
larger of the file's default and ``report`` parts): they are collected first, so the two workers (``--dist loadfile
--no-loadscope-reorder`` hands out files in collection order) start on them and the short files fill in at the end,
instead of one long file keeping a worker busy while the other idles"""


def backend_of(item: pytest.Item) -> str | None:
    """The backend a test case runs on: its ``overlay`` fixture's parameter or its own ``backend`` parameter (None for
    a case without one)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get("overlay", params.get("backend"))


def pytest_collection_modifyitems(config, items):
    """Mark ``board_smoke`` the cases of :data:`BOARD_SMOKE_FILES` on ``emu`` and those without a backend; move the
    :data:`LONGEST_FILES` to the front (each file's tests keep their order)."""
    here = Path(__file__).parent
    files = {here / name for name in BOARD_SMOKE_FILES}
    for item in items:
        if item.path in files and backend_of(item) in (None, "emu"):
            item.add_marker(pytest.mark.board_smoke)
    rank = {here / name: index for index, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))  # stable: the rest keep collection order


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


@pytest.fixture(scope="session", autouse=True)
def _sb3_logs_in_pytests_temporary_directory(tmp_path_factory):
    """Stable-Baselines3's logger makes a directory for every run that names none (``SB3-<date>`` in the system's
    temporary directory, empty when nothing is logged): point it at this session's temporary directory, which pytest
    rotates, so the suite leaves nothing in /tmp. Subprocesses started by tests inherit it; a directory set by the
    caller is kept."""
    with pytest.MonkeyPatch.context() as patch:
        if "SB3_LOGDIR" not in os.environ:
            patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield
