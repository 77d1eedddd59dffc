"""A report from a results folder: ``deepbandits report results/ --out report/``.

Every folder under ``results/`` that holds runs (``<policy>/seed_<s>.csv`` + ``.json``, as
:func:`~deepbandits.experiments.compare` writes them) is one comparison. For each, the report
has a table per policy (mean ± std over seeds of the final regret, cumulative reward,
calibration error cal₁ of Eq. calib, sharpness of Eq. sharpness, hold-out calibration cal₂ of
Eq. calib2 at the last checkpoint, wall time), a paired comparison of every policy with the
lowest-regret one, the figures that its results allow, and the configuration of its runs.
``report/index.html`` and ``report/README.md`` hold the same content; figures (PNG + SVG) and the
tables as CSV lie in one folder per comparison: ``runs.csv`` (every metric of every run),
``summary.csv`` (mean and std over seeds), ``paired.csv``, and the reliability data behind the
figures, ``reliability.csv`` (in-run), ``holdout_reliability.csv`` and ``holdout_cal2.csv``
(per checkpoint and arm).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._io import write_atomic
from deepbandits.errors import DataError, DataNotFoundError
from deepbandits.experiments.runner import RunResult
from deepbandits.metrics import (
    DEFAULT_LEVELS,
    holdout_calibration,
    mean_estimation_error,
    mean_std,
    paired_difference,
    reliability_curve,
    run_metrics,
    variance_estimation_error,
)
from deepbandits.plotting import (
    estimation_error_curves,
    holdout_reliability_diagrams,
    latency_bars,
    regret_curves,
    reliability_diagram,
    save_figure,
    variance_traces,
)

#: A comparison folder may hold this file (written by ``deepbandits reproduce``): the paper's
#: values to print beside the measured ones.
REFERENCE_FILE = "paper_reference.json"

#: Summary columns: (key in :func:`~deepbandits.metrics.run_metrics` and the per-run table,
#: heading).
METRICS: tuple[tuple[str, str], ...] = (
    ("final_regret", "final regret ↓"),
    ("cumulative_reward", "cumulative reward ↑"),
    ("calibration_error", "cal₁ ↓"),
    ("sharpness", "sharpness ↓"),
    ("holdout_cal2", "cal₂, last checkpoint ↓"),
    ("wall_seconds", "wall time (s)"),
)


@dataclass
class Comparison:
    """The runs of one results folder: ``{policy label: runs in seed order}``."""

    name: str
    folder: Path
    runs: dict[str, list[RunResult]]
    reference: dict[str, Any] | None = None


def find_comparisons(root: str | Path) -> list[Path]:
    """Folders under ``root`` (``root`` included) whose sub-folders hold runs."""
    root = Path(root)
    if not root.is_dir():
        raise DataNotFoundError(f"results folder {root} does not exist")
    return sorted({p.parent.parent for p in root.rglob("seed_*.json")})


def load_run(stem: Path) -> RunResult:
    """A run's files, or a :class:`~deepbandits.errors.DataError` naming the one that cannot be
    read."""
    try:
        run = RunResult.load(stem)
    except (OSError, ValueError) as exc:  # JSON and CSV parse errors are ValueErrors
        raise DataError(f"cannot read the run {stem} (.csv/.json/.holdout.csv): {exc}") from None
    missing = {"t", "reward", "cum_regret", "mean", "width"} - set(run.records.columns)
    if missing:
        raise DataError(f"the run {stem}.csv lacks the columns {sorted(missing)}")
    return run


def load_comparison(folder: Path, name: str) -> Comparison:
    """The runs under ``folder``, labelled by the policy spec they were run with."""
    runs: dict[str, list[RunResult]] = {}
    for policy_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        stems = [p.with_suffix("") for p in policy_dir.glob("seed_*.json")]
        stems = [s for s in stems if s.with_suffix(".csv").exists()]
        if not stems:
            continue
        loaded = sorted((load_run(s) for s in stems), key=lambda r: r.config.get("seed", 0))
        label = loaded[0].config.get("policy", {}).get("spec", policy_dir.name)
        runs[label] = loaded
    ref_path = folder / REFERENCE_FILE
    reference = json.loads(ref_path.read_text()) if ref_path.exists() else None
    return Comparison(name, folder, runs, reference)


def seconds_per_100(records: pd.DataFrame, columns: Iterable[str]) -> float:
    return float(sum(records[c].sum() for c in columns) / len(records) * 100)


def run_table(comp: Comparison, levels: ArrayLike | None = None) -> pd.DataFrame:
    """One row per run: :func:`~deepbandits.metrics.run_metrics`, cal₂ at the last checkpoint,
    wall time and seconds per 100 rounds of selection and of update + training."""
    rows = []
    for label, runs in comp.runs.items():
        for r in runs:
            row: dict[str, Any] = {
                "policy": label,
                "seed": r.config.get("seed"),
                "T": len(r.records),
            }
            row.update(run_metrics(r.records, levels))
            row["holdout_cal2"] = np.nan
            if r.holdout is not None and len(r.holdout):
                cal = holdout_calibration(r.holdout, levels)
                last = cal[(cal["arm"] == "all")].iloc[-1]
                row["holdout_cal2"] = float(last["cal2"])
            row["wall_seconds"] = float(r.config.get("wall_seconds", np.nan))
            row["select_s_per_100"] = seconds_per_100(r.records, ["time_select"])
            row["update_s_per_100"] = seconds_per_100(r.records, ["time_update", "time_train"])
            rows.append(row)
    return pd.DataFrame(rows)


def reliability_tables(
    comp: Comparison, levels: NDArray[np.float64]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The data behind the reliability figures, one row per level: in-run (policy, seed) and
    hold-out (policy, seed, checkpoint, arm), and cal₂ per (policy, seed, checkpoint, arm)."""
    in_run, held, cal2 = [], [], []
    for label, runs in comp.runs.items():
        for r in runs:
            seed = r.config.get("seed")
            if _finite([r], "mean") and _finite([r], "width"):
                freq = reliability_curve(r.records, levels)
                in_run.append(
                    pd.DataFrame({"policy": label, "seed": seed, "level": levels, "observed": freq})
                )
            if r.holdout is None:
                continue
            cal = holdout_calibration(r.holdout, levels)
            cal2.append(cal.assign(policy=label, seed=seed))
            for (t, arm), g in r.holdout.groupby(["checkpoint", "arm"]):
                freq = reliability_curve(g, levels)
                held.append(
                    pd.DataFrame(
                        {
                            "policy": label,
                            "seed": seed,
                            "checkpoint": t,
                            "arm": arm,
                            "level": levels,
                            "observed": freq,
                        }
                    )
                )

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return cat(in_run), cat(held), cat(cal2)


