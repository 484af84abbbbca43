"""Rung 4: the converted Verilog of the replay core against the bit-exact model (cocotb + Icarus).

For K = 4 and K = 2 a small build is converted with ``verilog.convert``, linted with Verilator (must be clean) and
compiled once with Icarus. The operations come from a fixed-seed generator (sets with repeated, out-of-range and
oversized records, SAMPLE, SAMPLE_UNIFORM with good and misplaced TLAST, refused STARTs, SEED writes, DUMP,
CLEAR), the expectations from the model through the same helper as rung 3 (``tests/replay/test_rtl.py``);
``tests/replay/cocotb_replay.py`` replays them over AXI with and without idle cycles and back-pressure.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build.verilog import convert, lint, module_name
from pynq_rl.overlay.models import replay as model
from tests.common import cocotb_run
from tests.common.cocotb_run import needs_icarus
from tests.replay.harness import Op, expect, sample_op, set_op

TESTBENCH = "tests.replay.cocotb_replay"
VECTORS_ENV = "PYNQ_RL_REPLAY_VECTORS"  # cocotb_replay.VECTORS_ENV (that module needs a running simulator)
COCOTB_TESTS_PER_RUN = 4
PARAMETER_REGISTERS = ("ID", "K", "LEVELS", "FORMAT", "CAPACITY")
_MODE_SHIFT = S.REPLAY_REGISTERS["CTRL"]["fields"]["MODE"]["bit_offset"]


def small_spec(k: int) -> S.ReplaySpec:
    """The builds these tests convert: 64 leaves (K=4) or 8 (K=2), 8-bit leaves."""
    return S.ReplaySpec(k=k, levels=3, leaf=S.QFormat(8, 4, signed=False), max_count=48)


def random_ops(spec: S.ReplaySpec, seed: int, n_random: int = 12) -> list[Op]:
    """CLEAR first (the banks survive the reset between cocotb tests), directed edge cases, then random ones."""
    rng = np.random.default_rng(seed)
    cap, top = spec.capacity, spec.leaf.max_code
    clear, dump = Op(int(S.ReplayMode.CLEAR), name="clear"), Op(int(S.ReplayMode.DUMP), name="dump")
    ops = [
        clear,
        sample_op(3, name="empty tree (refused)"),
        set_op([1, 1, 1, 2, cap, 3, 3], [5, top + 7, 9, 1, 4, 0, top], "repeats, reject, saturate"),
        sample_op(0, stride=1, name="count 0 (refused)"),
        sample_op(4, stride=2**31, name="stride (refused)"),
        Op(9, name="bad mode"),
        dump,
        sample_op(5),
        sample_op(5, uniforms=[0, 1, 2, 3], name="uniform, TLAST early"),
        sample_op(3, uniforms=[2**32 - 1] * 5, name="uniform, TLAST late"),
    ]
    ops[8].regs["COUNT"] = 5
    ops[9].regs["COUNT"] = 3
    for i in range(n_random):
        kind = rng.choice(["set", "set", "sample", "uniform", "dump", "seed"])
        if kind == "set":
            n = int(rng.integers(1, 24))
            idx = np.where(rng.random(n) < 0.1, rng.integers(cap, 2 * cap, n), rng.integers(0, cap, n))
            idx[rng.random(n) < 0.3] = rng.integers(0, 4)  # back-to-back repeats of a few leaves
            codes = np.where(rng.random(n) < 0.1, rng.integers(top, 2**32, n), rng.integers(0, top + 1, n))
            codes[rng.random(n) < 0.15] = 0
            ops.append(set_op(idx, codes, f"set {i}"))
        elif kind == "sample":
            ops.append(sample_op(int(rng.integers(1, spec.max_count + 1)), name=f"sample {i}"))
        elif kind == "uniform":
            count = int(rng.integers(1, 20))
            ops.append(sample_op(count, uniforms=rng.integers(0, 2**32, count), name=f"uniform {i}"))
        elif kind == "seed":
            op = sample_op(int(rng.integers(1, 10)), name=f"seed {i}")
            op.regs["SEED"] = int(rng.integers(0, 2**32)) if rng.random() < 0.8 else 0
            ops.append(op)
        else:
            ops.append(dump)
    return ops + [clear, sample_op(2, name="cleared (refused)")]


def make_vectors(spec: S.ReplaySpec, ops: list[Op]) -> dict:
    """Run ``ops`` through one model in order; the JSON-able vectors for the testbench."""
    tree = model.SumTree(spec)
    vectors = {
        "module": module_name("replay", spec),
        "cases": [],
        "parameters": {name: spec.parameter_registers()[name] for name in PARAMETER_REGISTERS},
    }
    beats = 0
    for op in ops:
        want = expect(tree, op)
        writes = [[name, value & 0xFFFF_FFFF] for name, value in op.regs.items()]
        writes.append(["CTRL", op.mode << _MODE_SHIFT | int(S.Ctrl.START)])
        vectors["cases"].append(
            {
                "name": op.name,
                "mode": op.mode,
                "writes": writes,
                "stream": op.stream.hex(),
                "expected": {
                    "output": want.output.hex(),
                    "status": want.status,
                    "cycles": want.cycles,
                    "TOTAL": want.total & 0xFFFF_FFFF,
                    "TOTAL_HI": want.total >> 32,
                    "NONZERO": want.nonzero,
                    "SEED": want.seed,
                },
            }
        )
        beats += (len(op.stream) + len(want.output)) // 8 + 20 * (len(writes) + 5) + spec.sample_depth
        beats += spec.capacity // 2
    vectors["timeout_us"] = 200 + beats * 4 * 10 * 4 // 1000
    return vectors


def run_cocotb(spec: S.ReplaySpec, verilog: Path, vectors: dict, work: Path, waves: bool = False) -> Path:
    """Run this core's testbench on the build ``spec`` (:func:`tests.common.cocotb_run.run_cocotb`).

    The tests below and the script mode of ``cocotb_replay`` call it with the spec rather than the module name.
    """
    return cocotb_run.run_cocotb(
        module_name("replay", spec),
        verilog,
        vectors,
        work,
        testbench=TESTBENCH,
        vectors_env=VECTORS_ENV,
        tests_per_run=COCOTB_TESTS_PER_RUN,
        waves=waves,
    )


@pytest.fixture(scope="module", params=[4, 2], ids=lambda k: f"k{k}")
def converted(request, tmp_path_factory):
    """(spec, path of the converted Verilog, work directory) for one K."""
    spec = small_spec(request.param)
    work = tmp_path_factory.mktemp(f"replay_verilog_k{request.param}")
    return spec, convert("replay", spec, work / "rtl"), work


def test_converted_verilog_lints_clean(converted):
    """``verilator --lint-only -Wall -Wno-WIDTH`` reports nothing."""
    _, verilog, _ = converted
    if shutil.which("verilator") is None:
        pytest.skip("verilator not found")
    lint(verilog)


@needs_icarus
def test_verilog_equals_model_bit_for_bit(converted):
    """Directed and random operations back to back: bytes, TLAST, STATUS, CYCLES and state registers."""
    spec, verilog, work = converted
    ops = random_ops(spec, seed=100 + spec.k)
    vectors = make_vectors(spec, ops)
    statuses = [c["expected"]["status"] for c in vectors["cases"]]
    for flag in (S.Status.SATURATED, S.Status.ERR_CONFIG, S.Status.ERR_STREAM):
        assert any(s & flag for s in statuses), f"no vector raises {flag!r}"
    assert {op.mode for op in ops} >= {int(m) for m in S.ReplayMode}
    run_cocotb(spec, verilog, vectors, work)


def test_the_updaters_column_logic_starts_from_registers(tmp_path):
    """In the first Pynq-Z2 build the column logic of every updater stage (the K adds, the leaf's replacement
    and its 16:1 old-code multiplexer) was selected by a decode of the node's index bits, which arrive down a
    register chain that synthesis packs into SRL16Es: SRL -> the multiplexer -> the subtract was the core's slowest
    xc7 path (4.90 ns), then SRL -> the addend gate -> the add (4.11 ns). Now each column's addend and the leaf's
    one-hot "column b is the node" are registers loaded with the read data, so no combinational block of the column
    logic reads an index or bank signal."""
    import re

    from tests.common.verilog_text import processes

    spec = S.board("Pynq-Z2").slot("replay").spec
    found = processes(convert("replay", spec, tmp_path).read_text())
    column_logic = re.compile(r"core_updater_update\d+_(column\d+|old_mux)_")
    combinational = [p for p in found if column_logic.match(p.name) and not p.clocked]
    assert len(combinational) >= spec.levels * spec.k  # the blocks this test is about were found
    readers = [p.name for p in combinational if re.search(r"_(node\d*|bank\d*)\b|_node\d*\[", p.text)]
    assert readers == []
    registered = {p.name for p in found if p.clocked}
    for level in range(1, spec.levels):
        assert {f"core_updater_update{level}_column{b}_gate" for b in range(spec.k)} <= registered
    assert {f"core_updater_update{spec.levels}_flag{b}_decode" for b in range(spec.k)} <= registered


def test_each_updater_stage_registers_the_word_read_as_it_is(tmp_path):
    """The updater's forwarding multiplexer once sat between the tree memory's read data and the stage's
    word register, so a block RAM's clock-to-out (4.3 ns on the ECP5, no output register) plus the multiplexer was
    the Pynq-Z2 replay core's slowest routed path (99 MHz). Each stage now registers the word read as it is (its
    one assignment is the memory's read data), which also lets a synthesizer take it as the block RAM's output
    register; the forwarded words join after it."""
    import re

    spec = S.board("Pynq-Z2").slot("replay").spec
    verilog = convert("replay", spec, tmp_path).read_text()
    for level in range(1, spec.levels + 1):
        sources = re.findall(rf"\bcore_updater_update{level}_row_q <= (.*?);", verilog)
        assert len(sources) == 1 and re.fullmatch(r"core_\w+_row", sources[0]), (level, sources)
