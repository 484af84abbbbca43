"""The supported boards: each overlay's composition and address map (:class:`CoreSlot`, :class:`BoardSpec`,
``BOARDS``, :func:`board`), the part's memory target (:func:`part_uram_min_bits`), the AXI DMA every core streams
through (:data:`AXI_DMA_REGISTERS`), and the per-core lookup tables (``CORE_REGISTERS``, ``CORE_VLNVS``,
``CORE_MAGICS``, :data:`CORE_MODES`).

The last module of the package's import order, since a board holds every core's spec: it is the one module that
knows all the register tables, so it is where they are all checked when the package is imported.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeAlias

from .gae import GAE_MAGIC, GAE_REGISTERS, GAE_VLNV, GaeMode, GaeSpec
from .parsa import PARSA_MAGIC, PARSA_REGISTERS, PARSA_VLNV, ParsaMode, ParsaSpec
from .registers import READ_WRITE, _register, check_register_table
from .replay import REPLAY_MAGIC, REPLAY_REGISTERS, REPLAY_VLNV, ReplayMode, ReplaySpec

CoreSpec: TypeAlias = GaeSpec | ReplaySpec | ParsaSpec
"""the build parameters of any core (what a :class:`CoreSlot` holds)"""

#: UltraRAM blocks (URAM288) of the supported parts that have any, by device (the part name before its package):
#: UltraScale+ only, and not every UltraScale+ part (DS891). Parts not listed have none.
ULTRARAM_BLOCKS: Mapping[str, int] = MappingProxyType({"xczu7ev": 96})
#: Bits of one URAM288 (4K x 72): the smallest memory :func:`part_uram_min_bits` sends to UltraRAM.
URAM288_BITS = 4096 * 72


def part_uram_min_bits(part: str) -> int:
    """The ``uram_min_bits`` of a core built for ``part``: one URAM288's bits where the part has UltraRAM, else 0.

    A memory of at least a URAM288 fills the block's 4K x 72 (a replay tree level of 4,096+ words, a ParSa policy
    bank of 4,096 rows) and takes far fewer blocks there than in RAMB36; a smaller one would leave most of a
    288 Kbit block empty, so it stays block RAM (or LUT-RAM), where Vivado's defaults put it.
    """
    return URAM288_BITS if ULTRARAM_BLOCKS.get(part.split("-")[0].lower(), 0) else 0


@dataclass(frozen=True)
class CoreSlot:
    """One core in an overlay: its hierarchy name, spec, and where its registers and its DMA sit."""

    name: str
    """hierarchy name; the core is ``ol.<name>.core`` and its DMA ``ol.<name>.dma``"""
    spec: CoreSpec
    """the core's build parameters (GaeSpec, ReplaySpec or ParsaSpec)"""
    core_offset: int
    """offset of the core's AXI-Lite window from the board's GP base"""
    dma_offset: int
    """offset of the AXI DMA's AXI-Lite window from the board's GP base"""
    window: int = 0x1_0000
    """bytes of each AXI-Lite window"""


@dataclass(frozen=True)
class BoardSpec:
    """A supported board: its PS, the AXI ports the overlay uses and the cores it carries."""

    name: str
    """board name as PYNQ reports it (``pynq.Device.active_device.name``)"""
    part: str
    """FPGA part"""
    ps_vlnv: str
    """VLNV of the processing system IP"""
    arch: str
    """'zynq' (Zynq-7000) or 'zynq_ultrascale' (Zynq UltraScale+)"""
    master_port: str
    """PS master port that carries AXI-Lite"""
    dma_port: str
    """PS slave port the DMAs write through"""
    gp_base: int
    """base address of the master port's window"""
    fclk_mhz: float
    """PL clock 0, which clocks the cores"""
    cores: tuple[CoreSlot, ...] = field(default_factory=tuple)
    """the cores in this board's overlay"""
    board_part_pattern: str = ""
    """Vivado board part as a ``get_board_parts`` pattern, version left open (``*:pynq-z2:part0:*``): the build
    takes the newest installed board files instead of pinning a version"""

    def __post_init__(self) -> None:
        # the memory target is the part's: each core spec that has one gets it from here, not from a literal per slot
        threshold = part_uram_min_bits(self.part)
        cores = tuple(
            replace(slot, spec=replace(slot.spec, uram_min_bits=threshold))
            if isinstance(slot.spec, (ReplaySpec, ParsaSpec))
            else slot
            for slot in self.cores
        )
        object.__setattr__(self, "cores", cores)

    def slot(self, name: str) -> CoreSlot:
        """The core slot called ``name``; ``KeyError`` names the cores that exist."""
        for slot in self.cores:
            if slot.name == name:
                return slot
        raise KeyError(f"board {self.name} has no core {name!r}; it has {[s.name for s in self.cores]}")


