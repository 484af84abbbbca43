"""Bus traffic of each driver call: host MMIO calls, register words read and written, DMA transfers and bytes, on
``emu``, ``verilator`` and ``rtl``.

On a Zynq each Python MMIO access costs about a microsecond or more from the ARM and a DMA transfer a descriptor
write plus completion polling, so these counts are a driver call's fixed cost on a board, whatever the core does.
They are counted by the emulated devices (:meth:`RLOverlay.bus_stats`), in steady state: every call is made once
before it is counted, so parameters unchanged since the last call are not the cost being measured. ``emu`` answers
at once (the model finishes between two accesses); on ``verilator`` and ``rtl`` the core takes simulated cycles, so
the driver polls STATUS and the DMA more often while it works: the difference is the polling a real core would see
(``verilator``: the shipped builds at the full sizes below; ``rtl``: smaller calls, its simulation being slow).

The calls (Pynq-Z2 build unless named, each core alone):

* ``parsa.act``: one record (MountainCar's shape: 2 dims, 8 tilings x 8x8 tiles, 3 actions) with a reward; on
  ``emu`` and ``verilator`` also OPaL's DDoS shape (20 dims, 136 tilings, 10 actions) on the ZCU106 build;
* ``replay.sample(256)`` and ``replay.update(256)``: a batch of 256 with 4,096 stored priorities;
* ``gae.compute``: 64 envs x 1,024 steps on ``emu`` and ``verilator`` (8 lane-batches of this 8-lane build,
  streamed in one operation); 24 x 64 (3 lane-batches) on ``rtl``; raw fixed point, q8-runs codes (the default
  8-bit mode: a scale and an offset per lane and run in the stream) and q8 block codes (one scale and offset per
  operation, in registers).

Run: ``python benchmarks/bus_costs.py [--out benchmarks/results] [--backends emu,verilator,rtl] [--no-rtl]``.
Writes ``bus_costs.json`` and ``bus_costs.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import environment, write_results

from pynq_rl import RLOverlay

MOUNTAINCAR = {"tilings": [{"dims": [0, 1], "tilings": 8, "tiles": 8}]}
COLUMNS = [
    "register_calls",
    "register_reads",
    "register_writes",
    "register_accesses",
    "dma_transfers",
    "dma_bytes_to_pl",
    "dma_bytes_from_pl",
]


def calls(backend: str) -> dict:
    """name -> (core, setup, call, board) of the driver calls counted on ``backend``."""
    envs, steps = (24, 64) if backend == "rtl" else (64, 1024)
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=(steps, envs)), rng.normal(size=(steps + 1, envs))
    dones = rng.random((steps, envs)) < 0.01

    def parsa_setup(core):
        core.configure(MOUNTAINCAR, 3, ([-1.2, -0.07], [0.6, 0.07]), alpha=0.3 / 8, epsilon=0.0, frac_bits=6)
        core.act([-0.5, 0.0])

    rollouts = iter(range(1 << 30))

    def q8_rollout(quantize: str):
        def call(core):  # each call a new rollout, so new scales (registers or headers change), as in training
            scale = 1.0 + 0.25 * (next(rollouts) % 4)
            core.compute(scale * rewards, scale * values, dones, quantize=quantize)

        return call

    def opal_setup(core):
        from pynq_rl.host.drivers.tiling_config import OPAL_DDOS_TILING

        core.configure(OPAL_DDOS_TILING, 10, (np.zeros(20), np.ones(20)), epsilon=0.0)
        core.act(np.full(20, 0.5))

    def replay_setup(core):
        core.update(np.arange(4096), rng.random(4096) + 0.01)

    wide = (
        {}
        if backend == "rtl"
        else {  # 136 tilings on the ZCU106 build: minutes of MyHDL to configure
            "parsa.act (1 record, OPaL's 20 dims, ZCU106)": (
                "parsa",
                opal_setup,
                lambda core: core.act(np.linspace(0.05, 0.95, 20), 1.0),
                "ZCU106",
            )
        }
    )
    return {
        "parsa.act (1 record)": ("parsa", parsa_setup, lambda core: core.act([-0.4, 0.01], -1.0), "Pynq-Z2"),
        **wide,
        "replay.sample(256)": ("replay", replay_setup, lambda core: core.sample(256), "Pynq-Z2"),
        "replay.update(256)": (
            "replay",
            replay_setup,
            lambda core: core.update(np.arange(256), np.full(256, 0.5)),
            "Pynq-Z2",
        ),
        f"gae.compute raw ({envs} envs x {steps} steps)": (
            "gae",
            lambda core: None,
            lambda core: core.compute(rewards, values, dones, quantize=False),
            "Pynq-Z2",
        ),
        **{
            f"gae.compute {name} ({envs} envs x {steps} steps, new data)": (
                "gae",
                lambda core: None,
                q8_rollout(quantize),
                "Pynq-Z2",
            )
            for name, quantize in (("q8-runs", "runs"), ("q8 block", "block"))
        },
    }


def measure(backend: str) -> list[dict]:
    rows = []
    for name, (core_name, setup, call, board) in calls(backend).items():
        overlay = RLOverlay(backend=backend, board=board, cores=(core_name,))
        core = getattr(overlay, core_name)
        setup(core)
        call(core)  # steady state: the call once before it is counted
        start = time.perf_counter()
        with overlay.bus_stats() as bus:
            call(core)
        rows.append(
            {
                "backend": backend,
                "call": name,
                **bus.as_dict(),
                "wall[ms]": round(1e3 * (time.perf_counter() - start), 2),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--backends", default="emu,verilator,rtl", help="comma-separated backends to count on")
    parser.add_argument("--no-rtl", action="store_true", help="leave rtl out of --backends")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    backends = [b for b in args.backends.split(",") if b and not (args.no_rtl and b == "rtl")]
    rows = [row for backend in backends for row in measure(backend)]
    env = environment()
    lines = [
        "# Bus traffic per driver call",
        "",
        f"`benchmarks/bus_costs.py`, {env['date']}, commit `{env['git_describe']}`: counted by the emulated device "
        "(`RLOverlay.bus_stats()`), steady state, Pynq-Z2 build. `register_calls` are the host's MMIO operations "
        "(one per single-word access, one per burst into `mmio.array`: the microseconds on a board's ARM, and "
        "what the drivers' per-call budgets in tests/test_bus_stats.py count); register words are 32-bit "
        "AXI-Lite transactions (the cores' and the DMAs' registers, a few PL cycles each); `wall` is this machine's "
        "time for the counted call, not a "
        "board's.",
        "",
        "| backend | call | " + " | ".join(COLUMNS) + " | wall [ms] |",
        "|---|---|" + "---:|" * (len(COLUMNS) + 1),
    ]
    lines += [
        f"| {r['backend']} | {r['call']} | " + " | ".join(f"{r[c]:,}" for c in COLUMNS) + f" | {r['wall[ms]']} |"
        for r in rows
    ]
    result = {**env, "rows": rows, "wall[s]": round(time.perf_counter() - start, 1)}
    write_results(Path(args.out), "bus_costs", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
