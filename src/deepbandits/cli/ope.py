"""``deepbandits ope``: off-policy evaluation of a policy on a logged table, printed as a table and
written as CSV, Parquet and a figure.

The log is ``obd[:behavior=random,campaign=all]`` (the Open Bandit Dataset from the data
directory) or the path of a service log (``deepbandits export-log``, Parquet or CSV). The
policy is ``obd-bts`` (OBD's Bernoulli Thompson sampling, whose true value is known: the
ground-truth experiment of :mod:`deepbandits.ope.obd`), ``uniform``, or a policy of the library
(``linucb:alpha=0.5``), which learns the first ``--train-fraction`` of the log
(:func:`~deepbandits.ope.warm.learn_log`) and is evaluated on the rest, against the logging
policy's own value there; ``--replay`` also replays it, learning, on the rest. A service log
says what the service knew about its policy (:class:`~deepbandits.logs.service.LoggingPolicy`):
a policy named without a reward range takes the logging policy's, when it takes one.

Long work (learning the log, the reward model's folds, the replay, OBD's bootstrap runs) shows a
progress bar on stderr when stderr is a terminal, unless ``--no-progress``.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from deepbandits._io import write_atomic
from deepbandits.cli.arguments import check_writable, nonnegative_int, positive_float
from deepbandits.errors import InputValueError

if TYPE_CHECKING:
    from deepbandits.logs.service import LoggingPolicy

ESTIMATOR_HELP = (
    "all, or a comma list of ips,snips,dm,dr,sndr,switch-dr,dr-os,sg-ips,sg-dr, their SLOPE-"
    "tuned forms switch-dr-slope,dr-os-slope,sg-ips-slope,sg-dr-slope, mips,snmips (actions "
    "with features) and bipw (balanced IPW), each with its settings if wanted "
    "(switch-dr:tau=10,dr-os:lam=5)"
)
#: The numeric options: flag, type, default and what it sets (the help adds the default).
NUMBERS: tuple[tuple[str, Callable[[str], Any], float, str], ...] = (
    ("--folds", nonnegative_int, 5, "cross-fitting folds"),
    ("--n-bootstrap", nonnegative_int, 1000, "bootstrap resamples"),
    ("--alpha", positive_float, 0.05, "1 - coverage"),
    ("--switch-tau", positive_float, 100.0, "Switch-DR's τ"),
    ("--shrinkage-lambda", positive_float, 100.0, "DRos's λ"),
    ("--runs", nonnegative_int, 30, "obd-bts: bootstrap samples of the log, as in OBP"),
    ("--train-fraction", positive_float, 0.5, "library policies: the share of the log learned"),
    ("--seed", nonnegative_int, 0, "seed"),
)


def add_ope_options(p: argparse.ArgumentParser) -> None:
    """The ``ope`` command's options."""
    p.add_argument(
        "--log",
        required=True,
        help="obd[:behavior=random|bts,campaign=all|men|women] (the Open Bandit Dataset in the "
        "data directory), or the path of a service log (deepbandits export-log; Parquet or "
        "CSV with columns action, propensity, reward, contexts[, mask])",
    )
    p.add_argument(
        "--policy",
        default=None,
        help="obd-bts (default on OBD: BTS, whose value is known), uniform, or a library "
        "policy NAME[:key=value,...] trained on the first --train-fraction of the log",
    )
    p.add_argument("--estimators", default="all", help=ESTIMATOR_HELP + " (default: all)")
    p.add_argument(
        "--reward-model",
        default="auto",
        choices=("auto", "logistic", "ridge", "hgb", "network"),
        help="q̂ of DM and the DR family, cross-fitted (default: auto)",
    )
    for flag, kind, default, text in NUMBERS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} ({default:g})")
    p.add_argument(
        "--warm-weights",
        choices=("none", "ips"),
        default="none",
        help="library policies: learn the training part unweighted or by clipped IPS weights",
    )
    p.add_argument("--replay", action="store_true", help="also replay the policy, learning")
    p.add_argument(
        "--propensities",
        choices=("logged", "estimated"),
        default="logged",
        help="the log's own propensities, or estimated by a cross-fitted logistic regression of "
        "the logged arm on the context (for a log whose propensities are missing or not trusted)",
    )
    p.add_argument(
        "--select",
        choices=("mse", "cv", "slope"),
        default=None,
        help="also say which of the estimators to trust, by their estimated MSE with the bias "
        "bounded against IPS (mse), by cross-validation (cv, Cief et al. 2025) or by SLOPE "
        "(slope, Su et al. 2020), and write OUT/selection.csv (not with obd-bts)",
    )
    p.add_argument("--data-dir", type=Path, default=None, help="data directory holding obd/")
    p.add_argument("--out", type=Path, default=Path("results/ope"), help="results/ope")
    p.add_argument(
        "--no-progress", action="store_true", help="hide progress bars (shown on a terminal)"
    )


