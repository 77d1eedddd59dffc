"""How the feature columns of a table become the rows of X, for the file that fitted it and for
every record that comes later.

:class:`FeatureColumns` remembers the feature columns in order and the values of each one-hot
(``categorical``) column; :meth:`FeatureColumns.encode` turns any frame with those columns into
the same float matrix, so a live record is encoded exactly as the table's own rows were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.errors import DataError


class TableError(DataError):
    """A table file (or a record of one) that cannot be turned into the bandit's features."""


def listing(names: list[str], limit: int = 50) -> str:
    """Column names as an error message lists them: quoted, at most ``limit``."""
    shown = ", ".join(map(repr, names[:limit]))
    return shown + (f", ... ({len(names)} columns)" if len(names) > limit else "")


def non_numbers(values: pd.Series) -> NDArray[np.bool_]:
    """Where ``values`` holds a value that is not a number (missing values are not counted)."""
    present = values.notna().to_numpy()
    return present & pd.to_numeric(values, errors="coerce").isna().to_numpy()


def holds_categories(values: pd.Series) -> bool:
    """Whether a column really holds categories: more than half of its values are not numbers
    (a numeric column with a stray string in it does not)."""
    return 2 * int(non_numbers(values).sum()) > int(values.notna().sum())


def sorted_values(values: list[Any]) -> list[Any]:
    """``values`` in sorted order; mixed types ordered by type, then by text."""
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__name__, str(v)))


@dataclass(frozen=True)
class FeatureColumns:
    """The feature columns of a table and how each becomes columns of X.

    Attributes
    ----------
    columns : tuple of str
        The feature columns, in the order of X.
    categories : dict
        ``{column: its values in sorted order}`` for each one-hot encoded column; every other
        column is numeric (one float column of X).
    """

    columns: tuple[str, ...]
    categories: dict[str, tuple[Any, ...]]

    @classmethod
    def fit(cls, frame: pd.DataFrame, columns: list[str], one_hot: list[str]) -> FeatureColumns:
        """The encoding of ``frame``'s ``columns``, the ``one_hot`` ones by their values in
        ``frame`` (sorted, so that the encoding does not depend on the order of the rows)."""
        categories = {
            c: tuple(sorted_values(list(pd.unique(frame[c].to_numpy(dtype=object)))))
            for c in columns
            if c in one_hot
        }
        return cls(tuple(columns), categories)

    @property
    def names(self) -> list[str]:
        """The name of each column of X: a numeric column's name, ``"column=value"`` for a
        one-hot column."""
        names: list[str] = []
        for column in self.columns:
            if column in self.categories:
                names += [f"{column}={value}" for value in self.categories[column]]
            else:
                names.append(column)
        return names

    def encode(self, frame: pd.DataFrame, where: str) -> NDArray[np.float64]:
        """``frame``'s rows as X ``[n, D]`` (float64).

        Parameters
        ----------
        frame : pandas.DataFrame
            Rows with (at least) the feature columns.
        where : str
            What the rows are, for error messages (``"of 'data.csv'"``, ``"of the record"``).

        Raises
        ------
        TableError
            A feature column is absent, a value is missing, a numeric column holds a value that
            is not a finite number, or a one-hot column holds a value it was not fitted with.
        """
        absent = [c for c in self.columns if c not in frame.columns]
        if absent:
            raise TableError(
                f"feature column(s) {listing(absent)} are missing from the rows {where}; "
                f"expected: {listing(list(self.columns))}"
            )
        blocks: list[NDArray[np.float64]] = []
        for column in self.columns:
            values = frame[column]
            missing = values.isna().to_numpy()
            if missing.any():
                row = frame.index[int(np.argmax(missing))]
                raise TableError(f"column {column!r} {where} has a missing value at row {row}")
            if column in self.categories:
                blocks.append(self._one_hot(column, values, where))
            else:
                blocks.append(self._numeric(column, values, frame.index, where)[:, None])
        return np.concatenate(blocks, axis=1)

    def _one_hot(self, column: str, values: pd.Series, where: str) -> NDArray[np.float64]:
        known = self.categories[column]
        codes = pd.Index(list(known), dtype=object).get_indexer(values.to_numpy(dtype=object))
        if (codes < 0).any():
            first = values.iloc[int(np.argmax(codes < 0))]
            raise TableError(
                f"column {column!r} {where} has the value {first!r}, which the table's one-hot "
                f"encoding does not know; known values: {', '.join(map(repr, known))}"
            )
        out = np.zeros((len(codes), len(known)))
        out[np.arange(len(codes)), codes] = 1.0
        return out

    @staticmethod
    def _numeric(
        column: str, values: pd.Series, index: pd.Index, where: str
    ) -> NDArray[np.float64]:
        try:
            numbers = values.to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            row = int(np.argmax(non_numbers(values)))
            raise TableError(
                f"column {column!r} {where} must hold numbers, but row {index[row]} holds "
                f"{values.iloc[row]!r}"
            ) from None
        bad = ~np.isfinite(numbers)
        if bad.any():
            row = int(np.argmax(bad))
            raise TableError(
                f"column {column!r} {where} has an infinite value at row {index[row]}: "
                f"{numbers[row]}"
            )
        return numbers


__all__ = [
    "FeatureColumns",
    "TableError",
    "holds_categories",
    "listing",
    "non_numbers",
    "sorted_values",
]
