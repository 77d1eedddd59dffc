"""The baselines of the paper: their specific math, and that each of them learns."""

import json

import numpy as np
import pytest
import torch

import deepbandits as db
from conftest import SMALL_NET, SMALL_REWARD_NET
from deepbandits.networks.gradients import (
    diagonal_quadratic_form,
    output_gradients,
    per_sample_gradients,
)
from deepbandits.networks.mlp import MLP
from deepbandits.policies.kernel_ucb import kernel_matrix, replace_inverse
from deepbandits.policies.parts.layers import save_layer_search
from test_policies import UniformRandom, regret_of


@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_batched_per_arm_gradients_equal_separate_backward_passes(n_layers):
    gen = torch.Generator().manual_seed(0)
    net = MLP(6, 9, n_layers, 1, gen, output_activation=False)
    x = torch.randn(5, 6, generator=gen)
    f, G = per_sample_gradients(net, x)
    for b in range(5):
        net.zero_grad()
        out = net(x[b : b + 1])[0, 0]
        out.backward()
        expected = torch.cat([p.grad.flatten() for p in net.parameters()])
        torch.testing.assert_close(G[b], expected)
        torch.testing.assert_close(f[b], out.detach())


def test_diagonal_quadratic_form_equals_explicit_sum():
    gen = torch.Generator().manual_seed(1)
    net = MLP(4, 7, 2, 1, gen, output_activation=False)
    x = torch.randn(3, 4, generator=gen)
    z = [torch.rand(p.shape, generator=gen, dtype=torch.float64) + 0.5 for p in net.parameters()]
    _, deltas, acts = output_gradients(net, x)
    quick = diagonal_quadratic_form(deltas, acts, [1 / zi for zi in z])
    _, G = per_sample_gradients(net, x)
    zflat = torch.cat([zi.flatten() for zi in z])
    explicit = (G.double() ** 2 / zflat).sum(dim=1)
    torch.testing.assert_close(quick, explicit)


@pytest.mark.parametrize("name", ["neural-ucb", "neural-ts"])
def test_full_and_diag_modes_agree_when_z_is_diagonal(name):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 5))
    diag = db.make_policy(name, mode="diag", seed=0, hidden=8)
    full = db.make_policy(name, mode="full", seed=0, hidden=8)
    # Z = λI before any update: identical widths, means and choices
    for u, v in zip(diag.predict(X), full.predict(X), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-6)
    assert diag.select(X) == full.select(X)
    # after updates, give the full mode the diagonal of the diag mode's Z
    for t in range(20):
        diag.update(X, t % 4, float(t % 3))
    state = diag.state_dict()
    params = {**json.loads(state["params"]), "mode": "full"}  # the diag state, read as full
    full.load_state_dict({**state, "class": type(full).__name__, "params": json.dumps(params)})
    full.z_.A_inv[0] = np.diag(1.0 / torch.cat([z.flatten() for z in diag.z_diag_]).numpy())
    for u, v in zip(diag.predict(X), full.predict(X), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-6)


def test_full_mode_z_is_the_sum_of_gradient_outer_products():
    rng = np.random.default_rng(1)
    p = db.NeuralUCB(mode="full", hidden=6, lam=0.5, seed=0, train_start=10**6, warmup_every=0)
    Z = 0.5 * np.eye(6 * 3 + 6 + 6 + 1)
    for _ in range(15):
        X = rng.standard_normal((3, 3))
        arm = p.select(X)
        _, g = per_sample_gradients(p.learner_.network, torch.from_numpy(X[arm : arm + 1]).float())
        g = g[0].detach().double().numpy()
        Z += np.outer(g, g) / 6
        p.update(X, arm, 1.0)
    np.testing.assert_allclose(p.z_.A_inv[0], np.linalg.inv(Z), rtol=1e-6, atol=1e-9)
    too_big = db.NeuralUCB(mode="full", hidden=100)
    with pytest.raises(ValueError, match="use mode='diag'"):
        too_big.select(np.ones((2, 784)))
    assert too_big.n_features_in_ is None  # the call that raised left it fresh
    assert 0 <= too_big.select(np.ones((2, 3))) < 2  # so narrower contexts are taken


