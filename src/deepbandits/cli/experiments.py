"""The commands that run experiment configs: ``reproduce`` (the paper's, one or ``--all``,
or ``--list``) and ``experiment run|check FILE`` (a user's)."""

from __future__ import annotations

import argparse
import sys
from contextlib import closing
from pathlib import Path

from deepbandits.cli.arguments import check_writable, engine_options, executor_of
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import format_table
from deepbandits.experiments.config import (
    ExperimentConfig,
    SweepConfig,
    builtin_config,
    builtin_configs,
    load_config,
)
from deepbandits.experiments.executors import LocalExecutor
from deepbandits.experiments.reproduce import (
    expected_cpu_seconds,
    format_duration,
    reproduce_all,
    run_experiment,
)
from deepbandits.specs import format_seeds, split_specs

MATCHED = "matched"  # the config of the matched protocol, with options of its own


def list_experiments() -> int:
    """``deepbandits reproduce --list``: every shipped experiment, what it reproduces and its
    expected CPU time, quick and full."""
    configs = list(builtin_configs().values())
    rows = [("name", "reproduces", "quick CPU", "full CPU")]
    for c in configs:
        cost = [format_duration(x) if x is not None else "?" for x in (c.quick_cpu_s, c.full_cpu_s)]
        rows.append((c.name, ", ".join(c.reproduces), *cost))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    quick, full = expected_cpu_seconds(configs, True), expected_cpu_seconds(configs, False)
    print(
        f"\n{len(configs)} experiments; all of them: {format_duration(quick)} quick, "
        f"{format_duration(full)} full (CPU time on one core of a 2-core machine; divide by "
        "--jobs for the wall time)"
    )
    return 0


def reproduce_command(args: argparse.Namespace) -> int:
    """``deepbandits reproduce``: one of the paper's experiments, all of them, or the list."""
    if args.list:
        return list_experiments()
    if args.all == (args.experiment is not None):
        raise InputValueError(
            "give one experiment name or --all (or --list to see the names), e.g. "
            "'deepbandits reproduce demo-h1' or 'deepbandits reproduce --all --quick'"
        )
    if args.all:
        return _reproduce_all(args)
    config = builtin_config(args.experiment)
    if config.name != MATCHED:
        _matched_only(args)
    return _run_config(args, config)


def experiment_command(args: argparse.Namespace) -> int:
    """``deepbandits experiment run|check FILE``: a user's experiment config."""
    config = load_config(args.config)
    if args.action == "check":
        scaled = config.scaled(args.quick)
        print(f"{args.config}: a valid {scaled.kind} experiment, {scaled.name!r}: {scaled.title}")
        if isinstance(scaled, SweepConfig):
            envs = ", ".join(scaled.envs)
            print(f"  env {envs}; T={scaled.T}; seeds {format_seeds(list(scaled.seeds))}")
            for spec in scaled.policy_list():
                print(f"  policy {spec}")
        return 0
    # ``experiment`` has none of ``reproduce``'s overrides: the config alone decides
    args.seeds = args.T = None
    args.envs = args.trials = args.tuning_seeds = None
    return _run_config(args, config)


def _run_config(args: argparse.Namespace, config: ExperimentConfig) -> int:
    """Run one config into ``--out`` (default ``results/NAME``) and print where it went."""
    default = config.name + ("-quick" if args.quick else "")
    out = check_writable(args.out or Path("results") / default)
    executor = executor_of(args, local_workers=None)
    changes = {
        "envs": None if args.envs is None else split_specs([args.envs]),
        "n_trials": args.trials,
        "tuning_seeds": args.tuning_seeds,
    }
    cpu = config.quick_cpu_s if args.quick else config.full_cpu_s
    if cpu is not None and not args.no_progress:
        print(f"{config.name}: expected CPU time {format_duration(cpu)}", file=sys.stderr)
    with closing(executor):
        outcome = run_experiment(
            config,
            out,
            quick=args.quick,
            seeds=args.seeds,
            T=args.T,
            executor=executor,
            **engine_options(args),
            matched={k: v for k, v in changes.items() if v is not None},
        )
    if isinstance(config, SweepConfig):
        print(format_table(outcome.summary))
        print(f"\nruns:   {out}/<policy>/seed_<s>.json (+ .{args.format})")
    else:
        print(outcome.reports[0].read_text())
    for path in outcome.reports:
        print(f"report: {path}")
    return 0


def _reproduce_all(args: argparse.Namespace) -> int:
    """``deepbandits reproduce --all``: every experiment, then one report over all of them."""
    _matched_only(args)
    if args.seeds is not None or args.T is not None:
        raise InputValueError("--seeds and --T apply to one experiment, not to --all")
    out = check_writable(args.out or Path("results") / ("paper-quick" if args.quick else "paper"))
    configs = list(builtin_configs().values())
    cpu = expected_cpu_seconds(configs, args.quick)
    executor = executor_of(args, local_workers=None)
    wall = (
        f"about {format_duration(cpu / executor.workers)} with {executor.workers} worker(s)"
        if isinstance(executor, LocalExecutor)
        else "spread over the Ray cluster"
    )
    print(
        f"{len(configs)} experiments{' (quick)' if args.quick else ''}: expected CPU time "
        f"{format_duration(cpu)}, {wall}",
        flush=True,
    )
    with closing(executor):
        entries, (page, md) = reproduce_all(
            out, quick=args.quick, executor=executor, **engine_options(args)
        )
    failed = [e for e in entries if e["status"] != "done"]
    for entry in entries:
        print(
            f"  {entry['status']:6}  {entry['name']}"
            + (f": {entry['error']}" if entry["error"] else "")
        )
    print(f"\nreport: {page}\n        {md}")
    if failed:
        print(
            f"{len(failed)} experiment(s) failed; their tracebacks are in OUT/<name>/error.txt; "
            "repeat the command to resume",
            file=sys.stderr,
        )
        return 1
    return 0


def _matched_only(args: argparse.Namespace) -> None:
    """Refuse the options of ``reproduce matched`` for the paper's experiments."""
    given = [
        flag
        for flag, value in (
            ("--envs", args.envs),
            ("--trials", args.trials),
            ("--tuning-seeds", args.tuning_seeds),
        )
        if value not in (None, False)
    ]
    if given:
        raise InputValueError(
            f"{', '.join(given)} {'is an option' if len(given) == 1 else 'are options'} of "
            f"'deepbandits reproduce {MATCHED}' only, not of "
            f"{'--all' if args.experiment is None else repr(args.experiment)}"
        )
