"""The ``preprocess`` step of the classification bandits: its options and the per-column
statistics of ``"standardize"``.

Preprocessing is a named step, ``preprocess``, applied to each sample before it is encoded (in
every round, in ``holdout`` and in ``contexts_for``):

- ``"standardize"`` (the default for your own data, ``make_env("classification", X=X, y=y)``
  and ``make_env("table", ...)``): each column minus its mean, divided by its standard deviation,
  both computed once over the X given (population std, float64). A constant column (std 0, or a
  std below 1e-12 of the column's largest magnitude) gets scale 1, so it is 0 after centring.
- ``"l2"``: each sample divided by its L2 norm (all-zero samples stay zero). This is the paper's
  code (Section 5.2) and the default of the paper's datasets, :data:`DATASET_PREPROCESS`.
- ``"standardize+l2"``: standardised, then each sample scaled to unit L2 norm.
- ``"standardize-nonbinary"``: ``"standardize"`` for every column but the binary ones (only 0s
  and 1s: one-hot categories, flags), which stay 0 and 1. A z-score blows a rare indicator up
  (a category of one row in 1,000 becomes ±31.6 when present) and makes it dominate every
  sample it appears in; covertype's 44 indicator columns are such (its recommended setting).
  Not the default for your own data: "binary" is read from the values, and on digits (three
  sparse pixel columns hold only 0 and 1) it was mixed (T = 5,000, seeds 0 and 1: LinUCB 417.0
  → 436.5, NeuralUCB 373.5 → 412.5, Neural-LinUCB 295.5 → 277.5, Neural-σ²-LinUCB 285.5 →
  288.5). A table with one-hot categories may well gain from it: try it.
- ``"standardize-global"``: every entry minus the one mean of all entries of X, divided by their
  one standard deviation (what ``torchvision.transforms.Normalize((0.1307,), (0.3081,))`` does to
  MNIST's pixels): the features keep their relative scales, so columns that are almost always 0
  (an image's border) stay near 0 instead of being blown up by a tiny standard deviation.
- ``"none"``: the features as given (as float64).

Why standardisation is the default for your own data: on a table of non-negative features
(counts, prices, pixel intensities, measurements) every row points into the same orthant, and
after L2 normalisation rows of different classes point almost the same way — cosine 0.76–0.98
between random rows on the tables measured. A linear (LinUCB) or ReLU model on such rows sees
nearly one direction for every class, so the classes are hidden; centring each column first
puts the class differences back in the direction of the vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError

#: The ``preprocess`` options of :class:`~deepbandits.envs.classification.ClassificationEnv`
#: (see that module's documentation).
PREPROCESSING = (
    "standardize",
    "l2",
    "standardize+l2",
    "standardize-nonbinary",
    "standardize-global",
    "none",
)

#: ``preprocess`` of bring-your-own data (arrays or a table file).
DEFAULT_PREPROCESS = "standardize"

#: ``preprocess`` of each paper dataset when
#: :meth:`~deepbandits.envs.classification.ClassificationEnv.from_dataset` is not given one, chosen
#: by measurement (README, "Defaults on data nobody tuned them for"). "l2" keeps the paper's setting
#: (Section 5.2: every sample L2-normalised) and is what ``deepbandits reproduce real-*`` uses. With
#: "l2", Neural-LinUCB and NeuralUCB locked out the majority class of shuttle on seed 1 (regret 1641
#: and 1668 in 2000 rounds, against 168 and 146 standardised), and LinUCB's regret on covertype was
#: 2583 against 2015 standardised (T = 5000, 3 seeds). On the images (MNIST, CIFAR-10) a z-score
#: alone blows up border pixels that are almost always 0, so they are standardised and then scaled
#: to unit norm (LinUCB, seed 0: on MNIST, T = 3000, 889 against 1314 with "l2" and 1202 with
#: "standardize"; on CIFAR-10, T = 1500, 1168 against 1259 with "l2"). MNIST is standardised
#: without the unit norm since its recommended settings (:mod:`deepbandits.envs.settings`): the
#: feature network learns far faster on pixels of unit scale than on pixels of norm-1 images
#: (Neural-σ²-LinUCB, T = 10,000, seed 0: 1,248 against 1,535), and LinUCB gets λ = 784 there;
#: by the pixels' one mean and standard deviation ("standardize-global", as the EE-Net and
#: NeuralUCB code do), which the networks learn from better still (NeuralUCB as the EE-Net code
#: runs it, seed 0: 1,046 against 1,266 per column); LinUCB does as well at its λ = 100 (1,778
#: against 1,811 at λ = 784 per column). Covertype keeps its 44 indicator columns (wilderness
#: areas, soil types) at 0/1 since the fourth round of its records ("standardize-nonbinary"):
#: a z-score had made a rare soil type dominate every sample it appears in (tuning seeds 0, 4,
#: 5: Neural-LinUCB 3,333 → 2,814, LinUCB 3,168 → 3,076; ``records_covertype_tuning.csv``).
DATASET_PREPROCESS: dict[str, str] = {
    "mnist": "standardize-global",
    "shuttle": "standardize",
    "covertype": "standardize-nonbinary",
    "cifar10": "standardize+l2",
}

#: Keywords that were removed, with what to write instead.
REMOVED_KEYWORDS: dict[str, str] = {
    "normalize": (
        "normalize= was replaced by preprocess=: use preprocess='l2' for normalize=True (each "
        "sample divided by its L2 norm, the paper's setting) or preprocess='none' for "
        "normalize=False; options: " + ", ".join(map(repr, PREPROCESSING))
    ),
}

#: A column whose standard deviation is below this fraction of its largest magnitude is
#: constant up to rounding: its scale is 1.
RELATIVE_STD_FLOOR = 1e-12

# Rows per chunk when scanning X: about 2**20 values (8 MB in float64) at a time, so the
# statistics of a large integer table never need a float64 copy of the whole of it.
_CHUNK_VALUES = 1 << 20


def check_removed_keywords(params: dict[str, Any] | Any) -> None:
    """Raise ``InputValueError`` saying what replaces a removed keyword (``normalize``)."""
    for key in params:
        if key in REMOVED_KEYWORDS:
            raise InputValueError(REMOVED_KEYWORDS[key])


def _chunks(n: int, n_columns: int) -> range:
    return range(0, n, max(1, _CHUNK_VALUES // max(n_columns, 1)))


def check_finite_features(X: NDArray[Any]) -> None:
    """Raise ``InputValueError`` naming the first (row, column) of ``X`` that is NaN or inf."""
    if not np.issubdtype(X.dtype, np.inexact):
        return
    step = max(1, _CHUNK_VALUES // max(X.shape[1], 1))
    for start in _chunks(len(X), X.shape[1]):
        finite = np.isfinite(X[start : start + step])
        if not finite.all():
            row, col = np.argwhere(~finite)[0]
            value = X[start + row, col]
            raise InputValueError(
                f"X contains NaN or inf: first at row {start + row}, column {col} ({value})"
            )


def _rows(X: NDArray[Any], start: int, step: int) -> NDArray[np.float64]:
    """Rows ``start:start+step`` as a C-ordered float64 copy: the sums then add in the same order
    whatever the memory layout of X (a C- or Fortran-ordered copy gives the same statistics)."""
    return np.ascontiguousarray(X[start : start + step], dtype=np.float64)


def _column_moments(
    X: NDArray[Any],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per-column mean and population standard deviation of ``X``, in float64.

    Computed over chunks of rows (never a float64 copy of the whole X), in two passes (mean,
    then the squared deviations from it) on the columns divided by their largest magnitude, so
    the sums can neither overflow nor lose the small deviations of a large offset. Both are
    returned in the units of X divided by the column's magnitude, with that magnitude.
    """
    n, D = X.shape
    step = max(1, _CHUNK_VALUES // max(D, 1))
    magnitude = np.zeros(D)
    for start in _chunks(n, D):
        chunk = X[start : start + step]
        high = chunk.max(axis=0).astype(np.float64)
        low = chunk.min(axis=0).astype(np.float64)
        magnitude = np.maximum(magnitude, np.maximum(high, -low))
    magnitude[magnitude == 0] = 1.0
    total = np.zeros(D)
    for start in _chunks(n, D):
        total += (_rows(X, start, step) / magnitude).sum(axis=0)
    mean = total / n
    squares = np.zeros(D)
    for start in _chunks(n, D):
        deviation = _rows(X, start, step) / magnitude - mean
        squares += np.einsum("ij,ij->j", deviation, deviation)
    return mean, np.sqrt(squares / n), magnitude


def column_statistics(X: NDArray[Any]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-column mean and scale of ``X`` for ``preprocess="standardize"``.

    The scale is the population standard deviation, or 1 for a constant column (std 0 or below
    :data:`RELATIVE_STD_FLOOR` of the column's largest magnitude). Computed in float64 without a
    float64 copy of X, and without overflow or cancellation (:func:`_column_moments`).

    Parameters
    ----------
    X : array ``[n, D]``
        Finite numeric features (any dtype).

    Returns
    -------
    mean, scale : arrays ``[D]`` (float64)
        Both finite; every scale is > 0.
    """
    mean, std, magnitude = _column_moments(X)
    constant = ~(std > RELATIVE_STD_FLOOR)
    scale = np.where(constant, 1.0, std * magnitude)
    return mean * magnitude, scale


def binary_columns(X: NDArray[Any]) -> NDArray[np.bool_]:
    """Which columns of ``X`` hold only 0s and 1s (scanned in chunks of rows)."""
    n, D = X.shape
    step = max(1, _CHUNK_VALUES // max(D, 1))
    binary = np.ones(D, dtype=bool)
    for start in _chunks(n, D):
        chunk = X[start : start + step]
        binary &= np.all((chunk == 0) | (chunk == 1), axis=0)
    return binary


def nonbinary_statistics(X: NDArray[Any]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`column_statistics` with mean 0 and scale 1 for the binary columns of ``X``
    (:func:`binary_columns`), for ``preprocess="standardize-nonbinary"``: indicators stay 0/1."""
    mean, scale = column_statistics(X)
    binary = binary_columns(X)
    return np.where(binary, 0.0, mean), np.where(binary, 1.0, scale)


def global_statistics(X: NDArray[Any]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The one mean and standard deviation of all entries of ``X``, repeated for each column,
    for ``preprocess="standardize-global"``.

    Pooled from the per-column moments (every column has n entries): the mean is the mean of
    the column means, the variance the mean of each column's variance plus its mean's squared
    deviation from the pooled mean. A constant X gets scale 1.

    Returns
    -------
    mean, scale : arrays ``[D]`` (float64)
        Each holds one value; the scale is > 0.
    """
    mean, std, magnitude = _column_moments(X)
    means, stds = mean * magnitude, std * magnitude
    pooled = float(means.mean())
    spread = float(np.sqrt(np.mean(stds**2 + (means - pooled) ** 2)))
    largest = float(np.max(magnitude))
    scale = spread if spread > RELATIVE_STD_FLOOR * largest else 1.0
    D = X.shape[1]
    return np.full(D, pooled), np.full(D, scale)


def preprocess_statistics(
    X: NDArray[Any], preprocess: str
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64] | None]:
    """The mean and scale that ``preprocess`` standardises with, computed on ``X``: one value
    for all columns (:func:`global_statistics`), one per column (:func:`column_statistics`), or
    ``(None, None)`` for an option that does not standardise."""
    if preprocess == "standardize-global":
        return global_statistics(X)
    if preprocess == "standardize-nonbinary":
        return nonbinary_statistics(X)
    if preprocess.startswith("standardize"):
        return column_statistics(X)
    return None, None


def apply_preprocess(
    x: NDArray[np.float64],
    preprocess: str,
    mean: NDArray[np.float64] | None,
    scale: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    """Apply ``preprocess`` in place to float64 samples ``x`` (``[D]`` or ``[m, D]``).

    Parameters
    ----------
    x : array ``[D]`` or ``[m, D]`` (float64)
        The samples; changed in place.
    preprocess : str
        One of :data:`PREPROCESSING`.
    mean, scale : arrays ``[D]`` or None
        The statistics of :func:`column_statistics`, given when ``preprocess`` standardises.

    Returns
    -------
    array
        ``x``.
    """
    if mean is not None and scale is not None:
        x -= mean
        x /= scale
    if preprocess.endswith("l2"):
        norm = np.linalg.norm(x, axis=-1, keepdims=True)
        np.divide(x, norm, out=x, where=norm > 0)
    return x
