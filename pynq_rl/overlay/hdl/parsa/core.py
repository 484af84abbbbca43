"""The ParSa core (OPaL's parallel tile-coded Sarsa) behind its streams: the controller FSM and its datapath around
the positions unit, WORKERS workers (map), the sum and argmax trees (reduce) and the record emitter.

:func:`parsa_core` wires five parts; the controller's bundles carry what passes between it and the rest
(:class:`~.params.ParsaPhase`: the state as the datapath sees it, :class:`~.params.ParsaRun`: the registers it holds
for the datapath, :class:`~.params.ParsaReport`: what the datapath tells it):

* :func:`~.control.parsa_control`: the FSM (the state, STATUS, the cycle counters, the act timing), what START
  refuses and latches (:mod:`.start`);
* :func:`~.streams.parsa_inputs`: what each state does with the stream (CFG words, RECV words, LOAD / CLEAR / DUMP
  rows), the positions unit (:func:`~.positions.parsa_positions`) and the layout check CFG_CHECK waits for
  (:func:`~.config_check.parsa_config_check`);
* the workers (:func:`~.worker.parsa_worker`);
* :func:`~.act.act_datapath`: :func:`~.reduce.q_reduce` (sum and argmax trees), :func:`~.choice.action_choice`
  (epsilon-greedy choice, the PRNG, EPSILON's decay), :func:`~.keys.key_memory` (each key's previous step and
  pending reward) and :func:`~.update.sarsa_update` (the UPD arithmetic);
* :func:`~.record_out.record_out`: the emitter and the record it sends (action record, NO_ACTION, policy row).

Operation (the contract is the model :class:`~pynq_rl.overlay.models.parsa.ParsaModel` and the emulated IP)::

    IDLE --START refused (see ParsaModel.start_error)--> IDLE with DONE|ERR_CONFIG
         --START CONFIG--> CFG (N_DIMS dimension records, 2 x N_TILINGS descriptor words, to TLAST)
                           --> CFG_CHECK --> IDLE    (length wrong: ERR_STREAM; a bad layout: ERR_CONFIG; either
                                                      way the old configuration stays: it is double-banked)
         --START ACT--> RECV (one state record) --> RUN (positions, workers, reduce, choice) --> [UPD] --> RECV ...
                        RECV --key >= KEYS--> REJECT (NO_ACTION record, ERR_CONFIG) --> RECV ...
                        RECV --TLAST inside a record--> FINISH with ERR_STREAM
         --START LOAD_POLICY--> LOAD (rows to TLAST) --> IDLE
         --START DUMP_POLICY--> DUMP (row by row through the emitter) --> FINISH --> IDLE
         --START CLEAR--> CLEAR (TILES_PER_WORKER cycles, every bank at once; keys forgotten) --> IDLE

ACT, one state record (``n`` = N_DIMS, ``B`` = tilings of the busiest worker)::

    RUN cycle 0           positions unit starts: u_d for d < n, one per cycle (positions.LATENCY)
    RUN cycle n + 3       act_go: every worker issues its tilings, one per cycle (worker.ACT_LATENCY)
    RUN cycle n + B + 13  every worker's preference vector is final; sum tree (SUM_STAGES), q = sat(sum) (1),
                          argmax (ARGMAX_STAGES)
    RUN cycle n + B + 21  choice: PRNG step, the explore test and random action drawn ahead; EPSILON decays
    RUN cycle n + B + 22  q[a] selected; the action record is loaded into the emitter; key memory written

so ``CYCLES_ACT = n + B + ACT_DEPTH``. The Sarsa update (ONLINE, a reward, the key holds a previous state) then
runs ``B + UPDATE_DEPTH`` cycles: gamma * q[a] (1), delta = sat(r + rnd(...) - q) (1), alpha * delta (1),
increment (1), then every worker's update pass (worker.UPDATE_LATENCY) and one cycle to collect saturation.

CYCLES counts the cycles the core works on the batch: one per input beat of each whole state record, the RUN
cycles and the update cycles; cycles spent waiting for the output stream (a held emitter) are not counted, so
CYCLES is the ParsaSpec formula whatever the DMA does.
"""

from myhdl import Signal, block, intbv

