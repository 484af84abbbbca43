"""The replay core's command front end: the FSM one START runs, STATUS, CYCLES and the SET records' input register.

The state (:data:`t_state`) is the core's one state register; the other blocks decode what they need of it (the
sampler CHECK and SAMPLE, the dump DUMP) and report back (the sampler's check and end of batch, the output's last
beat). The operations and CYCLES are described in :mod:`.core`; here, per state:

* IDLE: START clears STATUS and CYCLES and picks the mode's state; an unknown MODE is refused (DONE|ERR_CONFIG).
* SET: the input is always ready; a record goes to the updater one edge later (``rec_valid``, ``rec_index``,
  ``rec_code``) unless its index is beyond the tree (dropped, ERR_CONFIG); a code above the largest leaf code is
  saturated (SATURATED). TLAST: SET_DRAIN, ``set_depth`` cycles for the records in flight, then DONE.
* CHECK: waits for the sampler's START check; refused: DONE|ERR_CONFIG. SAMPLE: until the sampler's end of batch.
* DUMP: until the output's TLAST beat. CLEAR: one cycle per word of the widest level (``clear_addr``).
* SOFT_RESET: IDLE with STATUS cleared, but during SET or SET_DRAIN the records already accepted complete first
  (SET_DRAIN without DONE: the tree stays consistent).
"""

from myhdl import Signal, always, always_comb, always_seq, block, enum, intbv, modbv

from ...spec import ReplayMode, ReplaySpec
from .updater import set_depth

__all__ = ["replay_command", "t_state", "record_fields"]

t_state = enum("IDLE", "CHECK", "SET", "SET_DRAIN", "SAMPLE", "DUMP", "CLEAR")
MODE_SET, MODE_SAMPLE, MODE_UNIFORM = int(ReplayMode.SET), int(ReplayMode.SAMPLE), int(ReplayMode.SAMPLE_UNIFORM)
MODE_DUMP, MODE_CLEAR = int(ReplayMode.DUMP), int(ReplayMode.CLEAR)


def record_fields(spec: ReplaySpec) -> tuple[int, int]:
    """Bits of a stream record and of each of its two fields (index or uniform low, code high): one beat each."""
    record_bits = 8 * spec.stream_bytes
    return record_bits, record_bits // 2


@block
def replay_command(
    state,
    s_tready,
    mode_set,
    mode_dump,
    clearing,
    clear_addr,
    rec_valid,
    rec_index,
    rec_code,
    s_tdata,
    s_tvalid,
    s_tlast,
    status,
    out_last_beat,
    cfg,
    clock,
    reset,
    spec: ReplaySpec,
):
    """The FSM, STATUS, CYCLES, the input stream's TREADY and the SET input register.

    state         : Signal(t_state), out -- the FSM's state
    s_tready      : Signal(bool), out -- SET: always; SAMPLE: ``u_ready``
    mode_set      : Signal(bool), out -- SET or SET_DRAIN: the updater owns the tree's ports
    mode_dump     : Signal(bool), out -- DUMP: the dump owns the leaf memory's read port
    clearing      : Signal(bool), out -- CLEAR: every level writes 0 at ``clear_addr``
    clear_addr    : Signal(intbv), out
    rec_valid     : Signal(bool), out -- a SET record for the updater (registered)
    rec_index     : Signal(index_bits), out -- its leaf index
    rec_code      : Signal(leaf width), out -- its code, saturated to the largest leaf code
    s_tdata       : Signal(64), in -- set records: index in the low word, code in the high word
    s_tvalid      : Signal(bool), in
    s_tlast       : Signal(bool), in
    status        : SampleStatus, in -- the sampler's ``u_ready``, ``check_end``, ``check_ok``, ``stream_error``,
                    ``sample_end``
    out_last_beat : Signal(bool), in -- the output stream takes its TLAST beat (DUMP)
    cfg           : ReplayConfig -- ``mode``, ``start``, ``soft_reset`` in; ``busy``, ``done``, ``err_config``,
                    ``err_stream``, ``saturated``, ``cycles`` out
    clock         : Signal(bool), in
    reset         : ResetSignal, in -- synchronous
    """
    clear_words = spec.k ** (spec.levels - 1)
    drain_cycles = set_depth(spec)
    drain = Signal(intbv(0, min=0, max=drain_cycles + 1))
    silent = Signal(bool(0))  # a SOFT_RESET interrupted the SET: drain without raising DONE
    index_ok, code_big = Signal(bool(1)), Signal(bool(0))
    in_beat = Signal(bool(0))
    cc = Signal(modbv(0)[len(cfg.cycles) :])
    set_input = _set_input(rec_index, rec_code, index_ok, code_big, s_tdata, clock, spec)
    set_input.name = "set_input"
    counter = _cycle_counter(cc, state, in_beat, cfg, clock, reset)
    counter.name = "cycle_counter"
    decode = _decode(mode_set, mode_dump, clearing, s_tready, in_beat, state, s_tvalid, status.u_ready)
    decode.name = "decode"

    @always_seq(clock.posedge, reset=reset)
    def control():
        rec_valid.next = False
        if cfg.soft_reset:
            if state == t_state.SET or state == t_state.SET_DRAIN:
                state.next = t_state.SET_DRAIN  # the records accepted so far complete: the tree stays consistent
                drain.next = drain_cycles
                silent.next = True
            else:
                state.next = t_state.IDLE
                cfg.busy.next = False
            cfg.done.next = False
            cfg.err_config.next = False
            cfg.err_stream.next = False
            cfg.saturated.next = False
        elif state == t_state.IDLE:
            if cfg.start:
                cfg.done.next = False
                cfg.err_config.next = False
                cfg.err_stream.next = False
                cfg.saturated.next = False
                cfg.cycles.next = 0
                if cfg.mode == MODE_SET:
                    state.next = t_state.SET
                    cfg.busy.next = True
                elif cfg.mode == MODE_SAMPLE or cfg.mode == MODE_UNIFORM:
                    state.next = t_state.CHECK
                    cfg.busy.next = True
                elif cfg.mode == MODE_DUMP:
                    state.next = t_state.DUMP
                    cfg.busy.next = True
                elif cfg.mode == MODE_CLEAR:
                    state.next = t_state.CLEAR
                    cfg.busy.next = True
                    clear_addr.next = 0
                else:
                    cfg.done.next = True
                    cfg.err_config.next = True
        else:
            finish = False
            if state == t_state.SET:
                if s_tvalid:
                    rec_valid.next = index_ok
                    if not index_ok:
                        cfg.err_config.next = True
                    if index_ok and code_big:
                        cfg.saturated.next = True
                    if s_tlast:
                        state.next = t_state.SET_DRAIN
                        drain.next = drain_cycles
            elif state == t_state.SET_DRAIN:
                if drain == 1:
                    finish = True
                else:
                    drain.next = drain - 1
            elif state == t_state.CHECK:
                if status.check_end:
                    if status.check_ok:
                        state.next = t_state.SAMPLE
                    else:
                        state.next = t_state.IDLE
                        cfg.busy.next = False
                        cfg.done.next = True
                        cfg.err_config.next = True
            elif state == t_state.SAMPLE:
                if status.stream_error:
                    cfg.err_stream.next = True
                if status.sample_end:
                    finish = True
            elif state == t_state.DUMP:
                if out_last_beat:
                    finish = True
            else:  # CLEAR
                if clear_addr == clear_words - 1:
                    finish = True
                else:
                    clear_addr.next = clear_addr + 1
            if finish:
                state.next = t_state.IDLE
                cfg.busy.next = False
                silent.next = False
                if not silent:
                    cfg.done.next = True
                    cfg.cycles.next = cc + 1

    return set_input, counter, decode, control


