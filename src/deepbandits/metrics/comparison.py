"""Summaries over seeds and paired comparisons, so that "A beats B" comes with its uncertainty."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import t as student_t


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
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(
            f"a and b must be 1-d of one length (one value per seed), got {x.shape}, {y.shape}"
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    d = x - y
    n = d.size
    mean = float(d.mean())
    if n == 1:
        return PairedDifference(mean, np.inf, -np.inf, np.inf, 1, confidence)
    se = float(d.std(ddof=1) / np.sqrt(n))
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * se
    return PairedDifference(mean, se, mean - half, mean + half, n, confidence)


def mean_std(values: ArrayLike) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value) over seeds."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("no values to summarise")
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0
