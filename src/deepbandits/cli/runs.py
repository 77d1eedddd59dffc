"""The commands that run policies and summarise what they wrote: ``run``, ``compare``,
``demo``, ``tune`` and ``report``."""

from __future__ import annotations

import argparse
import shlex
from contextlib import closing
from pathlib import Path

from deepbandits.cli.arguments import check_writable, engine_options, env_of, executor_of
from deepbandits.experiments.compare import compare, format_table, label_of
from deepbandits.experiments.reproduce import PAPER_CHECKPOINTS
from deepbandits.experiments.tune import tune
from deepbandits.policies import distinct_policy_names
from deepbandits.report import build_report
from deepbandits.specs import format_seeds, split_specs

DEMO_POLICIES = ["linucb", "neural-lingreedy", "neural-linucb", "neural-sigma2-linucb"]


def compare_command(args: argparse.Namespace) -> int:
    """``deepbandits run``, ``compare`` and ``demo``: run policies over seeds and summarise."""
    demo = args.command == "demo"
    if args.command == "run":
        policies = [args.policy]
    elif demo:
        policies = DEMO_POLICIES
    else:
        policies = (
            distinct_policy_names() if args.policies == ["all"] else split_specs(args.policies)
        )
    env = env_of(args)
    check_writable(args.out)
    executor = executor_of(args, local_workers=1)
    with closing(executor):
        summary = compare(
            policies,
            env,
            args.seeds,
            args.T,
            args.out,
            executor=executor,
            **engine_options(args),
            checkpoints=[c for c in PAPER_CHECKPOINTS if c <= args.T] if demo else args.checkpoints,
            holdout_size=getattr(args, "holdout", 500),
        )
    page = build_report(args.out, args.out / "report")[0] if demo else None
    print(format_table(summary))
    print(f"\nper-run records: {args.out}/<policy>/seed_<s>.{args.format} (+ .json configuration)")
    print(f"table: {args.out / 'summary.csv'}")
    print(f"plot:  {args.out / 'regret.png'}")
    if page is not None:
        print(f"report (tables, calibration and variance figures): {page}")
    else:
        print(f"report: deepbandits report {args.out} --out {args.out / 'report'}")
    return 0


def tune_command(args: argparse.Namespace) -> int:
    """``deepbandits tune``: run :func:`~deepbandits.experiments.tune.tune` and print the
    evaluation table, the best specification and where the files went."""
    env_of(args)
    timeout = None if args.timeout_minutes is None else 60.0 * args.timeout_minutes
    n_trials = 20 if args.trials is None and timeout is None else args.trials
    out = args.out or Path("results") / "tune" / label_of(args.env) / label_of(args.policy)
    check_writable(out)
    # the options named as tune's keywords go to it as they are
    as_given = {
        k: getattr(args, k) for k in ("T", "tuning_seeds", "eval_seeds", "search", "seed", "jobs")
    }
    result = tune(
        args.policy,
        args.env,
        out=out,
        n_trials=n_trials,
        timeout=timeout,
        progress=not args.no_progress,
        **as_given,
    )
    print(format_table(result.summary))
    tuning_seeds, eval_seeds = format_seeds(args.tuning_seeds), format_seeds(args.eval_seeds)
    print(
        f"\nbest: {result.best_spec}\n      (mean final regret {result.best_value:.1f} over "
        f"tuning seeds {tuning_seeds}; the table uses evaluation seeds {eval_seeds})"
    )
    print(
        f'deepbandits compare --policy "{result.best_spec}" --env "{args.env}" --T {args.T} '
        f"--seeds {eval_seeds} --out {shlex.quote(str(out / 'best'))}   # accepts it"
    )
    if result.verdict is not None:
        print(f"\n{'' if result.verdict.beats_untuned else 'note: '}{result.verdict.message}")
    print(f"\nsettings and results: {result.path}")
    print(f"trials: {out / 'trials.csv'}")
    print(f"study:  {out / 'study.db'} (repeat the command, with more --trials, to resume)")
    return 0


def report_command(args: argparse.Namespace) -> int:
    """``deepbandits report``: tables and figures of a results folder."""
    page, md = build_report(args.results, check_writable(args.out))
    print(f"report: {page}\n        {md}")
    return 0
