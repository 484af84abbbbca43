"""A register file generated from a ``spec.py`` table, for the emulated IPs.

It enforces the table's access rules the way the AXI-Lite decoder in hardware does: writes to read-only
registers are ignored, reads of write-only registers return 0, self-clearing (pulse) fields never read back as 1,
and unmapped offsets read 0. Subclasses react to writes through :meth:`on_write`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...overlay.spec import READ_ONLY, WRITE_ONLY, pulse_mask

__all__ = ["RegisterFile"]

_MASK32 = 0xFFFF_FFFF


class RegisterFile:
    """Registers of one IP, addressed by byte offset, described by a ``spec.py`` table.

    Parameters
    ----------
    table : Mapping[str, dict]
        The IP's register table (PYNQ ``RegisterMap`` schema, with ``reset`` and per-field ``pulse``).
    """

    def __init__(self, table: Mapping[str, dict]) -> None:
        self.table = table
        self._by_offset = {reg["address_offset"]: name for name, reg in table.items()}
        self._pulse_mask = {name: pulse_mask(reg) for name, reg in table.items()}
        self.values: dict[str, int] = {}
        self.reset()

    def reset(self) -> None:
        """Every register back to its reset value."""
        self.values = {name: reg.get("reset", 0) for name, reg in self.table.items()}

    def offset(self, name: str) -> int:
        """Byte offset of register ``name``."""
        return self.table[name]["address_offset"]

    def field(self, register: str, name: str) -> int:
        """Current value of field ``name`` of ``register``."""
        fld = self.table[register]["fields"][name]
        return (self.values[register] >> fld["bit_offset"]) & ((1 << fld["bit_width"]) - 1)

    def read(self, offset: int) -> int:
        """Bus read at ``offset`` (0 for unmapped or write-only registers)."""
        name = self._by_offset.get(offset)
        if name is None or self.table[name]["access"] == WRITE_ONLY:
            return 0
        return self.read_register(name) & _MASK32

    def read_register(self, name: str) -> int:
        """Value of register ``name`` as the bus sees it; subclasses override for live values."""
        return self.values[name]

    def write(self, offset: int, value: int) -> None:
        """Bus write at ``offset``: stores it (unless read-only), calls :meth:`on_write`, clears pulse bits."""
        name = self._by_offset.get(offset)
        if name is None or self.table[name]["access"] == READ_ONLY:
            return
        value &= _MASK32
        self.values[name] = value
        self.on_write(name, value)
        self.values[name] &= ~self._pulse_mask[name] & _MASK32

    def on_write(self, name: str, value: int) -> None:
        """Hook: register ``name`` was just written with ``value``."""
