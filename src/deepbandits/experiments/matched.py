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

Each tuning resumes from its study when the call is repeated (a killed run loses at most the
trial in progress); a tuning whose trials and evaluation runs are all on disk is not touched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
from tqdm.auto import tqdm

from deepbandits._io import folder_lock, worker_pool, write_atomic
from deepbandits._validation import check_int
from deepbandits.envs import Environment
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.runner import RunResult, UnfinishedRunError, load_finished
from deepbandits.experiments.specs import parse_spec
from deepbandits.experiments.tune import (
    STUDY_NAME,
    _counts,
    _make_env,
    _seeds,
    search_space,
    tune,
    with_params,
)
from deepbandits.metrics.comparison import PairedDifference, mean_std, paired_difference
from deepbandits.policies import make_policy

#: The policies of the matched protocol.
MATCHED_POLICIES: tuple[str, ...] = (
    "neural-lingreedy",
    "neural-linucb",
    "neural-sigma2-linucb",
    "neural-sigma2-linucb:variance=oracle",
    "neural-ucb",
)
#: Confidence of the paired intervals.
CONFIDENCE = 0.95
#: Resolved training settings that must be equal across the policies of one environment.
BUDGET_KEYS = (
    "hidden",
    "n_layers",
    "optimizer",
    "weight_decay",
    "max_grad_norm",
    "train_every",
    "train_start",
    "warmup_every",
    "train_steps",
    "batch_size",
    "trainings",
    "sample_gradients",
)


@dataclass(frozen=True)
class MatchedProtocol:
    """The settings of the matched protocol (:data:`MATCHED`; :data:`QUICK_MATCHED` for a smoke
    test).

    Attributes
    ----------
    envs : tuple of str
        Environment specifications ``NAME[:key=value,...]``.
    policies : tuple of str
        Policy specifications; none may set a key of ``budget``.
    reference : str
        The policy every other is compared with (one of ``policies``).
    T : dict
        Rounds per run by environment specification or name; others get ``default_T``.
    default_T : int
        Rounds per run of an environment not in ``T``.
    tuning_seeds, eval_seeds : tuple of int
        Seeds of every trial (the objective is their mean final regret) and of the evaluation;
        disjoint.
    n_trials : int
        Optuna trials per environment and policy.
    search : tuple of str
        Parameters searched, each only for the policies that search it.
    budget : dict
        Training settings added to the specification of every policy that takes them (e.g.
        ``{"train_steps": 100}``); empty: the library defaults (with the environment's
        recommended settings, the same for all). Never searched.
    sampler_seed : int
        Seed of every study's TPE sampler.
    """

    envs: tuple[str, ...] = ("h1", "h2", "h3", "shuttle", "covertype", "mnist")
    policies: tuple[str, ...] = MATCHED_POLICIES
    reference: str = "neural-sigma2-linucb"
    T: dict[str, int] = field(default_factory=lambda: {"mnist": 2000})
    default_T: int = 5000
    tuning_seeds: tuple[int, ...] = (100, 101)
    eval_seeds: tuple[int, ...] = tuple(range(10))
    n_trials: int = 20
    search: tuple[str, ...] = ("alpha", "lam", "lr")
    budget: dict[str, Any] = field(default_factory=dict)
    sampler_seed: int = 0

    def horizon(self, env_spec: str) -> int:
        """Rounds per run on ``env_spec``: ``T[env_spec]``, else ``T[name]``, else
        ``default_T``."""
        if env_spec in self.T:
            return int(self.T[env_spec])
        return int(self.T.get(parse_spec(env_spec)[0], self.default_T))

    def policy_spec(self, policy: str) -> str:
        """``policy`` with the keys of :attr:`budget` that it takes appended."""
        name, _ = parse_spec(policy)
        accepted = make_policy(name).get_params()
        return with_params(policy, {k: v for k, v in self.budget.items() if k in accepted})

    def check(self) -> None:
        """Validate the settings (before anything runs).

        Raises
        ------
        ValueError
            For empty or repeated environments or policies, a ``reference`` not among the
            policies, overlapping or empty seed sets, a bad T or ``n_trials``, a budget key that
            no policy takes or that is searched or that a policy specification also sets, or a
            search name that no policy searches.
        """
        if not self.envs:
            raise ValueError("no environment to run")
        if not self.policies:
            raise ValueError("no policy to run")
        for what, items in (("environment", self.envs), ("policy", self.policies)):
            labels = [label_of(s.strip()) for s in items]
            repeated = sorted({s for s in labels if labels.count(s) > 1})
            if repeated:
                raise ValueError(f"{what} {', '.join(repeated)} given twice")
        if self.reference not in self.policies:
            raise ValueError(
                f"the reference policy {self.reference!r} is not among the policies "
                f"({', '.join(self.policies)})"
            )
        tuning = _seeds(self.tuning_seeds, "tuning")
        evaluation = _seeds(self.eval_seeds, "evaluation")
        overlap = sorted(set(tuning) & set(evaluation))
        if overlap:
            raise ValueError(
                "tuning seeds and evaluation seeds must be disjoint, but "
                f"{', '.join(map(str, overlap))} {'is' if len(overlap) == 1 else 'are'} in both"
            )
        check_int(self.n_trials, "n_trials", minimum=1)
        check_int(self.default_T, "T", minimum=1)
        for key, value in self.T.items():
            check_int(value, f"T of {key}", minimum=1)
        if not self.search:
            raise ValueError("the protocol searches no parameter")
        searched = set(self.search) & set(self.budget)
        if searched:
            raise ValueError(
                f"the budget fixes {', '.join(sorted(searched))}, which the protocol searches"
            )
        accepted: set[str] = set()
        declared: set[str] = set()
        for policy in self.policies:
            name, given = parse_spec(policy)
            params = make_policy(name).get_params()
            accepted |= set(params)
            both = sorted(set(given) & set(self.budget))
            if both:
                raise ValueError(
                    f"{policy!r} sets {', '.join(both)}, which the budget fixes for every policy"
                )
            declared |= set(search_space(policy))
        unused = sorted(set(self.budget) - accepted)
        if unused:
            raise ValueError(f"no policy takes the budget key(s) {', '.join(unused)}")
        unknown = sorted(set(self.search) - declared)
        if unknown:
            raise ValueError(f"no policy searches {', '.join(unknown)}")


