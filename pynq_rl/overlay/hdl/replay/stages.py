"""Enable-gated pipeline registers shared by the sampler's stages (:mod:`.sampler`, :mod:`.descend`).

Every register of the sampler loads only when ``advance`` is high (the output register is free or being taken), so
a stalled output stream freezes the whole pipeline in place; only the valid bits have a reset and a flush.
"""

from myhdl import always, always_seq, block

__all__ = ["valid_stage", "word_stage"]


@block
def valid_stage(valid, last, in_valid, in_last, advance, flush, clock, reset):
    """One stage of a sample's valid bit (reset, flushed) and last flag.

    valid    : Signal(bool), out -- ``in_valid`` one enabled edge later; 0 after ``flush`` or reset
    last     : Signal(bool), out -- ``in_last`` one enabled edge later (no reset)
    in_valid : Signal(bool), in
    in_last  : Signal(bool), in
    advance  : Signal(bool), in -- pipeline enable
    flush    : Signal(bool), in -- drop the sample (SOFT_RESET)
    clock    : Signal(bool), in
    reset    : ResetSignal, in
    """

    @always_seq(clock.posedge, reset=reset)
    def valid_bit():
        if flush:
            valid.next = False
        elif advance:
            valid.next = in_valid

    @always(clock.posedge)
    def last_bit():
        if advance:
            last.next = in_last

    return valid_bit, last_bit


@block
def word_stage(q, d, advance, clock):
    """``q = d`` on every enabled edge (a delay-line tap; no reset).

    q       : Signal, out
    d       : Signal, in
    advance : Signal(bool), in -- pipeline enable
    clock   : Signal(bool), in
    """

    @always(clock.posedge)
    def stage():
        if advance:
            q.next = d

    return stage
