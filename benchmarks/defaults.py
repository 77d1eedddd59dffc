"""Old against new defaults (not a test): ``python benchmarks/defaults.py``.

Runs each policy with two named settings, declared as data at the top of this file, on the
synthetic environments, the paper's datasets and three "own data" tables nobody tuned for, and
prints a Markdown table of final regret (and, for the classification bandits, accuracy, arms
never played over the last 1000 rounds and, of those, the arms locked out: the best arm in at
least 1 % of those rounds, :func:`~deepbandits.metrics.locked_out_arms`) per environment and
policy:

* ``old`` (:data:`OLD`): the library's settings before the defaults changed, as explicit
  keywords: ``preprocess="l2"`` for every classification environment, the keywords of
  :data:`OLD_POLICY` for each policy, and on the paper's datasets the network settings that
  ``env.policy_defaults`` used to recommend (:data:`OLD_DATASET_POLICY`: d′ = 64, H, t₀). The
  policy is built with ``make_policy(name, **keywords)`` and never sees the environment, so the
  library's current recommendations do not leak into it.
* ``new`` (:data:`NEW`): nothing passed, ``deepbandits.run("<policy name>", env, T, seed=s)``,
  which builds the policy with ``make_policy(name, env=env)`` exactly as the command line does.
* ``tuned`` (with ``--tuned DIR``): the ``best_spec`` of every ``tune.json`` written by
  ``deepbandits tune`` under DIR, for the (environment, policy) pairs of this benchmark, built
  like ``new`` (on the ``env`` of the tune, so with its keywords; an environment
  ``table:path=.../synth26.csv`` counts as ``synth26``).

Environments (``--envs``, comma-separated; default all, in this order): ``h1``, ``h2``, ``h3``
(d=20, K=4); own data built here from scikit-learn and played through
``make_env("classification", X=X, y=y, ...)``: ``digits`` (``load_digits``: 1,797 × 64, 10
classes, non-negative), ``synth26`` (``make_classification``: 8,000 × 16, 26 classes, shifted to
be non-negative) and ``synth2`` (6,000 × 10, 2 classes, ``abs(X) * 3``); the paper's datasets
``shuttle``, ``covertype``, ``mnist``, ``cifar10``, read from ``$DEEPBANDITS_DATA`` (never
downloaded here: a missing file stops the benchmark before any run, with the library's message).
Every environment gets ``horizon=T`` and the run's seed, as ``deepbandits compare`` gives them.

Each run is single-threaded (``deepbandits.run(threads=1)``); ``--jobs N`` runs N at a time in
spawned processes. Each finished run is saved at once as one small JSON file
(``OUT/runs/T<T>/<env>/<setting>/<policy>/seed_<s>.json``, written atomically), so an
interrupted benchmark resumes where it stopped when the same command is repeated. A saved run is
reused only if its environment and policy parameters (as ``get_params()`` reports them, seed
aside) equal those the setting gives now; otherwise the benchmark stops and names the
difference (``--redo-changed`` re-runs such runs instead). Changes to the library's code that
leave every parameter as it was are not detected: use a new ``--out`` then.

Outputs: the table on stdout and in ``OUT/defaults.md``; every run of the call's selection in
``OUT/runs.csv`` (env, setting, policy, seed, T, final_regret, cumulative_reward,
accuracy_last, unplayed_arms_last, locked_out_arms_last, n_arms, wall_seconds, policy_spec,
env_spec, ...; the classification columns are empty for h1–h3). ``--no-run`` prints the table
of the finished runs without starting the missing ones.

Cost: T = 5000, 3 seeds, 4 policies, 10 environments and 2 settings are 240 runs. On h1–h3 and
the small tables a neural run takes seconds to a minute; on MNIST and CIFAR-10 each neural run
takes many minutes (hundreds of 1000-step trainings on a 784·10 or 3072·10 input layer), and
LinUCB on CIFAR-10 several minutes (ten 3072 × 3072 ridge inverses). Leave them out with
``--envs``::

    export DEEPBANDITS_DATA=/path/to/data     # optional: default ~/.cache/deepbandits/data
    python benchmarks/defaults.py --jobs 2 \\
        --envs h1,h2,h3,digits,synth26,synth2,shuttle,covertype      # everything but the slow two
    python benchmarks/defaults.py --jobs 2 --envs mnist,cifar10       # later: the slow two
    python benchmarks/defaults.py --no-run                            # the whole table
    python benchmarks/defaults.py --tuned results/tune --envs h1      # + tuned rows
    python benchmarks/defaults.py --envs h1,synth2 --policies linucb --T 300 --seeds 0  # smoke
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from tqdm.auto import tqdm

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.experiments.runner import give_horizon
from deepbandits.experiments.tune import with_params
from deepbandits.metrics import locked_out_arms, unplayed_arms, window_accuracy
from deepbandits.networks.learner import PLAIN_TRAINING
from deepbandits.specs import parse_seeds, parse_spec


# ---------------------------------------------------------------------------- the settings
@dataclass(frozen=True)
class Setting:
    """A named way of building the environment and the policy of a run.

    Attributes
    ----------
    classification_env : dict
        Keywords given to every classification environment (own data and paper datasets).
    policy : dict
        Keywords per policy name, given on top of the name. With ``every_policy_listed``, a
        policy missing here is refused (the benchmark names it before any run).
    dataset_policy : dict
        Keywords per paper dataset, given to the policies that accept them unless ``policy``
        sets them (what ``env.policy_defaults`` used to do).
    env_recommendations : bool
        Build the policy with ``make_policy(name, env=env)`` (the library's current
        ``env.policy_defaults`` fill what is not given) or with ``make_policy(name, ...)`` alone.
    every_policy_listed : bool
        Refuse a policy that ``policy`` has no entry for (rather than pass it nothing).
    """

    classification_env: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_policy: dict[str, dict[str, Any]] = field(default_factory=dict)
    env_recommendations: bool = True
    every_policy_listed: bool = False


#: Policy keywords of the ``old`` setting, one dict per policy name (edit freely: a run saved
#: with other values is detected when the benchmark resumes).
OLD_POLICY: dict[str, dict[str, Any]] = {
    "linucb": {"alpha": 0.02},
    "sigma2-linucb": {"alpha": 0.02},
    "neural-linucb": {"alpha": 0.02, "lam_warmup": False, **PLAIN_TRAINING},
    "neural-sigma2-linucb": {"alpha": 0.02, "lam_warmup": False, **PLAIN_TRAINING},
    "neural-ucb": {"alpha": 0.02},
    "neural-ts": {"alpha": 0.02},
}

#: What ``env.policy_defaults`` recommended on the paper's datasets before the change
#: (Appendix B.2: d′ = 64; H = 10 from t₀ = 10,000, or H = 100 from t₀ = 2,000 on shuttle).
OLD_DATASET_POLICY: dict[str, dict[str, Any]] = {
    "mnist": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "covertype": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "cifar10": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "shuttle": {"feature_dim": 64, "train_every": 100, "train_start": 2000},
}

#: The library's settings before the change, as explicit keywords.
OLD = Setting(
    classification_env={"preprocess": "l2"},
    policy=OLD_POLICY,
    dataset_policy=OLD_DATASET_POLICY,
    env_recommendations=False,
    every_policy_listed=True,
)

#: The library's current defaults: nothing passed.
NEW = Setting()

SETTINGS: dict[str, Setting] = {"old": OLD, "new": NEW}
#: Order of the settings in the tables (``tuned`` comes from ``--tuned``).
SETTING_ORDER = ("old", "new", "tuned")

# ---------------------------------------------------------------------------- environments
SYNTHETIC = ("h1", "h2", "h3")
OWN_DATA = ("digits", "synth26", "synth2")
PAPER_DATASETS = ("shuttle", "covertype", "mnist", "cifar10")
#: Every environment, cheapest first (the order of runs and of the table).
ENVS: tuple[str, ...] = (*SYNTHETIC, *OWN_DATA, *PAPER_DATASETS)
POLICIES: tuple[str, ...] = ("linucb", "neural-linucb", "neural-sigma2-linucb", "neural-ucb")
#: Rounds at the end of a run over which accuracy and arms never played are counted.
WINDOW = 1000
#: Keywords of a tune's environment specification that name where its data came from, not how
#: the bandit is built: dropped when a tuned run is made on this benchmark's environment.
SOURCE_KEYWORDS = frozenset(
    ["seed", "horizon", "path", "label", "features", "categorical", "data_dir", "download"]
)


@cache
def own_data(name: str) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Features and labels of an "own data" table (built once per process)."""
    from sklearn.datasets import load_digits, make_classification

    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y.astype(np.int64)
    if name == "synth26":
        X, y = make_classification(
            n_samples=8000,
            n_features=16,
            n_informative=12,
            n_redundant=2,
            n_classes=26,
            n_clusters_per_class=1,
            class_sep=2.0,
            random_state=0,
        )
        return X - X.min(axis=0) + 1.0, y.astype(np.int64)
    if name == "synth2":
        X, y = make_classification(
            n_samples=6000, n_features=10, n_informative=6, n_classes=2, random_state=1
        )
        return np.abs(X) * 3.0, y.astype(np.int64)
    raise ValueError(f"no own data table {name!r}; choose from {', '.join(OWN_DATA)}")


