"""The input side of the ParSa core: what each operation does with the words of ``s_axis``, and the policy port.

The control FSM (:func:`pynq_rl.overlay.hdl.parsa.core.parsa_core`) decides the state and counts the words
(``word_count``); these blocks act on the word of the current cycle in their state, one edge later, exactly as the
FSM would:

* :func:`config_loader` (CFG): the first N_DIMS words are dimension records, written to the positions unit's
  inactive bank; then the tiling descriptors, two words each, go to the workers and the configuration check;
* :func:`record_receiver` (RECV): a state record's header word (key, flags, reward), then its state words, written to
  the positions unit;
* :func:`policy_port` (LOAD_POLICY, CLEAR, DUMP_POLICY): the workers' policy-bank port. It writes a row per
  ``ceil(MAX_ACTIONS / 2)`` input words (LOAD), every row of every bank at once, one row per cycle (CLEAR), or
  reads the row the emitter sends next (DUMP). Its counters restart whenever the core is idle;
* :func:`row_assembler` (LOAD_POLICY): the row the policy port writes, one column per value of the input words,
  each saturated to VALUE_W bits (the saturation flags feed STATUS.SATURATED).

``active`` inputs are the FSM's state decoded with SOFT_RESET taken out (a soft reset wins over any state's work).
:func:`parsa_inputs` wires them, the positions unit the first two write (:func:`~.positions.parsa_positions`) and
the configuration check the descriptors go to (:func:`~.config_check.parsa_config_check`).
"""

from myhdl import ConcatSignal, Signal, always_comb, always_seq, block, concat, intbv

from ..common.arith import saturate
from ..common.mux import field_signed
from .config_check import parsa_config_check
from .params import ParsaPhase, ParsaReport, ParsaRun, ParsaWidths, WorkerBus
from .positions import parsa_positions
from .reduce import or_chain

__all__ = ["parsa_inputs", "config_loader", "record_receiver", "policy_port", "row_assembler"]


