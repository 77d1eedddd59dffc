"""The Open Bandit Pipeline side of ``benchmarks/ope_obp.py``; runs in ``.venv-obp`` (``make obp``:
obp 0.5.7 with the versions of ``benchmarks/obp/requirements.txt``), where deepbandits is not
installed. ``benchmarks/ope_obp.py`` calls it; it reads its inputs from files and writes its
results as JSON (to a temporary file, then renamed: a reader never sees half a file).

``same-inputs --inputs IN.npz --out OUT.json``
    Each case of the ``cases`` entry of ``IN.npz`` (a JSON list: obp class name, its keyword
    arguments, which input set it reads) is built from ``obp.ope`` and given the arrays of
    ``IN.npz``: its ``estimate_policy_value``, the wall time of that call, and the
    ``best_hyperparam`` that a tuned one chose.

``obd --data-dir DIR --campaigns all,men,women --runs R --n-sim N --n-bootstrap B --out OUT.json``
    obp's Open Bandit Dataset example (examples/obd/evaluate_off_policy_estimators.py of the
    zr-obp repository, random log, BTS as evaluation policy, logistic regression as the base
    model), per campaign: ``OpenBanditDataset`` of ``DIR/obd``, BTS's action distribution by
    ``BernoulliTS(is_zozotown_prior=True).compute_batch_action_dist(n_sim=N)``, the ground truth
    by ``calc_on_policy_policy_value_estimate`` (BTS's click rate on its own log), then on each
    of R bootstrap samples of the log (``sample_bootstrap_bandit_feedback(random_state=b)``) a
    ``RegressionModel`` (3-fold cross-fitting) and every estimator through
    ``OffPolicyEvaluation.evaluate_performance_of_estimators(metric="relative-ee")``; a sample
    on which ``RegressionModel`` cannot fit (a fold without a click at some position: its
    logistic regression sees one class) is recorded in ``failed_runs`` and left out. One
    difference from the example as written: the estimators are built anew for each sample, so
    the tuned ones tune on each (the example's objects keep the ``best_hyperparam`` of their
    first call, so with ``n_jobs=1`` every later sample reuses the first one's choice). Also, on
    the whole log: each estimate and its bootstrap interval (``estimate_intervals``, B
    resamples), from which coverage of the truth is read.

No compatibility shim is needed with these versions: every path run here works as shipped. The
DeprecationWarnings and FutureWarnings that pandas 1.5 and scikit-learn 1.3 raise under
numpy 1.26 (``np.find_common_type``, ``OneHotEncoder(sparse=...)``) are silenced so that the
output stays readable; they change no result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

#: The estimators of obp's OBD example with its SLOPE grid, then those added here for the
#: estimators deepbandits reports by default (its fixed τ = λ = 100 and the sub-Gaussian ones):
#: (deepbandits short name, obp class, keyword arguments, "tuned" or "fixed", origin).
EXAMPLE_GRID = [10.0, 50.0, 100.0, 500.0, 1000.0, 5000.0, 10000.0, float("inf")]
#: deepbandits' grid of the sub-Gaussian λ (tuning.UNIT_GRID) without λ = 1: there obp's weight
#: w / (1 − λ + λw) is 0/0 on a round whose w is 0 (an item BTS never shows), and its SLOPE then
#: returns NaN (deepbandits takes the limit, 0)
SG_GRID = [0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3]
OBD_ESTIMATORS: list[tuple[str, str, dict[str, Any], str, str]] = [
    ("dm", "DirectMethod", {}, "fixed", "example"),
    ("ips", "InverseProbabilityWeighting", {}, "fixed", "example"),
    ("snips", "SelfNormalizedInverseProbabilityWeighting", {}, "fixed", "example"),
    ("dr", "DoublyRobust", {}, "fixed", "example"),
    ("sndr", "SelfNormalizedDoublyRobust", {}, "fixed", "example"),
    ("switch-dr-slope", "SwitchDoublyRobustTuning", {"lambdas": EXAMPLE_GRID}, "tuned", "example"),
    (
        "dr-os-slope",
        "DoublyRobustWithShrinkageTuning",
        {"lambdas": EXAMPLE_GRID},
        "tuned",
        "example",
    ),
    ("switch-dr", "SwitchDoublyRobust", {"lambda_": 100.0}, "fixed", "added"),
    ("dr-os", "DoublyRobustWithShrinkage", {"lambda_": 100.0}, "fixed", "added"),
    (
        "sg-ips-slope",
        "SubGaussianInverseProbabilityWeightingTuning",
        {"lambdas": SG_GRID},
        "tuned",
        "added",
    ),
    ("sg-dr-slope", "SubGaussianDoublyRobustTuning", {"lambdas": SG_GRID}, "tuned", "added"),
]
#: obp's example: its random_state and the base model's hyperparameters (conf/hyperparams.yaml)
RANDOM_STATE = 12345
LOGISTIC = {"max_iter": 10000, "C": 100, "random_state": RANDOM_STATE}


def quiet() -> None:
    """Silence the deprecation noise of pandas 1.5 / scikit-learn 1.3 under numpy 1.26."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """``payload`` as JSON at ``path``: a temporary file in the same folder, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def plain(value: Any) -> Any:
    """A JSON-friendly copy of a numpy scalar (floats stay exact: JSON writes their repr)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def versions() -> dict[str, str]:
    """The versions the numbers were made with."""
    import pandas
    import scipy
    import sklearn
    import torch

    import obp

    return {
        "python": platform.python_version(),
        "obp": obp.__version__,
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "torch": torch.__version__,
    }


def same_inputs(inputs: Path, out: Path) -> None:
    """Every case of ``inputs`` on its arrays (module notes)."""
    from obp import ope

    data = np.load(inputs)
    cases = json.loads(str(data["cases"]))
    n = len(data["action"])
    classic = {
        "reward": data["reward"],
        "action": data["action"],
        "pscore": data["pscore"],
        "action_dist": data["action_dist"][:, :, None],
        "estimated_rewards_by_reg_model": data["q_hat"][:, :, None],
        "position": None,
    }
    sets = {"classic": classic}
    if "action_embed" in data:
        sets["mips"] = {
            "reward": data["reward"],
            "action": data["action"],
            "action_embed": data["action_embed"],
            "pi_b": data["logging_dist"][:, :, None],
            "action_dist": data["action_dist"][:, :, None],
            "p_e_a": data["p_e_a"],
            "position": None,
        }
    if "importance_weights" in data:
        sets["bipw"] = {
            "reward": data["reward"],
            "action": data["action"],
            "action_dist": data["action_dist"][:, :, None],
            "estimated_importance_weights": data["importance_weights"],
            "position": None,
        }
    rows: dict[str, dict[str, Any]] = {}
    for case in cases:
        estimator = getattr(ope, case["class"])(**case["kwargs"])
        start = time.perf_counter()
        value = float(estimator.estimate_policy_value(**sets[case["inputs"]]))
        seconds = time.perf_counter() - start
        rows[case["key"]] = {
            "estimate": value,
            "seconds": seconds,
            "chosen": plain(getattr(estimator, "best_hyperparam", None)),
        }
        print(f"obp {case['key']}: {value!r} ({seconds:.2f} s)", file=sys.stderr, flush=True)
    write_json(out, {"versions": versions(), "n": n, "rows": rows})


def fresh_estimators() -> list[Any]:
    """New estimator objects of :data:`OBD_ESTIMATORS`, named by deepbandits' short names."""
    from obp import ope

    return [
        getattr(ope, cls)(**{**kwargs, "estimator_name": key})
        for key, cls, kwargs, _, _ in OBD_ESTIMATORS
    ]


