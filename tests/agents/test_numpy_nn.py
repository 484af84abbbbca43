"""The numpy networks the agents use without torch: gradients against finite differences and against torch, Adam and
gradient clipping against torch, the initialisation schemes, and bad input.

Finite differences run in float64 (the parameters are cast up; the code under test is dtype-generic), so the
tolerances are tight; the torch comparisons run the float32 code as the agents do.
"""

import numpy as np
import pytest

from pynq_rl.host.agents.common.run import torch_available
from pynq_rl.host.agents.nets.numpy_nets import NumpyActorCritic, NumpyQLearner
from pynq_rl.host.agents.nets.numpy_nn import MLP, Adam, clip_grad_norm, log_softmax, orthogonal

needs_torch = pytest.mark.skipif(not torch_available(), reason="no torch")
PPO_COEFS = dict(clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, norm_adv=True, max_grad_norm=1e9)


def to_float64(net: MLP) -> None:
    net.params[:] = [np.ascontiguousarray(p, dtype=np.float64) for p in net.params]


def numeric_grads(loss, params, eps=1e-6, picks=6, seed=0):
    """Central differences of ``loss()`` for ``picks`` random entries of every parameter array."""
    rng = np.random.default_rng(seed)
    out = []
    for p in params:
        flat = p.reshape(-1)
        assert np.shares_memory(flat, p)  # perturbations must reach the parameter
        entries = rng.choice(flat.size, size=min(picks, flat.size), replace=False)
        grads = []
        for i in entries:
            keep = flat[i]
            flat[i] = keep + eps
            up = loss()
            flat[i] = keep - eps
            down = loss()
            flat[i] = keep
            grads.append((up - down) / (2 * eps))
        out.append((entries, np.array(grads)))
    return out


