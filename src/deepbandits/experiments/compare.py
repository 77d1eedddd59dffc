"""Several policies on one environment over the same seeds: per-run files, a table, a plot.

Layout of an output folder::

    out/<policy label>/seed_<s>.csv   per-round record (columns: deepbandits.experiments.COLUMNS)
    out/<policy label>/seed_<s>.json  exact configuration of that run
    out/<policy label>/seed_<s>.holdout.csv  hold-out forecasts at checkpoints (with checkpoints)
    out/<policy label>/seed_<s>.failed.json  error and traceback of a run that raised
    out/summary.csv                   final regret mean ± std over seeds, wall time, per policy
    out/regret.png, out/regret.svg    cumulative regret, mean ± std band per policy

With ``fmt="parquet"`` the tables are ``.parquet`` files instead of ``.csv``.
``summary.csv`` and the plot cover the policies and seeds of the latest call, so several calls
into one folder (one policy at a time, say) each rewrite them; ``deepbandits report`` summarises
every finished run in a folder.

Runs are jobs of a sweep (:func:`~deepbandits.experiments.sweep.run_sweep`): each is written as
soon as it finishes and skipped when it is finished on disk with the same configuration hash, so
an interrupted comparison loses only the runs in flight and resumes where it stopped. A run whose
files are missing, truncated or damaged is run again (with a warning); a finished run made with
another configuration (policy, environment, seed, T, checkpoints, hold-out size, device) is
refused rather than mixed in or overwritten, unless ``force``. A run that raises is recorded in
``<stem>.failed.json`` and the others go on; the summary then covers the runs that finished and
:class:`SweepFailedError` lists the failures. One comparison at a time may write into a folder
(:func:`~deepbandits._io.folder_lock`); a second one fails at once with
:class:`~deepbandits.errors.ConcurrentUseError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepbandits._io import folder_lock, write_atomic
from deepbandits._validation import check_int
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.experiments.executors import Executor, LocalExecutor, check_device
from deepbandits.experiments.jobs import Job, applied_device, build_env, build_policy
from deepbandits.experiments.runner import (
    RunResult,
    check_checkpoints,
    give_horizon,
    load_finished,
)
from deepbandits.experiments.sweep import SweepFailedError, run_sweep
from deepbandits.metrics import (
    exploration_split,
    locked_out_arms,
    unplayed_arms,
    window_accuracy,
)


def label_of(spec: str) -> str:
    """A file-system friendly label for a policy specification."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", spec.replace(":", "__"))


def check_specs(
    policy_specs: list[str],
    env_spec: str,
    T: int,
    device: str | None = None,
    executor: Executor | None = None,
) -> None:
    """Build each policy and the environment once, and check ``device`` for ``executor``'s
    jobs (:func:`~deepbandits.experiments.executors.check_device`), so that bad options fail
    before any run starts."""
    if device is not None:
        check_device(device, executor)
    env = build_env(env_spec)
    for spec in policy_specs:
        give_horizon(build_policy(spec, env), T)


def _distinct(items: list[Any], what: str) -> None:
    """Refuse an empty list or one with repeats (two jobs would share one run's files)."""
    if not items:
        raise InputValueError(f"no {what} given")
    repeated = sorted({str(x) for x in items if items.count(x) > 1})
    if repeated:
        raise InputValueError(f"{what} repeated: {', '.join(repeated)}")


