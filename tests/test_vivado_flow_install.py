"""The Vivado flow's steps and outputs, checked without Vivado: the ``.hwh`` check names every disagreement with
``spec.py``; install copies a build to the board directory and refuses a missing or foreign one; the ``.link`` file
is what pynqutils resolves; the Verilog step, the core tops' ports, the Makefile's order of steps, the rebuild hint
and the board backend's bitstream and board-name lookup behave. The generated Tcl itself (tclsh, allow-list,
consistency with the emulated ``.hwh``) is checked in ``test_vivado_flow.py``."""

import dataclasses
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pynq_rl.host import overlay as host_overlay
from pynq_rl.host.drivers.identity import REBUILD_HINT, BitstreamMismatchError
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import hwh as hwh_build
from pynq_rl.overlay.build import layout
from pynq_rl.overlay.build import vivado as V
from pynq_rl.overlay.build.__main__ import STEP_NAMES
from pynq_rl.overlay.build.__main__ import main as build_main
from pynq_rl.overlay.build.verilog import URAM_ATTRIBUTE

BOARD_NAMES = sorted(S.BOARDS)


# ---------------------------------------------------------------------------------------------------------------
# The .hwh check, install, link
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_check_hwh_accepts_the_emulated_hwh(tmp_path, name):
    board = S.board(name)
    V.check_hwh(hwh_build.write_overlay_files(board, tmp_path).with_suffix(".hwh"), board)


def _mutated_hwh(tmp_path: Path, board: S.BoardSpec, mutate) -> Path:
    path = hwh_build.write_overlay_files(board, tmp_path).with_suffix(".hwh")
    tree = ET.parse(path)
    mutate(tree.getroot())
    tree.write(path)
    return path


def test_check_hwh_names_every_disagreement(tmp_path):
    board = S.board("Pynq-Z2")

    def mutate(root):
        for memrange in root.iter("MEMRANGE"):
            if memrange.get("INSTANCE") == "replay_dma":
                memrange.set("BASEVALUE", "0x40080000")
        for module in root.iter("MODULE"):
            if module.get("FULLNAME") == "/gae/core":
                for reg in module.iter("REGISTER"):
                    if reg.get("NAME") == "GAMMA":
                        for prop in reg.findall("PROPERTY"):
                            if prop.get("NAME") == "ADDRESS_OFFSET":
                                prop.set("VALUE", "0x2c")
            if module.get("FULLNAME") == "/gae/dma":
                for param in module.iter("PARAMETER"):
                    if param.get("NAME") == "c_m_axi_s2mm_data_width":
                        param.set("VALUE", "32")

    path = _mutated_hwh(tmp_path, board, mutate)
    with pytest.raises(V.HwhMismatch) as error:
        V.check_hwh(path, board)
    text = str(error.value)
    assert "/replay/dma: window 0x40080000-0x4003ffff, spec.py 0x40030000-0x4003ffff" in text
    assert "/gae/core.GAMMA: offset 0x2c, spec.py 0x28" in text
    assert "/gae/dma: c_m_axi_s2mm_data_width = 32, spec.py 64" in text


def test_check_hwh_requires_every_core(tmp_path):
    board = S.board("ZCU106")
    small = dataclasses.replace(board, cores=board.cores[:1])
    path = hwh_build.write_overlay_files(small, tmp_path).with_suffix(".hwh")
    with pytest.raises(V.HwhMismatch, match=r"no module /replay/core"):
        V.check_hwh(path, board)


#: PL clock 0 parameters of the PS as Vivado writes them into a .hwh (PYNQ's Pynq-Z2 and ZCU104 base designs),
#: rates as the tools state them: requested, then what the PS's PLL and dividers really give.
VIVADO_PL0 = {
    "Pynq-Z2": {
        "PCW_FPGA0_PERIPHERAL_FREQMHZ": "100",
        "PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ": "100.000000",
        "PCW_EN_CLK0_PORT": "1",
        "PCW_FCLK0_PERIPHERAL_CLKSRC": "IO PLL",
        "PCW_FPGA_FCLK0_ENABLE": "1",
    },
    "ZCU106": {
        "PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ": "187.5",
        "PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ": "187.498123",
        "PSU__CRL_APB__PL0_REF_CTRL__SRCSEL": "IOPLL",
        "PSU__FPGA_PL0_ENABLE": "1",
    },
}


