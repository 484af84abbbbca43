"""Register model of the Xilinx AXI DMA (PG021) in direct register mode, for the emulated devices.

It serves the register traffic of the stock ``pynq.lib.dma.DMA`` driver unchanged and moves bytes between the
emulated DDR and a core's AXI-Stream ports:

* MM2S: writing ``MM2S_LENGTH`` reads that many bytes at ``MM2S_SA`` and offers them to the core's input
  stream, the last beat with TLAST. The core may accept them gradually (back-pressure): the channel stays busy
  until every byte is taken.
* S2MM: writing ``S2MM_LENGTH`` arms the channel with a buffer; bytes the core emits land at ``S2MM_DA``;
  on TLAST the channel goes idle and ``S2MM_LENGTH`` reads back the bytes received. A packet longer than the
  buffer is an internal error, as in hardware.
* The two channels run at once on a board. A simulated core (``stream_duplex``) gets them in the same clock cycles;
  an emulated core, which has no cycles, takes its input and then gives its output.

Status follows PG021: ``Halted`` until RS=1, ``Idle`` once a transfer completes, ``IOC_Irq`` / ``Err_Irq``
write-1-to-clear (storing the written value instead breaks the next transfer with "DMA channel not idle").
Interrupts are not emulated: drivers poll.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ...overlay.spec import AXI_DMA_REGISTERS
from .memory import EmulatedMemory
from .regfile import RegisterFile

__all__ = ["StreamEndpoint", "AxiDmaModel"]

HALTED, IDLE, INT_ERR, SLV_ERR, DEC_ERR, IOC_IRQ, DLY_IRQ, ERR_IRQ = (
    1 << 0,
    1 << 1,
    1 << 4,
    1 << 5,
    1 << 6,
    1 << 12,
    1 << 13,
    1 << 14,
)
_W1C = IOC_IRQ | DLY_IRQ | ERR_IRQ
_RS, _RESET = 1 << 0, 1 << 2
_MASK32 = 0xFFFF_FFFF
#: what a write to a DMA register does, by the end of its name
_CONTROL, _STATUS, _LENGTH, _PLAIN = "_DMACR", "_DMASR", "_LENGTH", ""


@runtime_checkable
class StreamEndpoint(Protocol):
    """What a core model offers its DMA: an AXI-Stream sink and an AXI-Stream source, byte-granular."""

    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Offer uint8 ``data`` (``last``: it ends with TLAST); return how many bytes were accepted."""

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Take up to ``max_bytes`` of output; return them and whether they end with TLAST."""

    # optional: stream_duplex(data | None, last, max_bytes) -> (bytes accepted, output, TLAST): both at once


class _Channel:
    """State of one direction (not constructed directly: :class:`AxiDmaModel` owns two)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.control, self.status = f"{prefix}_DMACR", f"{prefix}_DMASR"  # register names, built once
        self.address_register = "MM2S_SA" if prefix == "MM2S" else "S2MM_DA"
        self.address_msb = f"{self.address_register}_MSB"
        self.pending: np.ndarray | None = None  # MM2S: bytes not yet accepted by the core
        self.address = 0  # S2MM: next write address
        self.remaining = 0  # S2MM: room left in the armed buffer
        self.received = 0  # S2MM: bytes written in this transfer
        self.busy = False


