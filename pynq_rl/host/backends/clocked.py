"""What the two simulating backends (``rtl``, ``verilator``) share: an emulated device whose cores run on a clock.

Time advances only with bus traffic: each register access costs the cycles its handshake takes, an access to the
DMA register model costs a few cycles as the interconnect would, and a waiting driver lets simulated time pass
(:meth:`ClockedDevice.idle`) while the DMAs move their streams. Deadlines are counted in the simulation's cycles
(:class:`~pynq_rl.host.drivers.polling.CycleDeadline`), so a wait's outcome does not depend on the host's speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ...overlay import spec as S
from ..drivers.polling import CycleDeadline
from .device import EmulatedDevice
from .regfile import RegisterFile

__all__ = ["Clock", "ClockedDevice", "DMA_ACCESS_CYCLES", "POLL_INTERVAL_US"]

#: Cycles a bus access to a non-simulated IP (the DMA register model) is charged, as the interconnect would.
DMA_ACCESS_CYCLES = 4
#: microseconds between two polls of a waiting driver on a board (see :attr:`ClockedDevice.poll_cycles`)
POLL_INTERVAL_US = 1.0


class Clock(Protocol):
    """The clock of a simulation: its cycle count, and a way to let cycles pass with the buses idle."""

    cycle: int

    def tick(self, cycles: int = 1) -> None:
        """Advance ``cycles`` clock cycles."""


class ClockedDevice(EmulatedDevice):
    """An emulated ``board_spec`` whose core IPs (of class ``core_class``) run on ``simulation``'s clock.

    Parameters
    ----------
    board_spec : BoardSpec
    simulation : Clock
        The simulation every core of the board runs in.
    make_core : callable
        ``make_core(slot) -> RegisterFile``: a core IP that answers its bus accesses in simulated cycles.
    core_class : type
        The class of those IPs (an access to any other IP, the DMA models, is charged :data:`DMA_ACCESS_CYCLES`).
    tag : str
        Device tag.
    """

    def __init__(
        self,
        board_spec: S.BoardSpec,
        simulation: Clock,
        make_core: Callable[[S.CoreSlot], RegisterFile],
        core_class: type,
        tag: str,
    ) -> None:
        self.simulation = simulation
        self._core_class = core_class
        super().__init__(board_spec, make_core, tag=tag)

    @property
    def poll_cycles(self) -> int:
        """PL cycles between two polls of a waiting driver: one poll per microsecond, about what a Python loop of
        register reads achieves on the board's ARM, so simulated waits make the accesses a board would."""
        return max(1, round(self.board.fclk_mhz * POLL_INTERVAL_US))

    def cycle_deadline(self, cycles: int, expected: int = 0) -> CycleDeadline:
        """A deadline ``cycles`` simulated clock cycles from now, for an operation known to take ``expected``.

        The drivers wait in the simulation's time, so a wait's outcome does not depend on how fast the host runs
        the simulation: the wait lets ``expected`` cycles pass (:meth:`idle`), then polls every
        :attr:`poll_cycles`."""
        return CycleDeadline(
            lambda: self.simulation.cycle, cycles, idle=self.idle, expected=expected, poll_cycles=self.poll_cycles
        )

    def idle(self, cycles: int) -> None:
        """Let ``cycles`` clock cycles pass without a bus access, the DMAs moving their streams meanwhile (a DMA
        transfer under way may carry the simulation past them)."""
        end = self.simulation.cycle + int(cycles)
        while self.simulation.cycle < end:
            self.service()
            remaining = end - self.simulation.cycle
            if remaining > 0:
                self.simulation.tick(1 if any(dma.busy for dma in self.dmas.values()) else remaining)

    def read_words(self, ip: RegisterFile, offset: int, count: int) -> list[int]:
        """Bus reads; a read of a non-simulated IP costs a few cycles, then the DMAs move what they can."""
        if not isinstance(ip, self._core_class):
            self.simulation.tick(DMA_ACCESS_CYCLES * count)
        words = super().read_words(ip, offset, count)
        self.service()
        return words

    def write_words(self, ip: RegisterFile, offset: int, words: list[int]) -> None:
        """Bus writes (see :meth:`read_words`)."""
        if not isinstance(ip, self._core_class):
            self.simulation.tick(DMA_ACCESS_CYCLES * len(words))
        super().write_words(ip, offset, words)
