"""Synthesis runs of one core's board builds (the replay and ParSa rows of the resource report).

A :class:`BoardBuild` is one core top at one board's parameters on that board's part; :func:`run_board_builds`
converts each distinct spec once, synthesizes every build (in parallel), and returns one row per build with the
core's own columns, the yosys counts and the core's block-memory check. yosys reads the Verilog Vivado gets: its
UltraRAM memories marked ``ram_style = "ultra"`` (the part decides which, :func:`.spec.part_uram_min_bits`), every
other memory with its all-zero initial loop. A build that fails to convert, times out
or makes yosys fail still gets a row, whose ``status`` says why.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import spec as S
from .verilog import URAM_ATTRIBUTE, convert, module_name
from .yosys import DEVICES, synthesize

__all__ = ["BoardBuild", "run_board_builds"]

#: Per spec type: the core's name (``verilog.convert``'s ``core``).
_CORES = {S.ReplaySpec: "replay", S.ParsaSpec: "parsa"}


@dataclass(frozen=True)
class BoardBuild:
    """One synthesis run of a core top (``spec`` a ReplaySpec or ParsaSpec) for a board's part."""

    board: str
    part: str
    spec: Any
    options: str = ""
    """extra ``synth_xilinx`` options"""

    def __post_init__(self) -> None:
        # the memory target is the part's: a spec built for a part with UltraRAM marks its large memories for it
        object.__setattr__(self, "spec", replace(self.spec, uram_min_bits=S.part_uram_min_bits(self.part)))

    @property
    def family(self) -> str:
        return DEVICES[self.part].family

    @property
    def core(self) -> str:
        return _CORES[type(self.spec)]

    @property
    def top(self) -> str:
        return module_name(self.core, self.spec)


def run_board_builds(
    builds: list[BoardBuild],
    work_dir: Path,
    columns: Callable[[Any], dict],
    memory_check: Callable[[BoardBuild, dict], dict],
    jobs: int = 2,
    timeout: float | None = None,
    log=print,
) -> list[dict]:
    """Convert and synthesize ``builds``; one row per build: ``kind``, board, part, module, family, options, the
    core's ``columns(spec)``, the yosys counts and ``memory_check(build, row)`` (``status`` says why a build has
    no counts)."""
    sources: dict[Any, Path | str] = {}  # by (spec, its memory target): uram_min_bits takes no part in comparing specs
    for build in builds:
        key = (build.spec, build.spec.uram_min_bits)
        if key not in sources:
            t0 = time.perf_counter()
            try:
                sources[key] = convert(build.core, build.spec, work_dir / "verilog")
                log(f"converted {build.top} in {time.perf_counter() - t0:.1f} s")
            except Exception as exc:  # noqa: BLE001 - reported, not fatal
                sources[key] = f"conversion failed: {type(exc).__name__}: {exc}"

    def one(build: BoardBuild) -> dict:
        row = {
            "kind": build.core,
            "board": build.board,
            "part": build.part,
            "module": build.top,
            "family": build.family,
            "options": build.options,
            **columns(build.spec),
        }
        path = sources[(build.spec, build.spec.uram_min_bits)]
        if isinstance(path, str):
            return {**row, "status": path.splitlines()[0]}
        try:
            result = synthesize(
                path, build.top, build.family, [], work_dir / "yosys", timeout=timeout, options=build.options
            )
            result.update(status="ok", uram_memories=path.read_text().count(URAM_ATTRIBUTE))
        except subprocess.TimeoutExpired:
            result = {"status": f"timeout after {timeout:.0f} s"}
        except RuntimeError as exc:
            result = {"status": f"yosys failed: {str(exc).splitlines()[0]}"}
        log(
            f"{build.top} {build.family}: {result['status']} "
            + (
                f"LUT {result['lut']} FF {result['ff']} DSP {result['dsp']} BRAM36 {result['bram36']} "
                f"URAM {result['uram']} ({result['runtime[s]']} s)"
                if result["status"] == "ok"
                else ""
            )
        )
        row.update(result)
        if row["status"] == "ok":
            row["memory_check"] = memory_check(build, row)
        return row

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, builds))
