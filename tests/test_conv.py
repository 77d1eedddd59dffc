"""The convolutional feature network (``network="lenet"``): its shapes, its block and dense forms,
its autograd training against the explicit backward pass, and a policy that learns with it."""

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.encoding import BlockContexts, block_encode
from deepbandits.errors import InputValueError
from deepbandits.networks.conv import ConvNet, image_shape
from deepbandits.networks.gradients import backpropagate, forward_cache, summed_gradients
from deepbandits.networks.mlp import MLP, as_input
from deepbandits.networks.training import autograd_gradients, loss_and_grad

K, SIDE = 5, 16  # K·D ≥ MIN_BLOCK_FEATURES: block inputs stay blocks
D = SIDE * SIDE
CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("block_dim", "shape"), [(784, (1, 28, 28)), (3072, (3, 32, 32)), (256, (1, 16, 16))]
)
def test_image_shape_reads_square_images_of_one_or_three_channels(block_dim, shape):
    assert image_shape(block_dim) == shape


@pytest.mark.parametrize("block_dim", [100, 785, 54, 3 * 15 * 15])
def test_image_shape_refuses_what_is_not_a_large_enough_square_image(block_dim):
    with pytest.raises(InputValueError, match=rf"network='lenet'.*has {block_dim} values"):
        image_shape(block_dim)


def test_lenet_on_blocks_equals_lenet_on_dense():
    """Bias-free convolutions map a zero block to zero features: both forms agree."""
    net = ConvNet(K * D, D, 16, 2, 5, torch.Generator().manual_seed(0))
    rng = np.random.default_rng(1)
    rows = BlockContexts(rng.standard_normal((7, D)), rng.integers(0, K, 7), K)
    for X in (block_encode(rng.standard_normal(D), K), rows):
        block, dense = as_input(X, CPU), as_input(X.dense(), CPU)
        assert not isinstance(block, torch.Tensor) and isinstance(dense, torch.Tensor)
        torch.testing.assert_close(net(block), net(dense), rtol=1e-5, atol=1e-6)


def test_autograd_gradients_equal_the_explicit_backward_pass():
    """The autograd path (used for a ConvNet) gives an MLP the gradients of the explicit one."""
    net = MLP(K * D, 16, 2, 4, torch.Generator().manual_seed(2))
    rng = np.random.default_rng(3)
    X = BlockContexts(rng.standard_normal((9, D)), rng.integers(0, K, 9), K)
    x = as_input(X, CPU)
    theta, reward = torch.randn(4), torch.randn(9)
    value, grads, _ = autograd_gradients(net, list(net.parameters()), x, "mse", theta, reward, None)
    pres, acts = forward_cache(net, x)
    expected_value, g = loss_and_grad("mse", acts[-1], theta, reward)
    expected = summed_gradients(backpropagate(net, pres, g), acts)
    torch.testing.assert_close(value, expected_value)
    assert any(float(gr.abs().sum()) > 0 for gr in grads)
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_a_policy_refuses_lenet_on_contexts_that_are_not_images_and_changes_nothing():
    policy = db.make_policy("neural-linucb", network="lenet", seed=0)
    X = np.random.default_rng(0).random((K, 10))
    with pytest.raises(InputValueError, match=r"network='lenet'.*has 10 values"):
        policy.select(X)
    assert policy.t_ == 0
    policy.set_params(network="mlp")
    assert policy.select(X) in range(K)


def test_network_is_validated_with_the_librarys_error():
    with pytest.raises(InputValueError, match="network"):
        db.make_policy("neural-sigma2-linucb", network="resnet")


def bright_quadrant_round(rng: np.random.Generator) -> tuple[BlockContexts, np.ndarray]:
    """An image of noise with one bright quadrant; the arm of that quadrant pays 1 (K = 4)."""
    label = int(rng.integers(0, 4))
    image = 0.3 * rng.standard_normal((SIDE, SIDE))
    r, c = divmod(label, 2)
    image[r * 8 : r * 8 + 8, c * 8 : c * 8 + 8] += 1.0
    return block_encode(image.ravel(), 4), (np.arange(4) == label).astype(float)


