"""``pynq-rl doctor``: a short self-test of every core on every backend that can run here.

On a PYNQ board the overlay is loaded from its bitstream and each core computes known vectors; off board the same
self-tests run on ``emu`` (the bit-exact numpy models) and ``rtl`` (the MyHDL cores, small builds so the cycle
simulation stays quick), and on request (``--backend verilator``) on the board's shipped builds as converted Verilog
under Verilator. Each result is compared bit for bit with the numpy model in ``pynq_rl/overlay/models`` and
reported with the core's own cycle count (the CYCLES register) and the throughput that gives at the overlay's PL
clock: the rate its ``.hwh`` records (on a board, the one Vivado really set), ``spec.py``'s ``fclk_mhz`` where it
records none, the source named on each line.

* GAE: one raw-mode batch (T <= 32 steps, up to LANES environments) of rewards and values that are exact DATA
  codes, so the host's quantization is lossless and the core's advantages and returns must equal
  ``models.gae.gae_fixed`` exactly; CYCLES must equal the model's ``T + pipeline_depth``.
* Replay: clear, set up to 64 priorities, then one stratified sample of 16 with host uniforms; TOTAL, the sampled
  indices and their probabilities must equal ``models.replay.SumTree``'s.

* ParSa: a two-dimensional layout (bias + one 2-D set), 24 steps over 3 keys with rewards and a terminal, online
  learning on: actions, q values, the policy after the updates, epsilon and the PRNG state must equal
  ``models.parsa.ParsaModel``'s; CYCLES_ACT must equal the model's.

A core the backend cannot run (no HDL yet on ``rtl``, no Verilator installed, no self-test yet) is reported as SKIP
with the reason, not as a failure; a run that skipped every core checked nothing and exits 1.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..overlay import fixed
from ..overlay import spec as S
from ..overlay.models import gae as gae_model
from ..overlay.models import parsa as parsa_model
from ..overlay.models import replay as replay_model
from .backends.verilator_build import VerilatorUnavailable
from .overlay import ON_TARGET, PlClockRate, RLOverlay

__all__ = [
    "SelfTest",
    "RTL_CORES",
    "default_backends",
    "self_test_gae",
    "self_test_replay",
    "self_test_parsa",
    "run_doctor",
    "format_result",
    "main",
    "SELF_TESTS",
]

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"

#: Small builds of each core for the ``rtl`` backend (MyHDL elaborates and simulates slowly, ~5k cycles/s).
RTL_CORES: dict[str, S.CoreSpec] = {
    "gae": S.GaeSpec(lanes=2, t_max=16),
    "replay": S.ReplaySpec(k=4, levels=3, leaf=S.QFormat(12, 6, signed=False)),
    "parsa": S.ParsaSpec(max_dims=4, max_actions=3, workers=2, tiles_per_worker=64, max_tilings=8, keys=4),
}


@dataclass
class SelfTest:
    """The outcome of one core's self-test on one backend."""

    backend: str
    """'board', 'emu', 'rtl' or 'verilator'"""
    core: str
    """core name (``gae``, ``replay``, ...)"""
    status: str
    """'PASS', 'FAIL' or 'SKIP'"""
    detail: str
    """what was compared, or why it failed or was skipped"""
    cycles: int | None = None
    """the core's CYCLES register after the last operation"""
    items_per_s: float | None = None
    """throughput at the overlay's PL clock (``RLOverlay.pl_clock``) from CYCLES (elements or samples per second)"""
    wall_s: float | None = None
    """host wall-clock time of the operation, driver and bus included"""

    @property
    def ok(self) -> bool:
        """True unless the self-test failed (a skip is not a failure)."""
        return self.status != FAIL


def default_backends() -> list[str]:
    """``["board"]`` on a PYNQ board, ``["emu", "rtl"]`` elsewhere."""
    return ["board"] if ON_TARGET else ["emu", "rtl"]


def _rate(items: int, cycles: int, fclk_mhz: float) -> float | None:
    return items * fclk_mhz * 1e6 / cycles if cycles > 0 else None


