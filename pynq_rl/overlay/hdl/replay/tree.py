"""Storage of one sum-tree level: its K banks as the K columns of one memory, behind the level's port multiplexers.

Level ``l`` (1..LEVELS) holds ``K**l`` nodes; node ``n`` is column ``n mod K`` (its bank: the child position) of word
``n div K``, so the K children of a node are one word, read in one cycle. The banks share every address, so they
are stored side by side in one ``K * w``-bit simple-dual-port memory
(:func:`~pynq_rl.overlay.hdl.common.bram.ram_sdp_rf`: no reset, registered read in its own process, docs/design.md,
MyHDL lessons) rather than as K separate memories: the synthesizer then fills the width of each block RAM or URAM with
several columns. Measured with yosys 0.23 on the ZCU106 build (2**20 leaves of 16 bits), K separate 16-bit banks need 16
URAM288 each (256 in all, the XCZU7EV has 96) or 512 RAMB36 (it has 312); one 256-bit memory needs 64 URAM288. A write
replaces a whole word, so the updater merges its new node value into the K children it read (see :mod:`.updater`). Level
1 (one word) is a register.

One read port per level, shared by the updater (SET), the sampler and the dump, and one write port, shared by the
updater and CLEAR: one kind of operation runs at a time. :class:`TreePorts` holds every level's port signals,
:func:`sum_tree` instantiates every level.
"""

from myhdl import Signal, always, always_comb, block, intbv

from ...spec import ReplaySpec
from ..common.bram import memory_style, ram_sdp_rf

__all__ = ["sum_tree", "TreePorts", "tree_level", "level_depth", "level_row", "row_columns"]


def level_depth(k: int, level: int) -> int:
    """Words of ``level``'s memory (one word holds the K children of one parent)."""
    return k ** (level - 1)


def level_row(k: int, width: int) -> Signal:
    """A Signal for one word of a level: K columns of ``width`` bits."""
    return Signal(intbv(0)[k * width :])


def row_columns(row: Signal, k: int) -> list:
    """The K columns of a level word as read-only Signals (column b = node of child position b)."""
    width = len(row) // k
    return [row((b + 1) * width, b * width) for b in range(k)]


class TreePorts:
    """The port signals of every level's memory, by level (1 = the one-word level under the root .. LEVELS = the
    leaves): one instance per core, shared by the tree (:func:`sum_tree`), the updater and the sampler.

    ``row[l]``: the word read (K * w_l bits, out of the tree), ``children[l]``: its K columns; ``set_rd[l]``,
    ``sample_rd[l]``: the read addresses of the updater and of the sampler (None at level 1: one word);
    ``wr_en[l]``, ``wr_addr[l]`` (None at level 1), ``wr_row[l]``: the updater's write.
    """

    def __init__(self, spec: ReplaySpec) -> None:
        self.row, self.children, self.set_rd, self.sample_rd = {}, {}, {}, {}
        self.wr_en, self.wr_addr, self.wr_row = {}, {}, {}
        for level in range(1, spec.levels + 1):
            depth, width = level_depth(spec.k, level), spec.level_width(level)
            self.row[level] = level_row(spec.k, width)
            self.children[level] = row_columns(self.row[level], spec.k)
            if level > 1:
                self.set_rd[level] = Signal(intbv(0, min=0, max=depth))
                self.sample_rd[level] = Signal(intbv(0, min=0, max=depth))
                self.wr_addr[level] = Signal(intbv(0, min=0, max=depth))
            else:  # one word: a register, no address
                self.set_rd[level] = self.sample_rd[level] = self.wr_addr[level] = None
            self.wr_en[level], self.wr_row[level] = Signal(bool(0)), level_row(spec.k, width)


