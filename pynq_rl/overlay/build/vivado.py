"""The Vivado flow of the pynq-rl overlay: Tcl generated from ``spec.py``, and the steps that run it.

Steps (``python -m pynq_rl.overlay.build <step> --board pynq-z2``, or
``make -C pynq_rl/overlay/build <step> BOARD=...``):

``verilog``
    MyHDL -> Verilog for every core of the board that has HDL (the converter in :mod:`.verilog`); a core without
    a converter yet is skipped with a message.
``tcl``
    write the Vivado scripts into ``out/<board>/tcl/``: ``package_<core>.tcl`` per core, ``bd.tcl``,
    ``bitstream.tcl``. They ``source`` the fixed procedures in ``pynq_rl/overlay/build/tcl/procs.tcl``.
``ip``
    Vivado batch: ``ipx::package_project`` per core, VLNV from spec.py, AXI-Lite/AXI-Stream/clock/reset interfaces,
    every register and field of the core's spec table declared (``ipx::add_register``), so PYNQ's
    ``register_map`` works on the board.
``bd``
    Vivado batch: the block design ``pynq_rl``: the board's PS (board preset), per core a hierarchy ``<core>``
    with ``<core>/core`` and its AXI DMA ``<core>/dma`` (simple mode, widths per spec), SmartConnects for the
    AXI-Lite windows (addresses per spec) and the DMA memory path, PL clock 0 at ``fclk_mhz``; wrapper, targets.
``bitstream``
    Vivado batch: synthesis, implementation to ``route_design``, timing and utilization reports, a failure on
    negative setup or hold slack, then ``write_bitstream``; the hardware handoff ``.hwh`` is copied beside the
    ``.bit`` and checked against spec.py.
``install``
    copy ``out/<board>/pynq_rl.{bit,hwh}`` to ``pynq_rl/overlay/bitstreams/<board>/`` (after checking the ``.hwh``).

Every address, VLNV, register, width and clock in the Tcl comes from ``spec.py``, which also generates the emulated
``.hwh`` (:mod:`.hwh`), so the test suite compares the two without Vivado (:mod:`.tclcheck` runs the Tcl in
``tclsh`` with recording stubs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import spec as S
from .hwh import OVERLAY_STEM
from .hwh_check import HwhMismatch, check_hwh, dma_config, ps_names

__all__ = [
    "SUPPORTED_VIVADO",
    "BUILD_DIR",
    "DEFAULT_OUT",
    "BITSTREAM_DIR",
    "PROCS_TCL",
    "BD_NAME",
    "STEPS",
    "board_dir_name",
    "BoardPaths",
    "paths",
    "tcl_quote",
    "core_converter",
    "step_verilog",
    "package_tcl",
    "bd_tcl",
    "bitstream_tcl",
    "write_tcl",
    "step_tcl",
    "vivado_command",
    "step_ip",
    "step_bd",
    "step_bitstream",
    "step_install",
    "check_hwh",
    "HwhMismatch",
    "write_link",
    "ps_names",
    "dma_config",
]

#: Vivado releases the flow supports, with the PYNQ image built with each (PYNQ-Z2's last image is v3.1).
SUPPORTED_VIVADO: Mapping[str, str] = {"2022.1": "PYNQ v3.0", "2024.1": "PYNQ v3.1"}

BUILD_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BUILD_DIR / "out"
BITSTREAM_DIR = BUILD_DIR.parent / "bitstreams"
PROCS_TCL = BUILD_DIR / "tcl" / "procs.tcl"
#: Name of the block design: Vivado names the hardware handoff after it (``pynq_rl.hwh``), as PYNQ needs the
#: ``.hwh`` to share the ``.bit``'s stem.
BD_NAME = OVERLAY_STEM

#: The build steps in order.
STEPS = ("verilog", "tcl", "ip", "bd", "bitstream", "install")


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


# ---------------------------------------------------------------------------------------------------------------
# Tcl text
# ---------------------------------------------------------------------------------------------------------------

_TCL_SPECIAL = re.compile(r'([\\"$\[\]{}])')


def tcl_quote(value: object) -> str:
    """``value`` as one Tcl word, with no substitution: a double-quoted string with ``\\ " $ [ ] { }`` escaped
    and newlines written as ``\\n``."""
    text = _TCL_SPECIAL.sub(r"\\\1", str(value)).replace("\n", "\\n")
    return f'"{text}"'


def _hex(value: int) -> str:
    return f"0x{value:08X}"


def _header(board: S.BoardSpec, what: str) -> list[str]:
    return [
        f"# {what} for {board.name}: generated by pynq_rl.overlay.build.vivado from spec.py. Do not edit;",
        "# regenerate with `make -C pynq_rl/overlay/build tcl BOARD=...` (spec.py is the single source of truth).",
        f"source {tcl_quote(PROCS_TCL)}",
        "pynq_rl::check_version",
    ]


def _ps_config(board: S.BoardSpec, hp_width: int) -> dict[str, object]:
    """PS properties: the master port for AXI-Lite, the HP port for the DMAs, PL clock 0 at ``fclk_mhz``."""
    if board.arch == "zynq":
        if (board.master_port, board.dma_port) != ("M_AXI_GP0", "S_AXI_HP0"):
            raise ValueError(
                f"{board.name}: the Zynq-7000 flow drives M_AXI_GP0 and S_AXI_HP0, not "
                f"{board.master_port} and {board.dma_port}"
            )
        return {
            "PCW_USE_M_AXI_GP0": 1,
            "PCW_USE_M_AXI_GP1": 0,
            "PCW_USE_S_AXI_HP0": 1,
            "PCW_S_AXI_HP0_DATA_WIDTH": hp_width,
            "PCW_FPGA_FCLK0_ENABLE": 1,
            "PCW_FPGA0_PERIPHERAL_FREQMHZ": _mhz(board.fclk_mhz),
        }
    if (board.master_port, board.dma_port) != ("M_AXI_HPM0_FPD", "S_AXI_HP0_FPD"):
        raise ValueError(
            f"{board.name}: the Zynq UltraScale+ flow drives M_AXI_HPM0_FPD and S_AXI_HP0_FPD, not "
            f"{board.master_port} and {board.dma_port}"
        )
    # Zynq US+ numbering: M_AXI_GP0 = HPM0_FPD, GP1 = HPM1_FPD, GP2 = HPM0_LPD; S_AXI_GP2 = HP0_FPD.
    return {
        "PSU__USE__M_AXI_GP0": 1,
        "PSU__USE__M_AXI_GP1": 0,
        "PSU__USE__M_AXI_GP2": 0,
        "PSU__MAXIGP0__DATA_WIDTH": 32,
        "PSU__USE__S_AXI_GP2": 1,
        "PSU__SAXIGP2__DATA_WIDTH": hp_width,
        "PSU__FPGA_PL0_ENABLE": 1,
        "PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ": _mhz(board.fclk_mhz),
    }


def _mhz(value: float) -> str:
    return f"{value:g}"


def _config_list(config: Mapping[str, object]) -> str:
    return "[list " + " ".join(f"CONFIG.{name} {tcl_quote(value)}" for name, value in config.items()) + "]"


def _module_name(slot: S.CoreSlot) -> str | None:
    converter = core_converter(slot.name)
    return None if converter is None else converter[0](slot.spec)


def package_tcl(
    board: S.BoardSpec, slot: S.CoreSlot, out: str | os.PathLike = DEFAULT_OUT, top: str | None = None
) -> str:
    """Vivado script packaging ``slot``'s core as IP ``CORE_VLNVS[slot.name]`` with its registers declared.

    ``top`` is the Verilog module (default: the name :mod:`.verilog` gives this build). Raises ``ValueError`` if
    the core has no HDL converter yet and no ``top`` is given.
    """
    top = top or _module_name(slot)
    if top is None:
        raise ValueError(
            f"core {slot.name!r} has no HDL yet (pynq_rl/overlay/build/verilog.py MODULE_NAMES has no {slot.name!r})"
        )
    p = paths(board, out)
    vlnv = S.CORE_VLNVS[slot.name]
    lines = _header(board, f"IP packaging of the {slot.name} core")
    lines += [
        f"set core [pynq_rl::package_core {tcl_quote(vlnv)} {tcl_quote(top)} "
        f"{tcl_quote(p.verilog / f'{top}.v')} {tcl_quote(p.ip / slot.name)} "
        f"{tcl_quote(p.project / f'pkg_{slot.name}')} {tcl_quote(board.part)} "
        f"{tcl_quote(f'pynq-rl {slot.name} core ({top}), registers per pynq_rl/overlay/spec.py')}]",
        "pynq_rl::require_bus_interface $core s_axi_control",
        "pynq_rl::require_bus_interface $core s_axis",
        "pynq_rl::require_bus_interface $core m_axis",
        "pynq_rl::clock_and_reset $core aclk aresetn {s_axi_control s_axis m_axis}",
        f"set block [pynq_rl::register_block $core s_axi_control {slot.window}]",
    ]
    for name, reg in S.CORE_REGISTERS[slot.name].items():
        lines.append(
            f"pynq_rl::add_register $block {name} {_hex(reg['address_offset'])} {reg['size']} "
            f"{reg['access']} {tcl_quote(reg['description'])}"
        )
        for field_name, fld in reg["fields"].items():
            lines.append(
                f"pynq_rl::add_field $block {name} {field_name} {fld['bit_offset']} {fld['bit_width']} "
                f"{fld['access']} {tcl_quote(fld['description'])}"
            )
    lines += ["pynq_rl::save_core $core", f'puts "pynq-rl: packaged {vlnv} into {p.ip / slot.name}"']
    return "\n".join(lines) + "\n"


def bd_tcl(board: S.BoardSpec, out: str | os.PathLike = DEFAULT_OUT, board_repo: str = "") -> str:
    """Vivado script creating the overlay project and its block design ``pynq_rl`` for ``board``.

    ``board_repo``: a directory of board files to search first (PYNQ-Z2's are not bundled with Vivado).
    """
    p = paths(board, out)
    ps = ps_names(board)
    n = len(board.cores)
    if not n:
        raise ValueError(f"board {board.name} has no cores")
    hp_width = max(8 * slot.spec.stream_bytes for slot in board.cores)
    lines = _header(board, "Block design")
    lines += [
        f"set board_part [pynq_rl::board_part {tcl_quote(board.board_part_pattern)} {tcl_quote(board.name)} "
        f"{tcl_quote(board.part)} {tcl_quote(board_repo)}]",
        f"create_project -force {BD_NAME} {tcl_quote(p.project / BD_NAME)} -part {tcl_quote(board.part)}",
        "set_property board_part $board_part [current_project]",
        "set_property target_language Verilog [current_project]",
        "set_property ip_repo_paths [list "
        + " ".join(tcl_quote(p.ip / slot.name) for slot in board.cores)
        + "] [current_project]",
        "update_ip_catalog",
        f"create_bd_design {BD_NAME}",
        "",
        f"# processing system: board preset, {board.master_port} for AXI-Lite, {board.dma_port} for the DMAs, "
        f"PL clock 0 at {board.fclk_mhz:g} MHz",
        f"set ps [create_bd_cell -type ip -vlnv [pynq_rl::ipdef {board.ps_vlnv.rsplit(':', 1)[0]}] {ps['instance']}]",
    ]
    if board.arch == "zynq":
        lines.append(
            f"apply_bd_automation -rule {ps['rule']} -config "
            '{make_external "FIXED_IO, DDR" apply_board_preset "1" Master "Disable" Slave "Disable"} $ps'
        )
    else:
        lines.append(f'apply_bd_automation -rule {ps["rule"]} -config {{apply_board_preset "1"}} $ps')
    lines += [
        f"set_property -dict {_config_list(_ps_config(board, hp_width))} $ps",
        "",
        "# reset, interconnects",
        "create_bd_cell -type ip -vlnv [pynq_rl::ipdef xilinx.com:ip:proc_sys_reset] rst_pl",
        f"pynq_rl::smartconnect axi_ctrl 1 {2 * n}",
        f"pynq_rl::smartconnect axi_mem {2 * n} 1",
        f"connect_bd_intf_net [get_bd_intf_pins {ps['instance']}/{board.master_port}] "
        "[get_bd_intf_pins axi_ctrl/[pynq_rl::port S 0]]",
        f"connect_bd_intf_net [get_bd_intf_pins axi_mem/[pynq_rl::port M 0]] "
        f"[get_bd_intf_pins {ps['instance']}/{board.dma_port}]",
    ]
    clocked = [
        f"{ps['instance']}/{ps['master_clk']}",
        f"{ps['instance']}/{ps['slave_clk']}",
        "rst_pl/slowest_sync_clk",
        "axi_ctrl/aclk",
        "axi_mem/aclk",
    ]
    resets = []
    for i, slot in enumerate(board.cores):
        vlnv = S.CORE_VLNVS[slot.name]
        lines += [
            "",
            f"# {slot.name}: {slot.name}/core ({vlnv}) + {slot.name}/dma, {8 * slot.spec.stream_bytes}-bit streams",
            f"pynq_rl::core_hierarchy {slot.name} {tcl_quote(vlnv)} {_config_list(dma_config(board, slot))}",
            f"connect_bd_intf_net [get_bd_intf_pins axi_ctrl/[pynq_rl::port M {2 * i}]] "
            f"[get_bd_intf_pins {slot.name}/S_AXI_CORE]",
            f"connect_bd_intf_net [get_bd_intf_pins axi_ctrl/[pynq_rl::port M {2 * i + 1}]] "
            f"[get_bd_intf_pins {slot.name}/S_AXI_DMA]",
            f"connect_bd_intf_net [get_bd_intf_pins {slot.name}/M_AXI_MM2S] "
            f"[get_bd_intf_pins axi_mem/[pynq_rl::port S {2 * i}]]",
            f"connect_bd_intf_net [get_bd_intf_pins {slot.name}/M_AXI_S2MM] "
            f"[get_bd_intf_pins axi_mem/[pynq_rl::port S {2 * i + 1}]]",
        ]
        clocked.append(f"{slot.name}/aclk")
        resets.append(f"{slot.name}/aresetn")
    lines += [
        "",
        "# one clock (PL clock 0) for everything; resets from the PS through proc_sys_reset",
        f"connect_bd_net [get_bd_pins {ps['instance']}/{ps['clk']}] "
        + " ".join(f"[get_bd_pins {pin}]" for pin in clocked),
        f"connect_bd_net [get_bd_pins {ps['instance']}/{ps['resetn']}] [get_bd_pins rst_pl/ext_reset_in]",
        "connect_bd_net [get_bd_pins rst_pl/interconnect_aresetn] [get_bd_pins axi_ctrl/aresetn] "
        "[get_bd_pins axi_mem/aresetn]",
        "connect_bd_net [get_bd_pins rst_pl/peripheral_aresetn] " + " ".join(f"[get_bd_pins {pin}]" for pin in resets),
        "",
        f"# address map (spec.py): {board.master_port} window at {_hex(board.gp_base)}",
    ]
    for slot in board.cores:
        for cell, interface, offset in (
            (f"{slot.name}/core", "s_axi_control", slot.core_offset),
            (f"{slot.name}/dma", "S_AXI_LITE", slot.dma_offset),
        ):
            lines.append(
                f"pynq_rl::map_segment {ps['space']} {cell}/{interface}/Reg {_hex(board.gp_base + offset)} "
                f"{_hex(slot.window)}"
            )
    lines += [
        "# the DMAs' memory spaces: every PS memory segment they reach, at Vivado's default addresses",
        "assign_bd_address",
        "",
        "validate_bd_design",
        "save_bd_design",
        f"set bd_file [get_files {BD_NAME}.bd]",
        "generate_target all $bd_file",
        "add_files -norecurse [make_wrapper -files $bd_file -top]",
        f"set_property top {BD_NAME}_wrapper [current_fileset]",
        "update_compile_order -fileset sources_1",
        "close_project",
        f'puts "pynq-rl: block design {BD_NAME} for {board.name} in {p.project / BD_NAME}"',
    ]
    return "\n".join(lines) + "\n"


def bitstream_tcl(board: S.BoardSpec, out: str | os.PathLike = DEFAULT_OUT, jobs: int = 4) -> str:
    """Vivado script: synthesis, implementation, reports, timing check (fails on negative slack), bitstream."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, not {jobs!r}")
    p = paths(board, out)
    lines = _header(board, "Synthesis, implementation and bitstream")
    lines += [
        f"open_project {tcl_quote(p.project / BD_NAME / f'{BD_NAME}.xpr')}",
        f"pynq_rl::run_to synth_1 {{}} {jobs}",
        f"pynq_rl::run_to impl_1 route_design {jobs}",
        "open_run impl_1",
        f"file mkdir {tcl_quote(p.reports)}",
        f"pynq_rl::check_timing {tcl_quote(p.reports)} {_mhz(board.fclk_mhz)}",
        f"write_bitstream -force {tcl_quote(p.bit)}",
        "close_project",
        f'puts "pynq-rl: bitstream {p.bit}"',
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------------------------


def core_converter(core: str) -> tuple[Callable, Callable] | None:
    """``(module_name(spec), convert(spec, out_dir))`` of ``core``: :func:`.verilog.module_name` and
    :func:`.verilog.convert` bound to it, or None if the core has no HDL yet (no entry in ``verilog.MODULE_NAMES``)."""
    from . import verilog

    if core not in verilog.MODULE_NAMES:
        return None
    return functools.partial(verilog.module_name, core), functools.partial(verilog.convert, core)


def step_verilog(
    board: S.BoardSpec, out: str | os.PathLike = DEFAULT_OUT, lint: bool = True, echo: Callable[[str], None] = print
) -> dict[str, Path | None]:
    """Convert every core of ``board`` that has HDL to ``out/<board>/verilog/``; return core -> .v (None: skipped).

    Lints with Verilator when ``lint`` and Verilator is installed (a missing Verilator is reported, not fatal:
    Vivado does not need it).
    """
    from . import verilog

    target = paths(board, out).verilog
    result: dict[str, Path | None] = {}
    for slot in board.cores:
        converter = core_converter(slot.name)
        if converter is None:
            echo(
                f"verilog: {slot.name}: skipped, no HDL yet (pynq_rl/overlay/build/verilog.py MODULE_NAMES has no "
                f"{slot.name!r})"
            )
            result[slot.name] = None
            continue
        path = converter[1](slot.spec, target)
        if lint and shutil.which("verilator"):
            verilog.lint(path)
            echo(f"verilog: {slot.name}: {path} (Verilator lint clean)")
        else:
            echo(f"verilog: {slot.name}: {path}" + (" (not linted: verilator not installed)" if lint else ""))
        result[slot.name] = path
    return result


def write_tcl(
    board: S.BoardSpec, out: str | os.PathLike = DEFAULT_OUT, jobs: int = 4, board_repo: str = ""
) -> dict[str, Path]:
    """Write every Vivado script of ``board`` into ``out/<board>/tcl/``; return name -> path.

    Names: ``package_<core>`` for each core that has HDL, ``bd``, ``bitstream``.
    """
    target = paths(board, out).tcl
    target.mkdir(parents=True, exist_ok=True)
    scripts = {
        f"package_{slot.name}": package_tcl(board, slot, out)
        for slot in board.cores
        if core_converter(slot.name) is not None
    }
    scripts["bd"] = bd_tcl(board, out, board_repo)
    scripts["bitstream"] = bitstream_tcl(board, out, jobs)
    written = {}
    for name, text in scripts.items():
        path = target / f"{name}.tcl"
        path.write_text(text, encoding="utf-8")
        written[name] = path
    return written


def step_tcl(
    board: S.BoardSpec,
    out: str | os.PathLike = DEFAULT_OUT,
    jobs: int = 4,
    board_repo: str = "",
    echo: Callable[[str], None] = print,
) -> dict[str, Path]:
    """Write the Vivado scripts and check them statically (tclsh with recording stubs, allow-list; see
    :mod:`.tclcheck`); return name -> path. Raises ``tclcheck.TclCheckError`` on a failed check."""
    from . import tclcheck

    written = write_tcl(board, out, jobs, board_repo)
    for path in written.values():
        tclcheck.check_script(path, board)
        echo(f"tcl: {path} (tclsh + allow-list check passed)")
    return written


def vivado_command(script: Path, log: Path, vivado: str = "vivado") -> list[str]:
    """The batch command line that runs ``script``, logging to ``log``."""
    return [vivado, "-mode", "batch", "-nojournal", "-notrace", "-log", str(log), "-source", str(script)]


def _run_vivado(board: S.BoardSpec, script: Path, step: str, out, vivado: str, echo) -> None:
    exe = shutil.which(vivado)
    if exe is None:
        raise FileNotFoundError(
            f"{vivado!r} not found: the {step} step needs Vivado {' or '.join(SUPPORTED_VIVADO)} on PATH "
            "(source <Vivado>/settings64.sh), see pynq_rl/overlay/bitstreams/README.md"
        )
    p = paths(board, out)
    p.logs.mkdir(parents=True, exist_ok=True)
    command = vivado_command(script, p.logs / f"{step}.log", exe)
    echo(f"{step}: {' '.join(command)}")
    result = subprocess.run(command, cwd=p.root)
    if result.returncode != 0:
        raise RuntimeError(f"Vivado {step} step failed (exit {result.returncode}); see {p.logs / f'{step}.log'}")


def step_ip(
    board: S.BoardSpec,
    out: str | os.PathLike = DEFAULT_OUT,
    vivado: str = "vivado",
    echo: Callable[[str], None] = print,
) -> list[Path]:
    """Package every core with HDL as Vivado IP (needs the Verilog and the Tcl); return the IP directories."""
    p = paths(board, out)
    done = []
    for slot in board.cores:
        script = p.tcl / f"package_{slot.name}.tcl"
        if core_converter(slot.name) is None:
            echo(f"ip: {slot.name}: skipped, no HDL yet")
            continue
        if not script.is_file():
            raise FileNotFoundError(f"{script} missing: run the tcl step first")
        shutil.rmtree(p.ip / slot.name, ignore_errors=True)  # package afresh: no stale component.xml or sources
        _run_vivado(board, script, f"ip_{slot.name}", out, vivado, echo)
        done.append(p.ip / slot.name)
    return done


def _require_all_cores(board: S.BoardSpec, step: str) -> None:
    missing = [slot.name for slot in board.cores if core_converter(slot.name) is None]
    if missing:
        raise RuntimeError(
            f"no {step} for {board.name}: its overlay carries {[s.name for s in board.cores]} but {missing} "
            "have no HDL yet; a bitstream without them would fail the drivers' ID check. Build with a BoardSpec "
            "without them (dataclasses.replace(board, cores=...)) to try the flow on the others."
        )


def step_bd(
    board: S.BoardSpec,
    out: str | os.PathLike = DEFAULT_OUT,
    vivado: str = "vivado",
    echo: Callable[[str], None] = print,
) -> Path:
    """Create the overlay project and block design; return the project directory."""
    _require_all_cores(board, "bd")
    p = paths(board, out)
    _run_vivado(board, p.tcl / "bd.tcl", "bd", out, vivado, echo)
    return p.project / BD_NAME


def step_bitstream(
    board: S.BoardSpec,
    out: str | os.PathLike = DEFAULT_OUT,
    vivado: str = "vivado",
    echo: Callable[[str], None] = print,
) -> tuple[Path, Path]:
    """Synthesize, implement, check timing, write the bitstream; copy the project's ``.hwh`` beside it and check
    it against spec.py. Returns ``(bit, hwh)``."""
    _require_all_cores(board, "bitstream")
    p = paths(board, out)
    _run_vivado(board, p.tcl / "bitstream.tcl", "bitstream", out, vivado, echo)
    if not p.bit.is_file():
        raise RuntimeError(f"Vivado finished but wrote no {p.bit}")
    handoffs = sorted((p.project / BD_NAME).glob(f"**/hw_handoff/{BD_NAME}.hwh"))
    if not handoffs:
        raise RuntimeError(f"no hw_handoff/{BD_NAME}.hwh under {p.project / BD_NAME}")
    shutil.copyfile(max(handoffs, key=lambda f: f.stat().st_mtime), p.hwh)
    check_hwh(p.hwh, board)
    echo(f"bitstream: {p.bit}\nbitstream: {p.hwh} (matches spec.py)")
    return p.bit, p.hwh


def step_install(
    board: S.BoardSpec,
    out: str | os.PathLike = DEFAULT_OUT,
    dest: str | os.PathLike = BITSTREAM_DIR,
    echo: Callable[[str], None] = print,
) -> tuple[Path, Path]:
    """Copy the built ``pynq_rl.bit`` + ``.hwh`` to ``dest/<board>/`` (where ``RLOverlay`` looks on a board),
    after checking the ``.hwh`` against spec.py. Returns the installed ``(bit, hwh)``."""
    p = paths(board, out)
    for path in (p.bit, p.hwh):
        if not path.is_file():
            raise FileNotFoundError(f"{path} missing: run `make bitstream BOARD={board_dir_name(board)}` first")
    check_hwh(p.hwh, board)
    target = Path(dest) / board_dir_name(board)
    target.mkdir(parents=True, exist_ok=True)
    installed = []
    for path in (p.bit, p.hwh):
        shutil.copyfile(path, target / path.name)
        installed.append(target / path.name)
    echo(f"install: {installed[0]}\ninstall: {installed[1]}")
    return installed[0], installed[1]


def write_link(board: S.BoardSpec, url: str, bit: str | os.PathLike, dest: str | os.PathLike = BITSTREAM_DIR) -> Path:
    """Write ``dest/<board>/pynq_rl.bit.link`` (``{"url", "md5sum"}`` of ``bit``), the file pynqutils' overlay
    download resolves into ``pynq_rl.bit`` when the package is installed on a board; return its path."""
    digest = hashlib.md5(Path(bit).read_bytes()).hexdigest()
    target = Path(dest) / board_dir_name(board) / f"{OVERLAY_STEM}.bit.link"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"url": url, "md5sum": digest}, indent=2) + "\n", encoding="utf-8")
    return target
