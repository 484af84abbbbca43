"""Dimension positions: ``u_d = min(((clamp(s_d - o_d, 0, 2**31 - 1) * c_d) >> 24), 2**16 - 1)`` for every state
dimension, one per cycle, into the positions memory the workers read.

Pipeline (``go`` starts it; dimension d is issued d cycles later)::

    P0 issue d     dimension record (OFFSET, SCALE) and state word d read (registered memories)
    P1             diff = clamp(s_d - o_d, 0, 2**31 - 1)
    P2             the four 16-bit partial products diff_i * scale_j (registered operands and products: one
                   multiplier each, its output register used)
    P3             product = ll + (lh + hl) << 16 + hh << 32
    P4             u_d = min(product >> 24, 65535) written to u_mem[d]

so u_d is readable :data:`LATENCY` cycles after ``go`` + d. The partial products are split by hand and summed a
cycle later: as one 31 x 32 multiply, yosys built it from four multipliers whose outputs ran through
the partial-product adders in the same cycle, no multiplier used its output register (xc7), and on the ECP5 that
multiplier and its 44-stage carry chain was the test build's critical path after the mailbox read was registered
(107 MHz). The positions are registers, not a memory: every worker reads four of them at once (a 4 x WORKERS-port
memory makes yosys 0.23 abort in memory_libmap). The dimension records are double-banked like the descriptors:
CONFIG writes the shadow bank, a successful CONFIG makes it the active one.
"""

from myhdl import Signal, always, always_comb, always_seq, block, intbv

from ..common.bram import ram_sdp_rf
from .params import ParsaWidths

__all__ = ["parsa_positions", "LATENCY"]

#: cycles from ``go`` to the first cycle u_0 can be read from u_mem (u_d: LATENCY + d)
LATENCY = 6


@block
def parsa_positions(
    u_mem,
    go,
    n_dims,
    dim_we,
    dim_waddr,
    dim_wdata,
    dim_bank,
    state_we,
    state_waddr,
    state_wdata,
    clock,
    reset,
    widths: ParsaWidths,
):
    """Positions unit.

    u_mem       : list of max_dims Signal(16), out -- u_d (registers: the workers read them through muxes)
    go          : Signal(bool), in -- start: d = 0 .. n_dims - 1, one per cycle
    n_dims      : Signal(intbv), in -- dimensions in use (1..max_dims)
    dim_we      : Signal(bool), in -- write a dimension record (CONFIG)
    dim_waddr   : Signal(intbv), in -- bank * max_dims + d
    dim_wdata   : Signal(intbv[64]), in -- {SCALE, OFFSET}
    dim_bank    : Signal(bool), in -- the active bank
    state_we    : Signal(bool), in -- write a state word pair (ACT)
    state_waddr : Signal(intbv), in -- pair index (dims 2k, 2k + 1)
    state_wdata : Signal(intbv[64]), in -- {s_{2k+1}, s_{2k}}
    clock       : Signal(bool), in
    reset       : ResetSignal, in
    """
    md = widths.spec.max_dims
    pairs = (md + 1) // 2
    dim_raddr = Signal(intbv(0, min=0, max=2 * md))
    pair_raddr = Signal(intbv(0, min=0, max=pairs))
    dim_q, pair_q = Signal(intbv(0)[64:]), Signal(intbv(0)[64:])
    p0_valid, p1_valid, p2_valid, p3_valid, p4_valid = [Signal(bool(0)) for _ in range(5)]
    p0_d = Signal(intbv(0, min=0, max=md))
    p1_d, p2_d, p3_d, p4_d = [Signal(intbv(0)[widths.dim_bits :]) for _ in range(4)]
    p1_odd = Signal(bool(0))
    state = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    offset = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    diff = Signal(intbv(0, min=-(1 << 32), max=1 << 32))
    p2_diff = Signal(intbv(0)[31:])
    p2_scale = Signal(intbv(0)[32:])
    p3_ll, p3_lh = Signal(intbv(0)[32:]), Signal(intbv(0)[32:])  # diff[15:0] * scale[15:0], * scale[31:16]
    p3_hl, p3_hh = Signal(intbv(0)[31:]), Signal(intbv(0)[31:])  # diff[30:16] * scale[15:0], * scale[31:16]
    p4_prod = Signal(intbv(0)[63:])
    u_new = Signal(intbv(0)[16:])

    # # #

    @always_comb
    def addresses():
        if dim_bank:
            dim_raddr.next = md + p0_d
        else:
            dim_raddr.next = p0_d
        pair_raddr.next = p0_d >> 1

    dims = ram_sdp_rf(dim_q, dim_wdata, dim_waddr, dim_we, dim_raddr, p0_valid, clock, 2 * md)
    states = ram_sdp_rf(pair_q, state_wdata, state_waddr, state_we, pair_raddr, p0_valid, clock, pairs)

    @always_seq(clock.posedge, reset=reset)
    def issue():
        if go:
            p0_valid.next = 1
            p0_d.next = 0
        elif p0_valid:
            if p0_d + 1 >= n_dims:
                p0_valid.next = 0
            else:
                p0_d.next = p0_d + 1
        p1_valid.next = p0_valid
        p2_valid.next = p1_valid
        p3_valid.next = p2_valid
        p4_valid.next = p3_valid

    @always_comb
    def operands():
        if p1_odd:
            state.next = pair_q[64:32].signed()
        else:
            state.next = pair_q[32:0].signed()
        offset.next = dim_q[32:0].signed()

    @always_comb
    def difference():
        diff.next = state - offset

    @always(clock.posedge)
    def datapath():
        p1_d.next = p0_d
        p1_odd.next = p0_d[0]
        # P1 -> P2: clamp the difference to [0, 2**31 - 1]
        if diff[32]:
            p2_diff.next = 0
        elif diff[32:31] != 0:
            p2_diff.next = (1 << 31) - 1
        else:
            p2_diff.next = diff[31:]
        p2_scale.next = dim_q[64:32]
        p2_d.next = p1_d
        # P2 -> P3: the partial products
        p3_ll.next = p2_diff[16:] * p2_scale[16:]
        p3_lh.next = p2_diff[16:] * p2_scale[32:16]
        p3_hl.next = p2_diff[31:16] * p2_scale[16:]
        p3_hh.next = p2_diff[31:16] * p2_scale[32:16]
        p3_d.next = p2_d
        # P3 -> P4: their sum, the whole product (< 2**63)
        p4_prod.next = p3_ll + ((p3_lh + p3_hl) << 16) + (p3_hh << 32)
        p4_d.next = p3_d

    @always_comb
    def position():
        if (p4_prod >> 40) != 0:
            u_new.next = 0xFFFF
        else:
            u_new.next = p4_prod >> 24

    writes = [_position_register(u_mem[d], u_new, p4_valid, p4_d, clock, d) for d in range(md)]
    return addresses, dims, states, issue, operands, difference, datapath, position, writes


@block
def _position_register(u, u_new, valid, d, clock, index: int):
    """``u_index``: one position register, written when dimension ``index`` leaves the pipeline (no reset)."""

    @always(clock.posedge)
    def write():
        if valid and d == index:
            u.next = u_new

    return write
