"""Raw records of a live system as the feature rows of a classification bandit, before its
``preprocess`` and arm encoding (:meth:`~deepbandits.envs.ClassificationEnv.contexts_for`).

A table bandit's record holds the file's original columns (categorical ones with their raw
values, ``"red"``), as a dict, a pandas Series or a DataFrame of several records; the table's
:class:`~deepbandits.datasets.columns.FeatureColumns` encodes them exactly as the file's rows.
A bandit built from arrays takes feature vectors, as the rows of its X.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import as_real_array
from deepbandits.datasets.columns import FeatureColumns
from deepbandits.envs.preprocessing import check_finite_features
from deepbandits.errors import InputTypeError, InputValueError

#: What :meth:`~deepbandits.envs.ClassificationEnv.contexts_for` takes.
Record = Mapping[str, Any] | pd.Series | pd.DataFrame | ArrayLike


def frame_of(record: Mapping[str, Any] | pd.Series | pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """``record`` as a DataFrame of records, and whether it was one record (a dict or a
    Series) rather than a DataFrame."""
    if isinstance(record, pd.DataFrame):
        return record, False
    if isinstance(record, pd.Series):
        return record.to_frame().T.infer_objects(), True
    return pd.DataFrame({str(k): [v] for k, v in record.items()}), True


def features_of(
    record: Record, columns: FeatureColumns | None, n_features: int
) -> tuple[NDArray[np.float64], bool]:
    """The feature rows ``[m, D]`` (float64, not yet preprocessed) of ``record`` and whether it
    was a single record.

    Parameters
    ----------
    record : dict, pandas Series or DataFrame, or array
        Records of the table's columns (when ``columns`` is given), or feature vectors as the
        rows of the bandit's X: ``[D]`` or ``[m, D]``.
    columns : FeatureColumns or None
        The table's encoding of its columns; None for a bandit built from arrays.
    n_features : int
        D, the columns of the bandit's X.

    Raises
    ------
    TableError
        A record that the table's encoding refuses (:meth:`FeatureColumns.encode`).
    InputValueError, InputTypeError
        An array of another shape, or values that are not finite numbers.
    """
    if isinstance(record, Mapping | pd.Series | pd.DataFrame):
        if columns is None:
            raise InputTypeError(
                "this bandit was built from arrays, not from a table: give a feature vector "
                f"[D] or a matrix [m, D], not a {type(record).__name__}"
            )
        frame, single = frame_of(record)
        if len(frame) == 0:
            raise InputValueError("the DataFrame of records has no rows")
        return columns.encode(frame, "of the record"), single
    rows = as_real_array(record, "record")
    if rows.ndim not in (1, 2) or rows.shape[-1] != n_features:
        raise InputValueError(
            f"a record must have {n_features} features ([{n_features}] or [m, {n_features}]), "
            f"but shape {rows.shape} is given"
            + ("; a table's record can be given as a dict of its columns" if columns else "")
        )
    matrix = np.array(rows, dtype=np.float64, ndmin=2)
    check_finite_features(matrix)
    return matrix, rows.ndim == 1


__all__ = ["Record", "features_of", "frame_of"]
