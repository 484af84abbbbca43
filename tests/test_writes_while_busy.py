"""Register writes during an operation, on the replay and ParSa cores, emulated, simulated and verilated.

The contract (``docs/registers.md``): an operation runs with the registers' values at its START, so a parameter
written while BUSY counts from the next START; a write that acts on the core (SEED reseeding a PRNG, ParSa's
EPSILON and REWARD) is held while BUSY and acts when the operation ends. Each test runs one sequence of operations
twice on each backend: with the writes made while an operation is BUSY, and with the same writes made just after it
ends. Everything observable must be the same in every run (four, six with the converted Verilog under Verilator).
(The GAE core's parameters have the same test in ``tests/gae/test_rtl.py``.)

Without the contract the sequences differ: the emulated replay core read COUNT and STRIDE when SAMPLE_UNIFORM's input
closed; both cores reseeded their PRNG halfway through a batch (the HDL) or before it was computed (the emulation);
ParSa checked N_TILINGS at the end of CONFIG.
"""

from __future__ import annotations

import numpy as np

from pynq_rl.host.backends.parsa_ip import ParsaCoreIP
from pynq_rl.host.backends.replay_ip import ReplayCoreIP
from pynq_rl.host.backends.rtl import RtlCoreIP
from pynq_rl.host.backends.verilator import VerilatorCoreIP, VerilatorSimulation
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as parsa_model
from pynq_rl.overlay.models import replay as replay_model
from tests.common.boards import RTL_PARSA_TEST_BOARD, RTL_REPLAY_TEST_BOARD, verilator_missing
from tests.parsa.harness import act_stream, config_stream, random_layout


class Bench:
    """Drive one core IP (emulated or simulated) as the driver does, recording everything observable."""

    def __init__(self, ip, table: dict, observed: tuple[str, ...]) -> None:
        self.ip, self.table, self.observed = ip, table, observed
        self.seen: list = []

    def write(self, regs: dict) -> None:
        for name, value in regs.items():
            self.ip.write(self.table[name]["address_offset"], int(value) & 0xFFFF_FFFF)

    def busy(self) -> bool:
        return bool(self.ip.read(self.table["STATUS"]["address_offset"]) & S.Status.BUSY)

    def operation(self, mode: int, regs: dict, stream: np.ndarray, writes: dict, during: bool) -> None:
        """``regs``, START in ``mode``; ``writes`` while it is BUSY (``during``, before any stream moves: the
        core waits for its input or holds its output) or once it is DONE; record the output and the registers."""
        self.write(regs)
        mode_bit = self.table["CTRL"]["fields"]["MODE"]["bit_offset"]
        self.ip.write(self.table["CTRL"]["address_offset"], int(mode) << mode_bit | S.Ctrl.START)
        if during:
            assert self.busy(), (
                f"{S.Status(self.ip.read(self.table['STATUS']['address_offset']))!r} after "
                f"START of mode {int(mode)}: refused, or over before the writes"
            )
            self.write(writes)
        data = np.asarray(stream, dtype="<u8").view(np.uint8)
        sent, out = 0, bytearray()
        for _ in range(4000):
            if sent < len(data):
                sent += self.ip.stream_in(data[sent:], last=True)
            out += self.ip.stream_out(1 << 20)[0].tobytes()
            if self.ip.read(self.table["STATUS"]["address_offset"]) & S.Status.DONE:
                break
        if not during:
            self.write(writes)
        self.seen.append(
            (bytes(out), {name: self.ip.read(self.table[name]["address_offset"]) for name in self.observed})
        )


def on_every_backend(board: S.BoardSpec, name: str, emulated, table: dict, observed, body, rtl_simulation) -> dict:
    """``body(bench, during)`` on the emulated core, the MyHDL core and (where Verilator is installed) its converted
    Verilog, writes during and after: the records, by run name."""
    spec = board.cores[0].spec
    ips = {"emu": lambda: emulated(spec), "rtl": lambda: RtlCoreIP(rtl_simulation(board), name, spec, table)}
    if not verilator_missing():
        ips["verilator"] = lambda: VerilatorCoreIP(VerilatorSimulation(board), name, spec, table)
    runs = {}
    for during in (True, False):
        for backend, make_ip in ips.items():
            bench = Bench(make_ip(), table, observed)
            body(bench, during)
            runs[f"{backend}, writes {'while BUSY' if during else 'after'}"] = bench.seen
    return runs


def assert_same(runs: dict) -> None:
    (first, reference), *others = runs.items()
    for name, run in others:
        for step, (got, want) in enumerate(zip(run, reference)):
            assert got == want, f"operation {step}: {name} {got} != {first} {want}"


