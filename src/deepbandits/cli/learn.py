"""``deepbandits learn-log``: learn a new policy from the earlier part of a service log, evaluate
it by off-policy evaluation on the later part, and say whether to ship it.

The log is a service log (``deepbandits export-log``, Parquet or CSV, or the state folder). The
policy (a library specification) learns the rounds up to ``--until`` (a time) or the first
``--train-fraction`` (:func:`~deepbandits.ope.offline_learning.learn_from_log`, weighted by
``--weighting``); :func:`~deepbandits.ope.evaluate` estimates its value on the rounds after,
beside the logging policy's own value there (the mean logged reward). The decision reads the
interval of ``--decide-by`` (DR by default): ship when its lower bound is above the logging
policy's value, do not ship when its upper bound is below it, cannot tell otherwise or when the
log supports the policy poorly. The trained policy is saved with ``policy.save`` as
``OUT/policy.pt``, which ``deepbandits serve --checkpoint OUT/policy.pt --state NEW`` serves; the
table goes to ``OUT/learn-log.csv`` and, with the decision and what was learned, to
``OUT/learn-log.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepbandits._io import write_atomic
from deepbandits.cli.arguments import check_writable, nonnegative_int, positive_float
from deepbandits.cli.ope import ESTIMATOR_HELP, render
from deepbandits.errors import InputValueError

ESTIMATORS = "ips,snips,dm,dr,sndr"


def add_learn_options(p: argparse.ArgumentParser) -> None:
    """The ``learn-log`` command's options."""
    p.add_argument(
        "--log",
        type=Path,
        required=True,
        help="a service log: the file of deepbandits export-log (Parquet or CSV) or the state "
        "folder",
    )
    p.add_argument(
        "--policy", required=True, help="the policy to learn, NAME[:key=value,...] (linucb)"
    )
    p.add_argument(
        "--weighting",
        choices=("none", "ips", "dr"),
        default="dr",
        help="the logged rounds unweighted, by clipped IPS weights (the ridge family), or as "
        "doubly robust pseudo-rewards of every arm (default: dr)",
    )
    split = p.add_mutually_exclusive_group()
    split.add_argument(
        "--train-fraction",
        type=positive_float,
        default=None,
        help="learn the first F of the rounds in log order (default: 0.5)",
    )
    split.add_argument(
        "--until",
        default=None,
        help="learn the decisions made up to this time (ISO 8601, UTC unless it says: "
        "2024-06-01T00:00, or seconds since the epoch), evaluate those after it",
    )
    p.add_argument("--estimators", default=ESTIMATORS, help=f"{ESTIMATOR_HELP} ({ESTIMATORS})")
    p.add_argument("--decide-by", default="dr", help="the estimator the decision reads (dr)")
    p.add_argument(
        "--reward-model",
        default="auto",
        choices=("auto", "logistic", "ridge", "hgb", "network"),
        help="q̂ of the dr pseudo-rewards and of the evaluation, cross-fitted (auto)",
    )
    p.add_argument("--clip", type=positive_float, default=20.0, help="bound on 1/π₀ (20)")
    p.add_argument("--folds", type=nonnegative_int, default=5, help="cross-fitting folds (5)")
    p.add_argument("--n-bootstrap", type=nonnegative_int, default=1000, help="resamples (1000)")
    p.add_argument("--alpha", type=positive_float, default=0.05, help="1 - coverage (0.05)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed (0)")
    p.add_argument("--out", type=Path, default=Path("results/learn-log"), help="results/learn-log")


def parse_time(text: str) -> float:
    """``--until``: seconds since the epoch, or an ISO 8601 time (UTC unless it says)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = pd.Timestamp(text)
    except ValueError:
        stamp = pd.NaT
    if pd.isna(stamp):
        raise InputValueError(
            f"--until must be a time, ISO 8601 (2024-06-01T00:00) or seconds since the epoch, "
            f"but {text!r} is given"
        )
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return float(stamp.timestamp())


def decide(row: pd.Series, logging_value: float, support: list[str]) -> str:
    """The one-line decision (module notes) from the estimator's row of the table."""
    name, lower, upper = row["name"], float(row["lower"]), float(row["upper"])
    if np.isnan(lower) or np.isnan(upper):
        return f"cannot tell: {name} has no interval (--n-bootstrap 0)"
    if support:
        return f"cannot tell: the held-out rounds support the policy poorly ({support[0]})"
    versus = f"the logging policy's {logging_value:.4g}"
    if lower > logging_value:
        return f"ship: the lower bound of {name}, {lower:.4g}, is above {versus}"
    if upper < logging_value:
        return f"do not ship: the upper bound of {name}, {upper:.4g}, is below {versus}"
    return f"cannot tell: the interval of {name}, {lower:.4g} to {upper:.4g}, contains {versus}"


