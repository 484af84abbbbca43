"""The sampler's control: what START latches for a batch, its COUNT * STRIDE check, when samples issue, where their
uniforms come from, and when the batch is over.

* START (SAMPLE or SAMPLE_UNIFORM, in IDLE): COUNT and STRIDE are latched, and the mode's uniform source.
* CHECK (:data:`CHECK_CYCLES` cycles): the START check reads ``p1_high``, the high word of COUNT * STRIDE from the
  front's stage-b multiplier (:func:`~.sampler.sample_front`), on its last cycle: ``check_ok`` = 1 <= COUNT <=
  MAX_COUNT, COUNT * STRIDE < 2**32 and TOTAL != 0. The command FSM (:mod:`.command`) then goes to SAMPLE or
  refuses the batch.
* SAMPLE: one sample issues per cycle the pipeline advances (``issue``), with sample number j's ``j * STRIDE``
  accumulated in ``js`` and its uniform from the PRNG (one step per sample) or the input stream (SAMPLE_UNIFORM:
  an input beat per sample, TLAST ends the batch early; records after the COUNT-th are taken and dropped up to
  TLAST). ``stream_error`` flags a TLAST before the COUNT-th record or none on it; ``sample_end`` says the last
  result has left and the input is drained to its TLAST.

Nothing here touches STATUS or the state: the FSM reads ``check_ok``, ``stream_error`` and ``sample_end``.
"""

from myhdl import Signal, always_comb, always_seq, block, intbv

from ...spec import ReplayMode, ReplaySpec, xorshift32_step
from ..common.prng import ZERO_SEED_REPLACEMENT, xorshift32, xorshift32_next
from .command import t_state
from .multiply import mul_latency

__all__ = ["sample_issue", "SampleStatus", "CHECK_CYCLES"]

MODE_SAMPLE, MODE_UNIFORM = int(ReplayMode.SAMPLE), int(ReplayMode.SAMPLE_UNIFORM)

#: CHECK cycles between START and the first issued sample (COUNT * STRIDE through the stage-b multiplier, whose
#: tiles load at the START edge: ``mul_latency(32, 32) - 1`` = 2 more edges, then the check)
CHECK_CYCLES = 3
if mul_latency(32, 32) != CHECK_CYCLES:
    raise AssertionError("CHECK must last as long as the COUNT * STRIDE product takes from the START edge")


class SampleStatus:
    """What the sampler tells the command FSM, combinational (one instance per core).

    ``u_ready``: SAMPLE_UNIFORM, an input beat would be taken this cycle (TREADY); ``check_end``: the last CHECK
    cycle; ``check_ok``: the batch passes START's check (read with ``check_end``); ``stream_error``: ERR_STREAM,
    SAMPLE_UNIFORM's input ends before or after the COUNT-th record; ``sample_end``: the batch is over, the last
    result out and the input drained to its TLAST.
    """

    def __init__(self) -> None:
        self.u_ready, self.check_end, self.check_ok = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.stream_error, self.sample_end = Signal(bool(0)), Signal(bool(0))


