"""The matched protocol: every neural policy with the same network budget and the same tuning.

The paper's code trains its own method with far more sample gradients than its baselines and
runs the baselines with an untuned α. This experiment asks whether the ordering
"Neural-σ²-LinUCB has the lowest regret" survives when

* every policy trains the same network (``hidden``, ``n_layers``, optimizer) on the same schedule
  (the same trainings, ``train_steps`` and ``batch_size``): the library's defaults with the
  environment's recommended settings (``env.policy_defaults``) applied to all alike, plus the
  protocol's :attr:`MatchedProtocol.budget`, and nothing of it is searched; :func:`run_matched`
  checks that the resolved budgets are equal before it starts;
* every policy is tuned alike: :func:`~deepbandits.experiments.tune.tune` with the same number
  of trials, the same tuning seeds, the same sampler seed and the same search names (``alpha``,
  ``lam``, ``lr``, restricted to those a policy searches: Neural-LinGreedy has no α);
* the tuned and the untuned settings are evaluated on the same fresh evaluation seeds, and each
  policy is compared with Neural-σ²-LinUCB seed by seed
  (:func:`~deepbandits.metrics.paired_difference`, 95 % Student-t interval).

Layout of an output folder::

    out/<env label>/<policy label>/   tune()'s folder: study.db, trials.csv, tune.json, eval/
    out/matched.csv                   one row per environment and policy, every number
    out/matched.md                    the settings and one table per environment
    out/matched.json                  the protocol and the resolved training budgets

The package: :mod:`~deepbandits.experiments.matched.protocol` (the settings),
:mod:`~deepbandits.experiments.matched.budget` (the training budgets),
:mod:`~deepbandits.experiments.matched.tunings` (the tunings, as executor tasks, and their
table) and :mod:`~deepbandits.experiments.matched.markdown` (the report).

Each tuning resumes from its study when the call is repeated (a killed run loses at most the
trial in progress); a tuning whose trials and evaluation runs are all on disk is not touched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from deepbandits._io import folder_lock, write_atomic
from deepbandits._validation import check_int
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.executors import LocalExecutor
from deepbandits.experiments.jobs import build_env
from deepbandits.experiments.matched.budget import BUDGET_KEYS, common_budget, training_budget
from deepbandits.experiments.matched.markdown import format_matched
from deepbandits.experiments.matched.protocol import (
    DESCRIPTION,
    MATCHED,
    MATCHED_BUDGET,
    MATCHED_POLICIES,
    QUICK_MATCHED,
    MatchedProtocol,
    matched_protocol,
)
from deepbandits.experiments.matched.tunings import (
    CONFIDENCE,
    Tuning,
    is_finished,
    result_rows,
    run_tunings,
)
from deepbandits.experiments.tune import search_space


def run_matched(
    out: str | Path,
    *,
    envs: Sequence[str] | None = None,
    n_trials: int | None = None,
    eval_seeds: Sequence[int] | None = None,
    tuning_seeds: Sequence[int] | None = None,
    T: int | Mapping[str, int] | None = None,
    jobs: int = 1,
    progress: bool = True,
    quick: bool = False,
    policies: Sequence[str] | None = None,
    budget: Mapping[str, Any] | None = None,
    protocol: MatchedProtocol | None = None,
) -> pd.DataFrame:
    """Run the matched protocol (see the module documentation) into ``out``.

    Parameters
    ----------
    out : str or Path
        Output folder; a repeated call resumes every unfinished tuning and reuses the finished.
    envs, n_trials, eval_seeds, tuning_seeds, policies, budget : optional
        Replace the protocol's settings (:class:`MatchedProtocol`).
    T : int or mapping, optional
        Rounds per run: one for every environment, or per environment.
    jobs : int, default=1
        Tunings run in parallel worker processes of a
        :class:`~deepbandits.experiments.executors.LocalExecutor` (each run is
        single-threaded); 1: one after another in this process.
    progress : bool, default=True
        A progress bar over the (environment, policy) tunings.
    quick : bool, default=False
        Start from :data:`QUICK_MATCHED` instead of :data:`MATCHED`.
    protocol : MatchedProtocol, optional
        Start from this protocol instead of :data:`MATCHED` / :data:`QUICK_MATCHED` (``quick``
        is then ignored; the other arguments still replace its settings).

    Returns
    -------
    pandas.DataFrame
        One row per environment and policy (also ``out/matched.csv``): tuned and untuned final
        regret mean and std over the evaluation seeds, the best parameters, the trials, the
        paired difference with the reference policy (``diff_*``, empty on its own row; and
        ``untuned_diff_*`` for the untuned settings) and the per-seed final regrets.
        ``out/matched.md`` holds the Markdown report (:func:`format_matched`).

    Raises
    ------
    InputValueError
        For bad settings (:meth:`MatchedProtocol.check`), unequal resolved training budgets, a
        bad policy or environment specification, or a study in ``out`` made with other settings.
    FileNotFoundError
        When a real dataset is missing and cannot be downloaded.
    ConcurrentUseError
        When another process is writing into ``out`` (or into one of its tunings' folders).
    """
    jobs = check_int(jobs, "jobs", minimum=1)
    protocol = matched_protocol(
        quick=quick,
        envs=envs,
        policies=policies,
        n_trials=n_trials,
        eval_seeds=eval_seeds,
        tuning_seeds=tuning_seeds,
        T=T,
        budget=budget,
        base=protocol,
    )
    out = Path(out)
    specs = {p: protocol.policy_spec(p) for p in protocol.policies}
    tasks: list[Tuning] = []
    budgets: dict[str, dict[str, Any]] = {}
    for env_spec in protocol.envs:
        T_env = protocol.horizon(env_spec)
        env = build_env(env_spec, T_env)  # a bad spec or a missing dataset fails here
        budgets[env_spec] = common_budget(
            {spec: training_budget(spec, env, T_env) for spec in specs.values()}, env_spec
        )
        for policy, spec in specs.items():
            names = tuple(n for n in protocol.search if n in search_space(spec))
            if not names:
                raise InputValueError(f"{spec!r} searches none of {', '.join(protocol.search)}")
            tasks.append(
                Tuning(
                    env=env_spec,
                    policy=policy,
                    spec=spec,
                    T=T_env,
                    tuning_seeds=tuple(protocol.tuning_seeds),
                    eval_seeds=tuple(protocol.eval_seeds),
                    n_trials=protocol.n_trials,
                    search=names,
                    sampler_seed=protocol.sampler_seed,
                    out=out / label_of(env_spec) / label_of(policy),
                )
            )
    with folder_lock(out):
        todo = [t for t in tasks if not is_finished(t)]
        with LocalExecutor(min(jobs, max(1, len(todo)))) as executor:
            run_tunings(todo, executor, progress)
        table = pd.DataFrame(result_rows(tasks, protocol.reference))
        write_atomic(out / "matched.csv", table.to_csv(index=False))
        write_atomic(out / "matched.md", format_matched(table, protocol, budgets) + "\n")
        settings = {
            "protocol": asdict(protocol),
            "policy_specs": specs,
            "training_budgets": budgets,
        }
        write_atomic(out / "matched.json", json.dumps(settings, indent=2, default=str) + "\n")
    return table


__all__ = [
    "BUDGET_KEYS",
    "CONFIDENCE",
    "DESCRIPTION",
    "MATCHED",
    "MATCHED_BUDGET",
    "MATCHED_POLICIES",
    "QUICK_MATCHED",
    "MatchedProtocol",
    "format_matched",
    "matched_protocol",
    "run_matched",
    "training_budget",
]
