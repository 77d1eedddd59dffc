"""Labels of a classification bandit: any one orderable type, mapped to arms 0..K−1 in sorted
order; a missing label is refused, never made an arm of its own."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits.errors import InputValueError


def _missing(y: NDArray[Any]) -> NDArray[np.bool_]:
    return np.asarray(pd.isna(y), dtype=bool)


def _as_labels(y: ArrayLike) -> NDArray[Any]:
    """Labels as a numpy array, without numpy's silent cast of a mixed list to strings."""
    if isinstance(y, np.ndarray):
        return y
    if hasattr(y, "to_numpy"):  # pandas Series / Index / array: NA stays a missing value
        return np.asarray(y.to_numpy())
    arr = np.asarray(y)
    if arr.dtype.kind in "US" and arr.ndim == 1:
        text = (str, bytes, np.str_, np.bytes_)
        if not all(isinstance(v, text) for v in y):  # type: ignore[union-attr]
            arr = np.empty(len(arr), dtype=object)
            arr[:] = list(y)  # type: ignore[arg-type]
    return arr


def encode_labels(y: ArrayLike, n: int) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The distinct labels of ``y`` in sorted order and each row's index among them.

    Raises ``InputValueError`` for a missing label (None, NaN, pandas NA; the first bad row is
    named, and a missing value never becomes an arm of its own), for labels of types that
    cannot be ordered together (``1`` and ``"a"``), and for fewer than two distinct labels.
    """
    labels_in = _as_labels(y)
    if labels_in.ndim != 1 or len(labels_in) != n:
        raise InputValueError(
            f"y must be 1-d with one label per row of X ({n}), got shape {labels_in.shape}"
        )
    missing = _missing(labels_in)
    if missing.any():
        row = int(np.argmax(missing))
        raise InputValueError(
            f"y has {int(missing.sum())} missing label(s) (None or NaN); the first at row {row}. "
            "Drop or label those rows: a missing label cannot be an arm"
        )
    try:
        classes, labels = np.unique(labels_in, return_inverse=True)
    except TypeError as exc:
        types = sorted({type(v).__name__ for v in labels_in.tolist()})
        raise InputValueError(
            f"y mixes label types that cannot be sorted together ({', '.join(types)}); "
            "convert the labels to one type (e.g. all strings)"
        ) from exc
    if len(classes) < 2:
        raise InputValueError(f"y has {len(classes)} distinct label(s); a bandit needs >= 2")
    return classes, labels.reshape(-1).astype(np.int64)
