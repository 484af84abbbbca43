"""CONFIG validation of tiling descriptors, the checks of :meth:`ParsaModel.configure`, pipelined so a descriptor
can arrive every two beats::

    C1  worker < WORKERS, ndims <= MAX_SET_DIMS, dims used < N_DIMS, 1 <= tiles <= n_t <= tiles + 1
    C2  n_t ** 2; room = TILES_PER_WORKER - base (or base > TILES_PER_WORKER)
    C3  n_t ** 3 = n_t ** 2 * n_t, n_t ** 4 = n_t ** 2 * n_t ** 2 (formed for ndims >= 3 only, zero otherwise)
    C4  rows = n_t ** ndims (a select), past or rows > room  -> ``bad`` (sticky until ``clear``)

Every product is registered as it leaves its multiplier, with nothing behind it in the same cycle (a DSP48's P
register: the C2 -> C3 chain of two multiplies and a select was the ParSa core's slowest xc7 path). C3
multiplies a gated copy of the square, not its bare register: a DSP48 fed from a bare register takes that register
as its own input register (yosys ``xilinx_dsp``), which left the square's multiplier with neither M nor P.

``bad`` includes a descriptor :data:`LATENCY` cycles after its strobe. (The per-worker tiling count is checked by
each worker: ``overflow``.)
"""

from myhdl import Signal, always, always_comb, always_seq, block, intbv

from .params import ParsaWidths

__all__ = ["parsa_config_check", "LATENCY"]

#: cycles from a descriptor strobe to ``bad`` including it
LATENCY = 4


@block
def parsa_config_check(bad, strobe, word0, word1, n_dims, clear, clock, reset, widths: ParsaWidths):
    """Descriptor checker.

    bad    : Signal(bool), out -- some descriptor since ``clear`` is invalid
    strobe : Signal(bool), in -- ``word0``/``word1`` hold a descriptor this cycle
    word0  : Signal(intbv[64]), in -- descriptor word 0 (worker, ndims, tiles, n_t, base)
    word1  : Signal(intbv[64]), in -- descriptor word 1 (dims, shift)
    n_dims : Signal(intbv), in -- N_DIMS of this CONFIG
    clear  : Signal(bool), in
    """
    spec = widths.spec
    c1_valid, c2_valid, c3_valid = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    c1_ok, c2_ok, c3_ok = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
    c1_ndims, c2_ndims = Signal(intbv(0)[3:]), Signal(intbv(0)[3:])
    c1_nt, c2_nt = Signal(intbv(0)[8:]), Signal(intbv(0)[8:])
    c2_n2, c3_n2 = Signal(intbv(0)[16:]), Signal(intbv(0)[16:])
    c3_nt, c3_ndims = Signal(intbv(0)[8:]), Signal(intbv(0)[3:])
    c3_n3, c3_n4 = Signal(intbv(0)[24:]), Signal(intbv(0)[32:])
    c1_base = Signal(intbv(0)[32:])
    # TILES_PER_WORKER - base, and base past the bank already (all unsigned: a signed compare against an
    # unsigned operand would become unsigned in Verilog, docs/design.md, MyHDL lessons)
    c2_room = Signal(intbv(0, min=0, max=spec.tiles_per_worker + 1))
    c3_room = Signal(intbv(0, min=0, max=spec.tiles_per_worker + 1))
    c2_past, c3_past = Signal(bool(0)), Signal(bool(0))
    rows = Signal(intbv(0)[33:])

    # # #

    @always(clock.posedge)
    def checks():
        # C1: field ranges
        nd = word0[16:8]
        tiles = word0[24:16]
        nt = word0[32:24]
        ok = True
        if word0[8:0] >= spec.workers or nd > spec.max_set_dims:
            ok = False
        if tiles == 0 or nt < tiles or nt > tiles + 1:
            ok = False
        if nd >= 1 and word1[8:0] >= n_dims:
            ok = False
        if nd >= 2 and word1[16:8] >= n_dims:
            ok = False
        if nd >= 3 and word1[24:16] >= n_dims:
            ok = False
        if nd >= 4 and word1[32:24] >= n_dims:
            ok = False
        c1_ok.next = ok
        c1_ndims.next = nd[3:]
        c1_nt.next = nt
        c1_base.next = word0[64:32]
        # C2: n_t squared
        c2_ok.next = c1_ok
        c2_ndims.next = c1_ndims
        c2_nt.next = c1_nt
        c2_n2.next = c1_nt * c1_nt
        if c1_base > spec.tiles_per_worker:
            c2_past.next = 1
            c2_room.next = 0
        else:
            c2_past.next = 0
            c2_room.next = spec.tiles_per_worker - c1_base
        # C3: the third and fourth powers
        c3_ok.next = c2_ok
        c3_room.next = c2_room
        c3_past.next = c2_past
        c3_ndims.next = c2_ndims
        c3_nt.next = c2_nt
        c3_n2.next = c2_n2
        high_n2 = intbv(0)[16:]  # the square where C4 may select a higher power (operand isolation)
        if c2_ndims >= 3:
            high_n2[:] = c2_n2
        c3_n3.next = high_n2 * c2_nt
        c3_n4.next = high_n2 * high_n2

    @always_comb
    def select_rows():
        # C4: rows = n_t ** ndims
        if c3_ndims == 0:
            rows.next = 1
        elif c3_ndims == 1:
            rows.next = c3_nt
        elif c3_ndims == 2:
            rows.next = c3_n2
        elif c3_ndims == 3:
            rows.next = c3_n3
        else:
            rows.next = c3_n4

    @always_seq(clock.posedge, reset=reset)
    def verdict():
        c1_valid.next = strobe
        c2_valid.next = c1_valid
        c3_valid.next = c2_valid
        if clear:
            bad.next = 0
        elif c3_valid and (not c3_ok or c3_past or rows > c3_room):
            bad.next = 1

    return checks, select_rows, verdict