def test_a_lenet_policy_learns_an_image_bandit_far_below_random_play():
    """Random play pays 0.75 regret per round; over three seeds the policy pays under half that
    in rounds 200–300 (seeds 0, 1, 2 here: 62, 0 and 0 of 100; seed 0 leaves one arm unplayed)."""
    late = []
    for seed in range(3):
        policy = db.make_policy(
            "neural-sigma2-linucb",
            network="lenet",
            seed=seed,
            reward_range=(0, 1),
            feature_dim=8,
            hidden=16,
            train_start=0,
            train_every=20,
            warmup_every=0,
            train_steps=30,
            lr=0.1,
        )
        rng = np.random.default_rng(100 + seed)
        regret = 0.0
        for t in range(300):
            X, rewards = bright_quadrant_round(rng)
            arm = policy.select(X)
            policy.update(X, arm, rewards[arm])
            regret += (1.0 - rewards[arm]) * (t >= 200)
        late.append(regret)
    assert np.mean(late) < 0.5 * 75, late


def test_a_lenet_policy_saves_loads_and_replays_bit_for_bit(tmp_path):
    def play(policy, rng, n):
        arms = []
        for _ in range(n):
            X, rewards = bright_quadrant_round(rng)
            arm = policy.select(X)
            policy.update(X, arm, rewards[arm])
            arms.append(arm)
        return arms

    params = dict(network="lenet", seed=3, train_start=0, train_every=5, train_steps=2)
    policy = db.make_policy("neural-linucb", **params)
    play(policy, np.random.default_rng(0), 12)
    policy.save(tmp_path / "p.pt")
    X, _ = bright_quadrant_round(np.random.default_rng(2))
    saved_widths = policy.predict(X)[1]
    loaded = db.load_policy(tmp_path / "p.pt")
    assert loaded.features.network == "lenet"
    assert play(loaded, np.random.default_rng(1), 12) == play(policy, np.random.default_rng(1), 12)
    again = db.make_policy("neural-linucb", **params)  # the same seed: the same trajectory
    play(again, np.random.default_rng(0), 12)
    np.testing.assert_array_equal(again.predict(X)[1], saved_widths)


@pytest.mark.parametrize(
    ("mode", "contexts"),
    [
        ("diag", "blocks"),
        ("full", "blocks"),
        ("diag", "dense"),
        ("full", "dense"),
        ("diag", "images"),
    ],
)
def test_neural_ucb_on_lenet_scores_with_the_autograd_gradients(mode, contexts):
    """NeuralUCB's widths on a ConvNet are ‖g/√m‖ over Z, with g from autograd per arm, and a
    played arm's width shrinks by exactly the rank-one update (diag: g² added to Z's diagonal).
    The trunk's pulled-back gradients are checked on block-encoded rows, on the same rows dense
    (each row then sums its blocks' images) and on rows that are one image each."""
    policy = db.make_policy(
        "neural-ucb",
        network="lenet",
        hidden=8,
        seed=0,
        mode=mode,
        max_full_params=100_000,
        train_start=10**6,
        lam=1.0,
    )
    X, _ = bright_quadrant_round(np.random.default_rng(0))
    if contexts == "dense":
        X = X.dense()
    if contexts == "images":
        X = np.random.default_rng(1).standard_normal((4, D))
    mean, width = policy.predict(X)
    net = policy.learner_.network
    grads = []
    for k in range(4):
        net.zero_grad()
        out = net(as_input(X[[k]], CPU))[0, 0]
        out.backward()
        grads.append(torch.cat([p.grad.flatten() for p in net.parameters()]).double())
        assert float(out.detach()) == pytest.approx(mean[k], rel=1e-6, abs=1e-7)
    g = torch.stack(grads).numpy()
    m = 8.0
    np.testing.assert_allclose(width, np.sqrt((g * g).sum(axis=1) / m), rtol=1e-5)
    policy.update(X, 2, 1.0)
    z = 1.0 + g[2] ** 2 / m
    expected = np.sqrt((g * g / z).sum(axis=1) / m) if mode == "diag" else None
    if mode == "full":
        Z = np.eye(len(g[2])) + np.outer(g[2], g[2]) / m
        expected = np.sqrt(np.einsum("bi,bi->b", g @ np.linalg.inv(Z), g) / m)
    np.testing.assert_allclose(policy.predict(X)[1], expected, rtol=1e-4)
