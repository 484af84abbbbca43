"""Rung 3: the MyHDL replay core against the bit-exact model (``SumTree``), operation by operation.

Randomized sequences of operations (set batches with repeated leaves back to back, out-of-range indices and
oversized codes; SAMPLE and SAMPLE_UNIFORM batches, some refused, some with a misplaced TLAST; DUMP; CLEAR; SEED
writes) run on a small build through the top's AXI-Lite port (the rtl backend's bus model) and its two
AXI-Stream ports (a DMA that offers one beat per cycle and a sink that is always ready, or one that stalls).
After every operation the output bytes, the TLAST position, STATUS, CYCLES, TOTAL/TOTAL_HI, NONZERO and SEED must
equal the model's; CYCLES must equal ``records + spec.set_depth`` / ``COUNT + spec.sample_depth``.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.host.backends.rtl import RtlCoreIP, RtlSimulation
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.hdl.replay.core import sample_depth, set_depth
from pynq_rl.overlay.models import replay as model
from tests.replay.harness import Op, Outcome, expect, sample_op, set_op

R = S.REPLAY_REGISTERS
MODE_SHIFT = R["CTRL"]["fields"]["MODE"]["bit_offset"]
SPECS = {
    "k4": S.ReplaySpec(k=4, levels=3, leaf=S.QFormat(8, 4, signed=False), max_count=48),
    "k2": S.ReplaySpec(k=2, levels=3, leaf=S.QFormat(8, 4, signed=False), max_count=48),
}


# -- the bench: the rtl backend's simulation, AXI-Lite bus model, streams moved on every clock -------------------


class StreamBench:
    """The replay top in an :class:`RtlSimulation`, with a DMA-like source and sink that act on every clock edge.

    Every clock of the simulation (register accesses included) offers the next input beat while there is one and
    takes an output beat whenever ``m_axis`` is valid and the sink is ready (``ready`` pattern, cycled).
    """

    def __init__(self, spec: S.ReplaySpec, ready=(1,)) -> None:
        board = dataclasses.replace(S.board(None), cores=(S.CoreSlot("replay", spec, 0x0_0000, 0x1_0000),))
        self.spec = spec
        self.sim = RtlSimulation(board)
        self.ip = RtlCoreIP(self.sim, "replay", spec, R)
        _, self.s_axis, self.m_axis = self.sim.ports["replay"]
        self.ready = itertools.cycle(ready)
        self.beats: list[bytes] = []
        self.lasts: list[bool] = []
        self.pending: list[tuple[int, bool]] = []
        self._tick = self.sim.tick
        self.sim.tick = self.tick  # the AXI-Lite master's clocks move the streams too
        self._present()
        self._sample()

    def _present(self) -> None:
        s = self.s_axis
        if self.pending:
            s.tdata.next, s.tlast.next = self.pending[0]
            s.tvalid.next = True
        else:
            s.tvalid.next = s.tlast.next = False
        self.m_axis.tready.next = bool(next(self.ready))

    def tick(self, cycles: int = 1) -> None:
        for _ in range(cycles):
            self._tick(1)  # edge: signals set before it are sampled here
            # the handshakes of the edge just taken were decided by the values before it (see _sample)
            if self._taken_in:
                self.pending.pop(0)
            if self._taken_out is not None:
                self.beats.append(self._taken_out[0])
                self.lasts.append(self._taken_out[1])
            self._present()
            self._sample()

    def _sample(self) -> None:
        """Record which beats the next edge moves (after the inputs just set have propagated)."""
        self.sim.settle()
        s, m = self.s_axis, self.m_axis
        self._taken_in = bool(s.tvalid and s.tready)
        self._taken_out = (int(m.tdata).to_bytes(8, "little"), bool(m.tlast)) if m.tvalid and m.tready else None

    def read(self, name: str) -> int:
        return self.ip.read(R[name]["address_offset"])

    def write(self, name: str, value: int) -> None:
        self.ip.write(R[name]["address_offset"], value & 0xFFFF_FFFF)

    def run(self, op: Op, max_polls: int = 400) -> tuple[bytes, list[bool], int, int, bool]:
        """Registers, START (the input beats queued), poll STATUS until DONE; output, TLASTs, STATUS, CYCLES,
        and whether the whole input stream was taken."""
        for name, value in op.regs.items():
            self.write(name, value)
        self.beats, self.lasts = [], []
        records = np.frombuffer(op.stream, dtype="<u8")
        self.write("CTRL", op.mode << MODE_SHIFT | S.Ctrl.START)
        self.pending = [(int(r), i == len(records) - 1) for i, r in enumerate(records)]
        self._present()
        self._sample()
        status = 0
        for _ in range(max_polls):
            status = self.read("STATUS")
            if status & S.Status.DONE and not self.pending:
                break
            if status & S.Status.DONE and not status & S.Status.BUSY and not self.s_axis.tready:
                break  # refused: the input is never taken
        consumed = not self.pending
        self.pending = []
        self._present()
        self._sample()
        return b"".join(self.beats), self.lasts, status, self.read("CYCLES"), consumed

    def close(self) -> None:
        self.sim.end("bench closed")


def check_sequence(spec: S.ReplaySpec, ops: list[Op], ready=(1,), exact_cycles: bool = True) -> list[Outcome]:
    """Run ``ops`` on a fresh core and on a fresh model; assert every observable equals the model's."""
    tree = model.SumTree(spec)
    bench = StreamBench(spec, ready)
    outcomes = []
    try:
        assert bench.read("SEED") == tree.prng_state
        for i, op in enumerate(ops):
            want = expect(tree, op)
            outcomes.append(want)
            out, lasts, status, cycles, consumed = bench.run(op)
            where = f"op {i} ({op.name}, {S.ReplayMode(op.mode).name if op.mode < 5 else op.mode})"
            assert status == want.status, f"{where}: STATUS {S.Status(status)!r} != model {S.Status(want.status)!r}"
            assert out == want.output, f"{where}: output differs ({len(out)} vs {len(want.output)} bytes)"
            n_beats = len(want.output) // 8
            assert lasts == [j == n_beats - 1 for j in range(n_beats)], f"{where}: TLAST misplaced"
            if op.stream and not status & S.Status.ERR_CONFIG or op.mode == S.ReplayMode.SET:
                assert consumed, f"{where}: the input stream was not taken to its TLAST"
            if want.cycles is not None:
                if exact_cycles:
                    assert cycles == want.cycles, f"{where}: CYCLES {cycles} != {want.cycles}"
                else:
                    assert cycles >= want.cycles, f"{where}: CYCLES {cycles} < {want.cycles}"
            total = bench.read("TOTAL") | bench.read("TOTAL_HI") << 32
            assert total == want.total, f"{where}: TOTAL {total} != model {want.total}"
            assert bench.read("NONZERO") == want.nonzero, f"{where}: NONZERO differs"
            assert bench.read("SEED") == want.seed, f"{where}: SEED (PRNG state) differs"
    finally:
        bench.close()
    return outcomes


