"""The bottom-up updater: one three-edge read-modify-write stage per tree level, one set record per cycle.

A record ``(index, code)`` enters the leaf stage; each stage reads the word holding its node (the node and its
K - 1 siblings, see :mod:`.tree`), registers the word read, writes the word back with the node replaced on the
third edge, and hands ``(parent node, delta)`` to the stage above, ending at the root register::

    edge       1        2          3          4      5      6        ...  3L         3L+1
    leaf       read     row reg    write
    level L-1                                 read   row reg write
    ...
    level 1                                                              write
    root                                                                            root += delta

The node a stage updates is ``index >> (log2(K) * (LEVELS - level))``: each stage hands the stage above its node
number shifted by log2(K), so the path comes from the index and is never read back. The leaf stage turns the code
into ``delta = code - old`` and the change of the nonzero-leaf count; the stages above add ``delta``. The word
read is registered before any arithmetic (no logic after the block RAM's output), and the K columns are each
added to in parallel (``delta`` where the column is the node, 0 elsewhere), so no wide multiplexer precedes an
adder. The column logic starts from registers loaded with the read data (edge 2), not from a decode of the
index: above the leaves each column's addend (``delta`` or 0), in the leaf stage a one-hot "column b is the node".

Hazard rule (read-after-write, every stage, per memory word): a record reads its word two edges before it writes
it, and the memories are read-first, so a record's read misses the writes of the two records before it (the one
writing on the read edge and the one writing on the next). The stage keeps the address and the whole word of its
last write. On edge 2 the word read is registered as it is (nothing between the block RAM's output and its
register: the forwarding multiplexer there made the block RAM's clock-to-out plus a multiplexer the Pynq-Z2
replay core's slowest ECP5 path, 99 MHz), and beside it the word of the record written on the previous
edge with whether it has the same word address (two back). Before edge 3 the record is modified from the newest
of the three: the word of the record written on the previous edge -- the one right before it -- if it has the
same word address (one back), else the two-back word if that one hit, else the memory's. So any sequence of
records, back to back, to the same leaf, to siblings, or to leaves sharing ancestors, gives exactly the model's
result (tested).

:func:`replay_updater` chains the stages from the leaves up and keeps the root (TOTAL) and the nonzero-leaf count.
"""

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, intbv, modbv

from ...spec import ReplaySpec
from ..common.arith import assign
from .select import onehot_select
from .tree import TreePorts, row_columns

__all__ = ["replay_updater", "update_level", "delta_signal", "set_depth"]


def set_depth(spec: ReplaySpec) -> int:
    """Pipeline depth of a set batch: CYCLES = records + this (the input register, three edges per level: read,
    read-data register, write; the root's edge is the last record's DONE cycle)."""
    return 3 * spec.levels + 1


@block
def replay_updater(
    root,
    total_lo,
    total_hi,
    nonzero_out,
    tree: TreePorts,
    in_valid,
    in_index,
    in_code,
    clear,
    clock,
    reset,
    spec: ReplaySpec,
):
    """The updater: :func:`update_level` stages from the leaves up to level 1, then the root and the nonzero count.

    root        : Signal(w0), out -- the root (TOTAL); no reset, like the memories, so a reset never makes it
                  disagree with the stored tree
    total_lo    : Signal(intbv[32]), out -- TOTAL's low register word
    total_hi    : Signal(intbv[32]), out -- TOTAL's high register word
    nonzero_out : Signal(intbv[32]), out -- NONZERO: leaves whose code is not 0 (no reset either)
    tree        : TreePorts -- ``set_rd``, ``wr_en``, ``wr_addr``, ``wr_row`` out; ``row`` in
    in_valid    : Signal(bool), in -- a set record
    in_index    : Signal(index_bits), in -- its leaf index (below the capacity)
    in_code     : Signal(leaf width), in -- its code (saturated)
    clear       : Signal(bool), in -- CLEAR: the root and the count become 0 (the memories clear themselves)
    clock       : Signal(bool), in
    reset       : ResetSignal, in -- valid bits only
    spec        : ReplaySpec
    """
    kb = spec.k_bits
    nonzero = Signal(intbv(0, min=0, max=spec.capacity + 1))
    nz_up, nz_down = Signal(bool(0)), Signal(bool(0))
    insts = []
    u_valid, u_index, u_delta = in_valid, in_index, in_code
    for level in range(spec.levels, 0, -1):
        o_valid, o_delta = Signal(bool(0)), delta_signal(spec)
        o_index = Signal(intbv(0)[kb * (level - 1) :]) if level > 1 else None  # the root needs no node number
        leaf = level == spec.levels
        inst = update_level(
            o_valid,
            o_index,
            o_delta,
            nz_up if leaf else None,
            nz_down if leaf else None,
            tree.set_rd[level],
            tree.wr_en[level],
            tree.wr_addr[level],
            tree.wr_row[level],
            tree.row[level],
            u_valid,
            u_index,
            u_delta,
            clock,
            reset,
            spec,
            level,
        )
        inst.name = f"update{level}"
        insts.append(inst)
        u_valid, u_index, u_delta = o_valid, o_index, o_delta
    root_valid, root_delta = u_valid, u_delta
    word_bits = len(total_lo)
    low_word = (1 << word_bits) - 1

    @always(clock.posedge)
    def tree_root():
        if clear:
            root.next = 0
            nonzero.next = 0
        else:
            if root_valid:
                root.next = root + root_delta
            if nz_up:
                nonzero.next = nonzero + 1
            elif nz_down:
                nonzero.next = nonzero - 1

    @always_comb
    def read_outs():
        total_lo.next = root & low_word
        total_hi.next = root >> word_bits
        nonzero_out.next = nonzero

    return insts + [tree_root, read_outs]


