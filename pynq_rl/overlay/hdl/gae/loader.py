"""The GAE core's loader: beats of ``s_axis`` into records, records into rows of the lanes' FILO stacks, chunk after
chunk; it owns the operation's position (lane-batch, chunk) and hands each loaded chunk to the compute.

Beats shift into a record register; each complete data record is one row (one word per lane: reward, value, done)
of the stacks, dequantized on its way there (:func:`~.dequant.dequant`, :data:`~.dequant.LOAD_LATENCY` stages in each
lane). In q8-runs mode two header records (SCALE, then OFFSET; raw-sized) go ahead of every RUN_LENGTH data records
of a lane-batch: they load the lanes' dequantization registers and take no row. A record's last beat waits until the
record before it is written (the dequantizers work on the record register, so one record is in flight at a time:
a record per LOAD_LATENCY + 1 cycles at most, faster than any drain, whose output records are wider).

Chunks alternate direction: time t at row t ("up"), then at row L - t ("down"), L the chunk's length. The previous
chunk's drain frees its rows newest first, which is exactly the order the next chunk loads them, so a record waits
(TREADY low on its last beat) only until the drain has read its row (:func:`_row_free`); no second buffer. A row is
written when the write port is free of write-backs (the loader holds it meanwhile).

Load states: LOAD (records of the current chunk), FULL (waiting for the compute), DISCARD (the operation's records
are in but TLAST has not come: beats are dropped up to it), FAIL (a stream error: the operation ends once the
chunks before it are out), IDLE.
"""

from myhdl import Signal, always_comb, always_seq, block, concat, enum, intbv

from ..common.arith import assign, mux2
from .params import GaeWidths

__all__ = ["gae_loader"]

t_load = enum("IDLE", "LOAD", "DISCARD", "FULL", "FAIL")


