"""The GAE core's dequantizer: one lane's word of each input record to its FILO stack word, on the way in.

Raw words pass; q8 codes become ``sat(code * SCALE + OFFSET)`` with the lane's own SCALE and OFFSET registers, which
START loads from the q8 block registers (``R_SCALE``, ``V_SCALE``, ``R_OFFSET``, ``V_OFFSET``) and, in q8-runs mode,
each run's two header records load again. Records arrive forward in time with every run after its headers, so
dequantizing on the way in needs one register pair per lane and no memory of past runs: a run's parameters are gone by
the time the compute pops its rows backward, and the stacks hold DATA words in every mode.

One operation per register stage, as the core's timing needs (no carry chain behind an unregistered multiplier, no
multiplier behind the record register's fan-out)::

    M  r_prod = code * SCALE            (the DSP's M register; the raw words and the done bit copied beside it)
    P  r_sum = r_prod + OFFSET          (a post-adder with its P register on a DSP48)
    S  word = {done, value, reward}     (q8 modes: the clamped sums; raw: the words), the clamp flag with it

On a fabric of 18 x 18 multipliers (``GaeSpec.multiplier_port_bits = 18``, the ECP5 place-and-route stand-in) the
25-bit SCALE does not fit one port: synthesized whole, ``code * SCALE`` becomes two multipliers summed by a carry
chain before the M register, the slowest path of the routed GAE builds. There SCALE is split at bit 17 and stage M
registers the two partial products right behind their multipliers; stage P adds them with the OFFSET::

    M  r_lo = code * SCALE[16:0],  r_hi = code * (SCALE >> 17)
    P  r_sum = r_hi * 2**17 + r_lo + OFFSET

the same sum, so the same words and the same latency.

The stages run every cycle on the record register (``chunk.row``), which holds a record from its last beat until the
next record's: the loader accepts a record only when the one before is written (:func:`~.loader.gae_loader`), so
``word`` is that record's while the write waits for the port.
"""

from myhdl import Signal, always, always_comb, block, concat, intbv

from ..common.arith import SPLIT_BIT, saturate
from ..common.mac import product_range, product_signal, ranged, split_halves, split_wiring
from .params import CODE_SLOT_BITS, GaeWidths

__all__ = ["dequant", "LOAD_LATENCY"]

#: Register stages from the record register to the stack word (:func:`dequant`: multiply, add, clamp).
LOAD_LATENCY = 3


