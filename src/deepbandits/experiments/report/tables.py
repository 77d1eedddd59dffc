"""The tables of a comparison as DataFrames: one row per run, the summary over seeds, the paired
comparison with the lowest-regret policy and the reliability data behind the figures."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits.experiments.compare import SUMMARY_WINDOW, classification_metrics
from deepbandits.experiments.report.load import Comparison
from deepbandits.experiments.storage import RunResult
from deepbandits.metrics import (
    holdout_calibration,
    mean_std,
    paired_difference,
    reliability_curve,
    run_metrics,
)

#: Metric columns of the per-run table (:func:`run_table`, the report's ``runs.csv``): those of
#: :func:`~deepbandits.metrics.run_metrics`, cal₂ at the last checkpoint, wall time, seconds
#: per 100 rounds of selection and of update + training, and on a classification bandit the
#: accuracy and the arms never played (and locked out) over the last rounds
#: (:func:`~deepbandits.experiments.compare.classification_metrics`; NaN on another).
RUN_METRICS: tuple[str, ...] = (
    "final_regret",
    "cumulative_reward",
    "calibration_error",
    "sharpness",
    "mean_error",
    "variance_error",
    "explored_share",
    "explored_regret",
    "holdout_cal2",
    "wall_seconds",
    "select_s_per_100",
    "update_s_per_100",
    "accuracy_last",
    "unplayed_arms",
    "locked_out_arms",
)

#: Summary columns (mean and std over seeds, :func:`summary_table`): (key in
#: :data:`RUN_METRICS`, heading).
METRICS: tuple[tuple[str, str], ...] = (
    ("final_regret", "final regret ↓"),
    ("cumulative_reward", "cumulative reward ↑"),
    ("calibration_error", "cal₁ ↓"),
    ("sharpness", "sharpness ↓"),
    ("holdout_cal2", "cal₂, last checkpoint ↓"),
    ("explored_share", "share of rounds explored"),
    ("wall_seconds", "wall time (s)"),
)

#: Summary columns of a classification bandit (:func:`summary_table` has them when a run has
#: a value), as the summary of ``compare`` and its printed table name them.
CLASSIFICATION_METRICS: tuple[tuple[str, str], ...] = (
    ("accuracy_last", f"accuracy, last {SUMMARY_WINDOW} ↑"),
    ("unplayed_arms", f"arms never played, last {SUMMARY_WINDOW}"),
    ("locked_out_arms", "of them locked out (best in ≥ 1 % of those rounds)"),
)

#: The keys of :data:`CLASSIFICATION_METRICS`.
CLASSIFIED: tuple[str, ...] = tuple(key for key, _ in CLASSIFICATION_METRICS)


def seconds_per_100(records: pd.DataFrame, columns: Iterable[str]) -> float:
    """Seconds per 100 rounds spent in ``columns`` (``time_select``, ...) of a run's records."""
    return float(sum(records[c].sum() for c in columns) / len(records) * 100)


def has_values(runs: list[RunResult], column: str) -> bool:
    """Whether any run of ``runs`` has a finite value in ``column`` of its records."""
    return any(np.isfinite(r.records[column].to_numpy()).any() for r in runs)


def run_table(comp: Comparison, levels: ArrayLike | None = None) -> pd.DataFrame:
    """One row per run: ``policy``, ``seed``, ``T`` and :data:`RUN_METRICS`."""
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
            row.update(classification_metrics(r) or dict.fromkeys(CLASSIFIED, np.nan))
            rows.append(row)
    return pd.DataFrame(rows, columns=["policy", "seed", "T", *RUN_METRICS])


def reliability_tables(
    comp: Comparison, levels: NDArray[np.float64]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The data behind the reliability figures, one row per level: in-run (policy, seed) and
    hold-out (policy, seed, checkpoint, arm), and cal₂ per (policy, seed, checkpoint, arm)."""
    in_run, held, cal2 = [], [], []
    for label, runs in comp.runs.items():
        for r in runs:
            seed = r.config.get("seed")
            if has_values([r], "mean") and has_values([r], "width"):
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


def holdout_cal2_table(comp: Comparison, levels: NDArray[np.float64]) -> pd.DataFrame:
    """cal₂ of all arms per policy and checkpoint, mean and std over the seeds that have the
    checkpoint: columns policy, checkpoint, mean, std (empty without hold-out forecasts)."""
    rows = []
    for label, runs in comp.runs.items():
        cals = [holdout_calibration(r.holdout, levels) for r in runs if r.holdout is not None]
        overall = [c[c["arm"] == "all"] for c in cals]
        checkpoints = sorted({int(t) for c in overall for t in c["checkpoint"]})
        for t in checkpoints:
            values = [
                float(c[c["checkpoint"] == t]["cal2"].iloc[0])
                for c in overall
                if (c["checkpoint"] == t).any()
            ]
            m, s = mean_std(values)
            rows.append({"policy": label, "checkpoint": t, "mean": m, "std": s})
    return pd.DataFrame(rows, columns=["policy", "checkpoint", "mean", "std"])


def summary_metrics(per_run: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """The summary's metrics for ``per_run``: :data:`METRICS`, then those of
    :data:`CLASSIFICATION_METRICS` that a run has a value of (runs on a classification
    bandit)."""
    present = tuple(
        (key, heading)
        for key, heading in CLASSIFICATION_METRICS
        if key in per_run and np.isfinite(per_run[key].to_numpy(dtype=float)).any()
    )
    return METRICS + present


def summary_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of every metric, one row per policy (in run order); a metric
    ``per_run`` lacks (a table written before it existed) is NaN. The metrics of a
    classification bandit (:data:`CLASSIFICATION_METRICS`) are columns when a run has them."""
    rows = []
    metrics = summary_metrics(per_run)
    for label, g in per_run.groupby("policy", sort=False):
        row: dict[str, Any] = {"policy": label, "seeds": len(g), "T": int(g["T"].max())}
        for key, _ in metrics:
            values = g[key].to_numpy(dtype=float) if key in g else np.array([np.nan])
            finite = values[np.isfinite(values)]
            m, s = mean_std(finite) if finite.size else (np.nan, np.nan)
            row[f"{key}_mean"], row[f"{key}_std"] = m, s
        rows.append(row)
    return pd.DataFrame(rows)


def paired_values(
    per_run: pd.DataFrame, policy: str, other: str, metric: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``metric`` of ``policy`` and of ``other`` on the seeds where both have a finite value,
    in seed order."""
    a = per_run[per_run["policy"] == policy].set_index("seed")[metric].astype(float)
    b = per_run[per_run["policy"] == other].set_index("seed")[metric].astype(float)
    seeds = sorted(set(a[np.isfinite(a)].index) & set(b[np.isfinite(b)].index))
    return a.loc[seeds].to_numpy(), b.loc[seeds].to_numpy()


def paired_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Final regret of each policy minus that of the lowest-regret policy, paired by seed."""
    means = per_run.groupby("policy", sort=False)["final_regret"].mean()
    best = str(means.idxmin())
    rows = []
    for label in means.index:
        if label == best:
            continue
        a, b = paired_values(per_run, label, best, "final_regret")
        if not a.size:
            continue
        d = paired_difference(a, b)
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
