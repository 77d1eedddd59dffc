"""The figures of a comparison (PNG + SVG), each with its caption, and the manifest
(:data:`MANIFEST`) that lists them for a report that copies them (the suite report)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._io import write_atomic
from deepbandits.errors import DataError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.report.load import Comparison
from deepbandits.experiments.report.tables import has_values, seconds_per_100
from deepbandits.experiments.storage import RunResult
from deepbandits.metrics import (
    mean_estimation_error,
    mean_std,
    reliability_curve,
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

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Each comparison's report folder lists its figures in this file: a JSON list of
#: ``{"key", "png", "svg", "caption"}`` (file names relative to the folder).
MANIFEST = "figures.json"


@dataclass(frozen=True)
class ReportFigure:
    """A figure saved as ``png`` and ``svg`` (file names in one folder) with its caption."""

    key: str
    png: str
    svg: str
    caption: str


def saved(key: str, fig: Figure, out: Path, caption: str) -> ReportFigure:
    """Save ``fig`` as ``out/<key>.png`` and ``.svg``."""
    png, svg = save_figure(fig, out / key)
    return ReportFigure(key, png.name, svg.name, caption)


def write_manifest(figures: list[ReportFigure], folder: Path) -> Path:
    """Write :data:`MANIFEST` into ``folder``."""
    return write_atomic(folder / MANIFEST, json.dumps([asdict(f) for f in figures], indent=2))


def read_manifest(folder: Path) -> list[ReportFigure]:
    """The figures listed in ``folder``'s :data:`MANIFEST`."""
    path = folder / MANIFEST
    try:
        return [ReportFigure(**entry) for entry in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError) as exc:
        raise DataError(f"cannot read the figure list {path}: {exc}") from None


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
    return saved(key, fig, out, caption)


def figure_title(comp: Comparison) -> str:
    """What every figure of ``comp`` is titled: its environment, horizon and seeds, and the
    comparison's name when it says more (``h1, T = 10000, 3 seeds — demo``)."""
    first = next(iter(comp.runs.values()))[0].config
    env = first.get("env", {})
    spec = str(env.get("spec") or env.get("class") or "environment")
    seeds = len({r.config.get("seed") for runs in comp.runs.values() for r in runs})
    title = f"{spec}, T = {first.get('T')}, {seeds} seed{'s' if seeds != 1 else ''}"
    named = comp.name not in (spec, label_of(spec))
    return f"{title} — {comp.name}" if named else title


def comparison_figures(
    comp: Comparison, out: Path, levels: NDArray[np.float64]
) -> list[ReportFigure]:
    """Every figure the runs of ``comp`` allow, written under ``out``, each titled by
    :func:`figure_title`."""
    figs: list[ReportFigure] = []
    runs = comp.runs
    env = next(iter(runs.values()))[0].config.get("env", {})
    title = figure_title(comp)

    curves = {k: (_rounds(rs), _stack(rs, lambda d: d["cum_regret"])) for k, rs in runs.items()}
    figs.append(
        saved(
            "regret",
            regret_curves(curves, title=title),
            out,
            "Cumulative pseudo-regret, mean ± one standard deviation over seeds, the band "
            "clipped to the seeds' own range (Figs. demo, real_world).",
        )
    )
    scored = {k: rs for k, rs in runs.items() if has_values(rs, "mean") and has_values(rs, "width")}
    if scored:
        observed = {
            k: np.mean([reliability_curve(r.records, levels) for r in rs], axis=0)
            for k, rs in scored.items()
        }
        figs.append(
            saved(
                "reliability",
                reliability_diagram(observed, levels, title=title),
                out,
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
                saved(
                    f"holdout_arm{arm}",
                    holdout_reliability_diagrams(per_t, levels, title=f"{title}, arm {arm}"),
                    out,
                    f"Hold-out reliability diagrams of arm {arm} at each checkpoint (Eq. calib2, "
                    f"Figs. calib_details_0..3), averaged over seeds.",
                )
            )
    bound = env.get("variance_bound")
    known_var = all(has_values(rs, "sigma2_oracle") for rs in runs.values()) and any(
        float(r.records["sigma2_oracle"].max()) > 0 for rs in runs.values() for r in rs
    )
    estimating = {k: rs for k, rs in runs.items() if has_values(rs, "sigma2_hat")}
    if estimating and known_var:
        seed_runs = {k: rs[0] for k, rs in estimating.items()}
        ref_run = next(iter(seed_runs.values()))
        ref = ref_run.records
        T = len(ref)
        window = min(300, max(T // 3, 1))
        figs.append(
            saved(
                "variance",
                variance_traces(
                    ref["t"].to_numpy(),
                    ref["sigma2_oracle"].to_numpy(),
                    {k: r.records["sigma2_hat"].to_numpy()[:T] for k, r in seed_runs.items()},
                    bound,
                    window=window,
                    title=f"{title}, seed {ref_run.config.get('seed')}",
                ),
                out,
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
        saved(
            "latency",
            latency_bars(pd.DataFrame(lat), title=title),
            out,
            "Seconds per 100 rounds of arm selection and of the update (network training "
            "included), mean ± std over seeds (Fig. latency; this machine, not the paper's GPU).",
        )
    )
    return figs
