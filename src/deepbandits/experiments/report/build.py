"""A report from a results folder: ``deepbandits report results/ --out report/``.

Every folder under ``results/`` that holds runs (``<policy>/seed_<s>.csv`` + ``.json``, as
:func:`~deepbandits.experiments.compare` writes them) is one comparison. For each, the report
has a table per policy (mean ± std over seeds of the final regret, cumulative reward,
calibration error cal₁ of Eq. calib, sharpness of Eq. sharpness, hold-out calibration cal₂ of
Eq. calib2 at the last checkpoint, wall time), the paper's numbers beside ours and its claims
checked when the folder has a ``paper_reference.json`` (a claim that a policy is the lowest or
highest never holds while another policy of the folder has only failed jobs, recorded in
``seed_<s>.failed.json``, and those policies are listed), a paired comparison of every policy with
the lowest-regret one, the figures that its results allow, and the configuration of its runs.
``report/index.html`` and ``report/README.md`` hold the same content; figures (PNG + SVG) and the
tables as CSV lie in one folder per comparison: ``runs.csv`` (every metric of every run),
``summary.csv`` (mean and std over seeds), ``paired.csv``, ``claims.csv`` (when the paper makes
claims), the reliability data behind the figures, ``reliability.csv`` (in-run),
``holdout_reliability.csv`` and ``holdout_cal2.csv`` (per checkpoint and arm), the figure list
``figures.json`` and a copy of ``paper_reference.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._io import write_atomic
from deepbandits.errors import DataNotFoundError
from deepbandits.experiments.report.figures import ReportFigure, comparison_figures, write_manifest
from deepbandits.experiments.report.load import (
    REFERENCE_FILE,
    Comparison,
    configuration,
    find_comparisons,
    is_quick,
    load_comparison,
)
from deepbandits.experiments.report.paper import (
    CLAIMS_FILE,
    SMOKE_TEST,
    evaluate_claims,
    paper_blocks,
    unjudged,
)
from deepbandits.experiments.report.render import (
    Block,
    estimate,
    interval,
    pm,
    slug,
    to_html,
    to_markdown,
)
from deepbandits.experiments.report.tables import (
    CLASSIFICATION_METRICS,
    METRICS,
    holdout_cal2_table,
    paired_table,
    reliability_tables,
    run_table,
    summary_table,
)
from deepbandits.metrics import DEFAULT_LEVELS


def summary_block(summary: pd.DataFrame) -> Block:
    """The summary over seeds as a table: mean ± std of every metric of :data:`METRICS`, and on
    a classification bandit of :data:`CLASSIFICATION_METRICS` (accuracy, arms never played and
    locked out over the last rounds) where the summary has them."""
    metrics = [*METRICS, *((k, h) for k, h in CLASSIFICATION_METRICS if f"{k}_mean" in summary)]
    header = ["policy", "seeds", "T"] + [h for _, h in metrics]
    rows = [
        [r["policy"], str(r["seeds"]), str(r["T"])]
        + [pm(r[f"{k}_mean"], r[f"{k}_std"]) for k, _ in metrics]
        for r in summary.to_dict("records")
    ]
    return ("table", (header, rows))


def failed_blocks(comp: Comparison) -> list[Block]:
    """The policies of ``comp`` whose jobs all failed, with their failure records."""
    if not comp.failed:
        return []
    lines = [
        f"- {label}: " + ", ".join(f"`{path.relative_to(comp.folder)}`" for path in records)
        for label, records in comp.failed.items()
    ]
    text = "Policies without a finished run (every job failed; see the failure records):\n"
    return [("markdown", text + "\n".join(lines))]


def paired_blocks(paired: pd.DataFrame) -> list[Block]:
    """The paired comparison of final regret with the lowest-regret policy."""
    if not len(paired):
        return []
    rows = [
        [
            r["policy"],
            r["reference"],
            estimate(r["difference"], r["std_error"]),
            estimate(r["std_error"], r["std_error"]),
            interval(r["ci95_low"], r["ci95_high"]),
            str(r["seeds"]),
        ]
        for r in paired.to_dict("records")
    ]
    return [
        ("h3", "Paired comparison of final regret"),
        ("table", (["policy", "minus", "difference", "s.e.", "95% t interval", "seeds"], rows)),
        (
            "p",
            "Differences of final regret on the same seeds; an interval above 0 means "
            "the policy has more regret than the reference.",
        ),
    ]


def holdout_blocks(table: pd.DataFrame) -> list[Block]:
    """cal₂ over checkpoints (:func:`~deepbandits.experiments.report.tables.holdout_cal2_table`)."""
    if not len(table):
        return []
    checkpoints = sorted(table["checkpoint"].unique())
    rows = []
    for label, g in table.groupby("policy", sort=False):
        at = g.set_index("checkpoint")
        rows.append(
            [str(label)]
            + [
                pm(at.loc[t, "mean"], at.loc[t, "std"]) if t in at.index else "–"
                for t in checkpoints
            ]
        )
    return [
        ("h3", "Hold-out calibration cal₂ over checkpoints (all arms)"),
        ("table", (["policy"] + [f"t = {t}" for t in checkpoints], rows)),
    ]


def figure_blocks(figures: list[ReportFigure], folder: Path) -> list[Block]:
    """The figures, their files in ``folder`` (relative to the document)."""
    return [
        ("figure", ((folder / f.png).as_posix(), (folder / f.svg).as_posix(), f.caption))
        for f in figures
    ]


def smoke_test_block(per_run: pd.DataFrame) -> Block:
    """What a quick run's page says in place of verdicts (:data:`SMOKE_TEST`)."""
    seeds = per_run["seed"].nunique()
    return (
        "p",
        f"{SMOKE_TEST[0].upper()}{SMOKE_TEST[1:]}. These runs are the config's --quick scale "
        f"(T = {int(per_run['T'].max())}, {seeds} seed{'s' if seeds != 1 else ''}, short "
        "trainings): they check that everything runs, and the paper's claims are listed "
        "without verdicts. Run without --quick for the paper's scale.",
    )