@block
def gae_loader(
    s_tready,
    chunk,
    s_tdata,
    s_tvalid,
    s_tlast,
    coded,
    runs,
    phase,
    comp_busy,
    results,
    drain,
    cfg,
    clock,
    reset,
    wd: GaeWidths,
):
    """Records in, rows out, chunk by chunk: the load state and the operation's position here, the record register
    in :func:`_records`.

    s_tready  : Signal(bool), out -- the input stream's TREADY
    chunk     : LoadedChunk, out  -- the chunk being loaded (handed to the compute with ``go``) and its rows
    s_tdata   : Signal(beat), in
    s_tvalid  : Signal(bool), in
    s_tlast   : Signal(bool), in
    coded     : Signal(bool), in  -- the operation's data records are q8 codes (q8 or q8-runs mode; else raw)
    runs      : Signal(bool), in  -- q8-runs mode: header records head every run
    phase     : Phase, in
    comp_busy : Signal(bool), in  -- the compute has a chunk (the loaded one waits)
    results   : Signal(bool), in  -- the PEs' results are valid: a write-back takes the write port this cycle
    drain     : DrainState, in    -- the rows the previous chunk's drain has read
    cfg       : CoreConfig, in    -- ``t_count``, ``batches``, ``chunks`` (read at START and per lane-batch), SOFT_RESET
    clock     : Signal(bool), in
    reset     : ResetSignal, in
    wd        : GaeWidths
    """
    spec, depth = wd.spec, wd.depth
    load_state = Signal(t_load.IDLE)
    row_valid = Signal(bool(0))  # ``row`` is assembled and not yet written (a write-back may hold it)
    asm_row = Signal(intbv(0, min=0, max=depth + 2))  # time index of the record being assembled
    asm_addr = Signal(intbv(0, min=-1, max=depth + 2))  # its stack row, and the row after it in the chunk's direction
    asm_step = Signal(intbv(0, min=-2, max=depth + 3))
    load_end = wd.row_signal()  # the chunk's last input row: L (first chunk) or L - 1 (continuation)
    load_first = Signal(bool(0))  # the operation's first chunk: every row is free
    accept, record_done = Signal(bool(0)), Signal(bool(0))  # a beat moves this cycle; it ends a record
    # the row assembled from the next cycle on is free (registered: no carry chain to TREADY); both candidates, this
    # record's row and the next one's, are compared in parallel and ``record_done`` only selects between the results,
    # so the PEs' write-back handshake (``results`` -> TREADY -> ``record_done``) never runs into the compare chain
    step_free, addr_free = Signal(bool(0)), Signal(bool(0))
    row_free_next, row_free = Signal(bool(0)), Signal(bool(0))
    # lane-batches of this operation still to load, the current one included; chunks of the current lane-batch
    batches_left = Signal(intbv(0, min=0, max=spec.batches_max + 1))
    chunks_left = Signal(intbv(0, min=0, max=spec.chunks_max + 1))
    last_chunk, last_beat_of_record, in_ready = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # header records due before the next data record (2: SCALE next, 1: OFFSET next) and data records of the run so
    # far; counted in every mode, read only in q8-runs (``header`` is gated by ``runs``), so no branch on the mode
    headers_due = Signal(intbv(0, min=0, max=3))
    run_count = Signal(intbv(0, min=0, max=spec.run_length + 1))
    header, boot_record = Signal(bool(0)), Signal(bool(0))  # the record being assembled is a header; the bootstrap
    # a record is in the dequantizers (entered, or in stage M or P: ``chunk.dq_exit`` is stage S)
    entered, in_stage_m = Signal(bool(0)), Signal(bool(0))
    slot_free = Signal(bool(0))  # no record in flight and the last one written (or being written now)
    len_bits = len(chunk.length)  # T as the chunk length register holds it
    batch_bits, chunk_bits = len(batches_left), len(chunks_left)

    @always_comb
    def record_kind():
        header.next = runs and headers_due != 0
        boot_record.next = asm_row == load_end and not chunk.cont

    @always_comb
    def handshake():
        slot_free.next = not (entered or in_stage_m or chunk.dq_exit) and not (row_valid and results)
        in_ready.next = load_state == t_load.DISCARD or (
            load_state == t_load.LOAD and (not last_beat_of_record or (slot_free and (header or row_free)))
        )
        chunk.writing.next = row_valid and not results
        accept.next = load_state == t_load.LOAD and s_tvalid and in_ready
        # a data record completes (a header takes no row: the next row's candidate stays the current one)
        record_done.next = load_state == t_load.LOAD and s_tvalid and in_ready and last_beat_of_record and not header
        chunk.go.next = phase.running and load_state == t_load.FULL and not comp_busy and slot_free
        chunk.failed.next = load_state == t_load.FAIL

    @always_comb
    def batch_end():
        chunk.last_batch.next = batches_left == 1
        last_chunk.next = chunks_left == 1
        chunk.last.next = batches_left == 1 and chunks_left == 1

    @always_seq(clock.posedge, reset=reset)
    def load():
        if cfg.soft_reset:
            load_state.next = t_load.IDLE
        elif phase.launching:
            load_state.next = t_load.LOAD
            run_count.next = 0
            headers_due.next = 2
            asm_row.next = 0
            asm_addr.next = 0
            asm_step.next = 1
            row_free.next = True  # the operation's first chunk has every row to itself
            load_first.next = True
            chunk.up.next = True
            chunk.cont.next = False
            chunk.length.next = cfg.t_count[len_bits:]
            load_end.next = cfg.t_count[len_bits:]
            batches_left.next = cfg.batches[batch_bits:]
            chunks_left.next = cfg.chunks[chunk_bits:]
        elif phase.running:
            if drain.last_beat:  # the operation ends
                load_state.next = t_load.IDLE
            row_free.next = row_free_next
            if accept and last_beat_of_record and header:  # a header record: no row
                headers_due.next = headers_due - 1
                if s_tlast:
                    load_state.next = t_load.FAIL
            elif accept:  # one record per row (:func:`_records` assembles it)
                if last_beat_of_record:
                    if run_count == spec.run_length - 1:  # the next record opens a run
                        run_count.next = 0
                        headers_due.next = 2
                    else:
                        run_count.next = run_count + 1
                    asm_row.next = asm_row + 1
                    asm_addr.next = asm_step
                    if chunk.up:
                        asm_step.next = asm_step + 1
                    else:
                        asm_step.next = asm_step - 1
                    if asm_row == load_end:
                        if s_tlast == chunk.last:
                            load_state.next = t_load.FULL
                        elif s_tlast:
                            load_state.next = t_load.FAIL
                        else:
                            load_state.next = t_load.DISCARD
                    elif s_tlast:
                        load_state.next = t_load.FAIL
                elif s_tlast:
                    load_state.next = t_load.FAIL
            elif load_state == t_load.DISCARD and s_tvalid and s_tlast:
                load_state.next = t_load.FAIL
            # the loaded chunk moves on to the compute: load the next one
            if chunk.go:
                if chunk.last:
                    load_state.next = t_load.IDLE
                else:
                    load_state.next = t_load.LOAD
                    load_first.next = False
                    chunk.up.next = not chunk.up
                    asm_row.next = 0
                    row_free.next = False  # checked again next cycle, against the new chunk
                    if last_chunk:  # the next lane-batch, from its first chunk (and its first run)
                        run_count.next = 0
                        headers_due.next = 2
                        batches_left.next = batches_left - 1
                        chunks_left.next = cfg.chunks[chunk_bits:]
                        chunk.cont.next = False
                        chunk.length.next = cfg.t_count[len_bits:]
                        load_end.next = cfg.t_count[len_bits:]
                    else:  # the next (earlier) chunk of this lane-batch
                        chunks_left.next = chunks_left - 1
                        chunk.cont.next = True
                        chunk.length.next = spec.t_max
                        load_end.next = spec.t_max - 1
                    if not chunk.up:  # the next chunk runs up: time 0 at row 0
                        asm_addr.next = 0
                        asm_step.next = 1
                    elif last_chunk:  # it runs down: time 0 at row L
                        asm_addr.next = cfg.t_count[len_bits:]
                        asm_step.next = cfg.t_count[len_bits:] - 1
                    else:
                        asm_addr.next = spec.t_max
                        asm_step.next = spec.t_max - 1
            if phase.failing:  # a stream error ends the operation
                load_state.next = t_load.IDLE

    records = _records(
        chunk,
        row_valid,
        last_beat_of_record,
        entered,
        in_stage_m,
        s_tdata,
        accept,
        asm_addr,
        coded,
        header,
        headers_due,
        boot_record,
        phase,
        cfg,
        clock,
        reset,
        wd,
    )
    records.name = "records"
    return (
        record_kind,
        handshake,
        batch_end,
        load,
        records,
        assign(s_tready, in_ready),
        _row_free(step_free, asm_step, chunk.up, load_first, drain.length, drain.addr, drain.started, drain.up),
        _row_free(addr_free, asm_addr, chunk.up, load_first, drain.length, drain.addr, drain.started, drain.up),
        mux2(row_free_next, step_free, addr_free, record_done),
    )


