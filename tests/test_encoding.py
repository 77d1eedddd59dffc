"""Block encoding (Section 5.2): the compact representation equals the dense one everywhere."""

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.encoding import BlockContexts, block_encode
from deepbandits.networks.gradients import (
    backpropagate,
    diagonal_quadratic_form,
    forward_cache,
    output_gradients,
    summed_gradients,
)
from deepbandits.networks.history import History
from deepbandits.networks.mlp import MLP, BlockInput, BlockOuterSum, as_input, first_layer
from deepbandits.networks.optimizer import make_optimizer
from deepbandits.networks.training import train_feature_map

K, D = 4, 30


def test_block_encode_places_x_in_block_k():
    x = np.arange(1.0, 4.0)
    X = block_encode(x, 3)
    assert X.shape == (3, 9) and len(X) == 3 and X.block_dim == 3
    dense = np.asarray(X)
    np.testing.assert_array_equal(dense[1], [0, 0, 0, 1, 2, 3, 0, 0, 0])
    assert np.count_nonzero(dense) == 9
    np.testing.assert_array_equal(X[1].dense(), dense[1:2])
    np.testing.assert_array_equal(X[[2, 0]].dense(), dense[[2, 0]])
    assert X == X.copy() and X != X[:2]
    with pytest.raises(ValueError, match="1-d"):
        block_encode(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="n_arms"):
        block_encode(x, 0)
    with pytest.raises(ValueError, match="slots must lie"):
        BlockContexts(np.ones((2, 3)), [0, 5], n_blocks=3)