def comparison_blocks(
    comp: Comparison, out: Path, root_out: Path, levels: NDArray[np.float64], quick: bool = False
) -> list[Block]:
    """Tables, figures and configuration of one comparison as document blocks; writes the CSV
    tables and figures under ``out``. A ``quick`` comparison's claims get no verdict
    (:func:`~deepbandits.experiments.report.paper.unjudged`)."""
    out.mkdir(parents=True, exist_ok=True)
    per_run = run_table(comp, levels)
    summary = summary_table(per_run)
    paired = paired_table(per_run)
    reference = comp.reference or {}
    claims = evaluate_claims(per_run, reference.get("claims", []), comp.policies)
    if quick:
        claims = unjudged(claims)
    write_atomic(out / "runs.csv", per_run.to_csv(index=False))
    write_atomic(out / "summary.csv", summary.to_csv(index=False))
    write_atomic(out / "paired.csv", paired.to_csv(index=False))
    if len(claims):
        write_atomic(out / CLAIMS_FILE, claims.to_csv(index=False))
    if comp.reference is not None:
        write_atomic(out / REFERENCE_FILE, json.dumps(comp.reference, indent=2))
    names = ("reliability.csv", "holdout_reliability.csv", "holdout_cal2.csv")
    for name, table in zip(names, reliability_tables(comp, levels), strict=True):
        if len(table):
            write_atomic(out / name, table.to_csv(index=False))
    figures = comparison_figures(comp, out, levels)
    write_manifest(figures, out)
    blocks: list[Block] = [
        ("h2", comp.name),
        ("p", f"Runs from `{comp.folder}`."),
        *([smoke_test_block(per_run)] if quick else []),
        summary_block(summary),
        (
            "p",
            "Mean ± standard deviation over seeds. cal₁: Eq. calib over the rounds of a run; "
            "cal₂: Eq. calib2 on the hold-out set at the last checkpoint, all arms; sharpness: "
            "Eq. sharpness. Forecasts are N(μ, w²) with the policy's predicted mean μ and width "
            f"w (see `deepbandits.metrics.diagnostics`); levels {levels[0]:g}, …, {levels[-1]:g}.",
        ),
        *failed_blocks(comp),
        *paper_blocks(comp.reference, summary, claims),
        *paired_blocks(paired),
        *holdout_blocks(holdout_cal2_table(comp, levels)),
        ("h3", "Figures"),
        *figure_blocks(figures, out.relative_to(root_out)),
        ("h3", "Configuration"),
        ("code", json.dumps(configuration(comp), indent=2, default=str)),
    ]
    return blocks


def comparison_name(folder: Path, results: Path) -> str:
    """The name of the comparison ``folder`` in the report of ``results``: its path under
    ``results`` (its own name when it is ``results``); its report folder is the name's
    :func:`~deepbandits.experiments.report.render.slug`."""
    return folder.name if folder == results else str(folder.relative_to(results))


def build_report(
    results: str | Path,
    out: str | Path,
    levels: ArrayLike | None = None,
    *,
    quick: bool | None = None,
) -> tuple[Path, Path]:
    """Write ``out/index.html`` and ``out/README.md`` for every comparison under ``results``;
    return both paths.

    ``quick`` marks runs at an experiment's smoke-test scale (``--quick``): the page says so
    and gives the paper's claims no verdict (``SMOKE_TEST`` of
    :mod:`~deepbandits.experiments.report.paper`). None: as the ``experiment.json`` of
    ``results`` records (:func:`~deepbandits.experiments.report.load.is_quick`).

    Raises
    ------
    DataNotFoundError
        ``results`` does not exist or holds no runs.
    DataError
        A run's files or a ``paper_reference.json`` cannot be read.
    """
    results, out = Path(results), Path(out)
    p = DEFAULT_LEVELS if levels is None else np.asarray(levels, dtype=float)
    folders = find_comparisons(results)
    if not folders:
        raise DataNotFoundError(
            f"no runs under {results}: expected <policy>/seed_<s>.csv and .json files "
            "(as written by deepbandits run/compare)"
        )
    quick = is_quick(results) if quick is None else quick
    out.mkdir(parents=True, exist_ok=True)
    blocks: list[Block] = []
    for folder in folders:
        name = comparison_name(folder, results)
        comp = load_comparison(folder, name)
        blocks += comparison_blocks(comp, out / slug(name), out, p, quick)
    title = f"deepbandits report: {results}" + (f" ({SMOKE_TEST})" if quick else "")
    md, page = out / "README.md", out / "index.html"
    write_atomic(md, to_markdown(blocks, title))
    write_atomic(page, to_html(blocks, title))
    return page, md