def self_test_gae(ol: RLOverlay, backend: str, seed: int = 42) -> SelfTest:
    """GAE core of ``ol``: one raw batch vs ``models.gae.gae_fixed``, bit for bit, and CYCLES vs the model."""
    core = ol.gae
    spec = core.spec
    rng = np.random.default_rng(seed)
    n_steps, n_envs = min(spec.t_max, 32), min(spec.lanes, 8)
    one = 1 << spec.data.frac
    r_codes = rng.integers(-4 * one, 4 * one, size=(n_steps, n_envs))
    v_codes = rng.integers(-8 * one, 8 * one, size=(n_steps + 1, n_envs))
    dones = (rng.random((n_steps, n_envs)) < 0.1).astype(np.int64)
    gamma, lam = 0.99, 0.95
    expected = gae_model.gae_fixed(
        spec,
        r_codes,
        v_codes,
        dones,
        int(fixed.quantize(gamma, spec.coef)[0]),
        int(fixed.quantize(gamma * lam, spec.coef)[0]),
        use_numba=False,
    )
    start = time.perf_counter()
    advantages, returns = core.compute(
        r_codes * spec.data.lsb, v_codes * spec.data.lsb, dones, gamma=gamma, lam=lam, quantize=False
    )
    wall_s = time.perf_counter() - start
    cycles = core.cycles
    what = f"T={n_steps} N={n_envs} raw"
    want_adv = (expected.advantages * spec.data.lsb).astype(np.float32)
    want_ret = (expected.returns * spec.data.lsb).astype(np.float32)
    mismatched = int(np.count_nonzero(advantages != want_adv) + np.count_nonzero(returns != want_ret))
    rate = _rate(n_steps * n_envs, cycles, ol.pl_clock.mhz)
    if mismatched:
        return SelfTest(
            backend,
            "gae",
            FAIL,
            f"{what}: {mismatched} of {2 * advantages.size} outputs differ from pynq_rl/overlay/models/gae.py",
            cycles,
            rate,
            wall_s,
        )
    if cycles != expected.cycles:
        return SelfTest(
            backend,
            "gae",
            FAIL,
            f"{what}: bit-exact, but CYCLES={cycles}, the model says {expected.cycles} (T + pipeline_depth)",
            cycles,
            rate,
            wall_s,
        )
    return SelfTest(
        backend,
        "gae",
        PASS,
        f"{what}: bit-exact vs pynq_rl/overlay/models/gae.py, CYCLES = T + {spec.pipeline_depth} as modelled",
        cycles,
        rate,
        wall_s,
    )


def self_test_replay(ol: RLOverlay, backend: str, seed: int = 42) -> SelfTest:
    """Replay core of ``ol``: set priorities, sample with host uniforms; TOTAL, indices and probabilities vs
    ``models.replay.SumTree``."""
    core = ol.replay
    spec = core.spec
    rng = np.random.default_rng(seed)
    n_set, count = min(spec.capacity, 64), 16
    indices = rng.choice(spec.capacity, size=n_set, replace=False)
    priorities = rng.uniform(0.05, 2.0, size=n_set)
    uniforms = rng.integers(0, 1 << 32, size=count, dtype=np.int64)
    tree = replay_model.SumTree(spec, use_numba=False)
    codes, _ = replay_model.encode_priorities(np.power(priorities, core.alpha), spec.leaf)
    tree.set(indices, codes)
    want_indices, want_codes = tree.sample(count, uniforms=uniforms)

    core.clear()
    core.update(indices, priorities)
    if core.total_code != tree.total:
        return SelfTest(
            backend,
            "replay",
            FAIL,
            f"after setting {n_set} priorities TOTAL={core.total_code}, the model's sum tree says {tree.total}",
            core.cycles,
        )
    start = time.perf_counter()
    got_indices, probabilities, _ = core.sample(count, uniforms=uniforms)
    wall_s = time.perf_counter() - start
    cycles = core.cycles
    rate = _rate(count, cycles, ol.pl_clock.mhz)
    what = f"{n_set} priorities, {count} stratified samples"
    if not np.array_equal(got_indices, want_indices):
        wrong = int(np.count_nonzero(got_indices != want_indices))
        return SelfTest(
            backend,
            "replay",
            FAIL,
            f"{what}: {wrong} sampled indices differ from pynq_rl/overlay/models/replay.py",
            cycles,
            rate,
            wall_s,
        )
    if not np.array_equal(probabilities, want_codes / float(tree.total)):
        return SelfTest(
            backend,
            "replay",
            FAIL,
            f"{what}: probabilities differ from pynq_rl/overlay/models/replay.py",
            cycles,
            rate,
            wall_s,
        )
    return SelfTest(
        backend,
        "replay",
        PASS,
        f"{what}: TOTAL, indices and probabilities equal pynq_rl/overlay/models/replay.py",
        cycles,
        rate,
        wall_s,
    )


