"""DUMP: the leaf memory read word by word, two leaf codes per output beat, in index order.

A leaf word holds K leaves, so it is read once per K / 2 beats (``dump_pos`` counts beats; its high bits are the
word address, its low ``log2(K) - 1`` bits pick the pair). The word read is copied into a register (the block RAM's
output drives no logic), and the pair multiplexer picks a beat of that copy: the block RAM's clock-to-output delay
and the multiplexer into the output register are one cycle apart. So a beat is at the output register three
enabled edges after it issues (``spec.dump_cycles`` = ``capacity / 2 + 3``); every register loads only when
``advance`` is high, as the sampler's do.
"""

from myhdl import Signal, always, always_comb, always_seq, block, intbv

from ...spec import ReplayMode, ReplaySpec
from ..common.arith import assign
from .command import t_state
from .select import select
from .tree import level_row, row_columns

__all__ = ["leaf_dump"]

MODE_DUMP = int(ReplayMode.DUMP)


@block
def leaf_dump(
    dump_valid, dump_last, dump_lo, dump_hi, dump_addr, leaf_row, state, advance, cfg, clock, reset, spec: ReplaySpec
):
    """The dump's beat counter, the leaf memory's read address, the word copy and the pair multiplexer.

    dump_valid : Signal(bool), out -- a beat for the output register
    dump_last  : Signal(bool), out -- it is the last
    dump_lo    : Signal(leaf width), out -- its low leaf code (the even index)
    dump_hi    : Signal(leaf width), out -- its high leaf code
    dump_addr  : Signal(a), out -- read address of the leaf memory (the dump owns its read port in DUMP)
    leaf_row   : Signal(K * leaf width), in -- the leaf memory's read word
    state      : Signal(t_state), in -- the command FSM's state: START in IDLE begins a DUMP, which runs in DUMP
    advance    : Signal(bool), in -- pipeline enable
    cfg        : ReplayConfig, in -- ``start``, ``mode``, ``soft_reset`` (flush)
    clock      : Signal(bool), in
    reset      : ResetSignal, in
    spec       : ReplaySpec
    """
    k, kb, ib, lw = spec.k, spec.k_bits, spec.index_bits, spec.leaf.width
    beats = spec.capacity // 2
    dump_pos = Signal(intbv(0, min=0, max=beats + 1))
    dump_issuing, dump_issue = Signal(bool(0)), Signal(bool(0))
    dump_v1, dump_last1 = Signal(bool(0)), Signal(bool(0))  # the leaf word read; registered: dump_valid, dump_last
    dump_row = level_row(k, lw)
    leaves = row_columns(dump_row, k)
    insts = []
    if k == 2:
        insts += [assign(dump_lo, leaves[0]), assign(dump_hi, leaves[1])]
    else:
        dump_pair1, dump_pair2 = Signal(intbv(0)[kb - 1 :]), Signal(intbv(0)[kb - 1 :])
        lo_mux, hi_mux = select(dump_lo, dump_pair2, leaves[0::2]), select(dump_hi, dump_pair2, leaves[1::2])
        lo_mux.name, hi_mux.name = "dump_lo", "dump_hi"
        insts += [lo_mux, hi_mux]

        @always(clock.posedge)
        def dump_pair():
            if advance:
                dump_pair1.next = dump_pos[kb - 1 :]
                dump_pair2.next = dump_pair1

        insts.append(dump_pair)

    @always_comb
    def dump_address():
        dump_issue.next = state == t_state.DUMP and dump_issuing and advance
        dump_addr.next = dump_pos[ib - 1 : kb - 1]

    @always_seq(clock.posedge, reset=reset)
    def dump_control():
        if cfg.soft_reset:
            dump_issuing.next = False
        elif state == t_state.IDLE:
            if cfg.start and cfg.mode == MODE_DUMP:
                dump_pos.next = 0
                dump_issuing.next = True
        elif state == t_state.DUMP:
            if dump_issue:
                dump_pos.next = dump_pos + 1
                if dump_pos == beats - 1:
                    dump_issuing.next = False

    @always_seq(clock.posedge, reset=reset)
    def dump_valid_bits():
        if cfg.soft_reset:
            dump_v1.next = False
            dump_valid.next = False
        elif advance:
            dump_v1.next = dump_issue
            dump_valid.next = dump_v1

    @always(clock.posedge)
    def dump_word():
        if advance:
            dump_row.next = leaf_row
            dump_last1.next = dump_pos == beats - 1
            dump_last.next = dump_last1

    return insts + [dump_address, dump_control, dump_valid_bits, dump_word]