def test_replay_sample_runs_with_the_registers_at_start_and_a_seed_write_waits(rtl_simulation):
    """SAMPLE with its output held while SEED, COUNT and STRIDE are rewritten, then SAMPLE_UNIFORM while they are
    rewritten again (its input closes after the START's COUNT records), then SAMPLE from the seed written last."""
    board = RTL_REPLAY_TEST_BOARD
    spec = board.cores[0].spec
    table, mode = S.REPLAY_REGISTERS, S.ReplayMode
    rng = np.random.default_rng(11)
    set_records = replay_model.pack_set(rng.permutation(spec.capacity)[:24], rng.integers(1, 1 << 12, 24))
    uniforms = replay_model.pack_uniforms(rng.integers(0, 1 << 32, 3, dtype=np.uint64).astype(np.uint32))
    none = np.zeros(0, np.uint64)

    def body(bench: Bench, during: bool) -> None:
        bench.operation(mode.SET, {"SEED": 77}, set_records, {}, during=False)
        bench.operation(
            mode.SAMPLE,
            {"COUNT": 6, "STRIDE": S.ReplaySpec.stride(6)},
            none,
            {"SEED": 0xC0FFEE, "COUNT": 3, "STRIDE": S.ReplaySpec.stride(3)},
            during,
        )
        bench.operation(
            mode.SAMPLE_UNIFORM, {}, uniforms, {"SEED": 12345, "COUNT": 5, "STRIDE": S.ReplaySpec.stride(5)}, during
        )
        bench.operation(mode.SAMPLE, {}, none, {}, during=False)

    runs = on_every_backend(
        board, "replay", ReplayCoreIP, table, ("STATUS", "CYCLES", "SEED", "TOTAL", "COUNT"), body, rtl_simulation
    )
    assert_same(runs)
    # and what they all did is the model's: samples from seed 77, then 3 uniform ones, then 5 from seed 12345
    tree = replay_model.SumTree(spec)
    tree.reseed(77)
    tree.set(*replay_model.record_words(set_records.view("<u4")))
    first = replay_model.pack_results(*tree.sample(6, None, S.ReplaySpec.stride(6))).tobytes()
    tree.reseed(0xC0FFEE)
    words = uniforms.view(np.uint64) & np.uint64(0xFFFF_FFFF)
    second = replay_model.pack_results(*tree.sample(3, words.astype(np.uint32), S.ReplaySpec.stride(3))).tobytes()
    tree.reseed(12345)
    third = replay_model.pack_results(*tree.sample(5, None, S.ReplaySpec.stride(5))).tobytes()
    assert [out for out, _ in runs["emu, writes while BUSY"][1:]] == [first, second, third]
    assert all(regs["STATUS"] == S.Status.DONE for _, regs in runs["emu, writes while BUSY"])
    assert runs["emu, writes while BUSY"][-1][1]["SEED"] == tree.prng_state


def test_parsa_config_and_act_run_with_the_registers_at_start_and_effect_writes_wait(rtl_simulation):
    """CONFIG while N_TILINGS is rewritten to 0 (refused if read at its end); ACT while SEED, EPSILON and a pending
    reward are written (they act after the batch); a second ACT batch then uses all three."""
    board = RTL_PARSA_TEST_BOARD
    spec = board.cores[0].spec
    table, mode = S.PARSA_REGISTERS, S.ParsaMode
    rng = np.random.default_rng(5)
    one = 1 << spec.coef.frac
    descriptors = random_layout(rng, 3, spec)
    config = config_stream(rng, 3, descriptors)
    policy = parsa_model.pack_policy(
        rng.integers(-(1 << 12), 1 << 12, (spec.workers, spec.tiles_per_worker, spec.max_actions))
    )
    batches = [act_stream(rng, spec, 3, 4, big=False) for _ in range(2)]
    regs = {
        "SEED": 99,
        "N_DIMS": 3,
        "N_ACTIONS": 3,
        "N_TILINGS": len(descriptors),
        "ALPHA": one // 8,
        "GAMMA": one - one // 16,
        "EPSILON": one // 2,
        "EPSILON_DECAY": one - one // 8,
        "OPTIONS": 1,
    }
    effects = {"SEED": 0xBEEF, "EPSILON": one // 4, "REWARD_KEY": 1, "REWARD": 1 << 10}

    def body(bench: Bench, during: bool) -> None:
        bench.operation(mode.CONFIG, regs, config, {"N_TILINGS": 0}, during)
        bench.operation(mode.LOAD_POLICY, {"N_TILINGS": len(descriptors)}, policy, {}, during=False)
        bench.operation(mode.ACT, {}, batches[0], effects, during)
        bench.operation(mode.ACT, {}, batches[1], {}, during=False)

    runs = on_every_backend(
        board,
        "parsa",
        ParsaCoreIP,
        table,
        ("STATUS", "CYCLES", "CYCLES_ACT", "CYCLES_UPDATE", "EPSILON", "SEED"),
        body,
        rtl_simulation,
    )
    assert_same(runs)
    emu = runs["emu, writes while BUSY"]
    assert all(regs["STATUS"] == S.Status.DONE for _, regs in emu[:2]), "CONFIG used the N_TILINGS written late"
    assert emu[2][1]["EPSILON"] == one // 4, "the EPSILON written during ACT is not the live value after it"
    assert emu[2][0] and emu[3][0], "no action records: the batches tested nothing"
