"""The GAE processing element alone in MyHDL, against the model, with bubbles anywhere in its input.

The core feeds a PE one element per cycle with gaps wherever the input stream stalls, and a continuation chunk may
follow its predecessor after any number of idle cycles. Which A_{t+k} the element entering the A loop needs
depends on whether the element ahead is still in flight (and, for k = 2, the loop recomputes the last A while
its second stage is empty), so gaps of every length, right after the bootstrap row and between two elements, are
what exercises it; the core-level tests rarely stall mid-sequence.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from myhdl import Signal, StopSimulation, always, block, delay, instance, intbv

from pynq_rl.overlay.build.gae_report import pe_with_powers
from pynq_rl.overlay.hdl.gae.pe import PE_LATENCY
from pynq_rl.overlay.models.gae import gae_fixed
from pynq_rl.overlay.spec import GaeSpec

#: idle cycles before the first row: the C**j chain of :func:`pe_with_powers` settles after GAMMA_LAMBDA is set
SETTLE_CYCLES = 24


def simulate_pe(
    spec: GaeSpec, rows: list[tuple[int, int, int, int, int]], gamma: int, gamma_lambda: int
) -> list[tuple[int, int, bool]]:
    """Clock ``rows`` (valid, bootstrap, done, reward, value) into one PE; return its (A, R, saturated) outputs."""
    outputs: list[tuple[int, int, bool]] = []
    idle = [(0, 0, 0, 0, 0)]
    schedule = idle * SETTLE_CYCLES + rows + idle * (PE_LATENCY + 2)

    @block
    def bench():
        word = dict(min=spec.data.min_code, max=spec.data.max_code + 1)
        adv, ret, reward, value = (Signal(intbv(0, **word)) for _ in range(4))
        out_valid, saturated, done, in_valid, in_bootstrap, clock = (Signal(bool(0)) for _ in range(6))
        coef = dict(min=0, max=(1 << spec.coef.frac) + 1)
        gamma_s, gamma_lambda_s = Signal(intbv(gamma, **coef)), Signal(intbv(gamma_lambda, **coef))
        dut = pe_with_powers(
            adv,
            ret,
            out_valid,
            saturated,
            reward,
            value,
            done,
            in_valid,
            in_bootstrap,
            gamma_s,
            gamma_lambda_s,
            clock,
            spec,
        )

        @instance
        def tick():
            while True:
                yield delay(5)
                clock.next = not clock

        @instance
        def drive():
            for valid, boot, d, r, v in schedule:
                in_valid.next, in_bootstrap.next, done.next = bool(valid), bool(boot), bool(d)
                reward.next, value.next = r, v
                yield clock.posedge
            raise StopSimulation

        @always(clock.posedge)
        def collect():
            if out_valid:
                outputs.append((int(adv), int(ret), bool(saturated)))

        return dut, tick, drive, collect

    bench().run_sim(quiet=1)
    return outputs


@st.composite
def pe_inputs(draw, spec: GaeSpec):
    """Episodes fed backward (bootstrap row first), gaps of 0 to 14 idle cycles (past the PE's depth) anywhere; the
    idle rows carry random bootstrap / done / reward bits that must be ignored. Returns rows and the model's
    (A, R) in output order with the saturation flag per episode."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
    lo, hi = spec.data.min_code, spec.data.max_code
    bubble_p = draw(st.sampled_from([0.0, 0.3, 0.7]), label="gap probability")
    gamma = draw(st.integers(0, 1 << spec.coef.frac), label="GAMMA code")
    gamma_lambda = draw(st.integers(0, 1 << spec.coef.frac), label="GAMMA_LAMBDA code")

    def gap():
        if rng.random() >= bubble_p:
            return []
        return [
            (0, int(rng.integers(2)), int(rng.integers(2)), int(rng.integers(lo, hi)), 0)
            for _ in range(int(rng.integers(1, 15)))
        ]

    rows, want = [], []
    for _ in range(draw(st.integers(1, 4), label="episodes")):
        n_steps = int(rng.integers(1, 13))
        scale = float(2.0 ** rng.choice([12, 20, spec.data.width - 2]))  # small to saturating
        rewards = np.clip(np.round(rng.normal(0, scale, n_steps)), lo, hi).astype(np.int64)
        values = np.clip(np.round(rng.normal(0, scale, n_steps + 1)), lo, hi).astype(np.int64)
        dones = (rng.random(n_steps) < 0.2).astype(np.int64)
        rows += gap() + [(1, 1, 0, 0, int(values[-1]))]
        for t in range(n_steps - 1, -1, -1):
            rows += gap() + [(1, 0, int(dones[t]), int(rewards[t]), int(values[t]))]
        result = gae_fixed(
            spec, rewards[:, None], values[:, None], dones[:, None], gamma, gamma_lambda, use_numba=False
        )
        want.append((result.advantages[::-1, 0], result.returns[::-1, 0], bool(result.saturated)))
    return rows, want, gamma, gamma_lambda


@pytest.mark.parametrize("port_bits", [25, 18])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_pe_equals_model_with_gaps_anywhere(k, port_bits):
    spec = GaeSpec(lanes=1, lookahead=k, multiplier_port_bits=port_bits)

    @settings(max_examples=8, deadline=None)
    @given(case=pe_inputs(spec))
    def check(case):
        rows, want, gamma, gamma_lambda = case
        got = simulate_pe(spec, rows, gamma, gamma_lambda)
        assert len(got) == sum(len(a) for a, _, _ in want)
        index = 0
        for adv, ret, sat in want:
            episode = got[index : index + len(adv)]
            index += len(adv)
            assert [(a, r) for a, r, _ in episode] == list(zip(adv.tolist(), ret.tolist()))
            assert any(s for _, _, s in episode) == sat

    check()


@pytest.mark.parametrize("port_bits", [25, 18])
@pytest.mark.parametrize("k", [2, 3])
def test_pe_equals_model_with_a_gap_after_every_element(k, port_bits):
    """Deterministic: gaps of 1, 2 and 3 cycles after each element in turn, so every element enters the loop once
    with the element ahead still in stage 9 and once behind an empty one, and the loop's held products are read."""
    spec = GaeSpec(lanes=1, lookahead=k, multiplier_port_bits=port_bits)
    rng = np.random.default_rng(7)
    n_steps = 24
    rewards = rng.integers(-(1 << 20), 1 << 20, n_steps)
    values = rng.integers(-(1 << 20), 1 << 20, n_steps + 1)
    dones = np.zeros(n_steps, np.int64)
    dones[9] = 1
    rows = [(1, 1, 0, 0, int(values[-1]))]
    for t in range(n_steps - 1, -1, -1):
        rows += [(1, 0, int(dones[t]), int(rewards[t]), int(values[t]))]
        rows += [(0, 0, 0, 0, 0)] * (t % 4)
    gamma, gamma_lambda = round(0.99 * (1 << spec.coef.frac)), round(0.99 * 0.95 * (1 << spec.coef.frac))
    want = gae_fixed(spec, rewards[:, None], values[:, None], dones[:, None], gamma, gamma_lambda, use_numba=False)
    got = simulate_pe(spec, rows, gamma, gamma_lambda)
    assert [(a, r) for a, r, _ in got] == list(zip(want.advantages[::-1, 0].tolist(), want.returns[::-1, 0].tolist()))
