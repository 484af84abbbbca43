"""What the block design holds according to spec.py (the PS instance and its pins, each core's AXI DMA
configuration), and the check that a ``.hwh`` (Vivado's, or the one :mod:`.hwh` emulates) says the same.

:mod:`.vivado` generates the block-design Tcl from the same :func:`ps_names` and :func:`dma_config`, so the Tcl, the
``.hwh`` and the drivers cannot drift apart unnoticed (``tests/test_vivado_flow.py``; the ``.hwh`` check itself:
``tests/test_vivado_flow_install.py``).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

from .. import spec as S

__all__ = [
    "ps_names",
    "dma_config",
    "HwhMismatch",
    "check_hwh",
    "PL0_PARAMETERS",
    "PL_CLOCK_TOLERANCE",
    "PlClock",
    "pl_clock",
]

#: PL clock 0 in the PS's parameters of a ``.hwh``, by ``BoardSpec.arch``: the rate asked for, the rate the PS's
#: PLL and dividers really give (what Vivado constrains the PL with), and the parameters that must be 1 for the
#: clock to run (Zynq-7000: FCLK0 enabled and its FCLK_CLK0 port present). Names as Vivado writes them (PYNQ's
#: Pynq-Z2 and ZCU104 base designs; pynqmetadata reads the same enables).
PL0_PARAMETERS: Mapping[str, Mapping[str, str | tuple[str, ...]]] = {
    "zynq": {
        "requested": "PCW_FPGA0_PERIPHERAL_FREQMHZ",
        "actual": "PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ",
        "enables": ("PCW_FPGA_FCLK0_ENABLE", "PCW_EN_CLK0_PORT"),
    },
    "zynq_ultrascale": {
        "requested": "PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ",
        "actual": "PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ",
        "enables": ("PSU__FPGA_PL0_ENABLE",),
    },
}

#: How far (relative) the rate PL clock 0 really runs at may be from ``fclk_mhz``: a PLL divided by integers rarely
#: gives the request exactly (ZU+'s IOPLL/8 is 187.498 MHz for 187.5), a preset's rate is far off (100 MHz).
PL_CLOCK_TOLERANCE = 0.005


def ps_names(board: S.BoardSpec) -> dict[str, str]:
    """The PS instance and the names of its pins and address space used by the block design."""
    if board.arch == "zynq":
        return {
            "instance": "processing_system7_0",
            "rule": "xilinx.com:bd_rule:processing_system7",
            "clk": "FCLK_CLK0",
            "resetn": "FCLK_RESET0_N",
            "master_clk": f"{board.master_port}_ACLK",
            "slave_clk": f"{board.dma_port}_ACLK",
            "space": "processing_system7_0/Data",
        }
    if board.arch == "zynq_ultrascale":
        master = board.master_port.replace("M_AXI_", "").lower()  # hpm0_fpd
        slave = board.dma_port.replace("S_AXI_", "").lower()  # hp0_fpd
        return {
            "instance": "zynq_ultra_ps_e_0",
            "rule": "xilinx.com:bd_rule:zynq_ultra_ps_e",
            "clk": "pl_clk0",
            "resetn": "pl_resetn0",
            "master_clk": f"maxi{master}_aclk",
            "slave_clk": f"saxi{slave}_aclk",
            "space": "zynq_ultra_ps_e_0/Data",
        }
    raise ValueError(f"unsupported arch {board.arch!r} of board {board.name}")


def dma_config(board: S.BoardSpec, slot: S.CoreSlot) -> dict[str, object]:
    """The AXI DMA's configuration for ``slot``: simple mode, both channels, widths from the core's stream.

    The names are the IP's own (lower case), the ones the ``.hwh`` reports and :mod:`.hwh` emulates.
    """
    bits = 8 * slot.spec.stream_bytes
    return {
        "c_include_sg": 0,
        "c_sg_length_width": S.AXI_DMA_LENGTH_WIDTH,
        "c_micro_dma": 0,
        "c_include_mm2s": 1,
        "c_include_s2mm": 1,
        "c_include_mm2s_dre": 0,
        "c_include_s2mm_dre": 0,
        "c_m_axi_mm2s_data_width": bits,
        "c_m_axis_mm2s_tdata_width": bits,
        "c_m_axi_s2mm_data_width": bits,
        "c_s_axis_s2mm_tdata_width": bits,
        "c_mm2s_burst_size": 16,
        "c_s2mm_burst_size": 16,
        "c_addr_width": 32 if board.arch == "zynq" else 64,
    }


@dataclass(frozen=True)
class PlClock:
    """PL clock 0 as a ``.hwh`` records it (None where the PS's parameters do not say)."""

    actual_mhz: float | None
    """the rate the PS really generates, which timing was closed at"""
    requested_mhz: float | None
    """the rate the block design asked for"""
    enabled: bool
    """every enable of :data:`PL0_PARAMETERS` is 1"""
    parameter: str
    """the name of the actual-rate parameter"""
    disabled_by: str | None = None
    """the first enable that is not 1, as ``NAME = value``"""


def _float(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _ps_module(root: ET.Element, board: S.BoardSpec) -> ET.Element:
    ps_type = board.ps_vlnv.split(":")[2]
    ps = [m for m in root.iter("MODULE") if m.get("MODTYPE") == ps_type]
    if len(ps) != 1:
        raise HwhMismatch(f"expected one {ps_type} module, found {len(ps)}")
    return ps[0]


def pl_clock(hwh: str | os.PathLike | ET.Element, board: S.BoardSpec) -> PlClock:
    """PL clock 0 of ``board``'s PS in the ``.hwh`` at ``hwh`` (a path or its parsed root).

    Read from the file itself: pynq's ``clock_dict`` holds the enables and dividers on every pynq release but the
    rate only on pynq 4.0's metadata, and there only for Zynq UltraScale+.
    """
    root = ET.parse(hwh).getroot() if not isinstance(hwh, ET.Element) else hwh
    names = PL0_PARAMETERS[board.arch]
    params = _params(_ps_module(root, board))
    disabled = [f"{name} = {params.get(name)}" for name in names["enables"] if params.get(name) != "1"]
    return PlClock(
        actual_mhz=_float(params.get(str(names["actual"]))),
        requested_mhz=_float(params.get(str(names["requested"]))),
        enabled=not disabled,
        parameter=str(names["actual"]),
        disabled_by=disabled[0] if disabled else None,
    )


def _check_pl_clock(root: ET.Element, board: S.BoardSpec) -> list[str]:
    """Disagreements of PL clock 0 in the ``.hwh`` with ``board.fclk_mhz`` (within :data:`PL_CLOCK_TOLERANCE`)."""
    clock = pl_clock(root, board)
    if not clock.enabled:
        return [f"PL clock 0 is not enabled ({clock.disabled_by}): the cores would have no clock"]
    if clock.actual_mhz is None:
        return [f"the PS records no PL clock 0 rate ({clock.parameter})"]
    if abs(clock.actual_mhz - board.fclk_mhz) > PL_CLOCK_TOLERANCE * board.fclk_mhz:
        requested = "none" if clock.requested_mhz is None else f"{clock.requested_mhz:g}"
        return [
            f"PL clock 0 runs at {clock.actual_mhz:g} MHz ({clock.parameter}; requested {requested}), spec.py "
            f"fclk_mhz {board.fclk_mhz:g}: more than {100 * PL_CLOCK_TOLERANCE:g}% apart"
        ]
    return []


class HwhMismatch(ValueError):
    """A ``.hwh`` (Vivado's or the emulated one) disagrees with spec.py."""


def _params(module: ET.Element) -> dict[str | None, str | None]:
    return {p.get("NAME"): p.get("VALUE") for p in module.iter("PARAMETER")}


def check_hwh(path: str | os.PathLike, board: S.BoardSpec) -> None:
    """Check that the ``.hwh`` at ``path`` describes ``board``'s overlay as spec.py does.

    Checked: the PS (by name, not version) and its PL clock 0 (enabled, and the rate it really runs at within
    :data:`PL_CLOCK_TOLERANCE` of ``fclk_mhz``: the cores' rates and timing assume it), per core the instance
    ``/<core>/core`` with its VLNV, register window base and size on the master port, every spec register at its
    offset with its fields, and its DMA ``/<core>/dma`` with its window and stream widths. Vivado's file holds much
    more; extra content is ignored.

    Raises
    ------
    HwhMismatch
        Listing every disagreement.
    """
    root = ET.parse(path).getroot()
    modules = {m.get("FULLNAME"): m for m in root.iter("MODULE")}
    try:
        ps = _ps_module(root, board)
    except HwhMismatch as error:
        raise HwhMismatch(f"{path}: {error}") from None
    problems = _check_pl_clock(root, board)
    ranges = {r.get("INSTANCE"): r for r in ps.iter("MEMRANGE")}
    for slot in board.cores:
        for cell, vlnv, offset in (
            ("core", S.CORE_VLNVS[slot.name], slot.core_offset),
            ("dma", S.AXI_DMA_VLNV, slot.dma_offset),
        ):
            fullname = f"/{slot.name}/{cell}"
            module = modules.get(fullname)
            if module is None:
                problems.append(f"no module {fullname}")
                continue
            got_vlnv = module.get("VLNV", "")
            if got_vlnv.rsplit(":", 1)[0] != vlnv.rsplit(":", 1)[0] or (cell == "core" and got_vlnv != vlnv):
                problems.append(f"{fullname}: VLNV {got_vlnv}, spec.py {vlnv}")
            memrange = ranges.get(module.get("INSTANCE"))
            if memrange is None:
                problems.append(f"{fullname}: not in the PS's address map")
            else:
                base, high = int(memrange.get("BASEVALUE", ""), 16), int(memrange.get("HIGHVALUE", ""), 16)
                want = board.gp_base + offset
                if (base, high) != (want, want + slot.window - 1):
                    problems.append(
                        f"{fullname}: window {base:#x}-{high:#x}, spec.py {want:#x}-{want + slot.window - 1:#x}"
                    )
                if memrange.get("MASTERBUSINTERFACE") != board.master_port:
                    problems.append(
                        f"{fullname}: behind {memrange.get('MASTERBUSINTERFACE')}, spec.py {board.master_port}"
                    )
            if cell == "core":
                problems += _check_registers(fullname, module, S.CORE_REGISTERS[slot.name])
            else:
                params = _params(module)
                for name, value in dma_config(board, slot).items():
                    if name == "c_addr_width":
                        continue  # Vivado may narrow it to the address space it sees
                    if params.get(name) != str(value):
                        problems.append(f"{fullname}: {name} = {params.get(name)}, spec.py {value}")
    if problems:
        raise HwhMismatch(f"{path} disagrees with spec.py for {board.name}:\n  " + "\n  ".join(problems))


def _check_registers(fullname: str, module: ET.Element, table: Mapping[str, dict]) -> list[str]:
    problems = []
    found: dict[str, ET.Element] = {}
    for register in module.iter("REGISTER"):
        found[register.get("NAME", "")] = register
    for name, reg in table.items():
        node = found.get(name)
        if node is None:
            problems.append(f"{fullname}: register {name} not declared")
            continue
        props = {p.get("NAME"): p.get("VALUE") for p in node.findall("PROPERTY")}
        if int(props.get("ADDRESS_OFFSET") or "-1", 0) != reg["address_offset"]:
            problems.append(
                f"{fullname}.{name}: offset {props.get('ADDRESS_OFFSET')}, spec.py {reg['address_offset']:#x}"
            )
        if int(props.get("SIZE") or "0") != reg["size"]:
            problems.append(f"{fullname}.{name}: size {props.get('SIZE')}, spec.py {reg['size']}")
        fields = {
            f.get("NAME"): {p.get("NAME"): p.get("VALUE") for p in f.findall("PROPERTY")} for f in node.iter("FIELD")
        }
        for field_name, fld in reg["fields"].items():
            got = fields.get(field_name)
            if got is None:
                problems.append(f"{fullname}.{name}: field {field_name} not declared")
            elif (int(got.get("BIT_OFFSET") or -1), int(got.get("BIT_WIDTH") or -1)) != (
                fld["bit_offset"],
                fld["bit_width"],
            ):
                problems.append(
                    f"{fullname}.{name}.{field_name}: bits {got.get('BIT_OFFSET')}+"
                    f"{got.get('BIT_WIDTH')}, spec.py {fld['bit_offset']}+{fld['bit_width']}"
                )
    return problems