def summary_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of every metric, one row per policy (in run order)."""
    rows = []
    for label, g in per_run.groupby("policy", sort=False):
        row: dict[str, Any] = {"policy": label, "seeds": len(g), "T": int(g["T"].max())}
        for key, _ in METRICS:
            values = g[key].to_numpy(dtype=float)
            finite = values[np.isfinite(values)]
            m, s = mean_std(finite) if finite.size else (np.nan, np.nan)
            row[f"{key}_mean"], row[f"{key}_std"] = m, s
        rows.append(row)
    return pd.DataFrame(rows)


def paired_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Final regret of each policy minus that of the lowest-regret policy, paired by seed."""
    means = per_run.groupby("policy", sort=False)["final_regret"].mean()
    best = str(means.idxmin())
    ref = per_run[per_run["policy"] == best].set_index("seed")["final_regret"]
    rows = []
    for label, g in per_run.groupby("policy", sort=False):
        if label == best:
            continue
        other = g.set_index("seed")["final_regret"]
        seeds = sorted(set(other.index) & set(ref.index))
        if not seeds:
            continue
        d = paired_difference(other.loc[seeds].to_numpy(), ref.loc[seeds].to_numpy())
        rows.append(
            {
                "policy": label,
                "reference": best,
                "difference": d.mean,
                "std_error": d.std_error,
                "ci95_low": d.low,
                "ci95_high": d.high,
                "seeds": d.n,
            }
        )
    return pd.DataFrame(rows)


