"""The replay core: a K-ary sum tree in per-level memories (:mod:`.tree`), its updater (:mod:`.updater`), its sampler
(:mod:`.sampler`), the dump (:mod:`.dump`), the output register (:mod:`.output`) and the command FSM
(:mod:`.command`), wired by :func:`replay_core`.

One kind of operation per START (:class:`~pynq_rl.overlay.spec.ReplayMode`); the contract is the model's
(:class:`~pynq_rl.overlay.models.replay.SumTree`), bit for bit::

    IDLE --START, SET---------------> SET --TLAST--> SET_DRAIN (3L+1 cycles) --> IDLE, DONE
         --START, SAMPLE[_UNIFORM]--> CHECK (3 cycles) --COUNT, STRIDE, TOTAL ok--> SAMPLE --last result out--> IDLE
                                                       --refused--> IDLE, DONE|ERR_CONFIG (nothing streamed)
         --START, DUMP--------------> DUMP --last beat out--> IDLE
         --START, CLEAR-------------> CLEAR (K**(L-1) cycles: every level's memory at once) --> IDLE
         --START, other MODE--------> IDLE, DONE|ERR_CONFIG

* SET: one record per cycle into the updater (:mod:`.updater`); an index >= capacity drops its record and sets
  ERR_CONFIG, a code above the largest leaf code is saturated and sets SATURATED.
* SAMPLE / SAMPLE_UNIFORM: the sampler (:mod:`.sampler`) takes one uniform per cycle, from the PRNG (one step per
  sample) or from the input stream, and results leave in order, TLAST on the last. SAMPLE_UNIFORM with TLAST
  before the COUNT-th record: the records received are sampled, the last of their results carries TLAST, and
  ERR_STREAM is set. Without TLAST on the COUNT-th record: COUNT results, the extra records are taken and
  dropped up to TLAST, ERR_STREAM. Either way the output ends with TLAST and the input is drained to its TLAST.
* DUMP: the leaf memory read word by word (K leaves each), two leaf codes (uint32 each) per beat, index order
  (:mod:`.dump`).
* SOFT_RESET: back to IDLE, STATUS cleared, the sampler and output flushed; the tree and the PRNG are kept.
  During SET the input stops (a beat offered in the SOFT_RESET cycle is dropped) and the records already accepted
  complete first: BUSY stays high for those ``set_depth`` cycles, then IDLE without DONE, so the tree stays
  consistent. A SOFT_RESET during CLEAR leaves the tree partly cleared: CLEAR again.

CYCLES counts from the first input beat (SET, SAMPLE_UNIFORM) or from START (SAMPLE, DUMP, CLEAR) to the cycle
DONE rises, both included: ``n + spec.set_depth`` for n set records and ``n + spec.sample_depth`` for n samples
when the streams move one beat per cycle (SAMPLE_UNIFORM takes the 3 CHECK cycles less), ``capacity/2 + 3``
(``spec.dump_cycles``) for DUMP and ``K**(L-1)`` for CLEAR. A refused START leaves CYCLES at 0.

The root (TOTAL) and the nonzero-leaf count have no reset, like the memories, so a reset never makes them disagree
with the stored tree; everything powers up 0.
"""

from myhdl import Signal, block, intbv

from ...spec import ReplaySpec
from ..common.prng import ZERO_SEED_REPLACEMENT
from .command import record_fields, replay_command, t_state
from .descend import descend_stages
from .dump import leaf_dump
from .issue import CHECK_CYCLES, SampleStatus
from .output import result_out
from .sampler import front_stages, replay_sampler
from .tree import TreePorts, level_depth, sum_tree
from .updater import replay_updater, set_depth

__all__ = ["replay_core", "ReplayConfig", "set_depth", "sample_depth", "CHECK_CYCLES"]


def sample_depth(spec: ReplaySpec) -> int:
    """Pipeline depth of a SAMPLE batch: CYCLES = COUNT + this (CHECK, the front stages, the descent stages of
    every level, the output register; the last result's handshake is the last cycle)."""
    return CHECK_CYCLES + front_stages(spec.level_width(0)) + spec.levels * descend_stages(spec.k) + 1