#: The full experiment.
MATCHED = MatchedProtocol()
#: What ``deepbandits list`` says about the experiment.
DESCRIPTION = (
    "matched protocol: Neural-LinGreedy, Neural-LinUCB, Neural-σ²-LinUCB (range, oracle) and "
    "NeuralUCB with one network budget and one tuning budget (alpha, lam, lr), paired against "
    "Neural-σ²-LinUCB on fresh seeds ["
    + "; ".join(f"{e} T={MATCHED.horizon(e)}" for e in MATCHED.envs)
    + f"; {MATCHED.n_trials} trials; tuning seeds "
    + ",".join(map(str, MATCHED.tuning_seeds))
    + f"; {len(MATCHED.eval_seeds)} evaluation seeds; --quick: a smoke test]"
)
#: Smoke-test scale (a few minutes on 2 cores): h1 and shuttle, T = 1000, 3 trials, 2 tuning
#: seeds, 3 evaluation seeds and a tenth of the default training steps (100 per training) for
#: every policy. It checks the pipeline, not the paper's claim.
QUICK_MATCHED = MatchedProtocol(
    envs=("h1", "shuttle"),
    T={},
    default_T=1000,
    tuning_seeds=(100, 101),
    eval_seeds=(0, 1, 2),
    n_trials=3,
    budget={"train_steps": 100},
)


