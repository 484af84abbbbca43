"""Speed of the ``verilator`` backend beside ``rtl``: simulated cycles per wall second, bus costs, a GAE rollout and
start times, measured in one run.

Both backends simulate the same cores cycle for cycle (``tests/verilator/test_equivalence.py``): ``rtl`` runs the
MyHDL designs clock by clock in Python, ``verilator`` runs their converted Verilog (what Vivado receives) compiled by
Verilator behind a C++ bus harness. What differs is the wall time a simulated cycle costs, which decides whether an
agent can train against the simulated cores at all. Everything runs on the shipped builds of ``spec.BOARDS``:

1. **Cycles per wall second while a core works**: how far the board's clock (``overlay.device.simulation.cycle``)
   advances during driver calls, over their wall time. The work: ``gae.compute`` of ``--gae`` (envs x steps, the
   driver's default 8-bit codes, q8-runs); ``replay.update`` of ``--replay`` priorities, then ``replay.sample`` of
   as many;
   ``parsa.act_batch`` of ``--parsa`` records with rewards, after one ``configure`` (MountainCar's layout: 2 dims,
   8 tilings x 8x8 tiles, 3 actions). Each core alone (``RLOverlay(cores=(name,))``), and the whole board: one
   overlay of all three cores working in turn, one round = the three calls (a verilated core idles up to the board's
   clock before it acts, so the other cores' catching up is in the round's wall time). On ``rtl`` the same calls at
   the sizes ``--rtl-gae``, ``--rtl-replay``, ``--rtl-parsa`` (MyHDL runs about a thousand cycles/s); ``verilator``
   runs those small calls too, so the ratio verilator / rtl compares the same calls. Beside them, each verilated
   model's own clock rate with idle buses (``VerilatedCore.idle``: the C++ loop alone, no Python per call), on a
   separate overlay.
2. **One register access from Python**: ``overlay.gae.mmio.read(STATUS)`` and ``mmio.write(GAMMA, its value)``
   (PYNQ's MMIO, with its argument checks) and the drivers' own path, an index into ``mmio.array``; the median over
   ``--register-samples`` samples of ``--register-accesses`` back-to-back accesses. ``emu`` beside them is the
   host-side floor (the same PYNQ and emulated-device code, no simulated cycles).
3. **Streams**: ``replay.update`` of ``--stream-bytes`` of SET records (8 bytes each, into the core), and a raw
   ``gae.compute`` of ``--gae`` (fixed-point records both ways), on the Pynq-Z2 build; the payload bytes are the
   DMAs' own counts (``RLOverlay.bus_stats``), reported as MiB/s of wall time. ``rtl``: the update at
   ``--rtl-stream-bytes``.
4. **A GAE rollout**: the wall time of the ``gae.compute`` of 1. on the Pynq-Z2 build (the goal is stated for
   64 envs x 1,024 steps); for ``rtl``, the time its measured cycle rate would take for those cycles (an estimate).
5. **Start**: a fresh Python process that imports pynq_rl and makes ``RLOverlay(backend=..., board="Pynq-Z2")``
   with all three cores, timed from the parent (interpreter start included). ``cold``: ``PYNQ_RL_VERILATOR_CACHE``
   set to an empty temporary directory, so each core is converted to Verilog and compiled by Verilator (per-core
   times recorded; ``--no-cold`` skips it: minutes); ``cached``: the default cache, warm (one unmeasured start
   first fills it if it is not); ``rtl`` beside them (elaborating the MyHDL design).

Goals (stated as met or not in the results): on ``verilator``, each Pynq-Z2 core alone >= 500,000 simulated
cycles/s while working, and every ZCU106 row (each core, the whole board) >= 100,000; one register access <= 20 us;
the 64 x 1,024 GAE compute <= 0.5 s; a cold start <= 3 minutes on this machine, a cached start <= 2 s.

Every verilator workload runs on an overlay of its own (a driver skips the parameter registers it wrote last time,
so one workload's calls would change another's cycles). They are interleaved repetition by repetition (a noisy
neighbour slows all of them alike), each repetition timing back-to-back rounds for at least ``--min-time`` seconds;
the tables give medians of ``--repeats``. MyHDL allows one simulation per process, so the ``rtl`` overlays are
measured one after another, ``--rtl-repeats`` rounds each after one unmeasured round.

Run: ``python benchmarks/verilator_speed.py [--out benchmarks/results] [--no-cold] [--no-rtl]`` (about 5 minutes
on 2 cores: the starts with the cold build 1.2, the verilator rows 0.8, the rtl rows 2.6). Writes ``verilator.json``
and ``verilator.md`` under ``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, failed_rows, write_results
from _verilator_probes import MIB, Probe, guarded, interleave, prepare, summarize, take_sample
from _verilator_report import BOARDS, CORES, GOALS, START_BOARD, derive, goals, markdown, slug
from _verilator_workloads import Work, gae_call, rate_row, register_accesses, replay_update_call, work_calls

REPO = Path(__file__).resolve().parent.parent

# The child process of a start measurement: import, (cold only) each core's conversion and Verilator build timed
# apart, then the overlay; it prints one JSON line of timings. Run with the repository as its working directory.
START_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from pynq_rl import RLOverlay
from pynq_rl.overlay import spec as S
out = {"import[s]": time.perf_counter() - t0}
backend, board, breakdown = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if breakdown:
    from pynq_rl.host.backends import verilator_build as vb
    for slot in S.board(board).cores:
        t = time.perf_counter()
        vb.core_verilog(slot.name, slot.spec)
        out[f"{slot.name}_convert[s]"] = time.perf_counter() - t
        t = time.perf_counter()
        vb.build_model(slot.name, slot.spec)
        out[f"{slot.name}_build[s]"] = time.perf_counter() - t
t = time.perf_counter()
overlay = RLOverlay(backend=backend, board=board)
out["overlay[s]"] = time.perf_counter() - t
builds = getattr(overlay.device.simulation, "builds", {})
out["built_in_overlay"] = sorted(name for name, build in builds.items() if build.seconds > 0)
out["cache"] = str(builds[next(iter(builds))].library.parents[2]) if builds else None
print(json.dumps(out))
"""


