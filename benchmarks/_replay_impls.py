"""The implementations :mod:`replay_emu` times, and the data they share: the bit-exact model (numba and numpy), the
driver on the emulated core, cpprb (stratified and not), torchrl's sum tree where its extension loads, and a float64
numpy sum tree; each prepared on the same :class:`Data` and checked before it is timed.

A helper module of ``benchmarks/replay_emu.py`` (imported as ``_replay_impls``: the script's own directory is first on
``sys.path``), split off so the script keeps the measurement and the page.
"""

from __future__ import annotations

import math
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["ALPHA", "BETA", "P_MIN", "P_MAX", "Data", "make_data", "Prepared", "Impl", "NumpySumTree", "build_impls"]

ALPHA = 0.6
BETA = 0.4
P_MIN, P_MAX = 0.01, 1.0
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Data:
    """The shared workload: initial priorities, a pool of update batches and the insert priorities."""

    capacity: int
    batch: int
    priorities: np.ndarray
    """float64 (capacity,): the priority of every stored transition before timing"""
    update_indices: np.ndarray
    """int64 (pool, batch): random indices, one row per update call"""
    update_priorities: np.ndarray
    """float64 (pool, batch): their new priorities (also used by inserts)"""


def make_data(capacity: int, batch: int, pool: int, seed: int) -> Data:
    pool = max(pool, 2)  # the repeated-batch update alternates between two rows of priorities
    rng = np.random.default_rng(seed)
    return Data(
        capacity=capacity,
        batch=batch,
        priorities=rng.uniform(P_MIN, P_MAX, capacity),
        update_indices=rng.integers(0, capacity, (pool, batch), dtype=np.int64),
        update_priorities=rng.uniform(P_MIN, P_MAX, (pool, batch)),
    )


class _Cycle:
    """Hands out row ``i % rows`` of the update pool and the next ``batch`` ring positions, call after call."""

    def __init__(self, data: Data) -> None:
        self.data = data
        self.row = 0
        self.ring = 0
        self.hot = 0
        self.arange = np.arange(data.batch, dtype=np.int64)

    def update(self) -> tuple[np.ndarray, np.ndarray]:
        row = self.row = (self.row + 1) % len(self.data.update_indices)
        return self.data.update_indices[row], self.data.update_priorities[row]

    def update_hot(self) -> tuple[np.ndarray, np.ndarray]:
        """The same indices every call (their tree paths stay in cache), as PER updates are often micro-benchmarked;
        the priorities alternate between two rows so that every call really changes the leaves."""
        self.hot = 1 - self.hot
        return self.data.update_indices[0], self.data.update_priorities[self.hot]

    def insert(self) -> tuple[np.ndarray, np.ndarray]:
        start = self.ring
        self.ring = (start + self.data.batch) % self.data.capacity
        row = self.row = (self.row + 1) % len(self.data.update_priorities)
        return (start + self.arange) % self.data.capacity, self.data.update_priorities[row]


# ---------------------------------------------------------------------------------------------------------------
# Implementations
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """One implementation filled with the data: ``ops[name]()`` is timed, ``check()`` is not."""

    ops: dict[str, Callable[[], object]]
    check: Callable[[], str]
    """runs once before timing; returns what was verified, raises ``AssertionError`` on a mismatch"""
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Impl:
    key: str
    label: str
    prepare: Callable[[Data], Prepared] | None
    unavailable: str = ""


class NumpySumTree:
    """A vectorized binary sum tree in float64: the plain-numpy PER peer.

    Heap layout: ``tree[1]`` is the root, node ``i`` has children ``2i`` and ``2i + 1``, leaf ``j`` is
    ``tree[capacity + j]`` (``capacity`` a power of two). Operations work on whole batches with numpy.
    """

    def __init__(self, capacity: int, alpha: float) -> None:
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f"capacity must be a power of two >= 2, not {capacity!r}")
        self.capacity = capacity
        self.depth = capacity.bit_length() - 1
        self.alpha = alpha
        self.tree = np.zeros(2 * capacity)

    def fill(self, priorities: np.ndarray) -> None:
        """Set every leaf at once and build the inner levels bottom-up."""
        self.tree[self.capacity :] = np.power(priorities, self.alpha)
        start = self.capacity
        while start > 1:
            half = start // 2
            self.tree[half:start] = self.tree[start : 2 * start : 2] + self.tree[start + 1 : 2 * start : 2]
            start = half

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Leaves ``indices`` take ``priorities**alpha`` (later duplicates win); their ancestors are recomputed."""
        node = indices + self.capacity
        self.tree[node] = np.power(priorities, self.alpha)
        for _ in range(self.depth):
            node = node >> 1
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]

    def find(self, targets: np.ndarray) -> np.ndarray:
        """Leaves whose prefix interval holds each target (all descended together, one level per step)."""
        node = np.ones(len(targets), dtype=np.int64)
        target = targets.copy()
        for _ in range(self.depth):
            node = node << 1
            left = self.tree[node]
            right = target >= left
            target -= np.where(right, left, 0.0)
            node += right
        return node - self.capacity

    def sample(self, batch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Stratified: target ``j`` is ``(j + u_j) / batch * total``; returns ``(indices, priorities**alpha)``."""
        targets = (np.arange(batch) + rng.random(batch)) * (self.tree[1] / batch)
        indices = np.minimum(self.find(targets), self.capacity - 1)
        return indices, self.tree[indices + self.capacity]


