"""The ParSa mailbox: one decision through registers, no DMA (``ParsaMode.MAILBOX``).

The host writes one state record into the register window MBOX_KEY, MBOX_REWARD, MBOX_STATE_0.. (the record's
32-bit words in stream order, one burst), then START with MODE = MAILBOX, then reads MBOX_ACTION. This block sits
between the core's stream ports and the DMA's:

* the window's writes (passed on by the register file, :func:`~..common.axi_lite.axi_lite_regfile`'s ``window``)
  go to two word memories, the low and the high halves of the record's 64-bit words;
* a MAILBOX START arms a source that replaces ``s_axis`` in front of the core: the record's words, one per cycle,
  TLAST on the last, into the same record path an ACT stream takes (the core sees MODE = ACT), so a mailbox
  decision is bit-exact with a one-record ACT stream by construction, CYCLES included;
* the core's action record goes to a sink instead of ``m_axis``: its header (action, explored, q[a]) is kept for
  MBOX_ACTION and MBOX_Q, any EMIT_VALUES words are dropped;
* ``hold`` is high from the START until the core is no longer BUSY: the register file holds a read of MBOX_ACTION
  meanwhile (wait states), so one read returns the decision.

While no MAILBOX decision runs, ``s_axis`` and ``m_axis`` pass straight through.
"""

from myhdl import Signal, always, always_comb, always_seq, block, concat, intbv

from ...spec import PARSA_MBOX_FLAGS, PARSA_MBOX_WINDOW, PARSA_REGISTERS, ParsaMode, ParsaSpec

__all__ = ["parsa_mailbox", "window_registers", "LOW_WORD"]

MODE_MAILBOX = int(ParsaMode.MAILBOX)
#: word index (byte offset / 4) of the window's first register, MBOX_KEY: record word 0
LOW_WORD = PARSA_REGISTERS["MBOX_KEY"]["address_offset"] // 4


def window_registers() -> tuple[str, ...]:
    """Names of the window's write-only registers, in record order (``spec.PARSA_MBOX_WINDOW``), checked to be
    consecutive words."""
    offsets = [PARSA_REGISTERS[name]["address_offset"] for name in PARSA_MBOX_WINDOW]
    if offsets != list(range(offsets[0], offsets[0] + 4 * len(offsets), 4)):
        raise ValueError("the mailbox window's registers are not consecutive words")
    return PARSA_MBOX_WINDOW


@block
def _window_memory(lo_mem, hi_mem, rd_lo, rd_hi, w_strobe, w_addr, w_data, rd_index, clock, depth: int):
    """The window as ``depth`` 64-bit record words: written a 32-bit half at a time, read into a register.

    The read is registered so that the LUT RAM's output goes straight to a flip-flop: read asynchronously, it ran
    through the stream multiplexer into the core's record and LOAD logic in the same cycle, the ParSa test build's
    critical path on the ECP5 (``mailbox_index`` -> DPRAM -> 8 LUTs -> STATUS.SATURATED, 97.6 MHz).

    lo_mem, hi_mem : lists of Signal(32) -- record word halves (written by the bus, no reset: LUT RAM)
    rd_lo, rd_hi   : Signal(32), out -- the halves of record word ``rd_index`` of the previous cycle (registered)
    w_strobe, w_addr, w_data : Signal, in -- the register file's window write (``w_addr``: the word address)
    rd_index       : Signal, in -- the word to read on this edge
    clock          : Signal(bool), in
    depth          : int -- record words of the largest record (1 + ceil(MAX_DIMS / 2))
    """
    w_row = Signal(intbv(0, min=0, max=depth))
    w_hit = Signal(bool(0))

    @always_comb
    def row():
        if w_addr >= LOW_WORD and w_addr < LOW_WORD + 2 * depth:
            w_hit.next = w_strobe
            w_row.next = (w_addr - LOW_WORD) >> 1
        else:
            w_hit.next = 0
            w_row.next = 0

    @always(clock.posedge)
    def write():
        if w_hit:
            if w_addr[0]:
                hi_mem[w_row].next = w_data
            else:
                lo_mem[w_row].next = w_data

    @always(clock.posedge)
    def read():
        rd_lo.next = lo_mem[rd_index]
        rd_hi.next = hi_mem[rd_index]

    return row, write, read


