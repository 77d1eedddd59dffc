"""The command line's parser: every command, its options and their help texts.

The top level names the commands. A command's options are added when it is chosen (or its
``--help`` asked for), by the function given with it to :meth:`Commands.add_command`, which
imports what they need: the policy and environment registries, and with them torch. So
``deepbandits --help`` answers without loading them. ``build_parser(complete=True)`` adds every
command's options at once.

The options of ``serve`` and ``export-log`` are in :mod:`deepbandits.cli.serve`, those of
``ope`` in :mod:`deepbandits.cli.ope`, beside those commands.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deepbandits._version import VERSION_LINE
from deepbandits.cli.arguments import (
    SPEC_HELP,
    Parser,
    add_checkpoint_options,
    add_env_option,
    add_experiment_options,
    add_run_options,
    nonnegative_int,
    positive_float,
    positive_int,
    seed_list,
)
from deepbandits.cli.serve import add_export_log_options, add_serve_options

#: A function that adds a command's options to its parser.
Options = Callable[[argparse.ArgumentParser], None]


class Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands' action: each command's options are added the first time it is parsed
    (:meth:`complete`), not when the top-level parser is built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, Options] = {}

    def add_command(self, name: str, options: Options, **kwargs: Any) -> argparse.ArgumentParser:
        """A subparser ``name`` (``help``, ``description``, ...) whose options ``options`` adds
        when it is first parsed."""
        parser: argparse.ArgumentParser = self.add_parser(name, **kwargs)
        self.pending[name] = options
        return parser

    def complete(self, name: str) -> None:
        """Add the options of command ``name``, unless they were added already."""
        options = self.pending.pop(name, None)
        if options is not None:
            options(self.choices[name])

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if values:  # the command's name, then its arguments
            self.complete(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


def build_parser(complete: bool = False) -> argparse.ArgumentParser:
    """The parser of the whole command line, one subcommand per entry of
    :data:`~deepbandits.cli.entry.COMMANDS`; with ``complete``, every command's options are
    added now instead of when it is parsed."""
    parser = Parser(
        prog="deepbandits",
        description="Neural contextual bandits: run and compare policies on bandit environments.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=VERSION_LINE,
        help="print the package's version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, action=Commands)
    sub.add_command(
        "run",
        _run_options,
        help="run one policy over several seeds",
        description=(
            "Run one policy on one environment for each seed; write per-round CSV + JSON, "
            "a summary table and a regret plot."
        ),
    )
    sub.add_command(
        "compare",
        _compare_options,
        help="compare several policies on the same seeds",
        description=(
            "Run several policies on one environment and the same seeds; print the table of "
            "final regret (mean ± std) and plot cumulative regret with mean ± std bands."
        ),
    )
    sub.add_command(
        "demo",
        _demo_options,
        help="the README's demo comparison",
    )
    sub.add_command(
        "report",
        _report_options,
        help="tables and figures of a results folder",
        description=(
            "Turn every comparison under RESULTS into tables (final regret, cumulative reward, "
            "calibration, sharpness, wall time: mean ± std over seeds) and figures, written as "
            "OUT/index.html and OUT/README.md."
        ),
    )
    sub.add_command(
        "reproduce",
        _reproduce_options,
        help="run the paper's experiments (one, or --all) and report them",
        description="Run an experiment of the paper, as its shipped config says (resumable: "
        "finished runs are skipped), and write its report to OUT/report; --all runs every one "
        "into OUT/<name> and builds one report over all of them (OUT/report). --list names "
        "them with what each reproduces and its expected CPU time. --quick scales each down "
        "(as its config's [quick] table says) to check that everything works. 'matched' also "
        "takes --envs, --trials and --tuning-seeds.",
    )
    sub.add_command(
        "experiment",
        _experiment_options,
        help="run or check your own experiment config (TOML)",
        description="'run FILE' runs an experiment config written in the format of the shipped "
        "ones (deepbandits/experiments/configs/*.toml; see the README) into OUT (default: "
        "results/NAME) and writes its report; 'check FILE' only validates it and prints what "
        "it would run.",
    )
    sub.add_command(
        "tune",
        _tune_options,
        help="tune a policy's hyperparameters (Optuna), then evaluate the best on other seeds",
        description=(
            "Search the policy's main hyperparameters (those its specification leaves out) for "
            "the lowest mean final regret over the tuning seeds, then compare the best setting "
            "with the untuned one on the evaluation seeds. Writes OUT/study.db (repeat the "
            "command to resume), OUT/trials.csv, OUT/tune.json and OUT/eval/."
        ),
    )
    sub.add_command(
        "list",
        _list_options,
        help="list registered policies and environments",
        description="Print the registry names accepted by --policy and --env (--params NAME: "
        "a policy's parameters or an environment's keywords).",
    )
    sub.add_command(
        "serve",
        add_serve_options,
        help="serve a policy over HTTP, with a durable event log",
        description="Serve a policy over HTTP (FastAPI on uvicorn; OpenAPI page at /docs): "
        "POST /v1/decide, /v1/decide_batch, /v1/reward, /v1/snapshot; GET /v1/health, "
        "/metrics. Every decision and reward is committed to STATE/events.sqlite before it is "
        "answered; on start the newest checkpoint is loaded and the events after it replayed. "
        "A new STATE needs --policy or --checkpoint; an existing one resumes. A live "
        "experiment: --control (GET /v1/lift: the policy's mean reward against the control "
        "group's, with Welch's interval), --challenger (GET/POST /v1/challengers, DELETE "
        "/v1/challengers/NAME: policies in shadow, their value estimated by IPS, SNIPS and DR) "
        "and POST /v1/promote (a challenger swapped in as champion, logged).",
    )
    sub.add_command(
        "export-log",
        add_export_log_options,
        help="write a service's event log as one table (logged bandit data)",
        description="Write the decisions of a deepbandits serve state folder, with their "
        "rewards, propensities, contexts, masks, times and model versions, as one table for "
        "offline evaluation (one row per decision).",
    )
    sub.add_command(
        "ope",
        _ope_options,
        help="off-policy evaluation of a policy on logged data",
        description=(
            "Estimate what a policy would have earned on logged traffic with IPS, SNIPS, DM, "
            "DR, SNDR, Switch-DR and DRos, each with a bootstrap interval and the effective "
            "sample size; print the table (with the truth when it is known) and write "
            "OUT/ope.csv, OUT/ope.parquet and OUT/ope.png/.svg."
        ),
    )
    sub.add_command(
        "learn-log",
        _learn_options,
        help="learn a policy from a service log and decide, by OPE, whether to ship it",
        description=(
            "Train a policy on the earlier part of a service log (unweighted, IPS-weighted or "
            "on doubly robust pseudo-rewards), estimate its value on the later part by OPE "
            "beside the logging policy's own value there, print the table and a ship / do not "
            "ship / cannot tell decision, and write OUT/policy.pt (deepbandits serve "
            "--checkpoint), OUT/learn-log.csv and OUT/learn-log.json."
        ),
    )
    if complete:
        for name in list(sub.pending):
            sub.complete(name)
    return parser


def _run_options(p: argparse.ArgumentParser) -> None:
    """``run``: the policy, the run options and hold-out checkpoints."""
    from deepbandits.policies import policy_names

    p.add_argument(
        "--policy", required=True, help=f"policy, {SPEC_HELP}; names: {', '.join(policy_names())}"
    )
    add_run_options(p, T=10000, seeds="0")
    add_checkpoint_options(p)


def _compare_options(p: argparse.ArgumentParser) -> None:
    """``compare``: the policies, the run options and hold-out checkpoints."""
    p.add_argument(
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
    add_run_options(p, T=10000, seeds="0-4")
    add_checkpoint_options(p)


def _demo_options(p: argparse.ArgumentParser) -> None:
    """``demo``: the run options (its description names the policies it compares)."""
    from deepbandits.cli.runs import DEMO_POLICIES

    p.description = (
        f"Compare {', '.join(DEMO_POLICIES)} on h1 (3 seeds), with hold-out "
        "checkpoints at rounds 0, 2000, 5000, 7500, and write the report to OUT/report."
    )
    add_run_options(p, T=10000, seeds="0-2", out="results/demo")


def _report_options(p: argparse.ArgumentParser) -> None:
    """``report``: the results folder and the output folder."""
    p.add_argument("results", type=Path, help="folder written by run/compare/reproduce")
    p.add_argument("--out", type=Path, default=Path("report"), help="default: report")


def _reproduce_options(p: argparse.ArgumentParser) -> None:
    """``reproduce``: the experiment, overrides and the matched protocol's options."""
    p.add_argument("experiment", nargs="?", default=None, help="experiment name (--list)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--all", action="store_true", help="run every experiment")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: results/EXPERIMENT (--all: results/paper, or results/paper-quick)",
    )
    p.add_argument(
        "--seeds",
        type=seed_list,
        default=None,
        help="override the config's seeds, e.g. 0-1 (matched: evaluation seeds)",
    )
    p.add_argument(
        "--T",
        type=positive_int,
        default=None,
        help="override the config's horizon (matched: every environment)",
    )
    add_experiment_options(p)
    p.add_argument("--envs", default=None, help="matched only: environments, e.g. h1,shuttle")
    p.add_argument(
        "--trials", type=positive_int, default=None, help="matched only: trials per tuning"
    )
    p.add_argument(
        "--tuning-seeds",
        type=seed_list,
        default=None,
        help="matched only: seeds of every trial (default 100-101)",
    )


