"""Running a rung-4 cocotb testbench from pytest: build the converted Verilog with Icarus, replay vectors on it.

The pytest wrappers (``tests/<core>/test_verilog.py``) compute the vectors with the model and call :func:`run_cocotb`,
which writes them to a JSON file, builds the top level once per work directory and runs the testbench module
(``tests.<core>.cocotb_<core>``) in the simulator, the file's path in an environment variable. The simulator's
Python imports the testbench with this process's ``sys.path`` (cocotb_tools passes it on as ``PYTHONPATH``), so the
repository root is on it as under pytest. cocotb_tools is imported only when a run starts: a plain import of this
module works without it (the wrappers skip with :data:`needs_icarus`).

The testbenches' script mode (``python -m tests.<core>.cocotb_<core> --trace``) uses :func:`script_arguments` and
:func:`run_outside_pytest` to run the same thing from a shell.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import pytest


def missing_tools() -> list[str]:
    """What a cocotb run needs and this machine lacks: the ``iverilog`` executable and the Python packages."""
    missing = [] if shutil.which("iverilog") else ["iverilog"]
    for name in ("cocotb", "cocotb_tools.runner", "cocotbext.axi"):
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent package is absent
            found = False
        if not found:
            missing.append(name)
    return missing


#: Skips a test that runs cocotb where Icarus or the cocotb packages are absent.
needs_icarus = pytest.mark.skipif(bool(missing_tools()), reason=f"not installed: {', '.join(missing_tools())}")


def run_cocotb(
    toplevel: str,
    verilog: Path,
    vectors: dict,
    work: Path,
    *,
    testbench: str,
    vectors_env: str,
    tests_per_run: int,
    waves: bool = False,
) -> Path:
    """Build ``verilog`` (cached per ``work/sim_build``) and run ``testbench`` on ``vectors``; the results file.

    ``toplevel`` is the HDL module name, ``vectors_env`` the environment variable the testbench reads the vectors
    file's path from and ``tests_per_run`` how many cocotb tests it holds (fewer means some were not found or not
    run). Each run gets its own ``work/run_<n>`` directory (vectors, results, waveform with ``waves``). Fails the
    calling test on any cocotb failure, a simulator crash or a wrong number of tests.
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    runner = get_runner("icarus")
    work.mkdir(parents=True, exist_ok=True)
    build_dir, test_dir = work / "sim_build", work / f"run_{len(list(work.glob('run_*')))}"
    test_dir.mkdir()
    vectors_file = test_dir / "vectors.json"
    vectors_file.write_text(json.dumps(vectors), encoding="utf-8")
    runner.build(
        sources=[verilog],
        hdl_toplevel=toplevel,
        build_dir=build_dir,
        waves=waves,
        always=waves,
        timescale=("1ns", "1ps"),
    )
    results = test_dir / "results.xml"
    try:
        runner.test(
            test_module=testbench,
            hdl_toplevel=toplevel,
            build_dir=build_dir,
            test_dir=test_dir,
            results_xml=str(results),
            extra_env={vectors_env: str(vectors_file)},
            seed=1,
            waves=waves,
        )
    except SystemExit as exc:  # cocotb_tools exits when the simulator or a test fails (under pytest)
        pytest.fail(f"cocotb run failed (exit {exc.code}):\n{failure_messages(results)}", pytrace=False)
    n_tests, n_failed = get_results(results)
    if n_failed or n_tests != tests_per_run:
        pytest.fail(
            f"cocotb: {n_failed} of {n_tests} tests failed (expected {tests_per_run} tests):\n"
            f"{failure_messages(results)}",
            pytrace=False,
        )
    return results


def failure_messages(results: Path) -> str:
    """The failure and error messages of a cocotb results file, one line per problem, for a pytest failure."""
    if not results.is_file():
        return f"no results file {results}: the simulation ended abnormally (see the captured output)"
    lines = []
    for testcase in ElementTree.parse(results).getroot().iter("testcase"):
        for problem in [*testcase.iter("failure"), *testcase.iter("error")]:
            lines.append(f"{testcase.get('name')}: {problem.get('message', '')}")
    return "\n".join(lines) or "(no failure message in the results file; see the captured output)"


def script_arguments(description: str, argv: list[str] | None, *, k: int, k_help: str, out: str) -> argparse.Namespace:
    """A testbench's script-mode command line: ``--k`` (the build), ``--out`` (work directory, made absolute),
    ``--trace`` (dump an FST waveform)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--k", type=int, default=k, help=f"{k_help} (default {k})")
    parser.add_argument("--out", default=out, help=f"work directory (default {out})")
    parser.add_argument("--trace", action="store_true", help="dump an FST waveform of the DUT")
    args = parser.parse_args(argv)
    args.out = Path(args.out).resolve()
    return args


def run_outside_pytest(run: Callable[..., Path], *args, **kwargs) -> Path | None:
    """``run(*args, **kwargs)`` (a :func:`run_cocotb`) from a script: the results file, or None with the failure
    message on stderr where pytest's failure would end the test."""
    try:
        return run(*args, **kwargs)
    except pytest.fail.Exception as exc:
        print(exc.msg, file=sys.stderr)
        return None
