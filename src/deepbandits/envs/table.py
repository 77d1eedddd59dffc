"""Your own table as a classification bandit: ``make_env("table", path=..., label=...)``.

A table file as it was published (CSV, TSV, UCI's ``.data``, whitespace-separated ``.dat``,
compressed or not, or Parquet) is read with pandas
(:func:`~deepbandits.datasets.table.read_table`, which says how: suffixes, the delimiter and
header told from the first lines, columns by name or position, categorical columns, missing
values), one column is the label and the others (or those named by ``features``) are the
features; the result is a
:class:`~deepbandits.envs.classification.ClassificationEnv`, whose ``preprocess`` defaults to
``"standardize"`` as for every bring-your-own data set. On the command line::

    deepbandits compare --env "table:path=data.csv,label=class,categorical=[color,shape]" ...
    deepbandits compare --env "table:path=iris.data,label=-1" ...

Every problem with the file or the columns raises :class:`TableError` (a ``ValueError``; the
command line prints it and returns 2); a missing file raises :class:`TableFileNotFoundError`,
both a ``FileNotFoundError`` and a ``TableError``.
"""

from __future__ import annotations

from deepbandits.datasets.table import Table, TableError, read_table
from deepbandits.datasets.table_file import (
    COMPRESSION_SUFFIXES,
    TABLE_SUFFIXES,
    TableFileNotFoundError,
)
from deepbandits.envs.classification import ClassificationEnv

#: The classification bandit of a table file (the registry's ``"table"``): the same function as
#: :meth:`~deepbandits.envs.classification.ClassificationEnv.from_table`, under the name the
#: registry and earlier versions use.
table_env = ClassificationEnv.from_table

__all__ = [
    "COMPRESSION_SUFFIXES",
    "TABLE_SUFFIXES",
    "Table",
    "TableError",
    "TableFileNotFoundError",
    "read_table",
    "table_env",
]
