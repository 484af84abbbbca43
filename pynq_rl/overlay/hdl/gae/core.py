"""The GAE core behind its streams: record assembly, BRAM FILO stacks, LANES processing elements, control.

Operation (the same contract as the emulated IP, :mod:`pynq_rl.host.backends.gae_ip`): START with a good
configuration makes the core BUSY until the last output beat (DONE) or a stream error (DONE|ERR_STREAM, once the
chunks before it are out); a bad configuration sets DONE|ERR_CONFIG at once. In between, three engines work on
consecutive chunks at the same time, so the stream, not the phases, sets the pace::

    loader   | load c+1 (rows drain c freed) |            | load c+2 (rows drain c+1 frees)     |
    compute  |                               | compute c+1 (pops, write-backs)   |
    drain    | drain c, newest first         |     drain c+1, trailing the write-backs          |

* BATCHES lane-batches run back to back in one operation, each as CHUNKS chunks (``T + (CHUNKS - 1) x T_MAX``
  steps: the first (latest) T steps and the bootstrap row, then T_MAX steps each without one); TLAST ends only the
  last record of the last chunk of the last batch (earlier: ERR_STREAM; missing: the core discards up to TLAST, then
  ERR_STREAM). The last batch uses LANES_USED lanes, the others all of them.
* Loader (:func:`~.loader.gae_loader`): beats of ``s_axis`` into records, each data record dequantized
  (:func:`~.dequant.dequant`: :data:`~.dequant.LOAD_LATENCY` stages; q8 codes scaled by each lane's SCALE and
  OFFSET, which q8-runs header records reload every run) into one row (one DATA word per lane: reward, value, done)
  of the lanes' FILO stacks (one simple-dual-port BRAM per lane, HEPPO section IV), chunks in alternating
  directions so the previous chunk's drain frees exactly the rows the next one loads.
* Compute (:func:`~.compute.gae_compute`): once a chunk is loaded and the previous one written back, its rows are
  popped backward, one per cycle, registered (:data:`~.lane.READ_LATENCY`) and fed to the PEs (:func:`~.pe.gae_pe`:
  ``PE_LATENCY`` stages); each PE's A_t and R_t are written back in place. ``cycles`` counts the compute's cycles
  but not its yields to the drain: ``T + spec.pipeline_depth`` per chunk.
* Drain (:func:`~.drain.gae_drain`): each chunk's results are read newest first, each once written back, so the
  drain trails the compute instead of waiting for A_0; they leave on ``m_axis`` as output records, TLAST on the
  operation's last beat (a lane-batch's output is in reverse time order: :meth:`GaeSpec.output_rows`).

The stacks' one write port and one read port are shared (:func:`~.ports.stack_ports`): write-backs before the
loader's rows, the drain's reads before pops. :func:`~.control.gae_control` holds the operation's state and STATUS;
:func:`~.lane.gae_lane` is one lane's dequantizer, stack and PE. Stream handshakes are AXI4-Stream (a beat moves on
``tvalid and tready``)::

    aclk     _/^\\_/^\\_/^\\_/^\\_/^\\_
    tvalid   ___/^^^^^^^^^^^^^\\____
    tready   ^^^^^^^^\\___/^^^^^^^^^
    beat         0   1   .   2
"""

from myhdl import Signal, always_comb, block, intbv

from ...spec import GAE_REGISTERS, GaeSpec, field_bits
from .compute import gae_compute, pe_coefficients
from .control import gae_control
from .drain import gae_drain
from .lane import gae_lane
from .loader import gae_loader
from .params import ComputeState, DrainState, GaeWidths, LoadedChunk, Phase, StackPorts
from .ports import stack_ports

__all__ = ["gae_core", "CoreConfig"]


