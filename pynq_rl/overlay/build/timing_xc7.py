"""The timing rung's xc7 flow: Debian yosys ``synth_xilinx -family xc7 -abc9`` and yosys ``sta``, a logic-only
timing figure (xc7 cell delays, no routing) with the resource totals, and the parser of ``sta``'s report. Falls back to
the classic ABC mapping where -abc9 aborts (:data:`XC7_FALLBACK`). :mod:`.timing` drives it per build beside the ECP5
flow (:mod:`.timing_ecp5`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from .timing_tools import TIMEOUTS_S, compress_cells, repo_relative, run_tool
from .yosys import parse_stat, summarize_cells, yosys_binary

__all__ = ["XC7_FALLBACK", "xc7_sta", "parse_sta"]


def parse_sta(log: str) -> dict:
    """The latest-arriving path of yosys ``sta`` (the last report in ``log``).

    Returns
    -------
    dict
        ``arrival[ns]``, ``from`` and ``to`` (cell type and arc), ``cells`` (types along the path, the clock
        buffer left out), ``logic_levels`` (cells between the launching and the capturing element) and
        ``endpoints_without_arrival`` (endpoints behind a cell without timing arcs, e.g. CARRY4 in yosys 0.23).

    Raises
    ------
    ValueError
        ``log`` has no ``sta`` report.
    """
    start = log.rfind("Latest arrival time in")
    if start < 0:
        raise ValueError("no 'Latest arrival time' in the yosys log (did sta run?)")
    match = re.match(r"Latest arrival time in '[^']*' is (\d+):", log[start:])
    if match is None:
        raise ValueError("no arrival time after 'Latest arrival time in' in the yosys log")
    arrival = int(match.group(1))
    listing = []
    for line in log[start:].splitlines()[1:]:
        if not line.strip() or line.startswith("Arrival histogram"):
            break
        if not line.startswith("Warning:"):
            listing.append(line)
    steps = []  # (cell type, arc, input net), endpoint first; type None: a cell without timing arcs
    for index, line in enumerate(listing):
        cell = re.match(r"^\s+\d+ \S+ \((\w+)\.(\S+)\)\s*$", line)
        unknown = re.match(r"^\s+\d+ \(<unknown>\)\s*$", line)
        if (cell and not cell.group(1).startswith("BUFG")) or unknown:
            net = listing[index + 1].strip() if index + 1 < len(listing) else ""
            kind, arc = (cell.group(1), cell.group(2)) if cell else (None, None)
            steps.append((kind, arc, re.sub(r"^\\|\s+", "", net)))
    steps.reverse()
    if not steps:
        raise ValueError("the sta report lists no cells")
    launched = steps[1][2] if len(steps) > 1 else "?"  # the net the first cell drives
    end_kind, end_arc, end_net = steps[-1]
    no_arrival = len(set(re.findall(r"Endpoint (.+?) has no \(\* sta_arrival \*\) value", log[start:])))
    no_arcs = sorted(set(re.findall(r"Module '(\w+)' has no timing arcs", log)))
    return {
        "arrival[ns]": arrival / 1000,
        "from": f"{launched} ({steps[0][0]}.{steps[0][1]})",
        "to": f"{end_net} ({end_kind}.{end_arc})"
        if end_kind
        else f"{end_net} (a cell without timing arcs: the path stops there)",
        "ends_at_untimed_cell": end_kind is None,
        "cells": compress_cells([kind or "?" for kind, _, _ in steps]),
        "logic_levels": max(0, len(steps) - 2),
        "endpoints_without_arrival": no_arrival,
        "cells_without_timing_arcs": no_arcs,
    }


#: What ``xc7_sta`` runs when ``synth_xilinx -abc9`` aborts (yosys 0.23's ABC9_OPS pass throws std::out_of_range
#: on the replay core's Pynq-Z2 build, exit -6): the classic ABC mapping, then the xc7 cell library read again
#: with its ``specify`` blocks, so ``sta`` has delays (CARRY4's included, which the -abc9 flow lacks).
XC7_FALLBACK = "synth_xilinx without -abc9, cells_sim.v re-read with -specify"


def xc7_sta(
    verilog: Path, top: str, run_dir: Path, keep: Sequence[str] = (), timeout_s: float = TIMEOUTS_S["xc7"]
) -> dict:
    """``synth_xilinx -family xc7 -noiopad -abc9`` (Debian yosys) then ``sta``: logic-only xc7 timing.

    ``keep``: registers marked ``keep`` before synthesis (the GAE loop registers, the workaround of yosys's
    DSP-feedback bug, as the resource report does). Returns :func:`parse_sta` with the resource totals
    (:func:`.yosys.summarize_cells`), ``dsp_with_mreg_or_preg``, ``flow`` (``synth_xilinx -abc9``, or
    :data:`XC7_FALLBACK` with ``abc9_error`` when the -abc9 run failed) and ``runtime[s]``.

    Raises
    ------
    FileNotFoundError, RuntimeError, subprocess.TimeoutExpired
        yosys missing, both flows failing, or too slow.
    """
    t0 = time.perf_counter()
    try:
        result = _xc7_sta_run(verilog, top, run_dir, keep, timeout_s, abc9=True)
    except RuntimeError as exc:
        result = _xc7_sta_run(verilog, top, run_dir, keep, timeout_s, abc9=False)
        result["abc9_error"] = str(exc).splitlines()[0]
    result["runtime[s]"] = round(time.perf_counter() - t0, 1)
    return result


def _xc7_sta_run(verilog: Path, top: str, run_dir: Path, keep: Sequence[str], timeout_s: float, abc9: bool) -> dict:
    stem = f"{top}.xc7" if abc9 else f"{top}.xc7_abc"
    synth = f"synth_xilinx -family xc7 -noiopad {'-abc9 ' if abc9 else ''}-top {top}"
    lines = [
        f"read_verilog {verilog.resolve()}",
        f"hierarchy -top {top}",
        *(f"setattr -set keep 1 w:{name}" for name in keep),
        synth,
        f"tee -o {run_dir.resolve() / stem}.stat stat",
        "log @@dsp_registered",
        "select -count t:DSP48* r:MREG!=0 r:PREG!=0 %u %i",
        "select -clear",
        *([] if abc9 else ["read_verilog -lib -specify -overwrite +/xilinx/cells_sim.v"]),
        "sta",
    ]
    script = run_dir / f"{stem}.ys"
    script.write_text("\n".join(lines) + "\n")
    log_file = run_dir / f"{stem}.log"
    run_tool(
        [yosys_binary(), "-q", "-l", str(log_file.resolve()), "-s", str(script.resolve())],
        run_dir,
        timeout_s,
        f"{synth.split(' -top')[0]} + sta of {top}",
    )
    log = log_file.read_text(errors="replace")
    totals = summarize_cells(parse_stat((run_dir / f"{stem}.stat").read_text()))
    registered = re.findall(r"@@dsp_registered\s+(\d+) objects", log)
    return {
        **parse_sta(log),
        **{k: totals[k] for k in ("lut", "ff", "dsp", "bram36", "carry")},
        "dsp_with_mreg_or_preg": int(registered[-1]) if registered else None,
        "flow": "synth_xilinx -abc9" if abc9 else XC7_FALLBACK,
        "log": repo_relative(log_file),
    }
