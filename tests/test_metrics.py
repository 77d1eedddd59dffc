"""Calibration, sharpness and paired comparisons (Appendix B.3)."""

import numpy as np
import pytest

from deepbandits.metrics import (
    DEFAULT_LEVELS,
    calibration_error,
    gaussian_pit,
    observed_frequencies,
    paired_difference,
    reliability_table,
    sharpness,
)


def forecasts(scale: float, n: int = 20000, seed: int = 0):
    """Rewards r ~ N(μ, 1) with forecasts N(μ, scale²): scale 1 is the true distribution."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=n)
    rewards = mean + rng.normal(size=n)
    return gaussian_pit(rewards, mean, np.full(n, scale))


def test_true_forecasts_are_calibrated_and_wrong_ones_are_not():
    true = calibration_error(forecasts(1.0))
    over = calibration_error(forecasts(0.2))  # over-confident: intervals far too narrow
    under = calibration_error(forecasts(5.0))  # under-confident: far too wide
    # 19 levels, each frequency off by O(1/sqrt(n)) ≈ 0.007: the sum of squares is ~1e-3
    assert true < 2e-3
    assert over > 0.5 and under > 0.5


def test_calibration_error_by_hand():
    pit = np.array([0.1, 0.2, 0.2, 0.9])
    levels = [0.25, 0.5, 1.0]
    np.testing.assert_array_equal(observed_frequencies(pit, levels), [0.75, 0.75, 1.0])
    assert calibration_error(pit, levels) == pytest.approx(0.5**2 + 0.25**2)


def test_reliability_table_sums():
    pit = forecasts(1.0, n=1000)
    table = reliability_table(pit)
    np.testing.assert_array_equal(table["expected"], DEFAULT_LEVELS)
    assert np.all(np.diff(table["observed"]) >= 0)
    np.testing.assert_allclose(table["observed"] - table["expected"], table["gap"])
    assert calibration_error(pit) == pytest.approx(float((table["gap"] ** 2).sum()))


def test_point_forecasts_are_steps():
    np.testing.assert_array_equal(
        gaussian_pit([1.0, 0.0, 2.0], [1.0, 1.0, 1.0], [0, 0, 0]), [1, 0, 1]
    )


def test_sharpness_formula():
    assert sharpness([1.0, 4.0, 4.0, 7.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="variances"):
        sharpness([1.0, -1.0])


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="one shape"):
        gaussian_pit([1.0, 2.0], [1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="std"):
        gaussian_pit([1.0], [1.0], [-1.0])
    with pytest.raises(ValueError, match="increasing"):
        calibration_error([0.5], [0.5, 0.2])


def test_paired_difference_interval():
    a = np.array([10.0, 12.0, 11.0, 13.0, 9.0])
    b = a - np.array([1.0, 2.0, 3.0, 2.0, 2.0])
    diff = paired_difference(a, b)
    assert diff.mean == pytest.approx(2.0)
    assert diff.std_error == pytest.approx(np.std([1, 2, 3, 2, 2], ddof=1) / np.sqrt(5))
    # t_{4, 0.975} = 2.7764
    assert diff.high - diff.mean == pytest.approx(2.7764 * diff.std_error, rel=1e-4)
    assert diff.low > 0  # B is lower on every seed, and the interval excludes 0
    with pytest.raises(ValueError, match="one value per seed"):
        paired_difference([1.0, 2.0], [1.0])
