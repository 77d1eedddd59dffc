import contextlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from deepbandits.errors import InputValueError
from deepbandits.linalg.ridge import DRIFT_TOL, RidgeState, sherman_morrison_update

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


# --- accuracy with badly scaled contexts, refused updates (issue 15) ---------------------------

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "ridge_accuracy.py"


@pytest.fixture(scope="module")
def accuracy() -> ModuleType:
    """benchmarks/ridge_accuracy.py as a module: its long-double reference and error measures."""
    spec = importlib.util.spec_from_file_location("bench_ridge_accuracy", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_badly_scaled_contexts_keep_inverse_theta_and_widths_within_1e_8(accuracy):
    """Column scales spanning 10⁶, d = 8, 20,000 updates: from n = 2d on, A⁻¹, θ and the widths
    stay within 1e-8 relative of the long-double reference at every checkpoint (among them
    n = 499, just before the first periodic re-inversion, where the periodic refresh alone was
    1e-5 off)."""
    result = accuracy.run_case(d=8, span=1e6, n=20_000, seed=0)
    for measure in accuracy.MEASURES:
        assert result["new"][f"{measure} worst"] < 1e-8, measure
        assert result["old"][f"{measure} worst"] > 1e-7, measure
    assert result["new"]["reference check"] < 1e-12


def test_large_heads_in_place_follow_the_drift_estimate_too(accuracy):
    """The in-place path (d >= 256) re-inverts on drift the same way (no periodic re-inversion
    within these 600 updates: without the drift estimate A⁻¹ is far off)."""
    d, n = 256, 600
    X, r = next(accuracy.observations(d, 1e6, n, seed=3, block=n))
    ref, P = accuracy.Reference(d), accuracy.probes(d, 1e6, 3)
    ref.add(X, r)
    errors = {}
    for behaviour in accuracy.BEHAVIOURS:
        ridge = RidgeState(d, refresh_every=1000)
        with accuracy.periodic_only() if behaviour == "old" else contextlib.nullcontext():
            for x, y in zip(X, r, strict=True):
                ridge.update(x, y)
        errors[behaviour] = max(accuracy.relative_errors(ridge, ref, P).values())
    assert errors["new"] < 1e-8 < errors["old"], errors


def test_well_scaled_trajectory_is_exactly_the_periodic_one(accuracy):
    """The drift estimate never fires on well-scaled data: bit for bit the trajectory of the
    periodic re-inversion alone (the recorded results stay reproducible)."""
    rng = np.random.default_rng(5)
    X, r, w = rng.standard_normal((1200, 20)), rng.standard_normal(1200), rng.uniform(0.1, 3, 1200)
    heads = rng.integers(0, 2, 1200)
    new, old = RidgeState(20, 2, 0.5), RidgeState(20, 2, 0.5)
    for x, y, wt, h in zip(X, r, w, heads, strict=True):
        new.update(x, y, wt, int(h))
        with accuracy.periodic_only():
            old.update(x, y, wt, int(h))
    assert new.drift.max() < DRIFT_TOL / 10
    for key, value in old.state_dict().items():
        np.testing.assert_array_equal(new.state_dict()[key], value, err_msg=key)


def test_drift_survives_a_state_dict_round_trip(accuracy):
    """A state rebuilt from state_dict() continues bit for bit, drift estimate included."""
    X, r = next(accuracy.observations(6, 1e6, 300, seed=1, block=300))
    ridge = RidgeState(6, 1, 1.0, refresh_every=50)
    for x, y in zip(X[:20], r[:20], strict=True):
        ridge.update(x, y)
    assert ridge.drift[0] > 0
    back = RidgeState.from_state_dict(ridge.state_dict())
    for x, y in zip(X[20:], r[20:], strict=True):
        ridge.update(x, y)
        back.update(x, y)
    for key, value in ridge.state_dict().items():
        np.testing.assert_array_equal(back.state_dict()[key], value, err_msg=key)


def assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


BAD_UPDATES = {
    "x overflows A": (np.full(4, 1e160), 1.0, 1.0, 0, "x of norm"),
    "weight overflows A": (np.full(4, 1e5), 1.0, 1e300, 0, "weight"),
    "reward overflows b": (np.ones(4), 1e300, 1.0, 0, "reward"),
    "x NaN": (np.array([1.0, np.nan, 0.0, 0.0]), 1.0, 1.0, 0, "x must be finite"),
    "x inf": (np.array([1.0, np.inf, 0.0, 0.0]), 1.0, 1.0, 0, "x of norm inf"),
    "reward inf": (np.ones(4), np.inf, 1.0, 0, "reward must be finite"),
    "weight NaN": (np.ones(4), 1.0, np.nan, 0, "weight must be finite"),
    "weight negative": (np.ones(4), 1.0, -1.0, 0, "weight must be finite and >= 0"),
    "head out of range": (np.ones(4), 1.0, 1.0, 2, "head must be an integer in [0, 2)"),
    "head negative": (np.ones(4), 1.0, 1.0, -1, "head must be an integer in [0, 2)"),
    "x wrong shape": (np.ones(5), 1.0, 1.0, 0, "x must have shape (4,)"),
}


@pytest.mark.parametrize("case", BAD_UPDATES)
def test_refused_update_leaves_the_state_exactly_as_before(case):
    x, reward, weight, head, message = BAD_UPDATES[case]
    rng = np.random.default_rng(0)
    ridge, clean = RidgeState(4, 2, 0.1), RidgeState(4, 2, 0.1)
    for _ in range(10):
        x0, r0 = rng.standard_normal(4), rng.standard_normal()
        ridge.update(x0, r0)
        clean.update(x0, r0)
    before = ridge.state_dict()
    with pytest.raises(InputValueError, match=re.escape(message)):
        ridge.update(x, reward, weight, head)
    assert_same_state(ridge.state_dict(), before)
    x1 = rng.standard_normal(4)  # not poisoned: the next update is that of a clean state
    ridge.update(x1, 0.5)
    clean.update(x1, 0.5)
    assert_same_state(ridge.state_dict(), clean.state_dict())


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(-5, 170), st.integers(-5, 300), st.integers(-300, 300)),
        min_size=1,
        max_size=6,
    ),
    lam_exp=st.integers(-6, 6),
    seed=st.integers(0, 2**31 - 1),
)
def test_any_magnitude_is_refused_whole_or_kept_finite(steps, lam_exp, seed):
    """Contexts, rewards and weights of magnitudes 10^-5 .. 10^300: each update is refused with
    the state untouched, or taken with every statistic finite."""
    rng = np.random.default_rng(seed)
    ridge = RidgeState(3, 1, 10.0**lam_exp, refresh_every=3)
    for x_exp, r_exp, w_exp in steps:
        x = rng.standard_normal(3) * 10.0**x_exp
        reward, weight = rng.standard_normal() * 10.0**r_exp, 10.0**w_exp
        before = ridge.state_dict()
        try:
            ridge.update(x, reward, weight)
        except InputValueError:
            assert_same_state(ridge.state_dict(), before)
        else:
            for key in ("A", "A_inv", "b", "theta", "drift"):
                assert np.isfinite(getattr(ridge, key)).all(), key
        ridge.score(rng.standard_normal((2, 3)))
