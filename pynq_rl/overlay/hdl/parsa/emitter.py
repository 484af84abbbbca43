"""The output side of the ParSa core: one record (a header word, then value pairs) out of ``m_axis``.

Used for action records (header = action, explored, q[a]; then the N_ACTIONS q values with EMIT_VALUES) and for
policy rows in DUMP_POLICY (no header). ``load`` snapshots the record, so the core can compute the next one while
this one leaves. The final word is held until it is known whether it ends the stream: ``load_release`` says so
at load time (the input record carried TLAST), else a later ``release`` pulse gives it with ``release_last``::

    aclk      _/^\\_/^\\_/^\\_/^\\_/^\\_/^\\_
    load      _/^^^\\_______________________     (load_release=0)
    tvalid    _____/^^^^^^^\\_______/^^^\\___     words 0..n-2, then the held final word
    release   _____________________/^^^\\___     (release_last=1: TLAST on the final word)
    idle      ^^^^^\\___________________/^^^^
"""

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, intbv

from ..common.mux import mux_tree

__all__ = ["parsa_emitter"]


@block
def _snapshot(y, a, load, clock):
    @always(clock.posedge)
    def logic():
        if load:
            y.next = a

    return logic


@block
def _sign_extend32(y, a):
    """``y`` = the 32 bits of signed ``a`` sign-extended (``y`` unsigned)."""
    wide = Signal(intbv(0, min=-(1 << 31), max=1 << 31))

    @always_comb
    def extend():
        wide.next = a

    @always_comb
    def bits():
        y.next = wide[32:]

    return extend, bits


@block
def parsa_emitter(
    tdata,
    tvalid,
    tlast,
    idle,
    tready,
    load,
    load_header,
    load_skip_header,
    load_words,
    load_release,
    load_last,
    release,
    release_last,
    values,
    flush,
    clock,
    reset,
):
    """Record emitter.

    tdata, tvalid, tlast : m_axis signals, out
    idle             : Signal(bool), out -- no record loaded (the last one has left)
    tready           : Signal(bool), in
    load             : Signal(bool), in -- take a record: header, values, word count
    load_header      : Signal(intbv[64]), in
    load_skip_header : Signal(bool), in -- the record is value pairs only (a policy row)
    load_words       : Signal(intbv), in -- words of the record, header included (counted even when skipped)
    load_release     : Signal(bool), in -- the final word may leave at once, with TLAST = load_last
    load_last        : Signal(bool), in
    release          : Signal(bool), in -- the held final word may leave, with TLAST = release_last
    release_last     : Signal(bool), in
    values           : Python list of Signal(signed), in -- the record's values (two per word after the header)
    flush            : Signal(bool), in -- drop the record (soft reset)
    clock            : Signal(bool), in
    reset            : ResetSignal, in
    """
    n = len(values)
    pairs = (n + 1) // 2
    snaps = [Signal(intbv(0, min=v.min, max=v.max)) for v in values]
    words32 = [Signal(intbv(0)[32:]) for _ in range(n)]
    pair_words = []
    header = Signal(intbv(0)[64:])
    count = Signal(intbv(0, min=0, max=pairs + 2))
    k = Signal(intbv(0, min=0, max=pairs + 2))
    busy, released, last_flag = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    pair_sel = Signal(intbv(0)[max(1, (pairs - 1).bit_length()) :])
    pair_data = Signal(intbv(0)[64:])
    active = int(reset.active)

    # # #
    insts = []
    for a in range(n):
        insts.append(_snapshot(snaps[a], values[a], load, clock))
        insts.append(_sign_extend32(words32[a], snaps[a]))
    for j in range(pairs):
        high = words32[2 * j + 1] if 2 * j + 1 < n else intbv(0)[32:]
        pair_words.append(ConcatSignal(high, words32[2 * j]))
    insts.append(mux_tree(pair_data, pair_words, pair_sel))

    @always(clock.posedge)
    def header_register():
        if load:
            header.next = load_header

    @always_seq(clock.posedge, reset=reset)
    def control():
        if flush:
            busy.next = 0
            released.next = 0
        elif load:
            busy.next = 1
            count.next = load_words
            if load_skip_header:
                k.next = 1
            else:
                k.next = 0
            released.next = load_release
            last_flag.next = load_last
        else:
            if release and not released:  # (a word already released keeps its TLAST: it may be on the bus)
                released.next = 1
                last_flag.next = release_last
            if busy and tready and (k + 1 < count or released):
                if k + 1 == count:
                    busy.next = 0
                else:
                    k.next = k + 1

    @always_comb
    def outputs():
        # reading the reset makes a Verilog simulator evaluate these port outputs when the reset is first driven
        # (they depend on registers only, so an event-driven simulator would leave them X until the first load)
        if reset == active:
            tvalid.next = 0
        else:
            tvalid.next = busy and (k + 1 < count or released)
        tlast.next = k + 1 == count and last_flag
        idle.next = not busy
        if k == 0:
            tdata.next = header
        else:
            tdata.next = pair_data
        if k == 0:
            pair_sel.next = 0
        else:
            pair_sel.next = k - 1

    insts += [header_register, control, outputs]
    return insts