def assert_grads_match(analytic, numeric):
    for grad, (entries, expected) in zip(analytic, numeric):
        np.testing.assert_allclose(grad.reshape(-1)[entries], expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------------
# MLP
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("sizes", [(3, 5, 2), (4, 7, 6, 3), (2, 1)])
def test_mlp_backward_matches_finite_differences(activation, sizes):
    rng = np.random.default_rng(1)
    net = MLP(sizes, activation, rng, init="torch_default")
    to_float64(net)
    x = rng.normal(size=(9, sizes[0])).astype(np.float32)
    weights = rng.normal(size=(9, sizes[-1])).astype(np.float32)

    def loss():
        return float(np.sum(net.forward(x) * weights))

    net.forward(x, keep=True)
    net.backward(weights)
    assert_grads_match(net.grads, numeric_grads(loss, net.params))


def test_mlp_rejects_bad_configuration_and_backward_without_forward():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^activation must be one of \('tanh', 'relu'\), not 'gelu'$"):
        MLP((2, 2), "gelu", rng)
    with pytest.raises(ValueError, match=r"^sizes must hold at least an input and an output width"):
        MLP((2,), "tanh", rng)
    net = MLP((2, 3, 1), "tanh", rng)
    with pytest.raises(RuntimeError, match=r"^backward\(\) needs a forward\(x, keep=True\) first$"):
        net.backward(np.ones((1, 1)))
    net.forward(np.ones((1, 2)))  # a no-grad forward keeps nothing
    with pytest.raises(RuntimeError):
        net.backward(np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"^'2\.weight' has shape \(2, 3\), expected \(1, 3\)$"):
        net.load_state_dict({**net.state_dict(), "2.weight": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"^missing parameter '0\.bias'$"):
        net.load_state_dict({"0.weight": net.params[0]})


def test_orthogonal_init_is_orthonormal_times_gain_and_seeded():
    for rows, cols in ((64, 4), (4, 64), (16, 16)):
        w = orthogonal(rows, cols, 2.0, np.random.default_rng(3)).astype(np.float64)
        small = w @ w.T if rows <= cols else w.T @ w
        np.testing.assert_allclose(small, 4.0 * np.eye(min(rows, cols)), atol=1e-5)
    np.testing.assert_array_equal(
        orthogonal(8, 4, 1.0, np.random.default_rng(3)), orthogonal(8, 4, 1.0, np.random.default_rng(3))
    )


def test_cleanrl_layer_init_gains():
    """Hidden layers gain sqrt(2), the output layer ``out_gain``, biases zero (CleanRL's ``layer_init``)."""
    net = MLP((4, 64, 64, 2), "tanh", np.random.default_rng(0), out_gain=0.01)
    w_out = net.params[4].astype(np.float64)
    np.testing.assert_allclose(w_out @ w_out.T, 1e-4 * np.eye(2), atol=1e-9)
    w_hidden = net.params[2].astype(np.float64)
    np.testing.assert_allclose(w_hidden @ w_hidden.T, 2.0 * np.eye(64), atol=1e-5)
    assert all(not b.any() for b in net.params[1::2])


def test_log_softmax_is_stable_for_large_logits():
    out = log_softmax(np.array([[1000.0, 0.0], [-1000.0, -1000.0]]))
    np.testing.assert_allclose(out, [[0.0, -1000.0], [np.log(0.5), np.log(0.5)]])


# ---------------------------------------------------------------------------------------------------------------------
# The agents' losses against finite differences
# ---------------------------------------------------------------------------------------------------------------------
def ppo_reference_loss(
    model, obs, actions, old_logp, adv, returns, old_values, clip_coef, ent_coef, vf_coef, clip_vloss, norm_adv, **_
):
    """PPO's loss written directly from the paper's formula, float64, no gradients."""
    logp_all = log_softmax(model.actor.forward(obs))
    probs = np.exp(logp_all)
    entropy = -(probs * logp_all).sum(axis=1)
    ratio = np.exp(logp_all[np.arange(len(actions)), actions] - old_logp)
    if norm_adv:
        adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    pg = np.maximum(-adv * ratio, -adv * np.clip(ratio, 1 - clip_coef, 1 + clip_coef)).mean()
    values = model.critic.forward(obs)[:, 0]
    if clip_vloss:
        v_clipped = old_values + np.clip(values - old_values, -clip_coef, clip_coef)
        v = 0.5 * np.maximum((values - returns) ** 2, (v_clipped - returns) ** 2).mean()
    else:
        v = 0.5 * ((values - returns) ** 2).mean()
    return pg - ent_coef * entropy.mean() + vf_coef * v


def ppo_batch(rng, n=24, obs_dim=4, n_actions=3):
    obs = rng.normal(size=(n, obs_dim)).astype(np.float32)
    actions = rng.integers(0, n_actions, n)
    old_logp = np.log(np.full(n, 1.0 / n_actions)) + rng.normal(scale=0.3, size=n)  # ratios in and out of the clip
    return obs, actions, old_logp, rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)


@pytest.mark.parametrize("clip_vloss", [False, True])
def test_ppo_gradient_matches_finite_differences(clip_vloss):
    rng = np.random.default_rng(7)
    model = NumpyActorCritic(4, 3, 1e-3, rng, hidden=8)
    for net in (model.actor, model.critic):
        to_float64(net)
        net.params[-2] *= 100.0  # a non-trivial policy, so ratios move
    batch = ppo_batch(rng)
    coefs = dict(PPO_COEFS, clip_vloss=clip_vloss)
    captured = []
    model.optimizer.step = lambda grads: captured.append([g.copy() for g in grads])
    stats = model.learn(*batch, **coefs)
    assert 0.0 < stats["clipfrac"] < 1.0  # both branches of the clip are exercised
    params = model.actor.params + model.critic.params
    numeric = numeric_grads(lambda: ppo_reference_loss(model, *batch, **coefs), params)
    assert_grads_match(captured[0], numeric)


def test_dqn_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    learner = NumpyQLearner(3, 4, (8, 8), 1e-3, rng)
    for net in (learner.q_network, learner.target_network):
        to_float64(net)
    obs, next_obs = rng.normal(size=(2, 16, 3)).astype(np.float32)
    actions, rewards = rng.integers(0, 4, 16), 3.0 * rng.normal(size=16)  # TD errors on both sides of +-1
    dones, weights = (rng.random(16) < 0.3).astype(np.float32), rng.random(16)
    target = learner.target_network.forward(next_obs)
    y = rewards + 0.9 * target[np.arange(16), learner.q_network.forward(next_obs).argmax(1)] * (1 - dones)

    def loss():
        d = learner.q_network.forward(obs)[np.arange(16), actions] - y
        return float(np.mean(weights * np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)))

    captured = []
    learner.optimizer.step = lambda grads: captured.append([g.copy() for g in grads])
    out = learner.learn(obs, actions, next_obs, rewards, dones, weights, gamma=0.9, double_q=True, max_grad_norm=1e9)
    assert np.any(np.abs(out["td_errors"]) > 1) and np.any(np.abs(out["td_errors"]) < 1)
    assert_grads_match(captured[0], numeric_grads(loss, learner.q_network.params))


