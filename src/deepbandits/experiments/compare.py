"""Several policies on one environment over the same seeds: per-run files, a table, a plot.

Layout of an output folder::

    out/<policy label>/seed_<s>.csv   per-round record (columns: deepbandits.experiments.COLUMNS)
    out/<policy label>/seed_<s>.json  exact configuration of that run
    out/<policy label>/seed_<s>.holdout.csv  hold-out forecasts at checkpoints (with checkpoints)
    out/summary.csv                   final regret mean ± std over seeds, wall time, per policy
    out/regret.png, out/regret.svg    cumulative regret, mean ± std band per policy

``summary.csv`` and the plot cover the policies and seeds of the latest call, so several calls
into one folder (one policy at a time, say) each rewrite them; ``deepbandits report`` summarises
every finished run in a folder.

Each run is written as soon as it finishes and skipped when it is finished on disk
(:func:`~deepbandits.experiments.runner.load_finished`: its JSON, written last, reads back and
matches its CSV files), so an interrupted comparison loses nothing and resumes where it stopped.
A run whose files are missing, truncated or damaged is run again (with a warning); a finished
run made with another configuration (policy, environment, seed, T, checkpoints, hold-out size)
is refused rather than mixed in or overwritten (:func:`is_finished`). One comparison at a time
may write into a folder (:func:`~deepbandits._io.folder_lock`); a second one fails at once with
:class:`~deepbandits.errors.ConcurrentUseError`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from deepbandits._io import folder_lock, worker_pool, write_atomic
from deepbandits._validation import check_int
from deepbandits.envs import Environment, make_env
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.experiments.runner import (
    RunResult,
    UnfinishedRunError,
    check_checkpoints,
    give_horizon,
    load_finished,
    run,
    run_files,
)
from deepbandits.experiments.specs import parse_spec
from deepbandits.metrics import unplayed_arms, window_accuracy
from deepbandits.plotting import regret_curves, save_figure
from deepbandits.policies import Policy, make_policy


@dataclass(frozen=True)
class Job:
    policy_spec: str
    env_spec: str
    seed: int
    T: int
    stem: Path
    checkpoints: tuple[int, ...] = ()
    holdout_size: int = 500


def label_of(spec: str) -> str:
    """A file-system friendly label for a policy specification."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", spec.replace(":", "__"))


def build_policy(spec: str, env: Environment) -> Policy:
    """The policy of ``spec`` with the environment's recommended settings
    (:func:`~deepbandits.policies.make_policy` with ``env``)."""
    name, params = parse_spec(spec)
    return make_policy(name, env=env, **params)


def check_specs(policy_specs: list[str], env_spec: str, T: int) -> None:
    """Build each policy and the environment once, so bad options fail before any run starts."""
    env_name, env_params = parse_spec(env_spec)
    env = make_env(env_name, **env_params)
    for spec in policy_specs:
        give_horizon(build_policy(spec, env), T)


def run_job(job: Job, progress: bool = False) -> Path:
    """Run one (policy, environment, seed) and write its files; returns the CSV path.

    Each run is single-threaded (torch and the BLAS under numpy, :func:`run`'s ``threads=1``),
    so that parallel jobs do not oversubscribe the cores and a run's numbers do not depend on
    ``jobs``.
    """
    env_name, env_params = parse_spec(job.env_spec)
    env_params.setdefault("horizon", job.T)
    env = make_env(env_name, **env_params)
    result = run(
        build_policy(job.policy_spec, env),
        env,
        job.T,
        seed=job.seed,
        progress=progress,
        checkpoints=job.checkpoints,
        holdout_size=job.holdout_size,
        threads=1,
    )
    result.config["policy"]["spec"] = job.policy_spec
    result.config["env"]["spec"] = job.env_spec
    return result.save(job.stem)[0]


def _spec(config: dict[str, Any], part: str) -> Any:
    section = config.get(part)
    return section.get("spec") if isinstance(section, dict) else None


