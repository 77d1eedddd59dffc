"""Calibration, sharpness and paired comparisons (Appendix B.3)."""

import numpy as np
import pytest

from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.metrics import (
    DEFAULT_LEVELS,
    calibration_error,
    exploration_split,
    explored_rounds,
    gaussian_pit,
    locked_out_arms,
    mean_gap,
    mean_std,
    observed_frequencies,
    paired_difference,
    reliability_table,
    sharpness,
    unplayed_arms,
    window_accuracy,
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


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: gaussian_pit(["1"], [1.0], [1.0]), InputTypeError, "rewards must be an array"),
        (lambda: gaussian_pit([1.0], [1.0], [np.nan]), InputValueError, "std .* holds nan"),
        (lambda: calibration_error([0.5], "0.5"), InputTypeError, "levels"),
        (lambda: calibration_error([0.5], [[0.5]]), InputValueError, "levels .* shape"),
        (lambda: observed_frequencies([]), InputValueError, "pit .* empty"),
        (lambda: sharpness([]), InputValueError, "variances .* an empty array"),
        (lambda: sharpness([1.0, np.inf]), InputValueError, "variances .* inf is given"),
        (lambda: paired_difference([1.0, np.nan], [1.0, 2.0]), InputValueError, "finite"),
        (lambda: paired_difference([1.0], [2.0], "0.9"), InputTypeError, "confidence"),
        (lambda: paired_difference([1.0], [2.0], 1.0), InputValueError, r"confidence .* \(0, 1\)"),
        (lambda: mean_std([]), InputValueError, "values .* empty"),
        (lambda: window_accuracy([0.0, 1.0], 0), InputValueError, "window must be >= 1"),
        (lambda: unplayed_arms([0, 1], 0), InputValueError, "n_arms must be >= 1"),
        (lambda: unplayed_arms([0, 1.5], 3), InputValueError, "arms .* whole-number .* 1.5"),
        (lambda: unplayed_arms([[0, 1]], 3), InputValueError, "arms must be 1-d"),
        (lambda: locked_out_arms([0], [0], 2, min_share=1.5), InputValueError, "min_share"),
        (lambda: locked_out_arms([0], [0], 2, min_share="x"), InputTypeError, "min_share"),
        (lambda: locked_out_arms([0], ["a"], 2), InputTypeError, "best_arms"),
        (lambda: mean_gap([0.1, 0.2], 2), InputValueError, "arm must index .* arm 2"),
        (lambda: mean_gap([0.1, 0.2], 0, [False, True]), InputValueError, "makes arm 0 avail"),
        (lambda: mean_gap([0.1, 0.2], 0, [True]), InputValueError, r"mask .* \[2\]"),
        (lambda: mean_gap(["a"], 0), InputTypeError, "mean must be an array"),
        (lambda: exploration_split([0.0], [0.0, 1.0]), InputValueError, "same length"),
    ],
)
def test_every_metric_refuses_bad_input_by_name(call, error, match):
    """Errors are the library's own (still ValueError/TypeError), naming the argument and what
    was given; numpy's conversions never decide (``"1"`` is not read as 1.0)."""
    with pytest.raises(error, match=match):
        call()


def test_window_counts_whole_windows_and_float_arm_columns():
    # window=0 once meant the whole run (x[-0:]); it is refused above, and a window larger than
    # the run is the whole run
    assert window_accuracy([1.0, 0.0, 0.0, 0.0], 2) == 1.0
    assert window_accuracy([1.0, 0.0, 0.0, 0.0], 10) == 0.75
    # a column of arms read as floats (pandas with gaps) counts as the integers it holds
    assert unplayed_arms(np.array([0.0, 2.0, 2.0]), 4) == 2


def test_mean_gap_is_what_a_choice_gave_up_among_the_available_arms():
    mean = [0.2, 0.9, 0.5]
    assert mean_gap(mean, 1) == 0.0  # the greedy arm
    assert mean_gap(mean, 2) == pytest.approx(0.4)
    # arm 1 unavailable: arm 2 is the greedy choice among the rest
    assert mean_gap(mean, 2, [True, False, True]) == 0.0
    assert mean_gap(mean, 0, [True, False, True]) == pytest.approx(0.3)
    assert mean_gap([0.7, 0.7], 1) == 0.0  # a tie is greedy


def test_exploration_split_counts_the_rounds_off_the_greedy_arm_and_their_regret():
    regret = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    gap = np.array([0.0, 0.3, 0.2, 0.0, np.nan])
    assert list(explored_rounds(gap)) == [False, True, True, False, False]
    split = exploration_split(regret, gap)
    assert split["explored_share"] == pytest.approx(2 / 5)
    assert split["explored_regret"] == pytest.approx(0.5)
    old = exploration_split(regret, np.full(5, np.nan))  # a record saved before the column
    assert np.isnan(old["explored_share"]) and np.isnan(old["explored_regret"])


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
