"""Reading a table file into a data frame as it was published: the file's kind from its
suffix (text, optionally compressed, or Parquet), the layout of a text file told from its first
lines (:mod:`deepbandits.datasets.layout`), and pandas' or pyarrow's errors in the file's terms.
:func:`read_frame` is the one reader of the table files; :mod:`deepbandits.datasets.table` turns
its frame into features and labels.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from deepbandits.datasets.columns import TableError
from deepbandits.datasets.layout import (
    Layout,
    comment_char,
    comment_hint,
    delimiter_name,
    detect_layout,
    header_choice,
    sample_text,
)
from deepbandits.errors import DataNotFoundError

#: Suffix → how the file is read: "text" (the layout told from its first lines, or given) or
#: "parquet".
TABLE_SUFFIXES: dict[str, str] = {
    ".csv": "text",
    ".tsv": "text",
    ".txt": "text",
    ".data": "text",
    ".dat": "text",
    # UCI's training and test parts (optdigits.tra, shuttle.trn, segmentation.test, ...)
    ".tra": "text",
    ".tes": "text",
    ".trn": "text",
    ".tst": "text",
    ".test": "text",
    ".parquet": "parquet",
    ".pq": "parquet",
}

#: Compression suffixes accepted after a text suffix (``data.csv.gz``); pandas decompresses.
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zip")


class TableFileNotFoundError(DataNotFoundError, TableError):
    """The table file does not exist: ``TableFileNotFoundError(errno, strerror, filename)`` as
    for any ``FileNotFoundError``."""

    # ValueError precedes OSError in the method resolution order; OSError's own constructor
    # keeps ``str()`` "[Errno 2] ...: 'path'" and sets ``errno`` and ``filename``.
    __new__ = OSError.__new__
    __init__ = OSError.__init__


def file_kind(path: Path) -> tuple[str, str | None]:
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        compression = suffixes.pop()[1:]
    kind = TABLE_SUFFIXES.get(suffixes[-1]) if suffixes else None
    if kind is None or (compression is not None and kind == "parquet"):
        accepted = ", ".join(TABLE_SUFFIXES)
        raise TableError(
            f"cannot tell how to read {str(path)!r} from its suffix; accepted: {accepted} "
            f"(text ones optionally compressed: {', '.join(COMPRESSION_SUFFIXES)})"
        )
    return kind, compression


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_error(exc: Exception, where: str, layout: Layout | None, hint: str = "") -> TableError:
    """The :class:`TableError` of pandas' or pyarrow's ``exc``, in the file's terms (``hint``:
    :func:`~deepbandits.datasets.layout.comment_hint`, for a ragged line)."""
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
    if found and layout is not None:
        expected, line, saw = found.groups()
        how = "detected" if layout.delimiter_detected else "given"
        return TableError(
            f"line {line} of {where} has {saw} fields where the lines above have {expected} "
            f"(delimiter: {layout.delimiter}, {how}); correct that line, or pass delimiter=... "
            f"if the delimiter is wrong{hint}"
        )
    kind = "Parquet" if layout is None else "text"
    return TableError(f"cannot read {where} as {kind}: {' '.join(str(exc).split())}")


def _without_trailing_spaces(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the spaces at the end of its text cells dropped: those before a comment at
    a line's end (``b  # note``), which pandas keeps in the cell."""
    for column in df.columns:
        if df[column].dtype == object or pd.api.types.is_string_dtype(df[column]):
            df[column] = df[column].map(lambda v: v.rstrip() if isinstance(v, str) else v)
    return df


def read_frame(
    path: str | os.PathLike[str],
    *,
    header: str | bool | None = "auto",
    delimiter: str | None = None,
    na_values: Sequence[str] | None = None,
    comment: str | None = None,
) -> tuple[pd.DataFrame, Layout | None]:
    """A table file as pandas reads it, its column names strings, with the :class:`Layout` it
    was read with (None for Parquet): the one reader of the table files (module notes).

    Parameters
    ----------
    path, header, delimiter, na_values, comment
        As in :func:`~deepbandits.datasets.table.read_table`.

    Raises
    ------
    TableFileNotFoundError, TableError
        As :func:`~deepbandits.datasets.table.read_table` does for the file.
    """
    if not isinstance(path, str | os.PathLike):
        raise TableError(f"path must be the table file's path (a string), but {path!r} is given")
    file = Path(path)
    where = repr(str(path))
    choice = header_choice(header)
    separator = delimiter_name(delimiter)
    missing = [na_values] if isinstance(na_values, str) else list(na_values or [])
    if not all(isinstance(v, str | int | float) for v in missing):
        raise TableError(
            f"na_values must be a list of the values that mark a missing cell, e.g. ['?'], "
            f"but {na_values!r} is given"
        )
    missing = [str(v) for v in missing]
    mark = comment_char(comment)
    kind, compression = file_kind(file)
    if kind == "parquet" and (
        choice != "auto" or separator is not None or missing or mark is not None
    ):
        raise TableError(
            f"header, delimiter, na_values and comment are for text files; {where} is Parquet, "
            "which names its columns and types itself"
        )
    if not file.exists():
        raise TableFileNotFoundError(2, "table file not found", str(path))
    if not file.is_file():
        raise TableError(f"{where} is not a file")
    layout, hint = None, ""
    try:
        if kind == "parquet":
            df = pd.read_parquet(file, engine="pyarrow")
        else:
            sample = sample_text(file, compression)
            layout = detect_layout(
                sample,
                delimiter=separator,
                header=choice,
                compression=compression,
                na_values=missing,
                where=where,
                comment=mark,
            )
            hint = comment_hint(sample, layout)
            df = pd.read_csv(
                file,
                sep=layout.sep,
                header=0 if layout.header else None,
                decimal=layout.decimal,
                na_values=missing or None,
                skipinitialspace=layout.delimiter != "whitespace",
                compression="infer",
                comment=layout.comment,
                skiprows=layout.skipped_lines or None,
            )
            if layout.comment is not None:
                df = _without_trailing_spaces(df)
    except TableError:
        raise
    except (ValueError, OSError, ImportError) as exc:
        raise _read_error(exc, where, layout, hint) from exc
    except Exception as exc:  # pyarrow's own errors (ArrowException and subclasses)
        if type(exc).__module__.startswith("pyarrow"):
            raise _read_error(exc, where, layout, hint) from exc
        raise
    df.columns = [str(c) for c in df.columns]
    duplicated = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    if duplicated:
        raise TableError(f"{where} has duplicated column name(s): {', '.join(duplicated)}")
    if len(df) == 0:
        raise TableError(f"{where} has no data rows")
    return df, layout