@block
def dequant(word, saturated, chunk, coded, launching, lane_active, cfg, clock, lane: int, wd: GaeWidths):
    """Lane ``lane``'s stack word ``{done, value, reward}`` of the record in ``chunk.row``, :data:`LOAD_LATENCY`
    cycles after it, and its SCALE / OFFSET registers.

    word        : Signal(word), out -- the stack word of the record that entered three cycles before
    saturated   : Signal(bool), out -- its q8 clamp flag (a bootstrap record's reward does not count)
    chunk       : LoadedChunk, in   -- ``row``, ``row_boot``, ``header_scale``, ``header_offset``, ``dq_exit``
    coded       : Signal(bool), in  -- the operation's records are q8 codes (q8 or q8-runs mode)
    launching   : Signal(bool), in  -- START: load SCALE and OFFSET from the q8 block registers
    lane_active : Signal(bool), in  -- the lane is in use in the loading lane-batch (its clamps count)
    cfg         : CoreConfig, in    -- ``R_SCALE``, ``V_SCALE``, ``R_OFFSET`` and ``V_OFFSET``
    clock       : Signal(bool), in
    lane        : int
    wd          : GaeWidths
    """
    spec, data, lanes = wd.spec, wd.data, wd.spec.lanes
    lo, hi = spec.data.min_code, spec.data.max_code
    scale_bits, code = spec.scale.width, CODE_SLOT_BITS
    row = chunk.row
    base_q8 = wd.raw_record - wd.q8_record  # a q8 record sits in the top bits of the record register
    r_raw, v_raw, d_raw = data * lane, data * (lanes + lane), 2 * data * lanes + lane
    r_q8, v_q8, d_q8 = base_q8 + code * lane, base_q8 + code * (lanes + lane), base_q8 + 2 * code * lanes + lane
    # code x scale fits 8 + 25 bits (-128 x -2**24 = 2**31 is the one product needing the 33rd); + OFFSET: 34
    sum_range = dict(min=-(1 << (code + scale_bits - 1)), max=1 << (code + scale_bits - 1))

    def scale_signal():
        return Signal(intbv(0, min=-(1 << (scale_bits - 1)), max=1 << (scale_bits - 1)))

    def code_signal():
        return Signal(intbv(0, min=-(1 << (code - 1)), max=1 << (code - 1)))

    r_scale, v_scale, head_r_scale, head_v_scale = (scale_signal() for _ in range(4))
    r_offset, v_offset = wd.data_signal(), wd.data_signal()
    r_code, v_code = code_signal(), code_signal()
    r_word, v_word = wd.data_signal(), wd.data_signal()
    done_bit = Signal(bool(0))
    # beside stage M
    r_word1, v_word1 = wd.data_signal(), wd.data_signal()
    done1, boot1 = Signal(bool(0)), Signal(bool(0))
    # stage P, and beside it
    r_sum, v_sum = Signal(intbv(0, **sum_range)), Signal(intbv(0, **sum_range))
    r_word2, v_word2 = wd.data_signal(), wd.data_signal()
    done2, boot2 = Signal(bool(0)), Signal(bool(0))

    @always_comb
    def split():
        r_code.next = row[r_q8 + code : r_q8].signed()
        v_code.next = row[v_q8 + code : v_q8].signed()
        r_word.next = row[r_raw + data : r_raw].signed()
        v_word.next = row[v_raw + data : v_raw].signed()
        head_r_scale.next = row[r_raw + scale_bits : r_raw].signed()  # a header's SCALE: the word's low bits
        head_v_scale.next = row[v_raw + scale_bits : v_raw].signed()
        if coded:
            done_bit.next = row[d_q8]
        else:
            done_bit.next = row[d_raw]

    @always(clock.posedge)
    def parameters():
        if launching:
            r_scale.next = cfg.r_scale[scale_bits:].signed()  # START refused q8 block scales outside this range
            v_scale.next = cfg.v_scale[scale_bits:].signed()
            r_offset.next = cfg.r_offset
            v_offset.next = cfg.v_offset
        elif chunk.header_scale:
            r_scale.next = head_r_scale
            v_scale.next = head_v_scale
        elif chunk.header_offset:
            r_offset.next = r_word
            v_offset.next = v_word

    @always(clock.posedge)
    def carry():  # the raw words, the done bit and the bootstrap mark beside stages M and P
        r_word1.next = r_word
        v_word1.next = v_word
        done1.next = done_bit
        boot1.next = chunk.row_boot
        r_word2.next = r_word1
        v_word2.next = v_word1
        done2.next = done1
        boot2.next = boot1

    scaling = [
        _scale_and_offset(total, code_in, scale_in, offset_in, clock, spec.multiplier_port_bits)
        for total, code_in, scale_in, offset_in in (
            (r_sum, r_code, r_scale, r_offset),
            (v_sum, v_code, v_scale, v_offset),
        )
    ]

    r_sat, v_sat = wd.data_signal(), wd.data_signal()
    r_flag, v_flag = Signal(bool(0)), Signal(bool(0))
    clamps = [saturate(r_sat, r_flag, r_sum, lo, hi), saturate(v_sat, v_flag, v_sum, lo, hi)]

    @always(clock.posedge)
    def select():
        if coded:
            word.next = concat(done2, v_sat[data:], r_sat[data:])
            saturated.next = ((r_flag and not boot2) or v_flag) and chunk.dq_exit and lane_active
        else:
            word.next = concat(done2, v_word2[data:], r_word2[data:])
            saturated.next = False

    return split, parameters, carry, scaling, clamps, select


@block
def _scale_and_offset(total, code, scale, offset, clock, port_bits: int):
    """``total = code * scale + offset``, two clock edges after its operands (stages M and P of :func:`dequant`).

    ``scale`` wider than ``port_bits``: split at bit 17 into two partial products, each registered behind its
    multiplier (the module docstring); otherwise one product, as a DSP48 computes it with its M and P registers.

    total  : Signal(signed), out -- wide enough for every sum
    code   : Signal(signed), in
    scale  : Signal(signed), in
    offset : Signal(signed), in
    clock  : Signal(bool), in
    """
    if len(scale) <= port_bits:
        product = ranged(*product_range(code, scale))

        @always(clock.posedge)
        def multiply():
            product.next = code * scale

        @always(clock.posedge)
        def add():
            total.next = product + offset

        return multiply, add
    else:
        scale_lo, scale_hi = split_halves(scale)
        # declared signed, as the MAC's partial products: the sum below stays a signed Verilog expression
        part_lo, part_hi = product_signal(code, scale_lo), product_signal(code, scale_hi)

        @always(clock.posedge)
        def multiply():
            part_lo.next = code * scale_lo
            part_hi.next = code * scale_hi

        @always(clock.posedge)
        def add():
            total.next = (part_hi << SPLIT_BIT) + part_lo + offset

        return split_wiring(scale_lo, scale_hi, scale), multiply, add
