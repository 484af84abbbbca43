"""Workloads of ``benchmarks/verilator_speed.py``: the driver calls its measurements make on an overlay. A round of
:class:`Work` on a core (``gae.compute``, ``replay.update`` then ``replay.sample``, ParSa's ``act_batch`` on
MountainCar's layout), its words in the tables, the placeholder row of its rate, and one register access of each kind
(PYNQ's MMIO read and write, the drivers' index into ``mmio.array``).

A helper module of the script (imported as ``_verilator_workloads``: the script's own directory is first on
``sys.path``), split off so the script keeps how the calls are timed (probes, rtl overlays, starts) apart from what
is called; the same calls run on ``verilator`` and ``rtl``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from _verilator_report import slug

__all__ = [
    "MOUNTAINCAR",
    "MOUNTAINCAR_BOUNDS",
    "Work",
    "gae_call",
    "replay_update_call",
    "work_calls",
    "describe",
    "rate_row",
    "register_accesses",
]

MOUNTAINCAR = {"tilings": [{"dims": [0, 1], "tilings": 8, "tiles": 8}]}
MOUNTAINCAR_BOUNDS = ([-1.2, -0.07], [0.6, 0.07])


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
    return (
        f"gae.compute {envs}x{steps} {'q8-runs' if quantize else 'raw'}",
        lambda: gae.compute(rewards, values, dones, quantize=quantize),
    )


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
    parts = {
        "gae": f"gae.compute {work.gae[0]}x{work.gae[1]}",
        "replay": f"replay.update+sample {work.replay:,}",
        "parsa": f"parsa.act_batch {work.parsa:,}",
    }
    return " + ".join(parts.values()) if core == "board" else parts[core]


def rate_row(backend: str, board: str, cores: str, work_name: str, work: Work) -> dict:
    """The row of the rate of ``work`` on ``cores`` of ``board`` on ``backend``, ``not run`` until it is measured."""
    return {
        "key": f"rate_{backend}_{slug(board)}_{cores}_{work_name}",
        "section": "rate",
        "backend": backend,
        "board": board,
        "cores": cores,
        "work": work_name,
        "round": describe(work, cores),
        "status": "not run",
    }


# ---------------------------------------------------------------------------------------------------------------
# Registers: one access of each kind from Python
# ---------------------------------------------------------------------------------------------------------------


def register_accesses(overlay) -> dict[str, Callable[[], object]]:
    """One register access each, on the GAE core of ``overlay``: PYNQ's ``MMIO.read`` of STATUS, ``MMIO.write`` of
    GAMMA's own value back (no state changes), and the drivers' index into ``mmio.array``."""
    from pynq_rl.overlay import spec as S

    gae = overlay.gae
    status = S.GAE_REGISTERS["STATUS"]["address_offset"]
    gamma = S.GAE_REGISTERS["GAMMA"]["address_offset"]
    value = gae.mmio.read(gamma)
    array, word = gae.mmio.array, status >> 2
    return {
        "mmio.read": lambda: gae.mmio.read(status),
        "mmio.write": lambda: gae.mmio.write(gamma, value),
        "mmio.array[i]": lambda: int(array[word]),
    }