def compare(
    policy_specs: list[str],
    env_spec: str,
    seeds: list[int],
    T: int,
    out: str | Path,
    *,
    jobs: int = 1,
    progress: bool = True,
    checkpoints: Sequence[int] = (),
    holdout_size: int = 500,
    executor: Executor | None = None,
    force: bool = False,
    fmt: str = "csv",
    device: str | None = None,
) -> pd.DataFrame:
    """Run every policy on every seed (skipping finished runs) and summarise; see module doc.

    ``checkpoints`` and ``holdout_size`` are passed to :func:`~deepbandits.experiments.run`
    (hold-out forecasts for Eq. calib2); ``device`` (e.g. ``"cuda"``) puts the networks of the
    policies that have one, and whose specification names no device, there (it is part of
    those runs' configuration only: a policy without a network has the same runs on every
    device). The runs are computed by ``executor``
    (:mod:`~deepbandits.experiments.executors`), by default ``jobs`` local worker processes
    (:class:`~deepbandits.experiments.executors.LocalExecutor`); ``force`` recomputes finished
    runs; ``fmt`` (``"csv"`` or ``"parquet"``) is the format of the runs' tables.

    Raises
    ------
    InputValueError
        For bad arguments (no policy or seed, a repeated policy label or seed, ``T`` or
        ``jobs`` below 1, ``jobs`` with an ``executor``), a bad specification, a ``device``
        the executor's jobs cannot use (not a torch device, CUDA where there is none, a GPU
        index with Ray: :func:`~deepbandits.experiments.executors.check_device`), or a
        finished run in ``out`` made with another configuration, without ``force``
        (:func:`~deepbandits.experiments.sweep.finished_run`). Nothing runs then.
    ConcurrentUseError
        When another process is writing into ``out``.
    SweepFailedError
        When runs raised, after the runs that finished are summarised (``summary.csv`` and
        the plot cover those).
    """
    out = Path(out)
    T = check_int(T, "T", minimum=1)
    jobs = check_int(jobs, "jobs", minimum=1)
    if executor is not None and jobs != 1:
        raise InputValueError(
            f"give jobs (local worker processes) or an executor, not both; jobs={jobs} is given "
            "with an executor"
        )
    if isinstance(policy_specs, str):
        raise InputTypeError(
            "policy_specs must be a list of specification strings, but the string "
            f"{policy_specs!r} is given"
        )
    seeds = [check_int(s, "seed", minimum=0) for s in seeds]
    _distinct(seeds, "seeds")
    _distinct([label_of(spec) for spec in policy_specs], "policy labels")
    points = tuple(check_checkpoints(checkpoints, T))
    owned = executor is None
    executor = LocalExecutor(jobs, progress=progress) if owned else executor
    try:
        check_specs(policy_specs, env_spec, T, device, executor)  # before out is created
        with folder_lock(out):
            every = [
                Job(
                    spec,
                    env_spec,
                    s,
                    T,
                    out / label_of(spec) / f"seed_{s}",
                    points,
                    holdout_size,
                    applied_device(spec, device),
                )
                for spec in policy_specs
                for s in seeds
            ]
            sweep = run_sweep(
                every,
                executor=executor,
                force=force,
                fmt=fmt,
                progress=progress,
            )
            finished = set(sweep.done) | set(sweep.skipped)
            results: dict[str, list[RunResult]] = {}
            for job in every:
                if job in finished:
                    results.setdefault(job.policy_spec, []).append(load_finished(job.stem))
            summary = summarize(results)
            if results:
                write_atomic(out / "summary.csv", summary.to_csv(index=False))
                plot_regret(
                    results, out / "regret.png", title=f"{env_spec}, T={T}, {len(seeds)} seeds"
                )
    finally:
        if owned:
            executor.close()
    if sweep.failed:
        raise SweepFailedError(sweep.failed)
    return summary


#: Rounds at the end of a run over which a classification bandit's accuracy and locked-out
#: arms are counted.
SUMMARY_WINDOW = 1000


def classification_metrics(run: RunResult) -> dict[str, float] | None:
    """On a classification bandit, the run's accuracy over its last :data:`SUMMARY_WINDOW`
    rounds (``accuracy_last``), the arms never played in them (``unplayed_arms``) and, of those,
    the arms locked out while they paid (``locked_out_arms``; NaN for a run saved before the
    ``best_arm`` column); None on another environment."""
    env = run.config.get("env", {})
    n_arms = env.get("params", {}).get("n_arms")
    if env.get("class") != "ClassificationEnv" or n_arms is None:
        return None
    arms = run.records["arm"]
    return {
        "accuracy_last": window_accuracy(run.records["regret"], SUMMARY_WINDOW),
        "unplayed_arms": float(unplayed_arms(arms, n_arms, SUMMARY_WINDOW)),
        "locked_out_arms": float(
            locked_out_arms(arms, run.records["best_arm"], n_arms, SUMMARY_WINDOW)
            if "best_arm" in run.records
            else np.nan
        ),
    }