BOARDS: Mapping[str, BoardSpec] = MappingProxyType(
    {
        "Pynq-Z2": BoardSpec(
            name="Pynq-Z2",
            part="xc7z020clg400-1",
            ps_vlnv="xilinx.com:ip:processing_system7:5.5",
            arch="zynq",
            master_port="M_AXI_GP0",
            dma_port="S_AXI_HP0",
            gp_base=0x4000_0000,
            fclk_mhz=100.0,
            cores=(
                CoreSlot("gae", GaeSpec(lanes=8, stream_bytes=8), 0x0_0000, 0x1_0000),
                CoreSlot("replay", ReplaySpec(k=16, levels=4), 0x2_0000, 0x3_0000),
                CoreSlot(
                    "parsa", ParsaSpec(workers=4, tiles_per_worker=1024, max_tilings=64, keys=16), 0x4_0000, 0x5_0000
                ),
            ),
            board_part_pattern="*:pynq-z2:part0:*",
        ),
        "ZCU106": BoardSpec(
            name="ZCU106",
            part="xczu7ev-ffvc1156-2-e",
            ps_vlnv="xilinx.com:ip:zynq_ultra_ps_e:3.5",
            arch="zynq_ultrascale",
            master_port="M_AXI_HPM0_FPD",
            dma_port="S_AXI_HP0_FPD",
            gp_base=0xA000_0000,
            fclk_mhz=187.5,
            cores=(
                CoreSlot("gae", GaeSpec(lanes=64, stream_bytes=16), 0x0_0000, 0x1_0000),
                CoreSlot("replay", ReplaySpec(k=16, levels=5), 0x2_0000, 0x3_0000),
                # 8 workers: with 16, ParSa's policy banks (48 URAM) and key rows (16) plus the
                # replay tree's 62 URAM exceed the XCZU7EV's 96 (whole-overlay synthesis)
                CoreSlot(
                    "parsa", ParsaSpec(workers=8, tiles_per_worker=4096, max_tilings=32, keys=256), 0x4_0000, 0x5_0000
                ),
            ),
            board_part_pattern="xilinx.com:zcu106:part0:*",
        ),
    }
)

#: The board assumed off-board when none is named.
DEFAULT_BOARD = "Pynq-Z2"

