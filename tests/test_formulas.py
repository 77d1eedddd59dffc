import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deepbandits.formulas import theory_alpha, warmup_prior
from deepbandits.policies.parts.variance import (
    floored_variance,
    range_variance_bound,
    range_variance_bound_near,
    variance_floor,
)


def test_range_bound_eq13_hand_values():
    # (b - mu)(mu - a) with [a, b] = [0, 1]
    np.testing.assert_allclose(
        range_variance_bound([0.5, 0.0, 0.9, 1.2], 0.0, 1.0), [0.25, 0.0, 0.09, -0.24]
    )
    # [a, b] = [-3, 13], mu = 5: 8 * 8
    assert range_variance_bound(5.0, -3.0, 13.0) == pytest.approx(64.0)


def test_range_bound_is_the_variance_of_a_two_point_law():
    """Theorem 3.2 is tight: a reward on {a, b} with mean mu has variance exactly (b-mu)(mu-a)."""
    a, b, mu = -1.0, 3.0, 0.2
    p = (mu - a) / (b - a)
    var = p * (b - mu) ** 2 + (1 - p) * (a - mu) ** 2
    assert range_variance_bound(mu, a, b) == pytest.approx(var)


@given(
    mean=st.floats(-0.5, 1.5),
    half_width=st.floats(0.0, 2.0),
    a=st.floats(-3.0, 0.0),
    span=st.floats(0.1, 5.0),
)
def test_range_bound_near_is_the_largest_bound_within_the_interval(mean, half_width, a, span):
    b = a + span
    got = range_variance_bound_near(mean, half_width, a, b)
    grid = np.linspace(mean - half_width, mean + half_width, 2001)
    best = range_variance_bound(grid, a, b).max()
    assert got >= best - 1e-9  # no μ of the interval has a larger bound
    assert got <= span**2 / 4 + 1e-12  # never above the range's largest variance
    assert got >= range_variance_bound(mean, a, b) - 1e-12
    assert range_variance_bound_near(mean, 0.0, a, b) == pytest.approx(
        range_variance_bound(mean, a, b)
    )
    if half_width >= abs(mean - (a + b) / 2):
        assert got == pytest.approx(span**2 / 4)


def test_floor_sigma_bar():
    assert variance_floor(1.0, 20) == pytest.approx(0.05)
    np.testing.assert_allclose(
        floored_variance([0.0, 0.01, 0.3, -2.0], 1.0, 20), [0.05, 0.05, 0.3, 0.05]
    )
    np.testing.assert_allclose(floored_variance(0.1, 2.0, 4), 1.0)


def test_theory_alpha_hand_computed():
    t, d, s2, lam, delta, M, R, H, K = 10, 4, 0.25, 1.0, 0.1, 2.0, 1.0, 10, 4
    log_term = math.log(4 * t * t / delta)
    expected = (
        8 * math.sqrt(d * math.log(1 + t * d * math.log(H * K) / (s2 * d * lam)) * log_term)
        + 4 * R / math.sqrt(s2) * log_term
        + math.sqrt(lam) * M
    )
    got = theory_alpha(t, d=d, sigma2_bar=s2, lam=lam, delta=delta, M=M, R=R, H=H, K=K)
    assert got == pytest.approx(expected)
    # grows with t, shrinks with sigma-bar
    assert theory_alpha(100, d=d, sigma2_bar=s2) > theory_alpha(10, d=d, sigma2_bar=s2)
    assert theory_alpha(10, d=d, sigma2_bar=1.0) < theory_alpha(10, d=d, sigma2_bar=0.1)


def test_warmup_prior_scales_lambda_by_the_mean_weight_until_t0():
    # f = 1/40 (h1's sigma-hat^2 of about 40): lambda/40 at first, lambda at t0 and after
    assert warmup_prior(1.0, 1 / 40, 0, 2000) == pytest.approx(1 / 40)
    assert warmup_prior(1.0, 1 / 40, 1000, 2000) == pytest.approx(1 / 40 + (1 - 1 / 40) / 2)
    assert warmup_prior(2.0, 1 / 40, 2000, 2000) == 2.0
    assert warmup_prior(2.0, 1 / 40, 5000, 2000) == 2.0
    values = [warmup_prior(1.0, 0.1, t, 100) for t in range(101)]
    assert all(a < b for a, b in itertools.pairwise(values))
    # unit weights (the unweighted ridge) or larger weights: the prior never changes
    assert warmup_prior(3.0, 1.0, 10, 2000) == 3.0
    assert warmup_prior(3.0, 16.0, 10, 2000) == 3.0
    assert warmup_prior(3.0, 0.1, 10, 0) == 3.0
