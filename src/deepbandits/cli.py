"""Command line: ``deepbandits run | compare | demo | report | reproduce | tune | list``. Every
command has ``--help``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deepbandits.envs import env_names
from deepbandits.experiments.compare import compare, format_table, label_of
from deepbandits.experiments.matched import DESCRIPTION as MATCHED_DESCRIPTION
from deepbandits.experiments.matched import run_matched
from deepbandits.experiments.paper import (
    EXPERIMENTS,
    PAPER_CHECKPOINTS,
    experiment_names,
    reproduce,
)
from deepbandits.experiments.report import build_report
from deepbandits.experiments.specs import parse_seeds, split_specs
from deepbandits.experiments.tune import tune
from deepbandits.policies import CONFIGURATIONS, distinct_policy_names, policy_names

MATCHED = "matched"  # reproduce NAME of the matched protocol
DEMO_POLICIES = ["linucb", "neural-lingreedy", "neural-linucb", "neural-sigma2-linucb"]
SPEC_HELP = (
    "registry name with optional parameters, NAME[:key=value,key=value], the keywords of "
    "make_policy / make_env (lists in brackets: reward_range=[0,1])"
)


def _common(
    p: argparse.ArgumentParser, *, T: int, seeds: str, out: str = "results", env: str = "h1"
) -> None:
    p.add_argument("--out", type=Path, default=Path(out), help=f"output folder (default: {out})")
    p.add_argument(
        "--env",
        default=env,
        help=f"environment, {SPEC_HELP} (default: {env}); names: {', '.join(env_names())}",
    )
    p.add_argument("--T", type=int, default=T, help=f"rounds per run (default: {T})")
    p.add_argument("--seeds", default=seeds, help=f"seeds, e.g. 0-4 or 1,3,5 (default: {seeds})")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (default: 1)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _checkpoints(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoints",
        default="",
        help="rounds at which to score the policy's forecasts on a hold-out set (Eq. calib2), "
        "e.g. 0,2000,5000,7500 (default: none)",
    )
    p.add_argument(
        "--holdout", type=int, default=500, help="hold-out rounds per checkpoint (default: 500)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepbandits",
        description="Neural contextual bandits: run and compare policies on bandit environments.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser(
        "run",
        help="run one policy over several seeds",
        description=(
            "Run one policy on one environment for each seed; write per-round CSV + JSON, "
            "a summary table and a regret plot."
        ),
    )
    p_run.add_argument(
        "--policy", required=True, help=f"policy, {SPEC_HELP}; names: {', '.join(policy_names())}"
    )
    _common(p_run, T=10000, seeds="0")
    _checkpoints(p_run)

    p_cmp = sub.add_parser(
        "compare",
        help="compare several policies on the same seeds",
        description=(
            "Run several policies on one environment and the same seeds; print the table of "
            "final regret (mean ± std) and plot cumulative regret with mean ± std bands."
        ),
    )
    p_cmp.add_argument(
        "--policy",
        "--policies",
        dest="policies",
        nargs="+",
        required=True,
        metavar="POLICY",
        help=(
            f"policies, each {SPEC_HELP}; 'all' for every registered policy and named configuration"
        ),
    )
    _common(p_cmp, T=10000, seeds="0-4")
    _checkpoints(p_cmp)

    p_demo = sub.add_parser(
        "demo",
        help="the README's demo comparison",
        description=f"Compare {', '.join(DEMO_POLICIES)} on h1 (3 seeds), with hold-out "
        "checkpoints at rounds 0, 2000, 5000, 7500, and write the report to OUT/report.",
    )
    _common(p_demo, T=10000, seeds="0-2", out="results/demo")

    p_rep = sub.add_parser(
        "report",
        help="tables and figures of a results folder",
        description=(
            "Turn every comparison under RESULTS into tables (final regret, cumulative reward, "
            "calibration, sharpness, wall time: mean ± std over seeds) and figures, written as "
            "OUT/index.html and OUT/README.md."
        ),
    )
    p_rep.add_argument("results", type=Path, help="folder written by run/compare/reproduce")
    p_rep.add_argument("--out", type=Path, default=Path("report"), help="default: report")

    p_rep2 = sub.add_parser(
        "reproduce",
        help="run one of the paper's experiments and report it",
        description="Run a named experiment of the paper (resumable) and write its report to "
        "OUT/report. 'deepbandits list' describes each experiment. 'matched' is the matched "
        "protocol: every neural policy with the same network budget, tuned alike (Optuna), "
        "evaluated on fresh seeds and paired against Neural-σ²-LinUCB; it writes "
        "OUT/matched.csv and OUT/matched.md and takes --quick, --envs, --trials and "
        "--tuning-seeds.",
    )
    p_rep2.add_argument("experiment", help=f"one of: {', '.join(experiment_names())}, {MATCHED}")
    p_rep2.add_argument("--out", type=Path, default=None, help="default: results/EXPERIMENT")
    p_rep2.add_argument(
        "--seeds", default=None, help="override the paper's seeds, e.g. 0-1 (matched: evaluation)"
    )
    p_rep2.add_argument(
        "--T", type=int, default=None, help="override the paper's horizon (matched: every env)"
    )
    p_rep2.add_argument("--jobs", type=int, default=1, help="runs in parallel processes")
    p_rep2.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p_rep2.add_argument(
        "--quick",
        action="store_true",
        help="matched only: smoke-test scale (h1 and shuttle, T=1000, 3 trials, 3 eval seeds, "
        "100 training steps)",
    )
    p_rep2.add_argument("--envs", default=None, help="matched only: environments, e.g. h1,shuttle")
    p_rep2.add_argument("--trials", type=int, default=None, help="matched only: trials per tuning")
    p_rep2.add_argument(
        "--tuning-seeds", default=None, help="matched only: seeds of every trial (default 100-101)"
    )

    p_tune = sub.add_parser(
        "tune",
        help="tune a policy's hyperparameters (Optuna), then evaluate the best on other seeds",
        description=(
            "Search the policy's main hyperparameters (those its specification leaves out) for "
            "the lowest mean final regret over the tuning seeds, then compare the best setting "
            "with the untuned one on the evaluation seeds. Writes OUT/study.db (repeat the "
            "command to resume), OUT/trials.csv, OUT/tune.json and OUT/eval/."
        ),
    )
    p_tune.add_argument(
        "--policy", required=True, help=f"policy, {SPEC_HELP}; keys given are not searched"
    )
    p_tune.add_argument("--env", default="h1", help=f"environment, {SPEC_HELP} (default: h1)")
    p_tune.add_argument("--T", type=int, default=2000, help="rounds per run (default: 2000)")
    p_tune.add_argument(
        "--tuning-seeds", default="100-102", help="seeds of every trial (default: 100-102)"
    )
    p_tune.add_argument(
        "--eval-seeds",
        default="0-4",
        help="seeds of the final comparison, disjoint from the tuning seeds (default: 0-4)",
    )
    p_tune.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials in the study, earlier ones in OUT included (default: 20, or no limit "
        "with --timeout-minutes)",
    )
    p_tune.add_argument(
        "--timeout-minutes", type=float, default=None, help="stop starting trials after this"
    )
    p_tune.add_argument(
        "--search", default=None, help="search only these parameters, e.g. alpha,lam"
    )
    p_tune.add_argument("--seed", type=int, default=0, help="sampler seed (default: 0)")
    p_tune.add_argument(
        "--jobs", type=int, default=1, help="evaluation runs in parallel processes (default: 1)"
    )
    p_tune.add_argument(
        "--out", type=Path, default=None, help="output folder (default: results/tune/ENV/POLICY)"
    )
    p_tune.add_argument("--no-progress", action="store_true", help="hide progress bars")

    sub.add_parser(
        "list",
        help="list registered policies and environments",
        description="Print the registry names accepted by --policy and --env.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "list":
        print("policies:", ", ".join(policy_names(configurations=False)))
        print("configurations:")
        for name, (base, settings) in CONFIGURATIONS.items():
            keys = ",".join(f"{k}={v}" for k, v in settings.items())
            print(f"  {name} = {base}:{keys}")
        print("environments:", ", ".join(env_names()))
        print("paper experiments (deepbandits reproduce NAME):")
        for name in experiment_names():
            exp = EXPERIMENTS[name]
            print(f"  {name}: {exp.description} [{exp.env}; T={exp.T}; {len(exp.seeds)} seeds]")
        print(f"  {MATCHED}: {MATCHED_DESCRIPTION}")
        return 0
    try:
        if args.command == "report":
            page, md = build_report(args.results, args.out)
            print(f"report: {page}\n        {md}")
            return 0
        if args.command == "reproduce":
            if args.experiment == MATCHED:
                return _matched(args)
            if args.experiment not in EXPERIMENTS:
                names = ", ".join([*experiment_names(), MATCHED])
                raise ValueError(f"unknown experiment {args.experiment!r}; expected one of {names}")
            _matched_only(args)
            out = args.out or Path("results") / args.experiment
            summary, page, md = reproduce(
                args.experiment,
                out,
                seeds=None if args.seeds is None else parse_seeds(args.seeds),
                T=args.T,
                jobs=args.jobs,
                progress=not args.no_progress,
            )
            print(format_table(summary))
            print(f"\nruns:   {out}/<policy>/seed_<s>.csv\nreport: {page}\n        {md}")
            return 0
        if args.command == "tune":
            return _tune(args)
    except ValueError as exc:
        print(f"deepbandits: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "run":
        policies = [args.policy]
    elif args.command == "demo":
        policies = DEMO_POLICIES
    else:
        policies = (
            distinct_policy_names() if args.policies == ["all"] else split_specs(args.policies)
        )
    demo = args.command == "demo"
    try:
        seeds = parse_seeds(args.seeds)
        checkpoints = (
            [c for c in PAPER_CHECKPOINTS if c <= args.T]
            if demo
            else parse_checkpoints(args.checkpoints)
        )
        summary = compare(
            policies,
            args.env,
            seeds,
            args.T,
            args.out,
            jobs=args.jobs,
            progress=not args.no_progress,
            checkpoints=checkpoints,
            holdout_size=getattr(args, "holdout", 500),
        )
        page = build_report(args.out, args.out / "report")[0] if demo else None
    except ValueError as exc:
        print(f"deepbandits: error: {exc}", file=sys.stderr)
        return 2
    print(format_table(summary))
    print(f"\nper-run records: {args.out}/<policy>/seed_<s>.csv (+ .json configuration)")
    print(f"table: {args.out / 'summary.csv'}")
    print(f"plot:  {args.out / 'regret.png'}")
    if page is not None:
        print(f"report (tables, calibration and variance figures): {page}")
    else:
        print(f"report: deepbandits report {args.out} --out {args.out / 'report'}")
    return 0


def _matched_only(args: argparse.Namespace) -> None:
    """Refuse the options of ``reproduce matched`` for the paper's experiments."""
    given = [
        flag
        for flag, value in (
            ("--quick", args.quick),
            ("--envs", args.envs),
            ("--trials", args.trials),
            ("--tuning-seeds", args.tuning_seeds),
        )
        if value not in (None, False)
    ]
    if given:
        raise ValueError(
            f"{', '.join(given)} {'is an option' if len(given) == 1 else 'are options'} of "
            f"'deepbandits reproduce {MATCHED}' only, not of {args.experiment!r}"
        )


