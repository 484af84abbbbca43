"""The lookahead coefficients C**j settle before any element needs them, however fast the bus writes START.

``coef_powers`` (``pynq_rl/overlay/hdl/gae/pe.py``) is a chain of registered multiplies behind the registered
GAMMA_LAMBDA clamp: C**j is right 3 (j - 1) cycles after the clamp register takes a new GAMMA_LAMBDA, 21 for C**8
in a k = 8 build. Nothing holds the operation while the chain settles: the guarantee is structural. A product
C**j x delta_{t+j} (or C**k x A_{t+k}) only counts once j (or k) elements were issued ahead of it; before that its
data operand is a delay-line slot the bootstrap row cleared, and rnd(C * 0) + x = x whatever C is. Those elements
had to be loaded first (a record per LOAD_LATENCY + 1 = 4 cycles at best: the dequantizers take one record at a
time) and popped (one per cycle). Counting edges from the START edge (0) and calling d the edge at which the clamp
register takes the new value (a register written one edge earlier), the new margins are those of the old loader
(one record per beat, dequantized on the pop side: 18 - j and 21 - k) plus 3 cycles per loaded record, less the 3
dequantizer stages the pop path lost: measured 35 for C**7 of a k = 8 build (the spec caps k at 8) at T = 8 and 39
at T = 9 (the least, q8; raw records take more beats).

The bench drives :func:`gae_core` directly (no AXI-Lite in between, one input beat per cycle on one-beat q8
records) and lets the new GAMMA_LAMBDA reach the clamp ``d`` cycles *after* the START edge. The result must equal
the model with the new value up to the margin and differ one cycle later (so the probe measures the real gap: it
fails if the pipeline gets shorter or the chain longer; through the core top a write after START cannot reach the
core at all: the top holds the parameters from START on). :func:`test_bus_writes_gamma_lambda_then_start_back_to_back`
is the ordinary case through the rtl bus model (GAMMA_LAMBDA the last write before START), T = 1 .. 10, q8 and raw.
"""

import dataclasses
import itertools

import numpy as np
from myhdl import ResetSignal, Signal, Simulation, block, intbv

from pynq_rl.host.backends.gae_ip import GaeCoreIP
from pynq_rl.host.backends.rtl import CLOCK_PERIOD, RtlCoreIP, clock_source
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.hdl.gae.core import CoreConfig, gae_core
from pynq_rl.overlay.models import gae as model
from tests.gae.harness import operation, run_operation

#: The largest lookahead a GaeSpec allows, and a build whose q8 records are one 8-byte beat (3 lanes: 7 bytes).
K_MAX = 8
SPEC = S.GaeSpec(lanes=3, t_max=24, lookahead=K_MAX, stream_bytes=8)
#: (T, the latest cycle after START at which GAMMA_LAMBDA may reach the clamp register): T = 8, C**7's 18 - 7 plus
#: 3 x (T + 1) - 3 (the loader's 4-cycle records, the pop path's 3 stages fewer); T = 9, one record (4 cycles) later
MARGINS = [(K_MAX, 18 - (K_MAX - 1) + 3 * K_MAX), (K_MAX + 1, 18 - (K_MAX - 1) + 3 * K_MAX + 4)]


@block
def _bench(spec, cfg, ports, clock, reset):
    core = gae_core(*ports, cfg, clock, reset, spec)
    clock_generator = clock_source(clock, CLOCK_PERIOD)
    return core, clock_generator


