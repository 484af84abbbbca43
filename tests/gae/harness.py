"""Shared by the GAE core's tests: the small build they convert, random operations packed as the driver packs them,
and the driver-like sequence that runs an operation on an IP (the emulated model, the simulated HDL or the converted
Verilog) and collects what comes back."""

from __future__ import annotations

import numpy as np

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import gae as model


def small_spec(k: int) -> S.GaeSpec:
    """The build these tests convert: 3 lanes, 24 timesteps, k-step lookahead."""
    return S.GaeSpec(lanes=3, t_max=24, lookahead=k)


def run_operation(ip, regs: dict, stream: np.ndarray, max_polls: int = 4000):
    """Registers, START, the input stream, then poll STATUS and collect the output: what the driver does."""
    start_operation(ip, regs)
    return finish_operation(ip, stream, max_polls)


def write_registers(ip, regs: dict) -> None:
    """Each register of ``regs`` (by name), as the 32-bit word the bus carries."""
    for name, value in regs.items():
        ip.write(S.GAE_REGISTERS[name]["address_offset"], value & 0xFFFF_FFFF)


def start_operation(ip, regs: dict) -> None:
    """The registers, then CTRL.START (with the MODE of ``regs["CTRL"]``)."""
    write_registers(ip, regs)
    ip.write(S.GAE_REGISTERS["CTRL"]["address_offset"], regs.get("CTRL", 0) | S.Ctrl.START)


def finish_operation(ip, stream: np.ndarray, max_polls: int = 4000, both_channels: bool = False):
    """The input stream of a started operation, then poll STATUS and collect the output: ``(bytes, STATUS,
    CYCLES)``. ``both_channels`` (a simulated core only): input and output move in the same cycles, as the DMA's
    two channels do on a board; otherwise the output waits (back-pressure) while the input is offered."""
    sent = 0
    out = bytearray()
    while sent < len(stream):
        if both_channels:
            accepted, data, _ = ip.stream_duplex(stream[sent:], True, 1 << 20)
        else:
            accepted = ip.stream_in(stream[sent:], last=True)
            data = ip.stream_out(1 << 20)[0]
        out += data.tobytes()
        if not accepted and not (ip.read(S.GAE_REGISTERS["STATUS"]["address_offset"]) & S.Status.BUSY):
            break  # the core stopped loading (an error): the rest would be back-pressured forever
        sent += accepted
    for _ in range(max_polls):
        data, last = ip.stream_out(1 << 20)
        out += data.tobytes()
        status = ip.read(S.GAE_REGISTERS["STATUS"]["address_offset"])
        if status & S.Status.DONE:
            break
    cycles = ip.read(S.GAE_REGISTERS["CYCLES"]["address_offset"])
    return bytes(out), status, cycles


def operation(spec, mode, rng, n_steps, n_envs, gamma, lam, scale):
    """Random codes of ``n_envs`` environments (``ceil(n_envs / LANES)`` lane-batches) of ``n_steps`` steps (any
    number: ``ceil(n_steps / T_MAX)`` chunks), packed as the driver packs them, plus the register values."""
    n_lanes = n_envs
    if mode == S.GaeMode.Q8_RUNS:  # random codes and random headers: every run's SCALE and OFFSET words
        n_runs = spec.runs(n_steps + 1)

        def coded(rows):
            shape = (n_runs, n_lanes)
            scales = rng.integers(-(1 << 20), 1 << 20, shape) * scale
            offsets = rng.integers(-(1 << 22), 1 << 22, shape) * scale
            return model.Q8Runs(
                codes=rng.integers(-128, 128, (rows, n_lanes)),
                scale=np.clip(scales, spec.scale.min_code, spec.scale.max_code).astype(np.int64),
                offset=np.clip(offsets, spec.data.min_code, spec.data.max_code).astype(np.int64),
                error=0.0,
            )

        rewards, values = coded(n_steps), coded(n_steps + 1)
        dones = (rng.random((n_steps, n_lanes)) < 0.15).astype(np.int64)
        stream = model.pack_input_runs(spec, rewards, values, dones)
        return registers(spec, mode, n_steps, n_envs, gamma, lam), stream
    if mode == S.GaeMode.Q8:
        rewards, values = rng.integers(-128, 128, (n_steps, n_lanes)), rng.integers(-128, 128, (n_steps + 1, n_lanes))
        data = spec.data
        regs = {name: int(rng.integers(-(1 << 20), 1 << 20) * scale) for name in ("R_SCALE", "V_SCALE")}
        regs |= {name: int(rng.integers(-(1 << 22), 1 << 22) * scale) for name in ("R_OFFSET", "V_OFFSET")}
        limits = {"R_SCALE": spec.scale, "V_SCALE": spec.scale, "R_OFFSET": data, "V_OFFSET": data}
        regs = {k: int(np.clip(v, limits[k].min_code, limits[k].max_code)) for k, v in regs.items()}
    else:
        bound = int(min(2**31 - 1, 2**20 * scale))
        rewards = rng.integers(-bound, bound, (n_steps, n_lanes))
        values = rng.integers(-bound, bound, (n_steps + 1, n_lanes))
        regs = {}
    dones = (rng.random((n_steps, n_lanes)) < 0.15).astype(np.int64)
    regs |= registers(spec, mode, n_steps, n_envs, gamma, lam)
    stream = model.pack_input(spec, mode, rewards, values, dones).view(np.uint8).ravel()
    return regs, stream


def registers(spec, mode, n_steps, n_envs, gamma, lam) -> dict:
    """The registers of an operation (all but the q8 block scales)."""
    gamma_code = int(round(gamma * (1 << spec.coef.frac)))
    gl_code = int(round(gamma * lam * (1 << spec.coef.frac)))
    n_batches = model.batches(spec, n_envs)
    n_chunks, first = spec.chunking(n_steps)
    return {
        "T": first,
        "CHUNKS": n_chunks,
        "LANES_USED": n_envs - (n_batches - 1) * spec.lanes,
        "BATCHES": n_batches,
        "GAMMA": gamma_code,
        "GAMMA_LAMBDA": gl_code,
        "CTRL": int(mode) << S.GAE_REGISTERS["CTRL"]["fields"]["MODE"]["bit_offset"],
    }


def rollout(seed, n_steps, n_envs, done_prob=0.05):
    """A float32 rollout for the driver: normal rewards, random-walk values and dones with ``done_prob``."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
    values = (np.cumsum(rng.normal(size=(n_steps + 1, n_envs)), axis=0)).astype(np.float32)
    dones = rng.random((n_steps, n_envs)) < done_prob
    return rewards, values, dones
