"""The GAE core behind its streams: record assembly, BRAM FILO stacks, LANES processing elements, control.

Operation (the same contract as the emulated IP, :mod:`pynq_rl.host.backends.gae_ip`): START with a good
configuration makes the core BUSY until the last output beat (DONE) or a stream error (DONE|ERR_STREAM, once the
chunks before it are out); a bad configuration sets DONE|ERR_CONFIG at once. In between, three engines work on
consecutive chunks at the same time, so the stream, not the phases, sets the pace (issue 15)::

    loader   | load c+1 (rows drain c freed) |            | load c+2 (rows drain c+1 frees)     |
    compute  |                               | compute c+1 (pops, write-backs)   |
    drain    | drain c, newest first         |     drain c+1, trailing the write-backs          |

* BATCHES lane-batches run back to back in one operation, each as CHUNKS chunks (``T + (CHUNKS - 1) x T_MAX``
  steps: the first (latest) T steps and the bootstrap row, then T_MAX steps each without one); TLAST ends only the
  last record of the last chunk of the last batch (earlier: ERR_STREAM; missing: the core discards up to TLAST, then
  ERR_STREAM). The last batch uses LANES_USED lanes, the others all of them. A continuation chunk's top slot (where
  the bootstrap row would be) is popped as a bubble, so the PEs keep V_{t+1} and their delta and A histories: the
  recursion goes on across the chunk boundary.
* Loader: beats of ``s_axis`` shift into a record register; each complete record is one row (one word per lane:
  reward, value, done) of the lanes' FILO stacks (one simple-dual-port BRAM per lane, HEPPO section IV). Chunks
  alternate direction: time t at row t ("up"), then at row L - t ("down"), L the chunk's length. The previous
  chunk's drain frees its rows newest first, which is exactly the order the next chunk loads them, so a record
  waits (TREADY low on its last beat) only until the drain has read its row (:func:`_row_free`); no second buffer.
* Compute: once a chunk is loaded and the previous one written back, its rows are popped backward, one per cycle
  (t = L, L - 1, ..., 0), dequantized and fed to the PEs; each PE's A_t and R_t are written back in place. The drain
  has the read port first (the compute issues a bubble, which the PEs pass), write-backs have the write port first
  (the loader holds its row). ``cycles`` counts the compute's cycles but not its bubbles: ``T + spec.pipeline_depth``
  per chunk (:attr:`GaeSpec.pipeline_depth`; a test holds them equal). Dequantization takes
  :data:`DEQUANT_LATENCY` stages (register the read, multiply, add the offset, clamp), the PE ``PE_LATENCY``.
* Drain: each chunk's results are read newest first (t = L - 1 .. 0, the write-back order, each once written back),
  so the drain trails the compute instead of waiting for A_0; they leave on ``m_axis`` as output records, TLAST on
  the operation's last beat. A lane-batch's output is therefore in reverse time order
  (:meth:`GaeSpec.output_rows`); the driver flips it with a view.

Stream handshakes are AXI4-Stream (a beat moves on ``tvalid and tready``)::

    aclk     _/^\\_/^\\_/^\\_/^\\_/^\\_
    tvalid   ___/^^^^^^^^^^^^^\\____
    tready   ^^^^^^^^\\___/^^^^^^^^^
    beat         0   1   .   2
"""

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, enum, intbv, modbv

from ...spec import GaeMode, GaeSpec
from ..common.arith import and2, assign, mux2, saturate
from ..common.bram import ram_sdp_rf
from .pe import coef_powers, gae_pe

__all__ = ["gae_core", "CoreConfig", "DEQUANT_LATENCY"]

#: Register stages from a stack word on the BRAM output to the PE inputs (:func:`_dequant`: multiply, add, clamp).
DEQUANT_LATENCY = 4
#: Output beats left in the sender when the drain reads its next row: the read takes two cycles (issue, BRAM), so
#: three keeps the stream gap-free and the row never waits on the BRAM output without back-pressure.
DRAIN_LEAD = 3

t_state = enum("IDLE", "BUSY")
t_load = enum("IDLE", "LOAD", "DISCARD", "FULL", "FAIL")


