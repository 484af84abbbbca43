"""Synchronous FIFO on the inferable BRAM, with AXI-Stream-style valid/ready on both sides (first word falls
through after the BRAM's one-cycle read latency).

::

    aclk      _/^\\_/^\\_/^\\_/^\\_/^\\_
    in_valid  _/^^^^^^^\\__________     in_ready high while not full
    out_valid _________/^^^^^^^^\\_     the first word appears two edges after it was written
    out_ready ^^^^^^^^^^^^^^^^^^^^^
"""

from myhdl import Signal, always_comb, always_seq, block, intbv, modbv

from .bram import ram_sdp_rf

__all__ = ["fifo_sync"]


@block
def fifo_sync(out_data, out_valid, in_ready, count, in_data, in_valid, out_ready, clock, reset, depth: int):
    """FIFO of ``depth`` words (a power of two >= 2).

    out_data  : Signal(w), out
    out_valid : Signal(bool), out
    in_ready  : Signal(bool), out     -- not full
    count     : Signal(range(depth + 1)), out -- words stored (including the one on the output register)
    in_data   : Signal(w), in
    in_valid  : Signal(bool), in
    out_ready : Signal(bool), in
    clock     : Signal(bool), in
    reset     : ResetSignal, in
    depth     : int
    """
    if depth < 2 or depth & (depth - 1):
        raise ValueError(f"fifo_sync depth must be a power of two >= 2, not {depth!r}")
    addr_bits = depth.bit_length() - 1
    wr_ptr = Signal(modbv(0)[addr_bits + 1 :])  # one extra bit tells full from empty
    rd_ptr = Signal(modbv(0)[addr_bits + 1 :])
    wr_addr = Signal(intbv(0)[addr_bits:])
    rd_addr = Signal(intbv(0)[addr_bits:])
    write, read = Signal(bool(0)), Signal(bool(0))
    full, stored = Signal(bool(0)), Signal(bool(0))  # stored: a word waits in the BRAM
    in_bram = Signal(modbv(0)[addr_bits + 1 :])
    ram = ram_sdp_rf(out_data, in_data, wr_addr, write, rd_addr, read, clock, depth)
    ram.name = "ram"

    # # #

    @always_comb
    def pointer_flags():
        full.next = (wr_ptr[addr_bits] != rd_ptr[addr_bits]) and (wr_ptr[addr_bits:] == rd_ptr[addr_bits:])
        stored.next = wr_ptr != rd_ptr
        wr_addr.next = wr_ptr[addr_bits:]
        rd_addr.next = rd_ptr[addr_bits:]
        in_bram.next = wr_ptr - rd_ptr

    @always_comb
    def handshakes():
        write.next = in_valid and not full
        read.next = stored and (not out_valid or out_ready)
        in_ready.next = not full
        if out_valid:
            count.next = in_bram + 1
        else:
            count.next = in_bram

    @always_seq(clock.posedge, reset=reset)
    def pointers():
        if write:
            wr_ptr.next = wr_ptr + 1
        if read:
            rd_ptr.next = rd_ptr + 1
            out_valid.next = True
        elif out_ready:
            out_valid.next = False

    return ram, pointer_flags, handshakes, pointers
