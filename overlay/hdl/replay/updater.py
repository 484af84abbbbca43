"""The bottom-up updater: one read-modify-write stage per tree level, one set record per cycle.

A record ``(index, code)`` enters the leaf stage; each stage reads the word holding its node (the node and its
K - 1 siblings, see :mod:`.tree`), writes the word back with the node replaced one cycle later, and hands
``(parent node, delta)`` to the stage above, ending at the root register::

    cycle      0        1          2          3          4        ...  2L         2L+1
    leaf       read     write      .          .          .
    level L-1  .        .          read       write      .
    ...
    level 1                                                      write
    root                                                                    root += delta

The node a stage updates is ``index >> (log2(K) * (LEVELS - level))``: each stage hands the stage above its node
number shifted by log2(K), so the path comes from the index and is never read back. The leaf stage turns the code
into ``delta = code - old`` and the change of the nonzero-leaf count; the stages above add ``delta``.

Hazard rule (read-after-write, every stage, per memory word): a stage reads a word one edge before it writes it,
and the memories are read-first, so a record that reads a word in the same edge the record before it writes that
word sees the word from before that write. The stage therefore keeps the address and the whole word of its
previous cycle's write and, when the record it is modifying has the same word address (the same node or a
sibling), starts from that word instead of the memory's (forwarding). Two cycles apart, the earlier write has
already landed. So any sequence of records, back to back, to the same leaf, to siblings, or to leaves sharing
ancestors, gives exactly the model's result (tested).
"""
from myhdl import always, always_comb, always_seq, block, ConcatSignal, intbv, modbv, Signal

from ...spec import ReplaySpec
from ..common.arith import assign
from .select import select
from .tree import row_columns

__all__ = ["update_level", "delta_signal"]


def delta_signal(spec: ReplaySpec) -> Signal:
    """A signed Signal that holds any leaf change ``new - old`` (leaf width + 1 bits)."""
    return Signal(intbv(0, min=-(1 << spec.leaf.width), max=1 << spec.leaf.width))


@block
def update_level(out_valid, out_node, out_delta, nz_up, nz_down,
                 rd_addr, wr_en, wr_addr, wr_row,
                 row, in_valid, in_node, in_value, clock, reset, spec: ReplaySpec, level: int):
    """One read-modify-write stage of the updater (``level`` = LEVELS: the leaf stage).

    out_valid : Signal(bool), out     -- a record for the stage above (registered)
    out_node  : Signal(log2(K) * (level - 1)), out, or None at level 1 -- the parent's node number
    out_delta : Signal(signed leaf width + 1), out -- the change of every ancestor
    nz_up     : Signal(bool), out, or None -- leaf stage: a leaf became nonzero (registered)
    nz_down   : Signal(bool), out, or None -- leaf stage: a leaf became zero (registered)
    rd_addr   : Signal(a), out, or None at level 1 -- read address of this level's memory (from ``in_node``)
    wr_en     : Signal(bool), out     -- write ``wr_row`` at ``wr_addr``
    wr_addr   : Signal(a), out, or None at level 1
    wr_row    : Signal(K * w_level), out -- the word read (or forwarded) with this node replaced
    row       : Signal(K * w_level), in -- the memory's read data (one cycle after ``rd_addr``)
    in_valid  : Signal(bool), in
    in_node   : Signal(log2(K) * level), in -- the node of this level on the record's path (leaf: the index)
    in_value  : Signal, in            -- leaf stage: the new code (saturated); above: the signed delta
    clock     : Signal(bool), in
    reset     : ResetSignal, in       -- valid bits only
    """
    leaf = level == spec.levels
    k, kb = spec.k, spec.k_bits
    node_bits = kb * level
    width = spec.level_width(level)
    v1 = Signal(bool(0))
    value1 = Signal(intbv(0, min=in_value.min, max=in_value.max))
    node1 = Signal(intbv(0)[node_bits:])
    bank1 = Signal(intbv(0)[kb:])
    base = Signal(intbv(0)[len(row):])
    old = Signal(intbv(0)[width:])
    new = Signal(modbv(0)[width:])   # modbv: delta cycles of the simulation may pair a new delta with a stale old
    last_valid = Signal(bool(0))
    last_row = Signal(intbv(0)[len(row):])
    columns = [Signal(intbv(0)[width:]) for _ in range(k)]
    merged = ConcatSignal(*reversed(columns))
    base_columns = row_columns(base, k)
    mux = select(old, bank1, base_columns)
    mux.name = "old_mux"
    insts = [mux, assign(wr_row, merged)]
    for b in range(k):
        inst = _replace_column(columns[b], base_columns[b], new, bank1, b)
        inst.name = f"column{b}"
        insts.append(inst)

    if level >= 2:
        addr1 = Signal(intbv(0)[node_bits - kb:])
        last_addr = Signal(intbv(0)[node_bits - kb:])

        @always_comb
        def address():
            rd_addr.next = in_node[node_bits:kb]
            bank1.next = node1[kb:]
            addr1.next = node1[node_bits:kb]
            wr_addr.next = node1[node_bits:kb]

        @always(clock.posedge)
        def last_address():
            last_addr.next = addr1

        @always_comb
        def forward():
            if last_valid and last_addr == addr1:
                base.next = last_row
            else:
                base.next = row

        insts += [last_address]
    else:  # level 1: one word, no address
        @always_comb
        def address():
            bank1.next = node1[kb:]

        @always_comb
        def forward():
            if last_valid:
                base.next = last_row
            else:
                base.next = row

    @always_seq(clock.posedge, reset=reset)
    def valid_bits():
        v1.next = in_valid
        last_valid.next = v1
        out_valid.next = v1

    @always(clock.posedge)
    def read_stage():
        node1.next = in_node
        value1.next = in_value

    if leaf:
        @always_comb
        def modify():
            new.next = value1

        @always(clock.posedge)
        def write_stage():
            last_row.next = merged
            out_node.next = node1[node_bits:kb]
            out_delta.next = new - old
            nz_up.next = v1 and new != 0 and old == 0
            nz_down.next = v1 and new == 0 and old != 0
    else:
        @always_comb
        def modify():
            if v1:
                new.next = old + value1
            else:
                new.next = old

        if out_node is None:
            @always(clock.posedge)
            def write_stage():
                last_row.next = merged
                out_delta.next = value1
        else:
            @always(clock.posedge)
            def write_stage():
                last_row.next = merged
                out_node.next = node1[node_bits:kb]
                out_delta.next = value1

    @always_comb
    def write_enable():
        wr_en.next = v1

    return insts + [address, forward, valid_bits, read_stage, modify, write_stage, write_enable]


@block
def _replace_column(column, base_column, new, bank, b: int):
    """Column ``b`` of the word written back: the new node value where ``bank == b``, else the word's own."""

    @always_comb
    def pick():
        if bank == b:
            column.next = new
        else:
            column.next = base_column

    return pick