# ---------------------------------------------------------------------------------------------------------------
# verilator: rates, streams, model clocks, registers
# ---------------------------------------------------------------------------------------------------------------


def verilator_probes(args: argparse.Namespace) -> tuple[list[Probe], list[dict]]:
    """The verilator probes, each on an overlay of its own (a driver skips parameter registers it wrote last time,
    so a round shares no state with another size's): cores alone and whole boards at the large and the rtl sizes,
    and the streams on the Pynq-Z2 build. Rows that could not be set up carry their error."""
    from pynq_rl import RLOverlay

    probes, rows = [], []

    def add(row: dict, cores: tuple[str, ...] | None, board: str, calls: Callable[[object], list]) -> None:
        rows.append(row)

        def setup():
            overlay = RLOverlay(backend="verilator", board=board, cores=cores)
            probes.append(Probe(row, overlay, calls(overlay)))

        guarded(row, setup)

    def rounds(names: tuple[str, ...], work: Work) -> Callable[[object], list]:
        return lambda overlay: [
            call for i, name in enumerate(names) for call in work_calls(overlay, name, work, args.seed + i)
        ]

    for board in args.boards:
        for cores in (*CORES, "board"):
            names = CORES if cores == "board" else (cores,)
            for work_name, work in (("large", args.work), ("small", args.rtl_work)):
                add(
                    rate_row("verilator", board, cores, work_name, work),
                    None if cores == "board" else names,
                    board,
                    rounds(names, work),
                )
        if board == START_BOARD:
            records = args.stream_bytes // 8
            add(
                {
                    "key": "stream_verilator_pynqz2_replay_update",
                    "section": "stream",
                    "backend": "verilator",
                    "board": board,
                    "transfer": f"replay.update({records:,})",
                    "status": "not run",
                },
                ("replay",),
                board,
                lambda overlay: [replay_update_call(overlay, records, args.seed)],
            )
            envs, steps = args.work.gae
            add(
                {
                    "key": "stream_verilator_pynqz2_gae_raw",
                    "section": "stream",
                    "backend": "verilator",
                    "board": board,
                    "transfer": f"gae.compute {envs}x{steps} raw",
                    "status": "not run",
                },
                ("gae",),
                board,
                lambda overlay: [gae_call(overlay, envs, steps, quantize=False, seed=args.seed)],
            )
    return probes, rows