def _with_ps_parameters(tmp_path: Path, board: S.BoardSpec, values: dict[str, str | None]) -> Path:
    """The emulated .hwh with the PS's parameters ``values`` set (None: removed), as Vivado would write them."""

    def mutate(root):
        ps = next(m for m in root.iter("MODULE") if m.get("MODTYPE") == board.ps_vlnv.split(":")[2])
        params = ps.find("PARAMETERS")
        for param in list(params):
            if param.get("NAME") in values:
                params.remove(param)
        for name, value in values.items():
            if value is not None:
                ET.SubElement(params, "PARAMETER", NAME=name, VALUE=value)

    return _mutated_hwh(tmp_path, board, mutate)


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_check_hwh_accepts_the_pl_clock_vivado_reports(tmp_path, name):
    """Vivado's PL0 rate is the PLL's, a hair off the request (187.498 MHz for 187.5): within 0.5% it matches."""
    board = S.board(name)
    path = _with_ps_parameters(tmp_path, board, VIVADO_PL0[name])
    V.check_hwh(path, board)
    clock = V.pl_clock(path, board)
    assert clock.actual_mhz == float(next(v for k, v in VIVADO_PL0[name].items() if "ACT_" in k))
    assert clock.requested_mhz == board.fclk_mhz and clock.enabled


@pytest.mark.parametrize(
    "name, values, message",
    [
        (
            "ZCU106",
            {"PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ": "99.999001"},  # the preset's clock, the request ignored
            r"PL clock 0 runs at 99\.999 MHz \(PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ; requested 187\.5\), "
            r"spec\.py fclk_mhz 187\.5: more than 0\.5% apart",
        ),
        (
            "Pynq-Z2",
            {"PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ": "100.502"},
            r"PL clock 0 runs at 100\.502 MHz \(PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ; requested 100\)",
        ),
        ("Pynq-Z2", {"PCW_FPGA_FCLK0_ENABLE": "0"}, r"PL clock 0 is not enabled \(PCW_FPGA_FCLK0_ENABLE = 0\)"),
        ("Pynq-Z2", {"PCW_EN_CLK0_PORT": "0"}, r"PL clock 0 is not enabled \(PCW_EN_CLK0_PORT = 0\)"),
        ("ZCU106", {"PSU__FPGA_PL0_ENABLE": "0"}, r"PL clock 0 is not enabled \(PSU__FPGA_PL0_ENABLE = 0\)"),
        (
            "ZCU106",
            {"PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ": None},
            r"the PS records no PL clock 0 rate \(PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ\)",
        ),
    ],
)
def test_check_hwh_refuses_a_pl_clock_other_than_spec(tmp_path, name, values, message):
    board = S.board(name)
    path = _with_ps_parameters(tmp_path, board, {**VIVADO_PL0[name], **values})
    with pytest.raises(V.HwhMismatch, match=message):
        V.check_hwh(path, board)


def _fake_build(tmp_path: Path, board: S.BoardSpec) -> V.BoardPaths:
    """A build directory as the bitstream step leaves it (the emulated .hwh standing in for Vivado's)."""
    p = V.paths(board, tmp_path / "out")
    p.root.mkdir(parents=True)
    shutil.copyfile(hwh_build.write_overlay_files(board, tmp_path / "emu").with_suffix(".hwh"), p.hwh)
    p.bit.write_bytes(b"\x00\x09\x0f\xf0 not a real bitstream")
    return p