def learn_command(args: argparse.Namespace) -> int:
    """Run ``deepbandits learn-log`` (module notes)."""
    from deepbandits.ope import evaluate
    from deepbandits.ope.estimator import check_estimators
    from deepbandits.ope.offline_learning import learn_from_log, split_log_by_time
    from deepbandits.policies import make_policy
    from deepbandits.serve.export import read_log
    from deepbandits.specs import parse_spec, split_specs

    estimators = check_estimators(split_specs([args.estimators]))
    labels = [e.label for e in estimators]
    short = [label.partition(":")[0] for label in labels]
    if args.decide_by not in labels and short.count(args.decide_by) != 1:
        raise InputValueError(
            f"--decide-by must be one of the estimators ({', '.join(labels)}), but "
            f"{args.decide_by!r} is given"
        )
    if not 0.0 < args.alpha < 1.0:
        raise InputValueError(f"--alpha must be in (0, 1), but {args.alpha} is given")
    out = check_writable(args.out)
    name, kw = parse_spec(args.policy)
    kw.setdefault("seed", args.seed)
    policy = make_policy(name, **kw)
    log = read_log(args.log)  # an exported file or the service's state folder
    if args.until is None:
        fraction = 0.5 if args.train_fraction is None else args.train_fraction
        train, test = split_log_by_time(log, fraction=fraction)
        split = f"the first {len(train)} rounds"
    else:
        until = parse_time(args.until)
        train, test = split_log_by_time(log, until=until)
        shown = pd.Timestamp(until, unit="s", tz="UTC").isoformat()
        split = f"the {len(train)} rounds decided until {shown}"
    learned = learn_from_log(
        policy,
        train,
        weighting=args.weighting,
        clip=args.clip,
        reward_model=args.reward_model,
        n_folds=args.folds,
        seed=args.seed,
    )
    result = evaluate(
        test,
        policy,
        estimators=estimators,
        reward_model=args.reward_model,
        n_folds=args.folds,
        n_bootstrap=args.n_bootstrap,
        alpha=args.alpha,
        seed=args.seed,
        warn=False,
    )
    logging_value = float(test.rewards.mean())
    table = result.table.drop(columns=["n"])
    chosen = args.decide_by if args.decide_by in labels else labels[short.index(args.decide_by)]
    row = table.loc[table["estimator"] == chosen].iloc[0]
    decision = decide(row, logging_value, result.messages)
    w = learned.weights
    print(f"learn-log: {args.policy} on {log.name}")
    print(
        f"learned {split} ({args.weighting}: {learned.n_updates} updates; weights "
        f"{w.minimum:.3g}..{w.maximum:.3g}, mean {w.mean:.3g}, ESS {w.ess:.0f} of "
        f"{learned.n_rounds}; {learned.n_clipped} rounds clipped at 1/π₀ = {args.clip:g})"
    )
    print(f"evaluated on the {len(test)} rounds after them")
    print(f"the logging policy's own value on those rounds: {logging_value:.5g}")
    for message in result.messages:
        print(f"warning: poor support: {message}")
    print(render(table))
    print(f"decision: {decision}", flush=True)
    checkpoint = out / "policy.pt"
    policy.save(checkpoint)
    summary: dict[str, Any] = {
        "log": str(args.log),
        "policy": args.policy,
        "weighting": args.weighting,
        "trained_rounds": len(train),
        "evaluated_rounds": len(test),
        "n_updates": learned.n_updates,
        "n_clipped": learned.n_clipped,
        "weights": vars(w),
        "logging_value": logging_value,
        "decide_by": chosen,
        "decision": decision,
        "support_warnings": result.messages,
        "checkpoint": str(checkpoint),
        "table": json.loads(table.to_json(orient="records")),
    }
    write_atomic(out / "learn-log.csv", table.to_csv(index=False))
    write_atomic(out / "learn-log.json", json.dumps(summary, indent=2) + "\n")
    print(
        f"saved the policy to {checkpoint}; serve it with: deepbandits serve --checkpoint "
        f"{checkpoint} --state NEW_STATE"
    )
    print(f"wrote {out / 'learn-log.csv'}, {out / 'learn-log.json'}", file=sys.stderr)
    return 0
