"""One ParSa worker (map): its tilings' descriptors, its policy bank, the rows each key's last state hit.

ACT pass (``act_go``): the worker's tilings are issued one per cycle through a 10-stage pipeline::

    S0 issue i        descriptor i at the memory's output (read on the edge that issued i); key row (key, i) read
    S1                descriptor i registered; old row of (key, i) -> temp memory; positions u[dim_j] selected
    S2                p_j = u_j * tiles + shift                 (16 x 8 bits: t_j = p_j >> 16)
    S3..S5            Horner: h = h * n_t + t_j for j < ndims   (one multiply per stage, row-index wide)
    S6                row = base + h
    S7                policy bank read (one row: max_actions values); (key, i) <- row
    S8                the row registered (the block RAM's output register where the fabric has one)
    S9                acc[a] += row[a] for every action

so ``acc`` holds the worker's preference vector ``ACT_LATENCY`` cycles after the last tiling was issued. The key's
previous rows go to a temp memory in S1 before S7 overwrites them (the write trails the read by 6 addresses, so the
key memory is never read and written at one address in one cycle).

The descriptor memory is read one cycle ahead of the issue (its address is the index S0 takes next), so the
descriptor is registered at the end of S0 and S1's position muxes start from a register, not from the block RAM's
clock-to-out (RAMB36 -> the 20:1 position mux -> the DSP48's A input was the Pynq-Z2 build's slowest xc7
path, 4.04 ns), at no cycle's cost.

A Horner stage past ``ndims`` multiplies 0 and adds h (the operands are selected, not the result), so each stage
is one multiply-add straight into its register: a DSP48 with its P register (selecting the result after
the add left the Pynq-Z2 build's 12 Horner DSPs without M or P registers, and a product operand straight from the
previous stage's register let yosys take that register as the next DSP's input register instead, see
:func:`_horner_operands`).

UPDATE pass (``upd_go``): the previous rows are read back from the temp memory, one per cycle, and each gets
``row[a_prev] = sat(row[a_prev] + increment)``::

    U0 issue j        temp memory read: the row index of tiling j
    U1                policy bank read of that row
    U2                the row (or a forwarded one) -> ``src``
    U3                add, saturate, write back

The bank's output goes only to a register (U2): a block RAM read, the add, the saturation and the write
back in one cycle was the Pynq-Z2 build's slowest path. Tiling j's read (U1) is issued before the writes of tilings
j - 1 (U3 one cycle later) and j - 2 (U3 on the same edge, read-first) reach the bank, so when j reads the row one
of them writes (only overlapping descriptors do this) U2 takes that row instead: j - 1's ``new_row`` as U3 computes
it, else j - 2's as written (``last_row``); the hits are compared in U1. The result is the model's sequential one.
"""

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, intbv, modbv

from ..common.arith import saturate
from ..common.bram import memory_style, ram_sdp_rf
from ..common.mux import field_signed, field_unsigned, mux_tree
from .params import ParsaWidths, WorkerBus

__all__ = ["parsa_worker", "ACT_LATENCY", "UPDATE_LATENCY"]

#: cycles from the edge that issues a worker's last tiling (S0) to the edge after which ``acc`` holds it (S9)
ACT_LATENCY = 10
#: cycles from the edge that issues the last update (U0) to the edge that writes it (U3)
UPDATE_LATENCY = 4


@block
def _acc_lane(acc, col, clear, enable, clock):
    """``acc = 0`` on ``clear``, ``acc += col`` on ``enable`` (a preference accumulator, no reset)."""

    @always(clock.posedge)
    def logic():
        if clear:
            acc.next = 0
        elif enable:
            acc.next = acc + col

    return logic


@block
def _column_update(out, flag, col, increment, a_prev, index: int):
    """Column ``index`` of an updated row: ``sat(col + increment)`` where ``a_prev == index``, else ``col``.

    out : Signal(intbv[vw]), out (unsigned bits of the value)
    flag : Signal(bool), out -- the sum saturated in the updated column
    """
    vw = len(out)
    lo, hi = -(1 << (vw - 1)), (1 << (vw - 1)) - 1
    total = Signal(intbv(0, min=2 * lo, max=2 * hi + 2))
    clamped = Signal(intbv(0, min=lo, max=hi + 1))
    sat = Signal(bool(0))

    @always_comb
    def add():
        total.next = col + increment

    clamp = saturate(clamped, sat, total, lo, hi)

    @always_comb
    def pick():
        if a_prev == index:
            out.next = clamped[vw:]
            flag.next = sat
        else:
            out.next = col[vw:]
            flag.next = 0

    return add, clamp, pick


