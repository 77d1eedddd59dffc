"""Bootstrap intervals of every estimator at once, all resamples as one array.

Each estimate is a sum of ratios of column sums of the term table
(:func:`~deepbandits.ope.estimators.term_table`), so a resample is a vector of counts ``c`` and
its column sums are ``c @ table``. The ``B`` resamples are the rows of a count matrix ``C``
``[B, n]`` and their sums one matrix product ``C @ table`` ``[B, m]``: no loop over resamples.
The rows of the log are taken in chunks only to bound memory (``B × chunk`` counts at a time),
each chunk with its own generator spawned from the seed, so the chunks run on several threads
(numpy releases the GIL while it draws, gathers and multiplies) and the resamples are the same
whatever the number of threads.

The counts are Poisson(1) and independent (the Poisson bootstrap: Hanley & MacGibbon 2006;
Chamandy et al. 2012, "Estimating uncertainty for massive data streams"), which lets the chunks
be drawn apart; it approximates the multinomial bootstrap of Efron (1979) to first order, each
resample having n ± √n rows, and every resample's estimate divides by its own size (Σ c). The
counts are drawn exactly by inversion of the Poisson(1) distribution function: a 16-bit uniform
picks its bucket's count from a table; the rare bucket that straddles a step of the distribution
function (at most 18 of 65,536) is resolved by a further uniform. Counts and terms enter the
product in float32 (each chunk's sums are accumulated in float64): the resampled estimates
carry a relative rounding error near 1e-6, far below the spread of the resamples; the point
estimates are computed in float64.

The reward model stays as fitted on the whole log (it is not refitted per resample), as in OBP's
intervals; the interval is the percentile interval of the resampled estimates (Efron &
Tibshirani 1993, Section 13.3).
"""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from deepbandits.ope.estimators import estimates_from_sums

Array = NDArray[np.float64]

#: Counts drawn per chunk of rows: ``B × chunk`` float32 counts at a time (16 MB per thread).
CHUNK_COUNTS = 4_000_000
#: Threads that draw and multiply the chunks.
THREADS = min(4, os.cpu_count() or 1)


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


def _bucket_table() -> NDArray[np.float32]:
    """The count of each 16-bit bucket [j, j+1)/2¹⁶ that lies within one step of the Poisson(1)
    distribution function, and −1 for the buckets that straddle a step."""
    lo = np.arange(65536) / 65536.0
    hi = (np.arange(65536) + 1) / 65536.0
    k_lo = np.searchsorted(_CDF, lo, side="right")
    k_hi = np.searchsorted(_CDF, np.nextafter(hi, 0.0), side="right")
    return np.where(k_lo == k_hi, k_lo, -1).astype(np.float32)


_TABLE = _bucket_table()


def poisson1_counts(rng: np.random.Generator, shape: tuple[int, int]) -> NDArray[np.float32]:
    """Independent Poisson(1) counts of the given shape (as float32), drawn exactly by
    inversion."""
    u = rng.integers(0, 65536, size=shape, dtype=np.uint16)
    counts = _TABLE[u]
    straddling = np.flatnonzero(counts < 0)
    if straddling.size:
        fine = (u.ravel()[straddling] + rng.random(straddling.size)) / 65536.0
        counts.ravel()[straddling] = np.searchsorted(_CDF, fine, side="right")
    return counts


def _chunk_sums(
    block: NDArray[np.float32], n_resamples: int, seed: np.random.SeedSequence
) -> Array:
    counts = poisson1_counts(np.random.default_rng(seed), (n_resamples, len(block)))
    return (counts @ block).astype(np.float64)


def resampled_sums(
    table: Array,
    n_resamples: int,
    seed: int | None,
    threads: int = THREADS,
) -> Array:
    """Column sums of ``n_resamples`` Poisson-bootstrap resamples of the rows of ``table``
    ``[n, m]``: ``[n_resamples, m]``, each row ``c @ table`` for one count vector ``c``. Chunk
    ``j`` of the rows draws its counts from the ``j``-th child of ``seed``."""
    n = len(table)
    step = max(1, CHUNK_COUNTS // n_resamples)
    starts = range(0, n, step)
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    terms = table.astype(np.float32)

    def one(j: int) -> Array:
        return _chunk_sums(terms[starts[j] : starts[j] + step], n_resamples, seeds[j])

    total = np.zeros((n_resamples, table.shape[1]))
    with threadpool_limits(1):  # the threads below, not BLAS's, share the cores
        if threads <= 1 or len(starts) == 1:
            for j in range(len(starts)):
                total += one(j)
        else:
            with ThreadPoolExecutor(threads) as pool:
                for part in pool.map(one, range(len(starts))):
                    total += part
    return total


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
    samples = estimates_from_sums(resampled_sums(table, n_resamples, seed), names)
    # an estimator with no finite resample (SNIPS where every weight is 0) gets NaN bounds; the
    # support diagnostics say why, so numpy's own warnings about it are not shown
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lower = np.nanquantile(samples, alpha / 2, axis=0)
        upper = np.nanquantile(samples, 1 - alpha / 2, axis=0)
        std = np.nanstd(samples, axis=0, ddof=1)
    return Intervals(samples, lower, upper, std)