from ...spec import ParsaSpec
from .act import act_datapath
from .control import parsa_control
from .fsm import ACT_DEPTH, UPDATE_DEPTH, act_go_cycle
from .params import ParsaConfig, ParsaPhase, ParsaReport, ParsaRun, ParsaWidths, WorkerBus
from .record_out import record_out
from .streams import parsa_inputs
from .worker import parsa_worker

__all__ = ["parsa_core", "ParsaConfig", "ACT_DEPTH", "UPDATE_DEPTH", "act_go_cycle"]


@block
def parsa_core(
    m_tdata,
    m_tvalid,
    m_tlast,
    s_tready,
    s_tdata,
    s_tvalid,
    s_tlast,
    m_tready,
    cfg: ParsaConfig,
    clock,
    reset,
    spec: ParsaSpec,
):
    """ParSa core.

    m_tdata, m_tvalid, m_tlast : Signal, out -- output stream (action records, policy rows)
    s_tready                   : Signal(bool), out
    s_tdata, s_tvalid, s_tlast : Signal, in -- input stream (state records, CONFIG records, policy rows)
    m_tready                   : Signal(bool), in
    cfg                        : ParsaConfig -- registers in, status out
    clock                      : Signal(bool), in
    reset                      : ResetSignal, in
    spec                       : ParsaSpec
    """
    if spec.act_depth != ACT_DEPTH or spec.update_depth != UPDATE_DEPTH:
        raise ValueError(
            f"this HDL has act_depth {ACT_DEPTH} and update_depth {UPDATE_DEPTH}; the spec says "
            f"{spec.act_depth} and {spec.update_depth}"
        )
    wd = ParsaWidths(spec)
    W, MA = spec.workers, spec.max_actions
    value = dict(min=-(1 << (spec.value_w - 1)), max=1 << (spec.value_w - 1))
    acc = dict(min=-(1 << (wd.acc_w - 1)), max=1 << (wd.acc_w - 1))
    bus, phase, run, rep = WorkerBus(wd), ParsaPhase(), ParsaRun(wd), ParsaReport(wd)
    u_mem = [Signal(intbv(0)[16:]) for _ in range(spec.max_dims)]
    # the workers' outputs: preference accumulators, tilings, CONFIG overflow, update saturation, policy rows read
    accs = [[Signal(intbv(0, **acc)) for _ in range(MA)] for _ in range(W)]
    counts = [Signal(intbv(0, min=0, max=spec.max_tilings + 1)) for _ in range(W)]
    overflows, upd_sats = [Signal(bool(0)) for _ in range(W)], [Signal(bool(0)) for _ in range(W)]
    rows = [Signal(intbv(0)[wd.row_w :]) for _ in range(W)]
    # q(s, .) and which actions are in use, for the emitter
    qs, in_use = [Signal(intbv(0, **value)) for _ in range(MA)], [Signal(bool(0)) for _ in range(MA)]

    inputs = parsa_inputs(u_mem, bus, rep, phase, run, s_tdata, s_tvalid, clock, reset, wd)
    inputs.name = "inputs"
    insts = [inputs]
    for w in range(W):
        worker = parsa_worker(accs[w], counts[w], overflows[w], upd_sats[w], rows[w], bus, u_mem, clock, reset, w, wd)
        worker.name = f"worker{w}"  # tests/parsa/test_build.py reads its Verilog names
        insts.append(worker)
    act = act_datapath(
        qs, in_use, bus, rep, accs, counts, overflows, upd_sats, phase, run, s_tdata, cfg, clock, reset, spec
    )
    act.name = "act"
    out = record_out(
        m_tdata,
        m_tvalid,
        m_tlast,
        rep.em_idle,
        m_tready,
        qs,
        in_use,
        rows,
        rep.dump_worker,
        rep.dump_r,
        phase.use_dump,
        phase.rejecting,
        phase.deciding,
        run.terminal,
        run.batch_last,
        run.out_words,
        run.chosen_r,
        run.explored_r,
        rep.chosen_q,
        run.em_release,
        run.em_release_last,
        cfg.soft_reset,
        clock,
        reset,
        wd,
    )
    out.name = "record_out"
    control = parsa_control(s_tready, bus, phase, run, rep, s_tvalid, s_tlast, cfg, clock, reset, spec)
    control.name = "control"
    return insts + [act, out, control]