# ---------------------------------------------------------------------------- budgets
def training_budget(policy_spec: str, env: Environment, T: int) -> dict[str, Any]:
    """The network and training schedule ``policy_spec`` runs with on ``env`` for ``T`` rounds
    (built as every run builds it, with the environment's recommended settings).

    Returns
    -------
    dict
        :data:`BUDGET_KEYS` (``trainings``: trainings in ``T`` rounds; ``sample_gradients``:
        trainings × ``train_steps`` × ``batch_size``), plus ``feature_dim`` for policies with a
        feature layer.
    """
    name, params = parse_spec(policy_spec)
    policy = make_policy(name, env=env, **params)
    p = policy.get_params()
    schedule = policy.train_schedule_  # type: ignore[attr-defined]
    trainings = schedule.n_trainings(T)
    budget = {k: p[k] for k in ("hidden", "n_layers", "optimizer", "weight_decay", "max_grad_norm")}
    budget.update(
        train_every=schedule.train_every,
        train_start=schedule.train_start,
        warmup_every=schedule.warmup_every,
        train_steps=schedule.train_steps,
        batch_size=schedule.batch_size,
        trainings=trainings,
        sample_gradients=trainings * schedule.train_steps * schedule.batch_size,
    )
    if "feature_dim" in p:
        budget["feature_dim"] = p["feature_dim"]
    return budget


def _common_budget(budgets: dict[str, dict[str, Any]], env_spec: str) -> dict[str, Any]:
    """The budget shared by every policy; raises when two policies differ in any of it."""
    first = next(iter(budgets))
    for spec, budget in budgets.items():
        for key in (*BUDGET_KEYS, "feature_dim"):
            if key in budget and key in budgets[first] and budget[key] != budgets[first][key]:
                raise ValueError(
                    f"unequal training budget on {env_spec}: {first} has {key}="
                    f"{budgets[first][key]!r}, {spec} has {key}={budget[key]!r}"
                )
    common = {k: budgets[first][k] for k in BUDGET_KEYS}
    dims = {b["feature_dim"] for b in budgets.values() if "feature_dim" in b}
    if dims:
        common["feature_dim"] = dims.pop()
    return common


# ---------------------------------------------------------------------------- tunings
@dataclass(frozen=True)
class _Task:
    """One (environment, policy) tuning, picklable for a worker process."""

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


def _run_task(task: _Task) -> Path:
    """Tune one policy on one environment (resuming its study); returns ``tune.json``."""
    result = tune(
        task.spec,
        task.env,
        T=task.T,
        tuning_seeds=task.tuning_seeds,
        eval_seeds=task.eval_seeds,
        out=task.out,
        n_trials=task.n_trials,
        search=list(task.search),
        seed=task.sampler_seed,
        jobs=1,
        progress=False,
    )
    return result.path


def _run_stem(task: _Task, spec: str, seed: int) -> Path:
    return task.out / "eval" / label_of(spec) / f"seed_{seed}"


def _finished(task: _Task) -> bool:
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
                load_finished(_run_stem(task, spec, seed))
            except UnfinishedRunError:
                return False
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(
            study_name=STUDY_NAME, storage=f"sqlite:///{(task.out / 'study.db').resolve()}"
        )
        done = sum(_counts(t) for t in study.get_trials(deepcopy=False))
    except (KeyError, ValueError, RuntimeError):
        return False
    finally:
        optuna.logging.set_verbosity(verbosity)
    return done >= task.n_trials


def _run_all(todo: list[_Task], jobs: int, progress: bool) -> None:
    bar = tqdm(total=len(todo), desc="tunings", disable=not progress or not todo)
    try:
        if jobs > 1 and len(todo) > 1:
            with worker_pool(min(jobs, len(todo))) as pool:
                futures = {pool.submit(_run_task, task): task for task in todo}
                for future in as_completed(futures):
                    future.result()
                    task = futures[future]
                    bar.set_postfix_str(f"{task.env} / {task.policy} done")
                    bar.update()
        else:
            for task in todo:
                bar.set_postfix_str(f"{task.env} / {task.policy}")
                _run_task(task)
                bar.update()
    finally:
        bar.close()


# ---------------------------------------------------------------------------- the table
def _finals(task: _Task, spec: str) -> np.ndarray:
    """Final regrets of ``spec``'s evaluation runs, read back from disk, in seed order."""
    return np.array(
        [RunResult.load(_run_stem(task, spec, s)).final_regret for s in task.eval_seeds]
    )


