"""The board rungs' scripts in tools/: they parse, tools/armhf_check.sh refuses to run without root and names its
stages, and tools/rllib_check.sh runs its tests only in a venv built before."""

import os
import re
import shutil
import subprocess
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
