import copy
import math

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.encoding import BlockContexts
from deepbandits.errors import CheckpointError, InputValueError
from deepbandits.networks.conv import ConvNet
from deepbandits.networks.history import History
from deepbandits.networks.mlp import MLP, as_input
from deepbandits.networks.optimizer import make_optimizer
from deepbandits.networks.training import (
    block_sorted,
    clip_to_norm,
    loss_and_grad,
    loss_and_grads,
    theta_gradient,
    train_feature_map,
)


@pytest.mark.parametrize("loss", ["mse", "mle"])
@pytest.mark.parametrize("per_head", [False, True])
def test_loss_gradient_matches_autograd(loss, per_head):
    g = torch.Generator().manual_seed(0)
    B, d = 7, 5
    phi = torch.rand(B, d, generator=g, dtype=torch.float64, requires_grad=True)
    r = torch.randn(B, generator=g, dtype=torch.float64)
    M = torch.randn(d, d, generator=g, dtype=torch.float64)
    A_inv = M @ M.T / d + 0.1 * torch.eye(d, dtype=torch.float64)
    theta = torch.randn(d, generator=g, dtype=torch.float64)
    if per_head:
        theta, A_inv = theta.expand(B, d).clone(), A_inv.expand(B, d, d).clone()
    value, grad = loss_and_grad(loss, phi.detach(), theta, r, A_inv)
    mean = (phi * theta).sum(1)
    if loss == "mse":
        ref = ((mean - r) ** 2).mean()
    else:
        v = torch.einsum("bi,bij,bj->b", phi, A_inv.expand(B, d, d), phi)
        ref = (0.5 * torch.log(2 * math.pi * v) + (r - mean) ** 2 / (2 * v)).mean()
    ref.backward()
    assert float(value) == pytest.approx(float(ref.detach()))
    torch.testing.assert_close(grad, phi.grad)


