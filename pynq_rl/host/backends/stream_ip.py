"""``StreamCoreIP``: the bus-facing skeleton every emulated core shares (registers, STATUS, START, the streams).

An emulated core is a :class:`RegisterFile` generated from its ``spec.py`` table plus a three-state control FSM:
IDLE (waiting for ``CTRL.START``), LOAD (accepting its input stream until TLAST) and DRAIN (emitting its output
stream, TLAST on the last byte). ``CTRL.SOFT_RESET`` aborts whatever runs and clears STATUS. Subclasses say what
START does in each mode (:meth:`StreamCoreIP.start`) and what a closed input means (:meth:`StreamCoreIP.close_input`);
this class does the bookkeeping the hardware's FSM does, identically for every core.

Writes during an operation behave as in the HDL cores. The operation computes with the registers' values at its
START (:attr:`StreamCoreIP.started`, what the cores latch), so a parameter written while BUSY counts from the next
START. A write that acts on the core's state (a core's :attr:`StreamCoreIP.WRITE_EFFECTS`: SEED reseeding a PRNG...)
is held while BUSY and acts when the operation ends, with the last value written (the HDL's ``held_while_busy``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import numpy as np

from ...overlay import spec as S
from .regfile import RegisterFile

__all__ = ["StreamCoreIP", "StreamState"]

# STATUS and CTRL bits as plain ints: the emulated bus handles every access in Python, and IntFlag arithmetic costs
# a microsecond per operation there
_DONE, _BUSY = int(S.Status.DONE), int(S.Status.BUSY)
_START, _SOFT_RESET = int(S.Ctrl.START), int(S.Ctrl.SOFT_RESET)


class StreamState(enum.Enum):
    """Control FSM states of an emulated core (the HDL cores' ``t_state`` enums have these among theirs)."""

    IDLE = 0
    LOAD = 1
    DRAIN = 2


class StreamCoreIP(RegisterFile):
    """Registers + control FSM + byte-granular AXI-Stream endpoints of one emulated core.

    Parameters
    ----------
    table : Mapping[str, dict]
        The core's register table.
    parameters : Mapping[str, int]
        Values of its read-only build-parameter registers (``spec.parameter_registers()``).
    """

    #: Registers whose writes act on the core's state through :meth:`on_register` (not only store a value the next
    #: START reads): held while BUSY, applied when the operation ends.
    WRITE_EFFECTS: tuple[str, ...] = ()

    def __init__(self, table: Mapping[str, dict], parameters: Mapping[str, int]) -> None:
        self._parameters = dict(parameters)
        self.started: dict[str, int] = {}
        self._held: dict[str, int] = {}
        super().__init__(table)

    def reset(self) -> None:
        super().reset()
        self.values.update(self._parameters)
        self._held = {}  # the HDL's held pulses reset with the registers
        self.abort()

    def abort(self) -> None:
        """Drop the running operation and both streams (SOFT_RESET; the core's memories are kept); writes held
        during it act now."""
        self.state = StreamState.IDLE
        self._inbox = bytearray()
        self._outbox = np.zeros(0, dtype=np.uint8)
        self._apply_held()

    def _apply_held(self) -> None:
        """The writes of :attr:`WRITE_EFFECTS` held during the operation that just ended: each acts once, with the
        value last written (the register reads it back, even where the operation updated it meanwhile)."""
        held, self._held = self._held, {}
        for name, value in held.items():
            self.values[name] = value
            self.on_register(name, value)

    # -- status -----------------------------------------------------------------------------------------------------
    def finish(self, flags: S.Status | int = 0) -> None:
        """End the operation: back to IDLE with DONE and ``flags``; writes held during it act now."""
        self.state = StreamState.IDLE
        self.values["STATUS"] = int(flags) | _DONE
        self._apply_held()

    def begin_load(self) -> None:
        """Accept the input stream from now on."""
        self._inbox = bytearray()
        self.state = StreamState.LOAD

    def drain(self, data: np.ndarray, cycles: int, flags: S.Status | int = 0) -> None:
        """Emit ``data`` (bytes, or words viewed as bytes) on the output stream; CYCLES = ``cycles``."""
        self.values["CYCLES"] = cycles
        data = np.ascontiguousarray(data).view(np.uint8).ravel()
        if len(data) == 0:
            self.finish(flags)
            return
        self._outbox = data
        self.state = StreamState.DRAIN
        self.values["STATUS"] = _BUSY | int(flags)

    # -- control ----------------------------------------------------------------------------------------------------
    def on_write(self, name: str, value: int) -> None:
        if name != "CTRL":
            if name in self.WRITE_EFFECTS and self.state != StreamState.IDLE:
                self._held[name] = value
            else:
                self.on_register(name, value)
        elif value & _SOFT_RESET:
            self.abort()
            self.values["STATUS"] = 0
        elif value & _START and self.state == StreamState.IDLE:
            self.values["STATUS"] = _BUSY  # START clears DONE and the sticky flags
            self.values["CYCLES"] = 0
            self.started = dict(self.values)
            self.start(self.field("CTRL", "MODE"))

    def on_register(self, name: str, value: int) -> None:
        """Hook: a register other than CTRL was written."""

    def start(self, mode: int) -> None:
        """Hook: START in ``mode`` (STATUS is BUSY; :attr:`started` holds the registers): finish, drain or
        begin_load."""
        raise NotImplementedError

    def close_input(self, data: bytes) -> None:
        """Hook: the input stream ended with TLAST after ``data``: finish or drain."""
        raise NotImplementedError

    # -- AXI-Stream endpoints (the DMA model calls these) ---------------------------------------------------------
    def stream_in(self, data: np.ndarray, last: bool) -> int:
        """Accept input bytes while loading (back-pressure otherwise); TLAST closes the input."""
        if self.state != StreamState.LOAD:
            return 0
        self._inbox += data.tobytes()
        if last:
            received, self._inbox = bytes(self._inbox), bytearray()
            self.close_input(received)
        return len(data)

    def stream_out(self, max_bytes: int) -> tuple[np.ndarray, bool]:
        """Emit up to ``max_bytes`` output bytes while draining; TLAST with the final byte."""
        if self.state != StreamState.DRAIN:
            return np.zeros(0, dtype=np.uint8), False
        data, self._outbox = self._outbox[:max_bytes], self._outbox[max_bytes:]
        last = len(self._outbox) == 0
        if last:
            self.finish(self.values["STATUS"] & ~_BUSY)
        return data, last

    @staticmethod
    def words(data: bytes) -> tuple[np.ndarray, bool]:
        """The whole little-endian 64-bit words of ``data`` and whether a partial word trailed them."""
        whole = len(data) // 8 * 8
        return np.frombuffer(data[:whole], dtype="<u8"), whole != len(data)