def is_classification(env_name: str) -> bool:
    return env_name in OWN_DATA or env_name in PAPER_DATASETS


def build_env(env_name: str, seed: int, T: int, params: dict[str, Any]) -> db.Environment:
    """The benchmark's environment ``env_name`` with ``params`` (a setting's keywords)."""
    if env_name in OWN_DATA:
        X, y = own_data(env_name)
        return db.make_env("classification", X=X, y=y, seed=seed, horizon=T, **params)
    if env_name in PAPER_DATASETS:
        return db.make_env(env_name, seed=seed, horizon=T, download=False, **params)
    return db.make_env(env_name, seed=seed, horizon=T, **params)


# ---------------------------------------------------------------------------- runs
@dataclass
class Job:
    """One run: ``policy`` (the row of the table) on ``env`` with ``setting`` and ``seed``."""

    env: str
    setting: str
    policy: str
    seed: int
    T: int
    env_params: dict[str, Any]
    policy_spec: str
    env_recommendations: bool
    path: Path
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.env}/{self.setting}/{self.policy}/seed {self.seed}"


def run_path(out: Path, T: int, env: str, setting: str, policy: str, seed: int) -> Path:
    return out / "runs" / f"T{T}" / env / setting / policy / f"seed_{seed}.json"


def setting_job(
    setting_name: str, setting: Setting, env: str, policy: str, seed: int, T: int, out: Path
) -> Job:
    """The job of ``policy`` on ``env`` with a named :class:`Setting`."""
    if setting.every_policy_listed and policy not in setting.policy:
        raise ValueError(
            f"setting {setting_name!r} lists no keywords for policy {policy!r}: add it to its "
            f"policy dict (it lists {', '.join(setting.policy)})"
        )
    env_params = dict(setting.classification_env) if is_classification(env) else {}
    params = dict(setting.policy.get(policy, {}))
    recommended = setting.dataset_policy.get(env, {})
    if recommended:
        accepted = db.make_policy(policy).get_params()
        params = {k: v for k, v in recommended.items() if k in accepted} | params
    return Job(
        env=env,
        setting=setting_name,
        policy=policy,
        seed=seed,
        T=T,
        env_params=env_params,
        policy_spec=with_params(policy, params),
        env_recommendations=setting.env_recommendations,
        path=run_path(out, T, env, setting_name, policy, seed),
    )


