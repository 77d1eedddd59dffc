"""Command line: ``deepbandits run | compare | demo | report | reproduce | tune | list``. Every
command has ``--help``.

A mistake in what the user gave (an option, a specification, a file, an output folder, a dataset
that is missing offline) is reported in one paragraph on stderr, ``deepbandits: error: ...``, with
exit status 2, before any computation when it can be. Any other exception is a bug: one paragraph
says so and where its full traceback was saved (:func:`save_crash_report`), exit status 1. Ctrl-C
exits with status 130.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import NoReturn

from deepbandits._io import write_atomic
from deepbandits._version import __version__
from deepbandits.datasets.location import cache_home
from deepbandits.envs import env_names
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.experiments.compare import compare, format_table, label_of
from deepbandits.experiments.config import (
    ExperimentConfig,
    builtin_config,
    builtin_configs,
    load_config,
)
from deepbandits.experiments.executors import BACKENDS, Executor, LocalExecutor, make_executor
from deepbandits.experiments.reproduce import (
    PAPER_CHECKPOINTS,
    expected_cpu_seconds,
    format_duration,
    reproduce_all,
    run_experiment,
)
from deepbandits.experiments.runner import FORMATS
from deepbandits.experiments.specs import format_seeds, parse_seeds, split_specs
from deepbandits.experiments.tune import tune
from deepbandits.policies import (
    CONFIGURATIONS,
    distinct_policy_names,
    parameter_table,
    policy_names,
)
from deepbandits.report import build_report

#: Exceptions caused by what the user gave or by the machine's files and folders: reported in
#: one paragraph with exit status 2. Anything else is a bug of the library.
USER_ERRORS = (DeepBanditsError, ValueError, TypeError, OSError)
MATCHED = "matched"  # the config of the matched protocol, with options of its own
DEMO_POLICIES = ["linucb", "neural-lingreedy", "neural-linucb", "neural-sigma2-linucb"]
SPEC_HELP = (
    "registry name with optional parameters, NAME[:key=value,key=value], the keywords of "
    "make_policy / make_env (lists in brackets: reward_range=[0,1]); 'deepbandits list "
    "--params NAME' lists a policy's parameters"
)


class CommandLineError(InputValueError):
    """A command line that does not parse: an unknown option, a missing or malformed value."""


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`CommandLineError` instead of exiting, so that
    :func:`main` reports every mistake alike (``--help`` still exits)."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(f"{message} (see '{self.prog} --help')")


def _integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return parse


positive_int = _integer_at_least(1)
nonnegative_int = _integer_at_least(0)


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def seed_list(text: str) -> list[int]:
    """An argparse ``type``: seeds, :func:`~deepbandits.experiments.specs.parse_seeds`."""
    try:
        return parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_checkpoints(text: str) -> list[int]:
    """An argparse ``type``: ``"0,2000,5000"`` → [0, 2000, 5000]; empty → []."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not all(x.isdecimal() for x in items):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= 0 (e.g. 0,2000,5000), got {text!r}"
        )
    return [int(x) for x in items]