def is_finished(job: Job) -> bool:
    """Whether ``job``'s run is finished on disk, to be reused rather than run.

    No file of the run: not finished. Files that are not a finished run
    (:func:`~deepbandits.experiments.runner.load_finished`: one missing, truncated, damaged or
    left by another run) are not finished either, and a warning says why it runs again.

    Raises
    ------
    InputValueError
        When the finished run was made with another policy, environment, seed, T, checkpoints
        or hold-out size: reusing it would mix settings silently, and running it again would
        destroy it.
    """
    if not any(path.exists() for path in run_files(job.stem)):
        return False
    try:
        config = load_finished(job.stem).config
    except UnfinishedRunError as exc:
        warnings.warn(f"{exc}; running it again", stacklevel=2)
        return False
    found = {
        "policy": _spec(config, "policy"),
        "env": _spec(config, "env"),
        "seed": config.get("seed"),
        "T": config.get("T"),
        "checkpoints": tuple(config.get("checkpoints") or ()),
        "holdout_size": config.get("holdout_size"),
    }
    wanted = {
        "policy": job.policy_spec,
        "env": job.env_spec,
        "seed": job.seed,
        "T": job.T,
        "checkpoints": job.checkpoints,
        "holdout_size": job.holdout_size if job.checkpoints else None,
    }
    diff = [f"{k} {found[k]!r} (now {wanted[k]!r})" for k in wanted if found[k] != wanted[k]]
    if diff:
        raise InputValueError(
            f"{job.stem} was run with {', '.join(diff)}; write to another output folder or "
            "delete that run to redo it"
        )
    return True


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
) -> pd.DataFrame:
    """Run every policy on every seed (skipping finished runs) and summarise; see module doc.

    ``checkpoints`` and ``holdout_size`` are passed to :func:`~deepbandits.experiments.run`
    (hold-out forecasts for Eq. calib2). ``jobs`` runs go in parallel worker processes
    (:func:`~deepbandits._io.worker_pool`).

    Raises
    ------
    InputValueError
        For bad arguments (no policy or seed, a repeated policy label or seed, ``T`` or
        ``jobs`` below 1), a bad specification, or a finished run in ``out`` made with another
        configuration (:func:`is_finished`).
    ConcurrentUseError
        When another process is writing into ``out``.
    """
    out = Path(out)
    T = check_int(T, "T", minimum=1)
    jobs = check_int(jobs, "jobs", minimum=1)
    if isinstance(policy_specs, str):
        raise InputTypeError(
            "policy_specs must be a list of specification strings, but the string "
            f"{policy_specs!r} is given"
        )
    seeds = [check_int(s, "seed", minimum=0) for s in seeds]
    _distinct(seeds, "seeds")
    _distinct([label_of(spec) for spec in policy_specs], "policy labels")
    points = tuple(check_checkpoints(checkpoints, T))
    with folder_lock(out):
        check_specs(policy_specs, env_spec, T)
        every = [
            Job(spec, env_spec, s, T, out / label_of(spec) / f"seed_{s}", points, holdout_size)
            for spec in policy_specs
            for s in seeds
        ]
        todo = [job for job in every if not is_finished(job)]
        bar = tqdm(total=len(todo), desc="runs", disable=not progress or not todo)
        if jobs > 1 and len(todo) > 1:
            with worker_pool(min(jobs, len(todo))) as pool:
                for _ in pool.map(run_job, todo):
                    bar.update()
        else:
            for job in todo:
                bar.set_postfix_str(f"{job.policy_spec} seed {job.seed}")
                run_job(job, progress=progress)
                bar.update()
        bar.close()
        results = {
            spec: [load_finished(out / label_of(spec) / f"seed_{s}") for s in seeds]
            for spec in policy_specs
        }
        summary = summarize(results)
        write_atomic(out / "summary.csv", summary.to_csv(index=False))
        plot_regret(results, out / "regret.png", title=f"{env_spec}, T={T}, {len(seeds)} seeds")
    return summary


#: Rounds at the end of a run over which a classification bandit's accuracy and locked-out
#: arms are counted.
SUMMARY_WINDOW = 1000


def summarize(results: dict[str, list[RunResult]]) -> pd.DataFrame:
    """Final cumulative regret mean ± std over seeds and mean wall time, per policy. For
    classification bandits, also the accuracy over the
    last :data:`SUMMARY_WINDOW` rounds and the number of arms never played in them (mean over
    seeds, and the worst seed's count)."""
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
        }
        env = runs[0].config.get("env", {})
        n_arms = env.get("params", {}).get("n_arms")
        if env.get("class") == "ClassificationEnv" and n_arms is not None:
            acc = [window_accuracy(r.records["regret"], SUMMARY_WINDOW) for r in runs]
            dead = [unplayed_arms(r.records["arm"], n_arms, SUMMARY_WINDOW) for r in runs]
            row.update(
                accuracy_last=float(np.mean(acc)),
                unplayed_arms_mean=float(np.mean(dead)),
                unplayed_arms_max=int(np.max(dead)),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def format_table(summary: pd.DataFrame) -> str:
    """A Markdown table of a summary (with accuracy and unplayed arms when it has them)."""
    cls = "accuracy_last" in summary.columns
    head = "| policy | seeds | T | final regret (mean ± std) | wall time per run (s) |"
    rule = "|---|---|---|---|---|"
    if cls:
        head += f" accuracy, last {SUMMARY_WINDOW} | arms never played, last {SUMMARY_WINDOW} |"
        rule += "---|---|"
    lines = [head, rule]
    for row in summary.itertuples():
        line = (
            f"| {row.policy} | {row.seeds} | {row.T} | {row.final_regret_mean:.1f} ± "
            f"{row.final_regret_std:.1f} | {row.wall_seconds_mean:.1f} |"
        )
        if cls:
            line += f" {row.accuracy_last:.3f} | {row.unplayed_arms_mean:.1f} |"
        lines.append(line)
    return "\n".join(lines)


def plot_regret(results: dict[str, list[RunResult]], path: Path, title: str = "") -> Path:
    """Cumulative regret against rounds, mean ± one std band over seeds, one line per policy
    (``path`` and the same name with ``.svg``)."""
    curves = {
        spec: (runs[0].records["t"], [r.records["cum_regret"] for r in runs])
        for spec, runs in results.items()
    }
    return save_figure(regret_curves(curves, title=title), Path(path).with_suffix(""))[0]