@pytest.mark.parametrize("loss", ["mse", "mle"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_explicit_backward_step_equals_autograd_step(loss, optimizer):
    """One training step of train_feature_map equals one autograd step on the same minibatch."""
    torch.manual_seed(0)
    d, n = 6, 30
    net = MLP(d, hidden=9, n_layers=3, feature_dim=4, generator=torch.Generator().manual_seed(1))
    ref = MLP(d, hidden=9, n_layers=3, feature_dim=4)
    ref.load_state_dict(net.state_dict())
    rng = np.random.default_rng(0)
    hist = History(d)
    for _ in range(n):
        hist.append(rng.standard_normal(d), float(rng.standard_normal()), 1.0, 0)
    theta = rng.standard_normal((1, 4))
    A_inv = np.eye(4)[None] * 0.5
    opt = make_optimizer(optimizer, net.parameters(), 1e-2, 0.1)
    train_feature_map(
        net,
        hist,
        theta,
        A_inv,
        loss=loss,
        steps=1,
        batch_size=8,
        optimizer=opt,
        generator=torch.Generator().manual_seed(5),
    )
    idx = torch.randint(0, n, (1, 8), generator=torch.Generator().manual_seed(5))[0]
    X = torch.as_tensor(hist.view()[0], dtype=torch.float32)[idx]
    r = torch.as_tensor(hist.view()[1], dtype=torch.float32)[idx]
    th = torch.as_tensor(theta[0], dtype=torch.float32)
    Ai = torch.as_tensor(A_inv[0], dtype=torch.float32)
    # the reference is torch's own optimizer (make_optimizer's "sgd" is PlainSGD, stepped in place)
    ref_opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(
        ref.parameters(), lr=1e-2, weight_decay=0.1
    )
    phi = ref(X)
    mean = phi @ th
    if loss == "mse":
        value = ((mean - r) ** 2).mean()
    else:
        v = torch.einsum("bi,ij,bj->b", phi, Ai, phi).clamp_min(1e-6)
        value = (0.5 * torch.log(2 * math.pi * v) + (r - mean) ** 2 / (2 * v)).mean()
    value.backward()
    ref_opt.step()
    for p, q in zip(net.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_training_reduces_mse_on_learnable_target():
    rng = np.random.default_rng(0)
    d = 5
    hist = History(d, capacity=4)  # forces growth
    X = rng.standard_normal((400, d))
    y = np.abs(X[:, 0])
    for x, r in zip(X, y, strict=True):
        hist.append(x, float(r), 1.0, 0)
    assert hist.size == 400
    net = MLP(d, 32, 2, 8, generator=torch.Generator().manual_seed(0))
    theta = np.full((1, 8), 0.5)
    opt = make_optimizer("sgd", net.parameters(), 5e-2, 0.0)
    gen = torch.Generator().manual_seed(0)
    kw = dict(loss="mse", batch_size=32, optimizer=opt, generator=gen)
    first = train_feature_map(net, hist, theta, np.eye(8)[None], steps=1, **kw)
    last = train_feature_map(net, hist, theta, np.eye(8)[None], steps=600, **kw)
    assert last < 0.3 * first


def test_clip_to_norm_scales_only_large_gradients():
    grads = [torch.full((2, 2), 3.0), torch.full((3,), 4.0)]
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    clip_to_norm(grads, 2.0)
    assert float(torch.sqrt(sum((g * g).sum() for g in grads))) == pytest.approx(2.0)
    assert float(grads[0][0, 0] / grads[1][0]) == pytest.approx(0.75)  # direction kept
    small = [torch.full((2,), 0.1)]
    clip_to_norm(small, total)
    torch.testing.assert_close(small[0], torch.full((2,), 0.1))


@pytest.mark.parametrize("max_grad_norm", [None, 0.5])
def test_sgd_step_is_bounded_by_max_grad_norm(max_grad_norm):
    """Large rewards give a huge gradient; with clipping one SGD step moves w by ≤ lr·max_norm."""
    d, lr = 4, 1e-2
    hist = History(d)
    rng = np.random.default_rng(1)
    for x in rng.standard_normal((50, d)):
        hist.append(x, 500.0, 1.0, 0)
    net = MLP(d, 16, 2, 4, generator=torch.Generator().manual_seed(0))
    before = torch.cat([p.detach().flatten().clone() for p in net.parameters()])
    opt = make_optimizer("sgd", net.parameters(), lr, 0.0)
    train_feature_map(
        net,
        hist,
        np.ones((1, 4)),
        np.eye(4)[None],
        loss="mse",
        steps=1,
        batch_size=50,
        optimizer=opt,
        generator=torch.Generator().manual_seed(0),
        max_grad_norm=max_grad_norm,
    )
    moved = float(
        torch.linalg.vector_norm(
            torch.cat([p.detach().flatten() for p in net.parameters()]) - before
        )
    )
    if max_grad_norm is None:
        assert moved > 10 * lr * 0.5
    else:
        assert moved == pytest.approx(lr * max_grad_norm, rel=1e-4)


@pytest.mark.parametrize("name", ["neural-sigma2-linucb", "neural-ucb", "bootstrapped-nn"])
def test_warmup_trainings_take_their_own_steps_batch_size_and_learning_rate(name, monkeypatch):
    """Before t₀ each training runs warmup_steps steps of warmup_batch_size samples at
    warmup_lr; from t₀ on, train_steps, batch_size and lr; the optimizer keeps lr."""
    from deepbandits.networks import learner as learner_module

    calls = []
    real = learner_module.train_feature_map

    def recording(net, history, theta, A_inv, **kw):
        calls.append((kw["steps"], kw["batch_size"], kw["optimizer"].param_groups[0]["lr"]))
        return real(net, history, theta, A_inv, **kw)

    monkeypatch.setattr(learner_module, "train_feature_map", recording)
    schedule = dict(train_start=30, train_every=10, warmup_every=10, train_steps=3, batch_size=8)
    warmup = dict(warmup_steps=7, warmup_batch_size=1, warmup_lr=0.5)
    extra = {"n_models": 1} if name == "bootstrapped-nn" else {}
    policy = db.make_policy(name, seed=0, hidden=8, lr=0.05, **schedule, **warmup, **extra)
    env = db.make_env("h1", d=4, n_arms=3, seed=0)
    for _ in range(50):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(rnd.contexts, arm, env.reward(arm), reward_range=(-100.0, 100.0))
    assert calls == [(7, 1, 0.5)] * 2 + [(3, 8, 0.05)] * 3
    learner = {"neural-ucb": "learner_", "bootstrapped-nn": "members_"}.get(name)
    learner = policy.trainer.learner_ if learner is None else getattr(policy, learner)
    learner = learner[0] if isinstance(learner, list) else learner
    assert learner.optimizer.param_groups[0]["lr"] == 0.05  # the warm-up's rate was undone
    budget = policy.train_schedule_.sample_gradients(50)
    assert budget == 2 * 7 * 1 + 3 * 3 * 8


@pytest.mark.parametrize(
    ("key", "bad", "message"),
    [
        ("warmup_steps", -1, "warmup_steps"),
        ("warmup_batch_size", 0, "warmup_batch_size"),
        ("warmup_lr", 0.0, r"warmup_lr must be > 0"),
        ("warmup_lr", float("nan"), "warmup_lr"),
    ],
)
def test_bad_warmup_settings_are_refused_by_name(key, bad, message):
    from deepbandits.errors import InputValueError
    from deepbandits.networks.schedule import TrainSchedule

    with pytest.raises(InputValueError, match=message):
        TrainSchedule(**{key: bad})
    with pytest.raises(ValueError, match=key):
        db.make_policy("neural-sigma2-linucb", **{key: bad})


def test_plain_sgd_keeps_torch_sgds_state_dict_format_and_loads_one():
    """PlainSGD's state dict has torch.optim.SGD's format, an SGD state dict (as checkpoints of
    the previous release hold) loads into it, and one of another optimizer or network is refused,
    naming what it is not. (Its step, in train_feature_map, is checked against torch's SGD by
    test_explicit_backward_step_equals_autograd_step.)"""
    net, ref = MLP(4, hidden=5, feature_dim=3), MLP(4, hidden=5, feature_dim=3)
    opt = make_optimizer("sgd", net.parameters(), 0.1, 0.01)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, weight_decay=0.01)
    saved = ref_opt.state_dict()
    assert opt.state_dict()["param_groups"][0].keys() == saved["param_groups"][0].keys()
    fresh = make_optimizer("sgd", net.parameters(), 0.5, 0.0)
    fresh.load_state_dict(saved)
    assert (fresh.param_groups[0]["lr"], fresh.param_groups[0]["weight_decay"]) == (0.1, 0.01)
    with pytest.raises(CheckpointError, match="not plain SGD over this network's 4 parameters"):
        fresh.load_state_dict(torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9).state_dict())
    with pytest.raises(CheckpointError, match="not plain SGD"):
        fresh.load_state_dict(
            make_optimizer("sgd", list(ref.parameters())[:2], 0.1, 0).state_dict()
        )


@pytest.mark.parametrize("loss", ["mse", "mle"])
@pytest.mark.parametrize("per_head", [False, True])
def test_theta_gradient_of_each_head_matches_autograd(loss, per_head):
    """loss_and_grads' per-sample θ-gradients, summed by head, are the loss's gradient in θ."""
    g = torch.Generator().manual_seed(3)
    B, d, n_heads = 9, 4, 3
    phi = torch.rand(B, d, generator=g, dtype=torch.float64)
    r = torch.randn(B, generator=g, dtype=torch.float64)
    M = torch.randn(d, d, generator=g, dtype=torch.float64)
    A_inv = M @ M.T / d + 0.1 * torch.eye(d, dtype=torch.float64)
    thetas = torch.randn(n_heads, d, generator=g, dtype=torch.float64, requires_grad=True)
    heads = torch.tensor([0, 2, 2, 1, 0, 2, 1, 1, 0]) if per_head else None
    theta = thetas[heads] if per_head else thetas[0]
    value, grad, per_sample = loss_and_grads(loss, phi, theta.detach(), r, A_inv)
    torch.testing.assert_close(grad, loss_and_grad(loss, phi, theta.detach(), r, A_inv)[1])
    mean = (phi * theta).sum(1)
    if loss == "mse":
        ref = ((mean - r) ** 2).mean()
    else:
        v = torch.einsum("bi,ij,bj->b", phi, A_inv, phi)
        ref = (0.5 * torch.log(2 * math.pi * v) + (r - mean) ** 2 / (2 * v)).mean()
    ref.backward()
    got = theta_gradient(per_sample, heads, n_heads)
    want = thetas.grad if per_head else thetas.grad[:1]
    assert float(value) == pytest.approx(float(ref.detach()))
    assert float(want.abs().sum()) > 0
    torch.testing.assert_close(got, want)


def _rounds(D: int, n: int, n_heads: int, blocks: int | None) -> History:
    """``n`` rounds of ``D`` features (in one of ``blocks`` blocks, if given), alternating heads."""
    rng = np.random.default_rng(4)
    hist = History(D * (blocks or 1))
    for i in range(n):
        x = 2 * rng.standard_normal(D) / np.sqrt(D)
        row = BlockContexts(x[None], np.array([i % blocks]), blocks) if blocks else x
        hist.append(row, float(rng.standard_normal()), 1.0, i % n_heads)
    return hist


@pytest.mark.parametrize(
    ("network", "D", "blocks"), [("mlp", 5, None), ("mlp", 400, 3), ("lenet", 400, 3)]
)
@pytest.mark.parametrize("n_heads", [1, 2])
def test_training_theta_too_equals_torch_sgd_on_the_network_and_theta(network, D, blocks, n_heads):
    """train_theta=True: each step is torch's SGD step on the network's weights and a copy of
    θ together (the explicit pass on dense and block rows, autograd on a ConvNet), clipped by
    their joint norm; the θ given is left as it was, and θ fixed trains another network."""
    d_feat, steps, batch, lr, clip = 6, 8, 6, 0.3, 2.0
    hist = _rounds(D, 20, n_heads, blocks)
    in_dim = D * (blocks or 1)
    gen = torch.Generator().manual_seed(1)
    start = (
        ConvNet(in_dim, D, 6, 2, d_feat, gen)
        if network == "lenet"
        else MLP(in_dim, 7, 2, d_feat, gen)
    )
    theta = np.random.default_rng(5).standard_normal((n_heads, d_feat))
    given = theta.copy()
    A_inv = np.eye(d_feat)[None].repeat(n_heads, 0)
    nets = []
    for train_theta in (True, False):
        net = copy.deepcopy(start)
        train_feature_map(
            net,
            hist,
            theta,
            A_inv,
            loss="mse",
            steps=steps,
            batch_size=batch,
            optimizer=make_optimizer("sgd", net.parameters(), lr, 0.0),
            generator=torch.Generator().manual_seed(6),
            max_grad_norm=clip,
            train_theta=train_theta,
        )
        nets.append(net)
    np.testing.assert_array_equal(theta, given)
    ref = copy.deepcopy(start)
    th = torch.tensor(theta, dtype=torch.float32, requires_grad=True)
    params = [*ref.parameters(), th]
    ref_opt = torch.optim.SGD(params, lr=lr)
    X_np, r_np, _, h_np = hist.view()
    X = as_input(X_np, torch.device("cpu"))
    r, heads = torch.as_tensor(r_np, dtype=torch.float32), torch.as_tensor(h_np)
    batches = torch.randint(0, len(r), (steps, batch), generator=torch.Generator().manual_seed(6))
    if blocks:
        batches = block_sorted(batches, X.slots)
    for idx in batches:
        ref_opt.zero_grad()
        xb = X.take(idx) if blocks else X[idx]
        (((ref(xb) * th[heads[idx]]).sum(1) - r[idx]) ** 2).mean().backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        ref_opt.step()
    for p, q in zip(nets[0].parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert any(
        not torch.allclose(p, q, rtol=1e-3, atol=1e-4)
        for p, q in zip(nets[0].parameters(), nets[1].parameters(), strict=True)
    )


def test_training_theta_too_needs_plain_sgd():
    hist = _rounds(5, 10, 1, None)
    net = MLP(5, 7, 2, 3, torch.Generator().manual_seed(1))
    with pytest.raises(InputValueError, match="optimizer='sgd'"):
        train_feature_map(
            net,
            hist,
            np.ones((1, 3)),
            np.eye(3)[None],
            loss="mse",
            steps=2,
            batch_size=4,
            optimizer=make_optimizer("adam", net.parameters(), 0.01, 0.0),
            generator=torch.Generator().manual_seed(0),
            train_theta=True,
        )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"train_theta": True}, "expected refit_on_update=True, got refit_on_update=False"),
        (
            {"train_theta": True, "refit_on_update": True, "optimizer": "adam"},
            "expected optimizer='sgd', got optimizer='adam'",
        ),
    ],
)
def test_train_theta_is_refused_where_the_trained_theta_would_be_lost_and_changes_nothing(
    params, message
):
    with pytest.raises(InputValueError, match=message):
        db.make_policy("neural-sigma2-linucb", **params)
    policy = db.make_policy("neural-linucb", seed=0)
    with pytest.raises(InputValueError, match=message):
        policy.set_params(**params)
    assert policy.get_params()["train_theta"] is False
    assert policy.get_params()["refit_on_update"] is False
