"""Hyperparameter tuning with Optuna (``deepbandits tune``).

:func:`tune` searches a policy's declared hyperparameters (:func:`search_space`, from
:func:`~deepbandits.policies.policy_info`) for the lowest mean final cumulative regret over a set of
*tuning* seeds, then compares the best setting with the untuned one on separate *evaluation*
seeds (:func:`~deepbandits.experiments.compare.compare`), so the reported gain is not measured on
the seeds it was selected on; :attr:`TuneResult.verdict` says whether the tuned setting beats
the untuned one there (:mod:`~deepbandits.experiments.tune.verdict`).

The first trial is always the untuned setting (the policy's own values, schedule fields
resolved), so the best setting is never worse than it on the tuning seeds; a default outside
the declared search space (``feature_dim=20`` against 16, 32, 64) is added to it
(:func:`~deepbandits.experiments.tune.space.covering`, recorded as ``widened`` in
``tune.json``).

Layout of an output folder::

    out/study.db     the Optuna study (SQLite); the same call again resumes it
    out/trials.csv   one row per trial: number, state, value, the parameters it ran with
    out/tune.json    the settings, the search space, the best setting and the evaluation table
    out/eval/        compare() of the untuned and the best specification on the evaluation seeds

Trials run one after another, each run single-threaded, so one ``seed`` gives the same trials
(and the same best setting) every time. A trial reports its cumulative regret every
``T // 10`` rounds and is stopped early when it is worse than the median of the finished trials
at the same point (:class:`CumulativeMedianPruner`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.trial import FrozenTrial, TrialState
from tqdm.auto import tqdm

from deepbandits._io import folder_lock, write_atomic
from deepbandits._validation import check_int, check_positive
from deepbandits._version import __version__
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import compare
from deepbandits.experiments.jobs import build_env
from deepbandits.experiments.runner import run
from deepbandits.experiments.tune.space import DIGITS, covering, round_sig, rounded, search_space
from deepbandits.experiments.tune.study import (
    STUDY_NAME,
    CumulativeMedianPruner,
    check_seeds,
    counts_toward_trials,
    open_study,
    trials_table,
)
from deepbandits.experiments.tune.verdict import Verdict, judge
from deepbandits.policies import make_policy
from deepbandits.policies.space import Param
from deepbandits.specs import parse_spec, with_params

#: Finished trials before pruning starts.
PRUNER_STARTUP_TRIALS = 5
#: Intermediate reports per tuning seed.
REPORTS_PER_SEED = 10
#: Failures that end one trial (recorded in trials.csv) rather than the whole study.
TRIAL_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    ArithmeticError,
    np.linalg.LinAlgError,
)


@dataclass
class TuneResult:
    """What :func:`tune` found.

    Attributes
    ----------
    best_params : dict
        The best searched values, reals rounded to :data:`DIGITS` significant digits.
    best_spec : str
        The policy specification with ``best_params`` added, e.g.
        ``"linucb:alpha=0.3121,lam=2.05"``; ``deepbandits compare --policy`` accepts it.
    best_value : float
        Its mean final cumulative regret over the tuning seeds.
    study : optuna.Study
        The whole study (every trial, their intermediate values).
    summary : pandas.DataFrame
        :func:`~deepbandits.experiments.compare.compare`'s table on the evaluation seeds: the
        untuned specification (first row), then ``best_spec``.
    path : Path
        ``out/tune.json``.
    default_spec : str
        The specification as given (the untuned baseline).
    verdict : Verdict or None
        The tuned setting against the untuned one on the evaluation seeds
        (``verdict.beats_untuned``, ``verdict.message``).
    """

    best_params: dict[str, Any]
    best_spec: str
    best_value: float
    study: optuna.Study
    summary: pd.DataFrame
    path: Path
    default_spec: str = ""
    verdict: Verdict | None = None


def tune(
    policy_spec: str,
    env_spec: str,
    *,
    T: int,
    tuning_seeds: Sequence[int],
    eval_seeds: Sequence[int],
    out: str | Path,
    n_trials: int | None = None,
    timeout: float | None = None,
    search: Sequence[str] | str | None = None,
    seed: int = 0,
    jobs: int = 1,
    progress: bool = True,
) -> TuneResult:
    """Tune a policy's hyperparameters with Optuna, then evaluate the best on other seeds.

    Parameters
    ----------
    policy_spec : str
        ``"NAME[:key=value,...]"`` as for ``deepbandits compare --policy``; keys it gives are
        fixed, the rest of the class's ``search_space`` is searched (:func:`search_space`).
    env_spec : str
        ``"NAME[:key=value,...]"`` as for ``--env``; ``horizon`` defaults to ``T``.
    T : int
        Rounds per run.
    tuning_seeds : sequence of int
        Seeds each trial runs on; the objective is the mean final cumulative regret over them.
    eval_seeds : sequence of int
        Seeds the untuned and the best specification are compared on; disjoint from
        ``tuning_seeds``.
    out : str or Path
        Output folder (see the module documentation). An interrupted call resumes when repeated;
        a study made with another policy, environment, T, tuning seeds or search space is
        refused, and so is a second tuning into ``out`` while one runs
        (:class:`~deepbandits.errors.ConcurrentUseError`).
    n_trials : int, optional
        Trials in the study, those of an earlier call into ``out`` included.
    timeout : float, optional
        Seconds of tuning in this call. At least one of ``n_trials`` and ``timeout`` is needed.
    search : sequence of str or str, optional
        Search only these parameters (default: every declared one that is not fixed).
    seed : int, default=0
        Seed of the TPE sampler.
    jobs : int, default=1
        Parallel processes of the evaluation; trials always run one at a time.
    progress : bool, default=True
        Show a progress bar of trials (and of the evaluation runs).

    Returns
    -------
    TuneResult

    Raises
    ------
    InputValueError
        For a bad specification, overlapping or empty seeds, an unknown or fixed ``search``
        name, neither ``n_trials`` nor ``timeout``, a study in ``out`` made with other settings,
        or when no trial completed.
    """
    T = check_int(T, "T", minimum=1)
    tuning = check_seeds(tuning_seeds, "tuning")
    evaluation = _disjoint(tuning, check_seeds(eval_seeds, "evaluation"))
    budget = _Budget.of(n_trials, timeout)
    seed = check_int(seed, "seed", minimum=0)
    jobs = check_int(jobs, "jobs", minimum=1)
    plan = _plan(policy_spec.strip(), env_spec, T, tuning, search)
    out = Path(out)
    with folder_lock(out):  # one tuning at a time in out
        pruner = CumulativeMedianPruner(PRUNER_STARTUP_TRIALS, n_warmup_steps=plan.warmup)
        study = _run_trials(plan, out, seed, pruner, budget, progress)
        trials_path = out / "trials.csv"
        write_atomic(trials_path, trials_table(study, plan.space).to_csv(index=False))
        counts = _trial_counts(study, trials_path)
        best = study.best_trial
        best_params, best_spec = _best_setting(best, plan)
        started = time.perf_counter()
        specs = [plan.policy_spec, best_spec]
        summary = compare(
            specs, env_spec, evaluation, T, out / "eval", jobs=jobs, progress=progress
        )
        verdict = judge(summary, plan.policy_spec, best_spec, best_params == rounded(plan.first))
        record = {
            **_settings(plan, evaluation, seed, pruner),
            "best_params": best_params,
            "best_spec": best_spec,
            "best_value": best.value,
            "best_trial": best.number,
            "default_spec": plan.policy_spec,
            "n_trials": counts,
            "eval": json.loads(summary.to_json(orient="records")),
            "verdict": verdict.to_dict(),
            "eval_seconds": time.perf_counter() - started,
            "files": {
                "study": str(out / "study.db"),
                "trials": str(trials_path),
                "eval": str(out / "eval"),
            },
        }
        path = write_atomic(out / "tune.json", json.dumps(record, indent=2, default=str) + "\n")
        return TuneResult(
            best_params=best_params,
            best_spec=best_spec,
            best_value=float(best.value),  # type: ignore[arg-type]
            study=study,
            summary=summary,
            path=path,
            default_spec=plan.policy_spec,
            verdict=verdict,
        )


@dataclass(frozen=True)
class _Budget:
    """How long a call tunes: trials in the study (``n_trials``) and seconds of this call."""

    n_trials: int | None
    timeout: float | None

    @classmethod
    def of(cls, n_trials: int | None, timeout: float | None) -> _Budget:
        """The budget of :func:`tune`'s arguments, checked."""
        if n_trials is None and timeout is None:
            raise InputValueError("give n_trials or timeout (or both)")
        return cls(
            None if n_trials is None else check_int(n_trials, "n_trials", minimum=1),
            None if timeout is None else check_positive(timeout, "timeout"),
        )