class _CoreBench:
    """The bare core, elaborated once (elaboration is most of the cost), stepped one clock cycle at a time; MyHDL
    allows one live Simulation per process, so :meth:`close` it (the bench is a context manager)."""

    def __init__(self, spec: S.GaeSpec) -> None:
        width = 8 * spec.stream_bytes
        self.spec = spec
        self.clock = Signal(bool(0))
        self.reset = ResetSignal(0, active=0, isasync=False)
        self.cfg = CoreConfig(spec)
        self.m_tdata, self.s_tdata = Signal(intbv(0)[width:]), Signal(intbv(0)[width:])
        self.m_tvalid, self.m_tlast, self.s_tready = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.s_tvalid, self.s_tlast, self.m_tready = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        ports = (
            self.m_tdata,
            self.m_tvalid,
            self.m_tlast,
            self.s_tready,
            self.s_tdata,
            self.s_tvalid,
            self.s_tlast,
            self.m_tready,
        )
        self.sim = Simulation(_bench(spec, self.cfg, ports, self.clock, self.reset))
        for _ in range(3):
            self.tick()
        self.reset.next = 1
        self.m_tready.next = True

    def __enter__(self) -> "_CoreBench":
        return self

    def __exit__(self, *exc) -> None:
        self.sim.quit()

    def tick(self) -> None:
        self.sim.run(CLOCK_PERIOD, quiet=1)

    def late_coefficient_run(self, n_steps: int, mode: S.GaeMode, change_after: int, seed: int) -> tuple[bytes, bytes]:
        """One operation with a new GAMMA_LAMBDA reaching the clamp register ``change_after`` cycles after the START
        edge (the old value settled before, no dones); returns (output stream, the model's with the new value)."""
        spec, cfg = self.spec, self.cfg
        rng = np.random.default_rng(seed)
        n_lanes = spec.lanes
        if mode == S.GaeMode.Q8:
            rewards = rng.integers(-128, 128, (n_steps, n_lanes))
            values = rng.integers(-128, 128, (n_steps + 1, n_lanes))
            scales = dict(r_scale=1 << 14, r_offset=-(1 << 12), v_scale=1 << 13, v_offset=1 << 11)
        else:
            rewards = rng.integers(-(1 << 20), 1 << 20, (n_steps, n_lanes))
            values = rng.integers(-(1 << 20), 1 << 20, (n_steps + 1, n_lanes))
            scales = dict(r_scale=0, r_offset=0, v_scale=0, v_offset=0)
        dones = np.zeros((n_steps, n_lanes), np.int64)  # every chain alive: stale powers would show
        one = 1 << spec.coef.frac
        gamma, old_gl, new_gl = int(0.97 * one), 0, int(0.9 * one)
        stream = model.pack_input(spec, mode, rewards, values, dones).view(np.uint8).ravel()
        expected = model.gae_fixed(spec, rewards, values, dones, gamma, new_gl, mode, **scales)
        expected_bytes = model.pack_output(spec, expected.advantages, expected.returns).tobytes()

        cfg.t_count.next, cfg.lanes_used.next, cfg.batches.next, cfg.chunks.next = n_steps, n_lanes, 1, 1
        cfg.gamma.next, cfg.gamma_lambda.next, cfg.mode.next = gamma, old_gl, int(mode)
        cfg.r_scale.next, cfg.r_offset.next = scales["r_scale"], scales["r_offset"]
        cfg.v_scale.next, cfg.v_offset.next = scales["v_scale"], scales["v_offset"]
        for cycle in range(-40, 0):  # the old powers settle
            if cycle == change_after:
                cfg.gamma_lambda.next = new_gl
            self.tick()
        beats = [
            int.from_bytes(bytes(stream[i : i + spec.stream_bytes]), "little")
            for i in range(0, len(stream), spec.stream_bytes)
        ]
        out = bytearray()
        sent = 0
        cfg.start.next = True  # sampled at the next edge: the START edge (0)
        self.s_tdata.next, self.s_tvalid.next, self.s_tlast.next = beats[0], True, len(beats) == 1
        for cycle in range(1000):
            if cycle == change_after:  # sampled by the clamp register at edge `cycle`
                cfg.gamma_lambda.next = new_gl
            moved = bool(self.s_tready) and bool(self.s_tvalid)
            if self.m_tvalid:
                out += int(self.m_tdata).to_bytes(spec.stream_bytes, "little")
            self.tick()
            cfg.start.next = False
            if moved:
                sent += 1
                if sent < len(beats):
                    self.s_tdata.next, self.s_tlast.next = beats[sent], sent == len(beats) - 1
                else:
                    self.s_tvalid.next, self.s_tlast.next = False, False
            if cfg.done and cycle > change_after:
                break
        assert cfg.done and not (cfg.err_config or cfg.err_stream), "the bench's operation did not finish cleanly"
        return bytes(out), expected_bytes


def test_coefficients_settle_with_the_documented_margin():
    """GAMMA_LAMBDA reaching the clamp ``margin`` cycles after the START edge (q8 and raw): still the new value's
    result, bit for bit; one cycle later (q8: one-beat records load fastest): not."""
    with _CoreBench(SPEC) as bench:
        for n_steps, margin in MARGINS:
            for mode in (S.GaeMode.Q8, S.GaeMode.RAW):
                got, expected = bench.late_coefficient_run(n_steps, mode, margin, seed=n_steps)
                assert got == expected, (
                    f"T = {n_steps}, {mode.name}: powers not settled with GAMMA_LAMBDA {margin} cycles after START"
                )
            got, expected = bench.late_coefficient_run(n_steps, S.GaeMode.Q8, margin + 1, seed=n_steps)
            assert got != expected, (
                f"T = {n_steps}: powers settled even with GAMMA_LAMBDA {margin + 1} cycles "
                f"after START: the margin grew, update MARGINS and the docstring"
            )


def test_bus_writes_gamma_lambda_then_start_back_to_back(rtl_simulation):
    """Through the rtl bus model: GAMMA_LAMBDA is the last register written before CTRL.START (a new value each
    operation, from 0 to 1), T = 1 .. 10, no dones; every operation equals the model."""
    board = dataclasses.replace(S.board(None), cores=(S.CoreSlot("gae", SPEC, 0x0_0000, 0x1_0000),))
    ip = RtlCoreIP(rtl_simulation(board), "gae", SPEC, S.GAE_REGISTERS)
    for mode, n_steps in itertools.product(list(S.GaeMode), range(1, 11)):
        lam = (n_steps % 2) * 0.95  # alternate lambda 0 (powers 0) and 0.95
        regs, stream = operation(SPEC, mode, np.random.default_rng(n_steps), n_steps, 3, 0.99, lam, 1.0)
        gamma_lambda = regs.pop("GAMMA_LAMBDA")
        ctrl = regs.pop("CTRL")
        regs |= {"CTRL": ctrl, "GAMMA_LAMBDA": gamma_lambda}  # the last write before CTRL.START
        got = run_operation(ip, regs, stream)
        expected = run_operation(GaeCoreIP(SPEC), regs, stream)
        assert got == expected, f"{mode.name}, T = {n_steps}: the rtl core differs from the model"
