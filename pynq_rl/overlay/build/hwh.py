"""Write the hardware handoff (``.hwh``) of the pynq-rl overlay for a board, from ``spec.py`` alone.

The file has the shape Vivado writes, reduced to what PYNQ's metadata parser reads (docs/design.md, Emulated overlay
metadata): the processing system with its PL clocks and its master port, one MEMRANGE per AXI-Lite slave, and per core a
hierarchy ``/<core>/`` holding the core (its registers declared, so ``register_map`` works) and its AXI DMA. The
emulated devices hand this file to exactly the parser that reads Vivado's on a board, so the driver path
(``pynq.Overlay`` -> VLNV binding -> MMIO + DMA) is the same everywhere, and the file can be diffed against Vivado's own
once a bitstream is built.

Run ``python -m pynq_rl.overlay.build.hwh --board Pynq-Z2 --out DIR`` to write ``DIR/pynq_rl.hwh``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from .. import spec as S

__all__ = ["hwh_text", "write_overlay_files", "OVERLAY_STEM"]

#: Stem of the overlay files: ``pynq_rl.bit`` + ``pynq_rl.hwh``.
OVERLAY_STEM = "pynq_rl"

#: PL clock source (MHz) by ``BoardSpec.arch``: Zynq-7000's IO PLL, Zynq UltraScale+'s IOPLL. Dividers divide it.
PL_CLOCK_SOURCE_MHZ = {"zynq": 1000.0, "zynq_ultrascale": 1500.0}

_AXIMM = "xilinx.com:interface:aximm:1.0"
_AXIS = "xilinx.com:interface:axis:1.0"


def _sub(parent: ET.Element, tag: str, **attrs: object) -> ET.Element:
    return ET.SubElement(parent, tag, {k: str(v) for k, v in attrs.items()})


def _parameters(parent: ET.Element, params: Mapping[str, object]) -> None:
    node = _sub(parent, "PARAMETERS")
    for name, value in params.items():
        _sub(node, "PARAMETER", NAME=name, VALUE=value)


def _registers(module: ET.Element, interface: str, window: int, table: Mapping[str, dict]) -> None:
    blocks = _sub(module, "ADDRESSBLOCKS")
    block = _sub(
        blocks, "ADDRESSBLOCK", ACCESS="read-write", INTERFACE=interface, NAME="Reg", RANGE=window, USAGE="register"
    )
    regs = _sub(block, "REGISTERS")
    for name, reg in table.items():
        node = _sub(regs, "REGISTER", NAME=name)
        for prop, value in (
            ("DESCRIPTION", reg["description"]),
            ("ADDRESS_OFFSET", hex(reg["address_offset"])),
            ("SIZE", reg["size"]),
            ("ACCESS", reg["access"]),
            ("IS_ENABLED", "true"),
            ("RESET_VALUE", hex(reg.get("reset", 0))),
        ):
            _sub(node, "PROPERTY", NAME=prop, VALUE=value)
        fields = _sub(node, "FIELDS")
        for field_name, fld in reg["fields"].items():
            fnode = _sub(fields, "FIELD", NAME=field_name)
            for prop, value in (
                ("DESCRIPTION", fld["description"]),
                ("ADDRESS_OFFSET", 0),
                ("ACCESS", fld["access"]),
                ("BIT_OFFSET", fld["bit_offset"]),
                ("BIT_WIDTH", fld["bit_width"]),
            ):
                _sub(fnode, "PROPERTY", NAME=prop, VALUE=value)


def _bus(parent: ET.Element, busname: str, name: str, kind: str, vlnv: str, width: int | None = None) -> None:
    attrs = {"BUSNAME": busname, "NAME": name, "TYPE": kind, "VLNV": vlnv}
    if width is not None:
        attrs["DATAWIDTH"] = str(width)
    _sub(parent, "BUSINTERFACE", **attrs)


def _clock_parameters(board: S.BoardSpec) -> dict[str, object]:
    """PL clock 0 at ``fclk_mhz``, clocks 1-3 off, in the PS's own parameter names: the enables and dividers
    pynq's ``clock_dict`` reads, the requested rate and the rate the dividers give (``ACT``), which Vivado writes
    and :func:`.hwh_check.pl_clock` reads."""
    params: dict[str, object] = {}
    source_mhz = PL_CLOCK_SOURCE_MHZ[board.arch]
    div0 = max(1, round(source_mhz / board.fclk_mhz))
    for clk in range(4):
        on = clk == 0
        divisor = div0 if on else (10 if board.arch == "zynq" else 15)
        actual = f"{source_mhz / divisor:.6f}"
        if board.arch == "zynq":
            params[f"PCW_FPGA_FCLK{clk}_ENABLE"] = int(on)
            params[f"PCW_EN_CLK{clk}_PORT"] = int(on)
            params[f"PCW_FCLK{clk}_PERIPHERAL_CLKSRC"] = "IO PLL"
            params[f"PCW_FCLK{clk}_PERIPHERAL_DIVISOR0"] = divisor
            params[f"PCW_FCLK{clk}_PERIPHERAL_DIVISOR1"] = 1
            params[f"PCW_FPGA{clk}_PERIPHERAL_FREQMHZ"] = board.fclk_mhz if on else 100
            params[f"PCW_ACT_FPGA{clk}_PERIPHERAL_FREQMHZ"] = actual
        else:
            params[f"PSU__FPGA_PL{clk}_ENABLE"] = int(on)
            params[f"PSU__CRL_APB__PL{clk}_REF_CTRL__SRCSEL"] = "IOPLL"
            params[f"PSU__CRL_APB__PL{clk}_REF_CTRL__DIVISOR0"] = divisor
            params[f"PSU__CRL_APB__PL{clk}_REF_CTRL__DIVISOR1"] = 1
            params[f"PSU__CRL_APB__PL{clk}_REF_CTRL__FREQMHZ"] = board.fclk_mhz if on else 100
            params[f"PSU__CRL_APB__PL{clk}_REF_CTRL__ACT_FREQMHZ"] = actual
    return params


def _core_parameters(core_spec: object) -> dict[str, object]:
    """The core's build parameters as IP parameters (``C_<NAME>``), as Vivado lists an IP's generics."""
    params: dict[str, object] = {}
    for name, value in vars(core_spec).items():
        if isinstance(value, S.QFormat):
            params[f"C_{name.upper()}_WIDTH"] = value.width
            params[f"C_{name.upper()}_FRAC"] = value.frac
        else:
            params[f"C_{name.upper()}"] = value
    return params


def hwh_text(board: S.BoardSpec) -> str:
    """The ``.hwh`` XML of ``board``'s overlay as a string (deterministic: the same spec gives the same bytes)."""
    ps_instance = "processing_system7_0" if board.arch == "zynq" else "zynq_ultra_ps_e_0"
    ps_modtype = ps_instance.rsplit("_", 1)[0]
    root = ET.Element(
        "EDKSYSTEM", EDWVERSION="1.2", TIMESTAMP="generated from pynq_rl.overlay.spec", VIVADOVERSION="pynq-rl"
    )
    _sub(root, "SYSTEMINFO", ARCH=board.arch, DEVICE=board.part, NAME=OVERLAY_STEM, PACKAGE="", SPEEDGRADE="")
    _sub(root, "EXTERNALPORTS")
    _sub(root, "EXTERNALINTERFACES")
    modules = _sub(root, "MODULES")

    ps = _sub(
        modules,
        "MODULE",
        FULLNAME=f"/{ps_instance}",
        INSTANCE=ps_instance,
        IPTYPE="PERIPHERAL",
        IS_ENABLE="1",
        IS_PL="FALSE",
        MODTYPE=ps_modtype,
        VLNV=board.ps_vlnv,
        HWVERSION=board.ps_vlnv.rsplit(":", 1)[1],
    )
    _parameters(ps, _clock_parameters(board))
    ps_buses = _sub(ps, "BUSINTERFACES")
    _bus(ps_buses, f"{ps_instance}_{board.master_port}", board.master_port, "MASTER", _AXIMM, 32)
    _bus(ps_buses, f"{ps_instance}_{board.dma_port}", board.dma_port, "SLAVE", _AXIMM, 64)
    memory_map = _sub(ps, "MEMORYMAP")

    for slot in board.cores:
        core_instance, dma_instance = f"{slot.name}_core", f"{slot.name}_dma"
        stream_bits = slot.spec.stream_bytes * 8
        for instance, offset, interface in (
            (core_instance, slot.core_offset, "s_axi_control"),
            (dma_instance, slot.dma_offset, "S_AXI_LITE"),
        ):
            base = board.gp_base + offset
            _sub(
                memory_map,
                "MEMRANGE",
                ADDRESSBLOCK="Reg",
                BASENAME="C_BASEADDR",
                BASEVALUE=f"0x{base:08X}",
                HIGHNAME="C_HIGHADDR",
                HIGHVALUE=f"0x{base + slot.window - 1:08X}",
                INSTANCE=instance,
                IS_DATA="TRUE",
                IS_INSTRUCTION="TRUE",
                MASTERBUSINTERFACE=board.master_port,
                MEMTYPE="REGISTER",
                SLAVEBUSINTERFACE=interface,
            )

        vlnv = S.CORE_VLNVS[slot.name]
        core = _sub(
            modules,
            "MODULE",
            FULLNAME=f"/{slot.name}/core",
            INSTANCE=core_instance,
            IPTYPE="PERIPHERAL",
            IS_ENABLE="1",
            MODCLASS="PERIPHERAL",
            MODTYPE=vlnv.split(":")[2],
            VLNV=vlnv,
            HWVERSION=vlnv.rsplit(":", 1)[1],
        )
        _registers(core, "s_axi_control", slot.window, S.CORE_REGISTERS[slot.name])
        _parameters(core, _core_parameters(slot.spec))
        buses = _sub(core, "BUSINTERFACES")
        _bus(buses, f"{slot.name}_axi_lite", "s_axi_control", "SLAVE", _AXIMM, 32)
        _bus(buses, f"{dma_instance}_M_AXIS_MM2S", "s_axis", "SLAVE", _AXIS)
        _bus(buses, f"{core_instance}_m_axis", "m_axis", "MASTER", _AXIS)

        dma = _sub(
            modules,
            "MODULE",
            FULLNAME=f"/{slot.name}/dma",
            INSTANCE=dma_instance,
            IPTYPE="PERIPHERAL",
            IS_ENABLE="1",
            MODCLASS="PERIPHERAL",
            MODTYPE="axi_dma",
            VLNV=S.AXI_DMA_VLNV,
            HWVERSION=S.AXI_DMA_VLNV.rsplit(":", 1)[1],
        )
        _registers(dma, "S_AXI_LITE", slot.window, S.AXI_DMA_REGISTERS)
        _parameters(
            dma,
            {
                "c_include_sg": 0,
                "c_sg_length_width": S.AXI_DMA_LENGTH_WIDTH,
                "c_micro_dma": 0,
                "c_include_mm2s": 1,
                "c_include_s2mm": 1,
                "c_include_mm2s_dre": 0,
                "c_include_s2mm_dre": 0,
                "c_m_axi_mm2s_data_width": stream_bits,
                "c_m_axis_mm2s_tdata_width": stream_bits,
                "c_m_axi_s2mm_data_width": stream_bits,
                "c_s_axis_s2mm_tdata_width": stream_bits,
                "c_mm2s_burst_size": 16,
                "c_s2mm_burst_size": 16,
                "c_addr_width": 32 if board.arch == "zynq" else 64,
            },
        )
        buses = _sub(dma, "BUSINTERFACES")
        _bus(buses, f"{slot.name}_dma_axi_lite", "S_AXI_LITE", "SLAVE", _AXIMM, 32)
        _bus(buses, f"{dma_instance}_M_AXIS_MM2S", "M_AXIS_MM2S", "INITIATOR", _AXIS)
        _bus(buses, f"{core_instance}_m_axis", "S_AXIS_S2MM", "TARGET", _AXIS)
        _bus(buses, f"{ps_instance}_{board.dma_port}", "M_AXI_MM2S", "MASTER", _AXIMM, stream_bits)

    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8" standalone="no" ?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_overlay_files(board: S.BoardSpec, directory: str | os.PathLike) -> Path:
    """Write ``pynq_rl.hwh`` and an empty ``pynq_rl.bit`` for ``board`` into ``directory``; return the .bit path.

    The ``.bit`` is empty because the emulated devices program nothing; PYNQ needs it to exist next to the
    ``.hwh``. Files are rewritten only when their content changes, so concurrent processes can share a directory.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bit, hwh = directory / f"{OVERLAY_STEM}.bit", directory / f"{OVERLAY_STEM}.hwh"
    text = hwh_text(board)
    if not hwh.is_file() or hwh.read_text(encoding="utf-8") != text:
        tmp = hwh.with_suffix(f".hwh.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, hwh)
    if not bit.is_file():
        bit.write_bytes(b"")
    return bit


def emulation_directory(board: S.BoardSpec) -> Path:
    """Per-user cache directory for ``board``'s generated overlay files, keyed by the content of the ``.hwh``."""
    digest = hashlib.sha256(hwh_text(board).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "pynq-rl" / f"{board.name}-{digest}"


def main(argv: list[str] | None = None) -> None:
    """Command line: write the overlay's ``.hwh`` (and empty ``.bit``) for one board."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default=S.DEFAULT_BOARD, help=f"one of {sorted(S.BOARDS)}")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    print(write_overlay_files(S.board(args.board), args.out).with_suffix(".hwh"))


if __name__ == "__main__":
    main()