@dataclass(frozen=True)
class _Plan:
    """What a study searches: the policy (its name and the keys its specification fixes), the
    environment, ``T`` and the tuning seeds, the search space (``widened`` where the untuned
    value lay outside it), and the untuned values of the searched keys (the first trial)."""

    policy_spec: str
    env_spec: str
    name: str
    fixed: dict[str, Any]
    T: int
    tuning_seeds: list[int]
    space: dict[str, Param]
    widened: dict[str, Any]
    first: dict[str, Any]

    @property
    def every(self) -> int:
        """Rounds between two reports of a trial's cumulative regret."""
        return max(1, self.T // REPORTS_PER_SEED)

    @property
    def warmup(self) -> int:
        """Steps without pruning: the first half of the first tuning seed."""
        return self.T // 2

    def attrs(self) -> dict[str, Any]:
        """The settings a study in ``out`` must have been made with to be resumed."""
        return {
            "policy": self.policy_spec,
            "env": self.env_spec,
            "T": self.T,
            "tuning_seeds": self.tuning_seeds,
            "search_space": {k: p.describe() for k, p in self.space.items()},
        }


def _disjoint(tuning: list[int], evaluation: list[int]) -> list[int]:
    """The evaluation seeds, refused when one is also a tuning seed."""
    overlap = sorted(set(tuning) & set(evaluation))
    if overlap:
        raise InputValueError(
            "tuning seeds and evaluation seeds must be disjoint, but "
            f"{', '.join(map(str, overlap))} {'is' if len(overlap) == 1 else 'are'} in both"
        )
    return evaluation


def _plan(
    policy_spec: str,
    env_spec: str,
    T: int,
    tuning: list[int],
    search: Sequence[str] | str | None,
) -> _Plan:
    """The plan of a study; a bad specification fails here, before any trial."""
    space = search_space(policy_spec, search)
    name, fixed = parse_spec(policy_spec)
    built = make_policy(name, env=build_env(env_spec, T), **fixed)
    schedule = getattr(built, "train_schedule_", None)  # schedule fields left None resolve here
    untuned = {
        k: getattr(schedule, k) if v is None and hasattr(schedule, k) else v
        for k, v in built.get_params().items()
    }
    space, widened = covering(space, untuned)
    first = {k: untuned[k] for k in space}
    return _Plan(policy_spec, env_spec, name, fixed, T, tuning, space, widened, first)


def _objective(plan: _Plan) -> Callable[[optuna.Trial], float]:
    """A trial: the mean final cumulative regret over the tuning seeds of the setting it
    suggests, reported every :attr:`_Plan.every` rounds (and pruned on those reports)."""

    def objective(trial: optuna.Trial) -> float:
        params = rounded({k: p.suggest(trial, k) for k, p in plan.space.items()})
        # the pruner needs PRUNER_STARTUP_TRIALS completed trials; asking it costs a database read
        completed = trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        may_prune = len(completed) >= PRUNER_STARTUP_TRIALS
        finals = []
        for i, s in enumerate(plan.tuning_seeds):
            env = build_env(plan.env_spec, plan.T)
            try:
                policy = make_policy(plan.name, env=env, **plan.fixed, **params)

                def report(t: int, cum_regret: float, offset: int = i * plan.T) -> None:
                    trial.report(cum_regret, offset + t)
                    if may_prune and offset + t >= plan.warmup and trial.should_prune():
                        raise optuna.TrialPruned(f"regret {cum_regret:.1f} at round {t}")

                result = run(
                    policy,
                    env,
                    plan.T,
                    seed=s,
                    threads=1,
                    callback=report,
                    callback_every=plan.every,
                )
            except TRIAL_ERRORS as exc:
                trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
                raise
            finals.append(result.final_regret)
            trial.set_user_attr("final_regrets", finals)
        return float(np.mean(finals))

    return objective


def _run_trials(
    plan: _Plan,
    out: Path,
    seed: int,
    pruner: optuna.pruners.BasePruner,
    budget: _Budget,
    progress: bool,
) -> optuna.Study:
    """Open (or resume) the study in ``out`` and run the trials the budget leaves, one after
    another; the first of a new study is the untuned setting."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = open_study(out, plan.attrs(), seed, pruner)
        if not study.trials:
            study.enqueue_trial(plan.first)  # so the tuned setting is never worse on tuning seeds
        done = sum(counts_toward_trials(t) for t in study.trials)
        todo = None if budget.n_trials is None else max(0, budget.n_trials - done)
        if todo != 0:
            bar = tqdm(total=budget.n_trials, initial=done, desc="trials", disable=not progress)
            try:
                study.optimize(
                    _objective(plan),
                    n_trials=todo,
                    timeout=budget.timeout,
                    catch=TRIAL_ERRORS,
                    callbacks=[_advance(bar)],
                )
            finally:
                bar.close()
    finally:
        optuna.logging.set_verbosity(verbosity)
    return study


def _advance(bar: tqdm) -> Callable[[optuna.Study, FrozenTrial], None]:
    """A study callback: one step of ``bar``, which shows the best value so far."""

    def advance(study: optuna.Study, trial: FrozenTrial) -> None:
        bar.update(1)
        best = [t.value for t in study.trials if t.state == TrialState.COMPLETE]
        if best:
            bar.set_postfix_str(f"best {min(best):.1f}")  # type: ignore[type-var]

    return advance


def _trial_counts(study: optuna.Study, trials_path: Path) -> dict[str, int]:
    """Trials completed, pruned and failed; refused when none completed."""
    states = [t.state for t in study.trials]
    n = {s.name.lower(): states.count(s) for s in (TrialState.COMPLETE, TrialState.PRUNED)}
    n["failed"] = states.count(TrialState.FAIL)
    if not n["complete"]:
        errors = [t.user_attrs["error"] for t in study.trials if "error" in t.user_attrs]
        raise InputValueError(
            f"no trial completed ({n['pruned']} pruned, {n['failed']} failed"
            + (f"; first error: {errors[0]}" if errors else "")
            + f"); see {trials_path}"
        )
    return n


def _best_setting(best: FrozenTrial, plan: _Plan) -> tuple[dict[str, Any], str]:
    """The best trial's searched values (rounded) and the specification that sets them."""
    best_params = rounded({k: best.params[k] for k in plan.space})
    best_spec = with_params(plan.policy_spec, best_params)
    if parse_spec(best_spec) != (plan.name, {**plan.fixed, **best_params}):
        raise AssertionError(f"{best_spec!r} does not read back as {plan.name} with {best_params}")
    return best_params, best_spec


def _settings(
    plan: _Plan, evaluation: list[int], seed: int, pruner: CumulativeMedianPruner
) -> dict[str, Any]:
    """What ``tune.json`` records of the settings: the library, the study's plan, the sampler
    and the pruner."""
    attrs = plan.attrs()
    return {
        "library": "deepbandits",
        "version": __version__,
        **{k: attrs[k] for k in ("policy", "env", "T", "tuning_seeds")},
        "eval_seeds": evaluation,
        "search_space": attrs["search_space"],
        "widened": plan.widened,
        "fixed_params": plan.fixed,
        "sampler": {"name": "TPESampler", "seed": seed},
        "pruner": {
            "name": type(pruner).__name__,
            "n_startup_trials": pruner.n_startup_trials,
            "n_warmup_steps": pruner.n_warmup_steps,
            "report_every": plan.every,
        },
    }


__all__ = [
    "DIGITS",
    "STUDY_NAME",
    "CumulativeMedianPruner",
    "TuneResult",
    "Verdict",
    "covering",
    "round_sig",
    "search_space",
    "trials_table",
    "tune",
    "with_params",
]
