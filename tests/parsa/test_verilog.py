"""Rung 4: the converted Verilog of the ParSa core against the bit-exact model (cocotb + Icarus).

For value widths 8, 16 and 32 a small build (the rung-3 build) is converted with ``verilog.convert``, linted with
Verilator (must be clean) and compiled with Icarus. The model (``ParsaCoreIP``) runs the rung-3 scenarios (CONFIG,
LOAD_POLICY, pending rewards, ACT batches, DUMP_POLICY; fixed seeds) plus refused starts, a refused layout, a short
CONFIG stream, a partial record and CLEAR, recording every register write, stream and result;
``tests/parsa/cocotb_parsa.py`` replays them over AXI with and without idle cycles and back-pressure.
"""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from pynq_rl.host.backends.parsa_ip import ParsaCoreIP
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build.verilog import convert, lint, module_name
from tests.common.boards import RTL_PARSA_TEST_BOARD
from tests.common.cocotb_run import needs_icarus, run_cocotb
from tests.parsa.harness import OBSERVED, R, act_stream, config_stream, random_layout, run_operation, scenario

TESTBENCH = "tests.parsa.cocotb_parsa"
VECTORS_ENV = "PYNQ_RL_PARSA_VECTORS"
COCOTB_TESTS_PER_RUN = 4
SEEDS = {8: (81, 82), 16: (161, 162), 32: (321, 322)}
PARAMETER_REGISTERS = ("ID", "MAX_DIMS", "MAX_ACTIONS", "WORKERS", "FORMAT", "TILES_PER_WORKER", "MAX_TILINGS", "KEYS")


class Recorder(ParsaCoreIP):
    """The emulated core, recording each operation's register writes, input stream and results."""

    def __init__(self, spec: S.ParsaSpec) -> None:
        super().__init__(spec)
        self.operations: list[dict] = []
        self._writes: list[list[int]] = []

        self._accepted = b""

    def write(self, offset: int, value: int) -> None:
        self._writes.append([offset, value & 0xFFFF_FFFF])
        super().write(offset, value)

    def stream_in(self, data, last: bool) -> int:
        taken = super().stream_in(data, last)
        self._accepted += bytes(data[:taken])
        return taken

    def record_operation(self, stream: bytes, result: dict) -> None:
        """One operation: its writes, the stream the core took (none after a refused START), its results."""
        self.operations.append({"writes": self._writes, "stream": self._accepted.hex(), "expected": result})
        self._writes, self._accepted = [], b""


def small_spec(value_w: int) -> S.ParsaSpec:
    return dataclasses.replace(RTL_PARSA_TEST_BOARD.cores[0].spec, value_w=value_w)


def error_operations(ip, spec: S.ParsaSpec) -> None:
    """Refused starts, a refused layout, a short CONFIG, a partial record, CLEAR (after the scenarios)."""
    rng = np.random.default_rng(9)
    descriptors = random_layout(rng, 2, spec)
    config = config_stream(rng, 2, descriptors)
    records = act_stream(rng, spec, 2, 3, big=False)
    good = {"N_DIMS": 2, "N_ACTIONS": 2, "N_TILINGS": len(descriptors), "ALPHA": 1000, "GAMMA": 50000, "OPTIONS": 3}
    run_operation(ip, {"N_ACTIONS": 0}, S.ParsaMode.ACT, records)
    run_operation(ip, {}, 9, [])
    run_operation(ip, good, S.ParsaMode.CONFIG, config)
    run_operation(ip, {"N_TILINGS": 0}, S.ParsaMode.CONFIG, config[:2])
    run_operation(ip, {"N_TILINGS": len(descriptors)}, S.ParsaMode.CONFIG, config[:-1])
    run_operation(ip, {}, S.ParsaMode.ACT, records[:-1])
    run_operation(ip, {}, S.ParsaMode.CLEAR, [])
    run_operation(ip, {}, S.ParsaMode.ACT, records)


def make_vectors(spec: S.ParsaSpec, seeds) -> dict:
    ip = Recorder(spec)
    for seed in seeds:
        scenario(ip, seed, spec)
    error_operations(ip, spec)
    words = sum(len(op["stream"]) // 16 + len(op["expected"]["out"]) + 30 * len(op["writes"]) for op in ip.operations)
    return {
        "module": module_name("parsa", spec),
        "operations": ip.operations,
        "observed": list(OBSERVED),
        "parameters": {name: ip.read(R[name]["address_offset"]) for name in PARAMETER_REGISTERS},
        "timeout_us": 200 + words * 4 * 10 * 8 // 1000,
    }


@pytest.fixture(scope="module", params=[8, 16, 32], ids=lambda w: f"v{w}")
def converted(request, tmp_path_factory):
    """(spec, path of the converted Verilog, work directory) for one value width."""
    spec = small_spec(request.param)
    work = tmp_path_factory.mktemp(f"parsa_verilog_v{request.param}")
    return spec, convert("parsa", spec, work / "rtl"), work


def test_converted_verilog_lints_clean(converted):
    """``verilator --lint-only -Wall -Wno-WIDTH`` reports nothing."""
    _, verilog, _ = converted
    if shutil.which("verilator") is None:
        pytest.skip("verilator not found")
    lint(verilog)


@needs_icarus
def test_verilog_equals_model_bit_for_bit(converted):
    """Scenarios and error operations back to back: output words, TLAST and observed registers equal the model's."""
    spec, verilog, work = converted
    vectors = make_vectors(spec, SEEDS[spec.value_w])
    statuses = [op["expected"]["STATUS"] for op in vectors["operations"]]
    assert any(s & S.Status.ERR_CONFIG for s in statuses) and any(s & S.Status.ERR_STREAM for s in statuses)
    assert sum(len(op["expected"]["out"]) for op in vectors["operations"]) > 0
    run_cocotb(
        module_name("parsa", spec),
        verilog,
        vectors,
        work,
        testbench=TESTBENCH,
        vectors_env=VECTORS_ENV,
        tests_per_run=COCOTB_TESTS_PER_RUN,
    )
