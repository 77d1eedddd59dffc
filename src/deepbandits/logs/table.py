"""A user's own log as a flat table: one row per logged round, one column per context feature.

The columns are named by the caller (defaults ``action``, ``reward``, ``propensity``; an
optional ``position``); the context is the ``features`` columns, or every other column when
none are named. Each must hold numbers: a cell that is not one is named by file, row, column
and value, and a column that holds text (an id, a category) is refused by name, with the two
ways out (leave it out through ``features=``, or encode it first). Parquet and CSV (compressed
as its suffix says, ``.csv.gz``) are read by pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from deepbandits.errors import DataError, InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.logs.columns import numbers


def table_log(
    frame: pd.DataFrame,
    path: Path,
    *,
    action: str = "action",
    reward: str = "reward",
    propensity: str = "propensity",
    position: str | None = None,
    features: Sequence[str] | None = None,
) -> LoggedBandit:
    """The :class:`LoggedBandit` of a flat table ``frame`` read from ``path`` (module notes):
    contexts ``[n, d]`` from the ``features`` columns."""
    named = [c for c in (action, reward, propensity, position) if c is not None]
    missing = [c for c in named if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} lacks the column(s) {', '.join(map(repr, missing))}; it has "
            f"{', '.join(map(repr, map(str, frame.columns)))} (name yours with action=, reward=, "
            "propensity=)"
        )
    if features is None:
        features = [str(c) for c in frame.columns if c not in named]
    else:
        if isinstance(features, str) or not all(isinstance(f, str) for f in features):
            raise InputTypeError(
                f"features must be a list of column names, but {features!r} is given"
            )
        absent = [f for f in features if f not in frame.columns]
        if absent:
            raise DataError(f"{path} lacks the feature column(s) {', '.join(map(repr, absent))}")
    if not features:
        raise DataError(f"{path} has no context column besides {', '.join(named)}")
    text = [f for f in features if not pd.api.types.is_numeric_dtype(frame[f])]
    for column in text:
        converted = pd.to_numeric(frame[column], errors="coerce")
        if converted.isna().sum() > frame[column].isna().sum() + max(1, len(frame) // 100):
            raise DataError(
                f"{path}, column {column!r} holds text ({frame[column].iloc[0]!r}, ...), not "
                "numbers: leave it out of the context with features=[...], or encode it first"
            )
    if frame.empty:
        raise DataError(f"{path} has a header but no rows")
    contexts = np.stack([numbers(frame, f, path) for f in features], axis=1)
    if np.isnan(contexts).any():
        row, col = np.argwhere(np.isnan(contexts))[0]
        raise DataError(f"{path}, row {row}, column {features[col]!r}: the value is missing")
    try:
        return make_log(
            contexts,
            numbers(frame, action, path),
            numbers(frame, reward, path),
            numbers(frame, propensity, path),
            positions=None if position is None else numbers(frame, position, path),
            name=str(path),
        )
    except (InputValueError, InputTypeError) as exc:
        raise DataError(f"{path}: {exc}") from None
