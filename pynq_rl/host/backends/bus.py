"""Bus accounting of the emulated devices: what a driver call costs on the PS-PL bus, counted where it happens.

On a Zynq every Python MMIO access is an AXI-Lite transaction of a microsecond or more from the ARM, and every DMA
transfer a descriptor write plus completion polling, so the number of accesses a driver call makes is its fixed cost
on a board, whatever the core does. Two counts of register traffic are kept, because they cost differently:

* **words** (``register_reads``, ``register_writes``): 32-bit AXI-Lite transactions on the bus, a few PL cycles each;
* **calls** (``register_calls``): Python-level MMIO operations on the ARM, the microseconds: ``int(mmio.array[i])``,
  ``mmio.array[i] = w`` or one burst ``mmio.array[a:b] = words`` (a numpy copy into the mapping, one call however
  many words it moves). The drivers' per-call budgets (a ParSa step: state words, reward and key written as one
  burst, START, DONE polled, ACTION read, <= 8; ``tests/test_bus_stats.py``) count calls; the tables give both.

The ``emu`` and ``rtl`` devices see every access (PYNQ routes them through ``read_registers`` / ``write_registers``)
and count them here; :meth:`RLOverlay.bus_stats` exposes the counts of a
block of driver calls.
"""

from __future__ import annotations

import dataclasses

from ...overlay.spec import AXI_DMA_REGISTERS

__all__ = ["BusStats", "DMA_LENGTH_OFFSETS"]

#: AXI DMA register offsets whose write starts a transfer: MM2S (to the core) and S2MM (from the core)
DMA_LENGTH_OFFSETS = {
    AXI_DMA_REGISTERS["MM2S_LENGTH"]["address_offset"]: "mm2s",
    AXI_DMA_REGISTERS["S2MM_LENGTH"]["address_offset"]: "s2mm",
}


@dataclasses.dataclass
class BusStats:
    """Counts of bus traffic (32-bit register words, host MMIO calls, DMA transfers and their bytes) between two
    moments."""

    register_reads: int = 0
    """32-bit words read over AXI-Lite (cores' and DMAs' registers)"""
    register_writes: int = 0
    """32-bit words written over AXI-Lite"""
    register_calls: int = 0
    """MMIO operations made by the host: one per single-word access and one per burst (a slice of ``mmio.array``)"""
    dma_transfers: int = 0
    """DMA transfers started (a write to MM2S_LENGTH or S2MM_LENGTH)"""
    dma_bytes_to_pl: int = 0
    """bytes the MM2S channels were asked to move to the cores"""
    dma_bytes_from_pl: int = 0
    """bytes of buffer the S2MM channels were armed with"""

    @property
    def register_accesses(self) -> int:
        """Register words read plus written: the AXI-Lite transactions a call makes (a few PL cycles each)."""
        return self.register_reads + self.register_writes

    def count_read(self, words: int) -> None:
        """Record one host read call of ``words`` register words."""
        self.register_reads += words
        self.register_calls += 1

    def count_burst(self) -> None:
        """Record one host write call (its words are counted one by one by :meth:`count_write`)."""
        self.register_calls += 1

    def count_write(self, words: int, dma_offset: int | None = None, value: int = 0) -> None:
        """Record ``words`` register words written; ``dma_offset`` is the offset in a DMA's window, if it is one."""
        self.register_writes += words
        channel = DMA_LENGTH_OFFSETS.get(dma_offset) if dma_offset is not None else None
        if channel is not None:
            self.dma_transfers += 1
            if channel == "mm2s":
                self.dma_bytes_to_pl += value
            else:
                self.dma_bytes_from_pl += value

    def __sub__(self, other: BusStats) -> BusStats:
        return BusStats(*(getattr(self, f.name) - getattr(other, f.name) for f in dataclasses.fields(self)))

    def as_dict(self) -> dict[str, int]:
        """The counts by name, ``register_accesses`` included (for tables and JSON)."""
        return {**dataclasses.asdict(self), "register_accesses": self.register_accesses}
