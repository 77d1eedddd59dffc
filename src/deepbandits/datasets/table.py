"""Your own labelled table, read from a file as it was published: CSV, TSV, UCI's ``.data``,
whitespace-separated ``.dat``/``.txt``, compressed or not, or Parquet.

A table file is read with pandas (:func:`read_table`): one column is the label and the others
(or those named by ``features``) are the features; the bandit of such a file is
:func:`deepbandits.envs.table_env` (``make_env("table", ...)``).

The suffix says whether the file is text (``.csv``, ``.tsv``, ``.txt``, ``.data``, ``.dat``, UCI's
``.tra``/``.tes``/``.trn``/``.tst``/``.test``,
each optionally compressed: ``.gz``, ``.bz2``, ``.xz``, ``.zip``) or Parquet (``.parquet``,
``.pq``, read by pyarrow). How a text file is laid out is told from its first lines
(:mod:`deepbandits.datasets.layout`): the delimiter (comma, semicolon, tab, pipe or
whitespace; ``delimiter=`` gives it), the decimal mark, and whether the first line is a header
(``header="auto"``; ``"first"`` or ``"none"`` decides); a block of ``#`` or ``;;`` comment lines
before the table is skipped, and ``comment="#"`` (or ``";"``, ...) skips comments anywhere.
The columns of a file without a header are named by their position, ``"0"``, ``"1"``, ...;
the label, ``features`` and ``categorical`` take column names or positions (an ``int``:
``label=0`` is the first column, ``label=-1`` the last, with or without a header).
:meth:`Table.describe` says in one line what was read and inferred (rows, features, classes,
header, delimiter), so that a wrong guess shows at once; the command line prints it.

Feature columns must be numeric (booleans count as 0/1) or be listed in ``categorical``, which
one-hot encodes them (one float column ``name=value`` per distinct value, values in sorted
order, so the encoding does not depend on the order of the rows). How the columns become X is
kept as :class:`~deepbandits.datasets.columns.FeatureColumns` (``Table.encoder``), which encodes
a live record the same way. A column that is not numeric is refused by what it holds: text
(more than half its values are not numbers: one-hot encode it, or leave it out), or numbers
with a stray value, named by row and value (correct it, or name it in ``na_values`` if it marks
a missing value). Missing values in the features or the label column are an error that names
every such column, with its count and its first row, unless ``dropna=True``, which drops those
rows and says how many (a warning, and ``dropped_rows`` in the table's provenance). Rows are
counted from 0 over the data rows, the header not counted (row 0 is the first line under the
header, or the first line of a file without one).

Every problem with the file or the columns raises :class:`TableError` (a ``ValueError``; the
command line prints it and returns 2); a missing file raises
:class:`~deepbandits.datasets.table_file.TableFileNotFoundError`, both a ``FileNotFoundError``
and a ``TableError``.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.datasets.columns import (
    FeatureColumns,
    TableError,
    holds_categories,
    listing,
    non_numbers,
)
from deepbandits.datasets.layout import (
    Layout,
)
from deepbandits.datasets.table_file import file_sha256, read_frame

F = TypeVar("F", bound=Callable[..., Any])

#: A column by name (``str``) or by position (``int``, negative from the end).
Column = str | int


@dataclass(frozen=True)
class Table:
    """Features and labels read from a table file (:func:`read_table`).

    Attributes
    ----------
    X : array ``[n, D]`` (float64)
        The features, categorical columns one-hot encoded.
    y : array ``[n]``
        The label column's values.
    feature_names : list of str
        Name of each column of X: a numeric column's name, or ``"column=value"`` for a one-hot
        column.
    columns : list of str
        The file's columns used as features, in order.
    categorical : list of str
        The one-hot encoded columns.
    path : str
        The file, as given.
    sha256 : str
        SHA-256 of the file's bytes.
    label : str
        The label column's name (``"4"`` for the fifth column of a file without a header).
    encoder : FeatureColumns, optional
        How the file's columns became X; :meth:`FeatureColumns.encode` does the same to new
        records.
    dropped_rows : int or None
        Rows dropped for their missing values (``dropna=True``); None when ``dropna`` was not
        asked for.
    layout : Layout or None
        How a text file was read (delimiter, header, decimal mark, compression); None for
        Parquet.
    """

    X: NDArray[np.float64]
    y: NDArray[Any]
    feature_names: list[str]
    columns: list[str]
    categorical: list[str]
    path: str
    sha256: str
    label: str = ""
    encoder: FeatureColumns | None = None
    dropped_rows: int | None = None
    layout: Layout | None = None

    @property
    def n_classes(self) -> int:
        """The number of distinct labels."""
        return len(pd.unique(np.asarray(self.y, dtype=object)))

    def describe(self) -> str:
        """What was read, in one line: ``'iris.data': 150 rows, 4 features, 3 classes (label
        column '4'); header: no (detected); delimiter: comma (detected)``."""
        features = f"{len(self.feature_names)} features"
        if self.categorical:
            features += f" (from {len(self.columns)} columns, {len(self.categorical)} one-hot)"
        read = (
            self.layout.describe()
            if self.layout is not None
            else "header: yes (Parquet); delimiter: none (Parquet)"
        )
        dropped = f", {self.dropped_rows} dropped for missing values" if self.dropped_rows else ""
        return (
            f"{self.path!r}: {len(self.y)} rows{dropped}, {features}, {self.n_classes} classes "
            f"(label column {self.label!r}); {read}"
        )

    def provenance(self) -> dict[str, Any]:
        """What a bandit built from this table records of it in its parameters: the file
        (``path``, ``sha256``), how it was read (``header``: ``"first"`` or ``"none"``,
        ``delimiter``, ``decimal``; None for Parquet), ``label``, the source ``columns``,
        ``categorical`` and the resulting ``features`` (one-hot columns expanded) with their
        number, the line of :meth:`describe` (``summary``); with ``dropna``, how many rows were
        dropped (``dropped_rows``); with comments, the ``comment`` character given or the
        ``skipped_lines`` of a block of comments skipped before the table."""
        layout = self.layout
        found = {
            "path": self.path,
            "sha256": self.sha256,
            "header": None if layout is None else ("first" if layout.header else "none"),
            "delimiter": None if layout is None else layout.delimiter,
            "decimal": None if layout is None else layout.decimal,
            "label": self.label,
            "columns": self.columns,
            "categorical": self.categorical,
            "features": self.feature_names,
            "n_features": len(self.feature_names),
            "summary": self.describe(),
        }
        if self.dropped_rows is not None:
            found.update(dropna=True, dropped_rows=self.dropped_rows)
        if layout is not None and layout.comment is not None:
            found["comment"] = layout.comment
        if layout is not None and layout.skipped_lines:
            found["skipped_lines"] = layout.skipped_lines
        return found


def _is_position(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _names(value: Any, what: str) -> list[Column]:
    """A list of columns (names or positions) from a list, a tuple or one column (the command
    line's ``categorical=color`` gives a single string, ``categorical=3`` an int)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) or _is_position(value) else value
    if not isinstance(items, list | tuple) or not all(
        isinstance(v, str) or _is_position(v) for v in items
    ):
        raise TableError(
            f"{what} must be a list of column names or positions, but {value!r} is given"
        )
    return [v if isinstance(v, str) else int(v) for v in items]


def _by_position(key: Column, columns: list[str], what: str, where: str) -> str:
    """The name of column ``key``: a name as it is, a position (negative from the end) as the
    name of that column."""
    if isinstance(key, str):
        return key
    n = len(columns)
    if not -n <= key < n:
        raise TableError(
            f"{what}={key} is not a column position of {where}: it has {n} columns "
            f"(positions 0 to {n - 1}, or -{n} to -1 counting from the end)"
        )
    return columns[key]


def _resolve(keys: list[Column], columns: list[str], what: str, where: str) -> list[str]:
    names = [_by_position(k, columns, what, where) for k in keys]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise TableError(f"{what} names column(s) more than once: {', '.join(duplicated)}")
    return names


def _unnamed(layout: Layout | None, columns: list[str]) -> str:
    """What a message about an unknown column name adds for a file read without a header."""
    if layout is None or layout.header:
        return ""
    return (
        f" (read without a header, its columns are named by position, '0' to "
        f"'{len(columns) - 1}', and -1 is the last; pass header='first' if its first line "
        "names them)"
    )


def _check_known(names: list[str], among: list[str], what: str, where: str, listed: str) -> None:
    """Raise :class:`TableError` when some of ``names`` are not in ``among``, as "WHAT
    <those names> WHERE; LISTED: <among>"."""
    unknown = [c for c in names if c not in among]
    if unknown:
        raise TableError(f"{what} {listing(unknown)} {where}; {listed}: {listing(among)}")


def _without_missing(
    df: pd.DataFrame, columns: list[str], path: Path, dropna: bool
) -> tuple[pd.DataFrame, int | None]:
    """``df`` without its rows that miss a value in ``columns`` when ``dropna`` (a warning says
    how many), and how many were dropped (None without ``dropna``); without ``dropna`` a
    :class:`TableError` names every column with missing values, its count and its first row."""
    gaps = df[columns].isna()
    rows = gaps.any(axis=1).to_numpy()
    if not dropna and not rows.any():
        return df, None
    if not dropna:
        counts = gaps.sum()
        each = [
            f"column {c!r}: {int(counts[c])} missing value(s), the first at row "
            f"{int(np.argmax(gaps[c].to_numpy()))} (0-based data row)"
            for c in columns
            if counts[c]
        ]
        raise TableError(
            f"{str(path)!r} has missing values in {len(each)} column(s) ({'; '.join(each)}; "
            f"header not counted): {int(rows.sum())} of {len(df)} rows in all. Fill them, or "
            "pass dropna=True to drop those rows"
        )
    dropped = int(rows.sum())
    if dropped == len(df):
        raise TableError(f"every row of {str(path)!r} misses a value: dropna=True leaves none")
    if dropped:
        named = [c for c in columns if gaps[c].any()]
        warnings.warn(
            f"dropna=True: dropped {dropped} of {len(df)} rows of {str(path)!r} with missing "
            f"values (columns {listing(named)}); {len(df) - dropped} rows left",
            UserWarning,
            stacklevel=3,
        )
    return df[~rows], dropped


def _check_numeric(df: pd.DataFrame, columns: list[str], where: str) -> None:
    """Refuse the feature ``columns`` of ``df`` that are not numeric, each for what it holds:
    categories (one-hot encode it, or leave it out), or numbers with a stray value (its row and
    value, and how to mark it missing)."""
    stray: list[str] = []
    text: list[str] = []
    for column in columns:
        values = df[column]
        if pd.api.types.is_numeric_dtype(values.dtype):
            continue
        if holds_categories(values):
            text.append(column)
            continue
        bad = non_numbers(values)
        first = values.iloc[int(np.argmax(bad))]
        more = int(bad.sum()) - 1
        others = f" (and {more} more row(s) hold values that are not numbers)" if more else ""
        stray.append(
            f"column {column!r} is numeric, but row {df.index[int(np.argmax(bad))]} (0-based "
            f"data row) holds {first!r}{others}: correct it, or if {first!r} marks a missing "
            f"value, pass na_values=[{first}] (with dropna=True to drop those rows)"
        )
    parts = stray
    if text:
        kinds = "; ".join(
            f"{c!r} holds text ({len(pd.unique(df[c].dropna()))} distinct values, e.g. "
            f"{', '.join(map(repr, pd.unique(df[c].dropna())[:3]))})"
            for c in text
        )
        parts = [
            *stray,
            f"feature column(s) are not numeric: {kinds}; one-hot encode them with "
            f"categorical=[{','.join(text)}], or choose the features with features=[...]",
        ]
    if parts:
        raise TableError(f"{where}: {'; '.join(parts)}")


def read_table(
    path: str | os.PathLike[str],
    label: Column,
    *,
    features: Sequence[Column] | None = None,
    categorical: Sequence[Column] | None = None,
    dropna: bool = False,
    header: str | bool | None = "auto",
    delimiter: str | None = None,
    na_values: Sequence[str] | None = None,
    comment: str | None = None,
    check_label: Callable[[pd.Series], Any] | None = None,
) -> Table:
    """Read a table file into features and labels (see the module documentation).

    Parameters
    ----------
    path : str or path
        The file; its suffix says whether it is text or Parquet
        (:data:`~deepbandits.datasets.table_file.TABLE_SUFFIXES`).
    label : str or int
        The label column: its name, or its position (``0`` the first column, ``-1`` the last).
    features : list of str or int, optional
        The feature columns (names or positions), in this order; default: every column but the
        label.
    categorical : list of str or int, optional
        Feature columns to one-hot encode (sorted values; one float column per value).
    dropna : bool, default=False
        Drop the rows with a missing value in the label or a feature column (a warning says
        how many; ``dropped_rows`` of the result). Without it such rows are an error naming
        every column that has them.
    header : {"auto", "first", "none"}, default="auto"
        Whether the first line of a text file names the columns: detected, yes (``"first"``,
        also True) or no (``"none"``, also None and False; the columns are then named by
        position, ``"0"``, ``"1"``, ...).
    delimiter : {"comma", "semicolon", "tab", "pipe", "whitespace"}, optional
        Of a text file (or the character itself); default: detected from its first lines.
    na_values : list of str, optional
        Of a text file: values that mark a missing cell besides pandas' defaults (empty, NA,
        NaN, ...), e.g. ``["?"]`` for the UCI files that write one so.
    comment : str, optional
        Of a text file: the character that starts a comment (``"#"``, ``";"``; also
        ``"hash"``, ``"semicolon"``, ``"percent"``): the rest of a line from it is ignored, a
        line starting with it skipped (and the spaces before a comment at a line's end
        dropped). Default: only a block of lines starting with ``#`` or ``;;`` before the
        table is skipped, when that is unambiguous (:mod:`~deepbandits.datasets.layout`).
    check_label : callable, optional
        Called with the label column (its rows without missing values) before the features
        are looked at, to refuse a column that is not one (what it raises, a ``ValueError``,
        is raised as a TableError naming the file):
        :meth:`~deepbandits.envs.classification.ClassificationEnv.from_table` passes the
        bandit's rules (``max_arms``, ``float_labels``), so that a column given as the label
        by mistake is refused for what it is.

    Returns
    -------
    Table
        :meth:`Table.describe` says in one line what was read and inferred.

    Raises
    ------
    TableFileNotFoundError
        The file does not exist.
    TableError
        Unknown suffix, unreadable file, unknown label / feature / categorical column (by name
        or position), non-numeric feature column not in ``categorical``, a stray value in a
        numeric column (its row and value), missing value (without ``dropna``), infinite
        value, or a label column that ``check_label`` refuses.
    """
    if isinstance(label, bool) or not (isinstance(label, str) or _is_position(label)):
        raise TableError(
            "label must be the label column's name or position (label=-1: the last column), "
            f"but {label!r} is given"
        )
    chosen_keys = None if features is None else _names(features, "features")
    one_hot_keys = _names(categorical, "categorical")
    if not isinstance(dropna, bool):
        raise TableError(f"dropna must be True or False, got {dropna!r}")
    df, layout = read_frame(
        path, header=header, delimiter=delimiter, na_values=na_values, comment=comment
    )
    file, where = Path(path), repr(str(path))
    available = list(df.columns)
    label = _by_position(label if isinstance(label, str) else int(label), available, "label", where)
    if label not in available:
        raise TableError(
            f"no label column {label!r} in {where}{_unnamed(layout, available)}; its columns: "
            f"{listing(available)}"
        )
    if chosen_keys is None:
        chosen = [c for c in available if c != label]
    else:
        chosen = _resolve(chosen_keys, available, "features", where)
        _check_known(
            chosen,
            available,
            "feature column(s)",
            f"not in {where}{_unnamed(layout, available)}",
            "its columns",
        )
        if label in chosen:
            raise TableError(f"the label column {label!r} cannot also be a feature")
    if not chosen:
        raise TableError(f"{where} has no feature columns besides the label {label!r}")
    one_hot = _resolve(one_hot_keys, available, "categorical", where)
    _check_known(
        one_hot,
        chosen,
        "categorical column(s)",
        f"are not feature columns of {where}",
        "feature columns",
    )
    df, dropped = _without_missing(df, [label, *chosen], file, dropna)
    if check_label is not None:
        try:
            check_label(df[label])
        except ValueError as exc:
            if isinstance(exc, TableError):
                raise
            raise TableError(f"{where}: {exc}") from exc
    _check_numeric(df, [c for c in chosen if c not in one_hot], where)
    encoder = FeatureColumns.fit(df, chosen, one_hot)
    return Table(
        X=encoder.encode(df, f"of {where}"),
        y=df[label].to_numpy(),
        feature_names=encoder.names,
        columns=chosen,
        categorical=one_hot,
        path=str(path),
        sha256=file_sha256(file),
        label=label,
        encoder=encoder,
        dropped_rows=dropped,
        layout=layout,
    )


#: :func:`read_table`'s keyword-only options (which columns are read, and how): what a function
#: that reads a table for its caller passes on besides the path and the label
#: (:func:`takes_table_options`).
TABLE_OPTIONS: tuple[str, ...] = tuple(
    name
    for name, param in inspect.signature(read_table).parameters.items()
    if param.kind is param.KEYWORD_ONLY and name != "check_label"  # the caller's, not the user's
)


def takes_table_options(function: F) -> F:
    """Declare that ``function(..., **params)`` passes :func:`read_table`'s options among its
    ``params`` on to it (:func:`pop_table_options`): its signature, as
    :func:`inspect.signature`, ``help()`` and ``make_env``'s check of the keywords see it,
    becomes its own parameters, then read_table's :data:`TABLE_OPTIONS` (keyword-only, with
    their types and defaults, written once in :func:`read_table`), then ``**params``."""
    signature = inspect.signature(function)
    *own, rest = signature.parameters.values()
    if rest.kind is not rest.VAR_KEYWORD:
        raise TypeError(f"{function.__qualname__} must end with **params to take table options")
    options = [inspect.signature(read_table).parameters[name] for name in TABLE_OPTIONS]
    new = signature.replace(parameters=[*own, *options, rest])
    function.__signature__ = new  # type: ignore[attr-defined]
    return function


def pop_table_options(params: dict[str, Any]) -> dict[str, Any]:
    """The :data:`TABLE_OPTIONS` given in ``params`` (for :func:`read_table`), taken out of it."""
    return {name: params.pop(name) for name in TABLE_OPTIONS if name in params}