def _experiment_options(p: argparse.ArgumentParser) -> None:
    """``experiment``: run or check a config file."""
    p.add_argument("action", choices=("run", "check"), help="run or check")
    p.add_argument("config", type=Path, help="the TOML file")
    p.add_argument("--out", type=Path, default=None, help="default: results/NAME")
    add_experiment_options(p)


def _tune_options(p: argparse.ArgumentParser) -> None:
    """``tune``: the search, its seeds and budget."""
    p.add_argument(
        "--policy", required=True, help=f"policy, {SPEC_HELP}; keys given are not searched"
    )
    add_env_option(p)
    p.add_argument("--T", type=positive_int, default=2000, help="rounds per run (default: 2000)")
    p.add_argument(
        "--tuning-seeds",
        type=seed_list,
        default="100-102",
        help="seeds of every trial (default: 100-102)",
    )
    p.add_argument(
        "--eval-seeds",
        type=seed_list,
        default="0-4",
        help="seeds of the final comparison, disjoint from the tuning seeds (default: 0-4)",
    )
    p.add_argument(
        "--trials",
        type=positive_int,
        default=None,
        help="trials in the study, earlier ones in OUT included (default: 20, or no limit "
        "with --timeout-minutes)",
    )
    p.add_argument(
        "--timeout-minutes",
        type=positive_float,
        default=None,
        help="stop starting trials after this",
    )
    p.add_argument("--search", default=None, help="search only these parameters, e.g. alpha,lam")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="sampler seed (default: 0)")
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="evaluation runs in parallel processes (default: 1)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="output folder (default: results/tune/ENV/POLICY)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _list_options(p: argparse.ArgumentParser) -> None:
    """``list``: ``--params``."""
    p.add_argument(
        "--params",
        metavar="NAME",
        default=None,
        help="print instead every parameter of policy NAME (a name or configuration), or every "
        "keyword of environment NAME: its default, type and range, and meaning",
    )


def _ope_options(p: argparse.ArgumentParser) -> None:
    """``ope``: the log, the policy, the estimators and their settings."""
    from deepbandits.cli.ope import add_ope_options

    add_ope_options(p)


def _learn_options(p: argparse.ArgumentParser) -> None:
    """``learn-log``: the log, the policy, the weighting, the split and the evaluation."""
    from deepbandits.cli.learn import add_learn_options

    add_learn_options(p)
