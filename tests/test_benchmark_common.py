"""What the benchmark scripts share (benchmarks/_common.py) about BLAS threads: a script run alone trains on one
thread per process, and neither importing a script nor calling its ``main`` leaves that setting behind in the caller
(a test worker whose later subprocesses, the README's main job among them, train with the default threads)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS_THAT_PIN_BLAS = ["agents_nn", "verilator_agents", "ppo_continuous", "gae_encodings"]


def _load(name: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _blas_variables() -> dict[str, str | None]:
    common = _load("_common", "_common")
    return {name: os.environ.get(name) for name in common.BLAS_THREAD_VARIABLES}


@pytest.mark.parametrize("script", SCRIPTS_THAT_PIN_BLAS)
def test_importing_a_script_leaves_the_blas_threads_alone(script, monkeypatch):
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    _load(script, f"imported_{script}")
    assert _blas_variables() == {"OMP_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": None, "MKL_NUM_THREADS": None}


def test_a_script_run_alone_sets_one_thread_before_numpy_loads(tmp_path):
    """Run as ``python benchmarks/<name>.py``, the guard at the top sets the variables (so the BLAS numpy loads after
    it has one thread); ``--help`` stops before any benchmark runs."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, runpy, sys\n"
        "sys.argv = [sys.argv[1], '--help']\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'))\n"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    run = subprocess.run(
        [sys.executable, str(probe), str(BENCHMARKS / "agents_nn.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "1 1"


def test_processes_started_in_the_block_get_one_thread_and_the_caller_keeps_its_own(monkeypatch):
    common = _load("_common", "_common")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the caller's choice wins inside too
    child = [
        sys.executable,
        "-c",
        "import os; print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])",
    ]
    with common.one_blas_thread_per_process():
        seen = subprocess.run(child, capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert seen == ["1", "3"]
    assert _blas_variables() == {"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": None, "MKL_NUM_THREADS": None}
