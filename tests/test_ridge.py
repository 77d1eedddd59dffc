import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from deepbandits.linalg.ridge import RidgeState, sherman_morrison_update

finite = st.floats(-3, 3, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    x=arrays(np.float64, 6, elements=finite),
    w=st.floats(0.01, 50),
    seed=st.integers(0, 2**31 - 1),
)
def test_sherman_morrison_matches_exact_inverse(x, w, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((6, 6))
    A = B @ B.T + np.eye(6)
    got = sherman_morrison_update(np.linalg.inv(A), x, w)
    np.testing.assert_allclose(got, np.linalg.inv(A + w * np.outer(x, x)), rtol=1e-8, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 8),
    heads=st.integers(1, 3),
    lam=st.floats(0.1, 10),
    seed=st.integers(0, 2**31 - 1),
)
def test_batched_ridge_matches_numpy_solve(n, d, heads, lam, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    r = rng.standard_normal(n)
    w = rng.uniform(0.05, 20, n)
    h = rng.integers(0, heads, n)
    ridge = RidgeState(d, heads, lam, refresh_every=7)
    for i in range(n):
        ridge.update(X[i], r[i], w[i], int(h[i]))
    Q = rng.standard_normal((5, d))
    qh = rng.integers(0, heads, 5)
    mean, width = ridge.score(Q, qh if heads > 1 else None)
    for k in range(5):
        hk = qh[k] if heads > 1 else 0
        sel = h == hk
        A = lam * np.eye(d) + (X[sel] * w[sel, None]).T @ X[sel]
        b = (X[sel] * w[sel, None]).T @ r[sel]
        np.testing.assert_allclose(mean[k], Q[k] @ np.linalg.solve(A, b), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(
            width[k] ** 2, Q[k] @ np.linalg.solve(A, Q[k]), rtol=1e-7, atol=1e-9
        )


def test_weighted_ridge_minimises_eq9_objective():
    """θ = A⁻¹b of Eq. 10 is the minimiser of λ‖θ‖² + Σ (θᵀφᵢ − rᵢ)²/σ̄ᵢ² (Eq. 9)."""
    rng = np.random.default_rng(0)
    n, d, lam = 50, 4, 2.0
    Phi = rng.standard_normal((n, d))
    r = rng.standard_normal(n)
    s2 = rng.uniform(0.05, 3, n)
    ridge = RidgeState(d, 1, lam)
    for i in range(n):
        ridge.update(Phi[i], r[i], 1 / s2[i])
    theta = ridge.theta[0]

    def objective(th):
        return lam * th @ th + np.sum((Phi @ th - r) ** 2 / s2)

    grad = 2 * lam * theta + 2 * Phi.T @ ((Phi @ theta - r) / s2)
    np.testing.assert_allclose(grad, 0, atol=1e-9)
    for _ in range(20):
        assert objective(theta) < objective(theta + 1e-3 * rng.standard_normal(d))


def test_refresh_bounds_drift_and_refit_equals_incremental():
    rng = np.random.default_rng(1)
    d = 10
    ridge = RidgeState(d, 1, 1.0, refresh_every=100)
    X = rng.standard_normal((1000, d)) * 10
    r = rng.standard_normal(1000)
    w = rng.uniform(0.01, 100, 1000)
    for i in range(1000):
        ridge.update(X[i], r[i], w[i])
    assert ridge.exact_inverse_error() < 1e-10
    refit = RidgeState(d, 1, 1.0)
    refit.refit(X, r, w, np.zeros(1000, dtype=np.int64))
    np.testing.assert_allclose(refit.theta, ridge.theta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(refit.A, ridge.A, rtol=1e-12)


def test_large_heads_update_in_place_and_match_exact_solve():
    """Heads of dimension >= 256 use in-place torch rank-one updates; same statistics."""
    rng = np.random.default_rng(0)
    dim = 300
    ridge = RidgeState(dim, n_heads=2, lam=[0.5, 2.0], refresh_every=7)
    X = rng.standard_normal((20, dim)) / np.sqrt(dim)
    r = rng.standard_normal(20)
    w = rng.uniform(0.2, 3.0, 20)
    heads = np.arange(20) % 2
    for i in range(20):
        ridge.update(X[i], r[i], w[i], heads[i])
    for h, lam in ((0, 0.5), (1, 2.0)):
        sel = heads == h
        A = lam * np.eye(dim) + (X[sel] * w[sel, None]).T @ X[sel]
        np.testing.assert_allclose(ridge.A[h], A, atol=1e-12)
        np.testing.assert_allclose(ridge.theta[h], np.linalg.solve(A, (w * r)[sel] @ X[sel]))
    assert ridge.exact_inverse_error() < 1e-10


def test_set_lam_equals_a_ridge_built_with_that_lam():
    rng = np.random.default_rng(3)
    X, r, w = rng.standard_normal((40, 5)), rng.standard_normal(40), rng.uniform(0.01, 2, 40)
    heads = rng.integers(0, 2, 40)
    changed, fresh = RidgeState(5, 2, 1.0), RidgeState(5, 2, 0.05)
    for x, y, wt, h in zip(X, r, w, heads, strict=True):
        changed.update(x, y, wt, int(h))
        fresh.update(x, y, wt, int(h))
    changed.set_lam(0.05)
    for key in ("A", "A_inv", "b", "theta"):
        np.testing.assert_allclose(getattr(changed, key), getattr(fresh, key), atol=1e-10)
    assert changed.lam == 0.05 and changed.state_dict()["lam"].tolist() == [0.05, 0.05]
    exact = [np.linalg.solve(fresh.A[h], fresh.b[h]) for h in range(2)]
    np.testing.assert_allclose(changed.theta, exact, atol=1e-10)
