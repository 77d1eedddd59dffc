"""The tunings of the matched protocol, one per (environment, policy), as tasks of an executor;
whether one is finished on disk; and the table of their results, paired against the reference
policy."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from tqdm.auto import tqdm

from deepbandits.errors import JobFailedError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.executors import Executor, Failure
from deepbandits.experiments.storage import RunResult, UnfinishedRunError, load_finished
from deepbandits.experiments.tune import tune
from deepbandits.experiments.tune.study import STUDY_NAME, counts_toward_trials
from deepbandits.metrics.comparison import PairedDifference, mean_std, paired_difference
from deepbandits.specs import format_seeds

#: Confidence of the paired intervals.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Tuning:
    """One (environment, policy) tuning of the protocol: a task of an
    :class:`~deepbandits.experiments.executors.Executor` (picklable for a worker process)."""

    env: str
    policy: str
    spec: str
    T: int
    tuning_seeds: tuple[int, ...]
    eval_seeds: tuple[int, ...]
    n_trials: int
    search: tuple[str, ...]
    sampler_seed: int
    out: Path

    def execute(self, progress: bool = False) -> Path:
        """Tune the policy on the environment (resuming its study); returns ``tune.json``.
        Its own progress bars stay off (``progress`` is the executor's): the protocol shows
        one bar over its tunings."""
        result = tune(
            self.spec,
            self.env,
            T=self.T,
            tuning_seeds=self.tuning_seeds,
            eval_seeds=self.eval_seeds,
            out=self.out,
            n_trials=self.n_trials,
            search=list(self.search),
            seed=self.sampler_seed,
            jobs=1,
            progress=False,
        )
        return result.path

    def run_stem(self, spec: str, seed: int) -> Path:
        """Where the evaluation run of ``spec`` on ``seed`` is."""
        return self.out / "eval" / label_of(spec) / f"seed_{seed}"


def is_finished(task: Tuning) -> bool:
    """Whether the tuning of ``task`` is complete on disk with these settings: ``tune.json``
    says so, the study holds ``n_trials`` counted trials and every evaluation run is finished
    (:func:`~deepbandits.experiments.runner.load_finished`)."""
    try:
        record = json.loads((task.out / "tune.json").read_text())
    except (OSError, ValueError):
        return False
    same = (
        record.get("policy") == task.spec
        and record.get("env") == task.env
        and record.get("T") == task.T
        and record.get("tuning_seeds") == list(task.tuning_seeds)
        and record.get("eval_seeds") == list(task.eval_seeds)
        and list(record.get("search_space", {})) == list(task.search)
        and record.get("sampler", {}).get("seed") == task.sampler_seed
    )
    if not same:
        return False
    for spec in (record.get("default_spec", ""), record.get("best_spec", "")):
        for seed in task.eval_seeds:
            try:
                load_finished(task.run_stem(spec, seed))
            except UnfinishedRunError:
                return False
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(
            study_name=STUDY_NAME, storage=f"sqlite:///{(task.out / 'study.db').resolve()}"
        )
        done = sum(counts_toward_trials(t) for t in study.get_trials(deepcopy=False))
    except (KeyError, ValueError, RuntimeError):
        return False
    finally:
        optuna.logging.set_verbosity(verbosity)
    return done >= task.n_trials


def run_tunings(todo: list[Tuning], executor: Executor, progress: bool) -> None:
    """Compute the tunings of ``todo`` on ``executor``, with a progress bar over them; the
    first that fails raises its error (the others finished before it are kept on disk)."""
    bar = tqdm(total=len(todo), desc="tunings", disable=not progress or not todo)
    try:
        for task, outcome in executor.map_unordered(todo):
            if isinstance(outcome, Failure):
                if outcome.exception is not None:
                    raise outcome.exception
                raise JobFailedError(
                    f"the tuning of {task.policy} on {task.env} failed: {outcome.error}"
                )
            bar.set_postfix_str(f"{task.env} / {task.policy} done")
            bar.update()
    finally:
        bar.close()


# ---------------------------------------------------------------------------- the table
def _finals(task: Tuning, spec: str) -> np.ndarray:
    """Final regrets of ``spec``'s evaluation runs, read back from disk, in seed order."""
    return np.array([RunResult.load(task.run_stem(spec, s)).final_regret for s in task.eval_seeds])


def _wall(task: Tuning, spec: str) -> float:
    walls = [
        json.loads(task.run_stem(spec, s).with_suffix(".json").read_text()).get("wall_seconds")
        for s in task.eval_seeds
    ]
    return float(np.mean([w for w in walls if w is not None])) if any(walls) else math.nan


def _paired(prefix: str, diff: PairedDifference | None) -> dict[str, Any]:
    if diff is None:
        return {
            f"{prefix}_mean": math.nan,
            f"{prefix}_se": math.nan,
            f"{prefix}_low": math.nan,
            f"{prefix}_high": math.nan,
            f"{prefix}_significant": None,
        }
    return {
        f"{prefix}_mean": diff.mean,
        f"{prefix}_se": diff.std_error,
        f"{prefix}_low": diff.low,
        f"{prefix}_high": diff.high,
        f"{prefix}_significant": bool(diff.low > 0 or diff.high < 0),
    }


def result_rows(tasks: list[Tuning], reference: str) -> list[dict[str, Any]]:
    """One row per task, paired against the reference policy's task on the same environment."""
    records = {(t.env, t.policy): json.loads((t.out / "tune.json").read_text()) for t in tasks}
    finals: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for t in tasks:
        rec = records[t.env, t.policy]
        finals[t.env, t.policy] = (_finals(t, rec["best_spec"]), _finals(t, rec["default_spec"]))
    rows = []
    for t in tasks:
        rec = records[t.env, t.policy]
        tuned, untuned = finals[t.env, t.policy]
        ref_tuned, ref_untuned = finals[t.env, reference]
        is_ref = t.policy == reference
        tuned_mean, tuned_std = mean_std(tuned)
        untuned_mean, untuned_std = mean_std(untuned)
        n = rec.get("n_trials", {})
        rows.append(
            {
                "env": t.env,
                "T": t.T,
                "policy": t.policy,
                "spec": rec["default_spec"],
                "tuned_spec": rec["best_spec"],
                "searched": ",".join(rec["search_space"]),
                "best_params": json.dumps(rec["best_params"]),
                "tuning_value": rec["best_value"],
                "trials_complete": n.get("complete"),
                "trials_pruned": n.get("pruned"),
                "trials_failed": n.get("failed"),
                "eval_seeds": format_seeds(list(t.eval_seeds)),
                "n_eval": len(t.eval_seeds),
                "tuned_mean": tuned_mean,
                "tuned_std": tuned_std,
                "untuned_mean": untuned_mean,
                "untuned_std": untuned_std,
                **_paired(
                    "diff",
                    None if is_ref else paired_difference(tuned, ref_tuned, CONFIDENCE),
                ),
                **_paired(
                    "untuned_diff",
                    None if is_ref else paired_difference(untuned, ref_untuned, CONFIDENCE),
                ),
                "tuned_final_regrets": ";".join(f"{v:.6g}" for v in tuned),
                "untuned_final_regrets": ";".join(f"{v:.6g}" for v in untuned),
                "tuned_wall_seconds": _wall(t, rec["best_spec"]),
            }
        )
    return rows


__all__ = ["CONFIDENCE", "Tuning", "is_finished", "result_rows", "run_tunings"]