def test_install_copies_bit_and_hwh_to_the_board_directory(tmp_path, capsys):
    board = S.board("ZCU106")
    p = _fake_build(tmp_path, board)
    assert (
        build_main(
            ["install", "--board", "zcu106", "--out", str(tmp_path / "out"), "--dest", str(tmp_path / "bitstreams")]
        )
        == 0
    )
    target = tmp_path / "bitstreams" / "zcu106"
    assert (target / "pynq_rl.bit").read_bytes() == p.bit.read_bytes()
    assert (target / "pynq_rl.hwh").read_text() == p.hwh.read_text()
    assert f"install: {target / 'pynq_rl.bit'}" in capsys.readouterr().out


def test_install_refuses_a_missing_build_or_a_foreign_hwh(tmp_path, capsys):
    board = S.board("Pynq-Z2")
    out, dest = tmp_path / "out", tmp_path / "bitstreams"
    assert build_main(["install", "--board", "pynq-z2", "--out", str(out), "--dest", str(dest)]) == 1
    assert "pynq_rl.bit missing: run `make bitstream BOARD=pynq-z2` first" in capsys.readouterr().err
    p = _fake_build(tmp_path, board)
    shutil.copyfile(hwh_build.write_overlay_files(S.board("ZCU106"), tmp_path / "zcu").with_suffix(".hwh"), p.hwh)
    with pytest.raises(V.HwhMismatch):
        V.step_install(board, out, dest)
    assert not (dest / "pynq-z2").exists()


def test_link_file_is_what_pynqutils_resolves(tmp_path):
    deliver = pytest.importorskip("pynqutils.setup_utils.deliver_notebooks")
    board = S.board("Pynq-Z2")
    p = _fake_build(tmp_path, board)
    url = "https://example.org/pynq-rl/v1/pynq-z2/pynq_rl.bit"
    link = V.write_link(board, url, p.bit, tmp_path / "bitstreams")
    assert link == tmp_path / "bitstreams" / "pynq-z2" / "pynq_rl.bit.link"
    import hashlib

    assert json.loads(link.read_text()) == {"url": url, "md5sum": hashlib.md5(p.bit.read_bytes()).hexdigest()}
    assert deliver._find_remote_overlay_res("Pynq-Z2", str(link)) == json.loads(link.read_text())


def test_step_verilog_converts_cores_with_a_converter_and_skips_the_others(tmp_path, monkeypatch):
    from pynq_rl.overlay.build import verilog

    converted = []

    def convert_fake(spec, out_dir):
        converted.append(spec)
        path = Path(out_dir) / "fake_core.v"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("module fake_core; endmodule\n")
        return path

    real_convert = verilog.convert
    monkeypatch.setattr(
        verilog,
        "convert",
        lambda core, spec, out_dir: (convert_fake if core == "fake" else real_convert)(spec, out_dir),
    )
    monkeypatch.setitem(verilog.MODULE_NAMES, "fake", lambda spec: "fake_core")
    spec = S.GaeSpec(lanes=2, t_max=8)
    board = dataclasses.replace(
        S.board(None), cores=(S.CoreSlot("fake", spec, 0x0, 0x1_0000), S.CoreSlot("nohdl", spec, 0x2_0000, 0x3_0000))
    )
    lines = []
    result = V.step_verilog(board, tmp_path, lint=False, echo=lines.append)
    assert converted == [spec] and result == {"fake": V.paths(board, tmp_path).verilog / "fake_core.v", "nohdl": None}
    assert lines == [
        f"verilog: fake: {result['fake']}",
        "verilog: nohdl: skipped, no HDL yet (pynq_rl/overlay/build/verilog.py MODULE_NAMES has no 'nohdl')",
    ]
    with pytest.raises(RuntimeError, match=r"\['nohdl'\] have no HDL yet"):
        V.step_bd(board, tmp_path)


