"""Whether the first line of a text table is its header (``header="auto"``), told from a
sample of its first records split into cells.

A header holds names, not numbers: a first line whose numbers, if any, are consecutive
integers (numbered columns) and one of whose text cells names a column of categories
(every cell below it text, each value recurring, the cell none of them and of none of
their lengths: ``Letter`` over ``T``, ``I``, ``D``, ...) is the header
(``Letter,1,2,...,16``); otherwise a first line with a number in it is data. A first line
without numbers is the header when a column whose other cells are all numbers has a name
there (``sepal_length`` over numbers); when no column holds numbers
(every column text), it is the header when its cells are distinct and none of them
recurs in its column below (a column's name is not one of its values). Otherwise (text
over columns mixing text and numbers) it is data. ``header="first"`` or ``header="none"``
decides instead.
"""

from __future__ import annotations

import itertools
import re


def _kind(cell: str, decimal: str, missing: frozenset[str]) -> bool | None:
    """True for a number, False for text, None for a missing value."""
    if cell.lower() in missing or cell in missing:
        return None
    try:
        float(cell.replace(",", ".") if decimal == "," else cell)
    except ValueError:
        return False
    return True


def _names_a_category_column(cell: str, below: list[str], kinds: list[bool | None]) -> bool:
    """Whether ``cell`` (text) names the column of categories ``below`` it (``kinds``: theirs):
    every cell below is text, the values recur (at most half as many values as cells), and
    ``cell`` is none of them nor of any of their lengths (``Letter`` over ``T``, ``I``, ...)."""
    values = set(below)
    return (
        len(below) >= 4
        and all(kind is False for kind in kinds)
        and 2 * len(values) <= len(below)
        and cell not in values
        and len(cell) not in {len(v) for v in values}
    )


def _numbers_columns(cells: list[str]) -> bool:
    """Whether the numbers of a first line number columns: none, or consecutive integers
    (``1,2,...,16``, ``2019,2020,2021``), which a line of data hardly ever is."""
    if not all(re.fullmatch(r"[+-]?\d+", c) for c in cells):
        return False
    values = [int(c) for c in cells]
    return all(b == a + 1 for a, b in itertools.pairwise(values))


def detect_header(records: list[list[str]], decimal: str, missing: frozenset[str]) -> bool:
    """Whether ``records[0]`` is the header of the records below it (``decimal``: the decimal
    mark; ``missing``: the cells that mark a missing value)."""
    first, rest = records[0], records[1:]
    if not rest:
        return False
    kinds = [_kind(cell, decimal, missing) for cell in first]
    cells = [[row[j] for row in rest if j < len(row)] for j in range(len(first))]
    below = [[_kind(cell, decimal, missing) for cell in column] for column in cells]
    if _numbers_columns([c for c, k in zip(first, kinds, strict=True) if k]) and any(
        kind is False and _names_a_category_column(first[j], cells[j], below[j])
        for j, kind in enumerate(kinds)
    ):
        return True
    if any(kind is True for kind in kinds):
        return False
    numeric = [True in col and False not in col for col in below]
    if any(num and kind is False for num, kind in zip(numeric, kinds, strict=True)):
        return True
    if any(True in col for col in below):
        return False
    names = [cell for cell, kind in zip(first, kinds, strict=True) if kind is False]
    recurs = any(first[j] in set(cells[j]) for j in range(len(first)))
    return len(names) == len(first) and len(set(names)) == len(names) and not recurs
