"""Cells of a logged table read as numbers, with the file, row, column and value named when
one is not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.errors import DataError


def numbers(frame: pd.DataFrame, column: str, path: Path) -> NDArray[np.float64]:
    """The column ``column`` of a table read from ``path`` as floats; a
    :class:`~deepbandits.errors.DataError` naming the file, the row, the column and the first
    value that is not a number otherwise."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}, row {row}, column {column!r}: expected a number, got "
            f"{frame[column].iloc[row]!r}"
        )
    return values.to_numpy(np.float64)
