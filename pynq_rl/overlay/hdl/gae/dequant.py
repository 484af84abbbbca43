"""The GAE core's dequantizer: a lane's stack word to the PE's inputs, raw words passed, q8 codes scaled."""

from myhdl import Signal, always, always_comb, block, intbv

from ..common.arith import saturate
from .params import CODE_SLOT_BITS, GaeWidths

__all__ = ["dequant", "DEQUANT_LATENCY"]

#: Register stages from a stack word on the BRAM output to the PE inputs (:func:`dequant`: multiply, add, clamp).
DEQUANT_LATENCY = 4


@block
def dequant(
    reward, value, done, valid, boot, saturated, word, in_valid, in_boot, q8, lane_active, cfg, clock, wd: GaeWidths
):
    """Stack word -> PE inputs in :data:`DEQUANT_LATENCY` register stages: raw words pass; q8 codes become
    sat(code * SCALE + OFFSET).

    One operation per stage, so no carry chain sits behind an unregistered multiplier (it was all one cycle, the
    core's critical path: 70-81 MHz on the ECP5-85), and no multiplier behind a BRAM's read data (the BRAM stacks'
    clock-to-out then LUT, multiply and carry chain: 78.6 MHz on the ECP5-85)::

        0  R   word0 = word                   (the stack's read data registered: a BRAM output register)
        1  M   r_prod = code * SCALE          (the DSP's M register; the stack word is copied beside it)
        2  P   r_sum = r_prod + OFFSET        (a post-adder with its P register on a DSP48; the word copied on)
        3  S   reward = q8 ? sat(r_sum) : word, saturated = the q8 clamp flag of a valid, active, non-bootstrap row

    Only the latency changes (:attr:`GaeSpec.pipeline_depth` counts it); the values are those of one cycle.

    reward, value   : Signal(DATA), out -- the PE's r_t and V_t
    done            : Signal(bool), out -- d_t
    valid, boot     : Signal(bool), out -- an element, the bootstrap row (the pop's flags, delayed with the word)
    saturated       : Signal(bool), out -- a q8 clamp of this lane
    word            : Signal(word), in  -- the stack's read data ``{done, value, reward}``
    in_valid, in_boot : Signal(bool), in -- the pop's flags, with ``word``
    q8              : Signal(bool), in
    lane_active     : Signal(bool), in  -- the lane is in use (its clamps count)
    cfg             : CoreConfig, in    -- SCALE and OFFSET registers
    clock           : Signal(bool), in
    wd              : GaeWidths
    """
    spec, data = wd.spec, wd.data
    lo, hi = spec.data.min_code, spec.data.max_code
    scale_bits = spec.scale.width
    code_bits = CODE_SLOT_BITS  # q8 words hold sign-extended codes in their low byte
    # code x scale fits 8 + 25 bits (-128 x -2**24 = 2**31 is the one product needing the 33rd); + OFFSET: 34
    prod_range = dict(min=-(1 << (code_bits + scale_bits - 2)), max=(1 << (code_bits + scale_bits - 2)) + 1)
    sum_range = dict(min=-(1 << (code_bits + scale_bits - 1)), max=1 << (code_bits + scale_bits - 1))
    r_code = Signal(intbv(0, min=-(1 << (code_bits - 1)), max=1 << (code_bits - 1)))
    v_code = Signal(intbv(0, min=-(1 << (code_bits - 1)), max=1 << (code_bits - 1)))
    r_scale = Signal(intbv(0, min=-(1 << (scale_bits - 1)), max=1 << (scale_bits - 1)))  # 8 x 25: one DSP
    v_scale = Signal(intbv(0, min=-(1 << (scale_bits - 1)), max=1 << (scale_bits - 1)))
    # stage 0
    word0 = Signal(intbv(0)[wd.word :])
    valid0, boot0, active0 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # stage 1
    r_prod, v_prod = Signal(intbv(0, **prod_range)), Signal(intbv(0, **prod_range))
    word1 = Signal(intbv(0)[wd.word :])
    valid1, boot1, active1 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # stage 2
    r_sum, v_sum = Signal(intbv(0, **sum_range)), Signal(intbv(0, **sum_range))
    word2 = Signal(intbv(0)[wd.word :])
    valid2, boot2, active2 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    r_word, v_word = wd.data_signal(), wd.data_signal()

    @always_comb
    def split():
        r_code.next = word0[code_bits:0].signed()
        v_code.next = word0[data + code_bits : data].signed()
        r_scale.next = cfg.r_scale[scale_bits:].signed()  # START refused scales outside this range
        v_scale.next = cfg.v_scale[scale_bits:].signed()
        r_word.next = word2[data:0].signed()
        v_word.next = word2[2 * data : data].signed()

    @always(clock.posedge)
    def read_register():
        word0.next = word
        valid0.next = in_valid
        boot0.next = in_boot
        active0.next = lane_active

    @always(clock.posedge)
    def multiply():
        r_prod.next = r_code * r_scale
        v_prod.next = v_code * v_scale
        word1.next = word0
        valid1.next = valid0
        boot1.next = boot0
        active1.next = active0

    @always(clock.posedge)
    def offset():
        r_sum.next = r_prod + cfg.r_offset
        v_sum.next = v_prod + cfg.v_offset
        word2.next = word1
        valid2.next = valid1
        boot2.next = boot1
        active2.next = active1

    r_sat, v_sat = wd.data_signal(), wd.data_signal()
    r_flag, v_flag = Signal(bool(0)), Signal(bool(0))
    clamps = [saturate(r_sat, r_flag, r_sum, lo, hi), saturate(v_sat, v_flag, v_sum, lo, hi)]
    done_bit = 2 * data

    @always(clock.posedge)
    def select():
        valid.next = valid2
        boot.next = boot2
        done.next = word2[done_bit]
        if q8:
            reward.next = r_sat
            value.next = v_sat
            saturated.next = ((r_flag and not boot2) or v_flag) and valid2 and active2
        else:
            reward.next = r_word
            value.next = v_word
            saturated.next = False

    return split, read_register, multiply, offset, clamps, select
