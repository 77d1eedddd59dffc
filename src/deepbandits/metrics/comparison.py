"""Summaries over seeds and paired comparisons, so that "A beats B" comes with its uncertainty."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtrit

from deepbandits._validation import as_real_array, check_real
from deepbandits.errors import InputValueError


@dataclass(frozen=True)
class PairedDifference:
    """Mean of (a − b) over paired seeds, its standard error and a two-sided t interval."""

    mean: float
    std_error: float
    low: float
    high: float
    n: int
    confidence: float

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        return (
            f"{self.mean:.4g} ± {self.std_error:.2g} (s.e.), {pct}% CI "
            f"[{self.low:.4g}, {self.high:.4g}], n={self.n}"
        )


def paired_difference(a: ArrayLike, b: ArrayLike, confidence: float = 0.95) -> PairedDifference:
    """Difference a − b of two policies' results on the same seeds (element i of each is seed i).

    The interval is mean ± t_{n−1} · s/√n (Student's t on the per-seed differences); with one
    seed it is unbounded.
    """
    x, y = as_real_array(a, "a"), as_real_array(b, "b")
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InputValueError(
            f"a and b must be 1-d of one length (one value per seed), but shapes {x.shape} and "
            f"{y.shape} are given"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise InputValueError(
            "a and b must be finite (one result per seed), but a NaN or inf is given"
        )
    if not 0 < check_real(confidence, "confidence") < 1:
        raise InputValueError(f"confidence must be in (0, 1), but {confidence!r} is given")
    d = x - y
    n = d.size
    mean = float(d.mean())
    if n == 1:
        return PairedDifference(mean, np.inf, -np.inf, np.inf, 1, confidence)
    se = float(d.std(ddof=1) / np.sqrt(n))
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * se
    return PairedDifference(mean, se, mean - half, mean + half, n, confidence)


def mean_std(values: ArrayLike) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value) over seeds."""
    x = as_real_array(values, "values").ravel()
    if x.size == 0:
        raise InputValueError("values must hold at least one result to summarise, but it is empty")
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0
