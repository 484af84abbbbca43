"""The board rungs' scripts in tools/: they parse, tools/armhf_check.sh refuses to run without root, names its
stages and selects the emu cases for its board smoke run, and tools/rllib_check.sh runs its tests only in a venv
built before."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
SCRIPTS = ["armhf_check.sh", "pynq_compat_check.sh", "rllib_check.sh", "build_wheel.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_parses(script):
    subprocess.run(["bash", "-n", str(TOOLS / script)], check=True)


def test_armhf_check_refuses_without_root():
    # the script goes in on stdin, from /: an unprivileged user need not be able to read the checkout
    command = ["bash", "-s"]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and no setpriv to drop privileges")
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
    result = subprocess.run(
        command, input=(TOOLS / "armhf_check.sh").read_text(), capture_output=True, text=True, cwd="/", timeout=60
    )
    assert result.returncode == 2
    assert re.match(r"^error: tools/armhf_check\.sh must run as root \(", result.stderr)
    assert result.stdout == ""


def test_armhf_check_names_its_stages(tmp_path):
    """.ci/run builds the userland at the start and runs the checks later: a stage the script does not know stops it at
    once, before the root check and before anything is installed, mounted or built."""
    env = {**os.environ, "ARMHF_CACHE": str(tmp_path / "armhf")}
    result = subprocess.run(
        ["bash", str(TOOLS / "armhf_check.sh"), "check"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr == "error: unknown stage 'check' (expected userland, checks or nothing for both)\n"
    assert not (tmp_path / "armhf").exists()


def test_rllib_check_names_its_stages(tmp_path):
    """.ci/run builds RLlib's venv in the background and runs its tests later: a stage it does not know, or the tests
    without the venv, stop at once with what to do, before anything is built or installed."""
    env = {**os.environ, "RLLIB_CHECK_DIR": str(tmp_path / "rllib")}
    script = str(TOOLS / "rllib_check.sh")
    unknown = subprocess.run(["bash", script, "test"], capture_output=True, text=True, env=env, timeout=60)
    assert unknown.returncode == 2
    assert unknown.stderr == "error: unknown stage 'test' (expected venv, tests or nothing for both)\n"
    no_venv = subprocess.run(["bash", script, "tests"], capture_output=True, text=True, env=env, timeout=60)
    assert no_venv.returncode == 1
    assert no_venv.stderr.startswith(f"error: no venv at {tmp_path}/rllib/venv (run tools/rllib_check.sh venv first)")
    assert not (tmp_path / "rllib" / "dist").exists() and not (tmp_path / "rllib" / "suite").exists()


def test_the_board_smoke_selection_runs_on_emu_only():
    """``pytest -m board_smoke`` on tools/armhf_check.sh's files selects the emu cases and those without a backend,
    whatever a test calls its backend parameter (``overlay`` or ``backend``): an rtl case simulates MyHDL for minutes
    under qemu (the GAE driver's long-rollout case took 142 of the run's 201 s), and the rung's ``pynq-rl doctor
    --backend rtl`` already runs the MyHDL cores on 32 bits."""
    smoke_files = re.search(r"^SMOKE_TESTS=\(([^)]*)\)", (TOOLS / "armhf_check.sh").read_text(), re.M).group(1).split()
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    collected = subprocess.run(
        [*collect, "-m", "board_smoke", *smoke_files],
        capture_output=True,
        text=True,
        cwd=TOOLS.parent,
        timeout=300,
        check=True,
    ).stdout
    ids = [line for line in collected.splitlines() if "::" in line]
    assert len(ids) > 50, collected
    assert [i for i in ids if "[emu" in i], "no emu case selected"
    assert not [i for i in ids if re.search(r"\[(rtl|verilator|board)[\]-]", i)], collected