@block
def parsa_inputs(
    u_mem, bus: WorkerBus, rep: ParsaReport, phase: ParsaPhase, run: ParsaRun, s_tdata, s_tvalid, clock, reset, wd
):
    """The input side: the stream's words into the positions unit, the workers' descriptors and their policy banks.

    u_mem    : list of MAX_DIMS Signal(16), out -- the positions unit's u_d (the workers read them)
    bus      : WorkerBus, out -- ``desc_we``, ``desc_worker``, ``desc_word``; the policy port's ``pol_*``
    rep      : ParsaReport, out -- ``cfg_bad``, the record header (``hdr_key``, ``hdr_flags``, ``hdr_reward``), the
               policy port's counters (``load_w``, ``load_sat``, ``clear_r``, ``dump_r``, ``dump_worker``),
               ``load_sat_now``; ``em_idle`` in
    phase    : ParsaPhase, in -- which state's work runs (``in_cfg``, ``in_recv``, ``idle``, ``in_load``, ...)
    run      : ParsaRun, in -- ``word_count``, ``n_dims``, ``dim_bank``, ``pos_go``, ``check_clear``
    s_tdata  : Signal(64), in
    s_tvalid : Signal(bool), in
    clock    : Signal(bool), in
    reset    : ResetSignal, in
    wd       : ParsaWidths
    """
    spec = wd.spec
    md, tpw, rww = spec.max_dims, spec.tiles_per_worker, (spec.max_actions + 1) // 2
    dim_we, state_we = Signal(bool(0)), Signal(bool(0))
    dim_waddr = Signal(intbv(0, min=0, max=2 * md))
    state_waddr = Signal(intbv(0, min=0, max=(md + 1) // 2))
    dim_wdata, state_wdata = Signal(intbv(0)[64:]), Signal(intbv(0)[64:])
    desc_w0, desc_w1 = Signal(intbv(0)[64:]), Signal(intbv(0)[32:])
    desc_strobe, desc_phase, pol_zero = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    load_k = Signal(intbv(0, min=0, max=rww + 1))
    load_r = Signal(intbv(0, min=0, max=tpw + 1))
    word_count, n_dims, dim_bank = run.word_count, run.n_dims, run.dim_bank
    positions = parsa_positions(
        u_mem,
        run.pos_go,
        n_dims,
        dim_we,
        dim_waddr,
        dim_wdata,
        dim_bank,
        state_we,
        state_waddr,
        state_wdata,
        clock,
        reset,
        wd,
    )
    positions.name = "positions"
    loader = config_loader(
        dim_we,
        dim_waddr,
        dim_wdata,
        desc_w0,
        desc_w1,
        desc_strobe,
        desc_phase,
        bus,
        phase.in_cfg,
        s_tvalid,
        s_tdata,
        word_count,
        n_dims,
        dim_bank,
        clock,
        reset,
        wd,
    )
    loader.name = "config_loader"
    checker = parsa_config_check(rep.cfg_bad, desc_strobe, desc_w0, desc_w1, n_dims, run.check_clear, clock, reset, wd)
    checker.name = "config_check"
    receiver = record_receiver(
        rep.hdr_key,
        rep.hdr_flags,
        rep.hdr_reward,
        state_we,
        state_waddr,
        state_wdata,
        phase.in_recv,
        s_tvalid,
        s_tdata,
        word_count,
        clock,
        reset,
    )
    receiver.name = "record_receiver"
    port = policy_port(
        bus,
        pol_zero,
        load_k,
        load_r,
        rep.load_w,
        rep.load_sat,
        rep.clear_r,
        rep.dump_r,
        rep.dump_worker,
        phase.idle,
        phase.in_load,
        phase.in_clear,
        phase.in_dump_read,
        phase.in_dump_load,
        s_tvalid,
        rep.load_sat_now,
        rep.em_idle,
        clock,
        reset,
        wd,
    )
    port.name = "policy_port"
    assembler = row_assembler(bus, rep.load_sat_now, pol_zero, s_tdata, phase.load_strobe, load_k, clock, wd)
    assembler.name = "row_assembler"
    return positions, loader, checker, receiver, port, assembler


@block
def config_loader(
    dim_we,
    dim_waddr,
    dim_wdata,
    desc_w0,
    desc_w1,
    desc_strobe,
    desc_phase,
    bus,
    active,
    s_tvalid,
    s_tdata,
    word_count,
    n_dims,
    dim_bank,
    clock,
    reset,
    wd: ParsaWidths,
):
    """CONFIG words: dimension records, then tiling descriptors.

    dim_we, dim_waddr, dim_wdata : Signal, out -- write of dimension record ``word_count`` into the positions unit's
                                   inactive bank (``dim_bank`` = 0: rows MAX_DIMS.., else 0..)
    desc_w0, desc_w1             : Signal(64), Signal(32), out -- the descriptor being assembled
    desc_strobe                  : Signal(bool), out -- a whole descriptor is in desc_w0/desc_w1 (configuration check)
    desc_phase                   : Signal(bool), out -- the next descriptor word is word 1 (restarts outside CFG)
    bus                          : WorkerBus, out    -- ``desc_we``, ``desc_worker``, ``desc_word`` to the workers
    active                       : Signal(bool), in  -- the FSM is in CFG (and no SOFT_RESET)
    s_tvalid, s_tdata            : Signal, in        -- the input stream (TREADY is high in CFG)
    word_count                   : Signal, in        -- words of this stream before this one
    n_dims                       : Signal, in        -- dimension records ahead of the descriptors
    dim_bank                     : Signal(bool), in  -- the positions unit's active bank
    clock, reset                 : in
    wd                           : ParsaWidths
    """
    md, db, rb = wd.spec.max_dims, wd.dim_bits, wd.row_bits

    @always_seq(clock.posedge, reset=reset)
    def load():
        dim_we.next = 0
        desc_strobe.next = 0
        bus.desc_we.next = 0
        if not active:
            desc_phase.next = 0
        elif s_tvalid:
            if word_count < n_dims:
                dim_we.next = 1
                if dim_bank:
                    dim_waddr.next = word_count[len(n_dims) :]
                else:
                    dim_waddr.next = md + word_count[len(n_dims) :]
                dim_wdata.next = s_tdata
            else:
                desc_phase.next = not desc_phase
                if not desc_phase:
                    desc_w0.next = s_tdata
                else:
                    desc_w1.next = s_tdata[32:]
                    desc_strobe.next = 1
                    bus.desc_we.next = 1
                    bus.desc_worker.next = desc_w0[8:]
                    bus.desc_word.next = concat(
                        s_tdata[24 + db : 24],
                        s_tdata[16 + db : 16],
                        s_tdata[8 + db : 8],
                        s_tdata[db:0],
                        desc_w0[11:8],
                        desc_w0[24:16],
                        desc_w0[32:24],
                        s_tdata[48:32],
                        desc_w0[32 + rb : 32],
                    )

    return load


@block
def record_receiver(
    hdr_key,
    hdr_flags,
    hdr_reward,
    state_we,
    state_waddr,
    state_wdata,
    active,
    s_tvalid,
    s_tdata,
    word_count,
    clock,
    reset,
):
    """ACT words: a state record's header, then its state words.

    hdr_key, hdr_flags, hdr_reward        : Signal, out -- header word 0: bits [15:0], [17:16], [63:32] (signed)
    state_we, state_waddr, state_wdata    : Signal, out -- write of state word ``word_count - 1`` (two dims each)
                                            into the positions unit
    active                                : Signal(bool), in -- the FSM is in RECV (and no SOFT_RESET)
    s_tvalid, s_tdata                     : Signal, in
    word_count                            : Signal, in -- words of this record before this one
    clock, reset                          : in
    """

    @always_seq(clock.posedge, reset=reset)
    def receive():
        state_we.next = 0
        if active and s_tvalid:
            if word_count == 0:
                hdr_key.next = s_tdata[16:]
                hdr_flags.next = s_tdata[18:16]
                hdr_reward.next = s_tdata[64:32].signed()
            else:
                state_we.next = 1
                state_waddr.next = word_count - 1
                state_wdata.next = s_tdata

    return receive


@block
def policy_port(
    bus,
    pol_zero,
    load_k,
    load_r,
    load_w,
    load_sat,
    clear_r,
    dump_r,
    dump_worker,
    idle,
    loading,
    clearing,
    dump_reading,
    dump_loading,
    s_tvalid,
    load_sat_now,
    em_idle,
    clock,
    reset,
    wd: ParsaWidths,
):
    """The policy banks' write and read port, and the row counters of LOAD_POLICY, CLEAR and DUMP_POLICY.

    bus          : WorkerBus, out -- ``pol_we``, ``pol_all``, ``pol_addr``, ``pol_worker``, ``pol_ren``, ``pol_raddr``
    pol_zero     : Signal(bool), out -- the row written is zeros (CLEAR), not the assembled input row
    load_k       : Signal, out -- LOAD: input word within the row being assembled
    load_r       : Signal, out -- LOAD: row within the bank
    load_w       : Signal, out -- LOAD: worker (bank); WORKERS once every bank is loaded
    load_sat     : Signal(bool), out -- LOAD: a loaded value saturated (before this word)
    clear_r      : Signal, out -- CLEAR: the row being zeroed in every bank
    dump_r       : Signal, out -- DUMP: row to read
    dump_worker  : Signal, out -- DUMP: bank to read
    idle         : Signal(bool), in -- the FSM is in IDLE: every counter restarts
    loading      : Signal(bool), in -- LOAD_POLICY (and no SOFT_RESET)
    clearing     : Signal(bool), in -- CLEAR (and no SOFT_RESET)
    dump_reading : Signal(bool), in -- DUMP_READ: read row ``dump_r`` of bank ``dump_worker``
    dump_loading : Signal(bool), in -- DUMP_LOAD (and no SOFT_RESET): the emitter takes the row when ``em_idle``
    s_tvalid     : Signal(bool), in
    load_sat_now : Signal(bool), in -- a column of the current input word saturated
    em_idle      : Signal(bool), in
    clock, reset : in
    wd           : ParsaWidths
    """
    spec = wd.spec
    w, tpw, rww, rb = spec.workers, spec.tiles_per_worker, (spec.max_actions + 1) // 2, wd.row_bits

    @always_seq(clock.posedge, reset=reset)
    def port():
        bus.pol_we.next = 0
        bus.pol_ren.next = 0
        if idle:
            load_k.next = 0
            load_r.next = 0
            load_w.next = 0
            load_sat.next = 0
            clear_r.next = 0
            dump_r.next = 0
            dump_worker.next = 0
        elif loading:
            if s_tvalid and load_w < w:
                if load_sat_now:
                    load_sat.next = 1
                if load_k == rww - 1:
                    load_k.next = 0
                    bus.pol_we.next = 1
                    pol_zero.next = 0
                    bus.pol_all.next = 0
                    bus.pol_addr.next = load_r[rb:]
                    bus.pol_worker.next = load_w[len(bus.pol_worker) :]
                    if load_r == tpw - 1:
                        load_r.next = 0
                        load_w.next = load_w + 1
                    else:
                        load_r.next = load_r + 1
                else:
                    load_k.next = load_k + 1
        elif clearing:
            bus.pol_we.next = 1
            pol_zero.next = 1
            bus.pol_all.next = 1
            bus.pol_addr.next = clear_r[rb:]
            if clear_r != tpw - 1:
                clear_r.next = clear_r + 1
        elif dump_reading:
            bus.pol_ren.next = 1
            bus.pol_raddr.next = dump_r[rb:]
        elif dump_loading and em_idle:
            if dump_r == tpw - 1:
                dump_r.next = 0
                if dump_worker != w - 1:
                    dump_worker.next = dump_worker + 1
            else:
                dump_r.next = dump_r + 1

    return port


@block
def _load_column(col, flag, tdata, strobe, word_index, clock, column: int, vw: int):
    """Policy LOAD: column ``column`` of the row being assembled takes its stream value, saturated to ``vw`` bits.

    col  : Signal(intbv[vw]), out (the value's bits, registered)
    flag : Signal(bool), out -- the value on the stream now saturates (combinational)
    """
    lo, hi = -(1 << (vw - 1)), (1 << (vw - 1)) - 1
    raw = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    clamped = Signal(intbv(0, min=lo, max=hi + 1))
    sat = Signal(bool(0))
    word = column // 2
    insts = [field_signed(raw, tdata, 32 * (column % 2))]
    if vw < 32:
        insts.append(saturate(clamped, sat, raw, lo, hi))
    else:

        @always_comb
        def passthrough():
            clamped.next = raw

        insts.append(passthrough)

    @always_comb
    def saturation():
        flag.next = sat and strobe and word_index == word

    @always_seq(clock.posedge, reset=None)
    def register():
        if strobe and word_index == word:
            col.next = clamped[vw:]

    insts += [saturation, register]
    return insts


@block
def row_assembler(bus, load_sat_now, pol_zero, s_tdata, load_strobe, load_k, clock, wd: ParsaWidths):
    """LOAD_POLICY: a policy row from ``ceil(MAX_ACTIONS / 2)`` input words (two signed 32-bit values per word, column
    ``a`` from word ``a // 2``), the data :func:`policy_port` writes.

    bus          : WorkerBus, out -- ``pol_wdata``: the assembled row, or zeros when ``pol_zero`` (CLEAR)
    load_sat_now : Signal(bool), out -- a value of the current input word saturates (combinational)
    pol_zero     : Signal(bool), in -- from :func:`policy_port`
    s_tdata      : Signal(64), in
    load_strobe  : Signal(bool), in -- the FSM takes an input word in LOAD (every bank not yet loaded)
    load_k       : Signal, in -- the input word's index within the row (:func:`policy_port`)
    clock        : Signal(bool), in
    wd           : ParsaWidths
    """
    vw, ma = wd.vw, wd.ma
    cols = [Signal(intbv(0)[vw:]) for _ in range(ma)]
    flags = [Signal(bool(0)) for _ in range(ma)]
    row = ConcatSignal(*reversed(cols)) if ma > 1 else cols[0]

    # # #
    insts = []
    for a in range(ma):
        insts.append(_load_column(cols[a], flags[a], s_tdata, load_strobe, load_k, clock, a, vw))
    insts.append(or_chain(load_sat_now, flags))

    @always_comb
    def row_data():
        if pol_zero:
            bus.pol_wdata.next = 0
        else:
            bus.pol_wdata.next = row

    insts.append(row_data)
    return insts
