"""Labels of a classification bandit: any one orderable type, mapped to arms 0..K−1 in sorted
order; a missing label is refused, never made an arm of its own.

A column that does not look like a label is refused too, unless the caller says it is one: more
distinct values than ``max_arms`` (:data:`MAX_ARMS` by default; a numeric feature chosen as the
label by mistake makes an arm of almost every row), or floats that are not whole numbers (a
measurement, not a class; ``float_labels=True`` accepts them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import check_bool, check_int
from deepbandits.errors import InputValueError

#: Default limit on the number of distinct labels (arms) of a classification bandit.
MAX_ARMS = 100


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


def _name(y: ArrayLike) -> str:
    """How messages name the labels: ``y``, or ``label column 'NAME'`` for a named pandas
    Series (a table's label column)."""
    name = getattr(y, "name", None)
    return f"label column {name!r}" if isinstance(y, pd.Series) and name is not None else "y"


def _fractional(labels: NDArray[Any]) -> float | None:
    """The first float label that is not a whole number, or None."""
    if labels.dtype.kind == "f":
        values = labels
    elif labels.dtype == object:
        floats = [v for v in labels.tolist() if isinstance(v, float)]
        values = np.asarray(floats, dtype=np.float64)
    else:
        return None
    bad = values != np.round(values)
    return float(values[int(np.argmax(bad))]) if bad.any() else None


def encode_labels(
    y: ArrayLike, n: int, *, max_arms: int = MAX_ARMS, float_labels: bool = False
) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The distinct labels of ``y`` in sorted order and each row's index among them.

    Parameters
    ----------
    y : array-like ``[n]``
        The labels; a named pandas Series is named in the messages (``label column 'NAME'``).
    n : int
        Rows of X.
    max_arms : int, default=MAX_ARMS
        Most distinct labels accepted (each becomes an arm).
    float_labels : bool, default=False
        Accept float labels that are not whole numbers.

    Raises
    ------
    InputValueError
        For a missing label (None, NaN, pandas NA; the first bad row is named, and a missing
        value never becomes an arm of its own), for labels of types that cannot be ordered
        together (``1`` and ``"a"``), for fewer than two or more than ``max_arms`` distinct
        labels, and for float labels that are not whole numbers unless ``float_labels``.
    """
    max_arms = check_int(max_arms, "max_arms", minimum=2)
    float_labels = check_bool(float_labels, "float_labels")
    what = _name(y)
    labels_in = _as_labels(y)
    if labels_in.ndim != 1 or len(labels_in) != n:
        raise InputValueError(
            f"y must be 1-d with one label per row of X ({n}), got shape {labels_in.shape}"
        )
    missing = _missing(labels_in)
    if missing.any():
        row = int(np.argmax(missing))
        raise InputValueError(
            f"{what} has {int(missing.sum())} missing label(s) (None or NaN); the first at row "
            f"{row}. Drop or label those rows: a missing label cannot be an arm"
        )
    try:
        classes, labels = np.unique(labels_in, return_inverse=True)
    except TypeError as exc:
        types = sorted({type(v).__name__ for v in labels_in.tolist()})
        raise InputValueError(
            f"{what} mixes label types that cannot be sorted together ({', '.join(types)}); "
            "convert the labels to one type (e.g. all strings)"
        ) from exc
    if len(classes) < 2:
        raise InputValueError(f"{what} has {len(classes)} distinct label(s); a bandit needs >= 2")
    fraction = None if float_labels else _fractional(classes)
    if len(classes) > max_arms:
        raise InputValueError(
            f"{what} has {len(classes)} distinct values, more than max_arms={max_arms}: each "
            "would be an arm"
            + (" (and they look continuous: floats that are not whole numbers)" if fraction else "")
            + f". Is it the label column? Pass max_arms={len(classes)} (or more)"
            + (" and float_labels=True" if fraction else "")
            + " to use it anyway"
        )
    if fraction is not None:
        raise InputValueError(
            f"{what} looks continuous: {len(classes)} distinct float values, not all whole "
            f"numbers (e.g. {fraction!r}), and each would be an arm. Is it the label column? "
            "Pass float_labels=True to use it anyway"
        )
    return classes, labels.reshape(-1).astype(np.int64)
