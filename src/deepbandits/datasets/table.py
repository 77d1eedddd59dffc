"""Your own labelled table, read from a CSV or Parquet file.

A CSV or Parquet file is read with pandas, one column is the label and the others (or those
named by ``features``) are the features (:func:`read_table`); the bandit of such a file is
:func:`deepbandits.envs.table_env` (``make_env("table", ...)``).

The file's suffix decides how it is read: ``.csv`` (comma-separated), ``.tsv`` and ``.txt``
(tab-separated), each optionally compressed (``.gz``, ``.bz2``, ``.xz``, ``.zip``), and
``.parquet`` / ``.pq`` (pyarrow). The first line of a text file is the header.

Feature columns must be numeric (booleans count as 0/1) or be listed in ``categorical``, which
one-hot encodes them (one float column ``name=value`` per distinct value, values in sorted
order, so the encoding does not depend on the order of the rows). How the columns become X is
kept as :class:`~deepbandits.datasets.columns.FeatureColumns` (``Table.encoder``), which encodes
a live record the same way. Missing values in the features or the label column are an error
that names every such column, with its count and its first row, unless ``dropna=True``, which
drops those rows and says how many (a warning, and ``dropped_rows`` in the table's
provenance); rows are counted from 0 over the data rows, the header not counted (row 0 is the
first line under the header).

Every problem with the file or the columns raises :class:`TableError` (a ``ValueError``; the
command line prints it and returns 2); a missing file raises :class:`TableFileNotFoundError`,
both a ``FileNotFoundError`` and a ``TableError``.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.datasets.columns import FeatureColumns, TableError, listing
from deepbandits.errors import DataNotFoundError

#: Suffix → how the file is read ("csv": comma, "tsv": tab, "parquet").
TABLE_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}

#: Compression suffixes accepted after a text suffix (``data.csv.gz``); pandas decompresses.
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zip")

F = TypeVar("F", bound=Callable[..., Any])


class TableFileNotFoundError(DataNotFoundError, TableError):
    """The table file does not exist: ``TableFileNotFoundError(errno, strerror, filename)`` as
    for any ``FileNotFoundError``."""

    # ValueError precedes OSError in the method resolution order; OSError's own constructor
    # keeps ``str()`` "[Errno 2] ...: 'path'" and sets ``errno`` and ``filename``.
    __new__ = OSError.__new__
    __init__ = OSError.__init__


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
        The label column.
    encoder : FeatureColumns, optional
        How the file's columns became X; :meth:`FeatureColumns.encode` does the same to new
        records.
    dropped_rows : int or None
        Rows dropped for their missing values (``dropna=True``); None when ``dropna`` was not
        asked for.
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

    def provenance(self) -> dict[str, Any]:
        """What a bandit built from this table records of it in its parameters: the file
        (``path``, ``sha256``), ``label``, the source ``columns``, ``categorical`` and the
        resulting ``features`` (one-hot columns expanded) with their number; with ``dropna``,
        how many rows were dropped (``dropped_rows``)."""
        found = {
            "path": self.path,
            "sha256": self.sha256,
            "label": self.label,
            "columns": self.columns,
            "categorical": self.categorical,
            "features": self.feature_names,
            "n_features": len(self.feature_names),
        }
        if self.dropped_rows is not None:
            found.update(dropna=True, dropped_rows=self.dropped_rows)
        return found


def _kind(path: Path) -> tuple[str, str | None]:
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        compression = suffixes.pop()
    kind = TABLE_SUFFIXES.get(suffixes[-1]) if suffixes else None
    if kind is None or (compression is not None and kind == "parquet"):
        accepted = ", ".join(TABLE_SUFFIXES)
        raise TableError(
            f"cannot tell how to read {str(path)!r} from its suffix; accepted: {accepted} "
            f"(text ones optionally compressed: {', '.join(COMPRESSION_SUFFIXES)})"
        )
    return kind, compression


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _names(value: Any, what: str) -> list[str]:
    """A list of column names from a list, a tuple or one name (the command line's
    ``categorical=color`` gives a single string)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str | int) else value
    if not isinstance(items, list | tuple):
        raise TableError(f"{what} must be a list of column names, got {value!r}")
    names = [str(v) for v in items]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise TableError(f"{what} names column(s) more than once: {', '.join(duplicated)}")
    return names


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


