"""State->action and update latency of the ParSa core for the OPaL policy shape, measured in the cycle-accurate MyHDL
simulation (the ``rtl`` backend's engine).

The OPaL DDoS policy: 20 state dimensions, a bias set + 7 one-dimensional + 8 two-dimensional + 1 four-dimensional
tiling sets, 8 tilings per set (136 tilings), 6 tiles per dimension, 10 actions. For WORKERS = 1, 4, 8, 16, 32 a core
with exactly that shape (max_dims 20, max_actions 10, value 16 bits; banks just big enough for the busiest worker,
2 keys: the cycle counts do not depend on bank depth or keys) is simulated: CONFIG with the heaviest-first schedule,
then an ACT batch of two state records for one key (the second carries a reward, so it runs the Sarsa update).
Each row reports the core's own counters, read back over AXI-Lite:

* ``act[cyc]`` = CYCLES_ACT, from the state record's last beat to its action record (n_dims + busiest + act_depth),
* ``update[cyc]`` = CYCLES_UPDATE of the second record (busiest + update_depth),
* ``record[cyc]``: the state record's beats at one 64-bit beat per cycle (1 + n_dims / 2),
* ``state->action[cyc]`` = record + act + 1 (the action record's beat): the core's latency from the first beat of a
  state to the beat of its action,

and the time of these cycle counts at each board's PL clock (spec.BOARDS fclk; arithmetic on measured cycles, not a
board measurement). The measured counters are checked against the ParsaSpec formulas.

``--formula 1,16,32`` computes those worker counts from the formulas instead of simulating them (the ``source``
column says which): the formulas are the ones the RTL tests (``tests/parsa/test_rtl.py``) hold the hardware
counters to, and the simulated rows check them again on this shape; a large build simulates slowly on CPython.

Each simulated build then makes one decision through the register mailbox (MAILBOX: the state record written into
the register window, START, MBOX_ACTION read; no DMA), as the driver's ``act()`` does: its bus accesses, its cycles
from the first write to the answer, and the core's own CYCLES of it (the mailbox's goal: at most state words + 4 bus
accesses plus the core's cycles).

Run: ``python benchmarks/parsa_cycles.py [--out benchmarks/results] [--workers 1,4,8,16,32] [--formula ...]`` (all
five simulated: about 10 minutes on CPython). The goal line is for the ZCU106 build's worker count (``spec.BOARDS``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import subprocess
import time
from pathlib import Path

import numpy as np

from pynq_rl.host.backends.rtl import RtlCoreIP, RtlSimulation
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as M

N_DIMS, N_ACTIONS, TILINGS, TILES = 20, 10, 8, 6
#: OPaL's measured median state->action latency on its NIC (microseconds), for comparison
OPAL_MEDIAN_US = 34.0


def opal_layout() -> M.TilingLayout:
    """Bias + 7 x 1-D + 8 x 2-D + 1 x 4-D tiling sets over 20 dimensions, 8 tilings each, 6 tiles per dimension."""
    sets = [M.TilingSet((), TILINGS, TILES)]
    sets += [M.TilingSet((d,), TILINGS, TILES) for d in range(7)]
    sets += [M.TilingSet((7 + 2 * j, 8 + 2 * j), TILINGS, TILES) for j in range(6)]
    sets += [M.TilingSet((0, 19), TILINGS, TILES), M.TilingSet((1, 18), TILINGS, TILES)]
    sets += [M.TilingSet((2, 3, 4, 5), TILINGS, TILES)]
    return M.TilingLayout(tuple(sets), N_DIMS)


def build_for(workers: int) -> tuple[S.ParsaSpec, list[M.Descriptor]]:
    """The smallest build of ``workers`` workers that holds the OPaL layout, and its schedule."""
    layout = opal_layout()
    loose = S.ParsaSpec(
        max_dims=N_DIMS, max_actions=N_ACTIONS, workers=workers, tiles_per_worker=1 << 20, max_tilings=1024, keys=2
    )
    descriptors = M.schedule(layout, loose)
    rows = max(sum(d.rows for d in descriptors if d.worker == w) for w in range(workers))
    tilings = max(sum(d.worker == w for d in descriptors) for w in range(workers))
    spec = dataclasses.replace(loose, tiles_per_worker=1 << (rows - 1).bit_length(), max_tilings=tilings)
    return spec, M.schedule(layout, spec)


def _offset(name: str) -> int:
    return S.PARSA_REGISTERS[name]["address_offset"]


def _operation(ip: RtlCoreIP, sim: RtlSimulation, regs: dict, mode: int, words: np.ndarray) -> None:
    for name, value in regs.items():
        ip.write(_offset(name), int(value) & 0xFFFF_FFFF)
    ip.write(_offset("CTRL"), int(mode) << 2 | int(S.Ctrl.START))
    stream = np.asarray(words, dtype="<u8").view(np.uint8)
    sent = 0
    for _ in range(100_000):
        if sent < len(stream):
            sent += ip.stream_in(stream[sent:], last=True)
        ip.stream_out(1 << 20)
        if ip.read(_offset("STATUS")) & S.Status.DONE:
            return
    raise TimeoutError("the core did not finish")


def measure(workers: int, seed: int = 0) -> dict:
    """Simulate CONFIG + one ACT batch on a ``workers``-worker build of the OPaL shape; return its counters."""
    spec, descriptors = build_for(workers)
    board = dataclasses.replace(S.board(None), cores=(S.CoreSlot("parsa", spec, 0x4_0000, 0x5_0000),))
    rng = np.random.default_rng(seed)
    offsets, scales = M.dimension_codes(np.full(N_DIMS, -1.0), np.full(N_DIMS, 1.0))
    config = np.concatenate([M.pack_dimensions(offsets, scales), M.pack_descriptors(descriptors)])
    states = M.pack_states([0, 0], [0, 1], [0, 1000], rng.integers(-1 << 16, 1 << 16, (2, N_DIMS)), N_DIMS).ravel()
    busiest = max(sum(d.worker == w for d in descriptors) for w in range(workers))
    wall = time.perf_counter()
    sim = RtlSimulation(board)
    try:
        ip = RtlCoreIP(sim, "parsa", spec, S.PARSA_REGISTERS)
        _operation(
            ip,
            sim,
            {
                "N_DIMS": N_DIMS,
                "N_ACTIONS": N_ACTIONS,
                "N_TILINGS": len(descriptors),
                "ALPHA": 1 << 12,
                "GAMMA": 62259,
                "EPSILON": 0,
                "OPTIONS": 1,
            },
            S.ParsaMode.CONFIG,
            config,
        )
        status = ip.read(_offset("STATUS"))
        if status != S.Status.DONE:
            raise RuntimeError(f"CONFIG refused: STATUS {S.Status(status)!r}")
        _operation(ip, sim, {}, S.ParsaMode.ACT, states)
        counters = {name: ip.read(_offset(name)) for name in ("STATUS", "CYCLES", "CYCLES_ACT", "CYCLES_UPDATE")}
        mailbox = _mailbox_decision(ip, sim, rng)
        cycles_simulated = sim.cycle
    finally:
        sim.end("benchmark finished")
    if (
        counters["CYCLES_ACT"] != N_DIMS + busiest + spec.act_depth
        or counters["CYCLES_UPDATE"] != busiest + spec.update_depth
    ):
        raise RuntimeError(f"counters {counters} disagree with the ParsaSpec formulas (busiest {busiest})")
    record = spec.state_record_words(N_DIMS)
    return {
        "workers": workers,
        "tilings": len(descriptors),
        "busiest_tilings": busiest,
        "busiest_rows": max(sum(d.rows for d in descriptors if d.worker == w) for w in range(workers)),
        "tiles": opal_layout().n_tiles,
        "record[cyc]": record,
        "act[cyc]": counters["CYCLES_ACT"],
        "update[cyc]": counters["CYCLES_UPDATE"],
        "state->action[cyc]": record + counters["CYCLES_ACT"] + 1,
        "act+update[cyc]": counters["CYCLES_ACT"] + counters["CYCLES_UPDATE"],
        "batch CYCLES": counters["CYCLES"],
        **mailbox,
        "sim[s]": round(time.perf_counter() - wall, 1),
        "sim cycles": cycles_simulated,
    }


def _mailbox_decision(ip: RtlCoreIP, sim: RtlSimulation, rng: np.random.Generator) -> dict:
    """One MAILBOX decision for key 0 with a reward (so its Sarsa update runs), as the driver makes it: the window
    burst (2 + N_DIMS words), START, MBOX_ACTION read until DONE (the core holds the read while it decides).
    Returns its bus accesses, its simulated cycles from the first write to the answer, the core's CYCLES, and what
    one plain register read and write cost this AXI-Lite master (the bus cycles of an access)."""
    fields = S.PARSA_REGISTERS["MBOX_ACTION"]["fields"]
    done = 1 << fields["DONE"]["bit_offset"]
    window = M.mailbox_window(0, int(S.ParsaFlag.REWARD), 500, rng.integers(-1 << 16, 1 << 16, N_DIMS))
    start = sim.cycle
    for name, word in zip(S.PARSA_MBOX_WINDOW, window):
        ip.write(_offset(name), int(word))
    ip.write(_offset("CTRL"), int(S.ParsaMode.MAILBOX) << 2 | int(S.Ctrl.START))
    result, reads = ip.read(_offset("MBOX_ACTION")), 1
    while not result & done:
        result, reads = ip.read(_offset("MBOX_ACTION")), reads + 1
    cycles = sim.cycle - start
    core = ip.read(_offset("CYCLES"))
    if ip.read(_offset("CYCLES_UPDATE")) == 0 or result & (1 << fields["ERR_CONFIG"]["bit_offset"]):
        raise RuntimeError(f"the mailbox decision did not learn or was refused (MBOX_ACTION {result:#x})")
    start = sim.cycle
    ip.read(_offset("ID"))
    read_cycles = sim.cycle - start
    start = sim.cycle
    ip.write(_offset("REWARD_KEY"), 0)
    write_cycles = sim.cycle - start
    accesses = len(window) + 1 + reads
    return {
        "mailbox accesses": accesses,
        "mailbox[cyc]": cycles,
        "mailbox CYCLES": core,
        "mailbox bus[cyc]": cycles - core,
        "access[cyc]": max(read_cycles, write_cycles),
        "mailbox goal met": accesses <= N_DIMS + 4 and cycles - core <= accesses * max(read_cycles, write_cycles) + 1,
    }


def from_formula(workers: int) -> dict:
    """The same row from the ParsaSpec formulas (CYCLES_ACT = n_dims + busiest + act_depth, CYCLES_UPDATE = busiest
    + update_depth) and the schedule, without simulating."""
    spec, descriptors = build_for(workers)
    busiest = max(sum(d.worker == w for d in descriptors) for w in range(workers))
    record, act, update = (
        spec.state_record_words(N_DIMS),
        N_DIMS + busiest + spec.act_depth,
        busiest + spec.update_depth,
    )
    return {
        "workers": workers,
        "tilings": len(descriptors),
        "busiest_tilings": busiest,
        "busiest_rows": max(sum(d.rows for d in descriptors if d.worker == w) for w in range(workers)),
        "tiles": opal_layout().n_tiles,
        "record[cyc]": record,
        "act[cyc]": act,
        "update[cyc]": update,
        "state->action[cyc]": record + act + 1,
        "act+update[cyc]": act + update,
        "batch CYCLES": 2 * (record + act) + update,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--workers", default="1,4,8,16,32", help="worker counts to simulate")
    parser.add_argument("--formula", default="", help="worker counts to compute from the formulas instead")
    args = parser.parse_args(argv)
    rows = [{**measure(int(w)), "source": "rtl"} for w in args.workers.split(",") if w]
    rows += [{**from_formula(int(w)), "source": "formula"} for w in args.formula.split(",") if w]
    rows.sort(key=lambda r: r["workers"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    clocks = {name: board.fclk_mhz for name, board in S.BOARDS.items()}
    stamp = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "parsa.json").write_text(
        json.dumps(
            {"commit": commit, "date": stamp, "fclk[mhz]": clocks, "opal_median[us]": OPAL_MEDIAN_US, "rows": rows},
            indent=1,
        )
    )
    spec = S.ParsaSpec()
    lines = [
        "# ParSa core latency for the OPaL policy shape (MyHDL simulation)",
        "",
        f"`benchmarks/parsa_cycles.py`, {stamp}, commit `{commit}`. OPaL's DDoS policy: {N_DIMS} dims, bias + 7x1-D "
        f"+ 8x2-D + 1x4-D tiling sets, {TILINGS} tilings each ({rows[0]['tilings']} tilings, {rows[0]['tiles']} "
        f"tiles), {TILES} tiles per dim, {N_ACTIONS} actions, 16-bit values. `rtl` rows: counters measured in the "
        f"cycle-accurate simulation and read back from the core (CYCLES_ACT, CYCLES_UPDATE), each checked equal to "
        f"its ParsaSpec formula (act = n_dims + busiest + {spec.act_depth}, update = busiest + {spec.update_depth}); "
        f"`formula` rows: those formulas on the schedule (the RTL tests hold the hardware to them). Microseconds "
        f"are the cycles at each board's PL clock ({', '.join(f'{k} {v:g} MHz' for k, v in clocks.items())}).",
        "",
        "| WORKERS | source | busiest tilings | busiest rows | record [cyc] | act [cyc] | update [cyc] | "
        "state->action [cyc] | act+update [cyc] | "
        + " | ".join(f"state->action [us] @{v:g} MHz" for v in clocks.values())
        + " | "
        + " | ".join(f"act+update [us] @{v:g} MHz" for v in clocks.values())
        + " |",
        "|---:|---|" + "---:|" * (7 + 2 * len(clocks)),
    ]
    for r in rows:
        lines.append(
            f"| {r['workers']} | {r['source']} | {r['busiest_tilings']} | {r['busiest_rows']} | "
            f"{r['record[cyc]']} | "
            f"{r['act[cyc]']} | {r['update[cyc]']} | {r['state->action[cyc]']} | {r['act+update[cyc]']} | "
            + " | ".join(f"{r['state->action[cyc]'] / f:.3f}" for f in clocks.values())
            + " | "
            + " | ".join(f"{r['act+update[cyc]'] / f:.3f}" for f in clocks.values())
            + " |"
        )
    zcu = S.BOARDS["ZCU106"]
    board_row = next((r for r in rows if r["workers"] == zcu.slot("parsa").spec.workers), None)
    if board_row:
        lines += [
            "",
            f"zcu106 build (WORKERS {board_row['workers']}): state->action {board_row['state->action[cyc]']} "
            f"cycles (goal <= 200), act + update {board_row['act+update[cyc]']} cycles (goal <= 400); at "
            f"{zcu.fclk_mhz:g} MHz {board_row['state->action[cyc]'] / zcu.fclk_mhz:.3f} us state->action vs "
            f"OPaL's {OPAL_MEDIAN_US:g} us median on a NIC (which includes its host path; ours excludes the "
            "DMA and the driver).",
        ]
    measured = [r for r in rows if "mailbox[cyc]" in r]
    if measured:
        lines += [
            "",
            "## One decision through the register mailbox (MAILBOX, no DMA)",
            "",
            f"What the driver's `act()` does, simulated: the window burst ({N_DIMS} state words + key + reward), "
            "START, then MBOX_ACTION read until DONE (the core holds that read with wait states while it "
            "decides). Key 0 with a reward, so the Sarsa update runs. `bus [cyc]` = the decision's simulated "
            "cycles minus the core's own (CYCLES: record words, act, update); `access [cyc]` = what one plain "
            "register access costs this AXI-Lite bus model. Goal: at most state words + 4 bus "
            "accesses, costing no more than that many plain accesses (+ 1: the held read is answered the "
            "cycle after DONE), plus the core's own cycles.",
            "",
            "| WORKERS | accesses | decision [cyc] | core CYCLES | bus [cyc] | access [cyc] | goal |",
            "|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in measured:
            lines.append(
                f"| {r['workers']} | {r['mailbox accesses']} (<= {N_DIMS + 4}) | {r['mailbox[cyc]']} | "
                f"{r['mailbox CYCLES']} | {r['mailbox bus[cyc]']} | {r['access[cyc]']} | "
                f"{'met' if r['mailbox goal met'] else 'NOT met'} |"
            )
    lines += [
        "",
        "Banks sized to the busiest worker for each row (the counts do not depend on bank depth); the "
        "busiest worker's tilings set both counts, so the schedule balances tilings (heaviest first, within "
        "each bank's rows) rather than rows.",
    ]
    (out / "parsa.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