def _slug(board: str) -> str:
    return board.lower().replace("-", "")


def build_impls(k: int, levels: int) -> tuple[list[Impl], dict]:
    """Every implementation, with import problems recorded instead of raised; also version/import notes."""
    from pynq_rl.overlay import spec as S
    from pynq_rl.overlay.models import replay as model

    info: dict = {}
    impls: list[Impl] = []
    spec = S.ReplaySpec(k=k, levels=levels)
    info["replay_spec"] = {
        "k": spec.k,
        "levels": spec.levels,
        "capacity": spec.capacity,
        "leaf": str(spec.leaf),
        "root_bits": spec.level_width(0),
    }

    impls.append(
        Impl(
            "model_numba",
            "SumTree model (numba)",
            _model_impl(spec, model, True) if model.HAVE_NUMBA else None,
            "" if model.HAVE_NUMBA else "numba not installed",
        )
    )
    impls.append(Impl("model_numpy", "SumTree model (numpy)", _model_impl(spec, model, False)))

    for board_name in ("ZCU106", "Pynq-Z2"):
        board = S.BOARDS[board_name]
        core_spec = board.slot("replay").spec
        key = f"driver_{_slug(board_name)}"
        label = f"driver emu {board_name} (K={core_spec.k}, LEVELS={core_spec.levels})"
        if core_spec.capacity < spec.capacity:
            impls.append(Impl(key, label, None, f"its core holds {core_spec.capacity} leaves < {spec.capacity}"))
        else:
            impls.append(Impl(key, label, _driver_impl(board_name, spec, model)))

    try:
        from importlib.metadata import version

        import cpprb

        info["cpprb"] = version("cpprb")
        impls.append(Impl("cpprb", "cpprb PrioritizedReplayBuffer", _cpprb_impl(cpprb, stratified=False)))
        impls.append(
            Impl(
                "cpprb_stratified",
                "cpprb PrioritizedReplayBuffer (stratified_sample)",
                _cpprb_impl(cpprb, stratified=True),
            )
        )
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        message = f"{type(err).__name__}: {err}"
        info["cpprb_import_error"] = message
        impls.append(Impl("cpprb", "cpprb PrioritizedReplayBuffer", None, message))
        impls.append(Impl("cpprb_stratified", "cpprb PrioritizedReplayBuffer (stratified_sample)", None, message))

    impls.append(_torchrl_impl(info))
    impls.append(Impl("numpy_sumtree", "numpy binary sum tree (float64)", _numpy_impl))
    return impls, info


def _model_impl(spec, model, use_numba: bool) -> Callable[[Data], Prepared]:
    def prepare(data: Data) -> Prepared:
        tree = model.SumTree(spec, use_numba=use_numba)
        codes, _ = model.encode_priorities(np.power(data.priorities, ALPHA), spec.leaf)
        tree.set(np.arange(data.capacity), codes)
        tree.reseed(12345)
        cycle = _Cycle(data)
        leaf = spec.leaf

        def sample():
            return tree.sample(data.batch)

        def update():
            indices, priorities = cycle.update()
            return tree.set(indices, model.encode_priorities(np.power(priorities, ALPHA), leaf)[0])

        def update_hot():
            indices, priorities = cycle.update_hot()
            return tree.set(indices, model.encode_priorities(np.power(priorities, ALPHA), leaf)[0])

        def insert():
            indices, priorities = cycle.insert()
            return tree.set(indices, model.encode_priorities(np.power(priorities, ALPHA), leaf)[0])

        def check() -> str:
            # The other path, driven through the same operations, must hold the same tree and draw the same batch.
            other = model.SumTree(spec, use_numba=not use_numba)
            other.set(np.arange(data.capacity), codes)
            other_cycle = _Cycle(data)
            for _ in range(3):
                update()
                insert()
                for step in (other_cycle.update, other_cycle.insert):
                    indices, priorities = step()
                    other.set(indices, model.encode_priorities(np.power(priorities, ALPHA), leaf)[0])
            for mine, theirs in zip(tree.levels, other.levels):
                assert np.array_equal(mine, theirs), "levels differ between the numba and numpy paths"
            for level, parent in zip(tree.levels[1:], tree.levels[:-1]):
                assert np.array_equal(level.reshape(-1, spec.k).sum(axis=1), parent), "a parent != sum of children"
            other.reseed(tree.prng_state)
            got, want = tree.sample(data.batch), other.sample(data.batch)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), "samples differ"
            assert tree.prng_state == other.prng_state and np.all(got[1] > 0)
            return "bit-exact vs the other model path (levels after 6 sets, one sampled batch); parent = sum"

        ops = {"sample": sample, "update": update, "update_hot": update_hot, "insert": insert}

        return Prepared(
            ops=ops,
            check=check,
            note=f"ReplaySpec(k={spec.k}, levels={spec.levels}) leaf {spec.leaf}; "
            "sample returns (indices, leaf codes); update/insert include p**alpha and "
            "encode_priorities",
        )

    return prepare


