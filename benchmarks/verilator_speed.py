"""Speed of the ``verilator`` backend beside ``rtl``: simulated cycles per wall second, bus costs, a GAE rollout and
start times, measured in one run.

Both backends simulate the same cores cycle for cycle (``tests/verilator/test_equivalence.py``): ``rtl`` runs the
MyHDL designs clock by clock in Python, ``verilator`` runs their converted Verilog (what Vivado receives) compiled by
Verilator behind a C++ bus harness. What differs is the wall time a simulated cycle costs, which decides whether an
agent can train against the simulated cores at all. Everything runs on the shipped builds of ``spec.BOARDS``:

1. **Cycles per wall second while a core works**: how far the board's clock (``overlay.device.simulation.cycle``)
   advances during driver calls, over their wall time. The work: ``gae.compute`` of ``--gae`` (envs x steps, the
   driver's default q8 codes); ``replay.update`` of ``--replay`` priorities, then ``replay.sample`` of as many;
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
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment, failed_rows, fmt_rate, write_results  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CORES = ("gae", "replay", "parsa")
BOARDS = ("Pynq-Z2", "ZCU106")
START_BOARD = "Pynq-Z2"
MIB = 1 << 20
MOUNTAINCAR = {"tilings": [{"dims": [0, 1], "tilings": 8, "tiles": 8}]}
MOUNTAINCAR_BOUNDS = ([-1.2, -0.07], [0.6, 0.07])
ROLLOUT = (64, 1024)
"""the GAE compute the rollout goal is stated for: (envs, steps)"""
GOALS = {"pynqz2_core[cycles/s]": 500_000, "zcu106[cycles/s]": 100_000, "register[us]": 20.0,
         "rollout[s]": 0.5, "cold_start[s]": 180.0, "cached_start[s]": 2.0}

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
# Work: the driver calls that keep a core busy
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Work:
    """Sizes of the calls that keep each core working."""

    gae: tuple[int, int]
    """gae.compute: (envs, steps)"""
    replay: int
    """replay.update of this many priorities, then replay.sample of as many (up to the build's COUNT limit)"""
    parsa: int
    """parsa.act_batch of this many records"""


def gae_call(overlay, envs: int, steps: int, quantize: bool, seed: int) -> tuple[str, Callable[[], object]]:
    """``gae.compute`` of standard-normal rewards and values with 1% dones."""
    rng = np.random.default_rng(seed)
    rewards = rng.standard_normal((steps, envs)).astype(np.float32)
    values = rng.standard_normal((steps + 1, envs)).astype(np.float32)
    dones = (rng.random((steps, envs)) < 0.01).astype(np.float32)
    gae = overlay.gae
    return (f"gae.compute {envs}x{steps} {'q8' if quantize else 'raw'}",
            lambda: gae.compute(rewards, values, dones, quantize=quantize))


def replay_update_call(overlay, n: int, seed: int) -> tuple[str, Callable[[], object]]:
    """``replay.update`` of ``n`` random indices (repeats allowed) with priorities in [0.01, 1.01)."""
    rng = np.random.default_rng(seed)
    replay = overlay.replay
    indices = rng.integers(0, replay.capacity, n)
    priorities = rng.random(n) + 0.01
    return f"replay.update({n:,})", lambda: replay.update(indices, priorities)


def work_calls(overlay, core: str, work: Work, seed: int) -> list[tuple[str, Callable[[], object]]]:
    """The calls of one round of ``work`` on ``core`` of ``overlay`` (setup done here: ParSa's configure, a first
    replay update so that sampling has priorities)."""
    if core == "gae":
        return [gae_call(overlay, *work.gae, quantize=True, seed=seed)]
    if core == "replay":
        update = replay_update_call(overlay, work.replay, seed)
        replay = overlay.replay
        count = min(work.replay, replay.spec.max_count)
        update[1]()
        return [update, (f"replay.sample({count:,})", lambda: replay.sample(count))]
    parsa = overlay.parsa
    if parsa.config is None:
        parsa.configure(MOUNTAINCAR, 3, MOUNTAINCAR_BOUNDS, alpha=0.3 / 8, epsilon=0.1, frac_bits=6, seed=1)
    rng = np.random.default_rng(seed)
    states = rng.uniform(*MOUNTAINCAR_BOUNDS, (work.parsa, 2))
    rewards = rng.standard_normal(work.parsa)
    return [(f"parsa.act_batch({work.parsa:,})", lambda: parsa.act_batch(states, rewards))]


def describe(work: Work, core: str) -> str:
    """A round of ``work`` on ``core`` (or ``"board"``: the three in turn), in words."""
    parts = {"gae": f"gae.compute {work.gae[0]}x{work.gae[1]}",
             "replay": f"replay.update+sample {work.replay:,}", "parsa": f"parsa.act_batch {work.parsa:,}"}
    return " + ".join(parts.values()) if core == "board" else parts[core]


# ---------------------------------------------------------------------------------------------------------------
# Probes: a workload timed round by round
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Probe:
    """One measured workload: ``calls`` made in turn on ``overlay`` (one round), timed in samples of rounds."""

    row: dict
    overlay: object
    calls: list[tuple[str, Callable[[], object]]]
    rounds: int = 1
    """rounds per sample (calibrated to last ``--min-time``)"""
    call_walls: dict = field(default_factory=dict)
    call_cycles: dict = field(default_factory=dict)


def run_round(probe: Probe) -> tuple[float, int, int]:
    """Wall seconds, board cycles and DMA payload bytes (both ways) of one round of the probe's calls."""
    overlay = probe.overlay
    sim = overlay.device.simulation
    wall, cycles = 0.0, 0
    with overlay.bus_stats() as bus:
        for name, call in probe.calls:
            cycle, start = sim.cycle, time.perf_counter()
            call()
            elapsed, advanced = time.perf_counter() - start, sim.cycle - cycle
            probe.call_walls.setdefault(name, []).append(elapsed)
            probe.call_cycles.setdefault(name, []).append(advanced)
            wall += elapsed
            cycles += advanced
    return wall, cycles, bus.dma_bytes_to_pl + bus.dma_bytes_from_pl


def take_sample(probe: Probe) -> None:
    """Time ``probe.rounds`` rounds; append the sample's rates to the probe's row."""
    row = probe.row
    wall = cycles = nbytes = 0
    for _ in range(probe.rounds):
        w, c, b = run_round(probe)
        wall, cycles, nbytes = wall + w, cycles + c, nbytes + b
    row["samples[cycles/s]"].append(cycles / wall)
    row["samples[s/round]"].append(wall / probe.rounds)
    row["samples[MiB/s]"].append(nbytes / MIB / wall)
    row["cycles_per_round"] = cycles // probe.rounds
    row["bytes_per_round"] = nbytes // probe.rounds


def prepare(probe: Probe, min_time: float) -> None:
    """One unmeasured round (JIT compilation, DMA buffers, parameter registers, catching up); with ``min_time``, a
    second one that calibrates the rounds per sample to last that long."""
    run_round(probe)
    if min_time > 0:
        wall, _, _ = run_round(probe)
        probe.rounds = max(1, math.ceil(min_time / max(wall, 1e-9)))
    probe.call_walls.clear()
    probe.call_cycles.clear()
    probe.row.update({"status": "ok", "rounds_per_sample": probe.rounds, "samples[cycles/s]": [],
                      "samples[s/round]": [], "samples[MiB/s]": []})


def summarize(probe: Probe) -> None:
    """Medians of the samples and of each call's wall time and cycles into the probe's row."""
    row = probe.row
    if not row.get("samples[cycles/s]"):
        return
    for name in ("cycles/s", "s/round", "MiB/s"):
        row[f"median[{name}]"] = statistics.median(row[f"samples[{name}]"])
    row["calls"] = [{"call": name, "median_wall[s]": statistics.median(probe.call_walls[name]),
                     "median_cycles": int(statistics.median(probe.call_cycles[name]))} for name, _ in probe.calls]


def status_of(err: BaseException) -> str:
    """A row's status for an exception: ``unavailable`` where Verilator cannot build here, else ``error``."""
    from pynq_rl.host.backends.verilator_build import VerilatorUnavailable
    kind = "unavailable" if isinstance(err, VerilatorUnavailable) else "error"
    return f"{kind}: {type(err).__name__}: {err}"


def guarded(row: dict, action: Callable[[], object]) -> bool:
    """Run ``action``; on an exception record it in ``row`` (status, traceback) and return False."""
    try:
        action()
        return True
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        row["status"] = status_of(err)
        row["traceback"] = traceback.format_exc(limit=6)
        return False


def interleave(probes: list[Probe], repeats: int, min_time: float) -> None:
    """Prepare every probe, then take ``repeats`` samples of each, the order rotated every repetition."""
    live = [p for p in probes if guarded(p.row, lambda p=p: prepare(p, min_time))]
    for rep in range(repeats):
        shift = rep % max(len(live), 1)
        for probe in live[shift:] + live[:shift]:
            if not guarded(probe.row, lambda probe=probe: take_sample(probe)):
                live.remove(probe)
    for probe in probes:
        summarize(probe)


def slug(board: str) -> str:
    return board.lower().replace("-", "")


def rate_row(backend: str, board: str, cores: str, work_name: str, work: Work) -> dict:
    return {"key": f"rate_{backend}_{slug(board)}_{cores}_{work_name}", "section": "rate", "backend": backend,
            "board": board, "cores": cores, "work": work_name, "round": describe(work, cores), "status": "not run"}


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
        return lambda overlay: [call for i, name in enumerate(names)
                                for call in work_calls(overlay, name, work, args.seed + i)]

    for board in args.boards:
        for cores in (*CORES, "board"):
            names = CORES if cores == "board" else (cores,)
            for work_name, work in (("large", args.work), ("small", args.rtl_work)):
                add(rate_row("verilator", board, cores, work_name, work), None if cores == "board" else names, board,
                    rounds(names, work))
        if board == START_BOARD:
            records = args.stream_bytes // 8
            add({"key": "stream_verilator_pynqz2_replay_update", "section": "stream", "backend": "verilator",
                 "board": board, "transfer": f"replay.update({records:,})", "status": "not run"}, ("replay",), board,
                lambda overlay: [replay_update_call(overlay, records, args.seed)])
            envs, steps = args.work.gae
            add({"key": "stream_verilator_pynqz2_gae_raw", "section": "stream", "backend": "verilator",
                 "board": board, "transfer": f"gae.compute {envs}x{steps} raw", "status": "not run"}, ("gae",), board,
                lambda overlay: [gae_call(overlay, envs, steps, quantize=False, seed=args.seed)])
    return probes, rows


def model_clocks(args: argparse.Namespace) -> list[dict]:
    """Each verilated model's clock rate with idle buses (``VerilatedCore.idle``), interleaved over the models of
    every board, on overlays of their own (the probes' board clocks stay untouched)."""
    from pynq_rl import RLOverlay
    rows, models, overlays = [], [], {}  # the overlays are kept: a released device frees its models
    for board in args.boards:
        for core in CORES:
            row = {"key": f"clock_verilator_{slug(board)}_{core}", "section": "clock", "backend": "verilator",
                   "board": board, "cores": core, "status": "not run"}
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


def register_accesses(overlay) -> dict[str, Callable[[], object]]:
    """One register access each, on the GAE core of ``overlay``: PYNQ's ``MMIO.read`` of STATUS, ``MMIO.write`` of
    GAMMA's own value back (no state changes), and the drivers' index into ``mmio.array``."""
    from pynq_rl.overlay import spec as S
    gae = overlay.gae
    status = S.GAE_REGISTERS["STATUS"]["address_offset"]
    gamma = S.GAE_REGISTERS["GAMMA"]["address_offset"]
    value = gae.mmio.read(gamma)
    array, word = gae.mmio.array, status >> 2
    return {"mmio.read": lambda: gae.mmio.read(status), "mmio.write": lambda: gae.mmio.write(gamma, value),
            "mmio.array[i]": lambda: int(array[word])}


def measure_registers(backends: dict[str, object], samples: int, accesses: int) -> list[dict]:
    """Median microseconds per access over ``samples`` samples of ``accesses`` back-to-back accesses, interleaved
    over ``backends`` (name -> overlay) and access kinds; also the simulated cycles per access."""
    items = []
    for backend, overlay in backends.items():
        for access, call in register_accesses(overlay).items():
            row = {"key": f"register_{backend}_{access.split('.')[-1].replace('[i]', '_index')}",
                   "section": "register", "backend": backend, "board": overlay.board_spec.name, "access": access,
                   "register": "STATUS" if "write" not in access else "GAMMA", "status": "ok",
                   "accesses_per_sample": accesses, "samples[us]": [], "cycles_per_access": 0.0}
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
        overlays = {"emu": RLOverlay(backend="emu", board=START_BOARD, cores=("gae",)),
                    "verilator": RLOverlay(backend="verilator", board=START_BOARD, cores=("gae",))}
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
        return [({"key": "register_rtl", "section": "register", "backend": "rtl", "status": "not run"},
                 lambda overlay: measure_registers({"rtl": overlay}, args.rtl_register_samples,
                                                   args.rtl_register_accesses))]
    records = args.rtl_stream_bytes // 8
    stream = {"key": "stream_rtl_pynqz2_replay_update", "section": "stream", "backend": "rtl", "board": board,
              "transfer": f"replay.update({records:,})", "status": "not run"}

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
                calls = [call for i, name in enumerate(names)
                         for call in work_calls(held[0], name, args.rtl_work, args.seed + i)]
                measure_probe(Probe(row, held[0], calls), args.rtl_repeats)

            guarded(row, run)
            for placeholder, measure in riders:
                if not held:
                    placeholder["status"] = row["status"]
                    continue
                got: list[dict] = []
                if guarded(placeholder, lambda measure=measure: got.extend(measure(held[0]))):
                    index = rows.index(placeholder)
                    rows[index:index + 1] = got
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
    proc = subprocess.run([sys.executable, "-c", START_CHILD, backend, board, "1" if breakdown else "0"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=3600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the {backend} start exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return {"wall[s]": wall, **json.loads(proc.stdout.strip().splitlines()[-1])}


def measure_starts(args: argparse.Namespace) -> list[dict]:
    """Cold (optional) and cached verilator starts and rtl starts of the Pynq-Z2 overlay, the latter two
    interleaved."""
    cold = {"key": "start_verilator_cold", "section": "start", "backend": "verilator", "board": START_BOARD,
            "start": "cold", "status": "unavailable: not run (--no-cold)"}
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
    cached = {"key": "start_verilator_cached", "section": "start", "backend": "verilator", "board": START_BOARD,
              "start": "cached", "status": "ok", "samples": []}
    rtl = {"key": "start_rtl", "section": "start", "backend": "rtl", "board": START_BOARD, "start": "elaborate",
           "status": "ok", "samples": []}
    plan = [(cached, "verilator", args.start_repeats, "--start-repeats 0"),
            (rtl, "rtl", 0 if args.no_rtl else args.rtl_start_repeats,
             "--no-rtl" if args.no_rtl else "--rtl-start-repeats 0")]
    for row, backend, repeats, flag in plan:
        if repeats < 1:
            row["status"] = f"unavailable: not run ({flag})"
        elif backend == "verilator":  # an unmeasured start first: it fills a cache that is not warm
            guarded(row, lambda row=row: row.update(warmup=start_process("verilator", START_BOARD, False)))
    for rep in range(max(repeats for _, _, repeats, _ in plan)):
        for row, backend, repeats, _ in plan:
            if rep < repeats and row["status"] == "ok":
                guarded(row, lambda row=row, backend=backend: row["samples"].append(
                    start_process(backend, START_BOARD, False)))
    for row, _, _, _ in plan:
        if row["status"] == "ok" and row["samples"]:
            for name in row["samples"][0]:
                if name.endswith("[s]"):
                    row[f"median_{name}"] = statistics.median(s[name] for s in row["samples"])
    return [cold, cached, rtl]


# ---------------------------------------------------------------------------------------------------------------
# Derived figures and goals
# ---------------------------------------------------------------------------------------------------------------

def find(rows: list[dict], key: str) -> dict | None:
    return next((row for row in rows if row["key"] == key), None)


def measured(row: dict | None, name: str) -> float | None:
    return None if row is None or row.get("status") != "ok" else row.get(name)


def derive(rows: list[dict], args: argparse.Namespace) -> list[dict]:
    """Ratios verilator / rtl (same calls; streams; register costs) and the GAE rollout rows."""
    for row in rows:
        if row["section"] == "rate" and row["backend"] == "rtl":
            same = find(rows, f"rate_verilator_{slug(row['board'])}_{row['cores']}_small")
            v, r = measured(same, "median[cycles/s]"), measured(row, "median[cycles/s]")
            if v is not None and r is not None:
                row["ratio_verilator_over_rtl"] = same["ratio_verilator_over_rtl"] = v / r
        if row["section"] == "register" and row["backend"] == "rtl":
            same = find(rows, row["key"].replace("_rtl_", "_verilator_"))
            v, r = measured(same, "median[us]"), measured(row, "median[us]")
            if v is not None and r is not None:
                row["ratio_rtl_over_verilator"] = same["ratio_rtl_over_verilator"] = r / v
    v_stream = find(rows, "stream_verilator_pynqz2_replay_update")
    r_stream = find(rows, "stream_rtl_pynqz2_replay_update")
    v, r = measured(v_stream, "median[MiB/s]"), measured(r_stream, "median[MiB/s]")
    if v is not None and r is not None:
        r_stream["ratio_verilator_over_rtl"] = v_stream["ratio_verilator_over_rtl"] = v / r
    gae = find(rows, "rate_verilator_pynqz2_gae_large")
    envs, steps = args.work.gae
    rollout = {"key": "rollout_verilator_pynqz2", "section": "rollout", "backend": "verilator", "board": START_BOARD,
               "size": f"{envs}x{steps}", "status": gae["status"] if gae else "not run"}
    if measured(gae, "median[s/round]") is not None:
        rollout.update({"median[s]": gae["median[s/round]"], "samples[s]": gae["samples[s/round]"],
                        "cycles": gae["cycles_per_round"], "source": gae["key"]})
    rtl_gae = find(rows, "rate_rtl_pynqz2_gae_small")
    rtl_rollout = {"key": "rollout_rtl_pynqz2", "section": "rollout", "backend": "rtl", "board": START_BOARD,
                   "size": f"{envs}x{steps}", "status": "ok"}
    rate = measured(rtl_gae, "median[cycles/s]")
    if rate is None:
        rtl_rollout["status"] = rtl_gae["status"] if rtl_gae else "unavailable: not run"
    elif "cycles" not in rollout:
        rtl_rollout["status"] = f"unavailable: no verilator cycle count to scale ({rollout['status']})"
    else:
        rtl_rollout.update({"estimated[s]": rollout["cycles"] / rate, "cycles": rollout["cycles"],
                            "measured_size": "x".join(map(str, args.rtl_work.gae)),
                            "measured_median[s]": rtl_gae["median[s/round]"], "source": rtl_gae["key"]})
    return rows + [rollout, rtl_rollout]


def goal(name: str, text: str, value: float | None, limit: float, at_least: bool, unit: str, where: str = "",
         why_not: str = "") -> dict:
    """One goal: the measured ``value`` against ``limit`` (``at_least``: value >= limit, else value <= limit)."""
    met = None if value is None else (value >= limit if at_least else value <= limit)

    def show(x: float) -> str:
        return f"{fmt_rate(x)} {unit}" if unit == "cycles/s" else f"{x:.3g} {unit}"

    bound = f"{'>=' if at_least else '<='} {show(limit)}"
    if met is None:
        line = f"{text}: goal {bound}: not measured" + (f" ({why_not})" if why_not else "") + "."
    else:
        line = f"{text}: **{show(value)}**{where} (goal {bound}): " + ("**met**." if met else "**NOT met**.")
    return {"goal": name, "value": value, "limit": limit, "at_least": at_least, "unit": unit, "met": met,
            "text": line}


def worst(rows: list[dict], keys: list[str], name: str, lowest: bool) -> tuple[float | None, str]:
    """The lowest (``lowest``) or highest ``name`` over the rows ``keys`` and where it is; None if any is missing."""
    found = [(measured(find(rows, key), name), key) for key in keys]
    if not found or any(value is None for value, _ in found):
        return None, ""
    value, key = (min if lowest else max)(found)
    return value, f" (worst: `{key}`)"


def goals(rows: list[dict], args: argparse.Namespace) -> list[dict]:
    """Every goal of the module docstring, evaluated on this run's rows."""
    z2 = worst(rows, [f"rate_verilator_pynqz2_{c}_large" for c in CORES], "median[cycles/s]", True)
    zcu = worst(rows, [f"rate_verilator_zcu106_{c}_large" for c in (*CORES, "board")], "median[cycles/s]", True)
    register = worst(rows, ["register_verilator_read", "register_verilator_write"], "median[us]", False)
    rollout, cold, cached = (find(rows, key) for key in ("rollout_verilator_pynqz2", "start_verilator_cold",
                                                         "start_verilator_cached"))
    at_size = tuple(args.work.gae) == ROLLOUT
    return [
        goal("pynqz2_cores", "Pynq-Z2 cores alone on verilator while working, the slowest", z2[0],
             GOALS["pynqz2_core[cycles/s]"], True, "cycles/s", z2[1], "a Pynq-Z2 core's row is missing"),
        goal("zcu106", "ZCU106 build on verilator while working (each core alone, the whole board), the slowest",
             zcu[0], GOALS["zcu106[cycles/s]"], True, "cycles/s", zcu[1], "a ZCU106 row is missing"),
        goal("register", "one register access from Python on verilator (PYNQ MMIO read or write), the slower median",
             register[0], GOALS["register[us]"], False, "us", register[1], "no verilator register rows"),
        goal("rollout", f"gae.compute of {ROLLOUT[0]} envs x {ROLLOUT[1]:,} steps on the Pynq-Z2 build "
                        "(verilator, q8), median wall", measured(rollout, "median[s]") if at_size else None,
             GOALS["rollout[s]"], False, "s",
             why_not=rollout["status"] if at_size else f"this run's --gae is {args.work.gae[0]}x{args.work.gae[1]}"),
        goal("cold_start", "cold start: an empty cache, the Pynq-Z2 board's three cores converted and built, in a "
                           "fresh process", measured(cold, "wall[s]"), GOALS["cold_start[s]"], False, "s",
             why_not=cold["status"]),
        goal("cached_start", "cached start: the warm cache, a fresh process, median",
             measured(cached, "median_wall[s]"), GOALS["cached_start[s]"], False, "s", why_not=cached["status"]),
    ]


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------

def _rate(row: dict | None) -> str:
    value = measured(row, "median[cycles/s]")
    if value is None:
        return "" if row is None or row["status"] == "ok" else _short_status(row["status"])
    return fmt_rate(value)


def _short_status(status: str) -> str:
    """``not run (--flag)`` for a row skipped by an option, else the status's first word (``error``...)."""
    return status.partition(": ")[2] if status.startswith("unavailable: not run") else status.split(":")[0]


def _spread(row: dict | None, name: str = "cycles/s") -> str:
    samples = (row or {}).get(f"samples[{name}]") or []
    return f"{fmt_rate(min(samples))}-{fmt_rate(max(samples))}" if samples else ""


def _ratio(row: dict | None, name: str) -> str:
    value = (row or {}).get(name)
    return "" if value is None else f"{value:,.0f}x" if value >= 10 else f"{value:.3g}x"


def rate_table(rows: list[dict]) -> list[str]:
    lines = ["| board | cores | verilator: round | cycles/s (median) | min-max | rtl-size round | verilator "
             "cycles/s | rtl cycles/s | verilator / rtl | model clock, idle buses |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for board in BOARDS:
        for cores in (*CORES, "board"):
            large = find(rows, f"rate_verilator_{slug(board)}_{cores}_large")
            small = find(rows, f"rate_verilator_{slug(board)}_{cores}_small")
            rtl = find(rows, f"rate_rtl_{slug(board)}_{cores}_small")
            clocks = [find(rows, f"clock_verilator_{slug(board)}_{c}") for c in ((cores,) if cores != "board"
                                                                                 else CORES)]
            clock = " / ".join(_rate(c) for c in clocks if c is not None)
            rates = [measured(c, "median[cycles/s]") for c in clocks]
            if cores == "board" and rates and None not in rates:  # every model ticks every board cycle
                clock += f"; together {fmt_rate(1 / sum(1 / r for r in rates))}"
            if large is None:
                continue
            lines.append(f"| {board} | {'all three, in turn' if cores == 'board' else cores} | {large['round']} | "
                         f"{_rate(large)} | {_spread(large)} | {(small or {}).get('round', '')} | {_rate(small)} | "
                         f"{_rate(rtl)} | "
                         f"{_ratio(rtl, 'ratio_verilator_over_rtl')} | {clock} |")
    return lines


def register_table(rows: list[dict]) -> list[str]:
    lines = ["| backend | access | median us / access | min-max us | simulated cycles / access | rtl / verilator |",
             "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        if row["section"] != "register":
            continue
        if row["status"] != "ok":
            lines.append(f"| {row.get('backend', row['key'])} | | {row['status']} | | | |")
            continue
        samples = row["samples[us]"]
        lines.append(f"| {row['backend']} ({row['board']}) | `{row['access']}` ({row['register']}) | "
                     f"{row['median[us]']:.3g} | {min(samples):.3g}-{max(samples):.3g} | "
                     f"{row['cycles_per_access']:.3g} | {_ratio(row, 'ratio_rtl_over_verilator')} |")
    return lines


def stream_table(rows: list[dict]) -> list[str]:
    lines = ["| backend | transfer (Pynq-Z2) | payload bytes (DMA, both ways) | median wall [s] | MiB/s | min-max "
             "MiB/s | simulated cycles | bytes / cycle | verilator / rtl |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        if row["section"] != "stream":
            continue
        if measured(row, "median[MiB/s]") is None:
            lines.append(f"| {row['backend']} | {row.get('transfer', '')} | {row['status']} | | | | | | |")
            continue
        samples = row["samples[MiB/s]"]
        lines.append(f"| {row['backend']} | {row['transfer']} | {row['bytes_per_round']:,} | "
                     f"{row['median[s/round]']:.3g} | {row['median[MiB/s]']:.3g} | "
                     f"{min(samples):.3g}-{max(samples):.3g} | {row['cycles_per_round']:,} | "
                     f"{row['bytes_per_round'] / max(row['cycles_per_round'], 1):.3g} | "
                     f"{_ratio(row, 'ratio_verilator_over_rtl')} |")
    return lines


def rollout_table(rows: list[dict], fclk_mhz: float) -> list[str]:
    lines = ["| backend | gae.compute (Pynq-Z2, q8) | wall [s] | simulated cycles | the board's time at "
             f"{fclk_mhz:g} MHz |", "|---|---|---:|---:|---:|"]
    v, r = find(rows, "rollout_verilator_pynqz2"), find(rows, "rollout_rtl_pynqz2")
    if measured(v, "median[s]") is not None:
        lines.append(f"| verilator | {v['size']} | {v['median[s]']:.3g} (median; {min(v['samples[s]']):.3g}-"
                     f"{max(v['samples[s]']):.3g}) | {v['cycles']:,} | {v['cycles'] / fclk_mhz / 1e3:.3g} ms |")
    else:
        lines.append(f"| verilator | {v['size']} | {v['status']} | | |")
    if measured(r, "estimated[s]") is not None:
        estimate = r["estimated[s]"]
        shown = f"{estimate:,.0f}" if estimate >= 100 else f"{estimate:.3g}"
        lines.append(f"| rtl | {r['size']} | ~{shown} (estimate: those cycles at rtl's rate measured on "
                     f"{r['measured_size']}, {r['measured_median[s]']:.3g} s a call) | {r['cycles']:,} | |")
    else:
        lines.append(f"| rtl | {r['size']} | {r['status']} | | |")
    return lines


def start_table(rows: list[dict]) -> list[str]:
    lines = ["| start (Pynq-Z2, all three cores, fresh process) | wall [s] | parts [s] |", "|---|---:|---|"]
    for key in ("start_verilator_cold", "start_verilator_cached", "start_rtl"):
        row = find(rows, key)
        label = {"start_verilator_cold": "verilator, cold (empty cache)",
                 "start_verilator_cached": "verilator, cached (median)", "start_rtl": "rtl (median)"}[key]
        if row["status"] != "ok":
            lines.append(f"| {label} | {row['status']} | |")
            continue
        if key.endswith("cold"):
            parts = ", ".join(f"{c} convert {row[f'{c}_convert[s]']:.1f} + build {row[f'{c}_build[s]']:.1f}"
                              for c in CORES)
            lines.append(f"| {label} | {row['wall[s]']:.1f} | import {row['import[s]']:.2f}; {parts}; overlay "
                         f"{row['overlay[s]']:.2f} |")
        else:
            walls = [s["wall[s]"] for s in row["samples"]]
            lines.append(f"| {label} | {row['median_wall[s]']:.2f} ({min(walls):.2f}-{max(walls):.2f}, "
                         f"{len(walls)} starts) | import {row['median_import[s]']:.2f}, overlay "
                         f"{row['median_overlay[s]']:.2f}, the rest interpreter start and exit |")
    return lines


def markdown(result: dict) -> str:
    env, args, info, rows = result["environment"], result["arguments"], result["info"], result["rows"]
    lines = [
        "# The verilator backend's speed, beside rtl",
        "",
        f"`benchmarks/verilator_speed.py` on {env['date']}, commit `{env['git_commit']}` ({env['git_describe']}); "
        f"{env['processor']}, {env['cpu_count']} CPUs (shared: 1-min load {env['loadavg_1min_at_start']:.2f} at "
        f"the start); Python {env['python']}, numpy {env['numpy']}, Verilator "
        f"{info.get('verilator', 'unavailable')}, MyHDL {info['myhdl']}, pynq {info['pynq']}. Shipped builds of "
        f"`spec.BOARDS`; verilator figures are "
        f"medians of {args['repeats']} interleaved repetitions (each >= {args['min_time']} s of back-to-back "
        f"rounds), rtl figures of {args['rtl_repeats']} rounds after one unmeasured. The run took "
        f"{result['wall[s]']:.0f} s (" + ", ".join(f"{name[:-3]} {value:.0f} s" for name, value in
                                                 info["phase_wall"].items()) + ").",
        "",
        "## Goals",
        "",
        *[f"- {g['text']}" for g in result["goals"]],
        "",
        "## Simulated cycles per wall second while working",
        "",
        "The board's clock advanced by the round's driver calls, over their wall time (host-side encoding and "
        "decoding included). verilator / rtl compares the same rtl-size round on both. The last column is each "
        "verilated model's own clock with idle buses (the C++ loop alone, no Python per call): the ceiling a core's "
        "rate approaches; for the whole board gae / replay / parsa and, since every model ticks every board cycle "
        "whichever core works, the rate of the three together (1 / the sum of 1 / each).",
        "",
        *rate_table(rows),
        "",
        "## One register access from Python",
        "",
        f"GAE core of the Pynq-Z2 build; median of {args['register_samples']} samples of "
        f"{args['register_accesses']} back-to-back accesses (rtl: {args['rtl_register_samples']} of "
        f"{args['rtl_register_accesses']}), interleaved. `mmio.read` / `mmio.write` are PYNQ's `MMIO` calls; "
        "`mmio.array[i]` is the drivers' own path. emu is the host-side floor (no simulated cycles).",
        "",
        *register_table(rows),
        "",
        "## Streams",
        "",
        "Payload bytes through the DMAs (`RLOverlay.bus_stats`: into and out of the core) over the call's wall "
        "time; the simulated cycles include the core's own work, so bytes / cycle is below the stream's width "
        "(8 bytes a beat on the Pynq-Z2 build) where the core takes more than a cycle per record.",
        "",
        *stream_table(rows),
        "",
        "## GAE rollout",
        "",
        "The verilator time is the Pynq-Z2 GAE core's large round above (same calls).",
        "",
        *rollout_table(rows, info["fclk_mhz"][START_BOARD]),
        "",
        "## Start",
        "",
        "`RLOverlay(backend=..., board=\"Pynq-Z2\")` in a fresh Python process, timed from the parent. Cold: "
        "`PYNQ_RL_VERILATOR_CACHE` an empty temporary directory (removed afterwards), each core's conversion to "
        "Verilog and its Verilator + C++ build timed apart, in that order, then the overlay from the filled cache.",
        "",
        *start_table(rows),
        "",
        "## Notes",
        "",
        "- Whole-board rows: a verilated core idles up to the board's clock before it acts, so while one core works "
        "the others stand still and catch up at their next call; a round of all three pays every model's ticks.",
        "- The machine is shared: compare rows within one run; the min-max columns and the samples in the JSON "
        "show the spread.",
        f"- Verilator model cache: `{info.get('cache_root', '')}`.",
    ]
    calls = [(row["key"], c) for row in rows if row.get("calls") and row.get("cores") == "board"
             and row.get("work") == "large" for c in row["calls"]]
    if calls:
        lines.append("- Whole-board rounds, per call (median wall, board cycles advanced; the wall includes the "
                     "called core catching up): " + "; ".join(
                         f"`{key}` {c['call']}: {c['median_wall[s]'] * 1e3:.3g} ms, {c['median_cycles']:,}"
                         for key, c in calls) + ".")
    return "\n".join(lines) + "\n"


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
    info = {"myhdl": myhdl.__version__, "pynq": pynq.__version__, "cache_root": str(verilator_build.cache_root()),
            "fclk_mhz": {board: S.board(board).fclk_mhz for board in BOARDS},
            "builds": {board: {slot.name: repr(slot.spec) for slot in S.board(board).cores} for board in BOARDS}}
    try:
        info["verilator"] = verilator_build.find_verilator().version
    except verilator_build.VerilatorUnavailable as err:
        info["verilator_unavailable"] = str(err)
    return info


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--gae", type=parse_size, default="64x1024", help="verilator gae.compute size (envs x steps)")
    parser.add_argument("--replay", type=positive, default=16384, help="verilator replay update+sample size")
    parser.add_argument("--parsa", type=positive, default=2048, help="verilator parsa.act_batch records")
    parser.add_argument("--rtl-gae", type=parse_size, default="8x32", help="rtl (and verilator's same-call) gae size")
    parser.add_argument("--rtl-replay", type=positive, default=64, help="rtl replay update+sample size")
    parser.add_argument("--rtl-parsa", type=positive, default=16, help="rtl parsa.act_batch records")
    parser.add_argument("--stream-bytes", type=positive, default=MIB, help="verilator replay.update payload bytes")
    parser.add_argument("--rtl-stream-bytes", type=positive, default=16384, help="rtl replay.update payload bytes")
    parser.add_argument("--boards", type=parse_boards, default="Pynq-Z2,ZCU106", help="verilator boards")
    parser.add_argument("--rtl-boards", type=parse_boards, default="Pynq-Z2,ZCU106",
                        help="boards whose cores rtl runs alone")
    parser.add_argument("--rtl-whole-boards", type=parse_boards, default="Pynq-Z2",
                        help="boards rtl runs whole (the ZCU106's, ~70 cycles/s with its 64-lane GAE, takes minutes)")
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
    result = {"benchmark": "verilator_speed", "environment": environment(), "info": info, "arguments": arguments,
              "goals_set": GOALS, "rows": rows, "goals": goals(rows, args), "wall[s]": None}
    result["wall[s]"] = round(time.perf_counter() - started, 1)
    write_results(args.out, "verilator", result, markdown(result))
    return result


if __name__ == "__main__":
    sys.exit(failed_rows(main()))
