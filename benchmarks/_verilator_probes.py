"""Probes of ``benchmarks/verilator_speed.py``: a workload (driver calls on one overlay) timed round by round.

A probe's row collects samples of simulated cycles per wall second, seconds per round and DMA MiB/s; probes are
prepared (one unmeasured round, the rounds per sample calibrated to a minimum time), then sampled in interleaved
repetitions so a noisy neighbour slows all of them alike, and summarized as medians. A probe that raises records
its status and traceback in its row instead of ending the run.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

MIB = 1 << 20


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
    probe.row.update(
        {
            "status": "ok",
            "rounds_per_sample": probe.rounds,
            "samples[cycles/s]": [],
            "samples[s/round]": [],
            "samples[MiB/s]": [],
        }
    )


def summarize(probe: Probe) -> None:
    """Medians of the samples and of each call's wall time and cycles into the probe's row."""
    row = probe.row
    if not row.get("samples[cycles/s]"):
        return
    for name in ("cycles/s", "s/round", "MiB/s"):
        row[f"median[{name}]"] = statistics.median(row[f"samples[{name}]"])
    row["calls"] = [
        {
            "call": name,
            "median_wall[s]": statistics.median(probe.call_walls[name]),
            "median_cycles": int(statistics.median(probe.call_cycles[name])),
        }
        for name, _ in probe.calls
    ]


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