def build_policy(job: Job, env: db.Environment) -> db.Policy:
    name, params = parse_spec(job.policy_spec)
    return db.make_policy(name, env=env if job.env_recommendations else None, **params)


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples become lists, odd objects strings)."""
    return json.loads(json.dumps(value, default=str))


def describe(job: Job, env: db.Environment | None = None) -> dict[str, Any]:
    """The parameters a run of ``job`` is made with, seed aside: what a saved run must match.
    ``env``: the job's environment, if already built (any seed)."""
    if env is None:
        env = build_env(job.env, 0, job.T, job.env_params)
    policy = build_policy(job, env)
    give_horizon(policy, job.T)
    env_params = {
        k: v for k, v in env.get_params().items() if k not in ("seed", "preprocess_stats")
    }
    policy_params = {k: v for k, v in policy.get_params().items() if k != "seed"}
    return _plain(
        {
            "T": job.T,
            "env": {"class": type(env).__name__, "params": env_params},
            "policy": {"class": type(policy).__name__, "params": policy_params},
        }
    )


def differences(found: dict[str, Any], wanted: dict[str, Any], prefix: str = "") -> list[str]:
    """Keys whose values differ between two nested dicts, as ``"policy alpha 0.02 (now 0.1)"``.
    A keyword the saved record lacks and that is None now (added since, at a default that keeps
    the earlier behaviour, as ``warmup_steps``) is no difference, as in the library's sweeps."""
    out = []
    for key in list(dict.fromkeys([*found, *wanted])):
        if key not in found and wanted.get(key, "<missing>") is None:
            continue
        a, b = found.get(key, "<missing>"), wanted.get(key, "<missing>")
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key} " if key != "params" else prefix)
        elif a != b:
            out.append(f"{prefix}{key} {a!r} (now {b!r})")
    return out


