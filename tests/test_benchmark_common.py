"""The benchmark scripts' BLAS threads: a script run alone trains on one thread per process (its own and the run
processes it spawns, which inherit the setting), and importing a script leaves the importer's environment alone (a
test worker whose later subprocesses, the README's main job among them, train with the default threads)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS_THAT_PIN_BLAS = ["agents_nn", "verilator_agents", "ppo_continuous", "gae_encodings"]
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _load(name: str, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", SCRIPTS_THAT_PIN_BLAS)
def test_importing_a_script_leaves_the_blas_threads_alone(script, monkeypatch):
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    _load(script, f"imported_{script}")
    assert [name for name in BLAS_THREAD_VARIABLES if name in os.environ] == []


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
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    run = subprocess.run(
        [sys.executable, str(probe), str(BENCHMARKS / "agents_nn.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "1 1"