# -- random operation sequences -----------------------------------------------------------------------------------


@st.composite
def operations(draw, spec: S.ReplaySpec, n_ops: int = 5) -> list[Op]:
    """A SET first (so sampling has something), then a random mix; sizes kept small (MyHDL runs ~4k cycles/s)."""
    cap, top = spec.capacity, spec.leaf.max_code

    def draw_set(name):
        n = draw(st.integers(1, 10), label="records")
        idx = draw(
            st.lists(
                st.one_of(st.integers(0, cap - 1), st.integers(0, 3), st.just(cap), st.just(2**32 - 1)),
                min_size=n,
                max_size=n,
            ),
            label="indices",
        )
        codes = draw(
            st.lists(st.one_of(st.integers(0, top), st.just(0), st.integers(top, 2**32 - 1)), min_size=n, max_size=n),
            label="codes",
        )
        return set_op(idx, codes, name)

    ops = [draw_set("first set")]
    for _ in range(n_ops - 1):
        kind = draw(st.sampled_from(["set", "sample", "uniform", "dump", "clear", "seed", "bad"]), label="kind")
        if kind == "set":
            ops.append(draw_set("set"))
        elif kind in ("sample", "uniform", "seed"):
            count = draw(st.integers(1, 12), label="count")
            u = (
                None
                if kind != "uniform"
                else draw(st.lists(st.integers(0, 2**32 - 1), min_size=count, max_size=count), label="uniforms")
            )
            op = sample_op(count, uniforms=u, name=kind)
            if kind == "seed":
                op.regs["SEED"] = draw(st.one_of(st.just(0), st.integers(0, 2**32 - 1)), label="seed")
            ops.append(op)
        elif kind == "dump":
            ops.append(Op(int(S.ReplayMode.DUMP), name="dump"))
        elif kind == "clear":
            ops.append(Op(int(S.ReplayMode.CLEAR), name="clear"))
        else:
            ops.append(
                draw(
                    st.sampled_from(
                        [
                            sample_op(0, stride=1, name="count 0"),
                            sample_op(spec.max_count + 1, name="count > max"),
                            sample_op(3, stride=S.ReplaySpec.stride(3) + 1, name="stride"),
                            Op(7, name="bad mode"),
                        ]
                    ),
                    label="refused",
                )
            )
    return ops