def run_one(job: Job, progress: bool = False) -> dict[str, Any]:
    """Make one run, save its record (``job.path``) and return it."""
    warnings.filterwarnings("ignore", message=".*partial CIFAR-10")  # noted in env_params
    env = build_env(job.env, job.seed, job.T, job.env_params)
    if job.env_recommendations:
        policy: db.Policy | str = job.policy_spec  # make_policy(name, env=env), as the CLI
    else:
        policy = build_policy(job, env)
    result = db.run(policy, env, job.T, seed=job.seed, threads=1, progress=progress)
    records = result.records
    accuracy = unplayed = locked = n_arms = None
    if isinstance(env, db.ClassificationEnv):
        n_arms = env.n_arms
        accuracy = window_accuracy(records["regret"], WINDOW)
        unplayed = unplayed_arms(records["arm"], n_arms, WINDOW)
        locked = locked_out_arms(records["arm"], records["best_arm"], n_arms, WINDOW)
    record = {
        "env": job.env,
        "setting": job.setting,
        "policy": job.policy,
        "seed": job.seed,
        "T": job.T,
        "final_regret": result.final_regret,
        "cumulative_reward": float(records["reward"].sum()),
        "accuracy_last": accuracy,
        "unplayed_arms_last": unplayed,
        "locked_out_arms_last": locked,
        "n_arms": n_arms,
        "wall_seconds": result.config["wall_seconds"],
        "policy_spec": job.policy_spec,
        "env_spec": with_params(job.env, job.env_params),
        "env_recommendations": job.env_recommendations,
        "version": db.__version__,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": job.config,
    }
    write_atomic(job.path, json.dumps(record, indent=1, default=str) + "\n")
    return record


def load_record(job: Job, redo_changed: bool) -> dict[str, Any] | None:
    """The saved record of ``job``, or None when it must be run (missing, unreadable, or made
    with other parameters and ``redo_changed``)."""
    if not job.path.exists():
        return None
    try:
        record = json.loads(job.path.read_text())
    except (OSError, ValueError) as exc:
        warnings.warn(f"cannot read {job.path} ({exc}); running it again", stacklevel=2)
        return None
    diff = differences(record.get("config", {}), job.config)
    if not diff:
        return record
    if redo_changed:
        return None
    shown = "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
    raise ValueError(
        f"{job.path} ({job.label}) was run with {shown}. Use --redo-changed to run it again, "
        "another --out, or delete it"
    )