def delta_signal(spec: ReplaySpec) -> Signal:
    """A signed Signal that holds any leaf change ``new - old`` (leaf width + 1 bits)."""
    return Signal(intbv(0, min=-(1 << spec.leaf.width), max=1 << spec.leaf.width))


@block
def update_level(
    out_valid,
    out_node,
    out_delta,
    nz_up,
    nz_down,
    rd_addr,
    wr_en,
    wr_addr,
    wr_row,
    row,
    in_valid,
    in_node,
    in_value,
    clock,
    reset,
    spec: ReplaySpec,
    level: int,
):
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
    v1, v2 = Signal(bool(0)), Signal(bool(0))
    value1 = Signal(intbv(0, min=in_value.min, max=in_value.max))
    value2 = Signal(intbv(0, min=in_value.min, max=in_value.max))
    node1 = Signal(intbv(0)[node_bits:])
    row_q = Signal(intbv(0)[len(row) :])  # the word read (edge 2)
    two_back = Signal(intbv(0)[len(row) :])  # the word the record two ahead wrote (edge 2)
    base = Signal(intbv(0)[len(row) :])
    hit1, hit2 = Signal(bool(0)), Signal(bool(0))  # the record one / two ahead wrote the same word
    hit2_q = Signal(bool(0))  # hit2, registered with the word (edge 2)
    last_valid = Signal(bool(0))
    last_row = Signal(intbv(0)[len(row) :])
    columns = [Signal(modbv(0)[width:]) for _ in range(k)]
    merged = ConcatSignal(*reversed(columns))
    base_columns = row_columns(base, k)
    insts = [assign(wr_row, merged)]
    if leaf:  # one-hot, registered with the read data: column b of the word is the node
        is_node2 = [Signal(bool(0)) for _ in range(k)]
        for b in range(k):
            flag = _column_flag(is_node2[b], node1, kb, b, clock)
            flag.name = f"flag{b}"
            inst = _replace_column(columns[b], base_columns[b], value2, is_node2[b])
            inst.name = f"column{b}"
            insts += [flag, inst]
    else:
        for b in range(k):
            inst = _add_column(columns[b], base_columns[b], value1, node1, kb, b, clock)
            inst.name = f"column{b}"
            insts.append(inst)

    addr2 = Signal(intbv(0)[node_bits - kb :]) if level >= 2 else None  # the word address of edge 2
    inst = _word_hits(hit1, hit2, rd_addr, wr_addr, addr2, in_node, node1, v2, last_valid, clock, kb)
    inst.name = "hits"
    insts.append(inst)

    @always(clock.posedge)
    def row_register():
        row_q.next = row
        two_back.next = last_row
        hit2_q.next = hit2

    @always_comb
    def forward():
        if hit1:
            base.next = last_row
        elif hit2_q:
            base.next = two_back
        else:
            base.next = row_q

    @always_seq(clock.posedge, reset=reset)
    def valid_bits():
        v1.next = in_valid
        v2.next = v1
        last_valid.next = v2
        out_valid.next = v2

    @always(clock.posedge)
    def carry():
        node1.next = in_node
        value1.next = in_value
        value2.next = value1

    if leaf:
        old = Signal(intbv(0)[width:])
        mux = onehot_select(old, is_node2, base_columns)
        mux.name = "old_mux"
        insts.append(mux)

        @always(clock.posedge)
        def write_stage():
            last_row.next = merged
            out_node.next = addr2
            out_delta.next = value2 - old
            nz_up.next = v2 and value2 != 0 and old == 0
            nz_down.next = v2 and value2 == 0 and old != 0
    elif out_node is None:

        @always(clock.posedge)
        def write_stage():
            last_row.next = merged
            out_delta.next = value2
    else:

        @always(clock.posedge)
        def write_stage():
            last_row.next = merged
            out_node.next = addr2
            out_delta.next = value2

    @always_comb
    def write_enable():
        wr_en.next = v2

    return insts + [row_register, forward, valid_bits, carry, write_stage, write_enable]


