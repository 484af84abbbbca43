"""The Vivado flow's Tcl, checked without Vivado: generated Tcl runs in tclsh with recording stubs of an allow-list of
Vivado commands; what it would build (VLNVs, registers, address map, DMA widths, clock) must equal the emulated
``.hwh`` that the drivers bind to; the error paths (missing board files, negative slack, failed runs) fail the
build. The build's other steps and outputs (the ``.hwh`` check, install, link, the Makefile, the board backend's
bitstream lookup) are in ``test_vivado_flow_install.py``."""

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pynq_rl.host import overlay as host_overlay
from pynq_rl.host.backends.device import _metadata_parser
from pynq_rl.host.drivers.gae import GaeCore
from pynq_rl.host.drivers.replay import ReplayCore
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import hwh as hwh_build
from pynq_rl.overlay.build import tclcheck as T
from pynq_rl.overlay.build import vivado as V

BOARD_NAMES = sorted(S.BOARDS)
needs_tclsh = pytest.mark.skipif(
    shutil.which("tclsh") is None and shutil.which("tclsh8.6") is None,
    reason="tclsh not installed (apt-get install tcl; .ci/run installs it)",
)
DRIVERS = {"gae": GaeCore, "replay": ReplayCore}


def _scripts(board: S.BoardSpec, out: Path) -> dict[str, Path]:
    """Every script of ``board``, with a package script for every core (named tops where HDL is missing)."""
    written = V.write_tcl(board, out)
    for slot in board.cores:
        path = out / V.board_dir_name(board) / "tcl" / f"package_{slot.name}.tcl"
        path.write_text(V.package_tcl(board, slot, out, top=f"{slot.name}_core_top"), encoding="utf-8")
        written[f"package_{slot.name}"] = path
    return written