# ---------------------------------------------------------------------------- tuned settings
@dataclass
class Tuned:
    """A ``tune.json`` found for one (environment, policy) pair."""

    env: str
    policy: str
    best_spec: str
    env_params: dict[str, Any]
    path: Path
    data: dict[str, Any]


def benchmark_env_of(env_spec: str) -> tuple[str | None, dict[str, Any]]:
    """The benchmark environment a tune's ``env`` specification was made on (a table file
    ``.../synth26.csv`` counts as ``synth26``), and its keywords that build the bandit."""
    name, params = parse_spec(env_spec)
    if name == "table" and "path" in params:
        name = Path(str(params["path"])).stem
    kept = {k: v for k, v in params.items() if k not in SOURCE_KEYWORDS}
    return (name if name in ENVS else None), kept


def find_tuned(
    folder: Path, envs: Sequence[str], policies: Sequence[str], T: int
) -> tuple[dict[tuple[str, str], Tuned], list[str]]:
    """Every ``tune.json`` under ``folder`` for a pair of this benchmark, and notes on the
    files left out. With several for one pair, the one tuned at this T is preferred, then the
    first in path order."""
    if not folder.is_dir():
        raise ValueError(f"--tuned {folder}: no such folder")
    found: dict[tuple[str, str], Tuned] = {}
    notes: list[str] = []
    for path in sorted(folder.rglob("tune.json")):
        try:
            data = json.loads(path.read_text())
            env, env_params = benchmark_env_of(data["env"])
            policy = parse_spec(data["policy"])[0]
            best = data["best_spec"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            notes.append(f"{path}: not read ({exc})")
            continue
        if env is None or env not in envs or policy not in policies:
            notes.append(f"{path}: {data['env']} / {data['policy']} is not in this benchmark")
            continue
        item = Tuned(env, policy, best, env_params, path, data)
        old = found.get((env, policy))
        if old is None or (old.data.get("T") != T and data.get("T") == T):
            if old is not None:
                notes.append(f"{old.path}: left out for {path} (tuned at T={T})")
            found[(env, policy)] = item
        else:
            notes.append(f"{path}: left out for {old.path}")
    return found, notes


def tuned_job(tuned: Tuned, seed: int, T: int, out: Path) -> Job:
    return Job(
        env=tuned.env,
        setting="tuned",
        policy=tuned.policy,
        seed=seed,
        T=T,
        env_params=tuned.env_params,
        policy_spec=tuned.best_spec,
        env_recommendations=True,
        path=run_path(out, T, tuned.env, "tuned", tuned.policy, seed),
    )


# ---------------------------------------------------------------------------- tables
RUN_COLUMNS = [
    "env",
    "setting",
    "policy",
    "seed",
    "T",
    "final_regret",
    "cumulative_reward",
    "accuracy_last",
    "unplayed_arms_last",
    "locked_out_arms_last",
    "n_arms",
    "wall_seconds",
    "policy_spec",
    "env_spec",
    "env_recommendations",
    "version",
    "finished",
]


def runs_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run (:data:`RUN_COLUMNS`); NaN where a column does not apply."""
    frame = pd.DataFrame([{k: r.get(k) for k in RUN_COLUMNS} for r in records], columns=RUN_COLUMNS)
    for column in (
        "final_regret",
        "accuracy_last",
        "unplayed_arms_last",
        "locked_out_arms_last",
        "n_arms",
    ):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def summarize(runs: pd.DataFrame, envs: Sequence[str], policies: Sequence[str]) -> pd.DataFrame:
    """One row per (env, policy) with runs: per setting the number of seeds, final regret mean
    and std, accuracy mean, arms never played mean and max; the ratios new/old and tuned/new."""
    rows = []
    for env in envs:
        for policy in policies:
            part = runs[(runs["env"] == env) & (runs["policy"] == policy)]
            if part.empty:
                continue
            row: dict[str, Any] = {"env": env, "policy": policy}
            for setting in SETTING_ORDER:
                s = part[part["setting"] == setting]
                regret = s["final_regret"].to_numpy()
                row[f"{setting}_seeds"] = len(s)
                row[f"{setting}_regret_mean"] = regret.mean() if len(s) else math.nan
                row[f"{setting}_regret_std"] = regret.std(ddof=1) if len(s) > 1 else math.nan
                row[f"{setting}_accuracy"] = s["accuracy_last"].mean() if len(s) else math.nan
                row[f"{setting}_unplayed_mean"] = (
                    s["unplayed_arms_last"].mean() if len(s) else math.nan
                )
                row[f"{setting}_unplayed_max"] = (
                    s["unplayed_arms_last"].max() if len(s) else math.nan
                )
                row[f"{setting}_locked_max"] = (
                    s["locked_out_arms_last"].max() if len(s) else math.nan
                )
                row[f"{setting}_wall_mean"] = s["wall_seconds"].mean() if len(s) else math.nan
            row["new_over_old"] = _ratio(row["new_regret_mean"], row["old_regret_mean"])
            row["tuned_over_new"] = _ratio(row["tuned_regret_mean"], row["new_regret_mean"])
            rows.append(row)
    return pd.DataFrame(rows)


def _ratio(a: float, b: float) -> float:
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def _regret(mean: float, std: float) -> str:
    if not math.isfinite(mean):
        return "–"
    return f"{mean:,.1f}" + (f" ± {std:,.1f}" if math.isfinite(std) else "")


def _number(value: float, fmt: str) -> str:
    return format(value, fmt) if math.isfinite(value) else "–"


def format_table(summary: pd.DataFrame) -> str:
    """The Markdown table of :func:`summarize` (tuned columns only when there are tuned runs)."""
    settings = [s for s in SETTING_ORDER if s != "tuned"]
    if not summary.empty and summary["tuned_seeds"].sum() > 0:
        settings.append("tuned")
    names = " / ".join(settings)
    head = ["env", "policy", f"seeds ({names})"]
    head += [f"{s} regret" for s in settings[:2]] + ["new/old"]
    if "tuned" in settings:
        head += ["tuned regret", "tuned/new"]
    head += [
        f"accuracy, last {WINDOW} ({names})",
        f"arms never played, last {WINDOW}: mean (max) ({names})",
        f"of them locked out, max ({names})",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary.to_dict("records"):
        cells = [row["env"], row["policy"], "/".join(str(row[f"{s}_seeds"]) for s in settings)]
        cells += [_regret(row[f"{s}_regret_mean"], row[f"{s}_regret_std"]) for s in settings[:2]]
        cells.append(_number(row["new_over_old"], ".2f"))
        if "tuned" in settings:
            cells += [
                _regret(row["tuned_regret_mean"], row["tuned_regret_std"]),
                _number(row["tuned_over_new"], ".2f"),
            ]
        if is_classification(row["env"]):
            cells.append(" / ".join(_number(row[f"{s}_accuracy"], ".3f") for s in settings))
            cells.append(
                " / ".join(
                    f"{_number(row[f'{s}_unplayed_mean'], '.1f')} "
                    f"({_number(row[f'{s}_unplayed_max'], '.0f')})"
                    for s in settings
                )
            )
            cells.append(" / ".join(_number(row[f"{s}_locked_max"], ".0f") for s in settings))
        else:
            cells += ["-", "-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe_settings(
    envs: Sequence[str],
    policies: Sequence[str],
    seeds: Sequence[int],
    tuned: dict[tuple[str, str], Tuned],
) -> str:
    """What ``old``, ``new`` and ``tuned`` were, for the Markdown file."""
    old_policy = {p: OLD.policy.get(p) for p in policies}
    old_data = {e: OLD.dataset_policy[e] for e in envs if e in OLD.dataset_policy}
    lines = [
        "- old: make_policy(name, **keywords), without the environment; keywords "
        + ", ".join(f"{p}: {k}" for p, k in old_policy.items())
        + (
            f"; classification environments {OLD.classification_env}"
            if any(map(is_classification, envs))
            else ""
        ),
    ]
    if old_data:
        lines[0] += (
            "; on the paper's datasets also (to the policies that accept them, unless set "
            "above) " + ", ".join(f"{e}: {k}" for e, k in old_data.items())
        )
    lines.append(
        "- new: nothing passed: deepbandits.run(name, env, T, seed=s), which builds "
        "make_policy(name, env=env)"
    )
    for (env, policy), t in sorted(tuned.items()):
        tuning = t.data.get("tuning_seeds") or []
        overlap = sorted(set(tuning) & set(seeds))
        lines.append(
            f"- tuned, {env} / {policy}: `{t.best_spec}` on `{t.data.get('env')}` "
            f"(tuned at T={t.data.get('T')} on seeds {tuning}; {t.path})"
            + (f" — WARNING: tuned on seeds {overlap} measured here" if overlap else "")
        )
    lines.append(f"- every environment: seed=s, horizon=T; {db.__name__} {db.__version__}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the benchmark
def make_jobs(
    envs: Sequence[str],
    policies: Sequence[str],
    seeds: Sequence[int],
    T: int,
    out: Path,
    tuned: dict[tuple[str, str], Tuned],
) -> list[Job]:
    """Every run of the selection, in the order they are made: environment, policy, seed,
    then the settings side by side (so an interrupted benchmark leaves pairs)."""
    jobs = []
    for env in envs:
        for policy in policies:
            for seed in seeds:
                for name, setting in SETTINGS.items():
                    jobs.append(setting_job(name, setting, env, policy, seed, T, out))
                if (env, policy) in tuned:
                    jobs.append(tuned_job(tuned[(env, policy)], seed, T, out))
    configs: dict[tuple[str, str, str], dict[str, Any]] = {}
    built: dict[str, db.Environment] = {}
    for job in jobs:  # builds each environment and policy once: bad settings fail here
        key = (job.env, job.setting, job.policy)
        if key not in configs:
            env_key = json.dumps([job.env, job.env_params], sort_keys=True, default=str)
            try:
                if env_key not in built:
                    built[env_key] = build_env(job.env, 0, T, job.env_params)
                configs[key] = describe(job, built[env_key])
            except (ValueError, TypeError, OSError) as exc:
                raise ValueError(
                    f"cannot build {job.env} / {job.setting} / {job.policy} "
                    f"({job.policy_spec} on {with_params(job.env, job.env_params)}): {exc}"
                    + (" (leave it out with --envs)" if isinstance(exc, OSError) else "")
                ) from exc
        job.config = configs[key]
    return jobs


def benchmark(
    envs: Sequence[str] = ENVS,
    policies: Sequence[str] = POLICIES,
    T: int = 5000,
    seeds: Sequence[int] = (0, 1, 2),
    out: str | Path = "results/bench_defaults",
    *,
    jobs: int = 1,
    tuned: str | Path | None = None,
    run_missing: bool = True,
    redo_changed: bool = False,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Run what is missing of the selection, then write ``OUT/runs.csv`` and ``OUT/defaults.md``.

    Returns the runs (one row each, :data:`RUN_COLUMNS`), the summary (:func:`summarize`) and
    the failures (``"<env>/<setting>/<policy>/seed <s>: <error>"``; the other runs go on).
    """
    unknown = [e for e in envs if e not in ENVS]
    if unknown:
        raise ValueError(f"unknown environment(s) {', '.join(unknown)}; choose from {ENVS}")
    out = Path(out)
    found, notes = find_tuned(Path(tuned), envs, policies, T) if tuned else ({}, [])
    for note in notes:
        print(f"--tuned: {note}", file=sys.stderr)
    all_jobs = make_jobs(envs, policies, seeds, T, out, found)
    records: dict[Path, dict[str, Any]] = {}
    todo = []
    # A setting whose run has the same parameters as another setting's (old and new on h1-h3)
    # is the same deterministic trajectory: it is run once and its record copied.
    first_of: dict[str, Job] = {}
    copies: dict[Path, Job] = {}
    for job in all_jobs:
        key = json.dumps([job.env, job.policy, job.seed, job.config], sort_keys=True, default=str)
        record = load_record(job, redo_changed)
        if record is not None:
            records[job.path] = record
            first_of.setdefault(key, job)
        elif key in first_of:
            copies[job.path] = first_of[key]
        elif run_missing:
            todo.append(job)
            first_of[key] = job
    failures: list[str] = []
    bar = tqdm(total=len(todo), desc="runs", disable=not progress or not todo)
    if jobs > 1 and len(todo) > 1:
        ctx = multiprocessing.get_context("spawn")  # no forked torch thread pools
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures: dict[Future[dict[str, Any]], Job] = {
                pool.submit(run_one, job): job for job in todo
            }
            for future in as_completed(futures):
                job = futures[future]
                try:
                    records[job.path] = future.result()
                except Exception as exc:  # one failed run must not stop the others
                    failures.append(f"{job.label}: {type(exc).__name__}: {exc}")
                bar.set_postfix_str(f"finished {job.label}")
                bar.update()
    else:
        for job in todo:
            bar.set_postfix_str(job.label)
            try:
                records[job.path] = run_one(job, progress=progress)
            except Exception as exc:
                failures.append(f"{job.label}: {type(exc).__name__}: {exc}")
            bar.update()
    bar.close()
    for job in all_jobs:
        same = copies.get(job.path)
        if same is not None and same.path in records:
            records[job.path] = {**records[same.path], "setting": job.setting}
            write_atomic(job.path, json.dumps(records[job.path], indent=1, default=str) + "\n")
    ordered = [records[job.path] for job in all_jobs if job.path in records]
    runs = runs_frame(ordered)
    summary = summarize(runs, envs, policies)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "runs.csv", runs.to_csv(index=False))
    missing = len(all_jobs) - len(ordered)
    text = [
        f"# Old against new defaults: T = {T}, seeds {', '.join(map(str, seeds))}",
        "",
        describe_settings(envs, policies, seeds, found),
        "",
        format_table(summary),
        "",
        f"Final regret: mean ± std over seeds; accuracy and arms never played over the last "
        f"{WINDOW} rounds (classification bandits only; mean over seeds, max in brackets); of "
        f"those, locked out: arms that were the best arm in at least 1 % of those rounds "
        f"(most over seeds). An arm never played but best in fewer rounds (a rare class) costs "
        f"at most that many rounds.",
    ]
    if missing:
        text.append(f"\n{missing} of {len(all_jobs)} runs are missing from this table.")
    if failures:
        text.append("\nFailed runs:\n" + "\n".join(f"- {f}" for f in failures))
    write_atomic(out / "defaults.md", "\n".join(text) + "\n")
    return runs, summary, failures


def _names(text: str, choices: Sequence[str] | None = None) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if choices is not None and items == ["all"]:
        return list(choices)
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", default="all", help=f"comma list or 'all' ({','.join(ENVS)})")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma list")
    parser.add_argument("--T", type=int, default=5000, help="rounds per run")
    parser.add_argument("--seeds", default="0-2", help="'0-2' or '0,1,2'")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes)")
    parser.add_argument("--out", default="results/bench_defaults", help="output folder")
    parser.add_argument("--tuned", default=None, help="folder of tune.json files (tuned rows)")
    parser.add_argument("--no-run", action="store_true", help="table of finished runs only")
    parser.add_argument(
        "--redo-changed", action="store_true", help="re-run saved runs whose parameters changed"
    )
    args = parser.parse_args(argv)
    try:
        runs, _summary, failures = benchmark(
            _names(args.envs, ENVS),
            _names(args.policies),
            args.T,
            parse_seeds(args.seeds),
            args.out,
            jobs=args.jobs,
            tuned=args.tuned,
            run_missing=not args.no_run,
            redo_changed=args.redo_changed,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(Path(args.out, "defaults.md").read_text())
    print(f"runs: {Path(args.out, 'runs.csv')} ({len(runs)} runs)")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