@pytest.mark.parametrize("which", sorted(SPECS))
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_rtl_equals_model_on_random_operation_sequences(which, data):
    spec = SPECS[which]
    check_sequence(spec, data.draw(operations(spec), label="operations"))


def test_depths_of_the_spec_are_the_hdl_pipelines():
    for spec in (*SPECS.values(), S.ReplaySpec(), S.ReplaySpec(k=16, levels=5)):
        assert spec.set_depth == set_depth(spec)
        assert spec.sample_depth == sample_depth(spec)


# -- directed cases -----------------------------------------------------------------------------------------------


def test_back_to_back_updates_of_one_leaf_and_its_ancestors_forward_correctly():
    """Same leaf 4x in a row, then siblings and cousins back to back (shared ancestors at every level), then a
    leaf set to 0 and back: every stage's forwarding path and the nonzero count."""
    spec = SPECS["k4"]
    idx = [5, 5, 5, 5, 4, 6, 7, 1, 21, 37, 53, 5, 5, 0, 0, 63, 62, 5]
    codes = [10, 200, 0, 99, 1, 2, 3, 4, 250, 17, 255, 0, 7, 0, 9, 255, 255, 0]
    outcomes = check_sequence(
        spec,
        [
            set_op(idx, codes),
            Op(int(S.ReplayMode.DUMP), name="dump"),
            sample_op(16),
            set_op([5, 5, 5], [3, 0, 3]),
            sample_op(16),
        ],
    )
    assert outcomes[0].nonzero == 10  # leaf 5 ends at 0; 4, 6, 7, 1, 21, 37, 53, 0, 63, 62 are set


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_colliding_updates_one_two_and_three_records_apart(data):
    """Randomized back-to-back SET records on a few leaves that share words at every level (same leaf, siblings,
    cousins under one grandparent, one far leaf): a record's read misses the writes of the two records before it,
    so every distance the forwarding covers (one back, two back, both, and three back from memory) occurs."""
    spec = SPECS["k4"]
    leaves = [5, 4, 7, 1, 21, 53, 0, spec.capacity - 1]
    n = data.draw(st.integers(2, 24), label="records")
    idx = data.draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n), label="indices")
    codes = data.draw(
        st.lists(st.one_of(st.just(0), st.integers(0, spec.leaf.max_code)), min_size=n, max_size=n), label="codes"
    )
    check_sequence(spec, [set_op(idx, codes), Op(int(S.ReplayMode.DUMP), name="dump"), sample_op(8)])