def test_bad_block_contexts_are_rejected_by_policies():
    X = block_encode(np.ones(D), K)
    X.blocks[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(first at arm 2, block feature 3"):
        db.make_policy("linucb").select(X)
    policy = db.make_policy("linucb")
    policy.select(block_encode(np.ones(D), K))
    with pytest.raises(ValueError, match="features per arm"):
        policy.select(block_encode(np.ones(D + 1), K))


def random_rows(rng: np.random.Generator, n: int) -> BlockContexts:
    return BlockContexts(rng.standard_normal((n, D)), rng.integers(0, K, n), K)


def test_network_forward_and_gradients_equal_the_dense_ones():
    net = MLP(K * D, 16, 3, 5, torch.Generator().manual_seed(0), output_activation=False)
    rng = np.random.default_rng(1)
    for X in (block_encode(rng.standard_normal(D), K), random_rows(rng, 9)):
        block, dense = as_input(X, torch.device("cpu")), as_input(X.dense(), torch.device("cpu"))
        torch.testing.assert_close(net(block), net(dense), rtol=1e-5, atol=1e-6)
        grads = []
        for x in (block, dense):
            pres, acts = forward_cache(net, x)
            deltas = backpropagate(net, pres, torch.ones_like(acts[-1]))
            grads.append(summed_gradients(deltas, acts))
        for gb, gd in zip(*grads, strict=True):
            torch.testing.assert_close(gb, gd, rtol=1e-5, atol=1e-6)


def test_diagonal_quadratic_form_on_blocks_equals_dense():
    net = MLP(K * D, 16, 2, 1, torch.Generator().manual_seed(2), output_activation=False)
    inv = [torch.rand(p.shape, dtype=torch.float64) for p in net.parameters()]
    X = random_rows(np.random.default_rng(3), 7)
    results = []
    for x in (as_input(X, torch.device("cpu")), as_input(X.dense(), torch.device("cpu"))):
        _, deltas, acts = output_gradients(net, x)
        results.append(diagonal_quadratic_form(deltas, acts, inv))
    torch.testing.assert_close(results[0], results[1], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["linucb", "sigma2-linucb", "neural-linucb", "neural-ucb"])
def test_policy_on_blocks_equals_policy_on_dense(name):
    """Same scores and the same arms on block-encoded and on dense contexts, round by round."""
    params = {"seed": 0}
    if name != "linucb" and name != "neural-ucb":
        params["reward_range"] = (0, 1)
    if name.startswith("neural"):
        params.update(train_start=0, train_every=5, warmup_every=0, train_steps=3)
    block, dense = db.make_policy(name, **params), db.make_policy(name, **params)
    rng = np.random.default_rng(4)
    for _ in range(30):
        X = block_encode(rng.random(D) / 5, K)
        mb, wb = block.predict(X)
        md, wd = dense.predict(X.dense())
        np.testing.assert_allclose(mb, md, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(wb, wd, rtol=1e-5, atol=1e-6)
        arm = block.select(X)
        assert arm == dense.select(X.dense())
        reward = float(rng.random())
        block.update(X, arm, reward)
        dense.update(X.dense(), arm, reward)


def test_linucb_on_blocks_keeps_one_small_ridge_per_block():
    policy = db.make_policy("linucb")
    X = block_encode(np.ones(D), K)
    policy.update(X, policy.select(X), 1.0)
    assert policy.head.by_block_ and policy.ridge_.A_inv.shape == (K, D, D)
    with pytest.raises(ValueError, match="fitted on block-encoded contexts"):
        policy.select(X.dense())


def test_history_stores_blocks_and_survives_save_load(tmp_path):
    policy = db.make_policy("neural-linucb", seed=0, train_start=0, train_every=4, train_steps=2)
    rng = np.random.default_rng(5)
    for _ in range(6):
        X = block_encode(rng.random(D), K)
        policy.update(X, policy.select(X), float(rng.random()))
    hist = policy.learner_.history
    assert hist.contexts.shape[1] == D and hist.n_blocks == K
    path = tmp_path / "p.pt"
    policy.save(path)
    loaded = db.load_policy(path)
    X = block_encode(rng.random(D), K)
    np.testing.assert_array_equal(loaded.predict(X)[0], policy.predict(X)[0])
    stored, *_ = loaded.learner_.history.view()
    assert isinstance(stored, BlockContexts) and stored == hist.view()[0]
    with pytest.raises(ValueError, match="holds block-encoded contexts"):
        hist.append(np.zeros(K * D), 0.0, 1.0, 0)


def test_history_of_dense_contexts_accepts_block_rows_as_dense():
    hist = History(K * D)
    hist.append(np.ones(K * D), 1.0, 1.0, 0)
    hist.append(block_encode(np.ones(D), K)[2], 0.0, 1.0, 0)
    X, *_ = hist.view()
    np.testing.assert_array_equal(X[1], block_encode(np.ones(D), K).dense()[2])


def test_kernel_ucb_receives_the_dense_matrix():
    policy = db.make_policy("kernel-ucb")
    X = block_encode(np.ones(D), K)
    policy.update(X, policy.select(X), 1.0)
    assert policy.X_.shape == (1, K * D)


@pytest.mark.parametrize(
    ("optimizer", "weight_decay", "max_grad_norm"),
    [("sgd", 0.0, 0.5), ("sgd", 0.0, None), ("sgd", 0.1, 0.5), ("adam", 0.0, 0.5)],
)
def test_training_on_blocks_equals_training_on_dense(optimizer, weight_decay, max_grad_norm):
    """Sorted minibatches and the factored first-layer SGD step change only the rounding."""
    rng = np.random.default_rng(3)
    Dw, Kw = 600, 3  # K·D ≥ MIN_BLOCK_FEATURES, so the block path is taken
    rows = BlockContexts(rng.standard_normal((40, Dw)), rng.integers(0, Kw, 40), Kw)
    rewards = 20 * rng.standard_normal(40)  # large: clipping is active at 0.5
    nets = []
    for dense in (False, True):
        hist = History(Kw * Dw)
        for i in range(40):
            row = BlockContexts(rows.blocks[i : i + 1], rows.slots[i : i + 1], Kw)
            hist.append(row.dense()[0] if dense else row, float(rewards[i]), 1.0, 0)
        X = as_input(hist.view()[0], torch.device("cpu"))
        assert isinstance(X, torch.Tensor if dense else BlockInput)
        net = MLP(Kw * Dw, 16, 2, 4, generator=torch.Generator().manual_seed(0))
        train_feature_map(
            net,
            hist,
            np.ones((1, 4)),
            np.eye(4)[None],
            loss="mse",
            steps=5,
            batch_size=16,
            optimizer=make_optimizer(optimizer, net.parameters(), 1e-2, weight_decay),
            generator=torch.Generator().manual_seed(1),
            max_grad_norm=max_grad_norm,
        )
        nets.append(net)
    start = MLP(Kw * Dw, 16, 2, 4, generator=torch.Generator().manual_seed(0))
    params = zip(nets[0].parameters(), nets[1].parameters(), start.parameters(), strict=True)
    for pb, pd, p0 in params:
        assert not torch.equal(pb, p0)  # the step moved the weights
        torch.testing.assert_close(pb, pd, rtol=1e-5, atol=1e-6)


def test_factored_block_gradient_equals_the_dense_gradient():
    rng = np.random.default_rng(4)
    rows = random_rows(rng, 11)
    x = BlockInput(torch.as_tensor(rows.blocks, dtype=torch.float32), rows.slots, K)
    delta = torch.randn(11, 7, generator=torch.Generator().manual_seed(0))
    factored = BlockOuterSum(delta, x)
    dense = delta.t() @ x.dense()
    torch.testing.assert_close(factored.dense(), dense)
    torch.testing.assert_close(factored.squared_norm(), (dense * dense).sum())
    target = torch.ones(7, K * D)
    factored.add_to_(target, alpha=-0.5)
    torch.testing.assert_close(target, 1 - 0.5 * dense)


@pytest.mark.parametrize("slots", [[3], [3, 3], [3, 3, 3, 3, 3], [0, 3], [3, 0, 3], [2, 2, 3]])
def test_block_rows_give_the_dense_product_in_one_block_or_several(slots):
    """The first layer on block rows equals the dense product whether the rows share one block
    (a single-sample step: one product, a slice) or not (a product per block)."""
    torch.manual_seed(0)
    n_blocks, D = 4, 6
    blocks = torch.randn(len(slots), D)
    x = BlockInput(blocks, np.array(slots, dtype=np.int64), n_blocks)
    layer = torch.nn.Linear(n_blocks * D, 5)
    torch.testing.assert_close(first_layer(layer, x), layer(x.dense()), rtol=1e-6, atol=1e-6)
    one_block = len(set(slots)) == 1
    assert (list(x.groups) == [slots[0]]) is one_block
    if one_block:
        assert x.groups[slots[0]] == slice(0, len(slots))