def _driver_impl(board_name: str, spec, model) -> Callable[[Data], Prepared]:
    def prepare(data: Data) -> Prepared:
        from pynq_rl import RLOverlay

        overlay = RLOverlay(backend="emu", board=board_name)
        core = overlay.replay
        core.alpha = ALPHA
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            core.update(np.arange(data.capacity), data.priorities)
        cycle = _Cycle(data)

        def sample():
            return core.sample(data.batch, beta=BETA)

        def update():
            return core.update(*cycle.update())

        def update_hot():
            return core.update(*cycle.update_hot())

        def insert():
            return core.update(*cycle.insert())

        def check() -> str:
            reference = model.SumTree(spec)
            reference.set(
                np.arange(data.capacity), model.encode_priorities(np.power(data.priorities, ALPHA), spec.leaf)[0]
            )
            assert core.total_code == reference.total, "driver total != model total"
            core.seed = reference.prng_state = 777
            indices, probabilities, weights = core.sample(data.batch, beta=BETA)
            want, codes = reference.sample(data.batch)
            assert np.array_equal(indices, want), "driver samples != model samples for the same seed"
            assert np.allclose(probabilities, codes / reference.total) and 0 < weights.min() <= weights.max() <= 1
            return "same total and same sampled indices as the model for the same seed; weights in (0, 1]"

        core_spec = core.spec
        used = "" if core_spec.capacity == data.capacity else f"; uses the first {data.capacity} leaves"
        ops = {"sample": sample, "update": update, "update_hot": update_hot, "insert": insert}
        return Prepared(
            ops=ops,
            check=check,
            note=f"core K={core_spec.k} LEVELS={core_spec.levels} (capacity {core_spec.capacity}){used}; "
            "sample returns indices, probabilities and IS weights; update/insert = "
            "ReplayCore.update (alpha, encode, one SET batch through the emulated DMA)",
            extra={"fclk[mhz]": overlay.board_spec.fclk_mhz},
        )

    return prepare


def _cpprb_impl(cpprb, stratified: bool) -> Callable[[Data], Prepared]:
    def prepare(data: Data) -> Prepared:
        kwargs = {"stratified_sample": True} if stratified else {}
        rb = cpprb.PrioritizedReplayBuffer(
            data.capacity, {"obs": {"shape": 1, "dtype": np.float32}}, alpha=ALPHA, **kwargs
        )
        rb.add(obs=np.zeros((data.capacity, 1), dtype=np.float32), priorities=data.priorities)
        cycle = _Cycle(data)
        obs = np.zeros((data.batch, 1), dtype=np.float32)

        def sample():
            return rb.sample(data.batch, beta=BETA)

        def update():
            return rb.update_priorities(*cycle.update())

        def update_hot():
            return rb.update_priorities(*cycle.update_hot())

        def insert():
            _, priorities = cycle.insert()  # cpprb keeps its own ring position
            return rb.add(obs=obs, priorities=priorities)

        def check() -> str:
            assert rb.get_stored_size() == data.capacity
            batch = rb.sample(data.batch, beta=BETA)
            indexes, weights = np.asarray(batch["indexes"]), np.asarray(batch["weights"])
            assert indexes.shape == (data.batch,) and indexes.min() >= 0 and indexes.max() < data.capacity
            assert np.all(np.isfinite(weights)) and 0 < weights.min() <= weights.max() <= 1 + 1e-6
            return "indices in range, weights finite in (0, 1]"

        ops = {"sample": sample, "update": update, "update_hot": update_hot, "insert": insert}

        return Prepared(
            ops=ops,
            check=check,
            note="obs field of one float32 per transition; sample returns indexes, IS weights and obs; "
            "insert = add(obs, priorities) at cpprb's own ring position",
        )

    return prepare


