import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.encoding import MIN_BLOCK_FEATURES, block_encode, diagonal_blocks
from deepbandits.networks.mlp import MLP

K, D = 4, 300  # K·D = 1200 ≥ MIN_BLOCK_FEATURES


def test_block_encode_places_x_in_block_k():
    x = np.arange(1.0, 4.0)
    X = block_encode(x, 3)
    assert X.shape == (3, 9)
    np.testing.assert_array_equal(X[1], [0, 0, 0, 1, 2, 3, 0, 0, 0])
    assert np.count_nonzero(X) == 9
    with pytest.raises(ValueError, match="1-d"):
        block_encode(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="n_arms"):
        block_encode(x, 0)


def test_diagonal_blocks_recognises_block_encoding_only():
    x = np.random.default_rng(0).random(D)
    X = block_encode(x, K)
    np.testing.assert_array_equal(diagonal_blocks(X), np.tile(x, (K, 1)))
    leaked = X.copy()
    leaked[0, -1] = 1e-9  # one non-zero outside row 0's block
    assert diagonal_blocks(leaked) is None
    assert diagonal_blocks(X[:3]) is None  # width not K·D for 3 rows
    small = block_encode(np.ones(MIN_BLOCK_FEATURES // K - 1), K)
    assert diagonal_blocks(small) is None


def test_block_diagonal_forward_equals_dense_forward():
    net = MLP(K * D, 32, 3, 8, torch.Generator().manual_seed(0))
    rng = np.random.default_rng(1)
    X = np.vstack([block_encode(rng.random(D), K)[k] for k in range(K)])
    dense = net(torch.from_numpy(X).float())
    blocks = net(torch.from_numpy(diagonal_blocks(X)).float(), block_diagonal=True)
    torch.testing.assert_close(blocks, dense, rtol=1e-5, atol=1e-6)


def test_neural_linear_policy_uses_blocks_consistently():
    """Scores on block-encoded contexts equal the dense computation of the same network."""
    policy = db.make_policy("neural-linucb", seed=0, feature_dim=8)
    rng = np.random.default_rng(2)
    for _ in range(5):
        X = block_encode(rng.random(D), K)
        policy.update(X, policy.select(X), float(rng.random()))
    X = block_encode(rng.random(D), K)
    mean, width = policy.predict(X)
    with torch.no_grad():
        phi = policy.learner_.network(torch.from_numpy(X).float()).double().numpy()
    ref_mean, ref_width = policy.ridge_.score(phi)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(width, ref_width, rtol=1e-5, atol=1e-7)
