"""The flow-control demo: the task, its baselines, the OPaL layout on the two builds, and learning on the core."""

import numpy as np
import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.agents.sarsa import netdemo as nd
from pynq_rl.host.drivers.tiling_config import OPAL_DDOS_TILING
from pynq_rl.overlay import spec as S

EVAL_SEEDS = [10**6 + i for i in range(3)]


def oracle_policy(env):
    """Drops exactly the attack flows (it reads the hidden labels: an upper bound, not a baseline)."""
    return lambda obs: np.where(env.kinds == nd.ATTACK, nd.N_ACTIONS - 1, 0)


def test_environment_shapes_bounds_and_reward_accounting():
    env = nd.FlowControlEnv(nd.EnvConfig(n_flows=12, ticks=10))
    obs, _ = env.reset(seed=3)
    assert obs.shape == (12, 20) and env.observation_space.contains(obs)
    total, ticks = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(np.full(12, 4))
        assert env.observation_space.contains(obs) and not terminated
        assert reward == pytest.approx(info["flow_rewards"].mean())
        assert 0.0 <= info["legit_goodput"] <= 1.0 + 1e-12 and info["overload"] >= 0.0
        total += reward
        ticks += 1
        if truncated:
            break
    assert ticks == 10
    with pytest.raises(ValueError, match="action must be 12 integers in"):
        env.step(np.full(12, 10))


def test_link_model_delivers_at_most_capacity_and_charges_overload():
    env = nd.FlowControlEnv(nd.EnvConfig(n_flows=10, ticks=5, beta=0.5, kappa=1.0))
    env.reset(seed=0)
    env.offered = np.array([3.0] * 5 + [0.5] * 5)  # 17.5 fair shares offered to a link of 10
    env.kinds = np.array([nd.ATTACK] * 5 + [nd.LIGHT] * 5)
    env.legit = (env.kinds != nd.ATTACK).astype(float)
    _, _, _, _, info = env.step(np.zeros(10, dtype=int))
    scale = 10 / 17.5
    expected = np.concatenate([-0.5 * 3.0 * scale - 0.75 * 3.0 * np.ones(5), 0.5 * scale - 0.75 * 0.5 * np.ones(5)])
    np.testing.assert_allclose(info["flow_rewards"], expected)
    assert info["overload"] == pytest.approx(0.75) and info["legit_goodput"] == pytest.approx(scale)


def test_baselines_are_ordered_and_the_oracle_bounds_them():
    env = nd.FlowControlEnv()
    results = {
        name: nd.evaluate_policy(env, EVAL_SEEDS, policy)["return"]
        for name, policy in [
            ("pass_all", nd.pass_all_policy),
            ("random", nd.random_policy(np.random.default_rng(0))),
            ("fair_share", nd.fair_share_policy),
        ]
    }
    oracle = nd.evaluate_policy(env, EVAL_SEEDS, oracle_policy(env))
    assert results["pass_all"] < results["random"] < results["fair_share"] < oracle["return"]
    assert oracle["legit_goodput"] == pytest.approx(1.0) and oracle["overload"] == 0.0


def test_the_opal_layout_fits_the_zcu106_build_but_not_the_pynq_z2_build():
    fits, why = nd.check_fits("ZCU106")
    assert fits and "22744 tiles in 8 x 4096 = 32768 rows" in why
    fits, why = nd.check_fits("Pynq-Z2")
    assert not fits and "22744 tiles needed, 4 x 1024 = 4096 rows" in why
    core = RLOverlay(backend="emu", board="Pynq-Z2").parsa
    with pytest.raises(ValueError, match="22744 policy rows"):
        core.configure(OPAL_DDOS_TILING, nd.N_ACTIONS, (nd.OBS_LOW, nd.OBS_HIGH))


def test_short_training_on_the_emulated_zcu106_beats_random_and_no_mitigation():
    """8 episodes x 40 ticks x 32 flows = 10k records through act_batch (one DMA per tick)."""
    args = nd.Args(episodes=8, eval_every=8, eval_episodes=3, env=nd.EnvConfig(ticks=40))
    result = nd.train(args)
    before, after = result["evaluations"][0], result["evaluations"][-1]
    assert after["episode"] == 8 and len(result["train_returns"]) == 8
    assert before["return"] == pytest.approx(result["baselines"]["pass_all"]["return"])  # zero policy: action 0
    assert after["return"] > result["baselines"]["random"]["return"] + 5.0
    assert after["return"] > before["return"] + 20.0
    assert result["learner"].spec == S.board("ZCU106").slot("parsa").spec


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="backend must be one of"):
        nd.train(nd.Args(backend="gpu"))
    with pytest.raises(ValueError, match="must be >= 1"):
        nd.train(nd.Args(episodes=0))
    with pytest.raises(ValueError, match="n_flows and ticks must be >= 2"):
        nd.FlowControlEnv(nd.EnvConfig(n_flows=1))
    with pytest.raises(ValueError, match="policy rows"):
        nd.train(nd.Args(board="Pynq-Z2", episodes=1))


@pytest.mark.slow
def test_default_training_beats_the_fair_share_policer_on_the_core_and_on_the_host():
    core = nd.train(nd.Args())
    ref = nd.train(nd.Args(backend="host"))
    fair = core["baselines"]["fair_share"]["return"]
    final_core, final_ref = core["evaluations"][-1], ref["evaluations"][-1]
    print(
        f"\nfair-share {fair:.1f}, core {final_core['return']:.1f} ({core['wall_time_s']:.0f} s), "
        f"float {final_ref['return']:.1f} ({ref['wall_time_s']:.0f} s)"
    )
    assert final_core["return"] > fair and final_ref["return"] > fair
    assert final_core["overload"] < 0.05 and final_core["legit_goodput"] > 0.85
    assert abs(final_core["return"] - final_ref["return"]) < 6.0


def test_main_takes_every_args_field_as_an_option(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(nd, "train", lambda args: seen.append(args) or {"learner": None, "train_returns": []})
    argv = ["--episodes", "3", "--backend", "host", "--env", '{"n_flows": 8, "attack_fraction": [0.1, 0.2]}']
    assert nd.main(argv) == 0
    env = nd.EnvConfig(n_flows=8, attack_fraction=(0.1, 0.2))
    assert seen == [nd.Args(episodes=3, backend="host", env=env)]
    assert nd.main([]) == 0 and seen[-1] == nd.Args()
    with pytest.raises(SystemExit):
        nd.main(["--backend", "float"])
    assert "invalid choice: 'float'" in capsys.readouterr().err
