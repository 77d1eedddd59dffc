"""Bootstrap intervals of every estimator at once, all resamples as one array.

A ratio estimator (:class:`~deepbandits.ope.estimator.RatioEstimator`: IPS, SNIPS, DM, the DR
family) is a sum of ratios of column sums, so a resample is a vector of counts ``c`` and the
column sums of the table of every such estimator's columns are ``c @ table``. The ``B``
resamples are the rows of a count matrix ``C`` ``[B, n]`` and their sums one matrix product
``C @ table`` ``[B, m]``: no loop over resamples.
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

An estimator that is not a ratio of sums gets its own resamples, drawn the same way in blocks of
resamples, and its :meth:`~deepbandits.ope.estimator.Estimator.estimate_weighted` on each.

The reward model stays as fitted on the whole log (it is not refitted per resample), as in OBP's
intervals; the interval is the percentile interval of the resampled estimates (Efron &
Tibshirani 1993, Section 13.3).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from deepbandits.ope.estimator import Estimator, RatioEstimator, Terms, ratio_columns

Array = NDArray[np.float64]

#: Counts drawn per chunk of rows: ``B × chunk`` float32 counts at a time (16 MB per thread).
CHUNK_COUNTS = 4_000_000
#: The spawn key under the seed of the resamples of estimators that are not ratios.
OTHERS_KEY = 2**31
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


def shared_columns(estimators: Sequence[Estimator], terms: Terms) -> dict[str, Array]:
    """The columns of every ratio estimator among ``estimators``
    (:func:`~deepbandits.ope.estimator.ratio_columns`): built once, read by
    :func:`point_estimates` and :func:`resampled_estimates`."""
    return ratio_columns([e for e in estimators if isinstance(e, RatioEstimator)], terms)


def point_estimates(
    estimators: Sequence[Estimator], terms: Terms, columns: Mapping[str, Array] | None = None
) -> Array:
    """Each estimate on the log itself ``[E]``: the ratio estimators from one set of column
    sums (in float64) of ``columns`` (default: :func:`shared_columns`), the others from their
    own :meth:`~Estimator.estimate`."""
    columns = shared_columns(estimators, terms) if columns is None else columns
    sums = {name: column.sum() for name, column in columns.items()}
    return np.array(
        [
            float(e.from_sums(sums)) if isinstance(e, RatioEstimator) else e.estimate(terms)
            for e in estimators
        ]
    )


def resampled_estimates(
    estimators: Sequence[Estimator],
    terms: Terms,
    n_resamples: int,
    seed: int | None,
    columns: Mapping[str, Array] | None = None,
) -> Array:
    """The estimates on ``n_resamples`` Poisson resamples ``[B, E]``: every ratio estimator on
    the same resamples (one :func:`resampled_sums` of their table), each other estimator on
    resamples of its own, drawn in blocks of at most :data:`CHUNK_COUNTS` counts."""
    out = np.empty((n_resamples, len(estimators)))
    ratio = [j for j, e in enumerate(estimators) if isinstance(e, RatioEstimator)]
    if ratio:
        table = shared_columns(estimators, terms) if columns is None else columns
        names = list(table)
        sums = resampled_sums(np.column_stack([table[k] for k in names]), n_resamples, seed)
        by_name = {k: sums[:, i] for i, k in enumerate(names)}
        for j in ratio:
            out[:, j] = estimators[j].from_sums(by_name)  # type: ignore[attr-defined]
    others = [j for j in range(len(estimators)) if j not in ratio]
    # children of a key no chunk of the table's uses (their children are 0, 1, ...)
    base = np.random.SeedSequence(seed)
    seeds = np.random.SeedSequence(base.entropy, spawn_key=(OTHERS_KEY,)).spawn(len(others))
    block = max(1, CHUNK_COUNTS // max(1, len(terms)))
    for j, child in zip(others, seeds, strict=True):
        rng = np.random.default_rng(child)
        for start in range(0, n_resamples, block):
            b = min(block, n_resamples - start)
            counts = poisson1_counts(rng, (b, len(terms))).astype(np.float64)
            out[start : start + b, j] = estimators[j].estimate_weighted(terms, counts)
    return out


@dataclass(frozen=True)
class Intervals:
    """The resampled estimates ``[B, E]`` and their percentile intervals and spread."""

    samples: Array
    lower: Array
    upper: Array
    std: Array


def bootstrap_intervals(
    estimators: Sequence[Estimator],
    terms: Terms,
    *,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    columns: Mapping[str, Array] | None = None,
) -> Intervals:
    """Percentile ``1 − alpha`` intervals of each estimator from ``n_resamples`` Poisson
    resamples of the rounds (:func:`resampled_estimates`; ``columns`` as there)."""
    samples = resampled_estimates(estimators, terms, n_resamples, seed, columns)
    # an estimator with no finite resample (SNIPS where every weight is 0) gets NaN bounds; the
    # support diagnostics say why, so numpy's own warnings about it are not shown
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lower = np.nanquantile(samples, alpha / 2, axis=0)
        upper = np.nanquantile(samples, 1 - alpha / 2, axis=0)
        std = np.nanstd(samples, axis=0, ddof=1)
    return Intervals(samples, lower, upper, std)
