"""CONFIG validation of tiling descriptors, the checks of :meth:`ParsaModel.configure`, pipelined so a descriptor
can arrive every two beats::

    C1  worker < WORKERS, ndims <= MAX_SET_DIMS, dims used < N_DIMS, 1 <= tiles <= n_t <= tiles + 1
    C2  n_t ** 2
    C3  rows = n_t ** ndims
    C4  base + rows <= TILES_PER_WORKER          -> ``bad`` (sticky until ``clear``)

``bad`` includes a descriptor :data:`LATENCY` cycles after its strobe. (The per-worker tiling count is checked by
each worker: ``overflow``.)
"""
from myhdl import always, always_seq, block, intbv, Signal

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
    c2_n2 = Signal(intbv(0)[16:])
    c1_base, c2_base, c3_base = Signal(intbv(0)[32:]), Signal(intbv(0)[32:]), Signal(intbv(0)[32:])
    c3_rows = Signal(intbv(0)[33:])

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
        c2_base.next = c1_base
        # C3: rows = n_t ** ndims
        c3_ok.next = c2_ok
        c3_base.next = c2_base
        if c2_ndims == 0:
            c3_rows.next = 1
        elif c2_ndims == 1:
            c3_rows.next = c2_nt
        elif c2_ndims == 2:
            c3_rows.next = c2_n2
        elif c2_ndims == 3:
            c3_rows.next = c2_n2 * c2_nt
        else:
            c3_rows.next = c2_n2 * c2_n2

    @always_seq(clock.posedge, reset=reset)
    def verdict():
        c1_valid.next = strobe
        c2_valid.next = c1_valid
        c3_valid.next = c2_valid
        if clear:
            bad.next = 0
        elif c3_valid and (not c3_ok or c3_base + c3_rows > spec.tiles_per_worker):
            bad.next = 1

    return checks, verdict
