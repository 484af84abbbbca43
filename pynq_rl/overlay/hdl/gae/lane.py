"""One lane of the GAE core: its word of each input record, its FILO stack, dequantizer and processing element, and
the result it writes back. LANES of them work in step on the shared stack ports.

A stack word is ``{done, value, reward}`` as loaded (DATA words; q8 codes sign-extended in them) and ``{0, R, A}``
as written back; the drain reads the written-back words.
"""

from myhdl import Signal, always, always_comb, block, concat, intbv

from ..common.arith import and2
from ..common.bram import ram_sdp_rf
from .dequant import dequant
from .params import CODE_SLOT_BITS, GaeWidths
from .pe import gae_pe

__all__ = ["gae_lane"]


@block
def gae_lane(
    rd_word, pe_valid, pe_sat, dq_sat, chunk, stacks, comp, q8, gamma, powers, cfg, clock, lane: int, wd: GaeWidths
):
    """Lane ``lane``: stack, dequantizer, PE and write-back word.

    rd_word  : Signal(word), out  -- the stack's read data (to the drain)
    pe_valid : Signal(bool), out  -- the PE's result is valid (a write-back)
    pe_sat   : Signal(bool), out  -- the PE saturated (an active lane only)
    dq_sat   : Signal(bool), out  -- the dequantizer clamped a q8 value
    chunk    : LoadedChunk, in    -- the input record being written (``row``) and ``writing``
    stacks   : StackPorts, in     -- the shared write and read ports
    comp     : ComputeState, in   -- the pop's flags (``rd_valid``, ``rd_boot``) and ``last_batch``
    q8       : Signal(bool), in
    gamma    : Signal(COEF), in
    powers   : list of k + 1 Signal(COEF), in -- C**j
    cfg      : CoreConfig, in     -- LANES_USED, the q8 scales and offsets
    clock    : Signal(bool), in
    lane     : int
    wd       : GaeWidths
    """
    spec = wd.spec
    load_word, wb_word, wr_word = (Signal(intbv(0)[wd.word :]) for _ in range(3))
    unpack = _lane_unpack(load_word, chunk.row, q8, lane, wd)
    ram = ram_sdp_rf(rd_word, wr_word, stacks.wr_addr, stacks.wr_en, stacks.rd_addr, stacks.rd_en, clock, wd.depth)
    active = Signal(bool(0))
    reward, value = wd.data_signal(), wd.data_signal()
    dq_done, dq_valid, dq_boot = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    deq = dequant(
        reward,
        value,
        dq_done,
        dq_valid,
        dq_boot,
        dq_sat,
        rd_word,
        comp.rd_valid,
        comp.rd_boot,
        q8,
        active,
        cfg,
        clock,
        wd,
    )
    adv, ret = wd.data_signal(), wd.data_signal()
    raw_sat = Signal(bool(0))
    pe = gae_pe(adv, ret, pe_valid, raw_sat, reward, value, dq_done, dq_valid, dq_boot, gamma, powers, clock, spec)
    unpack.name, ram.name, deq.name, pe.name = "unpack", "filo", "dequant", "pe"
    return (
        unpack,
        ram,
        deq,
        pe,
        _lane_active(active, cfg.lanes_used, comp.last_batch, lane),
        and2(pe_sat, raw_sat, active),
        _result_word(wb_word, ret, adv, active, wd.data),
        _word_register(wr_word, load_word, wb_word, chunk.writing, clock),
    )


@block
def _lane_unpack(word, row, q8, lane: int, wd: GaeWidths):
    """Lane ``lane``'s stack word ``{done, value, reward}`` from an assembled input record: LANES rewards, LANES
    values, then the done bits, DATA words (raw) or one-byte codes (q8)."""
    lanes, data = wd.spec.lanes, wd.data
    code = CODE_SLOT_BITS
    base_q8 = wd.raw_record - wd.q8_record  # a q8 record sits in the top bits of the record register
    r_raw, v_raw, d_raw = data * lane, data * (lanes + lane), 2 * data * lanes + lane
    r_q8, v_q8, d_q8 = base_q8 + code * lane, base_q8 + code * (lanes + lane), base_q8 + 2 * code * lanes + lane
    reward, value = wd.data_signal(), wd.data_signal()
    done = Signal(bool(0))

    @always_comb
    def pick():
        if q8:
            reward.next = row[r_q8 + code : r_q8].signed()
            value.next = row[v_q8 + code : v_q8].signed()
            done.next = row[d_q8]
        else:
            reward.next = row[r_raw + data : r_raw].signed()
            value.next = row[v_raw + data : v_raw].signed()
            done.next = row[d_raw]

    pack = _word_pack(word, done, value, reward, data)
    return pick, pack


@block
def _word_pack(word, done, value, reward, data: int):
    """``word = {done, value, reward}``: one FILO stack word (``value`` and ``reward`` ``data`` bits each)."""

    @always_comb
    def pack():
        word.next = concat(done, value[data:], reward[data:])

    return pack


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
