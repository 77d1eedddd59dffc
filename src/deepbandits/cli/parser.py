"""The command line's parser: every command, its options and their help texts."""

from __future__ import annotations

import argparse
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
    port_number,
    positive_float,
    positive_int,
    seed_list,
)
from deepbandits.cli.ope import add_ope_parser
from deepbandits.cli.runs import DEMO_POLICIES
from deepbandits.policies import policy_names
from deepbandits.serve import MAX_BODY_BYTES


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, one subcommand per entry of
    :data:`~deepbandits.cli.entry.COMMANDS`."""
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
    add_run_options(p_run, T=10000, seeds="0")
    add_checkpoint_options(p_run)

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
    add_run_options(p_cmp, T=10000, seeds="0-4")
    add_checkpoint_options(p_cmp)

    p_demo = sub.add_parser(
        "demo",
        help="the README's demo comparison",
        description=f"Compare {', '.join(DEMO_POLICIES)} on h1 (3 seeds), with hold-out "
        "checkpoints at rounds 0, 2000, 5000, 7500, and write the report to OUT/report.",
    )
    add_run_options(p_demo, T=10000, seeds="0-2", out="results/demo")

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
    add_experiment_options(p_rep2)
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
    add_experiment_options(p_exp)

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
    add_env_option(p_tune)
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
        description="Print the registry names accepted by --policy and --env (--params NAME: "
        "a policy's parameters or an environment's keywords).",
    )
    p_list.add_argument(
        "--params",
        metavar="NAME",
        default=None,
        help="print instead every parameter of policy NAME (a name or configuration), or every "
        "keyword of environment NAME: its default, type and range, and meaning",
    )
    add_serve_parsers(sub)
    add_ope_parser(sub)
    return parser


def add_serve_parsers(sub: Any) -> None:
    """``serve`` and ``export-log``."""
    p_serve = sub.add_parser(
        "serve",
        help="serve a policy over HTTP, with a durable event log",
        description="Serve a policy over HTTP (FastAPI on uvicorn; OpenAPI page at /docs): "
        "POST /v1/decide, /v1/decide_batch, /v1/reward, /v1/snapshot; GET /v1/health, "
        "/metrics. Every decision and reward is committed to STATE/events.sqlite before it is "
        "answered; on start the newest checkpoint is loaded and the events after it replayed. "
        "A new STATE needs --policy or --checkpoint; an existing one resumes.",
    )
    source = p_serve.add_mutually_exclusive_group()
    source.add_argument("--policy", default=None, help=f"policy of a new state folder, {SPEC_HELP}")
    source.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="a file written by policy.save, served in a new state folder",
    )
    p_serve.add_argument(
        "--state", type=Path, required=True, help="state folder: event log and checkpoints"
    )
    p_serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only)",
    )
    p_serve.add_argument(
        "--port", type=port_number, default=8000, help="port (default: 8000; 0: a free one)"
    )
    p_serve.add_argument(
        "--token",
        default=None,
        help="require 'Authorization: Bearer TOKEN' on every endpoint but /v1/health "
        "(default: $DEEPBANDITS_TOKEN, else none)",
    )
    p_serve.add_argument(
        "--durability",
        choices=("normal", "full"),
        default="normal",
        help="normal: a commit survives the process being killed; full: it also survives a "
        "power loss (an fsync per commit) (default: normal)",
    )
    p_serve.add_argument(
        "--snapshot-every",
        type=positive_int,
        default=None,
        help="write a checkpoint every N decisions and rewards (default: only on "
        "POST /v1/snapshot and on stop)",
    )
    p_serve.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=MAX_BODY_BYTES,
        help=f"largest request body accepted, larger ones get 413 (default: {MAX_BODY_BYTES})",
    )
    p_serve.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: one process; ray: --replicas replicas on Ray Serve, each with its own log "
        "in STATE/replica-<i>, sharing what they learn by merge rounds (default: local)",
    )
    p_serve.add_argument(
        "--replicas", type=positive_int, default=2, help="replicas of --backend ray (default: 2)"
    )
    p_serve.add_argument(
        "--merge-every",
        type=float,
        default=10.0,
        help="seconds between merge rounds of --backend ray; 0: only on POST /v1/merge "
        "(default: 10)",
    )

    p_export = sub.add_parser(
        "export-log",
        help="write a service's event log as one table (logged bandit data)",
        description="Write the decisions of a deepbandits serve state folder, with their "
        "rewards, propensities, contexts, masks, times and model versions, as one table for "
        "offline evaluation (one row per decision).",
    )
    p_export.add_argument("state", type=Path, help="the state folder of deepbandits serve")
    p_export.add_argument(
        "--format", choices=("parquet", "csv"), default="parquet", help="default: parquet"
    )
    p_export.add_argument("--out", type=Path, required=True, help="the file to write")