def check_writable(folder: Path, flag: str = "--out") -> Path:
    """Create ``folder`` and write and delete a small file in it, so that an output folder that
    cannot be written is refused before any computation starts; returns ``folder``."""
    if folder.exists() and not folder.is_dir():
        raise InputValueError(f"{flag} {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".deepbandits-probe-") as probe:
            probe.write(b"probe")
            probe.flush()
    except OSError as exc:
        raise InputValueError(
            f"{flag} {str(folder)!r} is not a writable folder: {describe(exc)}"
        ) from None
    return folder


def _common(
    p: argparse.ArgumentParser, *, T: int, seeds: str, out: str = "results", env: str = "h1"
) -> None:
    p.add_argument("--out", type=Path, default=Path(out), help=f"output folder (default: {out})")
    p.add_argument(
        "--env",
        default=env,
        help=f"environment, {SPEC_HELP} (default: {env}); names: {', '.join(env_names())}",
    )
    p.add_argument("--T", type=positive_int, default=T, help=f"rounds per run (default: {T})")
    p.add_argument(
        "--seeds",
        type=seed_list,
        default=seeds,
        help=f"seeds, e.g. 0-4 or 1,3,5, each once (default: {seeds})",
    )
    _engine(p, jobs_default=1)


def _checkpoints(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoints",
        type=parse_checkpoints,
        default="",
        help="rounds at which to score the policy's forecasts on a hold-out set (Eq. calib2), "
        "e.g. 0,2000,5000,7500 (default: none)",
    )
    p.add_argument(
        "--holdout",
        type=positive_int,
        default=500,
        help="hold-out rounds per checkpoint (default: 500)",
    )


def _experiment_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that run experiment configs (``reproduce``, ``experiment``)."""
    p.add_argument("--quick", action="store_true", help="the config's smoke-test scale ([quick])")
    _engine(p, jobs_default=None)


def _engine(p: argparse.ArgumentParser, *, jobs_default: int | None) -> None:
    """Options of the sweep engine: workers, backend, format, recomputation, device.
    ``jobs_default`` is only shown: ``--jobs`` is None unless given (:func:`_executor`)."""
    every = "every core" if jobs_default is None else str(jobs_default)
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help=f"runs in parallel worker processes, one thread each (default: {every}; with "
        "--backend ray: the CPUs of a new local Ray instance)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="where runs execute: local worker processes, or a Ray cluster (pip install "
        "'deepbandits[ray]'; default: local)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Ray cluster address, 'auto' or HOST:PORT (default: $RAY_ADDRESS, else a new local "
        "instance)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="csv",
        help="per-round records as CSV or Parquet (default: csv)",
    )
    p.add_argument("--force", action="store_true", help="recompute finished runs")
    p.add_argument(
        "--device", default=None, help="device of the networks, e.g. cuda (default: cpu)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        help="run the paper's experiments (one, or --all) and report them",
        description="Run an experiment of the paper, as its shipped config says (resumable: "
        "finished runs are skipped), and write its report to OUT/report; --all runs every one "
        "into OUT/<name> and builds one report over all of them (OUT/report). --list names "
        "them with what each reproduces and its expected CPU time. --quick scales each down "
        "(as its config's [quick] table says) to check that everything works. 'matched' also "
        "takes --envs, --trials and --tuning-seeds.",
    )
    p_rep2.add_argument("experiment", nargs="?", default=None, help="experiment name (--list)")
    p_rep2.add_argument("--list", action="store_true", help="list the experiments and exit")
    p_rep2.add_argument("--all", action="store_true", help="run every experiment")
    p_rep2.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: results/EXPERIMENT (--all: results/paper, or results/paper-quick)",
    )
    p_rep2.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        help="override the config's seeds, e.g. 0-1 (matched: evaluation seeds)",
    )
    p_rep2.add_argument(
        "--T",
        type=positive_int,
        default=None,
        help="override the config's horizon (matched: every environment)",
    )
    _experiment_options(p_rep2)
    p_rep2.add_argument("--envs", default=None, help="matched only: environments, e.g. h1,shuttle")
    p_rep2.add_argument(
        "--trials", type=positive_int, default=None, help="matched only: trials per tuning"
    )
    p_rep2.add_argument(
        "--tuning-seeds",
        type=seed_list,
        default=None,
        help="matched only: seeds of every trial (default 100-101)",
    )

    p_exp = sub.add_parser(
        "experiment",
        help="run or check your own experiment config (TOML)",
        description="'run FILE' runs an experiment config written in the format of the shipped "
        "ones (deepbandits/experiments/configs/*.toml; see the README) into OUT (default: "
        "results/NAME) and writes its report; 'check FILE' only validates it and prints what "
        "it would run.",
    )
    p_exp.add_argument("action", choices=("run", "check"), help="run or check")
    p_exp.add_argument("config", type=Path, help="the TOML file")
    p_exp.add_argument("--out", type=Path, default=None, help="default: results/NAME")
    _experiment_options(p_exp)

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
    p_tune.add_argument(
        "--T", type=positive_int, default=2000, help="rounds per run (default: 2000)"
    )
    p_tune.add_argument(
        "--tuning-seeds",
        type=seed_list,
        default="100-102",
        help="seeds of every trial (default: 100-102)",
    )
    p_tune.add_argument(
        "--eval-seeds",
        type=seed_list,
        default="0-4",
        help="seeds of the final comparison, disjoint from the tuning seeds (default: 0-4)",
    )
    p_tune.add_argument(
        "--trials",
        type=positive_int,
        default=None,
        help="trials in the study, earlier ones in OUT included (default: 20, or no limit "
        "with --timeout-minutes)",
    )
    p_tune.add_argument(
        "--timeout-minutes",
        type=positive_float,
        default=None,
        help="stop starting trials after this",
    )
    p_tune.add_argument(
        "--search", default=None, help="search only these parameters, e.g. alpha,lam"
    )
    p_tune.add_argument("--seed", type=nonnegative_int, default=0, help="sampler seed (default: 0)")
    p_tune.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="evaluation runs in parallel processes (default: 1)",
    )
    p_tune.add_argument(
        "--out", type=Path, default=None, help="output folder (default: results/tune/ENV/POLICY)"
    )
    p_tune.add_argument("--no-progress", action="store_true", help="hide progress bars")

    p_list = sub.add_parser(
        "list",
        help="list registered policies and environments",
        description="Print the registry names accepted by --policy and --env.",
    )
    p_list.add_argument(
        "--params",
        metavar="POLICY",
        default=None,
        help="print instead every parameter of POLICY (a name or configuration): its default, "
        "type and range, and meaning",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status: 0,
    2 for a user error, 1 for an internal error, 130 when interrupted (see the module doc)."""
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("deepbandits: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        print(f"deepbandits: error: {describe(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        path = save_crash_report(exc, sys.argv[1:] if argv is None else argv)
        where = (
            f"the full traceback was saved to {path}; please attach that file to a bug report."
            if path is not None
            else "its traceback follows (no cache or temporary folder could be written)."
        )
        print(
            f"deepbandits: internal error: {type(exc).__name__}: {describe(exc)}. This is a bug "
            f"in deepbandits, not a mistake in the command; {where}",
            file=sys.stderr,
        )
        if path is None:
            traceback.print_exception(exc)
        return 1


def describe(exc: BaseException) -> str:
    """An exception's message in one paragraph; an ``OSError`` as ``reason: path``."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        text = f"{exc.strerror}: {exc.filename}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def save_crash_report(exc: BaseException, argv: list[str]) -> Path | None:
    """Save the full traceback of ``exc``, with the command line and versions, to a new file
    ``crash-<time>-<pid>.txt`` under ``cache_home()/crash`` (``$XDG_CACHE_HOME/deepbandits``,
    else ``~/.cache/deepbandits``), or under the system's temporary folder when that cannot be
    written; returns its path, or ``None`` when neither can be written."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    text = "".join(
        [
            f"deepbandits {__version__}, Python {sys.version.split()[0]}, {stamp}\n",
            f"command: deepbandits {shlex.join(argv)}\n\n",
            *traceback.format_exception(exc),
        ]
    )
    name = f"crash-{stamp}-{os.getpid()}.txt"
    for folder in (cache_home() / "crash", Path(tempfile.gettempdir()) / "deepbandits" / "crash"):
        try:
            return write_atomic(folder / name, text)
        except OSError:
            continue
    return None


def _list(args: argparse.Namespace) -> int:
    """``deepbandits list``: the registry names, configurations and paper experiments; with
    ``--params NAME``, the parameters of policy NAME."""
    if args.params is not None:
        rows = [
            ("parameter", "default", "type and range", "meaning"),
            *parameter_table(args.params),
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        print(f"parameters of {args.params} (set as NAME:key=value):")
        for row in rows:
            cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
            print("  " + "  ".join([*cells, row[3]]))
        return 0
    print("policies:", ", ".join(policy_names(configurations=False)))
    print("configurations:")
    for name, (base, settings) in CONFIGURATIONS.items():
        keys = ",".join(f"{k}={v}" for k, v in settings.items())
        print(f"  {name} = {base}:{keys}")
    print("environments:", ", ".join(env_names()))
    print("paper experiments (deepbandits reproduce NAME; --list for their cost):")
    for config in builtin_configs().values():
        print(f"  {config.name}: {config.title} [{', '.join(config.reproduces)}]")
    return 0


def _report(args: argparse.Namespace) -> int:
    """``deepbandits report``: tables and figures of a results folder."""
    page, md = build_report(args.results, check_writable(args.out))
    print(f"report: {page}\n        {md}")
    return 0


def _executor(args: argparse.Namespace, local_workers: int | None) -> Executor:
    """The sweep engine's executor of the command line's ``--backend``, ``--jobs`` and
    ``--address``: without ``--jobs``, ``local_workers`` local processes (None: every core),
    or the whole Ray cluster (a new local instance: every core)."""
    if args.backend == "local":
        return make_executor(workers=args.jobs or local_workers, address=args.address)
    return make_executor("ray", workers=args.jobs, address=args.address)


def _list_experiments() -> int:
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


def _reproduce(args: argparse.Namespace) -> int:
    """``deepbandits reproduce``: one of the paper's experiments, all of them, or the list."""
    if args.list:
        return _list_experiments()
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


def _experiment(args: argparse.Namespace) -> int:
    """``deepbandits experiment run|check FILE``: a user's experiment config."""
    config = load_config(args.config)
    if args.action == "check":
        scaled = config.scaled(args.quick)
        print(f"{args.config}: a valid {scaled.kind} experiment, {scaled.name!r}: {scaled.title}")
        if scaled.kind == "sweep":
            envs = ", ".join(scaled.envs)
            print(f"  env {envs}; T={scaled.T}; seeds {format_seeds(list(scaled.seeds))}")
            for spec in scaled.policy_list():
                print(f"  policy {spec}")
        return 0
    args.seeds = args.T = None
    args.envs = args.trials = args.tuning_seeds = None
    return _run_config(args, config)


def _run_config(args: argparse.Namespace, config: ExperimentConfig) -> int:
    """Run one config into ``--out`` (default ``results/NAME``) and print where it went."""
    default = config.name + ("-quick" if args.quick else "")
    out = check_writable(args.out or Path("results") / default)
    executor = _executor(args, local_workers=None)
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
            force=args.force,
            fmt=args.format,
            device=args.device,
            progress=not args.no_progress,
            matched={k: v for k, v in changes.items() if v is not None},
        )
    if config.kind == "sweep":
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
    executor = _executor(args, local_workers=None)
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
            out,
            quick=args.quick,
            executor=executor,
            force=args.force,
            fmt=args.format,
            device=args.device,
            progress=not args.no_progress,
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


def _compare(args: argparse.Namespace) -> int:
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
    check_writable(args.out)
    executor = _executor(args, local_workers=1)
    with closing(executor):
        summary = compare(
            policies,
            args.env,
            args.seeds,
            args.T,
            args.out,
            executor=executor,
            force=args.force,
            fmt=args.format,
            device=args.device,
            progress=not args.no_progress,
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


def _tune(args: argparse.Namespace) -> int:
    """``deepbandits tune``: run :func:`~deepbandits.experiments.tune.tune` and print the
    evaluation table, the best specification and where the files went."""
    timeout = None if args.timeout_minutes is None else 60.0 * args.timeout_minutes
    n_trials = 20 if args.trials is None and timeout is None else args.trials
    out = args.out or Path("results") / "tune" / label_of(args.env) / label_of(args.policy)
    check_writable(out)
    result = tune(
        args.policy,
        args.env,
        T=args.T,
        tuning_seeds=args.tuning_seeds,
        eval_seeds=args.eval_seeds,
        out=out,
        n_trials=n_trials,
        timeout=timeout,
        search=args.search,
        seed=args.seed,
        jobs=args.jobs,
        progress=not args.no_progress,
    )
    print(format_table(result.summary))
    tuning_seeds, eval_seeds = format_seeds(args.tuning_seeds), format_seeds(args.eval_seeds)
    print(
        f"\nbest: {result.best_spec}\n      (mean final regret {result.best_value:.1f} over "
        f"tuning seeds {tuning_seeds}; the table uses evaluation seeds {eval_seeds})"
    )
    print(
        f'deepbandits compare --policy "{result.best_spec}" --env "{args.env}" --T {args.T} '
        f"--seeds {eval_seeds}   # accepts it"
    )
    print(f"\nsettings and results: {result.path}")
    print(f"trials: {out / 'trials.csv'}")
    print(f"study:  {out / 'study.db'} (repeat the command, with more --trials, to resume)")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _compare,
    "compare": _compare,
    "demo": _compare,
    "report": _report,
    "reproduce": _reproduce,
    "experiment": _experiment,
    "tune": _tune,
    "list": _list,
}


if __name__ == "__main__":
    sys.exit(main())