@block
def _decode(mode_set, mode_dump, clearing, s_tready, in_beat, state, s_tvalid, u_ready):
    """What the state means to the tree and the input stream (combinational).

    mode_set  : Signal(bool), out -- SET or SET_DRAIN
    mode_dump : Signal(bool), out -- DUMP
    clearing  : Signal(bool), out -- CLEAR
    s_tready  : Signal(bool), out -- SET: always; SAMPLE: ``u_ready``
    in_beat   : Signal(bool), out -- an input beat is taken (CYCLES counts from the first)
    state     : Signal(t_state), in
    s_tvalid  : Signal(bool), in
    u_ready   : Signal(bool), in -- the sampler takes an input beat this cycle (SAMPLE_UNIFORM)
    """

    @always_comb
    def modes():
        mode_set.next = state == t_state.SET or state == t_state.SET_DRAIN
        mode_dump.next = state == t_state.DUMP
        clearing.next = state == t_state.CLEAR

    @always_comb
    def handshake():
        if state == t_state.SET:
            s_tready.next = True
            in_beat.next = s_tvalid
        elif state == t_state.SAMPLE:
            s_tready.next = u_ready
            in_beat.next = s_tvalid and u_ready
        else:
            s_tready.next = False
            in_beat.next = False

    return modes, handshake


@block
def _set_input(rec_index, rec_code, index_ok, code_big, s_tdata, clock, spec: ReplaySpec):
    """The SET record of this cycle's input beat, checked (combinational) and registered for the updater.

    rec_index : Signal(index_bits), out -- the leaf index (registered)
    rec_code  : Signal(leaf width), out -- the code, the largest leaf code when it is above (registered)
    index_ok  : Signal(bool), out -- the index is below the capacity (its high bits are 0)
    code_big  : Signal(bool), out -- the code is above the largest leaf code
    s_tdata   : Signal(64), in
    clock     : Signal(bool), in
    """
    ib, lw, max_code = spec.index_bits, spec.leaf.width, spec.leaf.max_code
    record_bits, field_bits = record_fields(spec)

    @always_comb
    def checks():
        index_ok.next = s_tdata[field_bits:ib] == 0
        code_big.next = s_tdata[record_bits:field_bits] > max_code

    @always(clock.posedge)
    def register():
        rec_index.next = s_tdata[ib:]
        if code_big:
            rec_code.next = max_code
        else:
            rec_code.next = s_tdata[field_bits + lw : field_bits]

    return checks, register


@block
def _cycle_counter(cc, state, in_beat, cfg, clock, reset):
    """CYCLES less one, counting from START (SAMPLE, DUMP, CLEAR) or from the first input beat (SET,
    SAMPLE_UNIFORM); the FSM copies ``cc + 1`` to ``cfg.cycles`` in the cycle DONE rises.

    cc      : Signal(modbv[32]), out
    state   : Signal(t_state), in
    in_beat : Signal(bool), in -- an input beat is taken
    cfg     : ReplayConfig, in -- ``start``, ``mode``, ``soft_reset``
    clock   : Signal(bool), in
    reset   : ResetSignal, in
    """
    counting = Signal(bool(0))

    @always_seq(clock.posedge, reset=reset)
    def count():
        if cfg.soft_reset:
            counting.next = False
        elif state == t_state.IDLE:
            if cfg.start:
                cc.next = 0
                counting.next = cfg.mode == MODE_SAMPLE or cfg.mode == MODE_DUMP or cfg.mode == MODE_CLEAR
        elif counting or in_beat:
            cc.next = cc + 1
            counting.next = True

    return count