def model_clocks(args: argparse.Namespace) -> list[dict]:
    """Each verilated model's clock rate with idle buses (``VerilatedCore.idle``), interleaved over the models of
    every board, on overlays of their own (the probes' board clocks stay untouched)."""
    from pynq_rl import RLOverlay

    rows, models, overlays = [], [], {}  # the overlays are kept: a released device frees its models
    for board in args.boards:
        for core in CORES:
            row = {
                "key": f"clock_verilator_{slug(board)}_{core}",
                "section": "clock",
                "backend": "verilator",
                "board": board,
                "cores": core,
                "status": "not run",
            }
            rows.append(row)

            def setup(row=row, core=core, board=board):
                if board not in overlays:
                    overlays[board] = RLOverlay(backend="verilator", board=board)
                model = overlays[board].device.simulation.cores[core]
                start = time.perf_counter()
                model.idle(model.cycle + 1000)
                ticks = max(1000, int(args.min_time * 1000 / max(time.perf_counter() - start, 1e-9)))
                row.update({"status": "ok", "ticks_per_sample": ticks, "samples[cycles/s]": []})
                models.append((row, model, ticks))

            guarded(row, setup)
    for rep in range(args.repeats):
        shift = rep % max(len(models), 1)
        for row, model, ticks in models[shift:] + models[:shift]:
            start = time.perf_counter()
            model.idle(model.cycle + ticks)
            row["samples[cycles/s]"].append(ticks / (time.perf_counter() - start))
    for row, _, _ in models:
        row["median[cycles/s]"] = statistics.median(row["samples[cycles/s]"])
    return rows


def measure_registers(backends: dict[str, object], samples: int, accesses: int) -> list[dict]:
    """Median microseconds per access over ``samples`` samples of ``accesses`` back-to-back accesses, interleaved
    over ``backends`` (name -> overlay) and access kinds; also the simulated cycles per access."""
    items = []
    for backend, overlay in backends.items():
        for access, call in register_accesses(overlay).items():
            row = {
                "key": f"register_{backend}_{access.split('.')[-1].replace('[i]', '_index')}",
                "section": "register",
                "backend": backend,
                "board": overlay.board_spec.name,
                "access": access,
                "register": "STATUS" if "write" not in access else "GAMMA",
                "status": "ok",
                "accesses_per_sample": accesses,
                "samples[us]": [],
                "cycles_per_access": 0.0,
            }
            items.append((row, overlay, call))
    for rep in range(samples):
        shift = rep % len(items)
        for row, overlay, call in items[shift:] + items[:shift]:
            sim = getattr(overlay.device, "simulation", None)
            cycle = sim.cycle if sim is not None else 0
            start = time.perf_counter()
            for _ in range(accesses):
                call()
            row["samples[us]"].append(1e6 * (time.perf_counter() - start) / accesses)
            row["cycles_per_access"] = ((sim.cycle - cycle) / accesses) if sim is not None else 0.0
    for row, _, _ in items:
        row["median[us]"] = statistics.median(row["samples[us]"])
    return [row for row, _, _ in items]


def measure_verilator(args: argparse.Namespace) -> list[dict]:
    """Rates, streams and the GAE rollout (interleaved probes), the models' clocks, and register accesses."""
    probes, rows = verilator_probes(args)
    interleave(probes, args.repeats, args.min_time)
    rows += model_clocks(args)
    register_rows = [{"key": "register_verilator", "section": "register", "status": "not run"}]

    def registers():
        from pynq_rl import RLOverlay

        overlays = {
            "emu": RLOverlay(backend="emu", board=START_BOARD, cores=("gae",)),
            "verilator": RLOverlay(backend="verilator", board=START_BOARD, cores=("gae",)),
        }
        register_rows[:] = measure_registers(overlays, args.register_samples, args.register_accesses)

    guarded(register_rows[0], registers)
    return rows + register_rows


