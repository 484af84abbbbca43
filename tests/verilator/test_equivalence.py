"""Rung 11: the converted Verilog under Verilator is the MyHDL simulation, cycle for cycle.

The same driver calls on the same small builds, once on ``rtl`` (the MyHDL cores) and once on ``verilator`` (the
Verilog MyHDL converted them to): every output, every core's CYCLES after every call, and the board's clock at the
end must be equal. The harness replays rtl's bus handshakes in C++, so any difference is the Verilog's (a conversion
that changes what the design computes, or when), or the harness's.
"""

import numpy as np
import pytest

from pynq_rl import RLOverlay
from tests.common.boards import RTL_PARSA_TEST_BOARD, RTL_REPLAY_TEST_BOARD, RTL_TEST_BOARD, require_verilator

LAYOUT = {"tilings_per_set": 2, "tiles_per_dim": 3, "tilings": [{"dims": []}, {"dims": [0]}, {"dims": [1, 2]}]}
BOUNDS = ([-1.0, -2.0, 0.0], [1.0, 2.0, 10.0])


@pytest.fixture(autouse=True)
def _verilator():
    require_verilator()


def gae_session(backend: str) -> list:
    """Raw and q8 computes of several shapes: one chunk, chained chunks (T past the build's T_MAX of 40), several
    lane-batches, episode ends."""
    overlay = RLOverlay(backend=backend, board=RTL_TEST_BOARD)
    rng = np.random.default_rng(1)
    seen = []
    for n_steps, n_envs, quantize in ((10, 3, True), (85, 6, False), (40, 4, True), (41, 9, False)):
        rewards, values = rng.normal(size=(n_steps, n_envs)), rng.normal(size=(n_steps + 1, n_envs))
        dones = rng.random((n_steps, n_envs)) < 0.1
        advantages, returns = overlay.gae.compute(rewards, values, dones, quantize=quantize)
        seen.append((advantages.tobytes(), returns.tobytes(), overlay.gae.cycles))
    return seen + [overlay.device.simulation.cycle]


def replay_session(backend: str) -> list:
    """Updates (with repeats), PRNG and host-uniform samples, a dump and a state round trip."""
    overlay = RLOverlay(backend=backend, board=RTL_REPLAY_TEST_BOARD)
    replay = overlay.replay
    replay.seed = 77
    rng = np.random.default_rng(2)
    seen = []
    for _ in range(3):
        indices = rng.integers(0, replay.capacity, 30)
        replay.update(indices, rng.gamma(1.0, 2.0, 30) * (rng.random(30) < 0.9))
        seen.append((replay.total_code, replay.nonzero, replay.cycles))
        got, probabilities, weights = replay.sample(16, beta=0.4)
        seen.append((got.tobytes(), probabilities.tobytes(), weights.tobytes(), replay.cycles, replay.seed))
    got, _, _ = replay.sample(8, uniforms=rng.integers(0, 2**32, 8, dtype=np.uint64))
    seen.append((got.tobytes(), replay.dump_codes().tobytes()))
    state = replay.state_dict()
    replay.clear()
    replay.load_state_dict(state)
    seen.append((replay.dump_codes().tobytes(), replay.sample(8)[0].tobytes()))
    return seen + [overlay.device.simulation.cycle]


def parsa_session(backend: str) -> list:
    """Configure, mailbox decisions with rewards, a batch with values, a pending reward, policy dump and load."""
    overlay = RLOverlay(backend=backend, board=RTL_PARSA_TEST_BOARD)
    parsa = overlay.parsa
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.2, epsilon_decay=0.99, frac_bits=6, seed=5)
    rng = np.random.default_rng(3)
    seen = [parsa.cycles]
    action = parsa.act(rng.uniform(BOUNDS[0], BOUNDS[1]))
    for _ in range(6):
        action = parsa.act(rng.uniform(BOUNDS[0], BOUNDS[1]), reward=1.0 if action == 2 else -0.5, key=1)
        seen.append((action, parsa.cycles, parsa.cycles_act, parsa.cycles_update, parsa.epsilon))
    n = 12
    actions, values = parsa.act_batch(
        rng.uniform(-3, 12, (n, 3)), rng.normal(size=n), rng.integers(0, 4, n), rng.random(n) < 0.2, return_values=True
    )
    seen.append((actions.tobytes(), values.tobytes(), parsa.cycles, parsa.seed))
    parsa.set_reward(2, 1.5)
    seen.append(parsa.act(np.zeros(3), key=2))
    policy = parsa.dump_policy()
    parsa.load_policy(policy[::-1].copy())
    seen.append((policy.tobytes(), parsa.dump_banks().tobytes()))
    return seen + [overlay.device.simulation.cycle]


@pytest.mark.parametrize("session", [gae_session, replay_session, parsa_session], ids=["gae", "replay", "parsa"])
def test_verilog_equals_the_myhdl_simulation_cycle_for_cycle(session):
    on_verilator = session("verilator")
    on_rtl = session("rtl")
    for step, (verilog, myhdl) in enumerate(zip(on_verilator, on_rtl)):
        assert verilog == myhdl, f"call {step}: verilator {verilog!r:.200} != rtl {myhdl!r:.200}"
    assert len(on_verilator) == len(on_rtl)


def reprogramming_session(backend: str) -> list:
    """Stored state, then the overlay downloaded again, then the drivers at work on the fresh cores."""
    overlay = RLOverlay(backend=backend, board=RTL_REPLAY_TEST_BOARD)
    replay = overlay.replay
    replay.update([1, 2, 3], [1.0, 2.0, 3.0])
    seen = [(replay.total_code, replay.nonzero)]
    overlay.download()
    seen.append((replay.total_code, replay.nonzero, bool(replay.dump_codes().any())))
    replay.update([4], [1.0])
    seen.append((replay.total_code, replay.nonzero, replay.sample(4)[0].tolist()))
    return seen + ([overlay.device.simulation.cycle] if backend != "emu" else [])


def test_programming_the_pl_again_pulses_the_reset_and_the_drivers_work_on():
    """A download resets every core's registers and the drivers bound before it work on; the replay driver CLEARs
    its tree after it (memories keep their contents through a reset pulse, and a new bitstream's UltraRAM holds
    anything), so the tree is empty, not what was stored before: the same on all three emulated backends, cycle for
    cycle between rtl and verilator."""
    on_verilator = reprogramming_session("verilator")
    (stored_total, stored_leaves), after_download, (total, leaves, sampled) = on_verilator[:3]
    assert stored_total > 0 and stored_leaves == 3
    assert after_download == (0, 0, False)  # registers reset, tree cleared: nothing of the old contents is sampled
    assert 0 < total < stored_total and leaves == 1 and sampled == [4] * 4
    assert on_verilator == reprogramming_session("rtl")
    assert on_verilator[:-1] == reprogramming_session("emu")