@block
def sample_issue(
    issue,
    last_issue,
    u_in,
    js,
    stride_q,
    check_load,
    status: SampleStatus,
    p1_high,
    total,
    state,
    s_tdata,
    s_tvalid,
    s_tlast,
    advance,
    out_last_beat,
    cfg,
    clock,
    reset,
    spec: ReplaySpec,
):
    """Batch registers, CHECK, sample issue and the uniform source of the sampler.

    issue        : Signal(bool), out -- a sample enters the front this cycle
    last_issue   : Signal(bool), out -- it is the batch's last (the COUNT-th, or the input's TLAST)
    u_in         : Signal(intbv[32]), out -- its uniform (UQ0.32)
    js           : Signal(modbv[32]), out -- its j * STRIDE
    stride_q     : Signal(intbv[32]), out -- STRIDE latched at START
    check_load   : Signal(bool), out -- IDLE: the front's multiplier takes COUNT and STRIDE
    status       : SampleStatus, out -- to the command FSM
    p1_high      : Signal(intbv[32]), in -- the front's COUNT * STRIDE high word (see :func:`~.sampler.sample_front`)
    total        : Signal(w0), in  -- the root
    state        : Signal(t_state), in -- the command FSM's state
    s_tdata      : Signal(64), in  -- uniform records: ``u`` in the low word
    s_tvalid     : Signal(bool), in
    s_tlast      : Signal(bool), in
    advance      : Signal(bool), in -- pipeline enable
    out_last_beat : Signal(bool), in -- the output stream takes its TLAST beat
    cfg          : ReplayConfig -- ``mode``, ``count``, ``stride``, ``start``, ``soft_reset`` (flush), ``seed``,
                   ``seed_load`` in; ``prng`` out (the PRNG state)
    clock        : Signal(bool), in
    reset        : ResetSignal, in
    """
    u_bits = len(u_in)
    uniform = Signal(bool(0))
    count_q = Signal(intbv(0)[len(cfg.count) :])
    chk = Signal(intbv(0, min=0, max=CHECK_CYCLES))
    issuing, in_open, out_done = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    issued = Signal(intbv(0)[len(cfg.count) :])
    discard = Signal(bool(0))
    # issued + 1 == COUNT (the sample being issued is the last), kept as a register beside ``issued``: the 32-bit
    # increment and compare in front of the FSM's own logic was the Pynq-Z2 build's slowest xc7 path
    count_reached = Signal(bool(0))
    # Combinational signals start at their inputs' initial values: a converted ``always @(inputs)`` block first runs
    # when an input changes, so an output whose inputs never change from power-up would otherwise keep 0 (this
    # made the first sample after power-up use u = 0 in the Verilog, never in MyHDL).
    prng_next = Signal(intbv(xorshift32_step(ZERO_SEED_REPLACEMENT))[32:])
    prng_enable = Signal(bool(0))

    prng = xorshift32(cfg.prng, cfg.seed, cfg.seed_load, prng_enable, clock, reset)
    prng.name = "prng"
    prng_step = xorshift32_next(prng_next, cfg.prng)
    prng_step.name = "prng_next"

    @always_comb
    def strobes():
        # every IDLE edge loads COUNT and STRIDE into the multiplier (nothing else is in flight), so its operand
        # multiplexer waits on a state decode only, not on the START pulse (that was the critical path)
        check_load.next = state == t_state.IDLE
        issue.next = state == t_state.SAMPLE and issuing and advance and (not uniform or s_tvalid)
        discard.next = state == t_state.SAMPLE and uniform and in_open and not issuing and s_tvalid
        status.u_ready.next = uniform and in_open and (advance or not issuing)
        status.check_end.next = chk == CHECK_CYCLES - 1
        status.check_ok.next = count_q >= 1 and count_q <= spec.max_count and p1_high == 0 and total != 0

    @always_comb
    def sample_inputs():
        last_issue.next = count_reached or (uniform and s_tlast)
        prng_enable.next = state == t_state.SAMPLE and issuing and advance and not uniform
        if uniform:
            u_in.next = s_tdata[u_bits:]
        else:
            u_in.next = prng_next

    @always_comb
    def batch_end():
        # ERR_STREAM: the input's TLAST comes before the COUNT-th record, or the COUNT-th record has none
        status.stream_error.next = issue and uniform and (s_tlast != count_reached)
        # the input is finished when it was closed, or its TLAST is taken this cycle (issued or dropped)
        status.sample_end.next = (out_done or out_last_beat) and (
            not in_open or (issue and uniform and s_tlast) or (discard and s_tlast)
        )

    @always_seq(clock.posedge, reset=reset)
    def batch():
        if cfg.soft_reset:
            issuing.next = False
            in_open.next = False
        elif state == t_state.IDLE:
            if cfg.start and (cfg.mode == MODE_SAMPLE or cfg.mode == MODE_UNIFORM):
                chk.next = 0
                uniform.next = cfg.mode == MODE_UNIFORM
                count_q.next = cfg.count
                stride_q.next = cfg.stride
        elif state == t_state.CHECK:
            if chk == CHECK_CYCLES - 1:
                if status.check_ok:
                    issuing.next = True
                    issued.next = 0
                    count_reached.next = count_q == 1
                    js.next = 0
                    in_open.next = uniform
                    out_done.next = False
            else:
                chk.next = chk + 1
        elif state == t_state.SAMPLE:
            if issue:
                issued.next = issued + 1
                count_reached.next = issued + 2 == count_q
                js.next = js + stride_q
                if last_issue:
                    issuing.next = False
                if uniform and s_tlast:
                    in_open.next = False
            if discard and s_tlast:
                in_open.next = False
            if out_last_beat:
                out_done.next = True

    return prng, prng_step, strobes, sample_inputs, batch_end, batch
