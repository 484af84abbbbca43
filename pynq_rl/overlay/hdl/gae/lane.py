"""One lane of the GAE core: its word of each input record, dequantized on the way in, its FILO stack and processing
element, and the result it writes back. LANES of them work in step on the shared stack ports.

A stack word is ``{done, value, reward}`` as loaded (DATA words in every mode: :func:`~.dequant.dequant` has scaled
q8 codes already) and ``{0, R, A}`` as written back; the drain reads the written-back words.
"""

from myhdl import Signal, always, always_comb, block, concat, intbv

from ..common.arith import and2
from ..common.bram import ram_sdp_rf
from .dequant import dequant
from .params import GaeWidths
from .pe import gae_pe

__all__ = ["gae_lane", "READ_LATENCY"]

#: Register stages from the stack's read data to the PE's inputs (:func:`_read_register`).
READ_LATENCY = 1


@block
def gae_lane(
    rd_word,
    pe_valid,
    pe_sat,
    dq_sat,
    chunk,
    stacks,
    comp,
    coded,
    launching,
    gamma,
    powers,
    cfg,
    clock,
    lane: int,
    wd: GaeWidths,
):
    """Lane ``lane``: dequantizer, stack, PE and write-back word.

    rd_word   : Signal(word), out  -- the stack's read data (to the drain)
    pe_valid  : Signal(bool), out  -- the PE's result is valid (a write-back)
    pe_sat    : Signal(bool), out  -- the PE saturated (an active lane only)
    dq_sat    : Signal(bool), out  -- the dequantizer clamped a q8 value of an active lane
    chunk     : LoadedChunk, in    -- the record register and its flags, ``writing``, ``last_batch``
    stacks    : StackPorts, in     -- the shared write and read ports
    comp      : ComputeState, in   -- the pop's flags (``rd_valid``, ``rd_boot``) and ``last_batch``
    coded     : Signal(bool), in   -- q8 or q8-runs mode
    launching : Signal(bool), in   -- START (the dequantizer loads the q8 block registers)
    gamma     : Signal(COEF), in
    powers    : list of k + 1 Signal(COEF), in -- C**j
    cfg       : CoreConfig, in     -- LANES_USED, the q8 block scales and offsets
    clock     : Signal(bool), in
    lane      : int
    wd        : GaeWidths
    """
    spec = wd.spec
    load_word, wb_word, wr_word = (Signal(intbv(0)[wd.word :]) for _ in range(3))
    load_active, active = Signal(bool(0)), Signal(bool(0))
    deq = dequant(load_word, dq_sat, chunk, coded, launching, load_active, cfg, clock, lane, wd)
    ram = ram_sdp_rf(rd_word, wr_word, stacks.wr_addr, stacks.wr_en, stacks.rd_addr, stacks.rd_en, clock, wd.depth)
    reward, value = wd.data_signal(), wd.data_signal()
    rd_done, rd_valid, rd_boot = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    read = _read_register(reward, value, rd_done, rd_valid, rd_boot, rd_word, comp.rd_valid, comp.rd_boot, clock, wd)
    adv, ret = wd.data_signal(), wd.data_signal()
    raw_sat = Signal(bool(0))
    pe = gae_pe(adv, ret, pe_valid, raw_sat, reward, value, rd_done, rd_valid, rd_boot, gamma, powers, clock, spec)
    deq.name, ram.name, read.name, pe.name = "dequant", "filo", "read", "pe"
    return (
        deq,
        ram,
        read,
        pe,
        _lane_active(load_active, cfg.lanes_used, chunk.last_batch, lane),
        _lane_active(active, cfg.lanes_used, comp.last_batch, lane),
        and2(pe_sat, raw_sat, active),
        _result_word(wb_word, ret, adv, active, wd.data),
        _word_register(wr_word, load_word, wb_word, chunk.writing, clock),
    )


@block
def _read_register(reward, value, done, valid, boot, word, in_valid, in_boot, clock, wd: GaeWidths):
    """The stack's read data registered into the PE's inputs (a BRAM output register): ``word = {done, value,
    reward}`` split, the pop's flags delayed with it (:data:`READ_LATENCY`)."""
    data = wd.data

    @always(clock.posedge)
    def logic():
        reward.next = word[data:0].signed()
        value.next = word[2 * data : data].signed()
        done.next = word[2 * data]
        valid.next = in_valid
        boot.next = in_boot

    return logic


@block
def _lane_active(active, lanes_used, last_batch, lane: int):
    """Lane ``lane`` computes: every lane of a batch before the last, the first LANES_USED of the last."""

    @always_comb
    def compare():
        active.next = lanes_used > lane or not last_batch

    return compare


@block
def _result_word(word, ret, adv, active, data: int):
    """Write-back word ``{0, R, A}`` of a lane (``data`` bits each); lanes beyond LANES_USED write zeros (the output
    contract)."""

    @always_comb
    def pack():
        if active:
            word.next = concat(False, ret[data:], adv[data:])
        else:
            word.next = 0

    return pack


@block
def _word_register(y, load_word, wb_word, loading, clock):
    """The BRAM write data, registered in step with the write enable and address the stack ports register."""

    @always(clock.posedge)
    def logic():
        if loading:
            y.next = load_word
        else:
            y.next = wb_word

    return logic
