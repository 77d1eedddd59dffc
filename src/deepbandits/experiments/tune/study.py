"""The Optuna side of :func:`~deepbandits.experiments.tune.tune`: the study file, its pruner,
which trials count, and the table of trials."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.trial import FrozenTrial, TrialState

from deepbandits._validation import check_int
from deepbandits.errors import InputValueError
from deepbandits.experiments.tune.space import rounded
from deepbandits.policies.space import Param

#: Name of the study inside ``out/study.db``.
STUDY_NAME = "deepbandits-tune"


class CumulativeMedianPruner(optuna.pruners.MedianPruner):
    """Median pruning for a quantity that only grows within a run, such as cumulative regret.

    Optuna's :class:`~optuna.pruners.MedianPruner` compares a trial's *best* intermediate value
    so far with the median of the other trials at the same step; for a growing cumulative regret
    (minimised) the best value is the first one reported, so it would never prune. This pruner
    compares the trial's *latest* value instead: a trial is stopped when its cumulative regret
    at step ``s`` exceeds the median of the completed trials' values at ``s``.

    Parameters
    ----------
    n_startup_trials : int, default=5
        No pruning until this many trials have completed.
    n_warmup_steps : int, default=0
        No pruning before this step.
    """

    def __init__(self, n_startup_trials: int = 5, n_warmup_steps: int = 0) -> None:
        super().__init__(n_startup_trials=n_startup_trials, n_warmup_steps=n_warmup_steps)
        self.n_startup_trials = n_startup_trials
        self.n_warmup_steps = n_warmup_steps

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None or step < self.n_warmup_steps:
            return False
        completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(completed) < self.n_startup_trials:
            return False
        others = [t.intermediate_values.get(step, math.nan) for t in completed]
        others = [v for v in others if math.isfinite(v)]
        if not others:
            return False
        value = trial.intermediate_values[step]
        return bool(not math.isfinite(value) or value > float(np.median(others)))


def counts_toward_trials(trial: FrozenTrial) -> bool:
    """Whether a trial counts towards ``n_trials``: finished, or failed by an error of its own
    (a trial interrupted by a kill or Ctrl-C does not count, it is run again)."""
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    return trial.state == TrialState.FAIL and "error" in trial.user_attrs


def trials_table(study: optuna.Study, space: dict[str, Param]) -> pd.DataFrame:
    """One row per trial: ``number``, ``state``, ``value`` (mean final regret over the tuning
    seeds; empty unless complete), the parameters it ran with, ``last_step`` and
    ``value_at_last_step`` (its latest intermediate report), ``seconds`` and ``error``."""
    rows = []
    for t in study.trials:
        used = rounded(t.params)
        last = t.last_step
        rows.append(
            {
                "number": t.number,
                "state": t.state.name,
                "value": t.value if t.state == TrialState.COMPLETE else None,
                **{k: used.get(k) for k in space},
                "last_step": last,
                "value_at_last_step": t.intermediate_values.get(last) if last is not None else None,
                "seconds": t.duration.total_seconds() if t.duration is not None else None,
                "error": t.user_attrs.get("error", ""),
            }
        )
    columns = ["number", "state", "value", *space, "last_step", "value_at_last_step"]
    return pd.DataFrame(rows, columns=[*columns, "seconds", "error"])


def check_seeds(seeds: Sequence[int], name: str) -> list[int]:
    """``seeds`` as a list of distinct integers >= 0; ``name`` ("tuning", "evaluation") names
    them in the error."""
    out = [check_int(s, f"{name} seed", minimum=0) for s in seeds]
    if not out:
        raise InputValueError(f"{name} seeds are empty")
    repeated = sorted({s for s in out if out.count(s) > 1})
    if repeated:
        raise InputValueError(f"{name} seeds repeat {', '.join(map(str, repeated))}")
    return out


def _brief(key: str, value: Any, other: Any) -> Any:
    """A study setting as an error message shows it: a search space by its names unless the
    names are the same as in ``other`` (then the ranges differ)."""
    if key == "search_space" and isinstance(value, dict) and isinstance(other, dict):
        return ",".join(value) if list(value) != list(other) else value
    return value


def open_study(
    out: Path, attrs: dict[str, Any], seed: int, pruner: optuna.pruners.BasePruner
) -> optuna.Study:
    """Create ``out/study.db`` or reopen it; a study made with other settings is refused."""
    out.mkdir(parents=True, exist_ok=True)
    db = out / "study.db"
    study = optuna.create_study(
        storage=f"sqlite:///{db.resolve()}",
        study_name=STUDY_NAME,
        direction="minimize",
        load_if_exists=True,
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=pruner,
    )
    found = study.user_attrs.get("deepbandits")
    if found is None:
        if study.trials:
            raise InputValueError(f"{db} holds a study that deepbandits tune did not make")
        study.set_user_attr("deepbandits", attrs)
    elif found != attrs:
        diff = [
            f"{k} {_brief(k, found.get(k), attrs[k])!r} (now {_brief(k, attrs[k], found.get(k))!r})"
            for k in attrs
            if found.get(k) != attrs[k]
        ]
        raise InputValueError(
            f"{db} holds a study made with {'; '.join(diff)}; tune into another out folder or "
            "delete that one to start again"
        )
    # A process killed mid-trial leaves it RUNNING: mark it failed (it will be run again).
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study.tell(trial.number, state=TrialState.FAIL)
    # Seeded by the trials already made, so a resumed study does not replay the same draws.
    study.sampler = optuna.samplers.TPESampler(seed=seed + len(study.trials))
    return study


__all__ = [
    "STUDY_NAME",
    "CumulativeMedianPruner",
    "check_seeds",
    "counts_toward_trials",
    "open_study",
    "trials_table",
]
