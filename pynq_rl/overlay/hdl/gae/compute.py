"""The GAE core's compute sequencer: a loaded chunk's rows popped backward into the PEs, the PEs' results written
back in place, and CYCLES; plus the coefficient registers the PEs read.

Once a chunk is loaded and the previous one written back, its rows are popped one per cycle (t = L, L - 1, ..., 0),
dequantized and fed to the PEs; each PE's A_t and R_t are written back in place. The drain has the read port first
(the compute issues a bubble, which the PEs pass: a *yield*), write-backs have the write port first (the loader holds
its row). A continuation chunk's top slot (where the bootstrap row would be) is popped as a bubble, so the PEs keep
V_{t+1} and their delta and A histories: the recursion goes on across the chunk boundary. ``cycles`` counts the
compute's cycles but not its yields: ``T + spec.pipeline_depth`` per chunk (:attr:`GaeSpec.pipeline_depth`; a test
holds them equal).
"""

from myhdl import Signal, always, always_comb, always_seq, block, intbv, modbv

from ...spec import GaeSpec
from .params import GaeWidths
from .pe import coef_powers

__all__ = ["gae_compute", "pe_coefficients"]


@block
def gae_compute(comp, chunk, phase, drain_holds, out_valid, cfg, clock, reset, wd: GaeWidths):
    """Pops, PE inputs and write-backs of one chunk at a time.

    comp        : ComputeState, out  -- the chunk being computed, its pops and write-backs
    chunk       : LoadedChunk, in    -- the loaded chunk, taken over with ``go``
    phase       : Phase, in
    drain_holds : Signal(bool), in   -- the drain holds the read port (a pop due now yields)
    out_valid   : Signal(bool), in   -- the PEs' results are valid (all lanes are in step: lane 0's flag)
    cfg         : CoreConfig         -- SOFT_RESET in; ``cycles`` (CYCLES) out
    clock       : Signal(bool), in
    reset       : ResetSignal, in
    wd          : GaeWidths
    """
    depth = wd.depth
    comp_len = wd.row_signal()
    comp_cont = Signal(bool(0))
    issue_row = Signal(intbv(0, min=-1, max=depth + 1))  # time index of the next pop (its stack row: comp.pop_addr)
    issuing = Signal(bool(0))
    issue_wait = Signal(intbv(0, min=0, max=4))  # cycles until row T is in its BRAM (read-first: no bypass)
    issue_valid, issue_boot = Signal(bool(0)), Signal(bool(0))  # a pop issued (BRAM reads on the next edge)
    wb_row = Signal(intbv(0, min=-1, max=depth + 1))  # time index of the next write-back (its row: comp.wb_addr)
    yielding = Signal(bool(0))  # a pop is due but the drain holds the read port
    cycles = Signal(modbv(0)[len(cfg.cycles) :])

    @always_comb
    def decide():
        yielding.next = issuing and issue_wait == 0 and drain_holds
        comp.pop.next = comp.busy and issuing and issue_wait == 0 and not drain_holds
        comp.write_back.next = comp.busy and out_valid

    @always_seq(clock.posedge, reset=reset)
    def sequence():
        issue_valid.next = False
        issue_boot.next = False
        comp.rd_valid.next = issue_valid
        comp.rd_boot.next = issue_boot
        if cfg.soft_reset:
            comp.busy.next = False
        elif phase.running:
            if chunk.go:  # a full chunk starts once the previous one is written back; the loader moves on
                comp.busy.next = True
                comp_len.next = chunk.length
                comp.up.next = chunk.up
                comp_cont.next = chunk.cont
                comp.last_batch.next = chunk.last_batch
                issue_row.next = chunk.length
                issuing.next = True
                issue_wait.next = 2
                wb_row.next = chunk.length - 1
                if chunk.up:  # pops from row L down, write-backs from L - 1; or from rows 0 and 1 up
                    comp.pop_addr.next = chunk.length
                    comp.wb_addr.next = chunk.length - 1
                else:
                    comp.pop_addr.next = 0
                    comp.wb_addr.next = 1
                comp.written.next = 0
            elif comp.busy:
                if not yielding:
                    cycles.next = cycles + 1
                if issue_wait != 0:
                    issue_wait.next = issue_wait - 1
                elif comp.pop:
                    if comp.up:
                        comp.pop_addr.next = comp.pop_addr - 1
                    else:
                        comp.pop_addr.next = comp.pop_addr + 1
                    # a continuation chunk's top slot is a bubble: no bootstrap row, the PEs' state carries over
                    issue_valid.next = not (comp_cont and issue_row == comp_len)
                    issue_boot.next = issue_row == comp_len and not comp_cont
                    if issue_row == 0:
                        issuing.next = False
                    issue_row.next = issue_row - 1
                if comp.write_back:
                    if comp.up:
                        comp.wb_addr.next = comp.wb_addr - 1
                    else:
                        comp.wb_addr.next = comp.wb_addr + 1
                    wb_row.next = wb_row - 1
                    comp.written.next = comp.written + 1
                    if wb_row == 0:
                        comp.busy.next = False
                        cfg.cycles.next = cycles + 1
        if phase.starting:  # any START while idle, refused or not
            cfg.cycles.next = 0
            cycles.next = 0

    return decide, sequence


@block
def pe_coefficients(gamma_c, powers, cfg, clock, spec: GaeSpec):
    """GAMMA and GAMMA_LAMBDA for the PEs, clamped to 1.0 and registered, and the lookahead powers C**j.

    gamma_c : Signal(COEF), out -- GAMMA
    powers  : list of k + 1 Signal(COEF), out -- C**j (:func:`~.pe.coef_powers`; ``powers[0]`` unused)
    cfg     : CoreConfig, in -- ``gamma``, ``gamma_lambda``
    clock   : Signal(bool), in
    spec    : GaeSpec
    """
    one = 1 << spec.coef.frac
    gamma_lambda_c = Signal(intbv(0, min=0, max=one + 1))
    chain = coef_powers(powers, gamma_lambda_c, clock, spec)
    chain.name = "powers"

    @always(clock.posedge)
    def coefficients():
        # START refuses coefficients above 1.0, so the clamp only keeps the PE inputs in range while idle.
        # Registered: the 32-bit compare and select would otherwise sit in front of the PE's gamma multiply (the
        # core's critical path after the dequantizer's, ECP5). The registers are static during an operation and
        # are first read after LOAD, the pop, the BRAM read and the dequantizer, so the one cycle changes no result;
        # the lookahead powers behind gamma_lambda_c settle with 35 or more cycles to spare (coef_powers).
        if cfg.gamma <= one:
            gamma_c.next = cfg.gamma[len(gamma_c) :]
        else:
            gamma_c.next = one
        if cfg.gamma_lambda <= one:
            gamma_lambda_c.next = cfg.gamma_lambda[len(gamma_c) :]
        else:
            gamma_lambda_c.next = one

    return chain, coefficients
