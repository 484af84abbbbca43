"""Emulated DDR for the emulated devices: ``allocate`` hands out buffers with physical addresses, DMA reads them.

On a board ``pynq.allocate`` returns physically contiguous memory and the AXI DMA masters read it by physical
address. Here each allocation gets a fake, page-aligned physical address in the board's DDR window
(:data:`DDR_WINDOWS`), and :meth:`EmulatedMemory.read` / :meth:`EmulatedMemory.write` resolve addresses back to the
live buffer. Buffers are tracked by weak reference: freeing the last view frees the range, as on a board.

Addresses are Python integers throughout (never numpy scalars: ``np.intp`` is 32 bits on the PYNQ-Z2's ARM); the
Zynq UltraScale+ window lies above 4 GiB, so every DMA transfer there carries high address bits in the AXI DMA's
``*_MSB`` registers, as it does on a ZU+ board whose buffers sit in high DDR.
"""

from __future__ import annotations

import bisect
import weakref

import numpy as np
from pynq.buffer import PynqBuffer

__all__ = ["EmulatedMemory", "DDR_WINDOWS"]

_PAGE = 4096

#: The physical range the emulated DDR of each PS architecture hands out, ``[base, limit)``: a Zynq-7000's CMA lies in
#: its DDR below the GP0 window (0x4000_0000); a Zynq UltraScale+ board's high DDR starts at 0x8_0000_0000.
DDR_WINDOWS = {"zynq": (0x1000_0000, 0x4000_0000), "zynq_ultrascale": (0x8_0000_0000, 0x8_4000_0000)}


class EmulatedMemory:
    """Physical address space of an emulated board, from ``base`` up to (not including) ``limit``.

    Parameters
    ----------
    device : pynq.Device
        The device buffers report as theirs (``buffer.device``): flush/invalidate go to it.
    base, limit : int
        Address range handed out (defaults: the Zynq-7000's, 0x1000_0000 to 0x4000_0000, below the PL's GP window).

    Raises
    ------
    ValueError
        An empty range, or one not page-aligned.
    """

    def __init__(self, device, base: int = DDR_WINDOWS["zynq"][0], limit: int = DDR_WINDOWS["zynq"][1]) -> None:
        base, limit = int(base), int(limit)
        if base % _PAGE or limit % _PAGE or not 0 <= base < limit:
            raise ValueError(f"the emulated DDR needs a page-aligned range base < limit, not [{base:#x}, {limit:#x})")
        self._device = device
        self._base, self._limit = base, limit
        self._starts: list[int] = []  # sorted start addresses of live allocations
        self._blocks: dict[int, tuple[int, weakref.ref]] = {}  # start -> (nbytes, weakref to backing bytes)

    def _reap(self) -> None:
        dead = [start for start, (_, ref) in self._blocks.items() if ref() is None]
        for start in dead:
            del self._blocks[start]
            self._starts.remove(start)

    def _find_gap(self, nbytes: int) -> int:
        self._reap()
        candidate = self._base
        for start in self._starts:
            if candidate + nbytes <= start:
                return candidate
            size = self._blocks[start][0]
            candidate = max(candidate, -(-(start + size) // _PAGE) * _PAGE)
        if candidate + nbytes > self._limit:
            raise MemoryError(
                f"emulated DDR exhausted: cannot allocate {nbytes} bytes ({len(self._starts)} buffers live)"
            )
        return candidate

    def allocate(self, shape, dtype="u4", **kwargs) -> PynqBuffer:
        """A zeroed :class:`pynq.buffer.PynqBuffer` of ``shape``/``dtype`` at a fresh physical address."""
        dtype = np.dtype(dtype)
        nbytes = max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1)
        start = self._find_gap(nbytes)
        backing = np.zeros(nbytes, dtype=np.uint8)
        buffer = PynqBuffer(shape, dtype, buffer=backing, device=self._device, device_address=start, coherent=False)
        bisect.insort(self._starts, start)
        self._blocks[start] = (nbytes, weakref.ref(backing))
        return buffer

    def _resolve(self, address: int, nbytes: int) -> np.ndarray:
        index = bisect.bisect_right(self._starts, address) - 1
        if index >= 0:
            start = self._starts[index]
            size, ref = self._blocks[start]
            backing = ref()
            if backing is not None and address + nbytes <= start + size:
                return backing[address - start : address - start + nbytes]
        raise MemoryError(f"no live buffer holds [{address:#x}, {address + nbytes:#x})")

    def read(self, address: int, nbytes: int) -> np.ndarray:
        """A uint8 view of ``nbytes`` at physical ``address`` (``MemoryError`` if no live buffer holds them)."""
        return self._resolve(address, nbytes)

    def write(self, address: int, data: np.ndarray) -> None:
        """Write uint8 ``data`` at physical ``address`` (``MemoryError`` if no live buffer holds it)."""
        self._resolve(address, len(data))[:] = data
