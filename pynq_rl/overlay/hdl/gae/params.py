"""Widths derived from a :class:`~pynq_rl.overlay.spec.GaeSpec`, and the signal bundles the GAE core's engines
hand each other. Defined once here so the control, the loader, the compute sequencer, the drain, the stack ports
and the lanes agree on every field (each bundle is driven by one engine and read by the others)."""

from __future__ import annotations

from dataclasses import dataclass

from myhdl import Signal, intbv

from ...spec import GaeMode, GaeSpec

__all__ = ["GaeWidths", "CODE_SLOT_BITS", "Phase", "LoadedChunk", "ComputeState", "DrainState", "StackPorts"]

#: Bits of a q8 code's slot in an input record: one byte (:meth:`GaeSpec.input_record_bytes`), the code
#: sign-extended in it.
CODE_SLOT_BITS = 8


@dataclass(frozen=True)
class GaeWidths:
    """Bit widths and counts of one GAE build."""

    spec: GaeSpec

    @property
    def data(self) -> int:
        """a reward, value, A or R word (DATA; a raw record's slot)"""
        return self.spec.data.width

    @property
    def word(self) -> int:
        """a FILO stack word: ``{done, value, reward}`` as loaded, ``{0, R, A}`` as written back"""
        return 2 * self.data + 1

    @property
    def depth(self) -> int:
        """rows of a lane's FILO stack: T_MAX steps and the bootstrap row"""
        return self.spec.t_max + 1

    @property
    def beat(self) -> int:
        """a stream beat (TDATA)"""
        return 8 * self.spec.stream_bytes

    @property
    def raw_record(self) -> int:
        """an input record in raw mode (whole beats)"""
        return 8 * self.spec.input_record_bytes(GaeMode.RAW)

    @property
    def q8_record(self) -> int:
        """an input record in the q8 modes (whole beats; a q8-runs header record is raw-sized)"""
        return 8 * self.spec.input_record_bytes(GaeMode.Q8)

    @property
    def out_record(self) -> int:
        """an output record (whole beats)"""
        return 8 * self.spec.output_record_bytes

    @property
    def raw_beats(self) -> int:
        """beats of a raw input record"""
        return self.raw_record // self.beat

    @property
    def q8_beats(self) -> int:
        """beats of a q8 input record"""
        return self.q8_record // self.beat

    @property
    def out_beats(self) -> int:
        """beats of an output record"""
        return self.out_record // self.beat

    def data_signal(self) -> Signal:
        """A Signal of the DATA range."""
        return Signal(intbv(0, min=self.spec.data.min_code, max=self.spec.data.max_code + 1))

    def row_signal(self, extra: int = 1) -> Signal:
        """A Signal for a stack row index or time index: [0, depth - 1 + extra]."""
        return Signal(intbv(0, min=0, max=self.depth + extra))


class Phase:
    """The operation FSM's state as the engines see it (:func:`~.control.gae_control`; SOFT_RESET wins over all).

    starting  : a START while idle (CYCLES clears even when the configuration is refused)
    launching : a START the configuration check accepts: the operation begins
    running   : the core is BUSY (and no SOFT_RESET): the engines work
    failing   : a stream error ends the operation this cycle (the chunks before it are out)
    """

    def __init__(self) -> None:
        self.starting, self.launching = Signal(bool(0)), Signal(bool(0))
        self.running, self.failing = Signal(bool(0)), Signal(bool(0))


class LoadedChunk:
    """The chunk the loader assembles, and the record row it writes (:func:`~.loader.gae_loader` drives these).

    go         : the chunk is loaded and the compute free: it moves on to the compute and queues its drain
    length     : L, its steps (its top slot is time L)
    up         : its direction: time t at row t (up), else at row L - t
    cont       : a continuation chunk (no bootstrap row)
    last_batch : it belongs to the operation's last lane-batch
    last       : the operation's last chunk
    row        : the record register: the last complete input record (a data record or a header)
    row_addr   : the stack row of the last data record
    row_boot   : the last data record is the bootstrap row (its reward is not dequantized into a flag)
    header_scale, header_offset : a q8-runs SCALE / OFFSET header record is in ``row`` (one cycle)
    dq_exit    : the last data record leaves the dequantizers' last stage this cycle (its stack words are ready
                 from the next cycle on)
    writing    : the dequantized row takes the write port this cycle (write-backs come first)
    failed     : the loader saw a stream error (waits for the chunks before it)
    """

    def __init__(self, wd: GaeWidths) -> None:
        self.go, self.up, self.cont = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.last_batch, self.last = Signal(bool(0)), Signal(bool(0))
        self.length = wd.row_signal()
        self.row = Signal(intbv(0)[wd.raw_record :])
        self.row_addr = wd.row_signal(0)
        self.row_boot, self.dq_exit = Signal(bool(0)), Signal(bool(0))
        self.header_scale, self.header_offset = Signal(bool(0)), Signal(bool(0))
        self.writing, self.failed = Signal(bool(0)), Signal(bool(0))


class ComputeState:
    """The compute sequencer's chunk (:func:`~.compute.gae_compute` drives these).

    busy       : a chunk is being computed (from its hand-over to its last write-back)
    up         : its direction
    last_batch : it belongs to the operation's last lane-batch (the lanes beyond LANES_USED idle)
    written    : its write-backs issued so far
    pop        : a pop takes the read port this cycle, at ``pop_addr``
    write_back : a PE result takes the write port this cycle, at ``wb_addr``
    rd_valid   : a popped element (not a bubble) is on the stacks' read data
    rd_boot    : ... and it is the bootstrap row
    """

    def __init__(self, wd: GaeWidths) -> None:
        self.busy, self.up, self.last_batch = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.written = wd.row_signal()
        self.pop, self.write_back = Signal(bool(0)), Signal(bool(0))
        self.pop_addr = Signal(intbv(0, min=-1, max=wd.depth + 1))
        self.wb_addr = Signal(intbv(0, min=-1, max=wd.depth + 1))
        self.rd_valid, self.rd_boot = Signal(bool(0)), Signal(bool(0))


class DrainState:
    """The drain and its sender (:func:`~.drain.gae_drain` drives these).

    want      : the drain reads the row at ``addr`` this cycle (the read port is its first)
    addr      : the stack row it reads next
    length    : the draining chunk's length
    started   : it has read a row of that chunk
    up        : that chunk's direction
    holds     : the drain's read, its data in flight or waiting for the sender hold the read port (the compute yields)
    idle      : nothing of the drain's is pending, in flight or being sent
    last_beat : the operation's last output beat moves this cycle
    """

    def __init__(self, wd: GaeWidths) -> None:
        self.want, self.started, self.up = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.addr = Signal(intbv(0, min=-1, max=wd.depth + 2))
        self.length = wd.row_signal()
        self.holds, self.idle, self.last_beat = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))


class StackPorts:
    """The lanes' FILO stacks' shared ports, registered (:func:`~.ports.stack_ports` drives these): one write port
    (the loader's rows, write-backs first) and one read port (the drain's reads first, then pops)."""

    def __init__(self, wd: GaeWidths) -> None:
        self.wr_en, self.rd_en = Signal(bool(0)), Signal(bool(0))
        self.wr_addr, self.rd_addr = wd.row_signal(0), wd.row_signal(0)