def test_saturation_rejection_and_empty_tree_refusal():
    spec = SPECS["k4"]
    outcomes = check_sequence(
        spec,
        [
            sample_op(4, name="empty tree"),  # refused: TOTAL = 0
            set_op([3, 64, 2**32 - 1, 9], [1000, 5, 5, 2**32 - 1], "saturate + reject"),
            sample_op(4),
            Op(int(S.ReplayMode.CLEAR), name="clear"),
            sample_op(1, name="cleared tree"),
        ],
    )
    assert outcomes[0].status == S.Status.DONE | S.Status.ERR_CONFIG
    assert outcomes[1].status == S.Status.DONE | S.Status.SATURATED | S.Status.ERR_CONFIG
    assert outcomes[1].total == 2 * spec.leaf.max_code
    assert outcomes[4].status == S.Status.DONE | S.Status.ERR_CONFIG


def test_sample_uniform_with_misplaced_tlast():
    """Fewer records than COUNT: their results, TLAST on the last, ERR_STREAM. More: COUNT results, the rest
    drained to TLAST, ERR_STREAM. The next operation is normal."""
    spec = SPECS["k4"]
    ops = [
        set_op(np.arange(64), np.arange(64) % 17),
        sample_op(6, uniforms=[1, 2**31, 5, 2**32 - 1]),
        sample_op(6, stride=S.ReplaySpec.stride(6), uniforms=list(range(0, 9 * 10**8, 10**8))),
        sample_op(6, uniforms=[7, 8, 9, 10, 11, 12]),
        sample_op(2, uniforms=[0, 2**32 - 1]),
    ]
    ops[1].regs["COUNT"] = ops[2].regs["COUNT"] = 6
    outcomes = check_sequence(spec, ops)
    assert outcomes[1].status == outcomes[2].status == S.Status.DONE | S.Status.ERR_STREAM
    assert len(outcomes[1].output) == 4 * 8 and len(outcomes[2].output) == 6 * 8
    assert outcomes[3].status == S.Status.DONE


def test_stalled_output_loses_nothing():
    """The sink takes one beat in three: the sampler and the dump freeze in place (CYCLES grows, bytes equal)."""
    spec = SPECS["k4"]
    rng = np.random.default_rng(3)
    check_sequence(
        spec,
        [
            set_op(rng.integers(0, 64, 40), rng.integers(0, 256, 40)),
            sample_op(20),
            sample_op(9, uniforms=rng.integers(0, 2**32, 9)),
            Op(int(S.ReplayMode.DUMP), name="dump"),
        ],
        ready=(1, 0, 0),
        exact_cycles=False,
    )


def test_large_total_above_32_bits_uses_the_high_word():
    """A build whose root is wider than 32 bits: TOTAL_HI, and the target arithmetic across the split."""
    spec = S.ReplaySpec(k=4, levels=2, leaf=S.QFormat(30, 0, signed=False), max_count=16)  # root: 34 bits
    top = spec.leaf.max_code
    check_sequence(
        spec,
        [
            set_op(np.arange(16), [top] * 15 + [1]),
            sample_op(16),
            Op(int(S.ReplayMode.DUMP)),
            sample_op(5, uniforms=[0, 1, 2**32 - 1, 2**31, 12345]),
        ],
    )


def test_soft_reset_aborts_and_keeps_the_tree():
    spec = SPECS["k4"]
    tree = model.SumTree(spec)
    bench = StreamBench(spec, ready=(0,))  # the sink never takes: the sample batch hangs
    try:
        expect(tree, set_op([1, 2, 3], [10, 20, 30]))
        bench.run(set_op([1, 2, 3], [10, 20, 30]))
        bench.write("COUNT", 8)
        bench.write("STRIDE", S.ReplaySpec.stride(8))
        bench.write("CTRL", int(S.ReplayMode.SAMPLE) << MODE_SHIFT | S.Ctrl.START)
        bench.tick(60)
        assert bench.read("STATUS") == S.Status.BUSY
        bench.write("CTRL", S.Ctrl.SOFT_RESET)
        assert bench.read("STATUS") == 0
        bench.ready = itertools.cycle((1,))
        bench.tick(5)
        assert bench.beats == []  # the flushed batch never appears
        assert bench.read("TOTAL") == tree.total == 60
        out, _, status, _, _ = bench.run(Op(int(S.ReplayMode.DUMP)))
        assert status == S.Status.DONE and out == tree.dump().tobytes()
    finally:
        bench.close()


