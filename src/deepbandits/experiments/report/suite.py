"""One report for a whole suite of experiments (``deepbandits reproduce --all``).

``out/index.html`` and ``out/README.md`` open with a table of every experiment (what it
reproduces, its status, how many of the paper's claims hold), then give a section per experiment:
for a sweep the regret summary of each comparison, the paper's numbers beside ours, its claims
checked and the figures; for a latency or matched experiment its ``latency.md`` or ``matched.md``
and figures; for a failed one its error (and, for a sweep, the report of its finished runs
when ``reproduce`` wrote one). Every file the page links to is copied under
``out/<experiment>/`` (a sweep's whole report, ``index.html`` included), so ``out`` can be moved
or published as it is.

A sweep's section is read from the report that ``reproduce`` writes into its results folder
(``<folder>/report``: ``runs.csv``, ``claims.csv``, ``figures.json``, the figures and
``paper_reference.json`` of each comparison); a folder without one, or whose report misses one
of its comparisons (a sweep over several environments has one per environment,
``<folder>/<environment label>``), gets it built first (:func:`build_report`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from deepbandits._io import write_atomic
from deepbandits._validation import check_choice
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.experiments.report.build import (
    build_report,
    comparison_name,
    figure_blocks,
    summary_block,
)
from deepbandits.experiments.report.figures import MANIFEST, ReportFigure, read_manifest
from deepbandits.experiments.report.load import find_comparisons, load_reference
from deepbandits.experiments.report.paper import (
    SMOKE_TEST,
    holding,
    paper_blocks,
    read_claims,
    unjudged,
)
from deepbandits.experiments.report.render import Block, slug, to_html, to_markdown
from deepbandits.experiments.report.tables import summary_table

#: Kinds of experiment and the Markdown file each non-sweep kind writes into its folder.
KINDS = ("sweep", "latency", "matched")
#: Statuses of an entry.
STATUSES = ("done", "failed")
#: Sub-folder of a sweep's results folder that holds its report.
REPORT_FOLDER = "report"


@dataclass(frozen=True)
class SuiteEntry:
    """One experiment of the suite (see :func:`build_suite_report`)."""

    name: str
    title: str
    reproduces: tuple[str, ...]
    kind: str
    folder: Path
    status: str
    error: str | None
    quick: bool

    @classmethod
    def from_mapping(cls, entry: Mapping[str, Any], index: int) -> SuiteEntry:
        """The entry ``entries[index]``, validated."""
        where = f"entries[{index}]"
        if not isinstance(entry, Mapping):
            raise InputTypeError(f"{where}: expected a mapping, got {type(entry).__name__}")
        for key in ("name", "kind", "folder", "status"):
            if key not in entry:
                raise InputValueError(f"{where}: key {key!r} is missing (given: {sorted(entry)})")
        if not isinstance(entry["name"], str) or not entry["name"]:
            raise InputValueError(f"{where}: key 'name': expected a name, got {entry['name']!r}")
        if not isinstance(entry["folder"], str | Path):
            raise InputTypeError(f"{where}: key 'folder': expected a path, got {entry['folder']!r}")
        return cls(
            name=entry["name"],
            title=str(entry.get("title") or ""),
            reproduces=tuple(entry.get("reproduces") or ()),
            kind=check_choice(entry["kind"], f"{where}.kind", KINDS),
            folder=Path(entry["folder"]),
            status=check_choice(entry["status"], f"{where}.status", STATUSES),
            error=entry.get("error"),
            quick=bool(entry.get("quick", False)),
        )


def copy_tree(source: Path, dest: Path) -> None:
    """Copy every file under ``source`` to the same place under ``dest`` (hidden files, such as
    an interrupted write's temporary file, excepted)."""
    for path in sorted(p for p in source.rglob("*") if p.is_file() and p.name[0] != "."):
        write_atomic(dest / path.relative_to(source), path.read_bytes())


def report_folders(report: Path) -> list[Path]:
    """The comparison folders of a report (those with ``runs.csv`` and the figure list)."""
    if not report.is_dir():
        return []
    return sorted(
        p for p in report.iterdir() if (p / "runs.csv").is_file() and (p / MANIFEST).is_file()
    )


def covers_every_comparison(folder: Path, report: Path) -> bool:
    """Whether ``report`` has a folder for every comparison under ``folder`` (one per
    environment of a sweep over several)."""
    names = {slug(comparison_name(c, folder)) for c in find_comparisons(folder)}
    return bool(names) and names <= {p.name for p in report_folders(report)}


def sweep_blocks(entry: SuiteEntry, dest: Path, out: Path) -> tuple[list[Block], pd.DataFrame]:
    """A sweep's section (its report copied to ``dest``, built first when it misses a
    comparison of the folder) and its claims table."""
    report = entry.folder / REPORT_FOLDER
    if not covers_every_comparison(entry.folder, report):
        build_report(entry.folder, report, quick=entry.quick)
    copy_tree(report, dest)
    comparisons = report_folders(dest)
    blocks: list[Block] = [
        (
            "link",
            (
                "Full report (every table, the configuration)",
                (dest / "index.html").relative_to(out).as_posix(),
            ),
        )
    ]
    claims = []
    for folder in comparisons:
        summary = summary_table(pd.read_csv(folder / "runs.csv"))
        checked = unjudged(read_claims(folder)) if entry.quick else read_claims(folder)
        paper = paper_blocks(load_reference(folder), summary, checked)
        claims.append(checked)
        blocks += [("h3", folder.name)] if len(comparisons) > 1 else []
        blocks += [
            summary_block(summary),
            ("p", "Mean ± standard deviation over seeds."),
            *paper,
            ("h3", "Figures"),
            *figure_blocks(read_manifest(folder), folder.relative_to(out)),
        ]
    return blocks, pd.concat(claims, ignore_index=True)


def document_blocks(entry: SuiteEntry, dest: Path, out: Path) -> list[Block]:
    """A latency or matched experiment's section: its ``<kind>.md`` and its figures (top-level
    PNG + SVG pairs of its folder), copied to ``dest``."""
    text_path = entry.folder / f"{entry.kind}.md"
    if not text_path.is_file():
        return [("p", f"{text_path} is missing: the experiment wrote no {entry.kind}.md.")]
    text = text_path.read_text(encoding="utf-8")
    write_atomic(dest / text_path.name, text)
    blocks: list[Block] = [("markdown", text)]
    figures = []
    for png in sorted(entry.folder.glob("*.png")):
        svg = png.with_suffix(".svg")
        if svg.is_file():
            for path in (png, svg):
                write_atomic(dest / path.name, path.read_bytes())
            caption = f"{', '.join(entry.reproduces) or entry.name}: {png.stem}"
            figures.append(ReportFigure(png.stem, png.name, svg.name, caption))
    return blocks + figure_blocks(figures, dest.relative_to(out))


def entry_blocks(entry: SuiteEntry, out: Path) -> tuple[list[Block], str]:
    """An experiment's section and how many of its claims hold (``"x/y"``)."""
    scale = "quick" if entry.quick else "full"
    blocks: list[Block] = [
        ("h2", f"{entry.name}: {entry.title}" if entry.title else entry.name),
        (
            "p",
            f"Reproduces {', '.join(entry.reproduces) or '–'}; {entry.kind} experiment at "
            f"{scale} scale; results in `{entry.folder}`.",
        ),
    ]
    if entry.status == "failed":
        blocks += [("p", "Failed:"), ("pre", (entry.error or "").strip() or "no error recorded")]
    dest = out / slug(entry.name)
    if entry.kind != "sweep":
        return blocks + ([] if entry.status == "failed" else document_blocks(entry, dest, out)), "–"
    if entry.status == "failed" and not report_folders(entry.folder / REPORT_FOLDER):
        return blocks, "–"
    section, claims = sweep_blocks(entry, dest, out)
    return blocks + section, holding(claims)


def build_suite_report(
    root: str | Path, entries: Sequence[Mapping[str, Any]], out: str | Path
) -> tuple[Path, Path]:
    """Write ``out/index.html`` and ``out/README.md`` for a suite of experiments; return both
    paths.

    Parameters
    ----------
    root
        The folder the suite's results lie under (named in the report).
    entries
        One mapping per experiment, in report order: ``"name"``, ``"kind"`` (``"sweep"``,
        ``"latency"`` or ``"matched"``), ``"folder"`` (its results), ``"status"`` (``"done"`` or
        ``"failed"``), and optionally ``"title"``, ``"reproduces"`` (e.g. ``["Fig. demo"]``),
        ``"error"`` (the failure's message or traceback) and ``"quick"`` (scaled down).

    Raises
    ------
    InputValueError, InputTypeError
        An entry is malformed (the message names it and the key).
    DataError
        A sweep's runs or report files cannot be read.
    """
    root, out = Path(root), Path(out)
    checked = [SuiteEntry.from_mapping(e, i) for i, e in enumerate(entries)]
    names = [e.name for e in checked]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputValueError(f"entries: each name must appear once, got {twice} more than once")
    out.mkdir(parents=True, exist_ok=True)
    rows, sections = [], []
    for entry in checked:
        blocks, holds = entry_blocks(entry, out)
        status = f"{entry.status} ({'quick' if entry.quick else 'full'})"
        rows.append([entry.name, ", ".join(entry.reproduces) or "–", status, holds])
        sections += blocks
    doc: list[Block] = [
        (
            "p",
            f"Each experiment of the paper with its results from `{root}`: the paper's numbers "
            "beside ours where it prints numbers, and where it only draws a figure, the claim its "
            "text makes about the figure checked on our runs (claims holding: how many hold).",
        ),
        ("table", (["experiment", "reproduces", "status", "claims holding"], rows)),
    ]
    if any(e.quick for e in checked):
        doc.append(
            (
                "p",
                "Experiments marked quick ran at the smoke-test scale of their config's [quick] "
                "table (fewer rounds and seeds, shorter trainings): they check that everything "
                f"runs, and are too small to judge the paper's claims ({SMOKE_TEST}: no "
                "verdicts). Run without --quick for the paper's scale.",
            )
        )
    doc += sections
    title = "deepbandits: the paper's experiments"
    md, page = out / "README.md", out / "index.html"
    write_atomic(md, to_markdown(doc, title))
    write_atomic(page, to_html(doc, title))
    return page, md
