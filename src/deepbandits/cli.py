"""Command line: ``deepbandits run | compare | demo | list``. Every command has ``--help``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deepbandits.envs import env_names
from deepbandits.experiments.compare import compare, format_table
from deepbandits.experiments.specs import parse_seeds, split_specs
from deepbandits.policies import CONFIGURATIONS, distinct_policy_names, policy_names

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

    p_demo = sub.add_parser(
        "demo",
        help="the README's demo comparison",
        description=f"Compare {', '.join(DEMO_POLICIES)} on h1 (3 seeds).",
    )
    _common(p_demo, T=10000, seeds="0-2", out="results/demo")

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
        return 0
    if args.command == "run":
        policies = [args.policy]
    elif args.command == "demo":
        policies = DEMO_POLICIES
    else:
        policies = (
            distinct_policy_names() if args.policies == ["all"] else split_specs(args.policies)
        )
    try:
        seeds = parse_seeds(args.seeds)
        summary = compare(
            policies,
            args.env,
            seeds,
            args.T,
            args.out,
            jobs=args.jobs,
            progress=not args.no_progress,
        )
    except ValueError as exc:
        print(f"deepbandits: error: {exc}", file=sys.stderr)
        return 2
    print(format_table(summary))
    print(f"\nper-run records: {args.out}/<policy>/seed_<s>.csv (+ .json configuration)")
    print(f"table: {args.out / 'summary.csv'}")
    print(f"plot:  {args.out / 'regret.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