@pytest.mark.parametrize("core", ["gae", "replay", "parsa"])
def test_core_tops_have_the_ports_packaging_infers_interfaces_from(core):
    """MyHDL names a converted port ``<argument>_<attribute>``: the tops must take exactly the interfaces that
    procs.tcl requires (s_axi_control, s_axis, m_axis) and the clock/reset it associates (aclk, aresetn)."""
    import inspect

    from pynq_rl.overlay.hdl import top

    if V.core_converter(core) is None:
        pytest.skip(f"no HDL for {core} yet")
    spec = S.board(None).slot(core).spec
    make_top, make_signals = top.CORE_TOPS[core]
    assert list(inspect.signature(make_top.func if hasattr(make_top, "func") else make_top).parameters)[:5] == [
        "s_axi_control",
        "s_axis",
        "m_axis",
        "aclk",
        "aresetn",
    ]
    bus, s_axis, m_axis = make_signals(spec)
    assert {
        "awaddr",
        "awvalid",
        "awready",
        "wdata",
        "wstrb",
        "wvalid",
        "wready",
        "bresp",
        "bvalid",
        "bready",
        "araddr",
        "arvalid",
        "arready",
        "rdata",
        "rresp",
        "rvalid",
        "rready",
    } <= set(vars(bus))
    assert len(bus.awaddr) == (S.board(None).slot(core).window - 1).bit_length()  # the window's 64 KiB
    for stream in (s_axis, m_axis):
        assert {"tdata", "tvalid", "tready", "tlast"} <= set(vars(stream))
        assert len(stream.tdata) == 8 * spec.stream_bytes
    assert "tkeep" not in vars(m_axis)  # so the block design ties the DMA's S2MM TKEEP to all ones (tie_tkeep)


def test_vivado_steps_say_how_to_get_vivado(tmp_path):
    board = dataclasses.replace(S.board(None), cores=S.board(None).cores[:1])
    with pytest.raises(FileNotFoundError, match=r"needs Vivado 2022.1 or 2024.1 on PATH"):
        V.step_bd(board, tmp_path, vivado="vivado-not-installed-here")


# ---------------------------------------------------------------------------------------------------------------
# Makefile, rebuild hint, board backend lookup
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_bitstream_install_runs_the_steps_in_order():
    result = subprocess.run(
        ["make", "-n", "-C", str(V.BUILD_DIR), "bitstream", "install", "BOARD=zcu106", "PYTHON=py"],
        capture_output=True,
        text=True,
        check=True,
    )
    steps = re.findall(r"^py -m pynq_rl\.overlay\.build (\w+) --board zcu106 --out out", result.stdout, re.M)
    assert steps == ["verilog", "tcl", "ip", "bd", "bitstream", "install"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_install_waits_for_the_bitstream_it_copies():
    """``make -j bitstream install`` must not copy before the bitstream exists; ``make install`` alone installs
    the existing build (the step refuses a missing one) instead of starting a rebuild."""

    def prerequisites(*goals: str) -> list[str]:
        result = subprocess.run(
            ["make", "-p", "-n", "-C", str(V.BUILD_DIR), *goals, "BOARD=zcu106", "PYTHON=true"],
            capture_output=True,
            text=True,
            check=True,
        )
        return re.search(r"^install:(.*)$", result.stdout, re.M).group(1).split()

    assert prerequisites("bitstream", "install") == ["bitstream"]
    assert prerequisites("all", "install") == ["all"]
    assert prerequisites("install") == []


def test_the_rebuild_hint_names_the_real_make_command():
    command = re.search(r"`make -C (\S+) (.+) BOARD=<board>`", REBUILD_HINT)
    assert command, REBUILD_HINT
    repo = Path(__file__).resolve().parents[1]
    assert (repo / command.group(1)).resolve() == V.BUILD_DIR
    targets = set(re.findall(r"^([a-z]+):", (V.BUILD_DIR / "Makefile").read_text(), re.M))
    assert set(command.group(2).split()) <= targets


def test_board_backend_finds_the_bitstream_by_the_device_name(tmp_path, monkeypatch):
    import pynq

    from pynq_rl.host.backends.emu import EmuDevice

    board = S.board("ZCU106")
    device = EmuDevice(board)
    device.install_clocks()
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)  # what a board reports
    monkeypatch.setattr(host_overlay, "BITSTREAM_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no bitstream for ZCU106 at .*/zcu106/pynq_rl\.bit"):
        host_overlay.RLOverlay(backend="board")
    hwh_build.write_overlay_files(board, tmp_path / "zcu106")  # what `make install BOARD=zcu106` puts there
    ol = host_overlay.RLOverlay(backend="board")
    assert ol.board_spec is board and Path(ol.bitfile_name) == tmp_path / "zcu106" / "pynq_rl.bit"
    assert ol.gae.read(S.GAE_REGISTERS["LANES"]["address_offset"]) == board.slot("gae").spec.lanes


