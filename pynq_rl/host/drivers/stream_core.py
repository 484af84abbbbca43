"""``StreamCore``: what every pynq-rl core driver shares — identity check, registers by name, its DMA, waits.

Each core of the overlay is an AXI-Lite register file (``spec.py``'s table for it) next to one AXI DMA in simple
mode, in a hierarchy ``<name>/core`` + ``<name>/dma``. A driver subclass names its core and table and adds the
core's operations; everything below (register access by name only, STATUS decoding, START with a mode, the bounded
wait for DONE, a reset that also frees a stuck DMA) is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from pynq import DefaultIP, UnsupportedConfiguration, allocate
from pynq.lib.dma import DMA
from pynq.registers import RegisterMap

from ...overlay import spec as S
from .arguments import integer
from .identity import BitstreamMismatchError, check_identity
from .polling import Deadline, WallClockDeadline, check_timeout, wait_until

__all__ = ["StreamCore"]

_DMA_FIELDS = S.AXI_DMA_REGISTERS["MM2S_DMASR"]["fields"]  # both channels' DMASR share the layout
#: PG021 DMASR error bits, with PYNQ's own messages for them
_DMA_ERRORS = {
    1 << _DMA_FIELDS["DMAIntErr"]["bit_offset"]: "DMA Internal Error (transfer length 0?)",
    1 << _DMA_FIELDS["DMASlvErr"]["bit_offset"]: "DMA Slave Error (cannot access memory map interface)",
    1 << _DMA_FIELDS["DMADecErr"]["bit_offset"]: "DMA Decode Error (invalid address)",
}
_DMA_ERROR_BITS = sum(_DMA_ERRORS)
#: DMASR bits that end a wait: the channel went idle, or failed
_DMA_STOPPED = 1 << _DMA_FIELDS["Idle"]["bit_offset"] | _DMA_ERROR_BITS
#: word index of every AXI DMA register in the DMA's window
_DMA_WORDS = {name: reg["address_offset"] >> 2 for name, reg in S.AXI_DMA_REGISTERS.items()}
_DONE, _BUSY = int(S.Status.DONE), int(S.Status.BUSY)
_STATUS_ERRORS = S.STATUS_ERROR_MASK
_START = int(S.Ctrl.START)  # plain ints: IntFlag arithmetic costs a microsecond per operation in Python
#: per DMA channel: (DMASR word, direction in messages)
_DMA_CHANNELS = {"MM2S": (_DMA_WORDS["MM2S_DMASR"], "to"), "S2MM": (_DMA_WORDS["S2MM_DMASR"], "from")}


class StreamCore(DefaultIP):
    """Base driver of a pynq-rl core with one AXI DMA (not bound to any VLNV itself).

    Subclasses set ``core_name`` (the key of the core in ``spec.CORE_REGISTERS``), ``title`` and ``bindto``.

    Attributes
    ----------
    dma : pynq.lib.dma.DMA
        The AXI DMA that streams this core's input and output.
    """

    RTL_MARGIN = 4
    """factor on an operation's known cycle count in its ``rtl`` deadline"""
    RTL_SLACK_CYCLES = 4096
    """cycles added to every ``rtl`` deadline (START checks, bus turnarounds, a DMA serviced only between polls)"""

    core_name: str = ""
    title: str = ""
    """the core's name in messages ("GAE core ...")"""

    def __init__(self, description: dict) -> None:
        super().__init__(description)
        self.registers: Mapping[str, dict] = S.CORE_REGISTERS[self.core_name]
        self._words = {name: reg["address_offset"] >> 2 for name, reg in self.registers.items()}
        self._array = self.mmio.array  # register accesses index the mapped window, as PYNQ advises for speed
        try:
            check_identity(self.core_name, self._reg("ID"))
        except BitstreamMismatchError as err:
            raise UnsupportedConfiguration(str(err)) from err
        dma_path = description["fullpath"].rpartition("/")[0] + "/dma"
        if dma_path not in self.device.ip_dict:
            raise UnsupportedConfiguration(f"{self.title} core {description['fullpath']} has no DMA at {dma_path}")
        self._dma_description = dict(self.device.ip_dict[dma_path], device=self.device)
        self._bind_dma()
        dma_parameters = self._dma_description["parameters"]
        self._stream_bytes = int(dma_parameters["c_m_axi_mm2s_data_width"]) // 8
        # unknown width: write the upper address word too, as PYNQ always does (on a ZU+ buffers can lie above 4 GiB)
        self._dma_address_bits = int(dma_parameters.get("c_addr_width", 64))
        self._dma_max_bytes = (1 << int(dma_parameters.get("c_sg_length_width", S.AXI_DMA_LENGTH_WIDTH))) - 1
        self._timeout_s = 5.0
        self._dma_buffers: dict[str, Any] = {}
        self._dma_views: dict[str, tuple[Any, np.ndarray, int]] = {}  # name: (buffer, plain uint8 view, address)
        self._parameters: dict[str, int] = {}  # parameter registers as this driver last wrote them
        self._mode_shift = self.registers["CTRL"]["fields"]["MODE"]["bit_offset"]
        self._last_status = 0  # STATUS at the end of the last operation (an int: test flags with &)
        self._idle_known = False  # True while the core is idle by this driver's own bookkeeping (_check_idle)

    @property
    def timeout_s(self) -> float:
        """Default deadline of one operation in seconds; a finite number > 0.

        On a board and on ``emu`` it bounds START to DONE with both DMA channels idle. On ``rtl`` and ``verilator``
        an operation's deadline is counted in simulated cycles instead: ``RTL_MARGIN`` times the cycles the operation
        is known to take (the core's compute plus one per stream beat) plus ``RTL_SLACK_CYCLES``, so a short run
        completes however loaded the host is and a hung core still reports after the same simulated time
        (:mod:`.polling`).
        """
        return self._timeout_s

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self._timeout_s = check_timeout(value)

    @property
    def stream_bytes(self) -> int:
        """Bytes per stream beat (the DMA's memory-mapped data width)."""
        return self._stream_bytes

    def _bind_dma(self) -> None:
        """(Re)build PYNQ's DMA driver (its constructor starts both channels) and index its registers' window."""
        self.dma = DMA(self._dma_description)
        self._dma_array = self.dma.mmio.array

    # -- registers, by name from spec.py only -------------------------------------------------------------------------
    # Every access is one index into ``mmio.array`` (a numpy view of the mapped window on a board): the same bus
    # transaction as ``MMIO.read``/``MMIO.write`` without their per-call argument checks, which cost more than the
    # transaction itself from Python on a Zynq's ARM.
    def _reg(self, name: str) -> int:
        return int(self._array[self._words[name]])

    def _field(self, register: str, name: str, value: int | None = None) -> int:
        """Field ``name`` of ``register``: of ``value`` if given, else of a fresh read."""
        fld = self.registers[register]["fields"][name]
        value = self._reg(register) if value is None else value
        return (value >> fld["bit_offset"]) & ((1 << fld["bit_width"]) - 1)

    def _write(self, name: str, value: int) -> None:
        self._array[self._words[name]] = int(value) & 0xFFFF_FFFF

    def _write_burst(self, first: str, words: list[int]) -> None:
        """Write ``words`` (ints in [0, 2**32)) to consecutive registers from ``first`` with one slice assignment (a
        bus burst). A list, which every ``mmio.array`` takes: a board's numpy view, the emulated window, PYNQ's
        ``REGISTER_RW`` tinynumpy array (converting one record to numpy first would cost more than the bus)."""
        start = self._words[first]
        self._array[start : start + len(words)] = words

    def _write_parameter(self, name: str, value: int) -> None:
        """Write parameter register ``name`` only if ``value`` differs from what this driver last wrote there.

        For registers only the driver writes and the core never changes (T, COUNT, the coefficients...): on a board
        each write is a bus transaction, and steady-state calls repeat most parameters. :meth:`reset` forgets the
        cache; a register written around the driver (``register_map``) must be followed by ``reset()`` too.
        """
        value = int(value) & 0xFFFF_FFFF
        if self._parameters.get(name) != value:
            self._write(name, value)
            self._parameters[name] = value

    @property
    def register_map(self) -> RegisterMap:
        """The core's registers by name (built from ``spec.py``, so it works even if the .hwh lacks them)."""
        self._idle_known = False  # whatever is done through the map, the next operation checks STATUS itself
        if not hasattr(self, "_spec_register_map"):
            cls = RegisterMap.create_subclass(f"{self.core_name}_core", dict(self.registers))
            self._spec_register_map = cls(self.mmio.array)
        return self._spec_register_map

    @property
    def status(self) -> S.Status:
        """The STATUS register as flags."""
        return S.Status(self._reg("STATUS"))

    @property
    def idle(self) -> bool:
        """True when no operation runs."""
        return not self.status & S.Status.BUSY

    @property
    def error(self) -> bool:
        """True when the last operation ended in an error."""
        return bool(self.status.errors)

    @property
    def cycles(self) -> int:
        """Clock cycles of the last operation (the CYCLES register: the core's own performance counter)."""
        return self._reg("CYCLES")

    @property
    def seed(self) -> int:
        """The PRNG state of a core that has one (a SEED register: replay, ParSa); assigning reseeds it.

        Seed 0 is mapped to ``spec.PRNG_ZERO_SEED`` by the core, as xorshift32 needs. A core without a PRNG has no
        such attribute (``AttributeError``).
        """
        if "SEED" not in self.registers:
            raise AttributeError(f"{self.title} core has no PRNG (no SEED register)")
        return self._reg("SEED")

    @seed.setter
    def seed(self, value: int) -> None:
        if "SEED" not in self.registers:
            raise AttributeError(f"{self.title} core has no PRNG (no SEED register)")
        self._write("SEED", integer("seed", value, 0, 0xFFFF_FFFF))

    def info(self) -> dict:
        """ID, spec version and build parameters, as the core's registers report them."""
        ident = self._reg("ID")
        version = f"{self._field('ID', 'VERSION_MAJOR', ident)}.{self._field('ID', 'VERSION_MINOR', ident)}"
        return {"id": f"{ident:#010x}", "version": version, **self._build_parameters()}

    def _build_parameters(self) -> dict:
        """The build parameters :meth:`info` reports, by name (each core says which)."""
        return {}

    # -- control ----------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Soft-reset the core (aborts a running operation, flushes its streams) and its DMA.

        A DMA reset (PG021: DMACR.Reset on either channel resets both) is the only way to abort a stuck
        transfer; the stock channel objects assume a fresh DMA afterwards, so the driver object is rebuilt.
        """
        self._write("CTRL", S.Ctrl.SOFT_RESET)
        self._parameters.clear()
        self._idle_known = False
        reset_bit = 1 << S.AXI_DMA_REGISTERS["MM2S_DMACR"]["fields"]["Reset"]["bit_offset"]
        self._dma_array[_DMA_WORDS["MM2S_DMACR"]] = reset_bit
        self._bind_dma()

    def reprogrammed(self) -> None:
        """The PL was programmed again: the core and its DMA are back at reset, registers and memories alike.

        Forget what the driver knew of them (the parameters it last wrote, that the core was idle) and bind the DMA
        afresh, whose channels the reset halted; what the core stored is gone, as on the board.
        :meth:`RLOverlay.download <pynq_rl.host.overlay.RLOverlay.download>` calls this on every driver it bound.
        """
        self._parameters.clear()
        self._idle_known = False
        self._bind_dma()

    def _check_idle(self) -> None:
        """Refuse to start an operation while one runs (``RuntimeError``).

        STATUS is read only when the driver cannot know: each of its operations ends with DONE awaited and both
        DMA channels idle, or with a reset, so right after one the core is idle by construction and the read would
        be a wasted bus transaction. The first operation, the one after a :meth:`reset` and the one after
        :attr:`register_map` was touched read it.
        """
        if self._idle_known:
            self._idle_known = False
            return
        status = self._reg("STATUS")
        if status & _BUSY:
            raise RuntimeError(f"{self.title} core busy before start (STATUS={S.Status(status)!r}); call reset()")

    def _start(self, mode: int) -> None:
        """Pulse CTRL.START with CTRL.MODE = ``mode``."""
        self._write("CTRL", _START | int(mode) << self._mode_shift)

    def _deadline(self, timeout_s: float | None, cycles: int) -> Deadline:
        """The deadline of an operation known to take ``cycles`` cycles of the PL clock.

        A device that simulates the PL offers ``cycle_deadline(budget, expected)`` (the ``rtl`` backend): the budget
        is then ``RTL_MARGIN * cycles + RTL_SLACK_CYCLES`` simulated cycles, and the wait lets the ``cycles`` the
        operation is known to take pass before it polls. Anywhere else it is ``timeout_s`` (None: the driver's
        :attr:`timeout_s`) of wall-clock time.
        """
        timeout_s = self.timeout_s if timeout_s is None else check_timeout(timeout_s)
        cycle_deadline = getattr(self.device, "cycle_deadline", None)
        if cycle_deadline is not None:
            return cycle_deadline(self.RTL_MARGIN * int(cycles) + self.RTL_SLACK_CYCLES, expected=int(cycles))
        return WallClockDeadline(timeout_s)

    def _wait_done(self, deadline: Deadline, describe: Callable[[], str]) -> int:
        """Wait for STATUS.DONE before ``deadline``; return STATUS as read (the timeout message shows the last one
        read)."""
        word = self._words["STATUS"]
        return self._poll(
            lambda: int(self._array[word]),
            _DONE,
            deadline,
            lambda value: f"{self.title} core not DONE (STATUS={S.Status(value)!r}, {describe()})",
        )

    @staticmethod
    def _poll(read: Callable[[], int], mask: int, deadline: Deadline, describe: Callable[[int], str]) -> int:
        """``polling.wait_until(read, value & mask, deadline, describe)``, the same accesses in the same order,
        with the first poll inline: on ``emu`` (and mostly on a board) the first read finds the operation over,
        and then the wait costs one call rather than a loop of closures."""
        deadline.begin()
        value = read()
        if value & mask:
            return value
        if deadline.expired():
            raise TimeoutError(f"timed out after {deadline.describe()}: {describe(value)}")
        deadline.pause()
        return wait_until(read, lambda polled: bool(polled & mask), deadline, describe)

    # -- one streamed operation -----------------------------------------------------------------------------------
    def _dma_buffer(self, name: str, nbytes: int):
        """A DMA buffer of at least ``nbytes`` (grown in powers of two, kept for reuse)."""
        buffer = self._dma_buffers.get(name)
        if buffer is None or len(buffer) < nbytes:
            if buffer is not None:
                buffer.freebuffer()
            size = 1 << max(12, (nbytes - 1).bit_length())
            buffer = self._dma_buffers[name] = allocate((size,), dtype=np.uint8, target=self.device)
            # a plain view (a PynqBuffer's slices are buffers too, dearer to make) and the buffer's fixed address
            self._dma_views[name] = (buffer, buffer.view(np.ndarray), int(buffer.physical_address))
        return buffer

    def _transfer(
        self, mode: int, send: np.ndarray | None, recv_bytes: int, timeout_s: float | None, what: str, cycles: int
    ) -> np.ndarray:
        """One operation: START in ``mode``, stream ``send`` (any array, sent as bytes) in and ``recv_bytes`` out.

        ``cycles`` is what the core's own work takes (its spec's formula, or a bound on it); one cycle per stream
        beat each way is added to make the operation's known cycle count, from which the ``rtl`` deadline is
        derived (:meth:`_deadline`). Arms the receive channel before START and sends after it, waits for DONE and
        both channels before the one deadline, and returns a copy of the received bytes. On an error or a timeout
        the core and its DMA are reset (the core's memories survive a soft reset) before the exception propagates.
        """
        payload = None if send is None else np.ascontiguousarray(send).view(np.uint8).reshape(-1)
        sent = 0 if payload is None else len(payload)
        beats = -(-sent // self._stream_bytes) - (-recv_bytes // self._stream_bytes)
        deadline = self._deadline(timeout_s, cycles + beats)
        self._check_idle()
        send_buffer = recv_buffer = None
        if sent:
            send_buffer = self._dma_buffer("in", sent)
            self._dma_views["in"][1][:sent] = payload
        if recv_bytes:
            recv_buffer = self._dma_buffer("out", recv_bytes)
            self._start_dma("S2MM", recv_buffer, recv_bytes)
        self._start(mode)
        if send_buffer is not None:
            self._start_dma("MM2S", send_buffer, sent)
        try:
            status = self._wait_done(deadline, lambda: what)
            if status & _STATUS_ERRORS:
                raise RuntimeError(self._describe_errors(S.Status(status), what))
            if send_buffer is not None:
                self._finish_dma("MM2S", deadline)
            received = self._finish_dma("S2MM", deadline, recv_buffer) if recv_buffer is not None else 0
        except (TimeoutError, RuntimeError):
            self.reset()
            raise
        if received != recv_bytes:
            raise RuntimeError(f"{self.title} core returned {received} bytes for {what}, expected {recv_bytes}")
        self._last_status = status
        self._idle_known = True
        return self._dma_views["out"][1][:recv_bytes].copy() if recv_buffer is not None else np.zeros(0, np.uint8)

    def _start_dma(self, channel: str, buffer, nbytes: int) -> None:
        """Start a simple-mode transfer of ``nbytes`` on DMA ``channel`` (``"MM2S"`` or ``"S2MM"``) from/into
        ``buffer`` (flushed first for MM2S, so the PL reads what the CPU wrote).

        Three register writes (two on a 32-bit-address DMA): address, upper address, LENGTH. The stock
        ``channel.transfer()`` adds two status reads to check that the channel is running and idle; here both hold
        by construction: the DMA is started when it is built, every operation waits for its channels to finish
        before the next one starts, and an operation that fails resets and rebuilds the DMA.
        """
        if nbytes > self._dma_max_bytes:
            raise ValueError(f"a {self.title} transfer of {nbytes} bytes exceeds the DMA's {self._dma_max_bytes}")
        if channel == "MM2S":
            buffer.flush()
        address = "MM2S_SA" if channel == "MM2S" else "S2MM_DA"
        known = self._dma_views.get("in" if channel == "MM2S" else "out")
        physical = known[2] if known is not None and known[0] is buffer else int(buffer.physical_address)
        self._dma_array[_DMA_WORDS[address]] = physical & 0xFFFF_FFFF
        if self._dma_address_bits > 32:
            self._dma_array[_DMA_WORDS[f"{address}_MSB"]] = physical >> 32
        self._dma_array[_DMA_WORDS[f"{channel}_LENGTH"]] = nbytes

    def _finish_dma(self, channel: str, deadline: Deadline, buffer=None) -> int:
        """Wait for DMA ``channel`` (``"MM2S"`` or ``"S2MM"``) to go idle or fail; return the bytes an S2MM transfer
        received (after invalidating ``buffer``'s cache lines, so the CPU reads what the PL wrote).

        Reads the channel's DMASR once per poll and S2MM_LENGTH once: the stock ``channel.wait()`` and
        ``transferred`` cost five reads per channel, on a bus where each read takes a microsecond or more. The
        error bits are PG021's, decoded as PYNQ does.

        Raises
        ------
        TimeoutError
            The channel stayed busy until the deadline (the PL stopped consuming or producing the stream).
        RuntimeError
            The DMA reported an internal, slave or decode error.
        """
        status_word, direction = _DMA_CHANNELS[channel]
        status = self._poll(
            lambda: int(self._dma_array[status_word]),
            _DMA_STOPPED,
            deadline,
            lambda value: f"DMA {channel} channel ({direction} the {self.title} core) still busy (DMASR={value:#x})",
        )
        if status & _DMA_ERROR_BITS:
            for bit, text in _DMA_ERRORS.items():
                if status & bit:
                    raise RuntimeError(f"DMA {channel} ({direction} the {self.title} core): {text}")
        if channel == "MM2S":
            return 0
        buffer.invalidate()
        return int(self._dma_array[_DMA_WORDS["S2MM_LENGTH"]])

    def _describe_errors(self, status: S.Status, what: str) -> str:
        """The message for STATUS error flags after ``what`` (cores override with their registers' story)."""
        return f"{self.title} core reported {status!r} during {what}"