def test_one_simulation_holds_gae_and_replay_cores(rtl_simulation):
    """A board with both cores: one MyHDL simulation, each core behind its own ports, both answer correctly."""
    from pynq_rl.host.backends.gae_ip import GaeCoreIP
    from tests.gae.harness import operation, run_operation

    gae_spec, spec = S.GaeSpec(lanes=2, t_max=8), SPECS["k2"]
    board = dataclasses.replace(
        S.board(None),
        cores=(S.CoreSlot("gae", gae_spec, 0x0_0000, 0x1_0000), S.CoreSlot("replay", spec, 0x2_0000, 0x3_0000)),
    )
    sim = rtl_simulation(board)
    gae = RtlCoreIP(sim, "gae", gae_spec, S.GAE_REGISTERS)
    replay = RtlCoreIP(sim, "replay", spec, R)
    assert replay.read(R["ID"]["address_offset"]) >> 16 == S.REPLAY_MAGIC
    assert gae.read(S.GAE_REGISTERS["ID"]["address_offset"]) >> 16 == S.GAE_MAGIC
    for name, value in spec.parameter_registers().items():
        assert replay.read(R[name]["address_offset"]) == value, name
    regs, stream = operation(gae_spec, S.GaeMode.RAW, np.random.default_rng(5), 5, 2, 0.9, 0.8, 1.0)
    assert run_operation(gae, regs, stream) == run_operation(GaeCoreIP(gae_spec), regs, stream)
    tree = model.SumTree(spec)
    tree.set([1, 6], [40, 2])
    replay.write(R["CTRL"]["address_offset"], int(S.ReplayMode.SET) << MODE_SHIFT | S.Ctrl.START)
    assert replay.stream_in(np.frombuffer(set_op([1, 6], [40, 2]).stream, np.uint8), last=True) == 16
    replay.master.sim.tick(spec.set_depth + 2)
    assert replay.read(R["TOTAL"]["address_offset"]) == tree.total == 42
    assert replay.read(R["STATUS"]["address_offset"]) == S.Status.DONE


def test_soft_reset_during_set_keeps_the_tree_consistent():
    """SOFT_RESET while set records stream in: the accepted ones complete (BUSY for set_depth cycles, then IDLE
    without DONE) and the tree equals the model after some prefix of the records; the next START works."""
    spec = SPECS["k4"]
    rng = np.random.default_rng(9)
    idx, codes = rng.integers(0, 64, 60), rng.integers(1, 256, 60)
    bench = StreamBench(spec)
    try:
        records = np.frombuffer(set_op(idx, codes).stream, dtype="<u8")
        bench.write("CTRL", int(S.ReplayMode.SET) << MODE_SHIFT | S.Ctrl.START)
        bench.pending = [(int(r), i == len(records) - 1) for i, r in enumerate(records)]
        bench.tick(20)
        bench.write("CTRL", S.Ctrl.SOFT_RESET)
        assert bench.read("STATUS") == S.Status.BUSY  # draining the accepted records
        bench.tick(spec.set_depth)
        assert bench.read("STATUS") == 0
        sent = len(records) - len(bench.pending)
        bench.pending = []
        out, _, status, _, _ = bench.run(Op(int(S.ReplayMode.DUMP)))
        leaves = np.frombuffer(out, dtype="<u4")
        prefixes = []
        for m in range(sent + 1):
            tree = model.SumTree(spec)
            tree.set(idx[:m], codes[:m])
            prefixes.append(tree)
        match = [m for m, tree in enumerate(prefixes) if np.array_equal(tree.dump(), leaves)]
        assert match and sent - 2 <= match[-1] <= sent, (sent, match)
        tree = prefixes[match[-1]]
        assert bench.read("TOTAL") == tree.total and bench.read("NONZERO") == tree.nonzero
        assert status == S.Status.DONE
    finally:
        bench.close()