class CoreConfig:
    """Configuration and status signals between the register file and the core (one instance per core).

    Inputs (from registers): ``t_count``, ``lanes_used``, ``batches``, ``chunks``, ``gamma``, ``gamma_lambda``,
    ``mode``, ``r_scale``, ``r_offset``, ``v_scale``, ``v_offset``, ``start`` and ``soft_reset`` (one-cycle pulses).
    Outputs (to STATUS / CYCLES): ``busy``, ``done``, ``err_config``, ``err_stream``, ``saturated``, ``cycles``.
    """

    def __init__(self, spec: GaeSpec) -> None:
        data = dict(min=spec.data.min_code, max=spec.data.max_code + 1)
        self.t_count = Signal(intbv(0)[32:])
        self.lanes_used = Signal(intbv(0)[32:])
        self.batches = Signal(intbv(1)[32:])
        self.chunks = Signal(intbv(1)[32:])
        self.gamma = Signal(intbv(0)[32:])
        self.gamma_lambda = Signal(intbv(0)[32:])
        self.mode = Signal(intbv(0)[4:])
        self.r_scale, self.r_offset = Signal(intbv(0, **data)), Signal(intbv(0, **data))
        self.v_scale, self.v_offset = Signal(intbv(0, **data)), Signal(intbv(0, **data))
        self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0))
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles = Signal(intbv(0)[32:])


@block
def _lane_unpack(word, row, q8, lane: int, spec: GaeSpec, raw_width: int, q8_width: int):
    """Lane ``lane``'s stack word ``{done, value, reward}`` (65 bits) from an assembled input record."""
    lanes = spec.lanes
    base_q8 = raw_width - q8_width  # a q8 record sits in the top bits of the record register
    r_raw, v_raw, d_raw = 32 * lane, 32 * (lanes + lane), 64 * lanes + lane
    r_q8, v_q8, d_q8 = base_q8 + 8 * lane, base_q8 + 8 * (lanes + lane), base_q8 + 16 * lanes + lane
    reward = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    value = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    done = Signal(bool(0))

    @always_comb
    def pick():
        if q8:
            reward.next = row[r_q8 + 8 : r_q8].signed()
            value.next = row[v_q8 + 8 : v_q8].signed()
            done.next = row[d_q8]
        else:
            reward.next = row[r_raw + 32 : r_raw].signed()
            value.next = row[v_raw + 32 : v_raw].signed()
            done.next = row[d_raw]

    pack = _word_pack(word, done, value, reward)
    return pick, pack


@block
def _word_pack(word, done, value, reward):
    """``word = {done, value[31:0], reward[31:0]}``: one FILO stack word (65 bits)."""

    @always_comb
    def pack():
        word.next = concat(done, value[32:], reward[32:])

    return pack


@block
def _dequant(
    reward, value, done, valid, boot, saturated, word, in_valid, in_boot, q8, lane_active, cfg, clock, spec: GaeSpec
):
    """Stack word -> PE inputs in :data:`DEQUANT_LATENCY` register stages: raw words pass; q8 codes become
    sat(code * SCALE + OFFSET).

    One operation per stage, so no carry chain sits behind an unregistered multiplier (issue 15; it was all one
    cycle, the core's critical path: 70-81 MHz on the ECP5-85), and no multiplier behind a BRAM's read data (the
    BRAM stacks' clock-to-out then LUT, multiply and carry chain: 78.6 MHz on the ECP5-85)::

        0  R   word0 = word                   (the stack's read data registered: a BRAM output register)
        1  M   r_prod = code * SCALE          (the DSP's M register; the stack word is copied beside it)
        2  P   r_sum = r_prod + OFFSET        (a post-adder with its P register on a DSP48; the word copied on)
        3  S   reward = q8 ? sat(r_sum) : word, saturated = the q8 clamp flag of a valid, active, non-bootstrap row

    Only the latency changes (:attr:`GaeSpec.pipeline_depth` counts it); the values are those of one cycle.
    """
    lo, hi = spec.data.min_code, spec.data.max_code
    scale_bits = spec.scale.width
    code_bits = 8  # q8 words hold sign-extended codes in their low byte
    # code x scale fits 8 + 25 bits (-128 x -2**24 = 2**31 is the one product needing the 33rd); + OFFSET: 34
    prod_range = dict(min=-(1 << (code_bits + scale_bits - 2)), max=(1 << (code_bits + scale_bits - 2)) + 1)
    sum_range = dict(min=-(1 << (code_bits + scale_bits - 1)), max=1 << (code_bits + scale_bits - 1))
    r_code = Signal(intbv(0, min=-(1 << (code_bits - 1)), max=1 << (code_bits - 1)))
    v_code = Signal(intbv(0, min=-(1 << (code_bits - 1)), max=1 << (code_bits - 1)))
    r_scale = Signal(intbv(0, min=-(1 << (scale_bits - 1)), max=1 << (scale_bits - 1)))  # 8 x 25: one DSP
    v_scale = Signal(intbv(0, min=-(1 << (scale_bits - 1)), max=1 << (scale_bits - 1)))
    # stage 0
    word0 = Signal(intbv(0)[65:])
    valid0, boot0, active0 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # stage 1
    r_prod, v_prod = Signal(intbv(0, **prod_range)), Signal(intbv(0, **prod_range))
    word1 = Signal(intbv(0)[65:])
    valid1, boot1, active1 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # stage 2
    r_sum, v_sum = Signal(intbv(0, **sum_range)), Signal(intbv(0, **sum_range))
    word2 = Signal(intbv(0)[65:])
    valid2, boot2, active2 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    r_word = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    v_word = Signal(intbv(0, min=-(1 << 31), max=1 << 31))

    @always_comb
    def split():
        r_code.next = word0[code_bits:0].signed()
        v_code.next = word0[32 + code_bits : 32].signed()
        r_scale.next = cfg.r_scale[scale_bits:].signed()  # START refused scales outside this range
        v_scale.next = cfg.v_scale[scale_bits:].signed()
        r_word.next = word2[32:0].signed()
        v_word.next = word2[64:32].signed()

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

    r_sat, v_sat = Signal(intbv(0, min=lo, max=hi + 1)), Signal(intbv(0, min=lo, max=hi + 1))
    r_flag, v_flag = Signal(bool(0)), Signal(bool(0))
    clamps = [saturate(r_sat, r_flag, r_sum, lo, hi), saturate(v_sat, v_flag, v_sum, lo, hi)]

    @always(clock.posedge)
    def select():
        valid.next = valid2
        boot.next = boot2
        done.next = word2[64]
        if q8:
            reward.next = r_sat
            value.next = v_sat
            saturated.next = ((r_flag and not boot2) or v_flag) and valid2 and active2
        else:
            reward.next = r_word
            value.next = v_word
            saturated.next = False

    return split, read_register, multiply, offset, clamps, select