def parse_log_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``obd:campaign=men`` → ``("obd", {"campaign": "men"})``; anything else is a path."""
    from deepbandits.specs import parse_spec

    if text == "obd" or text.startswith("obd:"):
        name, params = parse_spec(text)
        unknown = set(params) - {"behavior", "campaign", "user_features", "affinity"}
        if unknown:
            raise InputValueError(
                f"unknown OBD option(s) {', '.join(sorted(unknown))} in --log {text!r}; "
                "options: behavior, campaign, user_features, affinity"
            )
        return name, params
    return "path", {"path": text}


def _fmt(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else f"{value:.5g}"
    return str(value)


def render(table: pd.DataFrame) -> str:
    """The table as aligned text: estimator, estimate, interval, ESS, and the truth columns."""
    cols = ["name", "estimate", "lower", "upper", "ess"]
    cols += [
        c
        for c in ("truth", "relative_error", "covered", "rel_error_mean", "rel_error_std")
        if c in table
    ]
    cols += [c for c in ("obp_mean", "obp_std") if c in table]
    rows = [[_fmt(v) for v in row] for row in table[cols].itertuples(index=False)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    body = [
        "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w)
            for i, (v, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    return "\n".join([line, *body])


def _write(table: pd.DataFrame, out: Path, title: str, refs: dict[str, float]) -> list[Path]:
    from deepbandits.ope.figure import estimates_figure
    from deepbandits.plotting.style import save_figure

    write_atomic(out / "ope.csv", table.to_csv(index=False))
    buffer = io.BytesIO()
    table.to_parquet(buffer, index=False)
    write_atomic(out / "ope.parquet", buffer.getvalue())
    figures = save_figure(estimates_figure(table, title, refs), out / "ope")
    return [out / "ope.csv", out / "ope.parquet", *figures]


def ope_command(args: argparse.Namespace) -> int:
    """Run ``deepbandits ope`` (module notes)."""
    from deepbandits.ope.estimator import check_estimators
    from deepbandits.ope.estimators import check_threshold
    from deepbandits.specs import split_specs

    kind, params = parse_log_spec(args.log)
    estimators = check_estimators(
        args.estimators if args.estimators == "all" else split_specs([args.estimators]),
        tau=check_threshold(args.switch_tau, "--switch-tau"),
        lam=check_threshold(args.shrinkage_lambda, "--shrinkage-lambda"),
    )
    if not 0.0 < args.alpha < 1.0:
        raise InputValueError(f"--alpha must be in (0, 1), but {args.alpha} is given")
    out = check_writable(args.out)
    policy = args.policy or ("obd-bts" if kind == "obd" else None)
    if policy is None:
        raise InputValueError("--policy is needed for a service log: uniform or a library policy")
    if args.select and policy == "obd-bts":
        raise InputValueError(
            "--select needs --policy uniform or a library policy (obd-bts is evaluated over "
            "bootstrap samples of the log, not on one log)"
        )
    options = dict(
        estimators=estimators,
        reward_model=args.reward_model,
        n_folds=args.folds,
        n_bootstrap=args.n_bootstrap,
        alpha=args.alpha,
        seed=args.seed,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    selection = None
    if policy == "obd-bts":
        table, title, refs, notes = _obd_bts(kind, params, args, options)
    else:
        table, title, refs, notes, selection = _evaluate_policy(kind, params, policy, args, options)
    print(title)
    for note in notes:
        print(note)
    print(render(table), flush=True)
    written = _write(table, out, title, refs)
    if selection is not None:
        print(selection.reason, flush=True)
        write_atomic(out / "selection.csv", selection.table.to_csv(index=False))
        written.append(out / "selection.csv")
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


def _obd_bts(
    kind: str, params: dict[str, Any], args: argparse.Namespace, options: dict[str, Any]
) -> tuple[pd.DataFrame, str, dict[str, float], list[str]]:
    from deepbandits.ope.obd import ground_truth

    if kind != "obd" or params.get("behavior", "random") != "random":
        raise InputValueError(
            "--policy obd-bts is evaluated on OBD's random log: --log "
            "obd:behavior=random,campaign=..."
        )
    campaign = params.get("campaign", "all")
    gt = ground_truth(
        campaign,
        data_dir=args.data_dir,
        reward_model=options["reward_model"],
        estimators=options["estimators"],
        n_bootstrap=options["n_bootstrap"],
        n_runs=args.runs,
        seed=args.seed,
        progress=options["progress"],
    )
    table = gt.table
    lo, hi = gt.truth_interval
    mass = "/".join(f"{m:.3f}" for m in gt.policy.mass_before_normalising)
    notes = [
        f"truth: BTS's click rate on its own log, {gt.truth:.5g} (95% {lo:.5g}..{hi:.5g})",
        f"π_bts(item | position) from the BTS log's propensities: they sum to {mass} over the "
        f"items of positions 1/2/3 before normalising; an (item, position)'s propensity varies "
        f"by {gt.policy.propensity_cv:.0%} (median coefficient of variation) over the week",
        f"intervals: {1 - options['alpha']:.0%} Poisson bootstrap, {options['n_bootstrap']} "
        f"resamples; rel_error_mean/std: over {args.runs} bootstrap samples of the log "
        "(OBP's protocol; obp_*: its published numbers, campaign all)",
    ]
    return table, f"ope: BTS on obd/random/{campaign}", {"truth": gt.truth}, notes


def _evaluate_policy(
    kind: str,
    params: dict[str, Any],
    spec: str,
    args: argparse.Namespace,
    options: dict[str, Any],
) -> tuple[pd.DataFrame, str, dict[str, float], list[str], Any]:
    """The OPE table, its title, reference values and notes, and the
    :class:`~deepbandits.ope.Selection` of ``--select`` (None without it)."""
    from deepbandits.logs.load import load_logged
    from deepbandits.ope.evaluate import evaluate
    from deepbandits.ope.replay import replay
    from deepbandits.serve.export import read_log_and_policy

    logging_policy = None
    if kind == "path":  # an exported file or the service's state folder
        log, logging_policy = read_log_and_policy(params["path"])
    else:
        log = load_logged("obd", data_dir=args.data_dir, **params)
    notes = [f"log: {log!r}"]
    if logging_policy is not None:
        notes.append(f"logged by {logging_policy.describe()}")
    if args.propensities == "estimated":
        from deepbandits.ope.propensity import with_estimated_propensities

        logged = log.propensities
        log = with_estimated_propensities(log, seed=args.seed)
        gap = float(np.median(np.abs(log.propensities / logged - 1.0)))
        notes[0] = f"log: {log!r}"
        notes.append(
            "propensities estimated (cross-fitted logistic regression of the arm on the context); "
            f"median relative difference from the logged ones: {gap:.1%}"
        )
    refs: dict[str, float] = {}
    progress = options["progress"]
    if spec == "uniform":
        available = np.ones((len(log), log.n_actions)) if log.masks is None else log.masks
        target, test = available / available.sum(axis=1, keepdims=True), log
    else:
        name, kw, taken = policy_keywords(spec, logging_policy)
        notes.extend(taken)
        target, test, trained = _trained_policy(log, spec, name, kw, args, progress)
        notes.append(trained)
    refs["logging policy (on-policy)"] = float(test.rewards.mean())
    notes.append(
        f"the logging policy's own value on the evaluated rounds: {test.rewards.mean():.5g}"
    )
    result = evaluate(test, target, warn=False, **options)  # the notes say what is poor
    selection = None
    if args.select:
        from deepbandits.ope.selection import select_estimator

        selection = select_estimator(
            test,
            result.action_dist,
            options["estimators"],
            method=args.select,
            q_hat=result.q_hat,
            seed=args.seed,
        )
    for message in result.messages:
        notes.append(f"warning: poor support: {message}")
    table = result.table.drop(columns=["n"])
    if args.replay:
        if spec == "uniform":
            raise InputValueError("--replay needs a library policy (it learns as it goes)")
        from deepbandits.policies import make_policy

        res = replay(make_policy(name, **kw), test, seed=args.seed, progress=progress)
        lower, upper = res.interval(options["alpha"])
        row = {
            "estimator": "replay",
            "name": f"replay ({res.n_accepted} rounds)",
            "estimate": res.value,
            "lower": lower,
            "upper": upper,
            "std": res.std_error,
            "ess": float(res.n_accepted),
        }
        table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    return table, f"ope: {spec} on {log.name}", refs, notes, selection


def policy_keywords(
    spec: str, logging_policy: LoggingPolicy | None
) -> tuple[str, dict[str, Any], list[str]]:
    """The name and keywords of the library policy ``spec``, its reward range taken from the
    ``logging_policy`` where the spec gives none and the policy takes one (a reward range the
    user gives wins), and the note that says so (empty when nothing was taken)."""
    from deepbandits.logs.service import format_range
    from deepbandits.policies import parameter_names
    from deepbandits.specs import parse_spec

    name, kw = parse_spec(spec)
    bounds = None if logging_policy is None else logging_policy.reward_range
    if bounds is None or "reward_range" in kw or "reward_range" not in parameter_names(name):
        return name, kw, []
    note = f"{name} takes the reward range {format_range(bounds)} of the logging service"
    return name, {**kw, "reward_range": bounds}, [note]


def _trained_policy(
    log: Any,
    spec: str,
    name: str,
    kw: dict[str, Any],
    args: argparse.Namespace,
    progress: bool,
) -> tuple[Any, Any, str]:
    from deepbandits.ope.warm import learn_log
    from deepbandits.policies import make_policy

    if not 0.0 < args.train_fraction < 1.0:
        raise InputValueError(
            f"--train-fraction must be in (0, 1), but {args.train_fraction} is given"
        )
    policy = make_policy(name, **kw)
    train, test = log.split(args.train_fraction, seed=None)
    weights = None if args.warm_weights == "none" else "ips"
    done = learn_log(policy, train, weights=weights, progress=progress)
    note = (
        f"{spec} learned the first {len(train)} rounds ({done.n_updates} updates"
        f"{', IPS-weighted' if weights else ''}) and is evaluated on the last {len(test)}"
    )
    return policy, test, note