@block
def _horner_operands(a, b, c, h, has_dim, n_t, t):
    """Operands of the Horner stage ``a * b + c`` over one dim: ``h``, ``n_t`` and that dim's coordinate ``t``
    when the tiling has the dim (``has_dim``, a register: ``ndims > dim`` decided a stage earlier), else 0, ``n_t``
    and ``h``, so ``h`` passes unchanged through the same multiply-add, on its addend.

    The product's operand is never the previous stage's bare register: a DSP48 fed from one takes it as
    its own input register (yosys ``xilinx_dsp``), leaving the previous stage's multiply-add without its P register
    and its whole multiply in front of the next DSP's input. Which of the two DSPs yosys packs first decided it: the
    Pynq-Z2 ParSa core alone had 3 of 39 DSPs unregistered, the whole overlay none."""

    @always_comb
    def pick():
        b.next = n_t
        if has_dim:
            a.next = h
            c.next = t
        else:
            a.next = 0
            c.next = h

    return pick


@block
def parsa_worker(
    accs, count, overflow, upd_sat, pol_rdata, bus: WorkerBus, u_mem, clock, reset, index: int, widths: ParsaWidths
):
    """Worker ``index``: descriptor banks, policy bank, key-row memory, ACT and UPDATE passes.

    accs      : list of Signal(signed acc_w), out -- the preference vector (one per action), valid ACT_LATENCY
                cycles after the last issue
    count     : Signal(range(max_tilings + 1)), out -- tilings of the active configuration
    overflow  : Signal(bool), out -- CONFIG gave this worker more than max_tilings tilings (sticky to cfg_begin)
    upd_sat   : Signal(bool), out -- an update saturated (sticky to the next upd_go)
    pol_rdata : Signal(row_w), out -- policy row read with ``bus.pol_ren`` (one-cycle latency)
    bus       : WorkerBus, in
    u_mem     : list of Signal(16), in -- positions u_d (registers written by the positions unit)
    clock     : Signal(bool), in
    reset     : ResetSignal, in
    index     : int -- this worker's number
    widths    : ParsaWidths
    """
    spec = widths.spec
    mt, tpw, keys, ma, vw = spec.max_tilings, spec.tiles_per_worker, spec.keys, spec.max_actions, widths.vw
    rb = widths.row_bits

    bank = Signal(bool(0))  # active descriptor bank
    shadow = Signal(intbv(0, min=0, max=mt + 1))  # tilings written to the shadow bank
    desc_we = Signal(bool(0))
    desc_waddr = Signal(intbv(mt, min=0, max=2 * mt))  # initial: bank 0 active, shadow 0 (see positions)
    desc_raddr = Signal(intbv(0, min=0, max=2 * mt))
    desc_re = Signal(bool(0))
    desc_q = Signal(intbv(0)[widths.desc_w :])  # the descriptor S0 issues
    desc_s1 = Signal(intbv(0)[widths.desc_w :])  # the descriptor in S1

    s0_valid, s0_i = Signal(bool(0)), Signal(intbv(0, min=0, max=mt))
    s1_valid, s1_i = Signal(bool(0)), Signal(intbv(0, min=0, max=mt))
    key_raddr = Signal(intbv(0, min=0, max=keys * mt))
    key_waddr = Signal(intbv(0, min=0, max=keys * mt))
    key_q = Signal(intbv(0)[rb:])
    tmp_q = Signal(intbv(0)[rb:])
    tmp_waddr = Signal(intbv(0, min=0, max=mt))
    tmp_raddr = Signal(intbv(0, min=0, max=mt))

    fields = {name: Signal(intbv(0)[width:]) for name, width in widths.desc_fields()}
    f_dim0, f_dim1, f_dim2, f_dim3 = fields["dim0"], fields["dim1"], fields["dim2"], fields["dim3"]
    f_ndims, f_tiles, f_nt, f_shift, f_base = (
        fields["ndims"],
        fields["tiles"],
        fields["n_t"],
        fields["shift"],
        fields["base"],
    )
    v2, v3, v4, v5, v6, v7, v8, v9 = [Signal(bool(0)) for _ in range(8)]  # stage Sk holds a tiling
    u_sel0, u_sel1, u_sel2, u_sel3 = [Signal(intbv(0)[16:]) for _ in range(4)]
    s2_u0, s2_u1, s2_u2, s2_u3 = [Signal(intbv(0)[16:]) for _ in range(4)]
    s2_ndims, s2_tiles, s2_nt = Signal(intbv(0)[3:]), Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    s2_shift, s2_base = Signal(intbv(0)[16:]), Signal(intbv(0)[rb:])
    s2_i = Signal(intbv(0, min=0, max=mt))
    s3_p0, s3_p1, s3_p2, s3_p3 = [Signal(intbv(0)[24:]) for _ in range(4)]  # u*tiles+shift < 2**24
    t0, t1, t2, t3 = [Signal(intbv(0)[8:]) for _ in range(4)]
    s3_ndims, s3_nt, s3_base = Signal(intbv(0)[3:]), Signal(intbv(0)[8:]), Signal(intbv(0)[rb:])
    s3_i = Signal(intbv(0, min=0, max=mt))
    s4_h, s5_h, s6_h = Signal(modbv(0)[rb:]), Signal(modbv(0)[rb:]), Signal(modbv(0)[rb:])
    # Horner operands: h_next = a * b + c, with a = 0 and c = h for a dim past ndims
    h_first = Signal(intbv(0)[8:])  # dim 0's coordinate, or 0
    h4_a, h4_b, h4_c = Signal(intbv(0)[8:]), Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    h5_a, h6_a = Signal(intbv(0)[rb:]), Signal(intbv(0)[rb:])
    h5_b, h6_b = Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    h5_c, h6_c = Signal(intbv(0)[max(rb, 8) :]), Signal(intbv(0)[max(rb, 8) :])
    s4_t2, s4_t3, s5_t3 = Signal(intbv(0)[8:]), Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    s4_ndims = Signal(intbv(0)[3:])
    # the tiling has dim j, for the stage that adds it (registered a stage ahead: no compare before a multiplier)
    s3_has0, s3_has1, s4_has2, s5_has3 = [Signal(bool(0)) for _ in range(4)]
    s4_nt, s5_nt = Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    s4_base, s5_base, s6_base = Signal(intbv(0)[rb:]), Signal(intbv(0)[rb:]), Signal(intbv(0)[rb:])
    s4_i, s5_i, s6_i, s7_i = [Signal(intbv(0, min=0, max=mt)) for _ in range(4)]
    s7_row = Signal(modbv(0)[rb:])

    bank_we, bank_re = Signal(bool(0)), Signal(bool(0))
    bank_waddr, bank_raddr = Signal(intbv(0)[rb:]), Signal(intbv(0)[rb:])
    bank_wdata, bank_q = Signal(intbv(0)[widths.row_w :]), Signal(intbv(0)[widths.row_w :])

    u0_valid, u0_i = Signal(bool(0)), Signal(intbv(0, min=0, max=mt))
    u1_valid, u2_valid, u3_valid = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    u2_addr, u3_addr = Signal(intbv(0)[rb:]), Signal(intbv(0)[rb:])
    hit_prev, hit_prev2 = Signal(bool(0)), Signal(bool(0))  # U2's row is the one U3 writes / wrote last
    last_row = Signal(intbv(0)[widths.row_w :])  # the row U3 wrote on the previous edge
    src = Signal(intbv(0)[widths.row_w :])  # U3: the row being updated (registered in U2)
    src_cols = [Signal(intbv(0, min=-(1 << (vw - 1)), max=1 << (vw - 1))) for _ in range(ma)]
    new_cols = [Signal(intbv(0)[vw:]) for _ in range(ma)]
    col_flags = [Signal(bool(0)) for _ in range(ma)]
    new_row = ConcatSignal(*reversed(new_cols)) if ma > 1 else new_cols[0]
    any_flag = Signal(bool(0))
    bank_cols = [Signal(intbv(0, min=-(1 << (vw - 1)), max=1 << (vw - 1))) for _ in range(ma)]
    # S8: the row registered before the adds (a block RAM's clock-to-out, then the accumulators' carry
    # chains in one cycle was the Pynq-Z2 build's slowest path, 95.6 MHz on the ECP5)
    row8 = Signal(intbv(0)[widths.row_w :])

    # # #
    insts = []

    # -- descriptors: two banks; CONFIG writes the shadow one, commit swaps --------------------------------------
    @always_comb
    def desc_write_port():
        desc_we.next = bus.desc_we and bus.desc_worker == index and shadow < mt
        if shadow == mt:
            desc_waddr.next = 0
        elif bank:
            desc_waddr.next = shadow
        else:
            desc_waddr.next = mt + shadow

    @always_comb
    def desc_read_port():
        # the index S0 takes on the next edge: 0 with act_go, else the one after s0_i while tilings remain
        desc_re.next = bus.act_go or (s0_valid and s0_i + 1 != count)
        if bus.act_go or not s0_valid or s0_i + 1 == mt:
            desc_raddr.next = mt if bank else 0
        elif bank:
            desc_raddr.next = mt + s0_i + 1
        else:
            desc_raddr.next = s0_i + 1

    insts.append(ram_sdp_rf(desc_q, bus.desc_word, desc_waddr, desc_we, desc_raddr, desc_re, clock, 2 * mt))
    for u_sel, dim in ((u_sel0, f_dim0), (u_sel1, f_dim1), (u_sel2, f_dim2), (u_sel3, f_dim3)):
        insts.append(mux_tree(u_sel, u_mem, dim))
    for name, _width in widths.desc_fields():
        insts.append(field_unsigned(fields[name], desc_s1, widths.desc_offset(name)))

    @always_seq(clock.posedge, reset=reset)
    def configuration():
        if bus.cfg_begin:
            shadow.next = 0
            overflow.next = 0
        elif bus.desc_we and bus.desc_worker == index:
            if shadow == mt:
                overflow.next = 1
            else:
                shadow.next = shadow + 1
        if bus.cfg_commit:
            bank.next = not bank
            count.next = shadow

    # -- ACT pass --------------------------------------------------------------------------------------------------
    @always_seq(clock.posedge, reset=reset)
    def act_issue():
        if bus.act_go:
            s0_valid.next = count != 0
            s0_i.next = 0
        elif s0_valid:
            if s0_i + 1 == count:
                s0_valid.next = 0
            else:
                s0_i.next = s0_i + 1
        s1_valid.next = s0_valid
        v2.next = s1_valid
        v3.next = v2
        v4.next = v3
        v5.next = v4
        v6.next = v5
        v7.next = v6
        v8.next = v7
        v9.next = v8

    @always_comb
    def coordinates():
        t0.next = s3_p0 >> 16
        t1.next = s3_p1 >> 16
        t2.next = s3_p2 >> 16
        t3.next = s3_p3 >> 16

    @always_comb
    def first_coordinate():
        h_first.next = t0 if s3_has0 else 0

    insts += [
        _horner_operands(h4_a, h4_b, h4_c, h_first, s3_has1, s3_nt, t1),
        _horner_operands(h5_a, h5_b, h5_c, s4_h, s4_has2, s4_nt, s4_t2),
        _horner_operands(h6_a, h6_b, h6_c, s5_h, s5_has3, s5_nt, s5_t3),
    ]

    @always_comb
    def key_addresses():
        key_raddr.next = bus.key_base + s0_i
        key_waddr.next = bus.key_base + s7_i
        tmp_waddr.next = s1_i
        tmp_raddr.next = u0_i

    key_style = memory_style(spec.uram_min_bits, keys * mt, rb)  # valid per key in the FSM: no zero init needed
    insts.append(ram_sdp_rf(key_q, s7_row, key_waddr, v7, key_raddr, s0_valid, clock, keys * mt, key_style))
    insts.append(ram_sdp_rf(tmp_q, key_q, tmp_waddr, s1_valid, tmp_raddr, u0_valid, clock, mt))

    @always_seq(clock.posedge, reset=reset)
    def horner_select():
        # What the Horner stages' operands are selected by: whether the tiling has the stage's dim, decided a stage
        # ahead (a compare of ndims, then the select, then the multiplier in one cycle was the Pynq-Z2 core's
        # slowest ECP5 path, 98.5 MHz), and S3's n_t. Reset, unlike the other stage registers, so that
        # synthesis keeps them flip-flops: S1 -> S2 -> S3 is a plain register chain, which yosys (and Vivado) pack
        # into an SRL16E, and an SRL's clock-to-out (1.5 ns) before the DSP48's A -> M setup was the core's slowest
        # xc7 path (4.67 ns); a flip-flop's sync reset costs no logic
        s3_ndims.next = s2_ndims
        s3_nt.next = s2_nt
        s3_has0.next = s2_ndims >= 1
        s3_has1.next = s2_ndims > 1
        s4_has2.next = s3_ndims > 2
        s5_has3.next = s4_ndims > 3

    @always(clock.posedge)
    def act_pipeline():
        s1_i.next = s0_i
        desc_s1.next = desc_q
        # S1 -> S2: positions of the tiling's dims, descriptor fields
        s2_u0.next = u_sel0
        s2_u1.next = u_sel1
        s2_u2.next = u_sel2
        s2_u3.next = u_sel3
        s2_ndims.next = f_ndims
        s2_tiles.next = f_tiles
        s2_nt.next = f_nt
        s2_shift.next = f_shift
        s2_base.next = f_base
        s2_i.next = s1_i
        # S2 -> S3: p_j = u_j * tiles + shift (t_j = p_j >> 16)
        s3_p0.next = s2_u0 * s2_tiles + s2_shift
        s3_p1.next = s2_u1 * s2_tiles + s2_shift
        s3_p2.next = s2_u2 * s2_tiles + s2_shift
        s3_p3.next = s2_u3 * s2_tiles + s2_shift
        s3_base.next = s2_base
        s3_i.next = s2_i
        # S3 -> S4: Horner over dims 0 and 1 (row-index wide: a valid descriptor never wraps)
        s4_h.next = h4_a * h4_b + h4_c
        s4_t2.next = t2
        s4_t3.next = t3
        s4_ndims.next = s3_ndims
        s4_nt.next = s3_nt
        s4_base.next = s3_base
        s4_i.next = s3_i
        # S4 -> S5: dim 2
        s5_h.next = h5_a * h5_b + h5_c
        s5_t3.next = s4_t3
        s5_nt.next = s4_nt
        s5_base.next = s4_base
        s5_i.next = s4_i
        # S5 -> S6: dim 3
        s6_h.next = h6_a * h6_b + h6_c
        s6_base.next = s5_base
        s6_i.next = s5_i
        # S6 -> S7: row
        s7_row.next = s6_base + s6_h
        s7_i.next = s6_i
        # S7 -> S8: the policy row read in S7
        row8.next = bank_q

    for a in range(ma):
        insts.append(field_signed(bank_cols[a], row8, a * vw))
        insts.append(_acc_lane(accs[a], bank_cols[a], bus.act_go, v9, clock))

    # -- UPDATE pass -------------------------------------------------------------------------------------------------
    @always_seq(clock.posedge, reset=reset)
    def update_issue():
        if bus.upd_go:
            u0_valid.next = count != 0
            u0_i.next = 0
        elif u0_valid:
            if u0_i + 1 == count:
                u0_valid.next = 0
            else:
                u0_i.next = u0_i + 1
        u1_valid.next = u0_valid
        u2_valid.next = u1_valid
        u3_valid.next = u2_valid
        if bus.upd_go:
            upd_sat.next = 0
        elif u3_valid and any_flag:
            upd_sat.next = 1

    @always(clock.posedge)
    def update_pipeline():
        # U1 -> U2: the row address, and whether the row is one the two tilings ahead write after this read
        u2_addr.next = tmp_q
        hit_prev.next = u2_valid and u2_addr == tmp_q
        hit_prev2.next = u3_valid and u3_addr == tmp_q
        # U2 -> U3: the row as the model's sequential updates leave it
        u3_addr.next = u2_addr
        if hit_prev:
            src.next = new_row
        elif hit_prev2:
            src.next = last_row
        else:
            src.next = bank_q
        last_row.next = new_row

    for a in range(ma):
        insts.append(field_signed(src_cols[a], src, a * vw))
        insts.append(_column_update(new_cols[a], col_flags[a], src_cols[a], bus.increment, bus.a_prev, a))

    flag_bits = ConcatSignal(*col_flags) if ma > 1 else col_flags[0]

    @always_comb
    def flags_or():
        any_flag.next = flag_bits != 0

    # -- the policy bank: one write port (update, load, clear), one registered read port (act, update, dump) -----
    @always_comb
    def bank_ports():
        if u3_valid:
            bank_we.next = 1
            bank_waddr.next = u3_addr
            bank_wdata.next = new_row
        else:
            bank_we.next = bus.pol_we and (bus.pol_all or bus.pol_worker == index)
            bank_waddr.next = bus.pol_addr
            bank_wdata.next = bus.pol_wdata
        if v7:
            bank_re.next = 1
            bank_raddr.next = s7_row
        elif u1_valid:
            bank_re.next = 1
            bank_raddr.next = tmp_q
        else:
            bank_re.next = bus.pol_ren
            bank_raddr.next = bus.pol_raddr

    # UltraRAM on a part that has it (no initial contents: CLEAR or LOAD_POLICY writes every row before use)
    bank_style = memory_style(spec.uram_min_bits, tpw, widths.row_w)
    insts.append(ram_sdp_rf(bank_q, bank_wdata, bank_waddr, bank_we, bank_raddr, bank_re, clock, tpw, bank_style))

    @always_comb
    def dump_port():
        pol_rdata.next = bank_q

    insts += [
        desc_write_port,
        desc_read_port,
        configuration,
        act_issue,
        coordinates,
        first_coordinate,
        key_addresses,
        horner_select,
        act_pipeline,
        update_issue,
        update_pipeline,
        flags_or,
        bank_ports,
        dump_port,
    ]
    return insts