@block
def _word_hits(hit1, hit2, rd_addr, wr_addr, addr2, in_node, node1, v2, last_valid, clock, kb: int):
    """The word addresses of an updater stage and its read-after-write hazards (module docstring).

    hit1       : Signal(bool), out -- registered beside the word read: the record one ahead writes the same word
    hit2       : Signal(bool), out -- the record two ahead wrote the word of the record on edge 1 (the stage
                 registers it beside the word read)
    rd_addr    : Signal(a), out, or None at level 1 -- the word of ``in_node``: the read address
    wr_addr    : Signal(a), out, or None at level 1 -- the word written (``addr2``)
    addr2      : Signal(a), out, or None at level 1 -- the word address after edge 2, also the parent node the
                 stage hands up
    in_node    : Signal(log2(K) * level), in -- the node entering the stage
    node1      : Signal(log2(K) * level), in -- the node after edge 1
    v2         : Signal(bool), in -- a record after edge 2 (it writes on the next edge)
    last_valid : Signal(bool), in -- the stage's last write was a record
    clock      : Signal(bool), in
    kb         : int -- log2(K)
    """
    if addr2 is None:  # level 1: one word, no address: every record hits the one before

        @always_comb
        def address():
            hit2.next = last_valid

        @always(clock.posedge)
        def last_address():
            hit1.next = v2

        return address, last_address
    else:
        node_bits = len(node1)
        addr1, last_addr = Signal(intbv(0)[node_bits - kb :]), Signal(intbv(0)[node_bits - kb :])

        @always_comb
        def address():
            rd_addr.next = in_node[node_bits:kb]
            addr1.next = node1[node_bits:kb]
            wr_addr.next = addr2

        @always_comb
        def hits():
            hit2.next = last_valid and last_addr == addr1

        @always(clock.posedge)
        def last_address():
            addr2.next = addr1  # the word address, and the parent node handed up
            last_addr.next = addr2
            hit1.next = v2 and addr2 == addr1

        return address, hits, last_address


@block
def _column_flag(flag, node, kb: int, b: int, clock):
    """``flag`` (registered) = column ``b`` of its word is ``node`` (the node's low ``kb`` bits equal ``b``).

    The leaf stage's column logic (the replacement and the old-code multiplexer) is selected by these registers,
    not by a binary index: the index bits came straight down a register chain, which synthesis packs into shift
    registers (an SRL16E's clock-to-out is 1.5 ns on xc7), and their decode fanned out to every column (SRL16E ->
    the 16:1 multiplexer -> the subtract was the Pynq-Z2 replay core's slowest xc7 path, 4.90 ns)."""

    @always(clock.posedge)
    def decode():
        flag.next = node[kb:] == b

    return decode


@block
def _replace_column(column, base_column, new, is_node):
    """Leaf column of the word written back: the new code where the column is the node, else the word's own."""

    @always_comb
    def pick():
        if is_node:
            column.next = new
        else:
            column.next = base_column

    return pick


@block
def _add_column(column, base_column, delta, node, kb: int, b: int, clock):
    """Column ``b`` of the word written back above the leaves: the column plus ``delta`` where the column is the
    node (``column`` is a modbv: in a cycle that carries no record the sum may be garbage; it is not written).

    The addend (``delta`` or 0) is registered with the read data (edge 2), so the add starts from a register: the
    delta arrives down a chain of registers that synthesis packs into shift registers, and the gate after one of
    those (SRL16E clock-to-out 1.5 ns on xc7) -> the add -> the memory's write data was the Pynq-Z2 replay core's
    slowest xc7 path once the leaf's select was registered."""
    addend = Signal(intbv(0, min=delta.min, max=delta.max))

    @always(clock.posedge)
    def gate():
        if node[kb:] == b:
            addend.next = delta
        else:
            addend.next = 0

    @always_comb
    def add():
        column.next = base_column + addend

    return gate, add