# ---------------------------------------------------------------------------------------------------------------
# rtl: the same calls, small, one simulation at a time
# ---------------------------------------------------------------------------------------------------------------


def measure_probe(probe: Probe, repeats: int) -> None:
    """One unmeasured round, then ``repeats`` samples of one round each (rtl: too slow to interleave or calibrate)."""
    prepare(probe, 0.0)
    for _ in range(repeats):
        take_sample(probe)
    summarize(probe)


def rtl_riders(args: argparse.Namespace, board: str, cores: str) -> list[tuple[dict, Callable[[object], list]]]:
    """What else is measured on the rtl overlay of ``cores`` of ``board`` while it lives (one MyHDL simulation per
    process): (placeholder row, ``measure(overlay) -> rows`` that replace it)."""
    if board != START_BOARD or cores not in ("gae", "replay"):
        return []
    if cores == "gae":
        return [
            (
                {"key": "register_rtl", "section": "register", "backend": "rtl", "status": "not run"},
                lambda overlay: measure_registers(
                    {"rtl": overlay}, args.rtl_register_samples, args.rtl_register_accesses
                ),
            )
        ]
    records = args.rtl_stream_bytes // 8
    stream = {
        "key": "stream_rtl_pynqz2_replay_update",
        "section": "stream",
        "backend": "rtl",
        "board": board,
        "transfer": f"replay.update({records:,})",
        "status": "not run",
    }

    def measure_stream(overlay) -> list[dict]:
        measure_probe(Probe(stream, overlay, [replay_update_call(overlay, records, args.seed)]), args.rtl_repeats)
        return [stream]

    return [(stream, measure_stream)]


def rtl_skip(args: argparse.Namespace, board: str, cores: str) -> str:
    """Why the rtl rows of ``cores`` of ``board`` are not measured in this run ("" when they are)."""
    if args.no_rtl:
        return "--no-rtl"
    if cores == "board":
        return "" if board in args.rtl_whole_boards else "--rtl-whole-boards"
    return "" if board in args.rtl_boards else "--rtl-boards"


def measure_rtl(args: argparse.Namespace) -> list[dict]:
    """The rtl rows: each core alone on ``--rtl-boards`` and the whole board on ``--rtl-whole-boards``, at the rtl
    sizes; on the Pynq-Z2 build also the register accesses (GAE overlay) and the stream (replay overlay)."""
    from pynq_rl import RLOverlay

    rows: list[dict] = []
    for board in BOARDS:
        for cores in (*CORES, "board"):
            row = rate_row("rtl", board, cores, "small", args.rtl_work)
            riders = rtl_riders(args, board, cores)
            rows += [row, *(placeholder for placeholder, _ in riders)]
            skip = rtl_skip(args, board, cores)
            if skip:
                for skipped in (row, *(placeholder for placeholder, _ in riders)):
                    skipped["status"] = f"unavailable: not run ({skip})"
                continue
            names = CORES if cores == "board" else (cores,)
            held: list = []

            def run(row=row, board=board, cores=cores, names=names, held=held):
                start = time.perf_counter()
                held.append(RLOverlay(backend="rtl", board=board, cores=None if cores == "board" else names))
                row["overlay_start[s]"] = time.perf_counter() - start
                calls = [
                    call
                    for i, name in enumerate(names)
                    for call in work_calls(held[0], name, args.rtl_work, args.seed + i)
                ]
                measure_probe(Probe(row, held[0], calls), args.rtl_repeats)

            guarded(row, run)
            for placeholder, measure in riders:
                if not held:
                    placeholder["status"] = row["status"]
                    continue
                got: list[dict] = []
                if guarded(placeholder, lambda measure=measure: got.extend(measure(held[0]))):
                    index = rows.index(placeholder)
                    rows[index : index + 1] = got
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Start times, in fresh processes
# ---------------------------------------------------------------------------------------------------------------