def _wall(task: _Task, spec: str) -> float:
    walls = [
        json.loads(_run_stem(task, spec, s).with_suffix(".json").read_text()).get("wall_seconds")
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


def _rows(tasks: list[_Task], reference: str) -> list[dict[str, Any]]:
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
                "eval_seeds": _seeds_text(t.eval_seeds),
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


# ---------------------------------------------------------------------------- Markdown
def _seeds_text(seeds: Sequence[int]) -> str:
    """``(0, 1, 2, 5)`` → ``"0-2,5"``."""
    parts: list[str] = []
    seeds = list(seeds)
    i = 0
    while i < len(seeds):
        j = i
        while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
            j += 1
        parts.append(str(seeds[i]) if j == i else f"{seeds[i]}-{seeds[j]}")
        i = j + 1
    return ",".join(parts)


def _budget_text(budget: dict[str, Any], T: int) -> str:
    b = budget
    before = (
        f"every {b['warmup_every']} rounds before round {b['train_start']}, "
        if b["warmup_every"]
        else f"none before round {b['train_start']}, "
    )
    text = (
        f"hidden {b['hidden']} × {b['n_layers']} layers, {b['optimizer']} (weight decay "
        f"{b['weight_decay']}, gradient clip {b['max_grad_norm']}), {b['train_steps']} steps of "
        f"batch {b['batch_size']} per training; trainings {before}every {b['train_every']} from "
        f"it: {b['trainings']} in {T} rounds = {b['sample_gradients']:,} sample gradients per run"
    )
    if "feature_dim" in budget:
        text += f"; feature dimension d′ = {b['feature_dim']} (neural-linear policies)"
    return text


def _number(x: float) -> str:
    return f"{x:+.1f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def _diff_cell(row: pd.Series, prefix: str) -> str:
    if row[f"{prefix}_significant"] is None or pd.isna(row[f"{prefix}_mean"]):
        return "—"
    text = (
        f"{_number(row[f'{prefix}_mean'])} [{_number(row[f'{prefix}_low'])}, "
        f"{_number(row[f'{prefix}_high'])}]"
    )
    return f"**{text}** \\*" if row[f"{prefix}_significant"] else text


def _params_text(best_params: str) -> str:
    params = json.loads(best_params)
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    )


def _verdict(rows: pd.DataFrame, reference: str) -> str:
    best = rows.loc[rows["tuned_mean"].idxmin(), "policy"]
    others = rows[rows["policy"] != reference]
    below = int((others["diff_significant"].astype(bool) & (others["diff_mean"] > 0)).sum())
    above = int((others["diff_significant"].astype(bool) & (others["diff_mean"] < 0)).sum())
    return (
        f"Lowest tuned mean regret: **{best}**. Tuned {reference} is significantly lower than "
        f"{below} of the {len(others)} other policies and significantly higher than {above}."
    )


