"""The GAE core's operation FSM: START and its configuration check, the operation's end, STATUS.

IDLE --START, configuration good--> BUSY until the last output beat (DONE) or a stream error (DONE|ERR_STREAM, once
the chunks before it are out); START with a bad configuration sets DONE|ERR_CONFIG at once; SOFT_RESET returns to
IDLE from anywhere and clears STATUS. The engines see the state decoded (:class:`~.params.Phase`).
"""

from myhdl import Signal, always_comb, always_seq, block, enum

from ...spec import GaeMode, GaeSpec
from ..common.arith import assign

__all__ = ["gae_control"]

t_state = enum("IDLE", "BUSY")


@block
def gae_control(phase, coded, runs, cfg, sat_flags, load_failed, comp_busy, drain, clock, reset, spec: GaeSpec):
    """The operation's state, STATUS and the engines' view of it.

    phase       : Phase, out
    coded       : Signal(bool), out -- the operation's data records are q8 codes (CTRL.MODE q8 or q8-runs at START)
    runs        : Signal(bool), out -- q8-runs mode: header records head every run
    cfg         : CoreConfig -- the registers and START / SOFT_RESET in; ``busy``, ``done``, ``err_config``,
                  ``err_stream``, ``saturated`` out
    sat_flags   : list of Signal(bool), in -- a lane's dequantizer or PE saturated (STATUS.SATURATED)
    load_failed : Signal(bool), in -- the loader saw a stream error
    comp_busy   : Signal(bool), in -- the compute has a chunk
    drain       : DrainState, in   -- ``idle`` (nothing left to send), ``last_beat``
    clock       : Signal(bool), in
    reset       : ResetSignal, in
    spec        : GaeSpec
    """
    one = 1 << spec.coef.frac
    raw_mode, block_mode, runs_mode = int(GaeMode.RAW), int(GaeMode.Q8), int(GaeMode.Q8_RUNS)
    state = Signal(t_state.IDLE)
    config_ok, scales_ok, any_sat = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))

    @always_comb
    def config_check():  # what START accepts
        config_ok.next = (
            cfg.t_count >= 1
            and cfg.t_count <= spec.t_max
            and cfg.lanes_used >= 1
            and cfg.lanes_used <= spec.lanes
            and cfg.batches >= 1
            and cfg.batches <= spec.batches_max
            and cfg.chunks >= 1
            and cfg.chunks <= spec.chunks_max
            and cfg.gamma <= one
            and cfg.gamma_lambda <= one
            and cfg.mode <= runs_mode
            and (cfg.mode != block_mode or scales_ok)
        )

    @always_comb
    def decode():
        phase.starting.next = state == t_state.IDLE and cfg.start and not cfg.soft_reset
        phase.launching.next = state == t_state.IDLE and cfg.start and not cfg.soft_reset and config_ok
        phase.running.next = state == t_state.BUSY and not cfg.soft_reset
        # a stream error ends the operation once the chunks before it are out
        phase.failing.next = (
            state == t_state.BUSY and not cfg.soft_reset and load_failed and not comp_busy and drain.idle
        )

    @always_seq(clock.posedge, reset=reset)
    def operation():
        if cfg.soft_reset:
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
                if config_ok:
                    state.next = t_state.BUSY
                    cfg.busy.next = True
                    coded.next = cfg.mode != raw_mode
                    runs.next = cfg.mode == runs_mode
                else:
                    cfg.done.next = True
                    cfg.err_config.next = True
        else:
            if any_sat:
                cfg.saturated.next = True
            if drain.last_beat:  # the operation's last beat: everything else finished before
                state.next = t_state.IDLE
                cfg.busy.next = False
                cfg.done.next = True
            if phase.failing:
                state.next = t_state.IDLE
                cfg.busy.next = False
                cfg.done.next = True
                cfg.err_stream.next = True

    scales = _scales_fit(scales_ok, cfg.r_scale, cfg.v_scale, spec.scale.width)
    return config_check, decode, operation, scales, _or_reduce(any_sat, sat_flags)


@block
def _scales_fit(ok, r_scale, v_scale, bits: int):
    """Both q8 scales fit ``bits`` signed bits: their bits from ``bits - 1`` up all equal (unsigned slices only,
    see :func:`~pynq_rl.overlay.hdl.common.arith.saturate` for why)."""
    width = len(r_scale)
    ones = (1 << (width + 1 - bits)) - 1

    @always_comb
    def check():
        ok.next = (r_scale[width : bits - 1] == 0 or r_scale[width : bits - 1] == ones) and (
            v_scale[width : bits - 1] == 0 or v_scale[width : bits - 1] == ones
        )

    return check


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