def chosen(estimators: list[Any]) -> dict[str, Any]:
    """The hyperparameter each tuned estimator chose on its last call."""
    return {
        e.estimator_name: plain(e.best_hyperparam)
        for e in estimators
        if hasattr(e, "best_hyperparam")
    }


def obd_campaign(
    data_dir: Path, campaign: str, runs: int, n_sim: int, n_bootstrap: int
) -> dict[str, Any]:
    """obp's OBD example on one campaign (module notes)."""
    from obp.dataset import OpenBanditDataset
    from obp.ope import OffPolicyEvaluation, RegressionModel
    from obp.policy import BernoulliTS
    from sklearn.linear_model import LogisticRegression

    np.random.seed(RANDOM_STATE)  # noqa: NPY002 (as obp's example does)
    total = time.perf_counter()
    path = data_dir / "obd"
    obd = OpenBanditDataset(behavior_policy="random", campaign=campaign, data_path=path)
    start = time.perf_counter()
    policy = BernoulliTS(
        n_actions=obd.n_actions,
        len_list=obd.len_list,
        random_state=RANDOM_STATE,
        is_zozotown_prior=True,
        campaign=campaign,
    )
    single_round = policy.compute_batch_action_dist(n_sim=n_sim)
    policy_seconds = time.perf_counter() - start
    truth = float(
        OpenBanditDataset.calc_on_policy_policy_value_estimate(
            behavior_policy="bts", campaign=campaign, data_path=path
        )
    )

    def fit_q(feedback: dict[str, Any]) -> np.ndarray:
        model = RegressionModel(
            n_actions=obd.n_actions,
            len_list=obd.len_list,
            action_context=obd.action_context,
            base_model=LogisticRegression(**LOGISTIC),
        )
        return model.fit_predict(
            context=feedback["context"],
            action=feedback["action"],
            reward=feedback["reward"],
            position=feedback["position"],
            pscore=feedback["pscore"],
            n_folds=3,
            random_state=RANDOM_STATE,
        )

    start = time.perf_counter()
    errors: dict[str, list[float]] = {key: [] for key, *_ in OBD_ESTIMATORS}
    chosen_runs: dict[str, list[Any]] = {}
    failed: list[dict[str, Any]] = []
    for b in range(runs):
        feedback = obd.sample_bootstrap_bandit_feedback(random_state=b)
        estimators = fresh_estimators()
        ope = OffPolicyEvaluation(bandit_feedback=feedback, ope_estimators=estimators)
        try:  # a sample with no click at some position in a fold: RegressionModel cannot fit
            q_hat = fit_q(feedback)
        except ValueError as exc:
            failed.append({"run": b, "error": str(exc)})
            print(f"obp {campaign}: sample {b} failed: {exc}", file=sys.stderr, flush=True)
            continue
        relative = ope.evaluate_performance_of_estimators(
            ground_truth_policy_value=truth,
            action_dist=np.tile(single_round, (feedback["n_rounds"], 1, 1)),
            estimated_rewards_by_reg_model=q_hat,
            metric="relative-ee",
        )
        for key, value in relative.items():
            errors[key].append(float(value))
        for key, value in chosen(estimators).items():
            chosen_runs.setdefault(key, []).append(value)
    runs_seconds = time.perf_counter() - start

    start = time.perf_counter()
    feedback = obd.obtain_batch_bandit_feedback()
    estimators = fresh_estimators()
    ope = OffPolicyEvaluation(bandit_feedback=feedback, ope_estimators=estimators)
    action_dist = np.tile(single_round, (feedback["n_rounds"], 1, 1))
    q_hat = fit_q(feedback)
    estimates = ope.estimate_policy_values(
        action_dist=action_dist, estimated_rewards_by_reg_model=q_hat
    )
    chosen_full = chosen(estimators)  # the intervals keep these (obp tunes once per object)
    intervals = ope.estimate_intervals(
        action_dist=action_dist,
        estimated_rewards_by_reg_model=q_hat,
        alpha=0.05,
        n_bootstrap_samples=n_bootstrap,
        random_state=RANDOM_STATE,
    )
    full_seconds = time.perf_counter() - start
    rows = []
    for key, cls, kwargs, kind, origin in OBD_ESTIMATORS:
        lower, upper = (v for k, v in intervals[key].items() if "CI" in k)
        rows.append(
            {
                "key": key,
                "class": cls,
                "kwargs": kwargs,
                "kind": kind,
                "origin": origin,
                "rel_errors": errors[key],
                "estimate": float(estimates[key]),
                "lower": float(lower),
                "upper": float(upper),
                "chosen": chosen_full.get(key),
                "chosen_runs": chosen_runs.get(key, []),
            }
        )
        print(f"obp {campaign} {key}: {np.mean(errors[key]):.4f}", file=sys.stderr, flush=True)
    return {
        "campaign": campaign,
        "truth": truth,
        "n_rounds": int(obd.n_rounds),
        "n_actions": int(obd.n_actions),
        "runs": runs,
        "failed_runs": failed,
        "n_sim": n_sim,
        "n_bootstrap": n_bootstrap,
        "seconds": {
            "policy": policy_seconds,
            "runs": runs_seconds,
            "full_log": full_seconds,
            "total": time.perf_counter() - total,
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    same = sub.add_parser("same-inputs")
    same.add_argument("--inputs", type=Path, required=True)
    same.add_argument("--out", type=Path, required=True)
    obd = sub.add_parser("obd")
    obd.add_argument("--data-dir", type=Path, required=True, help="the folder holding obd/")
    obd.add_argument("--campaigns", default="all,men,women")
    obd.add_argument("--runs", type=int, default=30)
    obd.add_argument("--n-sim", type=int, default=1_000_000)
    obd.add_argument("--n-bootstrap", type=int, default=1000)
    obd.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    quiet()
    if args.command == "same-inputs":
        same_inputs(args.inputs, args.out)
        return 0
    campaigns = [
        obd_campaign(args.data_dir, c, args.runs, args.n_sim, args.n_bootstrap)
        for c in args.campaigns.split(",")
    ]
    write_json(args.out, {"versions": versions(), "campaigns": campaigns})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