def test_neural_ts_samples_around_the_mean_with_its_width():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((3, 4))
    p = db.NeuralTS(alpha=2.0, lam=3.0, hidden=8, seed=0)
    mean, width = p.predict(X)
    draws = np.array([p._index(p._evaluate(X)) for _ in range(4000)])
    np.testing.assert_allclose(draws.mean(0), mean, atol=0.15 * width.max())
    np.testing.assert_allclose(draws.std(0), 2.0 * np.sqrt(3.0) * width, rtol=0.08)


def _direct_kernel_ridge(Xh, y, X, lam, ell):
    K = kernel_matrix(Xh, Xh, "rbf", ell)
    k = kernel_matrix(X, Xh, "rbf", ell)
    M = K + lam * np.eye(len(y))
    mean = k @ np.linalg.solve(M, y)
    var = 1.0 - np.einsum("ij,ji->i", k, np.linalg.solve(M, k.T))
    return mean, np.sqrt(var / lam)


@pytest.mark.parametrize("window", [False, True])
def test_kernel_ucb_equals_direct_kernel_ridge(window):
    rng = np.random.default_rng(3)
    p = db.KernelUCB(lam=0.3, lengthscale=0.7, max_history=12 if window else 100, seed=0)
    Xs, ys = [], []
    for _ in range(30):
        X = rng.standard_normal((4, 3))
        arm = p.select(X)
        r = float(np.sin(X[arm]).sum())
        p.update(X, arm, r)
        Xs.append(X[arm])
        ys.append(r)
    keep = slice(-12, None) if window else slice(None)
    X = rng.standard_normal((5, 3))
    mean, width = _direct_kernel_ridge(np.array(Xs)[keep], np.array(ys)[keep], X, 0.3, 0.7)
    got = p.predict(X)
    np.testing.assert_allclose(got[0], mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[1], width, rtol=1e-8, atol=1e-10)
    assert p.exact_inverse_error() < 1e-9


def test_replace_inverse_equals_exact_inverse():
    rng = np.random.default_rng(5)
    G = rng.standard_normal((7, 7))
    M = G @ G.T + np.eye(7)
    M_inv = np.linalg.inv(M)
    column = rng.standard_normal(7)
    column[2] = 9.0  # keeps M positive definite
    replace_inverse(M_inv, 2, column - M[:, 2])
    M[:, 2] = M[2, :] = column
    np.testing.assert_allclose(M_inv, np.linalg.inv(M), rtol=1e-10, atol=1e-12)


def test_kernel_ucb_memory_bound_and_linear_kernel():
    X = np.eye(3)
    p = db.KernelUCB(max_history=5, overflow="error")
    for _ in range(5):
        p.update(X, 0, 1.0)
    with pytest.raises(ValueError, match="at most max_history=5"):
        p.update(X, 0, 1.0)
    # with the linear kernel KernelUCB is LinUCB (shared θ)
    rng = np.random.default_rng(4)
    k, lin = db.KernelUCB(kernel="linear", lam=0.7), db.LinUCB(lam=0.7)
    for _ in range(25):
        Xt = rng.standard_normal((4, 3))
        r = float(Xt[1].sum())
        k.update(Xt, 1, r)
        lin.update(Xt, 1, r)
    for u, v in zip(k.predict(Xt), lin.predict(Xt), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-12)