def _read_frame(path: Path) -> pd.DataFrame:
    kind, _ = _kind(path)
    if not path.exists():
        raise TableFileNotFoundError(2, "table file not found", str(path))
    if not path.is_file():
        raise TableError(f"{str(path)!r} is not a file")
    try:
        if kind == "parquet":
            df = pd.read_parquet(path, engine="pyarrow")
        else:
            sep = "," if kind == "csv" else "\t"
            df = pd.read_csv(path, sep=sep, compression="infer")
    except (ValueError, OSError, ImportError) as exc:
        raise TableError(f"cannot read {str(path)!r} as {kind}: {exc}") from exc
    except Exception as exc:  # pyarrow's own errors (ArrowException and subclasses)
        if type(exc).__module__.startswith("pyarrow"):
            raise TableError(f"cannot read {str(path)!r} as {kind}: {exc}") from exc
        raise
    df.columns = [str(c) for c in df.columns]
    duplicated = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    if duplicated:
        raise TableError(f"{str(path)!r} has duplicated column name(s): {', '.join(duplicated)}")
    if len(df) == 0:
        raise TableError(f"{str(path)!r} has no data rows")
    return df


def read_table(
    path: str | os.PathLike[str],
    label: str,
    *,
    features: list[str] | None = None,
    categorical: list[str] | None = None,
    dropna: bool = False,
) -> Table:
    """Read a CSV or Parquet file into features and labels (see the module documentation).

    Parameters
    ----------
    path : str or path
        The file; its suffix decides the reader (:data:`TABLE_SUFFIXES`).
    label : str
        Name of the label column.
    features : list of str, optional
        The feature columns, in this order; default: every column but the label.
    categorical : list of str, optional
        Feature columns to one-hot encode (sorted values; one float column per value).
    dropna : bool, default=False
        Drop the rows with a missing value in the label or a feature column (a warning says
        how many; ``dropped_rows`` of the result). Without it such rows are an error naming
        every column that has them.

    Returns
    -------
    Table

    Raises
    ------
    TableFileNotFoundError
        The file does not exist.
    TableError
        Unknown suffix, unreadable file, unknown label / feature / categorical column,
        non-numeric feature column not in ``categorical``, missing value (without ``dropna``)
        or infinite value.
    """
    file = Path(path)
    if label is None or isinstance(label, bool) or not isinstance(label, str | int):
        raise TableError(f"label must be the name of the label column, got {label!r}")
    label = str(label)
    chosen = None if features is None else _names(features, "features")
    one_hot = _names(categorical, "categorical")
    df = _read_frame(file)
    available = list(df.columns)
    if label not in available:
        raise TableError(
            f"no label column {label!r} in {str(path)!r}; its columns: {listing(available)}"
        )
    if chosen is None:
        chosen = [c for c in available if c != label]
    else:
        _check_known(chosen, available, "feature column(s)", f"not in {str(path)!r}", "its columns")
        if label in chosen:
            raise TableError(f"the label column {label!r} cannot also be a feature")
    if not chosen:
        raise TableError(f"{str(path)!r} has no feature columns besides the label {label!r}")
    where = f"are not feature columns of {str(path)!r}"
    _check_known(one_hot, chosen, "categorical column(s)", where, "feature columns")
    non_numeric = [
        c for c in chosen if c not in one_hot and not pd.api.types.is_numeric_dtype(df[c].dtype)
    ]
    if non_numeric:
        kinds = ", ".join(f"{c!r} ({df[c].dtype})" for c in non_numeric)
        raise TableError(
            f"feature column(s) of {str(path)!r} are not numeric: {kinds}; one-hot encode them "
            f"with categorical=[{','.join(non_numeric)}], or choose the features with "
            "features=[...]"
        )
    if not isinstance(dropna, bool):
        raise TableError(f"dropna must be True or False, got {dropna!r}")
    df, dropped = _without_missing(df, [label, *chosen], file, dropna)
    encoder = FeatureColumns.fit(df, chosen, one_hot)
    return Table(
        X=encoder.encode(df, f"of {str(path)!r}"),
        y=df[label].to_numpy(),
        feature_names=encoder.names,
        columns=chosen,
        categorical=one_hot,
        path=str(path),
        sha256=_sha256(file),
        label=label,
        encoder=encoder,
        dropped_rows=dropped,
    )


#: :func:`read_table`'s keyword-only options (which columns are read, and how): what a function
#: that reads a table for its caller passes on besides the path and the label
#: (:func:`takes_table_options`).
TABLE_OPTIONS: tuple[str, ...] = tuple(
    name
    for name, param in inspect.signature(read_table).parameters.items()
    if param.kind is param.KEYWORD_ONLY
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