def self_test_parsa(ol: RLOverlay, backend: str, seed: int = 42) -> SelfTest:
    """ParSa core of ``ol``: a short online run over three keys vs ``models.parsa.ParsaModel``, bit for bit."""
    core = ol.parsa
    spec = core.spec
    rng = np.random.default_rng(seed)
    layout = {"tilings": [{"dims": [], "tilings": 2, "tiles": 1}, {"dims": [0, 1], "tilings": 2, "tiles": 3}]}
    bounds = ([-1.0, -1.0], [1.0, 1.0])
    n_actions, n, keys = min(spec.max_actions, 3), 24, min(spec.keys, 3)
    config = core.configure(
        layout, n_actions, bounds, alpha=0.25, gamma=0.9, epsilon=0.25, epsilon_decay=0.99, frac_bits=6, seed=seed + 1
    )
    model = parsa_model.ParsaModel(spec, use_numba=False)
    one = 1 << spec.coef.frac
    model.n_dims, model.n_actions = 2, n_actions
    model.alpha, model.gamma, model.epsilon, model.epsilon_decay = (
        one // 4,
        round(0.9 * one),
        one // 4,
        round(0.99 * one),
    )
    model.configure(*parsa_model.dimension_codes(*bounds), list(config.descriptors))
    model.reseed(seed + 1)
    states = np.round(rng.uniform(-1.2, 1.2, (n, 2)) * 64) / 64  # exact in Q15.16
    rewards = np.round(rng.uniform(-2, 2, n) * 64) / 64  # exact at 6 fractional bits
    step_keys = rng.integers(0, keys, n)
    terminals = np.zeros(n, dtype=bool)
    terminals[n // 2] = True
    expected = model.act(
        step_keys,
        np.ones(n, dtype=np.int64) | terminals * 2,
        (rewards * 64).astype(np.int64),
        (states * 65536).astype(np.int64),
    )
    start = time.perf_counter()
    actions, values = core.act_batch(states, rewards, step_keys, terminals, return_values=True)
    wall_s = time.perf_counter() - start
    cycles, cycles_act = core.cycles, core.cycles_act
    rate = _rate(n, cycles, ol.pl_clock.mhz)
    what = f"{n} online steps over {keys} keys"
    want_actions = np.where(expected.actions == S.PARSA_NO_ACTION, -1, expected.actions)
    if not np.array_equal(actions, want_actions) or not np.array_equal(values * 64, expected.q_values):
        return SelfTest(
            backend,
            "parsa",
            FAIL,
            f"{what}: actions or q values differ from pynq_rl/overlay/models/parsa.py",
            cycles,
            rate,
            wall_s,
        )
    if not np.array_equal(core.dump_banks(), model.banks) or core.seed != model.prng_state:
        return SelfTest(
            backend,
            "parsa",
            FAIL,
            f"{what}: the policy or the PRNG state after learning differs from pynq_rl/overlay/models/parsa.py",
            cycles,
            rate,
            wall_s,
        )
    if cycles_act != expected.cycles_act or cycles != expected.cycles:
        return SelfTest(
            backend,
            "parsa",
            FAIL,
            f"{what}: bit-exact, but CYCLES_ACT/CYCLES = {cycles_act}/{cycles}, "
            f"the model says {expected.cycles_act}/{expected.cycles}",
            cycles,
            rate,
            wall_s,
        )
    return SelfTest(
        backend,
        "parsa",
        PASS,
        f"{what}: actions, q values, policy and PRNG equal "
        f"pynq_rl/overlay/models/parsa.py; {cycles_act} cycles state->action",
        cycles,
        rate,
        wall_s,
    )


#: The self-test of each core, by name.
SELF_TESTS: dict[str, Callable[[RLOverlay, str, int], SelfTest]] = {
    "gae": self_test_gae,
    "replay": self_test_replay,
    "parsa": self_test_parsa,
}


def _overlays(backend: str, board: str | S.BoardSpec | None) -> list[tuple[list[str] | None, Callable[[], RLOverlay]]]:
    """(cores, factory) pairs: one overlay with every core on board/emu, one small overlay per core on rtl (cores
    None: the board's, known once its overlay loads)."""
    if backend == "board":
        return [(None, lambda: RLOverlay(backend="board", board=board))]
    spec = S.board(board)
    names = [slot.name for slot in spec.cores]
    if backend in ("emu", "verilator"):  # verilator: the shipped builds, as the bitstream will carry them
        return [(names, lambda: RLOverlay(backend=backend, board=spec))]
    plans: list[tuple[list[str] | None, Callable[[], RLOverlay]]] = []
    for slot in spec.cores:
        small = dataclasses.replace(slot, spec=RTL_CORES.get(slot.name, slot.spec))
        plans.append(([slot.name], _one_core_overlay(spec, small)))
    return plans


def _one_core_overlay(board: S.BoardSpec, slot: S.CoreSlot) -> Callable[[], RLOverlay]:
    """The factory of an rtl overlay of ``board`` with ``slot`` as its only core."""
    return lambda: RLOverlay(backend="rtl", board=dataclasses.replace(board, cores=(slot,)))


def run_doctor(
    backends: Sequence[str] | None = None,
    board: str | S.BoardSpec | None = None,
    echo: Callable[[str], None] | None = print,
    seed: int = 42,
) -> list[SelfTest]:
    """Self-test every core on each backend; print one line per core through ``echo``; return the results.

    Parameters
    ----------
    backends : sequence of str or None
        Backends to test (None: :func:`default_backends`).
    board : str, BoardSpec or None
        The board's overlay (None: the board PYNQ reports on a board, ``spec.DEFAULT_BOARD`` elsewhere). On
        ``rtl`` each core runs alone in a small build (:data:`RTL_CORES`).
    echo : callable or None
        Receives each formatted result line (None: silent).
    seed : int
        Seed of the test vectors.
    """
    results: list[SelfTest] = []

    clock: PlClockRate | None = None

    def report(result: SelfTest) -> None:
        results.append(result)
        if echo is not None:
            mhz, source = clock if clock is not None else (None, None)
            echo(format_result(result, mhz, source))

    for backend in backends or default_backends():
        clock = None
        for cores, factory in _overlays(backend, board):
            try:
                ol = factory()
            except (ValueError, VerilatorUnavailable) as error:  # the backend cannot build this overlay here
                for core in cores or ["overlay"]:
                    report(SelfTest(backend, core, SKIP, f"not available: {error}"))
                continue
            except Exception as error:  # noqa: BLE001 - a doctor reports every failure and goes on
                for core in cores or ["overlay"]:
                    report(SelfTest(backend, core, FAIL, f"overlay did not load: {type(error).__name__}: {error}"))
                continue
            clock = ol.pl_clock
            for slot in ol.board_spec.cores:
                test = SELF_TESTS.get(slot.name)
                if test is None:
                    report(SelfTest(backend, slot.name, SKIP, "no self-test for this core yet"))
                    continue
                try:
                    report(test(ol, backend, seed))
                except Exception as error:  # noqa: BLE001 - a failing self-test is a FAIL row, the others still run
                    report(SelfTest(backend, slot.name, FAIL, f"{type(error).__name__}: {error}"))
    return results


def format_result(result: SelfTest, fclk_mhz: float | None = None, clock_source: str | None = None) -> str:
    """One line: backend, core, status, detail, then cycles, throughput at ``fclk_mhz`` (read from
    ``clock_source``) and wall time."""
    line = f"{result.backend:<5} {result.core:<7} {result.status}  {result.detail}"
    extras = []
    if result.cycles is not None:
        extras.append(f"{result.cycles} cycles")
    if result.items_per_s is not None:
        at = (f" at {fclk_mhz:g} MHz" + (f" per {clock_source}" if clock_source else "")) if fclk_mhz else ""
        extras.append(f"{result.items_per_s / 1e6:.1f} M/s{at}")
    if result.wall_s is not None:
        extras.append(f"call {1e3 * result.wall_s:.1f} ms")
    return line + (f" ({', '.join(extras)})" if extras else "")


def main(
    backends: Sequence[str] | None = None, board: str | S.BoardSpec | None = None, echo: Callable[[str], None] = print
) -> int:
    """Run the doctor and return a process exit code: 0 if a self-test passed and none failed, 1 otherwise (a run
    whose every core was skipped checked nothing, so it does not report success)."""
    results = run_doctor(backends, board, echo)
    failed = [r for r in results if r.status == FAIL]
    passed = sum(r.status == PASS for r in results)
    echo(f"doctor: {passed} PASS, {len(failed)} FAIL, {sum(r.status == SKIP for r in results)} SKIP")
    if not passed and not failed:
        echo("doctor: nothing was checked: every core was skipped (the reasons are above)")
        return 1
    return 1 if failed else 0