def _torchrl_impl(info: dict) -> Impl:
    key, label = "torchrl", "torchrl PrioritizedReplayBuffer"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch
            import torchrl
            from torchrl.data import LazyTensorStorage, PrioritizedReplayBuffer
        info["torchrl"] = torchrl.__version__
        relevant = sorted(
            {
                str(w.message)[:400]
                for w in caught
                if "_torchrl" in str(w.message) or "C++" in str(w.message) or "extension" in str(w.message).lower()
            }
        )
        if relevant:
            info["torchrl_import_warnings"] = relevant
        PrioritizedReplayBuffer(alpha=ALPHA, beta=BETA, storage=LazyTensorStorage(4), batch_size=2)
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        message = f"{type(err).__name__}: {err}"
        cause = _torchrl_extension_error() if "torchrl" in info else ""  # only when torchrl itself imported
        if cause:
            message += f" (cause: {cause})"
        info["torchrl_error"] = message
        return Impl(key, label, None, message)

    def prepare(data: Data) -> Prepared:
        rb = PrioritizedReplayBuffer(
            alpha=ALPHA, beta=BETA, storage=LazyTensorStorage(data.capacity), batch_size=data.batch
        )
        rb.extend(torch.zeros(data.capacity))
        rb.update_priority(torch.arange(data.capacity), torch.from_numpy(data.priorities))
        cycle = _Cycle(data)
        zeros = torch.zeros(data.batch)

        def sample():
            return rb.sample(return_info=True)

        def update():
            indices, priorities = cycle.update()
            return rb.update_priority(torch.from_numpy(indices), torch.from_numpy(priorities))

        def update_hot():
            indices, priorities = cycle.update_hot()
            return rb.update_priority(torch.from_numpy(indices), torch.from_numpy(priorities))

        def insert():
            _, priorities = cycle.insert()
            indices = rb.extend(zeros)
            return rb.update_priority(indices, torch.from_numpy(priorities))

        def check() -> str:
            _, batch_info = rb.sample(return_info=True)
            indexes = np.asarray(batch_info["index"])
            weights = np.asarray(batch_info["priority_weight"])
            assert indexes.min() >= 0 and indexes.max() < data.capacity
            assert np.all(np.isfinite(weights)) and weights.min() > 0
            return "indices in range, weights finite and positive"

        ops = {"sample": sample, "update": update, "update_hot": update_hot, "insert": insert}

        return Prepared(
            ops=ops,
            check=check,
            note="LazyTensorStorage of one float per transition; insert = extend + update_priority",
        )

    return Impl(key, label, prepare)


def _torchrl_extension_error() -> str:
    """Why torchrl's C++ extension (its segment trees) does not load: the ImportError, symbols demangled."""
    import importlib
    import re
    import shutil

    try:
        importlib.import_module("torchrl._torchrl")
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        text = f"import torchrl._torchrl: {type(err).__name__}: {err}"
        symbol = re.search(r"undefined symbol: (\S+)", text)
        if symbol and shutil.which("c++filt"):
            try:
                demangled = subprocess.run(
                    ["c++filt", symbol.group(1)], capture_output=True, text=True, timeout=10
                ).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                demangled = ""
            if demangled:
                name = demangled.split("(", 1)[0]
                text = text.replace(symbol.group(1), f"{name}(...) [{symbol.group(1)[:40]}...]")
        return text + "; the extension was built against another torch"
    return ""


def _numpy_impl(data: Data) -> Prepared:
    tree = NumpySumTree(data.capacity, ALPHA)
    tree.fill(data.priorities)
    rng = np.random.default_rng(4321)
    cycle = _Cycle(data)

    def sample():
        return tree.sample(data.batch, rng)

    def update():
        return tree.update(*cycle.update())

    def update_hot():
        return tree.update(*cycle.update_hot())

    def insert():
        return tree.update(*cycle.insert())

    def check() -> str:
        leaves = tree.tree[data.capacity :]
        assert math.isclose(tree.tree[1], leaves.sum(), rel_tol=1e-9), "root != sum of leaves"
        u = np.random.default_rng(1).random(data.batch)
        targets = (np.arange(data.batch) + u) * (tree.tree[1] / data.batch)
        got = np.minimum(tree.find(targets), data.capacity - 1)
        want = np.minimum(np.searchsorted(np.cumsum(leaves), targets, side="right"), data.capacity - 1)
        agree = float(np.mean(got == want))
        assert agree >= 0.99, f"only {agree:.1%} of samples agree with searchsorted on the prefix sums"
        return f"root = sum of leaves; {agree:.1%} of samples = searchsorted on float64 prefix sums"

    ops = {"sample": sample, "update": update, "update_hot": update_hot, "insert": insert}

    return Prepared(
        ops=ops,
        check=check,
        note="float64 heap-layout tree; sample returns (indices, priorities**alpha); update recomputes "
        "each ancestor level from its children",
    )