def summarize(results: dict[str, list[RunResult]]) -> pd.DataFrame:
    """Final cumulative regret mean ± std over seeds and mean wall time, per policy. For
    classification bandits, also the accuracy over the
    last :data:`SUMMARY_WINDOW` rounds and the number of arms never played in them (mean over
    seeds, and the worst seed's count; :func:`classification_metrics`). ``explored_share_mean``:
    the share of rounds that played an arm other than a greedy one
    (:func:`~deepbandits.metrics.exploration_split`; NaN for runs saved before the ``mean_gap``
    column)."""
    rows = []
    for spec, runs in results.items():
        final = np.array([r.final_regret for r in runs])
        wall = np.array([r.config.get("wall_seconds", np.nan) for r in runs])
        row = {
            "policy": spec,
            "seeds": len(runs),
            "T": int(runs[0].records["t"].iloc[-1]),
            "final_regret_mean": final.mean(),
            "final_regret_std": final.std(ddof=1) if len(final) > 1 else 0.0,
            "wall_seconds_mean": wall.mean(),
            "explored_share_mean": np.mean(
                [
                    exploration_split(r.records["regret"], r.records["mean_gap"])["explored_share"]
                    if "mean_gap" in r.records
                    else np.nan
                    for r in runs
                ]
            ),
        }
        per_run = [classification_metrics(r) for r in runs]
        if all(m is not None for m in per_run):
            metrics = pd.DataFrame(per_run)
            row.update(
                accuracy_last=float(metrics["accuracy_last"].mean(skipna=False)),
                unplayed_arms_mean=float(metrics["unplayed_arms"].mean()),
                unplayed_arms_max=int(metrics["unplayed_arms"].max()),
                locked_out_arms_mean=float(metrics["locked_out_arms"].mean(skipna=False)),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def format_table(summary: pd.DataFrame) -> str:
    """A Markdown table of a summary (with accuracy and unplayed arms when it has them)."""
    cls = "accuracy_last" in summary.columns
    head = "| policy | seeds | T | final regret (mean ± std) | wall time per run (s) |"
    rule = "|---|---|---|---|---|"
    if cls:
        head += (
            f" accuracy, last {SUMMARY_WINDOW} | arms never played, last {SUMMARY_WINDOW} |"
            " of them locked out (best in ≥ 1 % of those rounds) |"
        )
        rule += "---|---|---|"
    lines = [head, rule]
    for row in summary.itertuples():
        line = (
            f"| {row.policy} | {row.seeds} | {row.T} | {row.final_regret_mean:.1f} ± "
            f"{row.final_regret_std:.1f} | {row.wall_seconds_mean:.1f} |"
        )
        if cls:
            locked = getattr(row, "locked_out_arms_mean", np.nan)  # runs saved before it
            line += (
                f" {row.accuracy_last:.3f} | {row.unplayed_arms_mean:.1f} |"
                f" {'–' if np.isnan(locked) else f'{locked:.1f}'} |"
            )
        lines.append(line)
    return "\n".join(lines)


def plot_regret(results: dict[str, list[RunResult]], path: Path, title: str = "") -> Path:
    """Cumulative regret against rounds, mean ± one std band over seeds, one line per policy
    (``path`` and the same name with ``.svg``)."""
    from deepbandits.plotting import regret_curves, save_figure  # matplotlib: only to draw

    curves = {
        spec: (runs[0].records["t"], [r.records["cum_regret"] for r in runs])
        for spec, runs in results.items()
    }
    return save_figure(regret_curves(curves, title=title), Path(path).with_suffix(""))[0]