@block
def gae_core(
    m_tdata, m_tvalid, m_tlast, s_tready, s_tdata, s_tvalid, s_tlast, m_tready, cfg, clock, reset, spec: GaeSpec
):
    """The GAE core (streams + FILO stacks + PEs + FSM); registers arrive through ``cfg`` (:class:`CoreConfig`).

    m_tdata  : Signal(8 * stream_bytes), out -- output stream (AXI4-Stream master)
    m_tvalid : Signal(bool), out
    m_tlast  : Signal(bool), out
    s_tready : Signal(bool), out              -- input stream (AXI4-Stream slave)
    s_tdata  : Signal(8 * stream_bytes), in
    s_tvalid : Signal(bool), in
    s_tlast  : Signal(bool), in
    m_tready : Signal(bool), in
    cfg      : CoreConfig
    clock    : Signal(bool), in
    reset    : ResetSignal, in                 -- synchronous, control registers only
    """
    lanes, depth = spec.lanes, spec.t_max + 1
    beat = 8 * spec.stream_bytes
    raw_width = 8 * spec.input_record_bytes(GaeMode.RAW)
    q8_width = 8 * spec.input_record_bytes(GaeMode.Q8)
    out_width = 8 * spec.output_record_bytes
    beats_raw, beats_q8, beats_out = raw_width // beat, q8_width // beat, out_width // beat
    if beats_raw < 2:
        raise ValueError(
            f"a raw input record must span at least two stream beats; {spec.lanes} lane(s) at "
            f"{spec.stream_bytes} bytes per beat give {beats_raw}: use a narrower stream"
        )
    one = 1 << spec.coef.frac

    state = Signal(t_state.IDLE)
    q8 = Signal(bool(0))
    # -- loader: beats -> records -> stack rows; it owns the operation's position (lane-batch, chunk)
    load_state = Signal(t_load.IDLE)
    record = Signal(intbv(0)[raw_width - beat :])  # the beats before the current one (the oldest at the bottom)
    row = Signal(intbv(0)[raw_width:])
    row_valid = Signal(bool(0))  # ``row`` is assembled and not yet written (a write-back may hold it)
    load_write = Signal(bool(0))  # ``row`` takes the write port this cycle
    beat_count = Signal(intbv(0, min=0, max=beats_raw + 1))
    asm_row = Signal(intbv(0, min=0, max=depth + 2))  # time index of the record being assembled
    asm_addr = Signal(intbv(0, min=-1, max=depth + 2))  # its stack row, and the row after it in the chunk's direction
    asm_step = Signal(intbv(0, min=-2, max=depth + 3))
    row_addr = Signal(intbv(0, min=0, max=depth))  # the stack row of ``row``
    load_len = Signal(intbv(0, min=0, max=depth + 1))  # the chunk's length L (its top slot is time L)
    load_end = Signal(intbv(0, min=0, max=depth + 1))  # its last input row: L (first chunk) or L - 1 (continuation)
    load_up, load_first, load_cont = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    record_done = Signal(bool(0))  # the last beat of a record moves this cycle
    check_addr = Signal(intbv(0, min=-2, max=depth + 3))  # the row being assembled from the next cycle on
    row_free_next, row_free = Signal(bool(0)), Signal(bool(0))  # it is free (registered: no carry chain to TREADY)
    # lane-batches of this operation still to load, the current one included; chunks of the current lane-batch
    batches_left = Signal(intbv(0, min=0, max=spec.batches_max + 1))
    chunks_left = Signal(intbv(0, min=0, max=spec.chunks_max + 1))
    last_batch, last_chunk, last_record = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    # memories: one write port (loads, write-backs first) and one read port (the drain first, then pops) per lane
    wr_addr = Signal(intbv(0, min=0, max=depth))
    rd_addr = Signal(intbv(0, min=0, max=depth))
    wr_en, rd_en = Signal(bool(0)), Signal(bool(0))
    load_words = [Signal(intbv(0)[65:]) for _ in range(lanes)]
    wb_words = [Signal(intbv(0)[65:]) for _ in range(lanes)]
    wr_words = [Signal(intbv(0)[65:]) for _ in range(lanes)]
    rd_words = [Signal(intbv(0)[65:]) for _ in range(lanes)]
    # -- compute: pops, PEs, write-backs of one chunk
    comp_busy = Signal(bool(0))
    comp_len = Signal(intbv(0, min=0, max=depth + 1))
    comp_up, comp_cont, comp_last_batch = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    issue_row = Signal(intbv(0, min=-1, max=depth + 1))  # time index of the next pop, and its stack row
    issue_addr = Signal(intbv(0, min=-1, max=depth + 1))
    issuing = Signal(bool(0))
    issue_wait = Signal(intbv(0, min=0, max=4))  # cycles until row T is in its BRAM (read-first: no bypass)
    issue_valid, issue_boot = Signal(bool(0)), Signal(bool(0))  # a pop issued (BRAM reads on the next edge)
    rd_valid, rd_boot = Signal(bool(0)), Signal(bool(0))  # its data is on the BRAM output
    wb_row = Signal(intbv(0, min=-1, max=depth + 1))  # time index of the next write-back, and its stack row
    wb_addr = Signal(intbv(0, min=-1, max=depth + 1))
    wb_count = Signal(intbv(0, min=0, max=depth + 1))  # write-backs of this chunk issued
    pe_valid = [Signal(bool(0)) for _ in range(lanes)]
    pe_sat = [Signal(bool(0)) for _ in range(lanes)]
    dq_sat = [Signal(bool(0)) for _ in range(lanes)]
    any_sat = Signal(bool(0))
    out_valid = Signal(bool(0))
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]
    gamma_c = Signal(intbv(0, min=0, max=one + 1))
    gamma_lambda_c = Signal(intbv(0, min=0, max=one + 1))
    cycles = Signal(modbv(0)[32:])
    # -- drain: reads a chunk's results newest first while they are written back; the next chunk waits in ``pend``
    dr_len = Signal(intbv(0, min=0, max=depth + 1))
    dr_count = Signal(intbv(0, min=0, max=depth + 1))  # rows of the draining chunk read
    dr_addr = Signal(intbv(0, min=-1, max=depth + 2))  # the stack row it reads next
    dr_started = Signal(bool(0))  # it has read a row
    dr_up, dr_last = Signal(bool(0)), Signal(bool(0))
    pend_valid, pend_up, pend_last = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    pend_len = Signal(intbv(0, min=0, max=depth + 1))
    dr_read, dr_read_last = Signal(bool(0)), Signal(bool(0))  # the read port's read this cycle is the drain's
    prefetched, prefetched_last = Signal(bool(0)), Signal(bool(0))  # the drain's row is on the BRAM output
    dr_want = Signal(bool(0))
    # -- sender: one output record shifting out
    out_sr = Signal(intbv(0)[out_width:])
    out_beats = Signal(intbv(0, min=0, max=beats_out + 1))
    out_last = Signal(bool(0))  # the record in ``out_sr`` is the operation's last
    out_free = Signal(bool(0))
    in_ready = Signal(bool(0))

    insts = []
    pieces = []
    for n in range(lanes):
        unpack = _lane_unpack(load_words[n], row, q8, n, spec, raw_width, q8_width)
        unpack.name = f"unpack{n}"
        ram = ram_sdp_rf(rd_words[n], wr_words[n], wr_addr, wr_en, rd_addr, rd_en, clock, depth)
        ram.name = f"filo{n}"
        lane_active = Signal(bool(0))
        dq = [Signal(intbv(0, min=spec.data.min_code, max=spec.data.max_code + 1)) for _ in range(2)]
        dq_done, dq_valid, dq_boot = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        deq = _dequant(
            dq[0],
            dq[1],
            dq_done,
            dq_valid,
            dq_boot,
            dq_sat[n],
            rd_words[n],
            rd_valid,
            rd_boot,
            q8,
            lane_active,
            cfg,
            clock,
            spec,
        )
        deq.name = f"dequant{n}"
        adv = Signal(intbv(0, min=spec.data.min_code, max=spec.data.max_code + 1))
        ret = Signal(intbv(0, min=spec.data.min_code, max=spec.data.max_code + 1))
        raw_sat = Signal(bool(0))
        pe = gae_pe(
            adv, ret, pe_valid[n], raw_sat, dq[0], dq[1], dq_done, dq_valid, dq_boot, gamma_c, powers, clock, spec
        )
        pe.name = f"pe{n}"
        insts += [
            unpack,
            ram,
            deq,
            pe,
            _lane_active(lane_active, cfg.lanes_used, comp_last_batch, n),
            and2(pe_sat[n], raw_sat, lane_active),
            _result_word(wb_words[n], ret, adv, lane_active),
            _word_register(wr_words[n], load_words[n], wb_words[n], load_write, clock),
        ]
        pieces.append((rd_words[n](32, 0), rd_words[n](64, 32)))
    out_fields = [p[0] for p in pieces] + [p[1] for p in pieces]
    pad = out_width - 64 * lanes
    out_row = ConcatSignal(*([intbv(0)[pad:]] if pad else []), *reversed(out_fields))
    powers_inst = coef_powers(powers, gamma_lambda_c, clock, spec)
    powers_inst.name = "powers"
    insts.append(powers_inst)

    @always(clock.posedge)
    def coefficients():
        # START refuses coefficients above 1.0, so the clamp only keeps the PE inputs in range while idle.
        # Registered: the 32-bit compare and select would otherwise sit in front of the PE's gamma multiply (the
        # core's critical path after the dequantizer's, ECP5). The registers are static during an operation and
        # are first read after LOAD, the pop, the BRAM read and the dequantizer, so the one cycle changes no result;
        # the lookahead powers behind gamma_lambda_c settle with 11 or more cycles to spare (coef_powers).
        if cfg.gamma <= one:
            gamma_c.next = cfg.gamma[len(gamma_c) :]
        else:
            gamma_c.next = one
        if cfg.gamma_lambda <= one:
            gamma_lambda_c.next = cfg.gamma_lambda[len(gamma_c) :]
        else:
            gamma_lambda_c.next = one

    insts.append(coefficients)
    insts.append(_or_reduce(any_sat, pe_sat + dq_sat))
    last_beat_of_record = Signal(bool(0))

    @always_comb
    def stream_ports():
        in_ready.next = load_state == t_load.DISCARD or (
            load_state == t_load.LOAD and (not last_beat_of_record or (row_free and not (row_valid and out_valid)))
        )
        m_tdata.next = out_sr[beat:0]
        m_tvalid.next = out_beats != 0
        m_tlast.next = out_beats == 1 and out_last
        out_valid.next = pe_valid[0]
        load_write.next = row_valid and not pe_valid[0]
        record_done.next = load_state == t_load.LOAD and s_tvalid and in_ready and last_beat_of_record
        out_free.next = out_beats == 0 or (out_beats == 1 and m_tready)

    @always_comb
    def batch_end():
        last_batch.next = batches_left == 1
        last_chunk.next = chunks_left == 1
        last_record.next = batches_left == 1 and chunks_left == 1

    insts += [
        batch_end,
        assign(s_tready, in_ready),
        mux2(check_addr, asm_step, asm_addr, record_done),
        _row_free(row_free_next, check_addr, load_up, load_first, dr_len, dr_addr, dr_started, dr_up),
        _drain_wants(
            dr_want, dr_count, dr_len, dr_up, dr_read, prefetched, out_beats, comp_busy, comp_up, wb_count, beats_out
        ),
    ]
    scales_ok = Signal(bool(0))
    insts.append(_scales_fit(scales_ok, cfg.r_scale, cfg.v_scale, spec.scale.width))
    record_shifted = Signal(intbv(0)[raw_width - beat :])
    if raw_width - beat > beat:
        insts.append(_shift_in(record_shifted, s_tdata, record, beat))
    else:
        insts.append(assign(record_shifted, s_tdata))

    @always_comb
    def record_end():
        if q8:
            last_beat_of_record.next = beat_count == beats_q8 - 1
        else:
            last_beat_of_record.next = beat_count == beats_raw - 1

    @always_seq(clock.posedge, reset=reset)
    def control():
        # defaults
        wr_en.next = False
        rd_en.next = False
        issue_valid.next = False
        issue_boot.next = False
        rd_valid.next = issue_valid
        rd_boot.next = issue_boot
        dr_read.next = False
        if cfg.soft_reset:
            state.next = t_state.IDLE
            load_state.next = t_load.IDLE
            comp_busy.next = False
            row_valid.next = False
            dr_len.next = 0
            dr_count.next = 0
            dr_started.next = False
            pend_valid.next = False
            prefetched.next = False
            out_beats.next = 0
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
                cycles.next = 0
                if (
                    cfg.t_count >= 1
                    and cfg.t_count <= spec.t_max
                    and cfg.lanes_used >= 1
                    and cfg.lanes_used <= lanes
                    and cfg.batches >= 1
                    and cfg.batches <= spec.batches_max
                    and cfg.chunks >= 1
                    and cfg.chunks <= spec.chunks_max
                    and cfg.gamma <= one
                    and cfg.gamma_lambda <= one
                    and cfg.mode <= 1
                    and (cfg.mode == 0 or scales_ok)
                ):
                    state.next = t_state.BUSY
                    cfg.busy.next = True
                    q8.next = cfg.mode == 1
                    # the compute, drain and sender are idle whenever the core is (an operation ends only after
                    # all three finished; SOFT_RESET clears them): only the loader needs the new operation
                    load_state.next = t_load.LOAD
                    beat_count.next = 0
                    asm_row.next = 0
                    asm_addr.next = 0
                    asm_step.next = 1
                    row_free.next = True  # the operation's first chunk has every row to itself
                    load_first.next = True
                    load_up.next = True
                    load_cont.next = False
                    load_len.next = cfg.t_count[len(load_len) :]
                    load_end.next = cfg.t_count[len(load_end) :]
                    batches_left.next = cfg.batches[len(batches_left) :]
                    chunks_left.next = cfg.chunks[len(chunks_left) :]
                else:
                    cfg.done.next = True
                    cfg.err_config.next = True
        else:
            if any_sat:
                cfg.saturated.next = True
            # ---- sender: shift the record out; the drain's next row follows on the beat after its last
            taken = prefetched and out_free
            if out_beats != 0 and m_tready:
                out_sr.next = out_sr >> beat
                out_beats.next = out_beats - 1
                if out_beats == 1 and out_last:  # the operation's last beat: everything else finished before
                    state.next = t_state.IDLE
                    load_state.next = t_load.IDLE
                    cfg.busy.next = False
                    cfg.done.next = True
            if taken:
                out_sr.next = out_row
                out_beats.next = beats_out
                out_last.next = prefetched_last
                prefetched.next = False
            if dr_read:
                prefetched.next = True
                prefetched_last.next = dr_read_last
            # ---- drain: read the draining chunk's rows, newest first, each once its write-back is in
            if dr_want:
                rd_en.next = True
                rd_addr.next = dr_addr[len(rd_addr) :]
                if dr_up:
                    dr_addr.next = dr_addr - 1
                else:
                    dr_addr.next = dr_addr + 1
                dr_read.next = True
                dr_read_last.next = dr_last and dr_count + 1 == dr_len
                dr_count.next = dr_count + 1
                dr_started.next = True
            elif pend_valid and dr_count == dr_len:
                dr_len.next = pend_len
                dr_up.next = pend_up
                dr_last.next = pend_last
                dr_count.next = 0
                dr_started.next = False
                if pend_up:  # newest first: row L - 1 down to 0, or row 1 up to L
                    dr_addr.next = pend_len - 1
                else:
                    dr_addr.next = 1
                pend_valid.next = False
            # ---- loader: one record per row; a row is written when the write port is free of write-backs
            row_free.next = row_free_next
            if load_write:
                wr_en.next = True
                wr_addr.next = row_addr
                row_valid.next = False
            if load_state == t_load.LOAD and s_tvalid and in_ready:
                record.next = record_shifted
                if last_beat_of_record:
                    beat_count.next = 0
                    row.next = concat(s_tdata, record)
                    row_valid.next = True
                    row_addr.next = asm_addr[len(row_addr) :]
                    asm_row.next = asm_row + 1
                    asm_addr.next = asm_step
                    if load_up:
                        asm_step.next = asm_step + 1
                    else:
                        asm_step.next = asm_step - 1
                    if asm_row == load_end:
                        if s_tlast == last_record:
                            load_state.next = t_load.FULL
                        elif s_tlast:
                            load_state.next = t_load.FAIL
                        else:
                            load_state.next = t_load.DISCARD
                    elif s_tlast:
                        load_state.next = t_load.FAIL
                else:
                    beat_count.next = beat_count + 1
                    if s_tlast:
                        load_state.next = t_load.FAIL
            elif load_state == t_load.DISCARD and s_tvalid and s_tlast:
                load_state.next = t_load.FAIL
            # ---- compute: a full chunk starts once the previous one is written back; the loader moves on
            if load_state == t_load.FULL and not comp_busy:
                comp_busy.next = True
                comp_len.next = load_len
                comp_up.next = load_up
                comp_cont.next = load_cont
                comp_last_batch.next = last_batch
                issue_row.next = load_len
                issuing.next = True
                issue_wait.next = 2
                wb_row.next = load_len - 1
                if load_up:  # pops from row L down, write-backs from L - 1; or from rows 0 and 1 up
                    issue_addr.next = load_len
                    wb_addr.next = load_len - 1
                else:
                    issue_addr.next = 0
                    wb_addr.next = 1
                wb_count.next = 0
                pend_valid.next = True
                pend_len.next = load_len
                pend_up.next = load_up
                pend_last.next = last_record
                if last_record:
                    load_state.next = t_load.IDLE
                else:
                    load_state.next = t_load.LOAD
                    load_first.next = False
                    load_up.next = not load_up
                    asm_row.next = 0
                    row_free.next = False  # checked again next cycle, against the new chunk
                    if last_chunk:  # the next lane-batch, from its first chunk
                        batches_left.next = batches_left - 1
                        chunks_left.next = cfg.chunks[len(chunks_left) :]
                        load_cont.next = False
                        load_len.next = cfg.t_count[len(load_len) :]
                        load_end.next = cfg.t_count[len(load_end) :]
                    else:  # the next (earlier) chunk of this lane-batch
                        chunks_left.next = chunks_left - 1
                        load_cont.next = True
                        load_len.next = spec.t_max
                        load_end.next = spec.t_max - 1
                    if not load_up:  # the next chunk runs up: time 0 at row 0
                        asm_addr.next = 0
                        asm_step.next = 1
                    elif last_chunk:  # it runs down: time 0 at row L
                        asm_addr.next = cfg.t_count[len(load_len) :]
                        asm_step.next = cfg.t_count[len(load_len) :] - 1
                    else:
                        asm_addr.next = spec.t_max
                        asm_step.next = spec.t_max - 1
            elif comp_busy:
                # the drain's read, its data in flight and its data waiting for the sender hold the read port
                yielding = issuing and issue_wait == 0 and (dr_want or dr_read or (prefetched and not taken))
                if not yielding:
                    cycles.next = cycles + 1
                if issue_wait != 0:
                    issue_wait.next = issue_wait - 1
                elif issuing and not yielding:
                    rd_en.next = True
                    rd_addr.next = issue_addr[len(rd_addr) :]
                    if comp_up:
                        issue_addr.next = issue_addr - 1
                    else:
                        issue_addr.next = issue_addr + 1
                    # a continuation chunk's top slot is a bubble: no bootstrap row, the PEs' state carries over
                    issue_valid.next = not (comp_cont and issue_row == comp_len)
                    issue_boot.next = issue_row == comp_len and not comp_cont
                    if issue_row == 0:
                        issuing.next = False
                    issue_row.next = issue_row - 1
                if out_valid:
                    wr_en.next = True
                    wr_addr.next = wb_addr[len(wr_addr) :]
                    if comp_up:
                        wb_addr.next = wb_addr - 1
                    else:
                        wb_addr.next = wb_addr + 1
                    wb_row.next = wb_row - 1
                    wb_count.next = wb_count + 1
                    if wb_row == 0:
                        comp_busy.next = False
                        cfg.cycles.next = cycles + 1
            # ---- a stream error ends the operation once the chunks before it are out
            if (
                load_state == t_load.FAIL
                and not comp_busy
                and not pend_valid
                and dr_count == dr_len
                and not dr_read
                and not prefetched
                and out_beats == 0
            ):
                state.next = t_state.IDLE
                load_state.next = t_load.IDLE
                cfg.busy.next = False
                cfg.done.next = True
                cfg.err_stream.next = True

    insts += [stream_ports, record_end, control]
    return insts