@block
def _records(
    chunk,
    row_valid,
    last_beat_of_record,
    entered,
    in_stage_m,
    s_tdata,
    accept,
    asm_addr,
    coded,
    header,
    headers_due,
    boot_record,
    phase,
    cfg,
    clock,
    reset,
    wd: GaeWidths,
):
    """Beats into the record register (``chunk.row``), a complete record's flags, and the dequantizers' progress.

    chunk               : LoadedChunk -- ``row``, ``row_addr``, ``row_boot``, ``header_scale``, ``header_offset``,
                          ``dq_exit`` out; ``writing`` in (the row takes the write port)
    row_valid           : Signal(bool), out -- the dequantized row is ready and not yet written
    last_beat_of_record : Signal(bool), out -- the next beat ends a record (a raw-sized or a q8 record)
    entered, in_stage_m : Signal(bool), out -- a data record entered the dequantizers / is in their stage M
    s_tdata             : Signal(beat), in
    accept              : Signal(bool), in -- a beat of the chunk moves this cycle
    asm_addr            : Signal(intbv), in -- the stack row of the record being assembled
    coded               : Signal(bool), in -- data records are q8 codes
    header              : Signal(bool), in -- the record being assembled is a q8-runs header (raw-sized)
    headers_due         : Signal(intbv), in -- 2: it is the SCALE header, 1: the OFFSET header
    boot_record         : Signal(bool), in -- the record being assembled is the bootstrap row
    phase               : Phase, in
    cfg                 : CoreConfig, in -- SOFT_RESET
    clock, reset        : in
    wd                  : GaeWidths
    """
    beat, beats_raw, beats_q8 = wd.beat, wd.raw_beats, wd.q8_beats
    if beats_raw < 2:
        raise ValueError(
            f"a raw input record must span at least two stream beats; {wd.spec.lanes} lane(s) at "
            f"{wd.spec.stream_bytes} bytes per beat give {beats_raw}: use a narrower stream"
        )
    record = Signal(intbv(0)[wd.raw_record - beat :])  # the beats before the current one (the oldest at the bottom)
    record_shifted = Signal(intbv(0)[wd.raw_record - beat :])
    beat_count = Signal(intbv(0, min=0, max=beats_raw + 1))
    row_bits = len(chunk.row_addr)
    if wd.raw_record - beat > beat:
        shift = _shift_in(record_shifted, s_tdata, record, beat)
    else:
        shift = assign(record_shifted, s_tdata)

    @always_comb
    def record_end():
        if coded and not header:
            last_beat_of_record.next = beat_count == beats_q8 - 1
        else:
            last_beat_of_record.next = beat_count == beats_raw - 1

    @always_seq(clock.posedge, reset=reset)
    def assemble():
        chunk.header_scale.next = False
        chunk.header_offset.next = False
        entered.next = False
        in_stage_m.next = entered
        chunk.dq_exit.next = in_stage_m
        if cfg.soft_reset:
            row_valid.next = False
            in_stage_m.next = False
            chunk.dq_exit.next = False
        elif phase.launching:
            beat_count.next = 0
        elif phase.running:
            if chunk.writing:
                row_valid.next = False
            if chunk.dq_exit:  # the dequantized row is in the lanes' word registers from the next cycle on
                row_valid.next = True
            if accept:
                record.next = record_shifted
                if last_beat_of_record:
                    beat_count.next = 0
                    chunk.row.next = concat(s_tdata, record)
                    if header:
                        chunk.header_scale.next = headers_due == 2
                        chunk.header_offset.next = headers_due == 1
                    else:
                        entered.next = True
                        chunk.row_addr.next = asm_addr[row_bits:]
                        chunk.row_boot.next = boot_record
                else:
                    beat_count.next = beat_count + 1

    return shift, record_end, assemble


