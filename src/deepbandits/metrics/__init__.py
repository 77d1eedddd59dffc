"""Uncertainty-quality metrics (Appendix B.3) and comparisons over seeds, as pure functions."""

from deepbandits.metrics.calibration import (
    DEFAULT_LEVELS,
    calibration_error,
    gaussian_pit,
    observed_frequencies,
    reliability_table,
    sharpness,
)
from deepbandits.metrics.comparison import PairedDifference, paired_difference

__all__ = [
    "DEFAULT_LEVELS",
    "PairedDifference",
    "calibration_error",
    "gaussian_pit",
    "observed_frequencies",
    "paired_difference",
    "reliability_table",
    "sharpness",
]