@block
def _row_free(free, addr, load_up, load_first, dr_len, dr_addr, dr_started, dr_up):
    """Stack row ``addr`` (the next record's) is free: the operation's first chunk, or the drain of the chunk
    before (the other direction, which has read a row) has read it, or it lies beyond that chunk's rows.

    Chunks alternate direction (time t at row t "up", at row L - t "down"), so the drain of an up chunk frees rows
    L - 1, L - 2, ..., 0 in the order the next (down) chunk loads t = 0, 1, ... into them, and the reverse; its
    top slot (row L up, 0 down) was popped before the drain's first read. ``dr_addr`` is the row the drain reads
    next: an up chunk's drain has read the rows above it, a down chunk's those below. The core registers the
    result (one cycle late on the drain's side only delays a record; the loader's own side is checked for the
    row it will assemble next), so no carry chain reaches TREADY.
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
def _drain_wants(
    want, dr_count, dr_len, dr_up, dr_read, prefetched, out_beats, comp_busy, comp_up, wb_count, beats_out: int
):
    """The drain reads its next row this cycle: one is left, its result is written back (the chunk's compute has
    moved on, or its write-backs passed this row), nothing of the drain's is in flight, and the sender will be ready
    for the row when it arrives two cycles later (:data:`DRAIN_LEAD` beats or fewer left), so the row waits on the
    BRAM output, where it holds up the compute's pops, only under back-pressure."""

    if beats_out <= DRAIN_LEAD:  # records of DRAIN_LEAD beats or fewer: any count is near enough

        @always_comb
        def check():
            written = dr_count < wb_count or not (comp_busy and comp_up == dr_up)
            want.next = dr_count < dr_len and written and not dr_read and not prefetched
    else:

        @always_comb
        def check():
            written = dr_count < wb_count or not (comp_busy and comp_up == dr_up)
            want.next = dr_count < dr_len and written and not dr_read and not prefetched and out_beats <= DRAIN_LEAD

    return check


