"""The replay core's output register: one beat of ``m_axis`` per cycle, a sample result or a dump beat.

The register is the pipeline's end: it loads when it is free or its beat is taken (``advance``), and every register
of the sampler and the dump shares that enable, so a stalled output stream freezes them in place and nothing is
lost or duplicated. Only one of the sampler and the dump runs at a time.
"""

from myhdl import Signal, always, always_comb, always_seq, block, intbv

__all__ = ["result_out"]


@block
def result_out(
    m_tdata,
    m_tvalid,
    m_tlast,
    advance,
    out_last_beat,
    m_tready,
    sample_valid,
    sample_last,
    sample_index,
    sample_code,
    dump_valid,
    dump_last,
    dump_lo,
    dump_hi,
    flush,
    clock,
    reset,
):
    """The output register and its handshake.

    m_tdata       : Signal(64), out -- results: index in the low word, code in the high word; dump: two leaf
                    codes, the lower index in the low word
    m_tvalid      : Signal(bool), out
    m_tlast       : Signal(bool), out
    advance       : Signal(bool), out -- the register loads on this edge: the pipelines' enable
    out_last_beat : Signal(bool), out -- the TLAST beat is taken
    m_tready      : Signal(bool), in
    sample_valid  : Signal(bool), in -- a sample result
    sample_last   : Signal(bool), in
    sample_index  : Signal(index_bits), in
    sample_code   : Signal(leaf width), in
    dump_valid    : Signal(bool), in -- a dump beat
    dump_last     : Signal(bool), in
    dump_lo       : Signal(leaf width), in
    dump_hi       : Signal(leaf width), in
    flush         : Signal(bool), in -- SOFT_RESET: the beat held is dropped
    clock         : Signal(bool), in
    reset         : ResetSignal, in -- the valid bit and TLAST only
    """
    half = len(m_tdata) // 2
    out_valid, out_last = Signal(bool(0)), Signal(bool(0))
    out_data = Signal(intbv(0)[len(m_tdata) :])

    @always_comb
    def handshake():
        advance.next = not out_valid or m_tready
        out_last_beat.next = out_valid and m_tready and out_last
        m_tdata.next = out_data
        m_tvalid.next = out_valid
        m_tlast.next = out_last

    @always_seq(clock.posedge, reset=reset)
    def output_register():
        if flush:
            out_valid.next = False
        elif advance:
            out_valid.next = sample_valid or dump_valid
            if dump_valid:
                out_last.next = dump_last
            else:
                out_last.next = sample_last

    @always(clock.posedge)
    def output_data():
        if advance:
            if dump_valid:
                out_data.next = (dump_hi << half) | dump_lo
            else:
                out_data.next = (sample_code << half) | sample_index

    return handshake, output_register, output_data