def _matched(args: argparse.Namespace) -> int:
    """``deepbandits reproduce matched``: run the matched protocol and print its report."""
    out = args.out or Path("results") / MATCHED
    try:
        run_matched(
            out,
            envs=None if args.envs is None else split_specs([args.envs]),
            n_trials=args.trials,
            eval_seeds=None if args.seeds is None else parse_seeds(args.seeds),
            tuning_seeds=None if args.tuning_seeds is None else parse_seeds(args.tuning_seeds),
            T=args.T,
            jobs=args.jobs,
            progress=not args.no_progress,
            quick=args.quick,
        )
    except FileNotFoundError as exc:  # a real dataset that is missing and cannot be downloaded
        raise ValueError(str(exc)) from exc
    print((out / "matched.md").read_text())
    print(f"table:  {out / 'matched.csv'}\nreport: {out / 'matched.md'}")
    print(f"tunings: {out}/<env>/<policy>/ (repeat the command to resume)")
    return 0


def _tune(args: argparse.Namespace) -> int:
    """``deepbandits tune``: run :func:`~deepbandits.experiments.tune.tune` and print the
    evaluation table, the best specification and where the files went."""
    timeout = None if args.timeout_minutes is None else 60.0 * args.timeout_minutes
    n_trials = 20 if args.trials is None and timeout is None else args.trials
    out = args.out or Path("results") / "tune" / label_of(args.env) / label_of(args.policy)
    result = tune(
        args.policy,
        args.env,
        T=args.T,
        tuning_seeds=parse_seeds(args.tuning_seeds),
        eval_seeds=parse_seeds(args.eval_seeds),
        out=out,
        n_trials=n_trials,
        timeout=timeout,
        search=args.search,
        seed=args.seed,
        jobs=args.jobs,
        progress=not args.no_progress,
    )
    print(format_table(result.summary))
    print(
        f"\nbest: {result.best_spec}\n      (mean final regret {result.best_value:.1f} over "
        f"tuning seeds {args.tuning_seeds}; the table uses evaluation seeds {args.eval_seeds})"
    )
    print(
        f'deepbandits compare --policy "{result.best_spec}" --env "{args.env}" --T {args.T} '
        f"--seeds {args.eval_seeds}   # accepts it"
    )
    print(f"\nsettings and results: {result.path}")
    print(f"trials: {out / 'trials.csv'}")
    print(f"study:  {out / 'study.db'} (repeat the command, with more --trials, to resume)")
    return 0


def parse_checkpoints(text: str) -> list[int]:
    """``"0,2000,5000"`` → [0, 2000, 5000]; empty → []."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--checkpoints must be comma-separated integers, got {text!r}") from None


if __name__ == "__main__":
    sys.exit(main())