@block
def _row_free(free, addr, load_up, load_first, dr_len, dr_addr, dr_started, dr_up):
    """Stack row ``addr`` (the next record's) is free: the operation's first chunk, or the drain of the chunk
    before (the other direction, which has read a row) has read it, or it lies beyond that chunk's rows.

    Chunks alternate direction (time t at row t "up", at row L - t "down"), so the drain of an up chunk frees rows
    L - 1, L - 2, ..., 0 in the order the next (down) chunk loads t = 0, 1, ... into them, and the reverse; its
    top slot (row L up, 0 down) was popped before the drain's first read. ``dr_addr`` is the row the drain reads
    next: an up chunk's drain has read the rows above it, a down chunk's those below. The loader registers the
    result (one cycle late on the drain's side only delays a record; the loader's own side is checked for the
    row it will assemble next, both candidates in parallel), so no carry chain reaches TREADY.
    """

    @always_comb
    def check():
        if load_first:
            free.next = True
        elif dr_up == load_up or not dr_started:
            free.next = False
        elif dr_up:
            free.next = addr > dr_addr
        else:
            free.next = addr < dr_addr or addr > dr_len

    return check


@block
def _shift_in(y, beat_data, previous, beat: int):
    """``y = {beat_data, previous[:beat]}``: the record register after one more beat."""
    width = len(previous)

    @always_comb
    def logic():
        y.next = concat(beat_data, previous[width:beat])

    return logic
