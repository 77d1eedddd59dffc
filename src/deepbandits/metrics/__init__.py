"""Uncertainty-quality metrics (Appendix B.3), per-run diagnostics and comparisons over seeds,
as pure functions."""

from deepbandits.metrics.calibration import (
    DEFAULT_LEVELS,
    calibration_error,
    gaussian_pit,
    observed_frequencies,
    reliability_table,
    sharpness,
)
from deepbandits.metrics.comparison import PairedDifference, mean_std, paired_difference
from deepbandits.metrics.diagnostics import (
    exploration_split,
    explored_rounds,
    holdout_calibration,
    locked_out_arms,
    mean_estimation_error,
    mean_gap,
    reliability_curve,
    run_metrics,
    unplayed_arms,
    variance_estimation_error,
    window_accuracy,
)

__all__ = [
    "DEFAULT_LEVELS",
    "PairedDifference",
    "calibration_error",
    "exploration_split",
    "explored_rounds",
    "gaussian_pit",
    "holdout_calibration",
    "locked_out_arms",
    "mean_estimation_error",
    "mean_gap",
    "mean_std",
    "observed_frequencies",
    "paired_difference",
    "reliability_curve",
    "reliability_table",
    "run_metrics",
    "sharpness",
    "unplayed_arms",
    "variance_estimation_error",
    "window_accuracy",
]