@block
def _lane_active(active, lanes_used, last_batch, lane: int):
    """Lane ``lane`` computes: every lane of a batch before the last, the first LANES_USED of the last."""

    @always_comb
    def compare():
        active.next = lanes_used > lane or not last_batch

    return compare


@block
def _result_word(word, ret, adv, active):
    """Write-back word ``{0, R, A}`` of a lane; lanes beyond LANES_USED write zeros (the output contract)."""

    @always_comb
    def pack():
        if active:
            word.next = concat(False, ret[32:], adv[32:])
        else:
            word.next = 0

    return pack


@block
def _word_register(y, load_word, wb_word, loading, clock):
    """The BRAM write data, registered in step with the write enable and address the FSM registers."""

    @always(clock.posedge)
    def logic():
        if loading:
            y.next = load_word
        else:
            y.next = wb_word

    return logic


@block
def _scales_fit(ok, r_scale, v_scale, bits: int):
    """Both q8 scales fit ``bits`` signed bits: their bits from ``bits - 1`` up all equal (unsigned slices only,
    see :func:`~pynq_rl.overlay.hdl.common.arith.saturate` for why)."""
    ones = (1 << (33 - bits)) - 1

    @always_comb
    def check():
        ok.next = (r_scale[32 : bits - 1] == 0 or r_scale[32 : bits - 1] == ones) and (
            v_scale[32 : bits - 1] == 0 or v_scale[32 : bits - 1] == ones
        )

    return check


@block
def _shift_in(y, beat_data, previous, beat: int):
    """``y = {beat_data, previous[:beat]}``: the record register after one more beat."""
    width = len(previous)

    @always_comb
    def logic():
        y.next = concat(beat_data, previous[width:beat])

    return logic


@block
def _or_reduce(y, bits):
    """``y = OR(bits)`` via a cascade of two-input ORs (bits is a Python list of Signals)."""
    if len(bits) == 1:
        return assign(y, bits[0])
    partial = Signal(bool(0))
    rest = _or_reduce(partial, bits[1:])
    first = bits[0]

    @always_comb
    def logic():
        y.next = first or partial

    return rest, logic
