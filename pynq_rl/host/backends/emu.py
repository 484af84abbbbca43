"""The ``emu`` backend: the overlay's cores as their bit-exact numpy models behind the emulated PYNQ device.

The default off-board. Register and DMA traffic take the same path as on a board (``pynq.Overlay`` -> driver ->
MMIO / stock AXI DMA driver); only the PL is software, and it finishes each operation between two bus accesses.

Each core is wired to its own DMA and to nothing else, so a write to one core's registers or to its DMA can only
set that pair moving: :class:`EmuDevice` services that one DMA after a write instead of every DMA of the board
(the same end state, without a Python call per idle DMA on every access): a driver call's fixed cost is kept at
microseconds.
"""

from __future__ import annotations

import itertools

from ...overlay import spec as S
from .axi_dma import AxiDmaModel
from .device import EmulatedDevice
from .gae_ip import GaeCoreIP
from .parsa_ip import ParsaCoreIP
from .regfile import RegisterFile
from .replay_ip import ReplayCoreIP

__all__ = ["EmuDevice", "CORE_MODELS"]

#: The emulated IP of each core, by slot name.
CORE_MODELS = {"gae": GaeCoreIP, "replay": ReplayCoreIP, "parsa": ParsaCoreIP}

_serial = itertools.count()


def _make_core(slot: S.CoreSlot) -> RegisterFile:
    try:
        return CORE_MODELS[slot.name](slot.spec)
    except KeyError:
        raise ValueError(f"the emu backend has no model of core {slot.name!r}; it has {sorted(CORE_MODELS)}") from None


class EmuDevice(EmulatedDevice):
    """An emulated ``board_spec`` whose cores are the numpy models (see :class:`EmulatedDevice`)."""

    def __init__(self, board_spec: S.BoardSpec) -> None:
        super().__init__(board_spec, _make_core, tag=f"emu{next(_serial)}:{board_spec.name}")
        #: the DMA whose streams an IP's registers can set moving: a core's own DMA, and a DMA itself
        self._dma_of: dict[RegisterFile, AxiDmaModel] = {}
        for name, dma in self.dmas.items():
            self._dma_of[self.cores[name]] = self._dma_of[dma] = dma

    def read_words(self, ip: RegisterFile, offset: int, count: int) -> list[int]:
        """``count`` register words of ``ip`` from byte ``offset`` (one host call of ``count`` bus reads)."""
        self.bus.count_read(count)
        if count == 1:
            return [ip.read(offset)]
        return [ip.read(offset + 4 * i) for i in range(count)]

    def write_words(self, ip: RegisterFile, offset: int, words: list[int]) -> None:
        """Write ``words`` to ``ip`` from byte ``offset`` (one burst: one host call, every word counted), then let
        the DMA paired with ``ip`` move whatever it can (the other DMAs cannot have been set moving by it)."""
        bus = self.bus
        bus.count_burst()
        dma = self._dma_of[ip]
        if ip is dma:  # a DMA window: its LENGTH writes start transfers, which the counts record
            for value in words:
                dma.write(offset, value)
                bus.count_write(1, offset, value)
                offset += 4
        else:
            write = ip.write
            for value in words:
                write(offset, value)
                offset += 4
            bus.register_writes += len(words)
        while dma.busy and dma.service():
            pass
