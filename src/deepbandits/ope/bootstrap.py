"""Bootstrap intervals of every estimator at once, all resamples as one array.

Each estimate is a sum of ratios of column sums of the term table
(:func:`~deepbandits.ope.estimators.term_table`), so a resample is a vector of counts ``c`` and
its column sums are ``c @ table``. The ``B`` resamples are the rows of a count matrix ``C``
``[B, n]`` and their sums one matrix product ``C @ table`` ``[B, m]``: no loop over resamples.
The rows of the log are taken in chunks only to bound memory (``B × chunk`` counts at a time).

The counts are Poisson(1) and independent (the Poisson bootstrap: Hanley & MacGibbon 2006;
Chamandy et al. 2012, "Estimating uncertainty for massive data streams"), which lets the chunks
be drawn apart; it approximates the multinomial bootstrap of Efron (1979) to first order, each
resample having n ± √n rows, and every resample's estimate divides by its own size (Σ c). The
counts are drawn exactly by inversion of the Poisson(1) distribution function: a 16-bit uniform
picks its bucket's count from a table; the rare bucket that straddles a step of the distribution
function (at most 18 of 65,536) is resolved by a further uniform.

The reward model stays as fitted on the whole log (it is not refitted per resample), as in OBP's
intervals; the interval is the percentile interval of the resampled estimates (Efron &
Tibshirani 1993, Section 13.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits.ope.estimators import estimates_from_sums

Array = NDArray[np.float64]

#: Counts drawn per block of memory: ``B × chunk`` float64 counts at a time (about 64 MB).
CHUNK_COUNTS = 8_000_000


def _poisson1_cdf() -> Array:
    """F(k) = P(N ≤ k) of N ~ Poisson(1), for k = 0.. until it is 1 in float64."""
    out, term, total, k = [], math.exp(-1.0), 0.0, 0
    while total < 1.0 and k < 40:
        total += term
        out.append(min(total, 1.0))
        k += 1
        term /= k
    out[-1] = 1.0
    return np.array(out)


_CDF = _poisson1_cdf()
_STRADDLES = np.uint8(255)


def _bucket_table() -> NDArray[np.uint8]:
    """The count of each 16-bit bucket [j, j+1)/2¹⁶ that lies within one step of the Poisson(1)
    distribution function, and 255 for the buckets that straddle a step."""
    lo = np.arange(65536) / 65536.0
    hi = (np.arange(65536) + 1) / 65536.0
    k_lo = np.searchsorted(_CDF, lo, side="right")
    k_hi = np.searchsorted(_CDF, np.nextafter(hi, 0.0), side="right")
    return np.where(k_lo == k_hi, k_lo, 255).astype(np.uint8)


_TABLE = _bucket_table()


def poisson1_counts(rng: np.random.Generator, shape: tuple[int, int]) -> NDArray[np.uint8]:
    """Independent Poisson(1) counts of the given shape, drawn exactly by inversion."""
    u = rng.integers(0, 65536, size=shape, dtype=np.uint16)
    counts = _TABLE[u]
    straddling = np.flatnonzero(counts == _STRADDLES)
    if straddling.size:
        fine = (u.ravel()[straddling] + rng.random(straddling.size)) / 65536.0
        counts.ravel()[straddling] = np.searchsorted(_CDF, fine, side="right")
    return counts


def resampled_sums(table: Array, n_resamples: int, rng: np.random.Generator) -> Array:
    """Column sums of ``n_resamples`` Poisson-bootstrap resamples of the rows of ``table``
    ``[n, m]``: ``[n_resamples, m]``, each row ``c @ table`` for one count vector ``c``."""
    n, m = table.shape
    sums = np.zeros((n_resamples, m))
    step = max(1, CHUNK_COUNTS // n_resamples)
    for start in range(0, n, step):  # chunks of rows; every resample at once within each
        block = table[start : start + step]
        counts = poisson1_counts(rng, (n_resamples, len(block)))
        sums += counts.astype(np.float64) @ block
    return sums


@dataclass(frozen=True)
class Intervals:
    """The resampled estimates ``[B, E]`` and their percentile intervals and spread."""

    samples: Array
    lower: Array
    upper: Array
    std: Array


def bootstrap_intervals(
    table: Array,
    names: list[str],
    *,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> Intervals:
    """Percentile ``1 − alpha`` intervals of each named estimator from ``n_resamples`` Poisson
    resamples of the rounds (the same resamples for every estimator)."""
    rng = np.random.default_rng(seed)
    samples = estimates_from_sums(resampled_sums(table, n_resamples, rng), names)
    with np.errstate(invalid="ignore"):
        lower = np.nanquantile(samples, alpha / 2, axis=0)
        upper = np.nanquantile(samples, 1 - alpha / 2, axis=0)
        std = np.nanstd(samples, axis=0, ddof=1)
    return Intervals(samples, lower, upper, std)