# ---------------------------------------------------------------------------------------------------------------------
# Against torch: one learning step from the same state gives the same parameters
# ---------------------------------------------------------------------------------------------------------------------
def assert_states_close(a, b, rtol=2e-4, atol=2e-6):
    if isinstance(a, dict):
        for key in a:
            assert_states_close(a[key], b[key], rtol, atol)
    elif isinstance(a, list):
        for x, y in zip(a, b):
            assert_states_close(x, y, rtol, atol)
    else:
        np.testing.assert_allclose(np.asarray(b, np.float64), np.asarray(a, np.float64), rtol=rtol, atol=atol)


@needs_torch
@pytest.mark.parametrize("clip_vloss", [False, True])
def test_ppo_step_matches_torch(clip_vloss):
    from pynq_rl.host.agents.nets.torch_nets import TorchActorCritic

    rng = np.random.default_rng(11)
    torch_model = TorchActorCritic(4, 3, 1e-2)
    numpy_model = NumpyActorCritic(4, 3, 1e-2, rng)
    numpy_model.load_state_dict(torch_model.state_dict())
    for step in range(3):  # Adam's bias correction and moments over several steps; clipping of the gradient norm
        batch = ppo_batch(np.random.default_rng(step))
        coefs = dict(PPO_COEFS, clip_vloss=clip_vloss, max_grad_norm=0.5)
        a, b = torch_model.learn(*batch, **coefs), numpy_model.learn(*batch, **coefs)
        for key in a:
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
    assert_states_close(torch_model.state_dict(), numpy_model.state_dict())


@needs_torch
@pytest.mark.parametrize("double_q", [True, False])
def test_dqn_step_matches_torch(double_q):
    from pynq_rl.host.agents.nets.torch_nets import TorchQLearner

    rng = np.random.default_rng(4)
    torch_learner = TorchQLearner(3, 4, (32, 32), 1e-2)
    numpy_learner = NumpyQLearner(3, 4, (32, 32), 1e-2, rng)
    numpy_learner.load_state_dict(torch_learner.state_dict())
    for _ in range(3):
        obs, next_obs = rng.normal(size=(2, 16, 3)).astype(np.float32)
        batch = (
            obs,
            rng.integers(0, 4, 16),
            next_obs,
            3.0 * rng.normal(size=16),
            (rng.random(16) < 0.3).astype(np.float32),
            rng.random(16).astype(np.float32),
        )
        a = torch_learner.learn(*batch, gamma=0.99, double_q=double_q, max_grad_norm=1.0)
        b = numpy_learner.learn(*batch, gamma=0.99, double_q=double_q, max_grad_norm=1.0)
        np.testing.assert_allclose(b["td_errors"], a["td_errors"], rtol=1e-4, atol=1e-5)
    torch_learner.update_target(0.5)
    numpy_learner.update_target(0.5)
    assert_states_close(torch_learner.state_dict(), numpy_learner.state_dict())


@needs_torch
def test_adam_and_clipping_match_torch():
    import torch

    rng = np.random.default_rng(0)
    params = [rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32)]
    tparams = [torch.nn.Parameter(torch.tensor(p.copy())) for p in params]
    ours, theirs = Adam(params, lr=0.05, eps=1e-5), torch.optim.Adam(tparams, lr=0.05, eps=1e-5)
    for step in range(5):
        grads = [rng.normal(size=p.shape).astype(np.float32) * 10 for p in params]
        for t, g in zip(tparams, grads):
            t.grad = torch.tensor(g.copy())
        norm_ours = clip_grad_norm(grads, 1.0)
        norm_theirs = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
        assert norm_ours == pytest.approx(float(norm_theirs), rel=1e-5)
        ours.lr = theirs.param_groups[0]["lr"] = 0.05 / (step + 1)  # a schedule changes lr between steps
        ours.step(grads)
        theirs.step()
        for p, t in zip(params, tparams):
            np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_adam_rejects_bad_hyperparameters_and_mismatched_state():
    with pytest.raises(ValueError, match=r"^need lr > 0, eps > 0 and betas in \[0, 1\)"):
        Adam([np.zeros(2, np.float32)], lr=0.0)
    adam = Adam([np.zeros(2, np.float32)])
    with pytest.raises(ValueError, match=r"^optimizer moment of shape \(3,\) for a parameter of shape \(2,\)$"):
        adam.load_state_dict({"step": 1, "exp_avg": [np.zeros(3)], "exp_avg_sq": [np.zeros(3)]})
    assert adam.step_count == 0  # nothing changed
