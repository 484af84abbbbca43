"""The board rungs' scripts in tools/: they parse, and tools/armhf_check.sh refuses to run without root."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
SCRIPTS = ["armhf_check.sh", "pynq_compat_check.sh", "build_wheel.sh"]


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