@block
def parsa_mailbox(
    core_s_tdata,
    core_s_tvalid,
    core_s_tlast,
    s_tready,
    core_m_tready,
    m_tdata,
    m_tvalid,
    m_tlast,
    mbox_action,
    mbox_q,
    hold,
    s_tdata,
    s_tvalid,
    s_tlast,
    core_s_tready,
    core_m_tdata,
    core_m_tvalid,
    core_m_tlast,
    m_tready,
    w_strobe,
    w_addr,
    w_data,
    start,
    soft_reset,
    mode,
    n_dims,
    busy,
    flags,
    clock,
    reset,
    spec: ParsaSpec,
):
    """The mailbox source and sink around the core's streams, and the mailbox result registers.

    core_s_tdata, core_s_tvalid, core_s_tlast : Signal, out -- the core's input stream (the mailbox record while
                                                armed, else ``s_axis``)
    s_tready      : Signal(bool), out -- ``s_axis`` TREADY (low while armed)
    core_m_tready : Signal(bool), out -- the core's output TREADY (high while the sink takes the action record)
    m_tdata, m_tvalid, m_tlast : Signal, out -- ``m_axis`` (TVALID low while the sink takes the record)
    mbox_action   : Signal(32), out -- MBOX_ACTION: the kept action and explored bit, and the STATUS flags
    mbox_q        : Signal(32), out -- MBOX_Q: the kept q[a]
    hold          : Signal(bool), out -- a MAILBOX decision runs (from START until the core is not BUSY)
    s_tdata, s_tvalid, s_tlast : Signal, in -- ``s_axis`` from the DMA
    core_s_tready : Signal(bool), in
    core_m_tdata, core_m_tvalid, core_m_tlast : Signal, in -- the core's output stream
    m_tready      : Signal(bool), in -- ``m_axis`` TREADY from the DMA
    w_strobe, w_addr, w_data : Signal, in -- window writes (the register file's ``window`` port; word address)
    start, soft_reset : Signal(bool), in -- CTRL pulses
    mode          : Signal, in -- CTRL.MODE as written
    n_dims        : Signal(32), in -- the N_DIMS register
    busy          : Signal(bool), in -- STATUS.BUSY (low exactly when the core's FSM is IDLE)
    flags         : Signal(len(PARSA_MBOX_FLAGS)), in -- the STATUS flags MBOX_ACTION carries, in its order
    clock, reset  : in
    spec          : ParsaSpec

    Timing of a decision (one cycle per record word; ``w`` = 1 + ceil(N_DIMS / 2))::

        start          _/^\\_______________________________
        armed          ___/^^^^^^^^^^^\\___________________   w cycles: core_s_tvalid, word 0..w-1, TLAST on w-1
        busy           ___/^^^^^^^^^^^^^^^^^^^^^^^^^^^^\\___   RECV, RUN, UPD, FINISH
        sinking        ___/^^^^^^^^^^^^^^^^^^^\\___________   until the action record's TLAST
        hold           ___/^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\\__   until BUSY falls
    """
    md = spec.max_dims
    depth = 1 + (md + 1) // 2  # record words of the largest record
    if LOW_WORD % 2:
        raise ValueError("the mailbox window must start on a 64-bit boundary (MBOX_KEY's offset)")
    flags_lo = PARSA_REGISTERS["MBOX_ACTION"]["fields"][PARSA_MBOX_FLAGS[0]]["bit_offset"]
    keep_w = PARSA_REGISTERS["MBOX_ACTION"]["fields"]["EXPLORED"]["bit_offset"] + 1  # action and explored bits

    lo_mem = [Signal(intbv(0)[32:]) for _ in range(depth)]
    hi_mem = [Signal(intbv(0)[32:]) for _ in range(depth)]
    rd_lo, rd_hi = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    index = Signal(intbv(0, min=0, max=depth))
    next_index = Signal(intbv(0, min=0, max=depth))  # ``index`` after this edge: the word the window reads
    last_index = Signal(intbv(0, min=0, max=depth))
    armed, sinking, first, running, fresh = [Signal(bool(0)) for _ in range(5)]
    kept = Signal(intbv(0)[keep_w:])
    kept_q = Signal(intbv(0)[32:])
    dim_bits = len(intbv(0, min=0, max=md + 1))

    # # #
    memory = _window_memory(lo_mem, hi_mem, rd_lo, rd_hi, w_strobe, w_addr, w_data, next_index, clock, depth)
    memory.name = "window"

    @always_comb
    def read_address():
        # what ``control`` does to ``index`` on this edge, so the registered read holds word ``index`` in every cycle
        if soft_reset:
            next_index.next = index
        elif start and not busy:
            next_index.next = 0
        elif armed and core_s_tready and index != last_index:
            next_index.next = index + 1
        else:
            next_index.next = index

    @always_comb
    def source():
        if armed:
            core_s_tdata.next = concat(rd_hi, rd_lo)
            core_s_tvalid.next = 1
            core_s_tlast.next = index == last_index
            s_tready.next = 0
        else:
            core_s_tdata.next = s_tdata
            core_s_tvalid.next = s_tvalid
            core_s_tlast.next = s_tlast
            s_tready.next = core_s_tready

    @always_comb
    def sink():
        m_tdata.next = core_m_tdata
        m_tlast.next = core_m_tlast
        if sinking:
            core_m_tready.next = 1
            m_tvalid.next = 0
        else:
            core_m_tready.next = m_tready
            m_tvalid.next = core_m_tvalid

    @always_seq(clock.posedge, reset=reset)
    def control():
        fresh.next = 0
        if soft_reset:
            armed.next = 0
            sinking.next = 0
            running.next = 0
        elif start and not busy:  # the core leaves IDLE (or refuses) on this edge
            armed.next = mode == MODE_MAILBOX
            # (never over a beat the core already offers: the mailbox takes only the record it asked for; in a run
            # no beat is left when the core is idle, so this guard changes nothing there but lets the formal
            # check's induction close)
            sinking.next = mode == MODE_MAILBOX and not core_m_tvalid
            running.next = mode == MODE_MAILBOX
            fresh.next = 1
            first.next = 1
            index.next = 0
            if n_dims <= md:  # else the START is refused: nothing is sent
                last_index.next = (n_dims[dim_bits:] + 1) >> 1
        else:
            if armed and core_s_tready:  # the core took word ``index``
                if index == last_index:
                    armed.next = 0
                else:
                    index.next = index + 1
            if sinking and core_m_tvalid:  # the sink takes every word of the action record
                if first:
                    kept.next = core_m_tdata[keep_w:]
                    kept_q.next = core_m_tdata[64:32]
                    first.next = 0
                if core_m_tlast:
                    sinking.next = 0
            if running and not fresh and not busy:
                running.next = 0

    @always_comb
    def results():
        mbox_action.next = (flags << flags_lo) | kept
        mbox_q.next = kept_q
        hold.next = running

    return memory, read_address, source, sink, control, results
