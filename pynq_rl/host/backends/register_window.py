"""``RegisterWindow``: the ``MMIO.array`` of an emulated IP, a 32-bit word view that serves accesses directly.

On a board ``pynq.MMIO`` maps the IP's AXI-Lite window from ``/dev/mem`` (the ``MEMORY_MAPPED`` capability) and
every driver access is ``int(mmio.array[i])`` or ``mmio.array[i] = word``; a burst is one slice assignment
``mmio.array[a:b] = words``, which PYNQ recommends for fast MMIO. The emulated devices offer the same capability
and hand ``MMIO`` one of these windows instead of the mapping, so drivers run the board's MMIO code path unchanged,
and each access is one Python call into the device (:meth:`EmulatedDevice.read_words` /
:meth:`EmulatedDevice.write_words`) rather than PYNQ's ``REGISTER_RW`` route (a tinynumpy array, a hook, a window
search and a bytes round trip per word: several microseconds each).

The window supports what PYNQ and the drivers use of an ``ndarray`` of ``uint32``: integer and slice indexing
(a slice is a sub-window, as a numpy slice is a view), ``view("u4")``, ``len``, ``np.asarray(window)`` (a burst
read), and integer, slice and burst assignment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from .regfile import RegisterFile

__all__ = ["RegisterWindow", "WordBus"]


class WordBus(Protocol):
    """What a window needs from its device: word reads and writes of one IP, counted and serviced there."""

    def read_words(self, ip: RegisterFile, offset: int, count: int) -> list[int]:
        """``count`` consecutive 32-bit words of ``ip`` from byte ``offset``."""

    def write_words(self, ip: RegisterFile, offset: int, words: list[int]) -> None:
        """Write ``words`` to consecutive registers of ``ip`` from byte ``offset`` (one burst)."""


class RegisterWindow:
    """``words`` 32-bit registers of ``ip`` from byte offset ``offset``, accessed through ``bus``."""

    dtype = np.dtype("<u4")

    def __init__(self, bus: WordBus, ip: RegisterFile, words: int, offset: int = 0) -> None:
        self._bus, self._ip, self._words, self._offset = bus, ip, int(words), int(offset)

    def __len__(self) -> int:
        return self._words

    @property
    def shape(self) -> tuple[int]:
        """``(words,)``, as the mapped array's."""
        return (self._words,)

    def _index(self, index: Any) -> int:
        index = int(index)
        if index < 0:
            index += self._words
        if not 0 <= index < self._words:
            raise IndexError(f"register word {index} outside a window of {self._words}")
        return index

    def _span(self, key: slice) -> tuple[int, int]:
        start, stop, step = key.indices(self._words)
        if step != 1:
            raise IndexError("register windows take contiguous slices only (a bus burst has no stride)")
        return start, max(start, stop)

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop = self._span(key)
            return RegisterWindow(self._bus, self._ip, stop - start, self._offset + 4 * start)
        return np.uint32(self._bus.read_words(self._ip, self._offset + 4 * self._index(key), 1)[0])

    def __setitem__(self, key, value) -> None:
        if isinstance(key, slice):
            start, stop = self._span(key)
            words = np.broadcast_to(np.asarray(value, dtype=np.int64) & 0xFFFF_FFFF, (stop - start,))
            if stop > start:
                self._bus.write_words(self._ip, self._offset + 4 * start, words.tolist())
            return
        self._bus.write_words(self._ip, self._offset + 4 * self._index(key), [int(value) & 0xFFFF_FFFF])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        words = np.asarray(self._bus.read_words(self._ip, self._offset, self._words), dtype=self.dtype)
        return words if dtype is None else words.astype(dtype)

    def view(self, dtype=None, type=None) -> RegisterWindow:
        """This window (only the 32-bit word view exists: AXI-Lite registers are words)."""
        if dtype is not None and np.dtype(dtype) != np.dtype(np.uint32):
            raise TypeError(f"an AXI-Lite register window has 32-bit words only, not {np.dtype(dtype)}")
        return self

    def __repr__(self) -> str:
        return f"RegisterWindow({type(self._ip).__name__}, offset={self._offset:#x}, words={self._words})"