@block
def sum_tree(tree: TreePorts, dump_addr, mode_set, mode_dump, rd_en, clear, clear_addr, clock, spec: ReplaySpec):
    """Every level of the tree: :func:`tree_level` for levels 1..LEVELS (the root is the updater's register).

    tree       : TreePorts -- ``row`` out; the read addresses and the write port in
    dump_addr  : Signal(a), in -- read address of the dump (leaf level)
    mode_set   : Signal(bool), in -- the updater owns the read ports
    mode_dump  : Signal(bool), in -- the dump owns the leaf level's read port (else the sampler)
    rd_en      : Signal(bool), in -- register a read (the pipeline's ``advance``)
    clear      : Signal(bool), in -- CLEAR: every level writes 0 at ``clear_addr``
    clear_addr : Signal(intbv), in
    clock      : Signal(bool), in
    spec       : ReplaySpec
    """
    insts = []
    for level in range(1, spec.levels + 1):
        inst = tree_level(
            tree.row[level],
            tree.sample_rd[level],
            tree.set_rd[level],
            dump_addr if level == spec.levels else None,
            mode_set,
            mode_dump,
            rd_en,
            tree.wr_en[level],
            tree.wr_addr[level],
            tree.wr_row[level],
            clear,
            clear_addr,
            clock,
            spec.k,
            level,
            memory_style(spec.uram_min_bits, level_depth(spec.k, level), spec.k * spec.level_width(level)),
        )
        inst.name = f"level{level}"
        insts.append(inst)
    return insts


@block
def tree_level(
    row,
    sample_addr,
    set_addr,
    dump_addr,
    mode_set,
    mode_dump,
    rd_en,
    set_wr_en,
    set_wr_addr,
    set_wr_row,
    clear,
    clear_addr,
    clock,
    k: int,
    level: int,
    style: str = "block",
):
    """The memory of ``level`` and its port multiplexers.

    row         : Signal(K * w_level), out -- the word at the read address of the previous enabled cycle
    sample_addr : Signal(a), in, or None at level 1 -- read address of the sampler (the parent's node number)
    set_addr    : Signal(a), in, or None at level 1 -- read address of the updater
    dump_addr   : Signal(a), in, or None -- read address of the dump (leaf level only)
    mode_set    : Signal(bool), in -- the updater owns the read port
    mode_dump   : Signal(bool), in -- the dump owns the read port (else the sampler)
    rd_en       : Signal(bool), in -- register a read (low: the output holds, a stalled pipeline)
    set_wr_en   : Signal(bool), in -- the updater writes ``set_wr_row`` at ``set_wr_addr``
    set_wr_addr : Signal(a), in, or None at level 1
    set_wr_row  : Signal(K * w_level), in
    clear       : Signal(bool), in -- write 0 at ``clear_addr`` (its low address bits)
    clear_addr  : Signal(intbv), in
    clock       : Signal(bool), in
    style       : ``ram_sdp_rf``'s style of the level's memory (``"ultra"``: UltraRAM, no initial contents: the driver
                  CLEARs the tree when it binds, see ``host/drivers/replay.py``)
    """
    depth = level_depth(k, level)
    wr_data = Signal(intbv(0)[len(row) :])
    wr_en = Signal(bool(0))

    @always_comb
    def write_enable():
        wr_en.next = clear or set_wr_en

    if depth == 1:
        ram = _word_register(row, wr_data, wr_en, rd_en, clock)
        ram.name = "row"

        @always_comb
        def write_port():
            if clear:
                wr_data.next = 0
            else:
                wr_data.next = set_wr_row

        return ram, write_enable, write_port
    else:
        addr_bits = (depth - 1).bit_length()
        rd_addr = Signal(intbv(0, min=0, max=depth))
        wr_addr = Signal(intbv(0, min=0, max=depth))
        ram = ram_sdp_rf(row, wr_data, wr_addr, wr_en, rd_addr, rd_en, clock, depth, style)
        ram.name = "banks"

        @always_comb
        def write_port():
            if clear:
                wr_addr.next = clear_addr[addr_bits:]
                wr_data.next = 0
            else:
                wr_addr.next = set_wr_addr
                wr_data.next = set_wr_row

        if dump_addr is None:

            @always_comb
            def read_port():
                if mode_set:
                    rd_addr.next = set_addr
                else:
                    rd_addr.next = sample_addr
        else:

            @always_comb
            def read_port():
                if mode_set:
                    rd_addr.next = set_addr
                elif mode_dump:
                    rd_addr.next = dump_addr
                else:
                    rd_addr.next = sample_addr

        return ram, write_enable, write_port, read_port


@block
def _word_register(rd_data, wr_data, wr_en, rd_en, clock):
    """A one-word memory (level 1): a register with the timing of a read-first ``ram_sdp_rf``, no address."""
    word = Signal(intbv(0)[len(wr_data) :])

    @always(clock.posedge)
    def write():
        if wr_en:
            word.next = wr_data

    @always(clock.posedge)
    def read():
        if rd_en:
            rd_data.next = word

    return write, read
