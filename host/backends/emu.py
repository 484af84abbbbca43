"""The ``emu`` backend: the overlay's cores as their bit-exact numpy models behind the emulated PYNQ device.

The default off-board. Register and DMA traffic take the same path as on a board (``pynq.Overlay`` -> driver ->
MMIO / stock AXI DMA driver); only the PL is software, and it finishes each operation between two bus accesses.
"""
from __future__ import annotations

import itertools

from ...overlay import spec as S
from .device import EmulatedDevice
from .gae_ip import GaeCoreIP
from .parsa_ip import ParsaCoreIP
from .replay_ip import ReplayCoreIP
from .regfile import RegisterFile

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
