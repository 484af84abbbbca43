"""Sarsa steps/s of the emulated ParSa core against a pure-Python tiles3 Sarsa, on two policy shapes.

One *step* = one state record: tile-code the state, sum the hit tiles per action, choose an action epsilon-greedily,
and apply the Sarsa update of the key's previous (state, action) with the reward. Every implementation gets the
same data (uniform random states inside the bounds, rewards -1, keys cycling over ``--keys`` keys, no terminals),
runs in one process, interleaved repetition by repetition (a noisy neighbour slows all alike); numba is pinned to
one thread. Results are medians over ``--repeats``, with ratios against ``tiles3_python``; each repetition times
enough back-to-back calls to last ``--min-time`` seconds.

Shapes (``--shapes``):

* ``mountaincar``: 2 dims, one set of 8 tilings x 8x8 tiles (9x9 coordinates with the shifted copies), 3 actions,
  on the Pynq-Z2 build (4 workers);
* ``opal``: OPaL's DDoS policy, 20 dims, bias + 7x1-D + 8x2-D + 1x4-D sets, 8 tilings each (136 tilings, 22,744
  tiles), 6 tiles per dim, 10 actions, on the ZCU106 build (8 workers x 4096 rows).

Implementations (``key``: what is timed):

* ``model_numba``: :meth:`ParsaModel.act` of the bit-exact model (the compiled record loop the ``emu`` backend
  runs) on a batch of ``--batch`` records already encoded as integer codes (the kernel).
* ``driver_act_batch``: the full driver path in emulation, ``RLOverlay(backend="emu").parsa.act_batch(states,
  rewards, keys)`` with float inputs: validation, quantization, packing, the emulated AXI DMA both ways, the model,
  unpacking (one DMA transfer per batch of ``--batch`` records).
* ``driver_act``: the same driver, one ``act()`` per record (what a single-environment agent loop does): the
  register mailbox (the record written into a register window with one ``mmio.array`` slice assignment, START, one
  MBOX_ACTION read; no DMA). Also timed call by call for the p50 and p99 latency of one ``act()`` (and tiles3's
  ``step()``), and checked against the model.
* ``float_reference``: :class:`pynq_rl.host.agents.sarsa.FloatSarsa` (float64 numpy, records in order).
* ``tiles3_python``: Sutton's tiles3 (``tiles()`` with an index hash table, asymmetric displacements 1, 3, 5, ...
  per dimension, written out below as in his ``tiles3.py``), one ``tiles()`` call per tiling set (the set's index
  as the integer argument), weights as Python lists per action, epsilon-greedy with ``random``, the same Sarsa
  update with the stored q. Pure Python, no numpy in the step. Its displacement pattern differs from the core's
  uniform one (tiles3's recommended asymmetric offsets), so the policies differ; the work per step is the same.

The core's own cycle count per record (``cycles`` of the model, ``CYCLES_ACT + CYCLES_UPDATE`` at the board's
PL clock) is reported as a modelled hardware rate, not measured.

Run: ``python benchmarks/parsa_emu.py [--shapes mountaincar,opal] [--repeats 7] [--out benchmarks/results]``.
Writes ``parsa_emu.json`` and ``parsa_emu.md`` under ``--out`` and prints the table;
``--render benchmarks/results/parsa_emu.json`` only re-renders the ``.md`` beside a saved JSON (no measuring).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from math import floor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import environment

REPO = Path(__file__).resolve().parent.parent
BASELINE = "tiles3_python"
GOAL_RATIO = 10.0
GOAL_ACT_RATIO = 1.0
"""one act() per record (the whole driver path) at least as fast as the pure-Python tiles3 Sarsa"""
STEP_SIZE, GAMMA, EPSILON, FRAC_BITS = 0.5, 0.9, 0.05, 6
"""Sutton & Barto's alpha (divided by the shape's tilings), discount, exploration, the core's fractional bits:
rewards of -1 keep q near -10, inside the 16-bit range"""
SHAPES = ("mountaincar", "opal")
KEYS = ("model_numba", "driver_act_batch", "driver_act", "float_reference", BASELINE)


# ---------------------------------------------------------------------------------------------------------------
# Sutton's tiles3, as published (http://incompleteideas.net/tiles/tiles3.html), and a Sarsa on it
# ---------------------------------------------------------------------------------------------------------------
class IHT:
    """Structure to handle collisions (tiles3's index hash table)."""

    def __init__(self, size_val: int) -> None:
        self.size = size_val
        self.overfull_count = 0
        self.dictionary: dict = {}

    def count(self) -> int:
        return len(self.dictionary)

    def fullp(self) -> bool:
        return len(self.dictionary) >= self.size

    def getindex(self, obj, readonly: bool = False):
        d = self.dictionary
        if obj in d:
            return d[obj]
        elif readonly:
            return None
        size = self.size
        count = self.count()
        if count >= size:
            if self.overfull_count == 0:
                print("IHT full, starting to allow collisions")
            self.overfull_count += 1
            return hash(obj) % self.size
        else:
            d[obj] = count
            return count


def hashcoords(coordinates, m, readonly: bool = False):
    if isinstance(m, IHT):
        return m.getindex(tuple(coordinates), readonly)
    if isinstance(m, int):
        return hash(tuple(coordinates)) % m
    if m is None:
        return coordinates


def tiles(iht_or_size, numtilings: int, floats, ints=(), readonly: bool = False) -> list:
    """Returns num-tilings tile indices corresponding to the floats and ints."""
    qfloats = [floor(f * numtilings) for f in floats]
    tiles_ = []
    for tiling in range(numtilings):
        tiling_x2 = tiling * 2
        coords = [tiling]
        b = tiling
        for q in qfloats:
            coords.append((q + b) // numtilings)
            b += tiling_x2
        coords.extend(ints)
        tiles_.append(hashcoords(coords, iht_or_size, readonly))
    return tiles_


class Tiles3Sarsa:
    """Tile-coded Sarsa in pure Python on tiles3, with the core's per-key semantics (stored q, one update per step).

    ``sets``: (dims, tilings, tiles) per tiling set; ``lows``/``highs``: bounds (a dimension is scaled so that the
    range spans ``tiles`` tiles, as tiles3's documentation recommends).
    """

    def __init__(
        self, sets, lows, highs, n_actions: int, alpha: float, gamma: float, epsilon: float, seed: int = 0
    ) -> None:
        self.sets = [
            (list(dims), tilings, [tiles_ / (highs[d] - lows[d]) for d in dims], [lows[d] for d in dims])
            for dims, tilings, tiles_ in sets
        ]
        size = sum(tilings * (tiles_ + 1) ** len(dims) for dims, tilings, tiles_ in sets)
        self.iht = IHT(size)
        self.weights = [[0.0] * size for _ in range(n_actions)]
        self.n_actions, self.alpha, self.gamma, self.epsilon = n_actions, alpha, gamma, epsilon
        self.rng = random.Random(seed)
        self.previous: dict = {}

    def active_tiles(self, state) -> list:
        out = []
        for index, (dims, tilings, scales, lows) in enumerate(self.sets):
            out += tiles(self.iht, tilings, [(state[d] - lo) * sc for d, sc, lo in zip(dims, scales, lows)], [index])
        return out

    def step(self, state, reward, key: int) -> int:
        active = self.active_tiles(state)
        q = [sum(w[i] for i in active) for w in self.weights]
        if self.rng.random() < self.epsilon:
            action = self.rng.randrange(self.n_actions)
        else:
            action = max(range(self.n_actions), key=q.__getitem__)
        prev = self.previous.get(key)
        if prev is not None and reward is not None:
            prev_tiles, prev_action, prev_q = prev
            step = self.alpha * (reward + self.gamma * q[action] - prev_q)
            w = self.weights[prev_action]
            for i in prev_tiles:
                w[i] += step
        self.previous[key] = (active, action, q[action])
        return action


# ---------------------------------------------------------------------------------------------------------------
# Shapes, data and implementations
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Shape:
    name: str
    tiling: dict
    n_actions: int
    lows: np.ndarray
    highs: np.ndarray
    board: str


def make_shape(name: str) -> Shape:
    from pynq_rl.host.drivers.tiling_config import OPAL_DDOS_TILING

    if name == "mountaincar":
        return Shape(
            name,
            {"tilings": [{"dims": [0, 1], "tilings": 8, "tiles": 8}]},
            3,
            np.array([-1.2, -0.07]),
            np.array([0.6, 0.07]),
            "Pynq-Z2",
        )
    if name == "opal":
        return Shape(name, OPAL_DDOS_TILING, 10, np.zeros(20), np.ones(20), "ZCU106")
    raise ValueError(f"unknown shape {name!r}; choose from {SHAPES}")


def make_data(shape: Shape, n: int, keys: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    states = shape.lows + rng.random((n, len(shape.lows))) * (shape.highs - shape.lows)
    return {"states": states, "rewards": np.full(n, -1.0), "keys": np.arange(n) % keys}


@dataclass
class Prepared:
    call: Callable[[], object]
    steps: int
    note: str = ""
    extra: dict | None = None


def prepare(key: str, shape: Shape, data: dict, overlays: dict, python_max_steps: int) -> Prepared:
    """Bind implementation ``key`` to ``data`` (untimed setup: overlays, configuration, encoding)."""
    from pynq_rl.host.agents.sarsa import FloatSarsa
    from pynq_rl.host.drivers.tiling_config import load_tiling
    from pynq_rl.overlay.models import parsa as model

    states, rewards, keys = data["states"], data["rewards"], data["keys"]
    n = len(states)
    layout = load_tiling(shape.tiling)
    alpha = STEP_SIZE / layout.n_tilings
    if key == "model_numba":
        if not model.HAVE_NUMBA:
            raise RuntimeError("numba not installed")
        spec = overlays[shape.board].parsa.spec
        m, codes = _fresh_model(shape, layout, spec, alpha, data)
        m.act(*(c[:2] for c in codes))  # compile outside the timed region
        cycles = m.act(*codes).cycles
        fclk = overlays[shape.board].board_spec.fclk_mhz
        return Prepared(
            lambda: m.act(*codes),
            n,
            f"integer codes; {spec.workers} workers, busiest owns {m.busiest} tilings",
            {
                "modeled_core_cycles_per_step": cycles / n,
                "fclk[mhz]": fclk,
                "modeled_core[steps/s]": fclk * 1e6 * n / cycles,
            },
        )
    if key in ("driver_act_batch", "driver_act"):
        core = overlays[shape.board].parsa
        core.configure(
            shape.tiling,
            shape.n_actions,
            (shape.lows, shape.highs),
            alpha=alpha,
            gamma=GAMMA,
            epsilon=EPSILON,
            frac_bits=FRAC_BITS,
            seed=1,
        )
        if key == "driver_act_batch":
            # check: from a cleared policy, the driver's first batch chooses exactly the bit-exact model's actions
            m, codes = _fresh_model(shape, layout, core.spec, alpha, data)
            same = bool(np.array_equal(core.act_batch(states, rewards, keys)[0], m.act(*codes).actions))
            return Prepared(
                lambda: core.act_batch(states, rewards, keys),
                n,
                f"float in, one DMA transfer per {n} records, emulated {shape.board}",
                {"check_passed": same, "check": "first batch's actions == the model's"},
            )
        m_sub = min(n, python_max_steps)
        sub = [(states[i], float(rewards[i]), int(keys[i])) for i in range(m_sub)]
        # check and latency: from a cleared policy, act() one record at a time chooses exactly the model's actions;
        # each call timed alone (p50, p99 of one act())
        m, codes = _fresh_model(shape, layout, core.spec, alpha, data)
        expected = m.act(*(c[:m_sub] for c in codes)).actions
        got, latencies = [], []
        for s, r, k in sub:
            t0 = time.perf_counter()
            got.append(core.act(s, r, k))
            latencies.append(time.perf_counter() - t0)

        def one_by_one():
            for s, r, k in sub:
                core.act(s, r, k)

        return Prepared(
            one_by_one,
            m_sub,
            f"one act() per record through the register mailbox (no DMA; "
            f"{layout.n_dims} + 4 register accesses); first {m_sub} records",
            {
                "check_passed": bool(np.array_equal(got, expected)),
                "check": "act() one by one == the model's actions",
                **_latency(latencies),
            },
        )
    if key == "float_reference":
        m_sub = min(n, python_max_steps)
        learner = FloatSarsa(
            layout, shape.n_actions, (shape.lows, shape.highs), alpha, GAMMA, EPSILON, seed=1, keys=int(keys.max()) + 1
        )
        s_sub, r_sub, k_sub = states[:m_sub], rewards[:m_sub], keys[:m_sub]
        return Prepared(
            lambda: learner.act_batch(s_sub, r_sub, k_sub),
            m_sub,
            f"float64 numpy, records in order; first {m_sub} records",
        )
    if key == BASELINE:
        m_sub = min(n, python_max_steps)
        sets = [(s.dims, s.tilings, s.tiles) for s in layout.sets]
        agent = Tiles3Sarsa(sets, list(shape.lows), list(shape.highs), shape.n_actions, alpha, GAMMA, EPSILON, 1)
        sub = [(states[i].tolist(), float(rewards[i]), int(keys[i])) for i in range(m_sub)]
        for s, r, k in sub:  # fill the hash table once, so repetitions all time the same steady state
            agent.step(s, r, k)

        latencies = []
        for s, r, k in sub:
            t0 = time.perf_counter()
            agent.step(s, r, k)
            latencies.append(time.perf_counter() - t0)

        def run():
            for s, r, k in sub:
                agent.step(s, r, k)

        return Prepared(
            run,
            m_sub,
            f"pure Python lists + dict IHT ({agent.iht.size} entries); first {m_sub} records",
            _latency(latencies),
        )
    raise ValueError(key)


def _latency(seconds: list[float]) -> dict:
    """p50 and p99 of single-step times, in microseconds."""
    p50, p99 = np.percentile(np.asarray(seconds) * 1e6, [50, 99])
    return {"p50[us]": round(float(p50), 2), "p99[us]": round(float(p99), 2)}


def _fresh_model(shape: Shape, layout, spec, alpha: float, data: dict):
    """A configured, cleared bit-exact model (PRNG seed 1, as the driver path) and the data as integer codes."""
    from pynq_rl.overlay.models import parsa as model

    m = model.ParsaModel(spec, use_numba=model.HAVE_NUMBA)
    m.n_dims, m.n_actions = layout.n_dims, shape.n_actions
    m.alpha, m.gamma = round(alpha * 65536), round(GAMMA * 65536)
    m.epsilon, m.epsilon_decay = round(EPSILON * 65536), 65536
    m.reseed(1)
    offsets, scales = model.dimension_codes(shape.lows, shape.highs)
    if not m.configure(offsets, scales, model.schedule(layout, spec)):
        raise RuntimeError("the model refused the configuration")
    n = len(data["states"])
    codes = (
        data["keys"].astype(np.int64),
        np.ones(n, dtype=np.int64),
        np.floor(data["rewards"] * (1 << FRAC_BITS) + 0.5).astype(np.int64),
        np.floor(data["states"] * 65536 + 0.5).astype(np.int64),
    )
    return m, codes


# ---------------------------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------------------------
def _calls_for(call: Callable[[], object], min_time: float) -> int:
    t0 = time.perf_counter()
    call()
    elapsed = time.perf_counter() - t0
    return max(1, math.ceil(min_time / max(elapsed, 1e-9))) if min_time > 0 else 1


def run(
    shapes: list[str], batch: int, keys: int, repeats: int, min_time: float, python_max_steps: int, seed: int
) -> list[dict]:
    """Prepare every (shape, implementation), then time them interleaved; one row each."""
    from pynq_rl import RLOverlay

    overlays: dict = {}
    rows, live = [], []
    for name in shapes:
        shape = make_shape(name)
        if shape.board not in overlays:
            overlays[shape.board] = RLOverlay(backend="emu", board=shape.board)
        data = make_data(shape, batch, keys, seed)
        for key in KEYS:
            row = {"key": key, "shape": name, "board": shape.board, "batch": batch, "keys": keys}
            rows.append(row)
            try:
                prepared = prepare(key, shape, data, overlays, python_max_steps)
                row.update(status="ok", steps_per_call=prepared.steps, note=prepared.note, **(prepared.extra or {}))
                row["calls_per_repeat"] = _calls_for(prepared.call, min_time)
                row["samples[steps/s]"] = []
                live.append((row, prepared))
            except Exception as err:  # noqa: BLE001 - recorded, not raised
                row.update(status=f"error: {type(err).__name__}: {err}", traceback=traceback.format_exc())
    for _ in range(repeats):
        for row, prepared in live:
            calls = row["calls_per_repeat"]
            t0 = time.perf_counter()
            for _ in range(calls):
                prepared.call()
            elapsed = time.perf_counter() - t0
            row["samples[steps/s]"].append(calls * prepared.steps / elapsed)
    for row, _ in live:
        row["median[steps/s]"] = statistics.median(row["samples[steps/s]"])
    for name in shapes:
        base = next((r for r in rows if r["shape"] == name and r["key"] == BASELINE and r["status"] == "ok"), None)
        for r in rows:
            if r["shape"] == name and r["status"] == "ok":
                r[f"ratio_vs_{BASELINE}"] = r["median[steps/s]"] / base["median[steps/s]"] if base else None
    return rows


LABELS = {
    "model_numba": "bit-exact model, compiled act loop",
    "driver_act_batch": "driver act_batch (emu, 1 DMA)",
    "driver_act": "driver act() per record (emu)",
    "float_reference": "FloatSarsa (float64 numpy)",
    BASELINE: "tiles3 Sarsa, pure Python",
}


def markdown(data: dict) -> str:
    lines = [
        "# ParSa emulation: Sarsa steps/s",
        "",
        f"{data['environment']['date']}, commit `{data['environment']['git_describe']}`, Python "
        f"{data['environment']['python']}, numpy {data['environment']['numpy']}, numba "
        f"{data['environment']['numba']} (1 thread), {data['environment']['cpu_count']} CPUs (load "
        f"{data['environment']['loadavg_1min_at_start']:.1f} at start). Median of {data['arguments']['repeats']} "
        f"interleaved repetitions; batch {data['arguments']['batch']} records over {data['arguments']['keys']} "
        f"keys. One step = act + Sarsa update of one record. Produced by `benchmarks/parsa_emu.py`.",
        "",
        "| implementation | shape | median steps/s | ratio vs tiles3 Python | note |",
        "|---|---|---:|---:|---|",
    ]
    for r in data["rows"]:
        if r["status"] != "ok":
            lines.append(f"| {LABELS[r['key']]} (`{r['key']}`) | {r['shape']} | - | - | {r['status']} |")
            continue
        ratio = r.get(f"ratio_vs_{BASELINE}")
        note = r["note"] + (
            "" if "check_passed" not in r else f"; check ({r['check']}): {'passed' if r['check_passed'] else 'FAILED'}"
        )
        lines.append(
            f"| {LABELS[r['key']]} (`{r['key']}`) | {r['shape']} | {r['median[steps/s]']:,.0f} | "
            f"{ratio:.1f}x | {note} |"
            if ratio is not None
            else f"| {LABELS[r['key']]} (`{r['key']}`) | {r['shape']} | {r['median[steps/s]']:,.0f} | - | {note} |"
        )
    lines += [
        "",
        "Modelled hardware rate (cycles of the model's record loop at the board's PL clock, not measured):",
        "",
    ]
    for r in data["rows"]:
        if r["key"] == "model_numba" and r["status"] == "ok":
            lines.append(
                f"- {r['shape']} on {r['board']}: {r['modeled_core_cycles_per_step']:.1f} cycles/step at "
                f"{r['fclk[mhz]']} MHz = {r['modeled_core[steps/s]']:,.0f} steps/s"
            )
    lines += [
        "",
        "Latency of one step (each call timed alone, over the first records; microseconds):",
        "",
        "| implementation | shape | p50 [us] | p99 [us] |",
        "|---|---|---:|---:|",
    ]
    for r in data["rows"]:
        if r["status"] == "ok" and "p50[us]" in r:
            lines.append(f"| {LABELS[r['key']]} | {r['shape']} | {r['p50[us]']:,.1f} | {r['p99[us]']:,.1f} |")
    goal, single = data["goal"], data["goal_act"]
    lines += [
        "",
        f"Goal: >= {goal['ratio']:.0f}x tiles3 Python for `model_numba` and `driver_act_batch` on every "
        f"shape: {'met' if goal['met'] else 'NOT met'} (lowest ratio {goal['lowest_ratio']}).",
        f"Goal: `driver_act` (one act() per record) >= {single['ratio']:.0f}x tiles3 Python on "
        f"every shape: {'met' if single['met'] else 'NOT met'} (lowest ratio {single['lowest_ratio']}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, measure, write ``parsa_emu.json`` and ``parsa_emu.md``, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated subset of {SHAPES}")
    parser.add_argument("--batch", type=int, default=4096, help="records per act_batch / model call")
    parser.add_argument("--keys", type=int, default=16, help="keys the records cycle over (<= the build's KEYS)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per repetition and implementation")
    parser.add_argument(
        "--python-max-steps",
        type=int,
        default=2048,
        help="records per call for the per-record implementations (tiles3, act(), float)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--render", default=None, help="only re-render the .md next to this parsa_emu.json")
    args = parser.parse_args(argv)
    if args.render:
        text = markdown(json.loads(Path(args.render).read_text()))
        Path(args.render).with_suffix(".md").write_text(text)
        print(text)
        return 0
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if not shapes or any(s not in SHAPES for s in shapes):
        parser.error(f"shapes must be a comma-separated subset of {SHAPES}, not {args.shapes!r}")
    if min(args.batch, args.keys, args.repeats, args.python_max_steps) < 1 or args.keys > 16:
        parser.error("batch, keys (<= 16, the Pynq-Z2 build's KEYS), repeats and python-max-steps must be >= 1")
    import numba

    numba.set_num_threads(1)
    rows = run(shapes, args.batch, args.keys, args.repeats, args.min_time, args.python_max_steps, args.seed)
    ratios = [r.get(f"ratio_vs_{BASELINE}") for r in rows if r["key"] in ("model_numba", "driver_act_batch")]
    lowest = min((x for x in ratios if x is not None), default=None)
    single = [r.get(f"ratio_vs_{BASELINE}") for r in rows if r["key"] == "driver_act"]
    lowest_single = min((x for x in single if x is not None), default=None)
    data = {
        "environment": environment(),
        "arguments": vars(args),
        "rows": rows,
        "goal": {
            "ratio": GOAL_RATIO,
            "lowest_ratio": None if lowest is None else round(lowest, 2),
            "met": lowest is not None and None not in ratios and lowest >= GOAL_RATIO,
        },
        "goal_act": {
            "ratio": GOAL_ACT_RATIO,
            "lowest_ratio": None if lowest_single is None else round(lowest_single, 3),
            "met": lowest_single is not None and None not in single and lowest_single >= GOAL_ACT_RATIO,
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "parsa_emu.json").write_text(json.dumps(data, indent=2, default=str))
    text = markdown(data)
    (out / "parsa_emu.md").write_text(text)
    print(text)
    return 0 if all(r["status"] == "ok" and r.get("check_passed", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