def test_a_stale_bitstream_is_refused_with_the_rebuild_command(monkeypatch):
    small = dataclasses.replace(S.board("Pynq-Z2"), cores=S.board("Pynq-Z2").cores[:1])
    monkeypatch.setattr(S, "SPEC_VERSION_MAJOR", S.SPEC_VERSION_MAJOR + 1)  # the driver is newer than the PL
    with pytest.raises(BitstreamMismatchError, match=r"make -C pynq_rl/overlay/build bitstream install BOARD=<board>"):
        host_overlay.RLOverlay(backend="emu", board=small)


def test_the_board_name_comes_from_the_image_when_the_device_name_is_xrts(tmp_path, monkeypatch):
    """On a Zynq board ``EmbeddedDevice.name`` is XRT's device name; the PYNQ image names the board in the device
    tree (and in $BOARD)."""
    xrt_device = type("EmbeddedLike", (), {"name": "edge"})()
    monkeypatch.delenv("BOARD", raising=False)
    monkeypatch.setattr(host_overlay, "BOARD_NAME_FILE", tmp_path / "missing")
    assert host_overlay.board_name(xrt_device) is None
    with pytest.raises(ValueError, match=r"cannot tell which board this is"):
        monkeypatch.setattr(host_overlay.pynq.Device, "_active_device", xrt_device, raising=False)
        host_overlay.RLOverlay(backend="board")
    monkeypatch.setenv("BOARD", "ZCU106")
    assert host_overlay.board_name(xrt_device) == "ZCU106"
    chosen = tmp_path / "pynq_board"
    chosen.write_bytes(b"Pynq-Z2\x00")
    monkeypatch.setattr(host_overlay, "BOARD_NAME_FILE", chosen)
    assert host_overlay.board_name(xrt_device) == "Pynq-Z2"
    assert host_overlay.board_name(type("Emulated", (), {"name": "ZCU106"})()) == "ZCU106"
    chosen.write_bytes(b"Ultra96\x00")
    assert host_overlay.board_name(xrt_device) == "Ultra96"  # unsupported: spec.board() names the supported ones
    with pytest.raises(ValueError, match=r"unsupported board: expected one of \['Pynq-Z2', 'ZCU106'\], not 'Ultra96'"):
        host_overlay.RLOverlay(backend="board")


def test_the_first_build_checklist_names_the_files_the_flow_writes():
    """The bitstream README's first-build checklist sends the reader to report and log files: each one is a file the
    flow really writes (the timing procedure's reports, the per-step logs, the layout's directories), and the URAM
    attribute it tells them to look for is the one the Verilog step writes."""
    readme = (V.BITSTREAM_DIR / "README.md").read_text(encoding="utf-8")
    checklist = readme[readme.index("## The first build") : readme.index("## Delivery")]
    procs = V.PROCS_TCL.read_text(encoding="utf-8")
    written = set(re.findall(r"file join \$report_dir (\S+?\.rpt)\]", procs))
    named = set(re.findall(r"`(?:out/<board>/)?reports/(\S+?\.rpt)`|`(\S+?\.rpt)`", checklist))
    named = {a or b for a, b in named}
    assert named and named <= written, f"checklist names {sorted(named - written)}, the flow writes {sorted(written)}"
    board = layout.paths(S.board("ZCU106"), "out")
    assert (board.reports.name, board.logs.name) == ("reports", "logs")
    assert "out/<board>/logs/<step>.log" in checklist
    for step in set(re.findall(r"`(\w+)\.log`", checklist)) - {"runme"}:  # runme.log: Vivado's, per run
        assert step in STEP_NAMES, f"no build step writes {step}.log"
    assert URAM_ATTRIBUTE in checklist
