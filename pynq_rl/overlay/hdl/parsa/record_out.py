"""What the ParSa core sends: the emitter (:func:`~.emitter.parsa_emitter`) and the record it is loaded with.

The FSM only says which record is ready (``deciding``: an action record, ``rejecting``: a NO_ACTION record,
``use_dump``: a policy row) and releases a held final word; this block makes the record from the datapath:

* an action record: header (a', explored, q(s', a')) and, with EMIT_VALUES, q(s', .) with the actions beyond
  N_ACTIONS sent as 0; a rejected or terminal record has the NO_ACTION header and zeros. Its final word waits for
  the next record (or the end of the stream) to say whether it carries TLAST;
* a policy row (DUMP_POLICY): row ``dump_r`` of worker ``dump_worker``'s bank, read by the policy port, values only,
  released at once; TLAST on the last row of the last bank.

The emitter snapshots the record when it loads it (when idle), so the FSM goes on with the next one.
"""

from myhdl import Signal, always_comb, block, intbv

from ...spec import PARSA_NO_ACTION
from ..common.mux import field_signed, mux_tree
from .emitter import parsa_emitter
from .params import ParsaWidths

__all__ = ["record_out"]


@block
def _keep(flag, in_use, rejecting):
    """``flag`` = the action's q value goes into the record (in use, record not rejected)"""

    @always_comb
    def logic():
        flag.next = in_use and not rejecting

    return logic


@block
def _value_source(v, q, dump_col, use_dump, keep):
    """What the emitter snapshots for one action: a dumped policy value, q[a], or 0 (beyond N_ACTIONS, rejected)."""

    @always_comb
    def logic():
        if use_dump:
            v.next = dump_col
        elif keep:
            v.next = q
        else:
            v.next = 0

    return logic


@block
def record_out(
    m_tdata,
    m_tvalid,
    m_tlast,
    em_idle,
    m_tready,
    qs,
    in_use,
    rows,
    dump_worker,
    dump_r,
    use_dump,
    rejecting,
    deciding,
    terminal,
    batch_last,
    out_words,
    chosen_r,
    explored_r,
    chosen_q,
    release,
    release_last,
    flush,
    clock,
    reset,
    wd: ParsaWidths,
):
    """The record emitter and its load inputs.

    m_tdata, m_tvalid, m_tlast : Signal, out -- the output stream
    em_idle      : Signal(bool), out -- the emitter is free: a ready record is taken on this edge
    m_tready     : Signal(bool), in
    qs           : Python list of Signal(signed VALUE_W), in -- q(s', .)
    in_use       : Python list of Signal(bool), in -- a < N_ACTIONS
    rows         : Python list of Signal(intbv[ROW_W]), in -- each worker's policy bank read port
    dump_worker  : Signal, in -- DUMP: the bank read
    dump_r       : Signal, in -- DUMP: the row read
    use_dump     : Signal(bool), in -- the FSM's DUMP_LOAD: a policy row is ready
    rejecting    : Signal(bool), in -- the FSM's REJECT: a NO_ACTION record is ready
    deciding     : Signal(bool), in -- the FSM has an action record decided (RUN at t_last, or HOLD)
    terminal     : Signal(bool), in -- the record ends its key's episode: NO_ACTION
    batch_last   : Signal(bool), in -- the state record carried TLAST: the action record ends the stream
    out_words    : Signal, in -- words of an action record (EMIT_VALUES)
    chosen_r     : Signal(intbv[ACTION_BITS]), in -- a'
    explored_r   : Signal(bool), in -- a' was the random choice
    chosen_q     : Signal(signed VALUE_W), in -- q(s', a')
    release      : Signal(bool), in -- pulse: the held final word may leave, TLAST = ``release_last``
    release_last : Signal(bool), in
    flush        : Signal(bool), in -- drop the record (SOFT_RESET)
    clock        : Signal(bool), in
    reset        : ResetSignal, in
    wd           : ParsaWidths
    """
    spec = wd.spec
    w, tpw, ma, vw = spec.workers, spec.tiles_per_worker, spec.max_actions, spec.value_w
    rww = (ma + 1) // 2  # stream words per policy row
    value = dict(min=-(1 << (vw - 1)), max=1 << (vw - 1))
    em_load, em_skip, em_release_now, em_last = Signal(bool(0)), Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    em_words = Signal(intbv(0, min=0, max=rww + 2))
    em_header = Signal(intbv(0)[64:])
    cq32 = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    em_values = [Signal(intbv(0, **value)) for _ in range(ma)]
    keep = [Signal(bool(0)) for _ in range(ma)]
    dump_row = Signal(intbv(0)[wd.row_w :])
    dump_cols = [Signal(intbv(0, **value)) for _ in range(ma)]

    # # #
    insts = [mux_tree(dump_row, rows, dump_worker)]
    for a in range(ma):
        insts.append(field_signed(dump_cols[a], dump_row, a * vw))
        insts.append(_keep(keep[a], in_use[a], rejecting))
        insts.append(_value_source(em_values[a], qs[a], dump_cols[a], use_dump, keep[a]))
    emitter = parsa_emitter(
        m_tdata,
        m_tvalid,
        m_tlast,
        em_idle,
        m_tready,
        em_load,
        em_header,
        em_skip,
        em_words,
        em_release_now,
        em_last,
        release,
        release_last,
        em_values,
        flush,
        clock,
        reset,
    )
    emitter.name = "emitter"
    insts.append(emitter)

    @always_comb
    def q_word():
        cq32.next = chosen_q

    @always_comb
    def load_inputs():
        em_load.next = em_idle and (use_dump or rejecting or deciding)
        if use_dump:
            em_skip.next = 1
            em_words.next = rww + 1
            em_release_now.next = 1
            em_last.next = dump_worker == w - 1 and dump_r == tpw - 1
        else:
            em_skip.next = 0
            em_words.next = out_words
            em_release_now.next = batch_last
            em_last.next = batch_last
        if rejecting or terminal:
            em_header.next = PARSA_NO_ACTION
        else:
            em_header.next = (cq32[32:] << 32) | (explored_r << 16) | chosen_r

    insts += [q_word, load_inputs]
    return insts
