import numpy as np
import pytest

import deepbandits as db


@pytest.mark.parametrize("name", ["h1", "h2", "h3", "linear"])
def test_rewards_follow_definitions_and_declared_range(name):
    env = db.make_env(name, seed=3, d=6, n_arms=5)
    a, b = env.reward_range
    lo, hi = env.mean_range()
    for _ in range(300):
        rnd = env.next_round()
        X = rnd.contexts
        assert X.shape == (5, 6)
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
        u = X @ env.theta
        h = {
            "h1": 10 * u**2,
            "h2": np.einsum("ki,ki->k", X @ env.A.T, X @ env.A.T) if env.A is not None else None,
            "h3": np.cos(3 * u),
            "linear": u,
        }[name]
        np.testing.assert_allclose(rnd.expected_rewards, h)
        assert (h >= lo - 1e-12).all() and (h <= hi + 1e-12).all()
        rewards = [env.reward(k) for k in range(5)]
        noise = np.array(rewards) - h
        np.testing.assert_allclose(noise, noise[0])  # one ξₜ per round
        assert all(a <= r <= b for r in rewards)
        assert 0 <= rnd.sigma2 <= 1


def test_same_seed_same_stream_and_reset():
    e1, e2 = db.make_env("h1", seed=7), db.make_env("h1", seed=7)
    r1 = [e1.next_round() for _ in range(1500)]
    r2 = [e2.next_round() for _ in range(1500)]
    assert all(
        np.array_equal(x.contexts, y.contexts) and x.sigma2 == y.sigma2
        for x, y in zip(r1, r2, strict=True)
    )
    e1.reset()
    assert np.array_equal(e1.next_round().contexts, r1[0].contexts)
    e1.reset(8)
    assert not np.array_equal(e1.next_round().contexts, r1[0].contexts)


def test_noise_schedules():
    T = 1000
    rising = db.make_env("h1", noise="rising", horizon=T, seed=0)
    var = np.array([rising.next_round().sigma2 for _ in range(T)])
    assert var[0] == pytest.approx(1.0) and var[-1] == pytest.approx(100.0)
    assert np.all(np.diff(var) > 0)
    falling = db.make_env("h1", noise="falling", horizon=T, seed=0)
    var = np.array([falling.next_round().sigma2 for _ in range(T)])
    assert var[0] == pytest.approx(4.0) and var[-1] == pytest.approx(0.0)
    fixed = db.make_env("h1", noise="fixed", noise_std=0.1, seed=0)
    rnd = fixed.next_round()
    assert rnd.sigma2 == pytest.approx(0.01)
    assert fixed.reward_range == pytest.approx((-0.3, 10.3))
    uniform = db.make_env("h1", seed=0)
    var = np.array([uniform.next_round().sigma2 for _ in range(4000)])
    assert abs(var.mean() - 0.5) < 0.03 and var.min() >= 0 and var.max() <= 1