def fmt(x: float) -> str:
    """A number for a table: thousands separators for large values, 3 digits for small."""
    if not np.isfinite(x):
        return "–"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 0.001 or a == 0:
        return f"{x:.3f}"
    return f"{x:.2e}"


def pm(mean: float, std: float) -> str:
    return fmt(mean) if not np.isfinite(std) else f"{fmt(mean)} ± {fmt(std)}"


# --------------------------------------------------------------------------- figures
def _stack(
    runs: list[RunResult], values: Callable[[pd.DataFrame], ArrayLike]
) -> NDArray[np.float64]:
    """``[n_seeds, T]`` of ``values(records)`` over runs of one length (shortest kept)."""
    arrays = [np.asarray(values(r.records), dtype=float) for r in runs]
    n = min(len(a) for a in arrays)
    return np.stack([a[:n] for a in arrays])


def _rounds(runs: list[RunResult]) -> NDArray[np.int64]:
    """The rounds that every run of ``runs`` has."""
    return runs[0].records["t"].to_numpy()[: min(len(r.records) for r in runs)]


def _finite(runs: list[RunResult], column: str) -> bool:
    return any(np.isfinite(r.records[column].to_numpy()).any() for r in runs)


@dataclass(frozen=True)
class ReportFigure:
    key: str
    paths: list[Path]
    caption: str


def error_figure(
    runs: dict[str, list[RunResult]],
    key: str,
    error: Callable[[pd.DataFrame], ArrayLike],
    ylabel: str,
    caption: str,
    out: Path,
    title: str,
) -> ReportFigure:
    """A per-round error of each policy's runs over t (:func:`estimation_error_curves`)."""
    curves = {k: (_rounds(rs), _stack(rs, error)) for k, rs in runs.items()}
    fig = estimation_error_curves(curves, ylabel=ylabel, title=title)
    return ReportFigure(key, save_figure(fig, out / key), caption)


