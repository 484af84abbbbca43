"""Inferable block RAM and UltraRAM.

The pattern found to infer RAMB18/RAMB36: a list of Signals written in a clocked process with no
reset, read into a registered output in a separate clocked process (docs/design.md, MyHDL lessons).

UltraRAM is the same pattern with its memory marked for Vivado: MyHDL cannot emit Verilog attributes, so a memory
of style ``"ultra"`` is named ``<instance>_uram`` (the Signal list's name, :data:`URAM_SUFFIX`) and the converter
(``pynq_rl.overlay.build.verilog``) gives exactly those memories ``(* ram_style = "ultra" *)`` and drops their
all-zero ``initial`` loop (UltraScale+ UltraRAM has no INIT). Which memories are UltraRAM is decided here, once
(:func:`memory_style`), from the core spec's ``uram_min_bits`` (the target part's) and the memory's size.
"""

from myhdl import Signal, always, block, intbv

__all__ = ["ram_sdp_rf", "memory_style", "RAM_STYLES", "URAM_SUFFIX"]

#: ``style`` values of :func:`ram_sdp_rf`: ``"block"`` (Vivado's default inference: block RAM, or LUT-RAM when
#: small) and ``"ultra"`` (UltraRAM).
RAM_STYLES = ("block", "ultra")
#: The Verilog name of an UltraRAM memory ends in this (MyHDL names a memory ``<instance path>_<local name>``).
URAM_SUFFIX = "_uram"


def memory_style(uram_min_bits: int, depth: int, width: int) -> str:
    """``"ultra"`` for a memory of ``depth`` x ``width`` bits at least ``uram_min_bits`` (when that is not 0: the
    target part has UltraRAM), else ``"block"``."""
    return "ultra" if uram_min_bits and depth * width >= uram_min_bits else "block"


@block
def ram_sdp_rf(rd_data, wr_data, wr_addr, wr_en, rd_addr, rd_en, clock, depth: int, style: str = "block"):
    """RAM: Simple-Dual-Port, Read-First, one write and one registered read per cycle.

    rd_data : Signal(width), out  -- word at ``rd_addr`` of the previous cycle's ``rd_en`` (1-cycle latency)
    wr_data : Signal(width), in   -- word to write
    wr_addr : Signal(range(depth)), in
    wr_en   : Signal(bool), in    -- write ``wr_data`` at ``wr_addr`` on this edge
    rd_addr : Signal(range(depth)), in
    rd_en   : Signal(bool), in    -- register the word at ``rd_addr`` on this edge
    clock   : Signal(bool), in
    depth   : int                 -- words
    style   : str                 -- one of :data:`RAM_STYLES`. ``"ultra"``: the converted memory is UltraRAM and
                                     has no initial contents in hardware, so its core must write every word it
                                     reads before reading it (the replay core's and ParSa's CLEAR)
    """
    if depth < 1:
        raise ValueError(f"ram_sdp_rf depth must be >= 1, not {depth!r}")
    if style not in RAM_STYLES:
        raise ValueError(f"ram_sdp_rf style must be one of {RAM_STYLES}, not {style!r}")
    if style == "ultra":  # the same processes on a memory named ``uram``: ``<instance>_uram`` in Verilog
        uram = [Signal(intbv(0)[len(wr_data) :]) for _ in range(depth)]

        @always(clock.posedge)
        def write_uram():
            if wr_en:
                uram[wr_addr].next = wr_data

        @always(clock.posedge)
        def read_uram():
            if rd_en:
                rd_data.next = uram[rd_addr]

        return write_uram, read_uram
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