def format_matched(
    table: pd.DataFrame, protocol: MatchedProtocol, budgets: dict[str, dict[str, Any]]
) -> str:
    """The Markdown report of :func:`run_matched`: the settings (T, seeds, trials, searched
    names, the fixed training budget of each environment), then per environment a table of
    tuned and untuned final regret, best parameters and the paired differences with the
    reference policy."""
    ref = protocol.reference
    pct = round(100 * CONFIDENCE)
    searched = {}
    for row in table.drop_duplicates("policy").itertuples():
        searched[row.policy] = row.searched
    search_text = "; ".join(f"{p}: {s}" for p, s in searched.items())
    lines = [
        "# Matched protocol: equal network budgets, equal tuning",
        "",
        f"Does {ref} keep the lowest regret when every policy trains the same network on the "
        "same schedule and is tuned with the same budget?",
        "",
        "- **T** (rounds per run): "
        + ", ".join(f"{env} {protocol.horizon(env)}" for env in protocol.envs),
        f"- **tuning**: Optuna TPE (sampler seed {protocol.sampler_seed}), "
        f"{protocol.n_trials} trials per environment and policy, tuning seeds "
        f"{_seeds_text(protocol.tuning_seeds)} (objective: their mean final regret); "
        f"searched: {search_text} (one sampler seed: policies with the same search space are "
        "offered the same candidate settings)",
        f"- **evaluation seeds**: {_seeds_text(protocol.eval_seeds)} "
        f"({len(protocol.eval_seeds)} seeds, disjoint from the tuning seeds), for the tuned and "
        "the untuned (library default) setting of each policy",
        "- **fixed training budget** (the same for every policy, never searched; "
        + (
            "library defaults plus " + ", ".join(f"{k}={v}" for k, v in protocol.budget.items())
            if protocol.budget
            else "library defaults"
        )
        + ", with each environment's recommended settings applied to all):",
    ]
    for env in protocol.envs:
        lines.append(f"  - {env}: {_budget_text(budgets[env], protocol.horizon(env))}")
    lines += [
        f"- **paired difference**: policy − {ref} on the same evaluation seeds (tuned against "
        f"tuned, untuned against untuned), mean [{pct} % Student-t interval]; positive: more "
        f"regret than {ref}; bold with \\* : the interval excludes 0.",
        "",
    ]
    for env in protocol.envs:
        rows = table[table["env"] == env]
        lines += [
            f"## {env} (T = {protocol.horizon(env)})",
            "",
            "| policy | tuned final regret | untuned final regret | best params "
            f"| tuned − {ref} | untuned − {ref} |",
            "|---|---|---|---|---|---|",
        ]
        for _, row in rows.iterrows():
            lines.append(
                f"| {row['policy']} | {row['tuned_mean']:.1f} ± {row['tuned_std']:.1f} "
                f"| {row['untuned_mean']:.1f} ± {row['untuned_std']:.1f} "
                f"| {_params_text(row['best_params'])} | {_diff_cell(row, 'diff')} "
                f"| {_diff_cell(row, 'untuned_diff')} |"
            )
        lines += ["", _verdict(rows, ref), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- entry point
def matched_protocol(
    *,
    quick: bool = False,
    envs: Sequence[str] | None = None,
    policies: Sequence[str] | None = None,
    n_trials: int | None = None,
    eval_seeds: Sequence[int] | None = None,
    tuning_seeds: Sequence[int] | None = None,
    T: int | Mapping[str, int] | None = None,
    budget: Mapping[str, Any] | None = None,
    base: MatchedProtocol | None = None,
) -> MatchedProtocol:
    """``base`` (default :data:`MATCHED`, or :data:`QUICK_MATCHED` with ``quick``) with the
    given settings replaced, checked (:meth:`MatchedProtocol.check`); an int ``T`` applies to
    every environment, a mapping overrides single ones."""
    protocol = base if base is not None else QUICK_MATCHED if quick else MATCHED
    changes: dict[str, Any] = {}
    if envs is not None:
        changes["envs"] = tuple(s.strip() for s in envs)
    if policies is not None:
        changes["policies"] = tuple(s.strip() for s in policies)
    if n_trials is not None:
        changes["n_trials"] = n_trials
    if eval_seeds is not None:
        changes["eval_seeds"] = tuple(eval_seeds)
    if tuning_seeds is not None:
        changes["tuning_seeds"] = tuple(tuning_seeds)
    if isinstance(T, Mapping):
        changes["T"] = {**protocol.T, **T}
    elif T is not None:
        changes.update(T={}, default_T=T)
    if budget is not None:
        changes["budget"] = dict(budget)
    protocol = replace(protocol, **changes)
    protocol.check()
    return protocol


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
        Tunings run in parallel processes (each run is single-threaded); 1: one after another.
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
    ValueError
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
    tasks: list[_Task] = []
    budgets: dict[str, dict[str, Any]] = {}
    for env_spec in protocol.envs:
        T_env = protocol.horizon(env_spec)
        env = _make_env(env_spec, T_env)  # a bad spec or a missing dataset fails here
        budgets[env_spec] = _common_budget(
            {spec: training_budget(spec, env, T_env) for spec in specs.values()}, env_spec
        )
        for policy, spec in specs.items():
            names = tuple(n for n in protocol.search if n in search_space(spec))
            if not names:
                raise ValueError(f"{spec!r} searches none of {', '.join(protocol.search)}")
            tasks.append(
                _Task(
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
        _run_all([t for t in tasks if not _finished(t)], jobs, progress)
        table = pd.DataFrame(_rows(tasks, protocol.reference))
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
    "MATCHED",
    "MATCHED_POLICIES",
    "QUICK_MATCHED",
    "MatchedProtocol",
    "format_matched",
    "matched_protocol",
    "run_matched",
    "training_budget",
]