def comparison_figures(
    comp: Comparison, out: Path, levels: NDArray[np.float64]
) -> list[ReportFigure]:
    """Every figure the runs of ``comp`` allow, written under ``out``."""
    figs: list[ReportFigure] = []
    runs = comp.runs
    env = next(iter(runs.values()))[0].config.get("env", {})
    title = comp.name

    curves = {k: (_rounds(rs), _stack(rs, lambda d: d["cum_regret"])) for k, rs in runs.items()}
    figs.append(
        ReportFigure(
            "regret",
            save_figure(regret_curves(curves, title=title), out / "regret"),
            "Cumulative pseudo-regret, mean ± one standard deviation over seeds, the band "
            "clipped to the seeds' own range (Figs. demo, real_world).",
        )
    )
    scored = {k: rs for k, rs in runs.items() if _finite(rs, "mean") and _finite(rs, "width")}
    if scored:
        observed = {
            k: np.mean([reliability_curve(r.records, levels) for r in rs], axis=0)
            for k, rs in scored.items()
        }
        figs.append(
            ReportFigure(
                "reliability",
                save_figure(
                    reliability_diagram(observed, levels, title=title), out / "reliability"
                ),
                "Reliability diagram of the in-run forecasts N(μₜ, wₜ²) of the arm played "
                "(Eq. calib, Fig. calib (a)), averaged over seeds. Below the diagonal: "
                "over-confident; above: under-confident.",
            )
        )
    with_holdout = {k: rs for k, rs in runs.items() if all(r.holdout is not None for r in rs)}
    if with_holdout:
        first = next(iter(with_holdout.values()))[0].holdout
        assert first is not None
        for arm in sorted(first["arm"].unique()):
            per_t: dict[int, dict[str, NDArray[np.float64]]] = {}
            for t in sorted(first["checkpoint"].unique()):
                per_t[int(t)] = {}
                for k, rs in with_holdout.items():
                    frames = [r.holdout for r in rs if r.holdout is not None]
                    sel = [h[(h["checkpoint"] == t) & (h["arm"] == arm)] for h in frames]
                    per_t[int(t)][k] = np.mean([reliability_curve(f, levels) for f in sel], axis=0)
            figs.append(
                ReportFigure(
                    f"holdout_arm{arm}",
                    save_figure(
                        holdout_reliability_diagrams(per_t, levels, title=f"{title}, arm {arm}"),
                        out / f"holdout_arm{arm}",
                    ),
                    f"Hold-out reliability diagrams of arm {arm} at each checkpoint (Eq. calib2, "
                    f"Figs. calib_details_0..3), averaged over seeds.",
                )
            )
    bound = env.get("variance_bound")
    known_var = all(_finite(rs, "sigma2_oracle") for rs in runs.values()) and any(
        float(r.records["sigma2_oracle"].max()) > 0 for rs in runs.values() for r in rs
    )
    estimating = {k: rs for k, rs in runs.items() if _finite(rs, "sigma2_hat")}
    if estimating and known_var:
        seed_runs = {k: rs[0] for k, rs in estimating.items()}
        ref = next(iter(seed_runs.values())).records
        T = len(ref)
        window = min(300, max(T // 3, 1))
        figs.append(
            ReportFigure(
                "variance",
                save_figure(
                    variance_traces(
                        ref["t"].to_numpy(),
                        ref["sigma2_oracle"].to_numpy(),
                        {k: r.records["sigma2_hat"].to_numpy()[:T] for k, r in seed_runs.items()},
                        bound,
                        window=window,
                        title=f"{title}, seed {ref_seed(seed_runs)}",
                    ),
                    out / "variance",
                ),
                f"True noise variance Var(rₜ), the Eq. 13 estimate σ̂²ₜ and the bound R² over "
                f"the first and last {window} rounds of one seed (Fig. calib (b), "
                f"Fig. ablation_study2 (b, c)).",
            )
        )
    if scored:
        figs.append(
            error_figure(
                scored,
                "mean_error",
                lambda d: mean_estimation_error(d["expected_reward"], d["mean"]),
                "|h(x) − μ̂(x)|",
                "Reward-mean estimation error |h(xₜ,ₐₜ) − θᵀφ(xₜ,ₐₜ)| of the arm played, "
                "trailing mean over 100 rounds, mean ± std over seeds clipped to the seeds' "
                "range (Fig. ablation_study2 (a)).",
                out,
                title,
            )
        )
    if scored and known_var:
        figs.append(
            error_figure(
                scored,
                "variance_error",
                lambda d: variance_estimation_error(d["width"], d["sigma2_oracle"]),
                "|φᵀA⁻¹φ − Var(r)|",
                "Variance estimation error |wₜ² − Var(rₜ)| (wₜ² = φᵀA⁻¹φ for the neural-linear "
                "family), trailing mean over 100 rounds, mean ± std over seeds clipped to the "
                "seeds' range (Fig. ablation_study (b): compare the `loss=mse` and `loss=mle` "
                "runs).",
                out,
                title,
            )
        )
    lat = []
    for k, rs in runs.items():
        sel = [seconds_per_100(r.records, ["time_select"]) for r in rs]
        upd = [seconds_per_100(r.records, ["time_update", "time_train"]) for r in rs]
        (sm, ss), (um, us) = mean_std(sel), mean_std(upd)
        lat.append(
            {"policy": k, "select_mean": sm, "select_std": ss, "update_mean": um, "update_std": us}
        )
    figs.append(
        ReportFigure(
            "latency",
            save_figure(latency_bars(pd.DataFrame(lat), title=title), out / "latency"),
            "Seconds per 100 rounds of arm selection and of the update (network training "
            "included), mean ± std over seeds (Fig. latency; this machine, not the paper's GPU).",
        )
    )
    return figs


def ref_seed(seed_runs: dict[str, RunResult]) -> Any:
    return next(iter(seed_runs.values())).config.get("seed")


# --------------------------------------------------------------------------- documents
Block = tuple[str, Any]


def comparison_blocks(
    comp: Comparison, out: Path, root_out: Path, levels: NDArray[np.float64]
) -> list[Block]:
    """Tables, figures and configuration of one comparison as document blocks; writes the CSV
    tables and figures under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    per_run = run_table(comp, levels)
    summary = summary_table(per_run)
    paired = paired_table(per_run)
    write_atomic(out / "runs.csv", per_run.to_csv(index=False))
    write_atomic(out / "summary.csv", summary.to_csv(index=False))
    write_atomic(out / "paired.csv", paired.to_csv(index=False))
    names = ("reliability.csv", "holdout_reliability.csv", "holdout_cal2.csv")
    for name, table in zip(names, reliability_tables(comp, levels), strict=True):
        if len(table):
            write_atomic(out / name, table.to_csv(index=False))
    rel = out.relative_to(root_out)
    blocks: list[Block] = [("h2", comp.name), ("p", f"Runs from `{comp.folder}`.")]
    header = ["policy", "seeds", "T"] + [h for _, h in METRICS]
    rows = [
        [r["policy"], str(r["seeds"]), str(r["T"])]
        + [pm(r[f"{k}_mean"], r[f"{k}_std"]) for k, _ in METRICS]
        for r in summary.to_dict("records")
    ]
    blocks += [
        ("table", (header, rows)),
        (
            "p",
            "Mean ± standard deviation over seeds. cal₁: Eq. calib over the rounds of a run; "
            "cal₂: Eq. calib2 on the hold-out set at the last checkpoint, all arms; sharpness: "
            "Eq. sharpness. Forecasts are N(μ, w²) with the policy's predicted mean μ and width "
            f"w (see `deepbandits.metrics.diagnostics`); levels {levels[0]:g}, …, {levels[-1]:g}.",
        ),
    ]
    if comp.reference:
        blocks += reference_blocks(comp.reference, summary)
    if len(paired):
        rows = [
            [
                r["policy"],
                r["reference"],
                fmt(r["difference"]),
                fmt(r["std_error"]),
                f"[{fmt(r['ci95_low'])}, {fmt(r['ci95_high'])}]",
                str(r["seeds"]),
            ]
            for r in paired.to_dict("records")
        ]
        blocks += [
            ("h3", "Paired comparison of final regret"),
            (
                "table",
                (["policy", "minus", "difference", "s.e.", "95% t interval", "seeds"], rows),
            ),
            (
                "p",
                "Differences of final regret on the same seeds; an interval above 0 means "
                "the policy has more regret than the reference.",
            ),
        ]
    cal2 = holdout_rows(comp, levels)
    if cal2:
        blocks += [("h3", "Hold-out calibration cal₂ over checkpoints (all arms)"), ("table", cal2)]
    blocks.append(("h3", "Figures"))
    for fig in comparison_figures(comp, out, levels):
        blocks.append(
            ("figure", (str(rel / fig.paths[0].name), str(rel / fig.paths[1].name), fig.caption))
        )
    blocks += [
        ("h3", "Configuration"),
        ("code", json.dumps(configuration(comp), indent=2, default=str)),
    ]
    return blocks


def holdout_rows(
    comp: Comparison, levels: NDArray[np.float64]
) -> tuple[list[str], list[list[str]]] | None:
    tables = {
        k: [holdout_calibration(r.holdout, levels) for r in rs if r.holdout is not None]
        for k, rs in comp.runs.items()
    }
    tables = {k: v for k, v in tables.items() if v}
    if not tables:
        return None
    checkpoints = sorted({int(t) for v in tables.values() for c in v for t in c["checkpoint"]})
    rows = []
    for k, cals in tables.items():
        row = [k]
        for t in checkpoints:
            vals = [
                float(c[(c["checkpoint"] == t) & (c["arm"] == "all")]["cal2"].iloc[0])
                for c in cals
                if t in set(c["checkpoint"])
            ]
            row.append(pm(*mean_std(vals)) if vals else "–")
        rows.append(row)
    return ["policy"] + [f"t = {t}" for t in checkpoints], rows


def reference_blocks(reference: dict[str, Any], summary: pd.DataFrame) -> list[Block]:
    """Measured values beside the paper's (``paper_reference.json``)."""
    metrics: dict[str, str] = reference["metrics"]
    header = ["policy"] + [f"{name} (measured / paper)" for name in metrics.values()]
    rows = []
    measured = summary.set_index("policy")
    for label, values in reference["values"].items():
        row = [label]
        for key in metrics:
            got = (
                pm(measured.loc[label, f"{key}_mean"], measured.loc[label, f"{key}_std"])
                if label in measured.index
                else "not run"
            )
            row.append(f"{got} / {values.get(key, '–')}")
        rows.append(row)
    return [("h3", f"Beside the paper: {reference.get('source', '')}"), ("table", (header, rows))]


def configuration(comp: Comparison) -> dict[str, Any]:
    """What produced the runs: environment, T, seeds and each policy's parameters."""
    first = next(iter(comp.runs.values()))[0].config
    return {
        "env": first.get("env"),
        "T": first.get("T"),
        "checkpoints": first.get("checkpoints"),
        "library_version": first.get("version"),
        "torch": first.get("torch"),
        "policies": {
            k: {"seeds": [r.config.get("seed") for r in rs], **rs[0].config.get("policy", {})}
            for k, rs in comp.runs.items()
        },
    }


def to_markdown(blocks: list[Block], title: str) -> str:
    lines = [f"# {title}", ""]
    for kind, value in blocks:
        if kind in ("h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + value, ""]
        elif kind == "p":
            lines += [value, ""]
        elif kind == "table":
            header, rows = value
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(r) + " |" for r in rows]
            lines.append("")
        elif kind == "figure":
            png, svg, caption = value
            lines += [f"![{caption}]({png})", "", f"*{caption}* ([SVG]({svg}))", ""]
        elif kind == "code":
            lines += [
                "<details><summary>configuration</summary>",
                "",
                "```json",
                value,
                "```",
                "",
                "</details>",
                "",
            ]
    return "\n".join(lines)


def to_html(blocks: list[Block], title: str) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
        "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        "figure{margin:1.5em 0}img{max-width:100%}figcaption{font-size:90%;color:#333}"
        "pre{background:#f4f4f4;padding:1em;overflow:auto;font-size:80%}</style>",
        "</head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for kind, value in blocks:
        if kind in ("h2", "h3", "p"):
            parts.append(f"<{kind}>{e(value)}</{kind}>")
        elif kind == "table":
            header, rows = value
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
            parts.append("</table>")
        elif kind == "figure":
            png, svg, caption = value
            parts.append(
                f'<figure><img src="{e(png)}" alt="{e(caption)}"><figcaption>{e(caption)} '
                f'(<a href="{e(svg)}">SVG</a>)</figcaption></figure>'
            )
        elif kind == "code":
            parts.append(
                f"<details><summary>configuration</summary><pre>{e(value)}</pre></details>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)


def slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_") or "results"


def build_report(
    results: str | Path, out: str | Path, levels: ArrayLike | None = None
) -> tuple[Path, Path]:
    """Write ``out/index.html`` and ``out/README.md`` for every comparison under ``results``;
    return both paths."""
    results, out = Path(results), Path(out)
    p = DEFAULT_LEVELS if levels is None else np.asarray(levels, dtype=float)
    folders = find_comparisons(results)
    if not folders:
        raise ValueError(
            f"no runs under {results}: expected <policy>/seed_<s>.csv and .json files "
            "(as written by deepbandits run/compare)"
        )
    out.mkdir(parents=True, exist_ok=True)
    blocks: list[Block] = []
    for folder in folders:
        name = folder.name if folder == results else str(folder.relative_to(results))
        comp = load_comparison(folder, name)
        blocks += comparison_blocks(comp, out / slug(name), out, p)
    title = f"deepbandits report: {results}"
    md, page = out / "README.md", out / "index.html"
    write_atomic(md, to_markdown(blocks, title))
    write_atomic(page, to_html(blocks, title))
    return page, md
