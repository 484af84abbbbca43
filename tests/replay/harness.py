"""Shared by the replay core's RTL and Verilog tests: operations as the driver issues them, and what the model
(``SumTree``) says each one leaves on the bus (output bytes, STATUS, CYCLES, TOTAL, NONZERO and SEED)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.hdl.replay.core import CHECK_CYCLES
from pynq_rl.overlay.models import replay as model


@dataclass
class Op:
    """One operation as the driver issues it: register writes, START with ``mode``, an input stream."""

    mode: int
    regs: dict = field(default_factory=dict)
    stream: bytes = b""
    name: str = ""


@dataclass
class Outcome:
    """What the model says an operation leaves on the bus."""

    output: bytes
    status: int
    cycles: int | None  # None: not predicted exactly (refused, or an input stream that ends early/late)
    total: int
    nonzero: int
    seed: int


def set_op(indices, codes, name="set") -> Op:
    """A SET of ``codes`` at the leaves ``indices``, packed as the driver streams it."""
    return Op(int(S.ReplayMode.SET), {}, model.pack_set(indices, codes).tobytes(), name)


def sample_op(count: int, stride: int | None = None, uniforms=None, name="sample") -> Op:
    """A SAMPLE of ``count`` (the core draws its uniforms), or a SAMPLE_UNIFORM with the given ``uniforms``."""
    regs = {"COUNT": count, "STRIDE": S.ReplaySpec.stride(max(count, 1)) if stride is None else stride}
    if uniforms is None:
        return Op(int(S.ReplayMode.SAMPLE), regs, b"", name)
    return Op(int(S.ReplayMode.SAMPLE_UNIFORM), regs, model.pack_uniforms(np.asarray(uniforms)).tobytes(), name)


def expect(tree: model.SumTree, op: Op) -> Outcome:
    """Apply ``op`` to the model; the bytes, STATUS and CYCLES the core must produce."""
    spec = tree.spec
    out, status, cycles = b"", S.Status.DONE, None
    if "SEED" in op.regs:
        tree.reseed(op.regs["SEED"])
    mode = op.mode
    if mode == S.ReplayMode.SET:
        indices, codes = model.unpack_set(np.frombuffer(op.stream, dtype="<u8"))
        result = tree.set(indices, codes)
        status |= (S.Status.SATURATED if result.saturated else 0) | (S.Status.ERR_CONFIG if result.rejected else 0)
        cycles = len(indices) + spec.set_depth
    elif mode in (S.ReplayMode.SAMPLE, S.ReplayMode.SAMPLE_UNIFORM):
        count, stride = op.regs["COUNT"], op.regs["STRIDE"]
        if not 1 <= count <= spec.max_count or count * stride >= 1 << 32 or tree.total == 0:
            status |= S.Status.ERR_CONFIG
            cycles = 0
        elif mode == S.ReplayMode.SAMPLE:
            indices, codes = tree.sample(count, stride=stride)
            out, cycles = model.pack_results(indices, codes).tobytes(), count + spec.sample_depth
        else:
            uniforms = (np.frombuffer(op.stream, dtype="<u8") & np.uint64(0xFFFF_FFFF)).astype(np.int64)
            if len(uniforms) != count:
                status |= S.Status.ERR_STREAM
            else:
                cycles = count + spec.sample_depth - CHECK_CYCLES
            indices, codes = tree.find(model.sample_targets(tree.total, uniforms[:count], stride))
            out = model.pack_results(indices, codes).tobytes()
    elif mode == S.ReplayMode.DUMP:
        out, cycles = tree.dump().tobytes(), spec.dump_cycles
    elif mode == S.ReplayMode.CLEAR:
        tree.clear()
        cycles = spec.capacity // spec.k
    else:
        status |= S.Status.ERR_CONFIG
        cycles = 0
    return Outcome(out, int(status), cycles, tree.total, tree.nonzero, tree.prng_state)