def start_process(backend: str, board: str, breakdown: bool, cache: Path | None = None) -> dict:
    """Run :data:`START_CHILD` in a fresh interpreter; its timings plus ``wall[s]`` measured from here."""
    env = dict(os.environ)
    if cache is not None:
        env["PYNQ_RL_VERILATOR_CACHE"] = str(cache)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", START_CHILD, backend, board, "1" if breakdown else "0"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=3600,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the {backend} start exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return {"wall[s]": wall, **json.loads(proc.stdout.strip().splitlines()[-1])}


def measure_starts(args: argparse.Namespace) -> list[dict]:
    """Cold (optional) and cached verilator starts and rtl starts of the Pynq-Z2 overlay, the latter two
    interleaved."""
    cold = {
        "key": "start_verilator_cold",
        "section": "start",
        "backend": "verilator",
        "board": START_BOARD,
        "start": "cold",
        "status": "unavailable: not run (--no-cold)",
    }
    if not args.no_cold:

        def run_cold():
            from pynq_rl.host.backends.verilator_build import find_verilator

            find_verilator()  # unavailable: say so here rather than from the child's traceback
            cache = Path(tempfile.mkdtemp(prefix="pynq-rl-verilator-cold-"))
            try:
                cold.update(start_process("verilator", START_BOARD, True, cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            cold["status"] = "ok"

        guarded(cold, run_cold)
    cached = {
        "key": "start_verilator_cached",
        "section": "start",
        "backend": "verilator",
        "board": START_BOARD,
        "start": "cached",
        "status": "ok",
        "samples": [],
    }
    rtl = {
        "key": "start_rtl",
        "section": "start",
        "backend": "rtl",
        "board": START_BOARD,
        "start": "elaborate",
        "status": "ok",
        "samples": [],
    }
    plan = [
        (cached, "verilator", args.start_repeats, "--start-repeats 0"),
        (
            rtl,
            "rtl",
            0 if args.no_rtl else args.rtl_start_repeats,
            "--no-rtl" if args.no_rtl else "--rtl-start-repeats 0",
        ),
    ]
    for row, backend, repeats, flag in plan:
        if repeats < 1:
            row["status"] = f"unavailable: not run ({flag})"
        elif backend == "verilator":  # an unmeasured start first: it fills a cache that is not warm
            guarded(row, lambda row=row: row.update(warmup=start_process("verilator", START_BOARD, False)))
    for rep in range(max(repeats for _, _, repeats, _ in plan)):
        for row, backend, repeats, _ in plan:
            if rep < repeats and row["status"] == "ok":
                guarded(
                    row,
                    lambda row=row, backend=backend: row["samples"].append(start_process(backend, START_BOARD, False)),
                )
    for row, _, _, _ in plan:
        if row["status"] == "ok" and row["samples"]:
            for name in row["samples"][0]:
                if name.endswith("[s]"):
                    row[f"median_{name}"] = statistics.median(s[name] for s in row["samples"])
    return [cold, cached, rtl]


# ---------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------


def parse_size(text: str) -> tuple[int, int]:
    """``"64x1024"`` -> (64, 1024) (envs x steps)."""
    n, _, t = text.strip().lower().partition("x")
    if not n.isdigit() or not t.isdigit() or int(n) < 1 or int(t) < 1:
        raise argparse.ArgumentTypeError(f"a GAE size must look like 64x1024 (envs x steps), not {text!r}")
    return int(n), int(t)


def parse_boards(text: str) -> list[str]:
    """A comma-separated list of boards of ``spec.BOARDS`` (may be empty)."""
    boards = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in boards if b not in BOARDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"boards must be among {list(BOARDS)}, not {unknown}")
    return boards


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def tool_info(args: argparse.Namespace) -> dict:
    """Versions of the simulators and where the models are cached."""
    import myhdl
    import pynq

    from pynq_rl.host.backends import verilator_build
    from pynq_rl.overlay import spec as S

    info = {
        "myhdl": myhdl.__version__,
        "pynq": pynq.__version__,
        "cache_root": str(verilator_build.cache_root()),
        "fclk_mhz": {board: S.board(board).fclk_mhz for board in BOARDS},
        "builds": {board: {slot.name: repr(slot.spec) for slot in S.board(board).cores} for board in BOARDS},
    }
    try:
        info["verilator"] = verilator_build.find_verilator().version
    except verilator_build.VerilatorUnavailable as err:
        info["verilator_unavailable"] = str(err)
    return info


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--gae", type=parse_size, default="64x1024", help="verilator gae.compute size (envs x steps)")
    parser.add_argument("--replay", type=positive, default=16384, help="verilator replay update+sample size")
    parser.add_argument("--parsa", type=positive, default=2048, help="verilator parsa.act_batch records")
    parser.add_argument("--rtl-gae", type=parse_size, default="8x32", help="rtl (and verilator's same-call) gae size")
    parser.add_argument("--rtl-replay", type=positive, default=64, help="rtl replay update+sample size")
    parser.add_argument("--rtl-parsa", type=positive, default=16, help="rtl parsa.act_batch records")
    parser.add_argument("--stream-bytes", type=positive, default=MIB, help="verilator replay.update payload bytes")
    parser.add_argument("--rtl-stream-bytes", type=positive, default=16384, help="rtl replay.update payload bytes")
    parser.add_argument("--boards", type=parse_boards, default="Pynq-Z2,ZCU106", help="verilator boards")
    parser.add_argument(
        "--rtl-boards", type=parse_boards, default="Pynq-Z2,ZCU106", help="boards whose cores rtl runs alone"
    )
    parser.add_argument(
        "--rtl-whole-boards",
        type=parse_boards,
        default="Pynq-Z2",
        help="boards rtl runs whole (the ZCU106's, ~70 cycles/s with its 64-lane GAE, takes minutes)",
    )
    parser.add_argument("--repeats", type=positive, default=5, help="interleaved verilator repetitions")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds of back-to-back rounds per repetition")
    parser.add_argument("--rtl-repeats", type=positive, default=2, help="measured rtl rounds per overlay")
    parser.add_argument("--register-samples", type=positive, default=200, help="register samples per access kind")
    parser.add_argument("--register-accesses", type=positive, default=50, help="accesses per register sample")
    parser.add_argument("--rtl-register-samples", type=positive, default=10, help="rtl register samples")
    parser.add_argument("--rtl-register-accesses", type=positive, default=5, help="accesses per rtl sample")
    parser.add_argument("--start-repeats", type=int, default=5, help="cached verilator starts (0: none)")
    parser.add_argument("--rtl-start-repeats", type=int, default=2, help="rtl starts (0: none)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start (a Verilator build: minutes)")
    parser.add_argument("--no-rtl", action="store_true", help="skip every rtl measurement")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input data")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="output directory")
    args = parser.parse_args(argv)
    if args.min_time < 0 or args.start_repeats < 0 or args.rtl_start_repeats < 0:
        parser.error("--min-time, --start-repeats and --rtl-start-repeats must be >= 0")
    args.work = Work(args.gae, args.replay, args.parsa)
    args.rtl_work = Work(args.rtl_gae, args.rtl_replay, args.rtl_parsa)

    started = time.perf_counter()
    info = tool_info(args)
    rows, phases = [], {}
    # starts first: the fresh processes compete with nothing this process holds
    for phase, measure in (("starts", measure_starts), ("verilator", measure_verilator), ("rtl", measure_rtl)):
        begun = time.perf_counter()
        rows += measure(args)
        phases[f"{phase}[s]"] = round(time.perf_counter() - begun, 1)
    info["phase_wall"] = phases
    rows = derive(rows, args)
    arguments = {name: value for name, value in vars(args).items() if name not in ("work", "rtl_work", "out")}
    arguments |= {"gae": "x".join(map(str, args.gae)), "rtl_gae": "x".join(map(str, args.rtl_gae))}
    result = {
        "benchmark": "verilator_speed",
        "environment": environment(),
        "info": info,
        "arguments": arguments,
        "goals_set": GOALS,
        "rows": rows,
        "goals": goals(rows, args),
        "wall[s]": None,
    }
    result["wall[s]"] = round(time.perf_counter() - started, 1)
    write_results(args.out, "verilator", result, markdown(result))
    return result


if __name__ == "__main__":
    sys.exit(failed_rows(main()))