class CoreConfig:
    """Configuration and status signals between the register file and the core (one instance per core).

    Inputs (from registers): ``t_count``, ``lanes_used``, ``batches``, ``chunks``, ``gamma``, ``gamma_lambda``,
    ``mode``, ``r_scale``, ``r_offset``, ``v_scale``, ``v_offset``, ``start`` and ``soft_reset`` (one-cycle pulses).
    Outputs (to STATUS / CYCLES): ``busy``, ``done``, ``err_config``, ``err_stream``, ``saturated``, ``cycles``.
    """

    def __init__(self, spec: GaeSpec) -> None:
        data = dict(min=spec.data.min_code, max=spec.data.max_code + 1)
        bits = {name: reg["size"] for name, reg in GAE_REGISTERS.items()}  # each value as wide as its register
        mode_hi, mode_lo = field_bits(GAE_REGISTERS["CTRL"], "MODE")
        self.t_count = Signal(intbv(0)[bits["T"] :])
        self.lanes_used = Signal(intbv(0)[bits["LANES_USED"] :])
        self.batches = Signal(intbv(1)[bits["BATCHES"] :])
        self.chunks = Signal(intbv(1)[bits["CHUNKS"] :])
        self.gamma = Signal(intbv(0)[bits["GAMMA"] :])
        self.gamma_lambda = Signal(intbv(0)[bits["GAMMA_LAMBDA"] :])
        self.mode = Signal(intbv(0)[mode_hi - mode_lo :])
        self.r_scale, self.r_offset = Signal(intbv(0, **data)), Signal(intbv(0, **data))
        self.v_scale, self.v_offset = Signal(intbv(0, **data)), Signal(intbv(0, **data))
        self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0))
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles = Signal(intbv(0)[bits["CYCLES"] :])


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
    wd = GaeWidths(spec)
    one = 1 << spec.coef.frac
    phase, chunk, comp, drain, stacks = Phase(), LoadedChunk(wd), ComputeState(wd), DrainState(wd), StackPorts(wd)
    coded, runs = Signal(bool(0)), Signal(bool(0))
    rd_words = [Signal(intbv(0)[wd.word :]) for _ in range(spec.lanes)]  # the stacks' read data
    pe_valid, pe_sat, dq_sat = ([Signal(bool(0)) for _ in range(spec.lanes)] for _ in range(3))
    out_valid = Signal(bool(0))
    gamma_c = Signal(intbv(0, min=0, max=one + 1))
    powers = [Signal(intbv(0, min=0, max=one + 1)) for _ in range(spec.lookahead + 1)]

    control = gae_control(phase, coded, runs, cfg, pe_sat + dq_sat, chunk.failed, comp.busy, drain, clock, reset, spec)
    loader = gae_loader(
        s_tready,
        chunk,
        s_tdata,
        s_tvalid,
        s_tlast,
        coded,
        runs,
        phase,
        comp.busy,
        out_valid,
        drain,
        cfg,
        clock,
        reset,
        wd,
    )
    compute = gae_compute(comp, chunk, phase, drain.holds, out_valid, cfg, clock, reset, wd)
    drainer = gae_drain(
        m_tdata, m_tvalid, m_tlast, drain, rd_words, m_tready, chunk, comp, phase, cfg, clock, reset, wd
    )
    ports = stack_ports(stacks, phase, chunk, comp, drain, clock, reset)
    coefficients = pe_coefficients(gamma_c, powers, cfg, clock, spec)
    names = ("control", "loader", "compute", "drain", "ports", "coefficients")
    insts = [control, loader, compute, drainer, ports, coefficients]
    for inst, name in zip(insts, names):
        inst.name = name

    @always_comb
    def results():
        # the PEs work in step: lane 0's result flag stands for all (read from the list, which converts to a Verilog
        # memory: the other lanes' flags need no reader)
        out_valid.next = pe_valid[0]

    insts.append(results)
    for n in range(spec.lanes):
        lane = gae_lane(
            rd_words[n],
            pe_valid[n],
            pe_sat[n],
            dq_sat[n],
            chunk,
            stacks,
            comp,
            coded,
            phase.launching,
            gamma_c,
            powers,
            cfg,
            clock,
            n,
            wd,
        )
        lane.name = f"lane{n}"
        insts.append(lane)
    return insts
