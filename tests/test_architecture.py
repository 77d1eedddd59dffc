"""The README's example of adding a policy from parts runs, and the parts behave as documented."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import deepbandits as db
from deepbandits.policies import POLICIES, register_policy
from deepbandits.policies.features import IdentityFeatures, NetworkFeatures
from deepbandits.policies.heads import RidgeHead

README = Path(__file__).parents[1] / "README.md"


def readme_example(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {marker} -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, f"README has no example {marker!r}"
    return match.group(1)


def test_the_readme_example_adds_a_policy_that_plays_saves_and_loads(tmp_path):
    namespace: dict = {}
    try:
        exec(compile(readme_example("new-policy"), "README.md", "exec"), namespace)
        result = namespace["result"]
        assert len(result.records) == 500 and result.config["policy"]["class"] == "QuadraticUCB"
        policy = db.make_policy("quadratic-ucb", seed=0)
        X = np.random.default_rng(0).standard_normal((4, 3))
        d = policy.decide(X)
        assert d.features.shape == (6,)
        np.testing.assert_allclose(d.features, np.concatenate([X[d.arm], X[d.arm] ** 2]))
        policy.learn(d, 1.0)
        policy.save(tmp_path / "q.pt")
        loaded = db.load_policy(tmp_path / "q.pt")
        np.testing.assert_array_equal(loaded.predict(X)[0], policy.predict(X)[0])
        with pytest.raises(db.InputValueError, match="taken"):
            register_policy("quadratic-ucb", namespace["QuadraticUCB"])
    finally:
        POLICIES.pop("quadratic-ucb", None)


def test_register_policy_refuses_bad_names_and_classes():
    with pytest.raises(db.InputValueError, match="lower-case"):
        register_policy("My Policy", db.LinUCB)
    with pytest.raises(db.InputTypeError, match="Policy subclass"):
        register_policy("thing", dict)  # type: ignore[arg-type]
    with pytest.raises(db.InputValueError, match="taken"):
        register_policy("linucb", db.LinUCB)


def test_the_ridge_family_is_a_feature_map_and_a_head():
    linear = db.make_policy("linucb", per_arm=True)
    linear.decide(np.ones((3, 5)))
    assert isinstance(linear.features_, IdentityFeatures) and isinstance(linear.head_, RidgeHead)
    assert linear.head_.layout == "per_arm" and linear.ridge_.n_heads == 3
    neural = db.make_policy("neural-sigma2-linucb", hidden=8, feature_dim=4)
    neural.decide(np.ones((3, 5)))
    assert isinstance(neural.features_, NetworkFeatures) and neural.features_.dim == 4
    assert neural.head_.layout == "shared" and neural.ridge_.dim == 4
    blocks = db.make_policy("linucb")
    blocks.decide(db.block_encode(np.ones(5), 3))
    assert blocks.head_.layout == "per_block" and blocks.ridge_.A.shape == (3, 5, 5)


def test_a_discounted_head_keeps_its_prior_and_shrinks_the_data():
    head = RidgeHead(2, "shared", lam=2.0, refresh_every=500)
    x = np.array([1.0, 2.0])
    head.ridge.update(x, 3.0, 1.0, 0)
    head.discount(0.5)
    np.testing.assert_allclose(head.ridge.A[0], 2.0 * np.eye(2) + 0.5 * np.outer(x, x))
    np.testing.assert_allclose(head.ridge.b[0], 0.5 * 3.0 * x)
    np.testing.assert_allclose(head.ridge.A_inv[0], np.linalg.inv(head.ridge.A[0]))
