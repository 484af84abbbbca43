"""The GAE core's FILO stacks' two shared ports, registered: who writes and who reads each cycle.

Every lane's stack (one simple-dual-port BRAM per lane, HEPPO section IV) has one write port and one read port, and
all lanes use them in step. The write port takes a write-back (:func:`~.compute.gae_compute`) or else the loader's
row, which waits meanwhile; the read port takes the drain's read (:func:`~.drain.gae_drain`) or else a pop, which
yields (the compute issues a bubble). The engines decide between themselves, so at most one claims a port in a
cycle; this block registers the claim.
"""

from myhdl import always_seq, block

__all__ = ["stack_ports"]


@block
def stack_ports(stacks, phase, chunk, comp, drain, clock, reset):
    """Write enable and address, read enable and address of the stacks, one cycle after the claims.

    stacks : StackPorts, out
    phase  : Phase, in        -- the ports move only while the operation runs
    chunk  : LoadedChunk, in  -- ``writing``: the loader's row at ``row_addr``
    comp   : ComputeState, in -- ``pop`` at ``pop_addr``, ``write_back`` at ``wb_addr``
    drain  : DrainState, in   -- ``want``: the drain's read at ``addr``
    clock  : Signal(bool), in
    reset  : ResetSignal, in
    """
    rd_bits, wr_bits = len(stacks.rd_addr), len(stacks.wr_addr)

    @always_seq(clock.posedge, reset=reset)
    def claims():
        stacks.wr_en.next = False
        stacks.rd_en.next = False
        if phase.running:
            if drain.want:
                stacks.rd_en.next = True
                stacks.rd_addr.next = drain.addr[rd_bits:]
            if chunk.writing:
                stacks.wr_en.next = True
                stacks.wr_addr.next = chunk.row_addr
            if comp.pop:
                stacks.rd_en.next = True
                stacks.rd_addr.next = comp.pop_addr[rd_bits:]
            if comp.write_back:
                stacks.wr_en.next = True
                stacks.wr_addr.next = comp.wb_addr[wr_bits:]

    return claims
