"""How a text table is laid out: its delimiter, its decimal mark and whether its first line is a
header, told from a sample of its first lines (:func:`detect_layout`), as a table file comes
from where it was published (UCI's ``.data`` files: no header, numbers then a class name).

The sample is the first :data:`SAMPLE_RECORDS` non-blank records of the file (at most
:data:`SAMPLE_CHARS` characters, decompressed); :mod:`csv` splits it, pandas reads the file.

Delimiter (``delimiter=None``, the default, detects it)
    Among comma, semicolon, tab and pipe, those that split every record of the sample into the
    same number (two or more) of fields; of them, the one giving the most fields (a tie goes to
    tab, then semicolon, then comma, then pipe: a semicolon file with decimal commas splits
    evenly at both). When none does: whitespace (runs of spaces or tabs, as in ``.dat``
    files) when it splits every record evenly, else the candidate that splits the most records
    evenly (pandas then names the line that does not fit).
Decimal mark
    A comma when the delimiter is not a comma, some cells are numbers written ``1,5`` and none
    is written ``1.5``; else a point.
Header (``header="auto"``, the default)
    Told by :func:`~deepbandits.datasets.header.detect_header`; ``header="first"`` or
    ``header="none"`` decides instead.
Comments (``comment=None``, the default, skips a leading block of them)
    Lines before the table that start with ``#`` or ``;;`` (UCI's ``;;; ...`` notes) are
    skipped when that is unambiguous: every one starts with the same mark, no line below them
    in the sample starts with it, and the last of them, its mark taken off, does not split
    into as many fields as the rows below (``# a,b,class`` may be their header, written as a
    comment: then nothing is skipped).
    ``comment="#"`` (one character, or a name of :data:`COMMENTS`) decides instead: as in
    pandas, the rest of any line from that character is ignored, a line that starts with it
    is skipped wherever it is, and no leading block is skipped otherwise.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from deepbandits.datasets.columns import TableError
from deepbandits.datasets.header import detect_header

#: Delimiter names (what ``delimiter=`` accepts besides the characters themselves) → character;
#: ``"whitespace"`` is any run of spaces and tabs.
DELIMITERS: dict[str, str] = {
    "comma": ",",
    "semicolon": ";",
    "tab": "\t",
    "pipe": "|",
    "whitespace": " ",
}

#: What ``header=`` accepts: detect it, the first line is the header, there is none.
HEADER_CHOICES = ("auto", "first", "none")

#: Names of comment characters (what ``comment=`` accepts besides the characters themselves;
#: on the command line ``comment=semicolon`` needs no quoting in the shell).
COMMENTS: dict[str, str] = {"hash": "#", "semicolon": ";", "percent": "%"}

#: The marks of a block of comment lines before the table, skipped when ``comment`` is not
#: given (module notes).
LEADING_COMMENTS = ("#", ";;")

#: Most records and characters of the sample a layout is told from.
SAMPLE_RECORDS = 50
SAMPLE_CHARS = 1 << 16

#: Cells read as missing in the sample, lower-cased (pandas' defaults, ``na_values`` added).
MISSING = frozenset(["", "na", "nan", "n/a", "null", "none", "#n/a", "<na>", "-nan", "-na"])

_OPENERS: dict[str, Callable[..., IO[Any]]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".xz": lzma.open,
}
_COMMA_DECIMAL = re.compile(r"^[+-]?\d+,\d+$")
_POINT_DECIMAL = re.compile(r"^[+-]?\d*\.\d+([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Layout:
    """How a text table was read.

    Attributes
    ----------
    delimiter : str
        Name of the delimiter (a key of :data:`DELIMITERS`).
    header : bool
        The first line is the header (else the columns are named by position, ``"0"``, ...).
    decimal : str
        The decimal mark, ``"."`` or ``","``.
    compression : str or None
        ``"gz"``, ``"bz2"``, ``"xz"``, ``"zip"`` (from the suffix), or None.
    delimiter_detected, header_detected : bool
        Whether the delimiter, the header, was detected (rather than given).
    comment : str or None
        The comment character given (pandas' ``comment``), or None.
    skipped_lines : int
        Lines of the file skipped before the table as a block of comments (detected when
        ``comment`` is not given; pandas' ``skiprows``), blank lines among them counted.
    """

    delimiter: str
    header: bool
    decimal: str = "."
    compression: str | None = None
    delimiter_detected: bool = True
    header_detected: bool = True
    comment: str | None = None
    skipped_lines: int = 0

    @property
    def sep(self) -> str:
        """The ``sep`` of :func:`pandas.read_csv`."""
        return r"\s+" if self.delimiter == "whitespace" else DELIMITERS[self.delimiter]

    def describe(self) -> str:
        """``header: no (detected); delimiter: comma (detected)``, with the decimal comma, the
        compression and the comments when there are."""
        header = "yes" if self.header else "no"
        parts = [
            f"header: {header} ({'detected' if self.header_detected else 'given'})",
            f"delimiter: {self.delimiter} ({'detected' if self.delimiter_detected else 'given'})",
        ]
        if self.decimal == ",":
            parts.append("decimal comma")
        if self.compression is not None:
            parts.append(f"{self.compression}-compressed")
        if self.comment is not None:
            parts.append(f"comments: {self.comment!r} (given)")
        if self.skipped_lines:
            lines = "line" if self.skipped_lines == 1 else f"{self.skipped_lines} lines"
            parts.append(f"first {lines} skipped as comments (detected)")
        return "; ".join(parts)


def delimiter_name(value: Any) -> str | None:
    """The name (:data:`DELIMITERS`) of ``delimiter=``: a name or its character; None (or
    ``"auto"``) to detect it."""
    if value is None or value == "auto":
        return None
    for name, char in DELIMITERS.items():
        if value in (name, char) or (name == "whitespace" and value == r"\s+"):
            return name
    raise TableError(
        f"delimiter must be one of {', '.join(DELIMITERS)} (or its character: , ; tab |), or "
        f"None to detect it, but {value!r} is given"
    )


def header_choice(value: Any) -> str:
    """``header=`` as one of :data:`HEADER_CHOICES`: also None or False (``"none"``, as
    pandas' ``header=None`` and the command line's ``header=none``) and True (``"first"``)."""
    if value is None or value is False:
        return "none"
    if value is True:
        return "first"
    if isinstance(value, str) and value in HEADER_CHOICES:
        return value
    raise TableError(
        f"header must be 'auto' (detect it), 'first' (the first line names the columns) or "
        f"'none' (the columns are named by position: '0', '1', ...), but {value!r} is given"
    )


def comment_char(value: Any) -> str | None:
    """The character of ``comment=``: one character (or a name of :data:`COMMENTS`) that is
    not a letter, a digit, whitespace or a quote; None to skip a leading block of comments
    only (module notes)."""
    if value is None:
        return None
    char = COMMENTS.get(value, value) if isinstance(value, str) else None
    if (
        isinstance(char, str)
        and len(char) == 1
        and char.isprintable()
        and not (char.isalnum() or char.isspace() or char in "\"'")
    ):
        return char
    names = ", ".join(f"{name} ({char})" for name, char in COMMENTS.items())
    raise TableError(
        "comment must be the one character that starts a comment in the file, e.g. '#' or "
        f"';' (or a name: {names}), or None to skip only a block of '#' or ';;' lines before "
        f"the table, but {value!r} is given"
    )


def sample_text(path: Path, compression: str | None) -> str:
    """The first :data:`SAMPLE_CHARS` characters of ``path`` as text (decompressed), cut after
    its last complete line when the file is longer."""
    with _open_text(path, compression) as f:
        text = f.read(SAMPLE_CHARS)
        more = f.read(1)
    if more and "\n" in text:
        text = text[: text.rfind("\n") + 1]
    return text


def _open_text(path: Path, compression: str | None) -> IO[str]:
    if compression == "zip":
        archive = zipfile.ZipFile(path)
        names = archive.namelist()
        if len(names) != 1:
            raise TableError(f"{str(path)!r} holds {len(names)} files; a table's zip holds one")
        return io.TextIOWrapper(archive.open(names[0]), encoding="utf-8-sig", errors="replace")
    opener = _OPENERS.get(f".{compression}", open)
    return opener(path, "rt", encoding="utf-8-sig", errors="replace")  # type: ignore[no-any-return]


def _records(sample: str, delimiter: str) -> list[list[str]]:
    if delimiter == "whitespace":
        rows = [line.split() for line in sample.splitlines()]
    else:
        rows = list(csv.reader(io.StringIO(sample), delimiter=DELIMITERS[delimiter]))
    return [[cell.strip() for cell in row] for row in rows if any(c.strip() for c in row)][
        :SAMPLE_RECORDS
    ]


def _split_evenly(records: list[list[str]]) -> tuple[int, float]:
    """The most common number of fields of ``records`` and the share of records that have it."""
    counts = Counter(len(r) for r in records)
    fields, count = counts.most_common(1)[0]
    return fields, count / len(records)


def _detect_delimiter(sample: str, where: str) -> str:
    candidates = ("tab", "semicolon", "comma", "pipe")
    splits = {name: _split_evenly(_records(sample, name)) for name in (*candidates, "whitespace")}
    even = [name for name in candidates if splits[name][0] >= 2 and splits[name][1] == 1.0]
    if even:
        return max(even, key=lambda name: (splits[name][0], -candidates.index(name)))
    fields, share = splits["whitespace"]
    if fields >= 2 and share == 1.0:
        return "whitespace"
    some = [name for name in (*candidates, "whitespace") if splits[name][0] >= 2]
    if not some:
        first = sample.strip().splitlines()[0]
        shown = first if len(first) <= 60 else first[:57] + "..."
        raise TableError(
            f"cannot tell how the columns of {where} are separated: no comma, semicolon, tab, "
            f"pipe or whitespace splits its lines in two or more (its first line: {shown!r}); "
            "a table needs a label and at least one feature column. If that is wrong, pass "
            "delimiter=comma|semicolon|tab|pipe|whitespace"
        )
    return max(some, key=lambda name: (splits[name][1], splits[name][0]))


def _detect_decimal(records: Sequence[Sequence[str]], delimiter: str) -> str:
    if delimiter == "comma":
        return "."
    cells = [cell for row in records for cell in row]
    commas = any(_COMMA_DECIMAL.match(c) for c in cells)
    points = any(_POINT_DECIMAL.match(c) for c in cells)
    return "," if commas and not points else "."


def _without_comments(sample: str, comment: str) -> str:
    """``sample`` with the rest of each line from ``comment`` cut off (as pandas reads it)."""
    return "\n".join(line.split(comment, 1)[0] for line in sample.split("\n"))


def _leading_comments(sample: str, delimiter: str | None, where: str) -> int:
    """How many lines of ``sample`` a block of comments before the table takes (blank lines
    among them counted), 0 when there is none or it is ambiguous (module notes)."""
    lines = sample.split("\n")
    mark, end = None, 0
    for i, line in enumerate(lines):
        text = line.strip()
        if not text:
            continue
        found = next((m for m in LEADING_COMMENTS if text.startswith(m)), None)
        if found is None:
            break
        if mark is not None and found != mark:
            return 0
        mark, end = found, i + 1
    rest = "\n".join(lines[end:])
    if mark is None or not rest.strip():
        return 0
    if any(line.strip().startswith(mark[0]) for line in lines[end:]):
        return 0  # comments below too: comment= says how to read them
    try:
        name = _detect_delimiter(rest, where) if delimiter is None else delimiter
    except TableError:
        return 0  # said when the whole sample is looked at
    fields, _ = _split_evenly(_records(rest, name))
    last = _records(lines[end - 1].strip().lstrip(mark[0]), name)
    if last and len(last[0]) == fields:
        return 0  # the line above the rows may be their header, written as a comment
    return end


def comment_hint(sample: str, layout: Layout) -> str:
    """``; if '#' starts comments in it, pass comment=#`` for a message about a file read
    with ``layout`` whose lines below the comments skipped (``sample``: its first lines) start
    with ``#`` or ``;``, or hold the mark of the comments skipped (a comment at a line's end);
    else ``""``."""
    if layout.comment is not None:
        return ""
    lines = sample.split("\n")[layout.skipped_lines :]
    marks = [line.strip()[:1] for line in lines]
    mark = next((m for m in marks if m in ("#", ";")), None)
    if mark is None and layout.skipped_lines:
        skipped = sample.split("\n")[: layout.skipped_lines]
        first = next(line.strip()[0] for line in skipped if line.strip())
        mark = first if any(first in line for line in lines) else None
    if mark is None:
        return ""
    return (
        f"; if {mark!r} starts comments in it, pass comment={'semicolon' if mark == ';' else mark}"
    )


def detect_layout(
    sample: str,
    *,
    delimiter: str | None,
    header: str,
    compression: str | None,
    na_values: Sequence[str],
    where: str,
    comment: str | None = None,
) -> Layout:
    """The :class:`Layout` of a text table from ``sample``, its first lines (module notes).

    Parameters
    ----------
    sample : str
        The file's first lines (:func:`sample_text`).
    delimiter : str or None
        A name of :data:`DELIMITERS`, or None to detect it.
    header : {"auto", "first", "none"}
        Detect the header, or the first line is one, or there is none.
    compression : str or None
        Recorded in the layout.
    na_values : sequence of str
        Cells that mark a missing value besides pandas' defaults.
    where : str
        The file, for messages.
    comment : str or None, default=None
        The comment character (:func:`comment_char`), or None to skip a block of comments
        before the table only (module notes).

    Raises
    ------
    TableError
        An empty file, one of nothing but comments, one whose delimiter is its comment
        character, or one whose delimiter cannot be told.
    """
    if not sample.strip():
        raise TableError(f"{where} is empty")
    skipped = 0
    if comment is not None:
        if delimiter is not None and DELIMITERS[delimiter] == comment:
            raise TableError(
                f"comment and delimiter must differ, but both are {comment!r} for {where}"
            )
        sample = _without_comments(sample, comment)
        if not sample.strip():
            raise TableError(
                f"{where} holds nothing but comments (lines starting with {comment!r}) in its "
                "first lines"
            )
    else:
        skipped = _leading_comments(sample, delimiter, where)
        sample = "\n".join(sample.split("\n")[skipped:])
    detected_delimiter = delimiter is None
    name = _detect_delimiter(sample, where) if delimiter is None else delimiter
    records = _records(sample, name)
    decimal = _detect_decimal(records, name)
    missing = MISSING | frozenset(na_values)
    has_header = detect_header(records, decimal, missing) if header == "auto" else header == "first"
    return Layout(
        delimiter=name,
        header=has_header,
        decimal=decimal,
        compression=compression,
        delimiter_detected=detected_delimiter,
        header_detected=header == "auto",
        comment=comment,
        skipped_lines=skipped,
    )


__all__ = [
    "COMMENTS",
    "DELIMITERS",
    "HEADER_CHOICES",
    "LEADING_COMMENTS",
    "Layout",
    "comment_char",
    "comment_hint",
    "delimiter_name",
    "detect_layout",
    "header_choice",
    "sample_text",
]
