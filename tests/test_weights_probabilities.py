"""Two public hooks for learning from logs: an observation weight on ``update``/``learn``/
``learn_batch`` (it multiplies the ridge family's 1/σ̄²), and ``probabilities``, every arm's
probability under the policy's choice rule (what a decision's propensity says)."""

from __future__ import annotations

import numpy as np
import pytest

import deepbandits as db
from conftest import POLICY_CASES, play

K, D = 4, 3


def contexts(seed: int, n: int = K) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, D))


@pytest.mark.parametrize("per_arm", [False, True])
def test_a_weight_multiplies_the_ridge_observation(per_arm):
    policy = db.make_policy("linucb", per_arm=per_arm, lam=1.0)
    X = contexts(0)
    head = 2 if per_arm else 0
    policy.update(X, 2, 0.5, weight=3.0)
    A = policy.ridge_.A[head]
    np.testing.assert_allclose(A, np.eye(D) + 3.0 * np.outer(X[2], X[2]), rtol=1e-12)
    np.testing.assert_allclose(policy.ridge_.b[head], 3.0 * 0.5 * X[2], rtol=1e-12)


def test_weights_reach_the_batch_and_the_decision_paths_alike():
    one, many = db.make_policy("linucb", seed=0), db.make_policy("linucb", seed=0)
    weights = [0.5, 2.0, 0.0]
    decisions = [one.decide(contexts(i)) for i in range(3)]
    for d, w in zip(decisions, weights, strict=True):
        one.learn(d, 0.3, weight=w)
    batch = [many.decide(contexts(i)) for i in range(3)]
    many.learn_batch(batch, np.full(3, 0.3), weights=weights)
    np.testing.assert_allclose(one.ridge_.A, many.ridge_.A, rtol=1e-12)
    unweighted = db.make_policy("linucb", seed=0)
    for i in range(3):
        unweighted.learn(unweighted.decide(contexts(i)), 0.3)
    assert not np.allclose(unweighted.ridge_.A, one.ridge_.A)


@pytest.mark.parametrize(
    ("name", "bad", "error"),
    [
        ("linucb", -1.0, db.InputValueError),
        ("linucb", float("nan"), db.InputValueError),
        ("linucb", "2", db.InputTypeError),
        ("neural-ucb", 2.0, db.InputValueError),
        ("kernel-ucb", 0.5, db.InputValueError),
    ],
)
def test_a_bad_or_unsupported_weight_is_refused_and_changes_nothing(name, bad, error):
    policy = (
        db.make_policy(name, seed=0, hidden=8) if name == "neural-ucb" else db.make_policy(name)
    )
    X = contexts(1)
    d = policy.decide(X)
    before = policy.state_dict()
    with pytest.raises(error, match="weight"):
        policy.learn(d, 0.5, weight=bad)
    assert policy.pending_.ids() == [d.id]
    assert policy.state_dict()["t"] == before["t"]
    policy.learn(d, 0.5, weight=1.0)  # weight 1 is every policy's


@pytest.mark.parametrize(("name", "params"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_probabilities_are_the_propensities_decisions_carry(name, params):
    policy = db.make_policy(name, seed=0, epsilon=0.1, **params)
    play(policy, db.make_env("h1", d=4, n_arms=3, seed=1), 20)
    X = np.random.default_rng(3).standard_normal((3, 4))
    mask = np.array([True, False, True])
    if policy._samples:
        with pytest.raises(db.InputValueError, match="replay"):
            policy.probabilities(X)
        return
    generator = policy._rng.bit_generator.state
    counts = policy.pending_.counts()
    probs = policy.probabilities(X, mask)
    assert probs.shape == (3,) and probs[1] == 0.0 and probs.sum() == pytest.approx(1.0)
    batch = policy.probabilities(np.stack([X, X]), np.stack([mask, mask]))
    np.testing.assert_allclose(batch, [probs, probs], rtol=1e-12)
    assert policy._rng.bit_generator.state == generator  # nothing drawn, nothing kept
    assert policy.pending_.counts() == counts
    d = policy.decide(X, mask)
    assert d.propensity == pytest.approx(probs[d.arm], rel=1e-12)
