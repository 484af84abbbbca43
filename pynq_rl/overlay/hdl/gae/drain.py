"""The GAE core's drain and sender: each chunk's results read from the stacks newest first while they are written
back, and sent on ``m_axis`` as output records.

The drain reads t = L - 1 .. 0 (the write-back order, each row once written back), so it trails the compute instead
of waiting for A_0; the next chunk's drain waits in ``pend`` until this one's last read. The sender shifts one
output record out (TLAST on the operation's last beat) and takes the drain's next row on the beat after its last.
A lane-batch's output is therefore in reverse time order (:meth:`GaeSpec.output_rows`); the driver flips it with a
view.
"""

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, intbv

from .params import GaeWidths

__all__ = ["gae_drain", "DRAIN_LEAD"]

#: Output beats left in the sender when the drain reads its next row: the read takes two cycles (issue, BRAM), so
#: three keeps the stream gap-free and the row never waits on the BRAM output without back-pressure.
DRAIN_LEAD = 3


@block
def gae_drain(
    m_tdata, m_tvalid, m_tlast, drain, rd_words, m_tready, chunk, comp, phase, cfg, clock, reset, wd: GaeWidths
):
    """Results out of the stacks (``read``) and onto the output stream (``send``).

    m_tdata  : Signal(beat), out -- output stream (AXI4-Stream master)
    m_tvalid : Signal(bool), out
    m_tlast  : Signal(bool), out
    drain    : DrainState, out  -- the row it reads next, the read port held, the last beat
    rd_words : list of LANES Signal(word), in -- the stacks' read data (``{0, R, A}`` of the drain's row)
    m_tready : Signal(bool), in
    chunk    : LoadedChunk, in  -- a chunk handed to the compute queues its drain (``go``)
    comp     : ComputeState, in -- the compute's chunk and its write-backs so far
    phase    : Phase, in
    cfg      : CoreConfig, in   -- SOFT_RESET
    clock    : Signal(bool), in
    reset    : ResetSignal, in
    wd       : GaeWidths
    """
    data, beat, beats_out = wd.data, wd.beat, wd.out_beats
    dr_count = wd.row_signal()  # rows of the draining chunk read
    dr_last = Signal(bool(0))  # the draining chunk is the operation's last
    pend_valid, pend_up, pend_last = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    pend_len = wd.row_signal()
    dr_read, dr_read_last = Signal(bool(0)), Signal(bool(0))  # the read port's read this cycle is the drain's
    prefetched, prefetched_last = Signal(bool(0)), Signal(bool(0))  # the drain's row is on the BRAM output
    taken = Signal(bool(0))  # the sender takes the prefetched row this cycle
    out_sr = Signal(intbv(0)[wd.out_record :])  # the output record being sent
    out_beats = Signal(intbv(0, min=0, max=beats_out + 1))  # its beats left
    out_last, out_free = Signal(bool(0)), Signal(bool(0))  # it is the operation's last; the sender is free
    # the output record: LANES advantages then LANES returns, each the DATA bits of a stack word
    fields = [word(data, 0) for word in rd_words] + [word(2 * data, data) for word in rd_words]
    pad = wd.out_record - data * len(fields)
    out_row = ConcatSignal(*([intbv(0)[pad:]] if pad else []), *reversed(fields))
    wants = _drain_wants(drain, dr_count, dr_read, prefetched, out_beats, comp, beats_out)

    @always_comb
    def stream():
        m_tdata.next = out_sr[beat:0]
        m_tvalid.next = out_beats != 0
        m_tlast.next = out_beats == 1 and out_last
        out_free.next = out_beats == 0 or (out_beats == 1 and m_tready)
        taken.next = prefetched and out_free
        drain.last_beat.next = out_beats == 1 and m_tready and out_last
        drain.holds.next = drain.want or dr_read or (prefetched and not taken)
        drain.idle.next = (
            not pend_valid and dr_count == drain.length and not dr_read and not prefetched and out_beats == 0
        )

    @always_seq(clock.posedge, reset=reset)
    def send():  # shift the record out; the drain's next row follows on the beat after its last
        if cfg.soft_reset:
            prefetched.next = False
            out_beats.next = 0
        elif phase.running:
            if out_beats != 0 and m_tready:
                out_sr.next = out_sr >> beat
                out_beats.next = out_beats - 1
            if taken:
                out_sr.next = out_row
                out_beats.next = beats_out
                out_last.next = prefetched_last
                prefetched.next = False
            if dr_read:
                prefetched.next = True
                prefetched_last.next = dr_read_last

    @always_seq(clock.posedge, reset=reset)
    def read():
        dr_read.next = False
        if cfg.soft_reset:
            drain.length.next = 0
            dr_count.next = 0
            drain.started.next = False
            pend_valid.next = False
        elif phase.running:
            if drain.want:  # read the draining chunk's rows, newest first, each once its write-back is in
                if drain.up:
                    drain.addr.next = drain.addr - 1
                else:
                    drain.addr.next = drain.addr + 1
                dr_read.next = True
                dr_read_last.next = dr_last and dr_count + 1 == drain.length
                dr_count.next = dr_count + 1
                drain.started.next = True
            elif pend_valid and dr_count == drain.length:  # the next chunk's drain
                drain.length.next = pend_len
                drain.up.next = pend_up
                dr_last.next = pend_last
                dr_count.next = 0
                drain.started.next = False
                if pend_up:  # newest first: row L - 1 down to 0, or row 1 up to L
                    drain.addr.next = pend_len - 1
                else:
                    drain.addr.next = 1
                pend_valid.next = False
            if chunk.go:
                pend_valid.next = True
                pend_len.next = chunk.length
                pend_up.next = chunk.up
                pend_last.next = chunk.last

    return wants, stream, send, read


@block
def _drain_wants(drain, dr_count, dr_read, prefetched, out_beats, comp, beats_out: int):
    """``drain.want``: the drain reads its next row this cycle: one is left, its result is written back (the chunk's
    compute has moved on, or its write-backs passed this row), nothing of the drain's is in flight, and the sender
    will be ready for the row when it arrives two cycles later (:data:`DRAIN_LEAD` beats or fewer left), so the row
    waits on the BRAM output, where it holds up the compute's pops, only under back-pressure."""

    if beats_out <= DRAIN_LEAD:  # records of DRAIN_LEAD beats or fewer: any count is near enough

        @always_comb
        def check():
            written = dr_count < comp.written or not (comp.busy and comp.up == drain.up)
            drain.want.next = dr_count < drain.length and written and not dr_read and not prefetched
    else:

        @always_comb
        def check():
            written = dr_count < comp.written or not (comp.busy and comp.up == drain.up)
            drain.want.next = (
                dr_count < drain.length and written and not dr_read and not prefetched and out_beats <= DRAIN_LEAD
            )

    return check
