"""``python -m pynq_rl.overlay.build <step> --board pynq-z2``: one step of the overlay build (see :mod:`.vivado`).

Steps: ``verilog`` (MyHDL -> Verilog), ``tcl`` (write the Vivado scripts from spec.py and check them in tclsh),
``ip``, ``bd``, ``bitstream`` (Vivado batch), ``install`` (copy the .bit/.hwh into pynq_rl/overlay/bitstreams/<board>/),
``link`` (write the ``pynq_rl.bit.link`` that pynqutils resolves at install time). The Makefile in this directory
calls these; :func:`run_step` is the entry point for other command lines (``pynq-rl build ...``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import spec as S
from . import vivado as V

__all__ = ["run_step", "build_parser", "main", "STEP_NAMES"]

#: Every step this command line runs, in build order (``link`` is separate: it publishes a built bitstream).
STEP_NAMES = ("verilog", "tcl", "ip", "bd", "bitstream", "install", "link")


def run_step(
    step: str,
    board: str | S.BoardSpec | None = None,
    out: str | Path = V.DEFAULT_OUT,
    *,
    jobs: int = 4,
    board_repo: str = "",
    vivado: str = "vivado",
    lint: bool = True,
    dest: str | Path = V.BITSTREAM_DIR,
    url: str | None = None,
    echo: Callable[[str], None] = print,
) -> int:
    """Run one build step for ``board`` (name, case-insensitive, or a BoardSpec); return 0 or raise.

    Parameters
    ----------
    step : str
        One of :data:`STEP_NAMES`.
    board : str, BoardSpec or None
        The board (None: ``spec.DEFAULT_BOARD``).
    out : path
        Build directory root (files go to ``out/<board>/``).
    jobs : int
        Vivado run jobs (``tcl`` step: written into ``bitstream.tcl``).
    board_repo : str
        Extra board-file directory (``tcl`` step: written into ``bd.tcl``; PYNQ-Z2's files are not bundled).
    vivado : str
        The Vivado executable (``ip``, ``bd``, ``bitstream``).
    lint : bool
        Verilator-lint the converted Verilog (``verilog``).
    dest : path
        Where ``install`` and ``link`` put files (``pynq_rl/overlay/bitstreams``).
    url : str or None
        ``link`` only: where the built ``.bit`` is published.

    Raises
    ------
    ValueError
        Unknown step or board; ``link`` without ``url``.
    FileNotFoundError
        A missing tool (tclsh, Vivado) or a missing input of an earlier step.
    RuntimeError
        A failed Vivado step (its log named) or a ``.hwh`` that disagrees with spec.py.
    """
    spec = S.board(board)
    if step == "verilog":
        V.step_verilog(spec, out, lint=lint, echo=echo)
    elif step == "tcl":
        V.step_tcl(spec, out, jobs=jobs, board_repo=board_repo, echo=echo)
    elif step == "ip":
        V.step_ip(spec, out, vivado=vivado, echo=echo)
    elif step == "bd":
        V.step_bd(spec, out, vivado=vivado, echo=echo)
    elif step == "bitstream":
        V.step_bitstream(spec, out, vivado=vivado, echo=echo)
    elif step == "install":
        V.step_install(spec, out, dest=dest, echo=echo)
    elif step == "link":
        if not url:
            raise ValueError("the link step needs --url (where the .bit is published)")
        echo(f"link: {V.write_link(spec, url, V.paths(spec, out).bit, dest)}")
    else:
        raise ValueError(f"step must be one of {STEP_NAMES}, not {step!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m pynq_rl.overlay.build``."""
    parser = argparse.ArgumentParser(
        prog="python -m pynq_rl.overlay.build", description="Build the pynq-rl overlay, one step at a time."
    )
    parser.add_argument("step", choices=STEP_NAMES)
    parser.add_argument("--board", default=None, help=f"one of {sorted(S.BOARDS)} (case-insensitive)")
    parser.add_argument("--out", default=str(V.DEFAULT_OUT), help="build directory root (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=4, help="Vivado run jobs")
    parser.add_argument("--board-repo", default="", help="extra Vivado board-file directory")
    parser.add_argument("--vivado", default="vivado", help="Vivado executable")
    parser.add_argument("--no-lint", action="store_true", help="skip the Verilator lint of the Verilog")
    parser.add_argument("--dest", default=str(V.BITSTREAM_DIR), help="install/link destination root")
    parser.add_argument("--url", default=None, help="link: URL of the published .bit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; prints the error and returns 1 on failure."""
    args = build_parser().parse_args(argv)
    try:
        return run_step(
            args.step,
            args.board,
            args.out,
            jobs=args.jobs,
            board_repo=args.board_repo,
            vivado=args.vivado,
            lint=not args.no_lint,
            dest=args.dest,
            url=args.url,
        )
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {args.step}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
