"""Shared by the ParSa RTL and Verilog tests: random operations, and the driver-like sequence that runs them on an IP
(the emulated model or the simulated HDL) and records everything observable."""

from __future__ import annotations

import numpy as np

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as M

R = S.PARSA_REGISTERS
OBSERVED = ("STATUS", "CYCLES", "CYCLES_ACT", "CYCLES_UPDATE", "EPSILON", "SEED", "MBOX_ACTION", "MBOX_Q")


def offset(name: str) -> int:
    return R[name]["address_offset"]


def run_operation(ip, regs: dict, mode: int, stream: np.ndarray, max_polls: int = 4000) -> dict:
    """Registers, START, then the input stream and output drained together (the core back-pressures its input
    while its output waits), polling STATUS until DONE; returns the output words and every observed register."""
    for name, value in regs.items():
        ip.write(offset(name), int(value) & 0xFFFF_FFFF)
    ip.write(offset("CTRL"), (int(mode) << R["CTRL"]["fields"]["MODE"]["bit_offset"]) | S.Ctrl.START)
    stream = np.asarray(stream, dtype="<u8").view(np.uint8)
    sent, out = 0, bytearray()
    for _ in range(max_polls):
        if sent < len(stream):
            sent += ip.stream_in(stream[sent:], last=True)
        data, _ = ip.stream_out(1 << 20)
        out += data.tobytes()
        if ip.read(offset("STATUS")) & S.Status.DONE:
            break
    result = {name: ip.read(offset(name)) for name in OBSERVED}
    result["out"] = np.frombuffer(bytes(out), dtype="<u8").tolist()
    if hasattr(ip, "record_operation"):  # a recorder making vectors for the converted Verilog
        ip.record_operation(stream.tobytes(), result)
    return result


def random_layout(rng: np.random.Generator, n_dims: int, spec: S.ParsaSpec) -> list[M.Descriptor]:
    """A random tiling layout that fits ``spec`` (sets are dropped until the scheduler accepts it; the bias tile
    alone if none does)."""
    sets = []
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(0, min(n_dims, 3, spec.max_set_dims) + 1))
        dims = tuple(int(d) for d in rng.permutation(n_dims)[:k])
        sets.append(M.TilingSet(dims, tilings=int(rng.integers(1, 4)), tiles=int(rng.integers(1, 4))))
    while sets:
        try:
            return M.schedule(M.TilingLayout(tuple(sets), n_dims), spec)
        except ValueError:
            sets.pop()
    # not even the first set fits this build (e.g. three 3-D tilings of 4**3 tiles on 64-row workers): the bias tile
    return M.schedule(M.TilingLayout((M.TilingSet((), tilings=1, tiles=1),), n_dims), spec)


def config_stream(rng: np.random.Generator, n_dims: int, descriptors) -> np.ndarray:
    lows = rng.uniform(-4, 0, n_dims)
    highs = lows + rng.uniform(0.5, 8, n_dims)
    offsets, scales = M.dimension_codes(lows, highs)
    return np.concatenate([M.pack_dimensions(offsets, scales), M.pack_descriptors(descriptors)])


def act_stream(rng: np.random.Generator, spec: S.ParsaSpec, n_dims: int, n: int, big: bool) -> np.ndarray:
    """``n`` state records: keys (sometimes >= KEYS), random flags, rewards (``big``: saturating), states that
    sometimes fall outside the configured bounds."""
    keys = rng.integers(0, spec.keys + 1, n)
    flags = rng.integers(0, 4, n)
    bound = (1 << 31) - 1 if big else 1 << (spec.value_w - 2)
    rewards = rng.integers(-bound, bound, n)
    states = rng.integers(-6 << 16, 9 << 16, (n, n_dims))
    return M.pack_states(keys, flags, rewards, states, n_dims).ravel()


def window_writes(record: np.ndarray, n_dims: int) -> dict:
    """The mailbox window's register writes for one state record (its 64-bit words): record order from MBOX_KEY."""
    words = np.asarray(record, dtype="<u8").view("<u4")[: 2 + n_dims]
    return {name: int(word) for name, word in zip(S.PARSA_MBOX_WINDOW, words)}


def mailbox_decisions(ip, rng: np.random.Generator, spec: S.ParsaSpec, n_dims: int, n: int, big: bool) -> list:
    """``n`` MAILBOX decisions on random records: mostly a valid key with a reward (so actions are chosen and
    learnt from), sometimes no reward, TERMINAL, or a key >= KEYS; rewards sometimes saturating."""
    seen = []
    for _ in range(n):
        key = int(rng.integers(0, spec.keys)) if rng.random() < 0.85 else spec.keys
        flags = int(rng.choice([0, 1, 1, 1, 1, 2, 3]))
        bound = (1 << 31) - 1 if big else 1 << (spec.value_w - 2)
        record = M.pack_states(
            [key], [flags], [int(rng.integers(-bound, bound))], rng.integers(-6 << 16, 9 << 16, (1, n_dims)), n_dims
        )
        seen.append(
            run_operation(ip, window_writes(record.ravel(), n_dims), S.ParsaMode.MAILBOX, np.zeros(0, np.uint64))
        )
    return seen


def scenario(ip, rng_seed: int, spec: S.ParsaSpec) -> list:
    """SEED, CONFIG, LOAD_POLICY, pending rewards, three ACT batches each followed by MAILBOX decisions, a DUMP:
    everything observable, in order."""
    rng = np.random.default_rng(rng_seed)
    one = 1 << spec.coef.frac
    n_dims = int(rng.integers(1, spec.max_dims + 1))
    descriptors = random_layout(rng, n_dims, spec)
    big = bool(rng.integers(0, 2))
    regs = {
        "SEED": int(rng.integers(0, 1 << 32)),
        "N_DIMS": n_dims,
        "N_ACTIONS": int(rng.integers(1, spec.max_actions + 1)),
        "N_TILINGS": len(descriptors),
        "ALPHA": int(rng.integers(0, one + 1)),
        "GAMMA": int(rng.integers(0, one + 1)),
        "EPSILON": int(rng.choice([0, int(rng.integers(0, one + 1)), one])),
        "EPSILON_DECAY": int(rng.integers(one // 2, one + 1)),
        "OPTIONS": int(rng.integers(0, 4)) | 1,
    }
    seen = [run_operation(ip, regs, S.ParsaMode.CONFIG, config_stream(rng, n_dims, descriptors))]
    vmax = (1 << 31) - 1 if big else 1 << (spec.value_w - 3)
    policy = rng.integers(-vmax, vmax, (spec.workers, spec.tiles_per_worker, spec.max_actions))
    seen.append(run_operation(ip, {}, S.ParsaMode.LOAD_POLICY, M.pack_policy(policy)))
    for batch in range(3):
        for _ in range(int(rng.integers(0, 3))):
            ip.write(offset("REWARD_KEY"), int(rng.integers(0, spec.keys + 1)))
            ip.write(offset("REWARD"), int(rng.integers(-vmax, vmax)) & 0xFFFF_FFFF)
        regs = {"OPTIONS": int(rng.integers(0, 4)) | (1 if batch < 2 else 0)}
        seen.append(
            run_operation(ip, regs, S.ParsaMode.ACT, act_stream(rng, spec, n_dims, int(rng.integers(1, 5)), big))
        )
        seen += mailbox_decisions(ip, rng, spec, n_dims, int(rng.integers(1, 4)), big)
    seen.append(run_operation(ip, {}, S.ParsaMode.DUMP_POLICY, np.zeros(0, np.uint64)))
    return seen