class AxiDmaModel(RegisterFile):
    """One AXI DMA between the emulated DDR and one core.

    Parameters
    ----------
    memory : EmulatedMemory
        The physical memory the DMA masters read and write.
    core : StreamEndpoint
        The core whose input (MM2S) and output (S2MM) streams this DMA drives.
    """

    def __init__(self, memory: EmulatedMemory, core: StreamEndpoint) -> None:
        self.memory, self.core = memory, core
        self.mm2s, self.s2mm = _Channel("MM2S"), _Channel("S2MM")
        super().__init__(AXI_DMA_REGISTERS)
        # every writable offset decoded once: (register, its channel, what a write does); the bus calls write()
        # for each word from Python, so the per-write name parsing of a generic register file is avoided
        self._decode = {}
        for name, reg in AXI_DMA_REGISTERS.items():
            channel = self.mm2s if name.startswith("MM2S") else self.s2mm
            kind = next((k for k in (_CONTROL, _STATUS, _LENGTH) if name.endswith(k)), _PLAIN)
            self._decode[reg["address_offset"]] = (name, channel, kind, ~self._pulse_mask[name] & _MASK32)

    def reset(self) -> None:
        super().reset()
        for channel in (getattr(self, "mm2s", None), getattr(self, "s2mm", None)):
            if channel is not None:
                channel.__init__(channel.prefix)

    def _fail(self, channel: _Channel, bit: int) -> None:
        channel.busy, channel.pending = False, None
        self.values[channel.status] |= bit | ERR_IRQ | HALTED
        self.values[channel.control] &= ~_RS

    def _complete(self, channel: _Channel) -> None:
        channel.busy = False
        self.values[channel.status] |= IDLE | IOC_IRQ

    def write(self, offset: int, value: int) -> None:
        """Bus write at ``offset``: DMASR clears the interrupt bits written as 1 (nothing else), DMACR runs, halts
        or resets, LENGTH starts a transfer; unmapped offsets are ignored (every DMA register is read-write)."""
        decoded = self._decode.get(offset)
        if decoded is None:
            return
        name, channel, kind, keep = decoded
        values = self.values
        if kind is _STATUS:  # write-1-to-clear interrupt bits, nothing else
            values[name] &= ~(value & _W1C)
            return
        value &= _MASK32
        values[name] = value
        if kind is _CONTROL:
            if value & _RESET:  # PG021: a soft reset on either channel resets the whole DMA
                self.reset()
            elif value & _RS:
                values[channel.status] &= ~HALTED
            else:
                values[channel.status] |= HALTED
            self.values[name] &= keep  # self-clearing Reset never reads back as 1 (reset() made a new dict)
        elif kind is _LENGTH:
            self._start(channel, value)

    def _start(self, channel: _Channel, nbytes: int) -> None:
        status = channel.status
        if self.values[status] & HALTED or channel.busy:
            return  # PG021: LENGTH writes while halted or busy have no effect
        if nbytes == 0:
            self._fail(channel, INT_ERR)
            return
        address = self.values[channel.address_register] | (self.values[channel.address_msb] << 32)
        self.values[status] &= ~IDLE
        channel.busy = True
        if channel is self.mm2s:
            try:
                channel.pending = self.memory.read(address, nbytes).copy()
            except MemoryError:
                self._fail(channel, DEC_ERR)
        else:
            try:
                self.memory.read(address, nbytes)  # decode check up front, as the address phase would
            except MemoryError:
                self._fail(channel, DEC_ERR)
                return
            channel.address, channel.remaining, channel.received = address, nbytes, 0

    @property
    def busy(self) -> bool:
        """True while either channel has a transfer under way (only then can :meth:`service` move anything)."""
        return self.mm2s.busy or self.s2mm.busy

    def service(self, idle_until: int | None = None) -> bool:
        """Move whatever can move between memory and the core; return True if any byte moved.

        A core with ``stream_duplex`` (a simulated one: it has cycles) gets both channels in the same cycles, as on
        a board; an emulated one takes its input, then gives its output. ``idle_until`` (a verilated core only) lets
        the core's clock run to that cycle while a channel waits on it (see ``VerilatorCoreIP.stream_duplex``)."""
        mm2s, s2mm = self.mm2s, self.s2mm
        pending = mm2s.pending if mm2s.busy else None  # the bytes to send (None: MM2S has nothing to send)
        duplex = getattr(self.core, "stream_duplex", None)
        if duplex is not None:
            if not (pending is not None or s2mm.busy):
                return False
            waits = {} if idle_until is None else {"idle_until": idle_until}
            accepted, data, last = duplex(pending, True, s2mm.remaining + 1 if s2mm.busy else 0, **waits)
        else:
            accepted = self.core.stream_in(pending, last=True) if pending is not None else 0
            data, last = self.core.stream_out(s2mm.remaining + 1) if s2mm.busy else (np.zeros(0, np.uint8), False)
        moved = bool(accepted)
        if accepted and pending is not None:
            mm2s.pending = pending[accepted:]
            if len(mm2s.pending) == 0:
                mm2s.pending = None
                self._complete(mm2s)
        if s2mm.busy:
            if len(data) > s2mm.remaining:
                self._fail(s2mm, INT_ERR)  # packet longer than the armed buffer
                return True
            if len(data):
                moved = True
                self.memory.write(s2mm.address, data)
                s2mm.address += len(data)
                s2mm.remaining -= len(data)
                s2mm.received += len(data)
            if last:
                moved = True
                self.values["S2MM_LENGTH"] = s2mm.received
                self._complete(s2mm)
        return moved