#: The AXI DMA's direct-register-mode registers (PG021, table 2-6) that the emulated DMA serves and the stock
#: ``pynq.lib.dma.DMA`` driver uses. MM2S reads memory into the core's input stream; S2MM writes its output.
AXI_DMA_REGISTERS = MappingProxyType(
    {
        "MM2S_DMACR": _register(
            0x00,
            READ_WRITE,
            "MM2S control",
            {
                "RS": (0, 1, "run/stop"),
                "Reset": (2, 1, "soft reset (auto-clears)"),
                "IOC_IrqEn": (12, 1, "IOC irq"),
                "Err_IrqEn": (14, 1, "error irq"),
            },
            reset=0x0001_0000,
            pulse={"Reset": True},
        ),
        "MM2S_DMASR": _register(
            0x04,
            READ_WRITE,
            "MM2S status (irq bits write-1-to-clear)",
            {
                "Halted": (0, 1, "channel halted"),
                "Idle": (1, 1, "channel idle"),
                "DMAIntErr": (4, 1, "internal error"),
                "DMASlvErr": (5, 1, "slave error"),
                "DMADecErr": (6, 1, "decode error"),
                "IOC_Irq": (12, 1, "completed"),
                "Err_Irq": (14, 1, "error irq"),
            },
            reset=0x0001_0001,
        ),
        "MM2S_SA": _register(0x18, READ_WRITE, "MM2S source address"),
        "MM2S_SA_MSB": _register(0x1C, READ_WRITE, "MM2S source address, upper 32 bits"),
        "MM2S_LENGTH": _register(0x28, READ_WRITE, "MM2S bytes to transfer; writing it starts the transfer"),
        "S2MM_DMACR": _register(
            0x30,
            READ_WRITE,
            "S2MM control",
            {
                "RS": (0, 1, "run/stop"),
                "Reset": (2, 1, "soft reset (auto-clears)"),
                "IOC_IrqEn": (12, 1, "IOC irq"),
                "Err_IrqEn": (14, 1, "error irq"),
            },
            reset=0x0001_0000,
            pulse={"Reset": True},
        ),
        "S2MM_DMASR": _register(
            0x34,
            READ_WRITE,
            "S2MM status (irq bits write-1-to-clear)",
            {
                "Halted": (0, 1, "channel halted"),
                "Idle": (1, 1, "channel idle"),
                "DMAIntErr": (4, 1, "internal error"),
                "DMASlvErr": (5, 1, "slave error"),
                "DMADecErr": (6, 1, "decode error"),
                "IOC_Irq": (12, 1, "completed"),
                "Err_Irq": (14, 1, "error irq"),
            },
            reset=0x0001_0001,
        ),
        "S2MM_DA": _register(0x48, READ_WRITE, "S2MM destination address"),
        "S2MM_DA_MSB": _register(0x4C, READ_WRITE, "S2MM destination address, upper 32 bits"),
        "S2MM_LENGTH": _register(
            0x58, READ_WRITE, "S2MM buffer bytes; writing it arms the channel, reads back bytes received"
        ),
    }
)

#: VLNV of the AXI DMA (PG021) every core streams through, in simple (non scatter-gather) mode.
AXI_DMA_VLNV = "xilinx.com:ip:axi_dma:7.1"
#: Largest simple-mode transfer: c_sg_length_width = 26 bits.
AXI_DMA_LENGTH_WIDTH = 26

CORE_REGISTERS: Mapping[str, Mapping[str, dict]] = MappingProxyType(
    {
        "gae": GAE_REGISTERS,
        "replay": REPLAY_REGISTERS,
        "parsa": PARSA_REGISTERS,
    }
)
CORE_VLNVS: Mapping[str, str] = MappingProxyType({"gae": GAE_VLNV, "replay": REPLAY_VLNV, "parsa": PARSA_VLNV})
CORE_MAGICS: Mapping[str, int] = MappingProxyType({"gae": GAE_MAGIC, "replay": REPLAY_MAGIC, "parsa": PARSA_MAGIC})
#: Per core: the values of its CTRL.MODE field (what one START does).
CORE_MODES: Mapping[str, type[enum.IntEnum]] = MappingProxyType(
    {"gae": GaeMode, "replay": ReplayMode, "parsa": ParsaMode}
)


def board(name: str | BoardSpec | None) -> BoardSpec:
    """The spec of board ``name`` (case-insensitive; ``None`` gives the default board; a BoardSpec passes through,
    e.g. a custom build made with ``dataclasses.replace``)."""
    if isinstance(name, BoardSpec):
        return name
    if name is None:
        name = DEFAULT_BOARD
    for key, spec in BOARDS.items():
        if key.lower() == str(name).lower():
            return spec
    raise ValueError(f"unsupported board: expected one of {sorted(BOARDS)}, not {name!r}")


for _core, _table in {**CORE_REGISTERS, "axi_dma": AXI_DMA_REGISTERS}.items():
    check_register_table(_core, _table)