def _run(path: Path, board: S.BoardSpec, **kwargs) -> T.TclRun:
    properties = {"PART_NAME": board.part, **kwargs.pop("properties", {})}
    return T.run_stubbed(path, properties=properties, **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# Static checks: tclsh, allow-list
# ---------------------------------------------------------------------------------------------------------------


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_every_generated_script_passes_tclsh_and_the_allow_list(tmp_path, name):
    board = S.board(name)
    scripts = _scripts(board, tmp_path)
    assert set(scripts) == {"bd", "bitstream"} | {f"package_{slot.name}" for slot in board.cores}
    assert T.check_script(V.PROCS_TCL) is None
    for path in scripts.values():
        run = T.check_script(path, board)
        assert run.calls and run.commands() <= T.VIVADO_COMMANDS | {"file mkdir", "file exists"}
        assert (
            T.command_words(path.read_text()) - T.TCL_BUILTINS - T.defined_procs(V.PROCS_TCL.read_text())
            <= T.VIVADO_COMMANDS
        )


@needs_tclsh
def test_the_check_rejects_commands_outside_the_allow_list_and_wrong_arity(tmp_path):
    static = tmp_path / "static.tcl"
    static.write_text("if {0} {\n    launch_simulation -simset sim_1\n}\n")
    with pytest.raises(T.TclCheckError, match=r"outside the Vivado allow-list: \['launch_simulation'\]"):
        T.check_script(static)
    arity = tmp_path / "arity.tcl"
    arity.write_text(f'source "{V.PROCS_TCL}"\npynq_rl::map_segment a/Data b/c/Reg 0x40000000\n')
    with pytest.raises(T.TclCheckError, match=r'wrong # args: should be "pynq_rl::map_segment space segment'):
        T.check_script(arity)
    dynamic = tmp_path / "dynamic.tcl"
    dynamic.write_text("set x [lindex {a b} 0]\n$x\n")  # 'a' is not a command: only the stubbed run sees it
    with pytest.raises(T.TclCheckError, match=r"command 'a' is not an allow-listed Vivado command"):
        T.check_script(dynamic)
    unbalanced = tmp_path / "unbalanced.tcl"
    unbalanced.write_text("if {1} {\n    puts x\n")
    with pytest.raises(T.TclCheckError, match=r"incomplete Tcl"):
        T.check_script(unbalanced)


def test_tcl_quote_makes_one_literal_word():
    assert V.tcl_quote('a "b" [c] $d {e} \\f\ng') == '"a \\"b\\" \\[c\\] \\$d \\{e\\} \\\\f\\ng"'


@needs_tclsh
def test_tcl_quote_round_trips_through_tclsh(tmp_path):
    text = 'Status; [31:0] {x} $y "z" \\ w'
    script = tmp_path / "quote.tcl"
    script.write_text(f"puts {V.tcl_quote(text)}\n")
    assert subprocess.run([T.tclsh(), str(script)], capture_output=True, text=True).stdout == text + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Board parts, versions, error paths
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_board_parts_are_patterns_without_a_pinned_version(name):
    board = S.board(name)
    vendor, board_id, component, version = board.board_part_pattern.split(":")
    assert (component, version) == ("part0", "*") and board_id == V.board_dir_name(board)
    assert f'pynq_rl::board_part "{board.board_part_pattern}"' in V.bd_tcl(board)


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_the_board_part_comes_from_get_board_parts_with_the_newest_files(tmp_path, name):
    board = S.board(name)
    bd = _scripts(board, tmp_path)["bd"]
    found = f"vendor.com:{V.board_dir_name(board)}:part0:1.0 vendor.com:{V.board_dir_name(board)}:part0:1.2"
    run = _run(bd, board, results={"get_board_parts": found})
    assert run.error is None
    assert run.find("get_board_parts")[0] == ("-quiet", "-latest_file_version", board.board_part_pattern)
    assert ("board_part", found.split()[-1]) == run.find("set_property")[0][:2]


@needs_tclsh
def test_missing_board_files_stop_the_build_with_instructions(tmp_path):
    board = S.board("Pynq-Z2")
    run = _run(_scripts(board, tmp_path)["bd"], board, results={"get_board_parts": ""})
    assert run.error is not None
    assert re.search(
        r"no board part matches '\*:pynq-z2:part0:\*' for Pynq-Z2: its board files are not installed", run.error
    )
    assert "Vivado Store" in run.error and "BOARD_REPO" in run.error
    assert "create_project" not in run.commands()


@needs_tclsh
def test_a_board_part_for_another_fpga_is_refused(tmp_path):
    board = S.board("ZCU106")
    run = _run(_scripts(board, tmp_path)["bd"], board, properties={"PART_NAME": "xczu9eg-ffvb1156-2-e"})
    assert run.error and "is for FPGA xczu9eg-ffvb1156-2-e, the spec says xczu7ev-ffvc1156-2-e" in run.error


@needs_tclsh
def test_board_repo_is_added_to_the_users_board_paths(tmp_path):
    """``set_param board.repoPaths`` replaces the list: BOARD_REPO is appended to what is set (a Vivado_init.tcl,
    the Vivado Store's), once, as FINN's Zynq shell does."""
    board = S.board("Pynq-Z2")
    bd = tmp_path / "bd.tcl"
    bd.write_text(V.bd_tcl(board, tmp_path, board_repo="/opt/boards/pynq-z2"))
    run = _run(bd, board, results={"get_param": "/home/me/boards {/opt/my boards}"})
    assert run.find("get_param") == [("board.repoPaths",)]
    assert run.find("set_param") == [("board.repoPaths", "/home/me/boards {/opt/my boards} /opt/boards/pynq-z2")]
    again = _run(bd, board, results={"get_param": "/opt/boards/pynq-z2 /home/me/boards"})
    assert again.find("set_param") == [("board.repoPaths", "/opt/boards/pynq-z2 /home/me/boards")]
    assert "set_param" not in _run(_scripts(board, tmp_path / "no_repo")["bd"], board).commands()


@needs_tclsh
def test_unsupported_vivado_release_warns_and_supported_ones_do_not(tmp_path):
    board = S.board("Pynq-Z2")
    script = _scripts(board, tmp_path)["bitstream"]
    assert set(V.SUPPORTED_VIVADO) == {"2022.1", "2024.1"}
    for release in V.SUPPORTED_VIVADO:
        assert not any("WARNING" in line for line in _run(script, board, results={"version": release}).output)
    warned = _run(script, board, results={"version": "2023.2"}).output
    assert any(
        line.startswith("WARNING: pynq-rl: Vivado 2023.2 is not one of the supported releases") for line in warned
    )


@needs_tclsh
@pytest.mark.parametrize(
    "slack, message",
    [
        ("-0.125", r"timing not met at 100 MHz: worst setup slack -0.125 ns"),
        ("inf", r"worst setup slack is 'inf', not a finite number"),
        ("", r"worst setup slack is '', not a finite number"),
    ],
)
def test_negative_or_missing_slack_fails_before_the_bitstream(tmp_path, slack, message):
    board = S.board("Pynq-Z2")
    run = _run(_scripts(board, tmp_path)["bitstream"], board, properties={"SLACK": slack})
    assert run.error is not None and re.search(message, run.error)
    assert "write_bitstream" not in run.commands()
    assert "report_utilization" in run.commands() and "report_timing_summary" in run.commands()


@needs_tclsh
def test_positive_slack_writes_the_bitstream_and_negative_hold_slack_does_not(tmp_path):
    board = S.board("ZCU106")
    script = _scripts(board, tmp_path)["bitstream"]
    run = _run(script, board, properties={"SLACK": "0.5"})
    assert run.error is None and run.find("write_bitstream") == [("-force", str(V.paths(board, tmp_path).bit))]
    assert [q[:2] for q in run.find("get_timing_paths")] == [("-delay_type", "max"), ("-delay_type", "min")]
    assert "pynq-rl: timing met at 187.5 MHz: WNS 0.5 ns, WHS 0.5 ns" in run.output
    run = _run(script, board, properties={"SLACK,timing_path_min": "-0.01"})
    assert run.error and "timing not met at 187.5 MHz: worst hold slack -0.01 ns" in run.error
    assert "write_bitstream" not in run.commands()


@needs_tclsh
@pytest.mark.parametrize(
    "run_name, status, progress",
    [
        ("synth_1", "synth_design ERROR", "100%"),
        ("impl_1", "place_design ERROR", "100%"),
        ("impl_1", "route_design Complete!", "80%"),
    ],
)
def test_a_failed_run_stops_the_build(tmp_path, run_name, status, progress):
    board = S.board("Pynq-Z2")
    run = _run(
        _scripts(board, tmp_path)["bitstream"],
        board,
        properties={f"STATUS,{run_name}": status, f"PROGRESS,{run_name}": progress},
    )
    assert run.error and f"{run_name} failed ({status}, {progress})" in run.error
    assert "write_bitstream" not in run.commands()


@needs_tclsh
def test_packaging_without_verilog_says_which_step_is_missing(tmp_path):
    board = S.board("Pynq-Z2")
    run = _run(_scripts(board, tmp_path)["package_gae"], board, file_exists=False)
    assert run.error and "does not exist: run `make verilog` first" in run.error
    assert "create_project" not in run.commands()


# ---------------------------------------------------------------------------------------------------------------
# Consistency: generated Tcl == emulated .hwh == drivers
# ---------------------------------------------------------------------------------------------------------------


def _tcl_registers(run: T.TclRun) -> dict[str, dict]:
    """Registers declared by a stubbed packaging run: name -> {offset, size, access, fields}."""
    props: dict[str, dict[str, str]] = {}
    for args in run.find("set_property"):
        if len(args) == 3:
            props.setdefault(args[2], {})[args[0]] = args[1]
    registers = {}
    for name, block in run.find("ipx::add_register"):
        obj = f"{name}@{block}"
        registers[name] = {
            "address_offset": int(props[obj]["address_offset"], 16),
            "size": int(props[obj]["size"]),
            "access": props[obj]["access"],
            "fields": {},
        }
    for name, reg_obj in run.find("ipx::add_field"):
        obj = f"{name}@{reg_obj}"
        registers[reg_obj.split("@")[0]]["fields"][name] = {
            "bit_offset": int(props[obj]["bit_offset"]),
            "bit_width": int(props[obj]["bit_width"]),
            "access": props[obj]["access"],
        }
    return registers


def _tcl_vlnv(run: T.TclRun) -> str:
    args = run.find("ipx::package_project")[0]
    option = dict(zip(args[::2], args[1::2]))
    core_props = {a[0]: a[1] for a in run.find("set_property") if a[-1].startswith("ipx::current_core")}
    return f"{option['-vendor']}:{option['-library']}:{core_props['name']}:{core_props['version']}"


def _tcl_design(run: T.TclRun) -> dict:
    """What a stubbed block-design run builds: cells with VLNVs, DMA configs, address map, nets, PS config."""
    cells, configs, addresses = {}, {}, {}
    for args in run.find("create_bd_cell"):
        option = dict(zip(args[:-1:2], args[1:-1:2]))
        cells[args[-1]] = option.get("-vlnv", option.get("-type"))
    for args in run.find("set_property"):
        if args[0] == "-dict":
            words = args[1].split()
            configs[args[2]] = {k.removeprefix("CONFIG."): v for k, v in zip(words[::2], words[1::2])}
    for args in run.find("assign_bd_address"):
        if args:
            option = dict(zip(args[:-2:2], args[1:-2:2]))
            addresses[args[-2]] = (
                int(option["-offset"], 16),
                int(option["-range"], 16),
                option["-target_address_space"],
            )
    intf_nets = {tuple(args) for args in run.find("connect_bd_intf_net")}
    return {
        "cells": cells,
        "configs": configs,
        "addresses": addresses,
        "intf_nets": intf_nets,
        "nets": [tuple(a) for a in run.find("connect_bd_net")],
    }


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_generated_tcl_emulated_hwh_and_drivers_agree(tmp_path, name):
    board = S.board(name)
    scripts = _scripts(board, tmp_path)
    ip_dict = _metadata_parser(hwh_build.write_overlay_files(board, tmp_path / "emu").with_suffix(".hwh")).ip_dict
    design = _tcl_design(T.check_script(scripts["bd"], board))
    ol = host_overlay.RLOverlay(backend="emu", board=board)  # the drivers, bound through the emulated .hwh
    ps = V.ps_names(board)
    assert design["cells"][ps["instance"]] == board.ps_vlnv.rsplit(":", 1)[0] + ":9.9"  # newest in the catalog
    assert ps["instance"] in ip_dict

    for slot in board.cores:
        package = T.check_script(scripts[f"package_{slot.name}"], board)
        hwh_core, hwh_dma = ip_dict[f"{slot.name}/core"], ip_dict[f"{slot.name}/dma"]
        # VLNV: packaged == instantiated == emulated == the driver's bindto
        vlnv = _tcl_vlnv(package)
        assert vlnv == S.CORE_VLNVS[slot.name] == design["cells"][f"{slot.name}/core"] == hwh_core["type"]
        if slot.name in DRIVERS:
            driver = getattr(ol, slot.name)
            assert type(driver) is DRIVERS[slot.name] and vlnv in driver.bindto
            assert {reg: r["address_offset"] for reg, r in driver.registers.items()} == {
                reg: r["address_offset"] for reg, r in _tcl_registers(package).items()
            }
            assert driver.mmio.base_addr == board.gp_base + slot.core_offset
            assert 8 * driver.stream_bytes == int(design["configs"][f"{slot.name}/dma"]["c_m_axi_mm2s_data_width"])
        assert design["cells"][slot.name] == "hier"
        assert design["cells"][f"{slot.name}/dma"] == S.AXI_DMA_VLNV.rsplit(":", 1)[0] + ":9.9"
        assert hwh_dma["type"] == S.AXI_DMA_VLNV
        # registers: declared in the IP == in the emulated .hwh (what register_map is built from on a board)
        tcl_regs = _tcl_registers(package)
        hwh_regs = {
            reg: {
                "address_offset": r["address_offset"],
                "size": r["size"],
                "access": r["access"],
                "fields": {f: {k: v[k] for k in ("bit_offset", "bit_width", "access")} for f, v in r["fields"].items()},
            }
            for reg, r in hwh_core["registers"].items()
        }
        assert tcl_regs == hwh_regs
        assert {reg: r["address_offset"] for reg, r in tcl_regs.items()} == {
            reg: r["address_offset"] for reg, r in S.CORE_REGISTERS[slot.name].items()
        }
        # address map: Tcl == emulated .hwh == spec
        space = ps["space"]
        assert (
            design["addresses"][f"{slot.name}/core/s_axi_control/Reg"]
            == (hwh_core["phys_addr"], hwh_core["addr_range"], space)
            == (board.gp_base + slot.core_offset, slot.window, space)
        )
        assert (
            design["addresses"][f"{slot.name}/dma/S_AXI_LITE/Reg"]
            == (hwh_dma["phys_addr"], hwh_dma["addr_range"], space)
            == (board.gp_base + slot.dma_offset, slot.window, space)
        )
        # DMA: configuration in the Tcl == parameters in the emulated .hwh (widths from the core's stream)
        dma_config = design["configs"][f"{slot.name}/dma"]
        assert dma_config == {k: str(v) for k, v in V.dma_config(board, slot).items()}
        for key, value in dma_config.items():
            assert str(hwh_dma["parameters"][key]) == value, key
        assert dma_config["c_m_axi_mm2s_data_width"] == str(8 * slot.spec.stream_bytes)
        # streams: DMA MM2S -> core s_axis, core m_axis -> DMA S2MM
        assert (f"{slot.name}/dma/M_AXIS_MM2S", f"{slot.name}/core/s_axis") in design["intf_nets"]
        assert (f"{slot.name}/core/m_axis", f"{slot.name}/dma/S_AXIS_S2MM") in design["intf_nets"]
        assert any(f"{slot.name}/aclk" in net and f"{ps['instance']}/{ps['clk']}" == net[0] for net in design["nets"])

    # PS: the master and DMA ports of spec.py, PL clock 0 at fclk_mhz, HP port as wide as the widest stream
    ps_config = design["configs"][ps["instance"]]
    clock_key = "PCW_FPGA0_PERIPHERAL_FREQMHZ" if board.arch == "zynq" else "PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ"
    assert float(ps_config[clock_key]) == board.fclk_mhz
    widest = str(max(8 * s.spec.stream_bytes for s in board.cores))
    assert widest in (ps_config.get("PCW_S_AXI_HP0_DATA_WIDTH"), ps_config.get("PSU__SAXIGP2__DATA_WIDTH"))
    assert (f"{ps['instance']}/{board.master_port}", "axi_ctrl/S00_AXI") in design["intf_nets"]
    assert ("axi_mem/M00_AXI", f"{ps['instance']}/{board.dma_port}") in design["intf_nets"]
    assert sorted(set(ip_dict) - {ps["instance"]}) == sorted(
        f"{slot.name}/{cell}" for slot in board.cores for cell in ("core", "dma")
    )


# ---------------------------------------------------------------------------------------------------------------
# What the working flows (PYNQ's base designs, FINN, AMD's packaging guide) do that a first build depends on
# ---------------------------------------------------------------------------------------------------------------


def _ps_config(board: S.BoardSpec, tmp_path: Path) -> dict[str, str]:
    return _tcl_design(T.check_script(_scripts(board, tmp_path)["bd"], board))["configs"][V.ps_names(board)["instance"]]


def _with_gae_stream(name: str, stream_bytes: int, alone: bool = False) -> S.BoardSpec:
    """``name``'s board with the GAE core streaming ``stream_bytes`` per beat (``alone``: the only core)."""
    board = S.board(name)
    gae = board.slot("gae")
    wide = dataclasses.replace(gae, spec=dataclasses.replace(gae.spec, stream_bytes=stream_bytes))
    cores = (wide,) if alone else tuple(wide if slot.name == "gae" else slot for slot in board.cores)
    return dataclasses.replace(board, cores=cores)


@needs_tclsh
@pytest.mark.parametrize(
    "name, override, clock",
    [
        ("ZCU106", "PSU__OVERRIDE__BASIC_CLOCK", "PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ"),
        ("Pynq-Z2", "PCW_OVERRIDE_BASIC_CLOCK", "PCW_FPGA0_PERIPHERAL_FREQMHZ"),
    ],
)
def test_the_ps_takes_the_pl_clock_request_instead_of_the_board_preset(tmp_path, name, override, clock):
    """With the basic-clock override left at the preset's value the PS keeps the preset's PL clock and ignores
    the request; PYNQ's base designs (ZCU104, Pynq-Z2) and FINN's Zynq shell set it to 0 with the frequency."""
    board = S.board(name)
    config = _ps_config(board, tmp_path)
    assert config[override] == "0" and float(config[clock]) == board.fclk_mhz
    assert list(config).index(override) < list(config).index(clock)  # cleared before the request is made


@pytest.mark.parametrize(
    "name, stream_bytes, alone, hp_bits",
    [
        ("Pynq-Z2", 4, True, 32),
        ("Pynq-Z2", 8, False, 64),
        ("Pynq-Z2", 16, False, 64),
        ("ZCU106", 4, True, 32),
        ("ZCU106", 16, False, 128),
        ("ZCU106", 64, False, 128),
    ],
)
def test_the_hp_port_width_is_one_the_ps_has(name, stream_bytes, alone, hp_bits):
    """PS7's S_AXI_HP0 is 32 or 64 bits wide, ZU+'s S_AXI_HP0_FPD 32, 64 or 128: the port takes the narrowest
    width that holds the widest stream, at most its own; a wider stream keeps its DMA at the stream width and the
    memory SmartConnect converts down to the port."""
    board = _with_gae_stream(name, stream_bytes, alone)
    assert V.hp_port_width(board) == hp_bits
    text = V.bd_tcl(board)
    key = "PCW_S_AXI_HP0_DATA_WIDTH" if board.arch == "zynq" else "PSU__SAXIGP2__DATA_WIDTH"
    assert f'CONFIG.{key} "{hp_bits}"' in text
    assert f'CONFIG.c_m_axi_mm2s_data_width "{8 * stream_bytes}"' in text


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_packaged_interfaces_carry_no_fixed_clock_rate(tmp_path, name):
    """The packager's FREQ_HZ (100 MHz by default) on the IP's interfaces would clash with PL clock 0 at another
    rate (BD 41-238 at the ZCU106's 187.5 MHz); removed, the block design propagates the rate of the clock net."""
    board = S.board(name)
    run = T.check_script(_scripts(board, tmp_path)["package_gae"], board)
    removed = [busif for parameter, busif in run.find("ipx::remove_bus_parameter") if parameter == "FREQ_HZ"]
    (clock,) = {args[args.index("-clock") + 1] for args in run.find("ipx::associate_bus_interfaces")}
    assert sorted(removed) == sorted([clock, "busif:s_axi_control", "busif:s_axis", "busif:m_axis"])
    last_removal = max(i for i, call in enumerate(run.calls) if call[0] == "ipx::remove_bus_parameter")
    assert last_removal < [call[0] for call in run.calls].index("ipx::save_core")


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_the_dmas_s2mm_tkeep_is_tied_to_all_ones(tmp_path, name):
    """The cores' m_axis has no TKEEP (every byte is data, the AXI4-Stream default); the DMA's S2MM input is tied
    to all ones explicitly rather than left to the IP's default for an unconnected port."""
    board = S.board(name)
    design = _tcl_design(T.check_script(_scripts(board, tmp_path)["bd"], board))
    for slot in board.cores:
        cell = f"{slot.name}/tkeep_ones"
        assert design["cells"][cell] == "xilinx.com:ip:xlconstant:9.9"
        width = slot.spec.stream_bytes
        assert design["configs"][cell] == {"CONST_WIDTH": str(width), "CONST_VAL": f"0x{(1 << width) - 1:X}"}
        assert (f"{cell}/dout", f"{slot.name}/dma/s_axis_s2mm_tkeep") in design["nets"]


@needs_tclsh
@pytest.mark.parametrize("name", BOARD_NAMES)
def test_dma_parameters_are_set_as_pynqs_base_designs_set_them(tmp_path, name):
    """One ``set_property -dict`` of ``CONFIG.<lower-case name>`` values on the cell, as PYNQ's base.tcl does for
    its DMAs and VDMA; a value set by Tcl is a user value, so no ``VALUE_SRC USER`` is written."""
    board = S.board(name)
    run = T.check_script(_scripts(board, tmp_path)["bd"], board)
    for slot in board.cores:
        (dma,) = [args for args in run.find("set_property") if args[-1] == f"{slot.name}/dma"]
        assert dma[0] == "-dict" and "VALUE_SRC" not in dma[1]
        words = dma[1].split()
        assert all(key.startswith("CONFIG.c_") for key in words[::2])


@needs_tclsh
def test_the_ip_is_named_before_its_files_are_written(tmp_path):
    """As AMD's packaging guide does: vendor, library and taxonomy at ipx::package_project, then name, version and
    display name on the core before the GUI files and component.xml are written."""
    board = S.board("Pynq-Z2")
    run = T.check_script(_scripts(board, tmp_path)["package_gae"], board)
    order = [call[0] if call[0] != "set_property" else f"property {call[1]}" for call in run.calls]
    assert {"-vendor", "-library", "-taxonomy"} <= set(run.find("ipx::package_project")[0])
    steps = ("ipx::package_project", "ipx::create_xgui_files", "ipx::save_core")
    packaged, gui, saved = (order.index(step) for step in steps)
    for prop in ("name", "version", "display_name"):
        assert packaged < order.index(f"property {prop}") < gui < saved
