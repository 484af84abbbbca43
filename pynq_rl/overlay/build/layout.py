"""Where the Vivado flow of the pynq-rl overlay puts its files: the build root (``out/<board>/`` with the converted
Verilog, the generated Tcl, the packaged IP, the projects, reports and logs, the ``.bit`` and ``.hwh``), the Tcl
procedures the scripts ``source``, and the directory the built bitstreams are installed to. The Tcl generators and
the steps of :mod:`.vivado`, the static Tcl check (:mod:`.tclcheck`) and the command line all read it from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import spec as S
from .hwh import OVERLAY_STEM

__all__ = ["BUILD_DIR", "DEFAULT_OUT", "BITSTREAM_DIR", "PROCS_TCL", "BD_NAME", "board_dir_name", "BoardPaths", "paths"]

BUILD_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BUILD_DIR / "out"
BITSTREAM_DIR = BUILD_DIR.parent / "bitstreams"
PROCS_TCL = BUILD_DIR / "tcl" / "procs.tcl"
#: Name of the block design: Vivado names the hardware handoff after it (``pynq_rl.hwh``), as PYNQ needs the
#: ``.hwh`` to share the ``.bit``'s stem.
BD_NAME = OVERLAY_STEM


def board_dir_name(board: S.BoardSpec) -> str:
    """Directory name of a board's build and bitstreams: its name in lower case (``pynq-z2``, ``zcu106``)."""
    return board.name.lower()


@dataclass(frozen=True)
class BoardPaths:
    """Where one board's build puts its files (all under ``out/<board>/``)."""

    root: Path
    """``out/<board>/``"""

    @property
    def verilog(self) -> Path:
        """converted Verilog of the cores"""
        return self.root / "verilog"

    @property
    def tcl(self) -> Path:
        """generated Vivado scripts"""
        return self.root / "tcl"

    @property
    def ip(self) -> Path:
        """packaged IP, one directory per core (the block design's IP repositories)"""
        return self.root / "ip"

    @property
    def project(self) -> Path:
        """the Vivado projects (IP packaging and the overlay)"""
        return self.root / "project"

    @property
    def reports(self) -> Path:
        """timing and utilization reports"""
        return self.root / "reports"

    @property
    def logs(self) -> Path:
        """Vivado logs, one per step"""
        return self.root / "logs"

    @property
    def bit(self) -> Path:
        """the bitstream"""
        return self.root / f"{OVERLAY_STEM}.bit"

    @property
    def hwh(self) -> Path:
        """the hardware handoff copied out of the Vivado project"""
        return self.root / f"{OVERLAY_STEM}.hwh"


def paths(board: S.BoardSpec, out: str | os.PathLike = DEFAULT_OUT) -> BoardPaths:
    """The build directories of ``board`` under ``out``."""
    return BoardPaths(Path(out).resolve() / board_dir_name(board))