class ReplayConfig:
    """Configuration and status signals between the register file and the core (one instance per core).

    Inputs (from registers): ``mode``, ``count``, ``stride``, ``seed``, ``seed_load`` (pulse after a SEED write),
    ``start`` and ``soft_reset`` (pulses). Outputs: ``busy``, ``done``, ``err_config``, ``err_stream``,
    ``saturated``, ``cycles``, ``total_lo``, ``total_hi``, ``nonzero``, ``prng`` (the PRNG state: SEED reads).
    """

    def __init__(self) -> None:
        self.mode = Signal(intbv(0)[4:])
        self.count, self.stride, self.seed = (Signal(intbv(0)[32:]) for _ in range(3))
        self.seed_load, self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles = Signal(intbv(0)[32:])
        self.total_lo, self.total_hi = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
        self.nonzero = Signal(intbv(0)[32:])
        self.prng = Signal(intbv(ZERO_SEED_REPLACEMENT)[32:])


@block
def replay_core(
    m_tdata, m_tvalid, m_tlast, s_tready, s_tdata, s_tvalid, s_tlast, m_tready, cfg, clock, reset, spec: ReplaySpec
):
    """The replay core (tree memories + updater + sampler + dump + output + command FSM); registers arrive through
    ``cfg``.

    m_tdata  : Signal(64), out -- result records / dump words (AXI4-Stream master)
    m_tvalid : Signal(bool), out
    m_tlast  : Signal(bool), out
    s_tready : Signal(bool), out -- set records / uniform records (AXI4-Stream slave)
    s_tdata  : Signal(64), in
    s_tvalid : Signal(bool), in
    s_tlast  : Signal(bool), in
    m_tready : Signal(bool), in
    cfg      : ReplayConfig
    clock    : Signal(bool), in
    reset    : ResetSignal, in -- synchronous; control registers only (not the tree, TOTAL or NONZERO)
    """
    if spec.levels < 2:
        raise ValueError(f"the replay HDL needs levels >= 2, not {spec.levels!r}")
    record_bits, _ = record_fields(spec)
    if len(s_tdata) != record_bits or len(m_tdata) != record_bits:
        raise ValueError(f"the replay core streams {record_bits}-bit records")
    ib, lw = spec.index_bits, spec.leaf.width
    tree = TreePorts(spec)
    state = Signal(t_state.IDLE)
    mode_set, mode_dump, clearing = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    advance, out_last_beat = Signal(bool(1)), Signal(bool(0))
    clear_addr = Signal(intbv(0, min=0, max=spec.k ** (spec.levels - 1)))
    dump_addr = Signal(intbv(0, min=0, max=level_depth(spec.k, spec.levels)))
    # SET records (command -> updater), the root (updater -> sampler), the sampler's reports to the command FSM
    rec_valid, rec_index, rec_code = Signal(bool(0)), Signal(intbv(0)[ib:]), Signal(intbv(0)[lw:])
    root = Signal(intbv(0)[spec.level_width(0) :])
    status = SampleStatus()
    # results and dump beats for the output register
    sample_valid, sample_last = Signal(bool(0)), Signal(bool(0))
    sample_index, sample_code = Signal(intbv(0)[ib:]), Signal(intbv(0)[lw:])
    dump_valid, dump_last = Signal(bool(0)), Signal(bool(0))
    dump_lo, dump_hi = Signal(intbv(0)[lw:]), Signal(intbv(0)[lw:])

    levels = sum_tree(tree, dump_addr, mode_set, mode_dump, advance, clearing, clear_addr, clock, spec)
    command = replay_command(
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
        spec,
    )
    updater = replay_updater(
        root,
        cfg.total_lo,
        cfg.total_hi,
        cfg.nonzero,
        tree,
        rec_valid,
        rec_index,
        rec_code,
        clearing,
        clock,
        reset,
        spec,
    )
    sampler = replay_sampler(
        sample_valid,
        sample_last,
        sample_index,
        sample_code,
        status,
        tree,
        root,
        state,
        s_tdata,
        s_tvalid,
        s_tlast,
        advance,
        out_last_beat,
        cfg,
        clock,
        reset,
        spec,
    )
    dump = leaf_dump(
        dump_valid,
        dump_last,
        dump_lo,
        dump_hi,
        dump_addr,
        tree.row[spec.levels],
        state,
        advance,
        cfg,
        clock,
        reset,
        spec,
    )
    output = result_out(
        m_tdata,
        m_tvalid,
        m_tlast,
        advance,
        out_last_beat,
        m_tready,
        sample_valid,
        sample_last,
        sample_index,
        sample_code,
        dump_valid,
        dump_last,
        dump_lo,
        dump_hi,
        cfg.soft_reset,
        clock,
        reset,
    )
    insts = [levels, command, updater, sampler, dump, output]
    for inst, name in zip(insts, ("tree", "command", "updater", "sampler", "dump", "output"), strict=True):
        inst.name = name
    return insts
