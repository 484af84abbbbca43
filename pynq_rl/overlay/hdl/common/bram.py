"""Inferable block RAM.

The pattern found to infer RAMB18/RAMB36: a list of Signals written in a clocked process with no
reset, read into a registered output in a separate clocked process (docs/design.md, MyHDL lessons).
"""

from myhdl import Signal, always, block, intbv

__all__ = ["ram_sdp_rf"]


@block
def ram_sdp_rf(rd_data, wr_data, wr_addr, wr_en, rd_addr, rd_en, clock, depth: int):
    """RAM: Simple-Dual-Port, Read-First, one write and one registered read per cycle.

    rd_data : Signal(width), out  -- word at ``rd_addr`` of the previous cycle's ``rd_en`` (1-cycle latency)
    wr_data : Signal(width), in   -- word to write
    wr_addr : Signal(range(depth)), in
    wr_en   : Signal(bool), in    -- write ``wr_data`` at ``wr_addr`` on this edge
    rd_addr : Signal(range(depth)), in
    rd_en   : Signal(bool), in    -- register the word at ``rd_addr`` on this edge
    clock   : Signal(bool), in
    depth   : int                 -- words
    """
    if depth < 1:
        raise ValueError(f"ram_sdp_rf depth must be >= 1, not {depth!r}")
    memory = [Signal(intbv(0)[len(wr_data) :]) for _ in range(depth)]

    # # #

    @always(clock.posedge)
    def write():
        if wr_en:
            memory[wr_addr].next = wr_data

    @always(clock.posedge)
    def read():
        if rd_en:
            rd_data.next = memory[rd_addr]

    return write, read
