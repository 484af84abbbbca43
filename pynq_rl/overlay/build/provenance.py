"""Where a measurement came from: the commit and the machine, recorded with every benchmark and report.

The benchmarks (``benchmarks/*.py``) and the resource report (:mod:`.report`) store :func:`environment` with their
numbers, as CleanRL's ``autotag`` records the git tag and commit of a run, so a result can be traced to the code
and the machine that produced it.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

import numpy as np

__all__ = ["REPO", "git", "cpu_model", "environment"]

#: The repository root (the checkout this module runs from).
REPO = Path(__file__).resolve().parents[3]


def git(*args: str, cwd: str | Path = REPO) -> str | None:
    """Output of ``git <args>`` in ``cwd`` (stripped), or None where git or the repository is missing."""
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(**extra) -> dict:
    """The run's provenance: UTC ``date``, ``git_commit``, ``git_describe`` (``--tags --always --dirty``), the
    ``python`` and ``numpy`` versions, ``cpu_count``, ``platform``, ``processor`` (CPU model), ``machine`` and the
    1-minute load average at the start (the machine is shared), then ``extra`` (a caller's library versions and
    thread counts)."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git("rev-parse", "HEAD"),
        "git_describe": git("describe", "--tags", "--always", "--dirty"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": cpu_model(),
        "machine": platform.machine(),
        "loadavg_1min_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        **extra,
    }