def test_save_layer_search_hand_checked():
    betas = np.array([1.0, 1.0, 1.0])
    alpha = 0.1
    # layer 1 (threshold 1/2): arm 2 is wider than 1/2 -> explore it at layer index 0
    means = np.zeros((3, 3))
    widths = np.array([[0.2, 0.3, 0.6], [0.0] * 3, [0.0] * 3])
    layer, arms, _ = save_layer_search(means, widths, betas, alpha)
    assert layer == 0 and list(arms) == [2]
    # all widths <= 1/2 at layer 1: eliminate arms below max - 2·(1/2)·β = 0.9 - 1.0;
    # at layer 2 (threshold 1/4) arm 1 is wider than 1/4 -> explore it at layer index 1
    means = np.array([[0.9, 0.5, -0.2], [0.0, 0.0, 0.0], [0.0] * 3])
    widths = np.array([[0.4, 0.4, 0.4], [0.2, 0.3, 0.9], [0.0] * 3])
    layer, arms, scores = save_layer_search(means, widths, betas, alpha)
    assert layer == 1 and list(arms) == [1] and scores[0] == pytest.approx(0.3)
    # widths at layer 1 all <= α: exploit with θᵀa + β‖a‖ over all arms, no layer
    widths = np.full((3, 3), 0.05)
    layer, arms, scores = save_layer_search(means, widths, betas, alpha)
    assert layer is None and list(arms) == [0, 1, 2]
    np.testing.assert_allclose(scores, means[0] + 0.05)


def test_save_adds_only_exploration_rounds_with_their_weight():
    p = db.SaveNeuralLinUCB(seed=0, horizon=64, feature_dim=4, hidden=8, warmup_every=0)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, 5))
    arm = p.select(X)
    phi = p.features.transform(X)[0]
    layer, arms, _, _, widths = p.explore.search(phi, p.t_)
    assert layer == 0 and arm in arms  # nothing learned yet: every arm is wide at layer 1
    w = 0.5 / widths[0, arm]
    phi = phi[arm]
    p.update(X, arm, 0.7)
    np.testing.assert_allclose(p.explore.layers_.A[0], np.eye(4) / 4 + w * w * np.outer(phi, phi))
    assert p.explore.layers_.n_updates.tolist() == [1] + [0] * (len(p.explore.levels_) - 1)
    assert len(p.explore.levels_) == 6  # ⌈log₂ 64⌉
    with pytest.raises(ValueError, match="needs the horizon"):
        db.SaveNeuralLinUCB().select(X)


def test_mle_var_weights_by_predictive_variance():
    p = db.make_policy("mle-var", R=0.1, feature_dim=4, hidden=8, seed=0)
    rng = np.random.default_rng(6)
    for _ in range(5):
        X = rng.standard_normal((3, 5))
        arm = p.select(X)
        phi = p.features.transform(X)[0][arm]
        expected = float(phi @ p.ridge_.A_inv[0] @ phi)
        learned = p.update(X, arm, 0.2)
        assert learned.sigma2_hat == pytest.approx(expected)
        assert learned.sigma2 == pytest.approx(max(expected, 0.1**2 / 4))
    assert p.get_params()["loss"] == "mle"


def test_configurations_are_settings_not_classes():
    assert type(db.make_policy("range-mle")) is db.NeuralSigma2LinUCB
    assert db.make_policy("oracle-mse").get_params()["variance"] == "oracle"
    assert db.make_policy("range-mle", loss="mse").get_params()["loss"] == "mse"
    names = db.policies.distinct_policy_names()
    assert "range-mse" not in names  # it is neural-sigma2-linucb's default
    assert {"neural-ucb", "kernel-ucb", "mle-var", "heuristic-1"} <= set(names)


LEARNERS = [
    ("neural-ucb", SMALL_REWARD_NET),
    ("neural-ts", SMALL_REWARD_NET),
    ("bootstrapped-nn", {**SMALL_REWARD_NET, "n_models": 3}),
    ("kernel-ucb", {"lengthscale": 0.5}),
    ("save-neural-linucb", {**SMALL_NET, "horizon": 400, "beta_scale": 0.01}),
    ("mle-var", SMALL_NET),
]


@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_baselines_beat_random_on_h1(name, params):
    wins = 0
    for seed in range(3):
        env = db.make_env("h1", d=5, seed=seed)
        ours = regret_of(db.make_policy(name, seed=seed, **params), env, 400)[-1]
        env.reset()
        rand = regret_of(UniformRandom(seed), env, 400)[-1]
        wins += ours < 0.8 * rand
    assert wins >= 2
