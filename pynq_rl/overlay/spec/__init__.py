"""The single source of truth of the pynq-rl overlay.

Everything that more than one layer must agree on is defined in this package and nowhere else: per core its VLNV,
its register table, its stream word formats, its build parameters with their limits and its fixed-point formats;
per board the overlay's composition and address map. The numpy models, the MyHDL cores, the emulated devices,
the ``.hwh`` generator and the drivers all read this package, so they cannot disagree.

Register tables use PYNQ's ``RegisterMap.create_subclass`` schema (``address_offset``, ``access``, ``size`` in
bits, ``description``, ``fields`` with ``bit_offset``/``bit_width``/``access``), so a driver builds its
``register_map`` straight from them and the ``.hwh`` generator declares the same registers. Every table is
checked when this package is imported: overlapping registers or fields raise ``ValueError``.

The package has one module per seam of the spec, listed in import order (each imports only modules above it):

* :mod:`~pynq_rl.overlay.spec.registers`: the register-table machinery, the registers every core shares (ID,
  CTRL, STATUS, CYCLES), the spec version and the :class:`Status` and :class:`Ctrl` flags;
* :mod:`~pynq_rl.overlay.spec.qformat`: :class:`QFormat`, the fixed-point format;
* :mod:`~pynq_rl.overlay.spec.gae`, :mod:`~pynq_rl.overlay.spec.replay` (with the cores' shared PRNG) and
  :mod:`~pynq_rl.overlay.spec.parsa`: one core each, its magic number, VLNV, modes, register table and spec class;
* :mod:`~pynq_rl.overlay.spec.boards`: the boards, the AXI DMA, the per-core lookup tables and the import-time
  check of every table.

Every public name is re-exported here and listed in ``__all__``: import from the package
(``from pynq_rl.overlay import spec as S``), not from its modules. A function reads the names of its own module, so
a test that patches one for it patches it there (``monkeypatch.setattr(S.boards, "BOARDS", ...)`` for :func:`board`).

This package imports only the standard library and numpy (which every board image has); it runs on the board as
well as on a laptop.
"""

from __future__ import annotations

from .boards import (
    AXI_DMA_LENGTH_WIDTH,
    AXI_DMA_REGISTERS,
    AXI_DMA_VLNV,
    BOARDS,
    CORE_MAGICS,
    CORE_MODES,
    CORE_REGISTERS,
    CORE_VLNVS,
    DEFAULT_BOARD,
    ULTRARAM_BLOCKS,
    URAM288_BITS,
    BoardSpec,
    CoreSlot,
    CoreSpec,
    board,
    part_uram_min_bits,
)
from .gae import GAE_MAGIC, GAE_REGISTERS, GAE_VLNV, GaeMode, GaeSpec
from .parsa import (
    PARSA_MAGIC,
    PARSA_MBOX_FLAGS,
    PARSA_MBOX_STATE_WORDS,
    PARSA_MBOX_WINDOW,
    PARSA_NO_ACTION,
    PARSA_REGISTERS,
    PARSA_VLNV,
    ParsaFlag,
    ParsaMode,
    ParsaSpec,
)
from .qformat import QFormat
from .registers import (
    CTRL_REGISTER,
    ID_REGISTER,
    READ_ONLY,
    READ_WRITE,
    SPEC_VERSION_MAJOR,
    SPEC_VERSION_MINOR,
    STATUS_ERROR_MASK,
    STATUS_REGISTER,
    WRITE_ONLY,
    Ctrl,
    Status,
    check_register_table,
    field_bits,
    pack_fields,
    pulse_mask,
    unpack_fields,
)

# private, so not in __all__, but re-exported: the tests build small tables with it (S._register)
from .registers import _register as _register
from .replay import (
    PRNG_SHIFTS,
    PRNG_ZERO_SEED,
    REPLAY_MAGIC,
    REPLAY_REGISTERS,
    REPLAY_VLNV,
    ReplayMode,
    ReplaySpec,
    xorshift32_step,
)

# in the order the modules define them, which is the order the API page documents them in
__all__ = [
    # registers
    "SPEC_VERSION_MAJOR",
    "SPEC_VERSION_MINOR",
    "READ_ONLY",
    "READ_WRITE",
    "WRITE_ONLY",
    "check_register_table",
    "CTRL_REGISTER",
    "STATUS_REGISTER",
    "STATUS_ERROR_MASK",
    "ID_REGISTER",
    "pack_fields",
    "unpack_fields",
    "field_bits",
    "pulse_mask",
    "Status",
    "Ctrl",
    # qformat
    "QFormat",
    # gae
    "GAE_MAGIC",
    "GAE_VLNV",
    "GaeMode",
    "GAE_REGISTERS",
    "GaeSpec",
    # replay
    "REPLAY_MAGIC",
    "REPLAY_VLNV",
    "PRNG_ZERO_SEED",
    "PRNG_SHIFTS",
    "xorshift32_step",
    "ReplayMode",
    "REPLAY_REGISTERS",
    "ReplaySpec",
    # parsa
    "PARSA_MAGIC",
    "PARSA_VLNV",
    "ParsaMode",
    "ParsaFlag",
    "PARSA_NO_ACTION",
    "PARSA_MBOX_STATE_WORDS",
    "PARSA_MBOX_FLAGS",
    "PARSA_REGISTERS",
    "PARSA_MBOX_WINDOW",
    "ParsaSpec",
    # boards
    "ULTRARAM_BLOCKS",
    "URAM288_BITS",
    "part_uram_min_bits",
    "CoreSlot",
    "CoreSpec",
    "BoardSpec",
    "BOARDS",
    "DEFAULT_BOARD",
    "AXI_DMA_REGISTERS",
    "AXI_DMA_VLNV",
    "AXI_DMA_LENGTH_WIDTH",
    "CORE_REGISTERS",
    "CORE_VLNVS",
    "CORE_MAGICS",
    "CORE_MODES",
    "board",
]
