"""``deepbandits serve`` (a policy over HTTP with a durable event log) and ``deepbandits
export-log`` (that log as one table)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from deepbandits.cli.arguments import (
    SPEC_HELP,
    at_least_two,
    number_between,
    port_number,
    positive_int,
)
from deepbandits.errors import InputValueError

if TYPE_CHECKING:
    from deepbandits.serve.state import ServiceState


def add_serve_options(p: argparse.ArgumentParser) -> None:
    """The ``serve`` command's options: the state folder, the policy or checkpoint, the server
    and Ray Serve."""
    from deepbandits.serve import MAX_BODY_BYTES
    from deepbandits.serve.scale import MAX_CONTEXT_RATIO

    source = p.add_mutually_exclusive_group()
    source.add_argument("--policy", default=None, help=f"policy of a new state folder, {SPEC_HELP}")
    source.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="a file written by policy.save, served in a new state folder",
    )
    p.add_argument(
        "--state", type=Path, required=True, help="state folder: event log and checkpoints"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only)",
    )
    p.add_argument(
        "--port", type=port_number, default=8000, help="port (default: 8000; 0: a free one)"
    )
    p.add_argument(
        "--token",
        default=None,
        help="require 'Authorization: Bearer TOKEN' on every endpoint but /v1/health "
        "(default: $DEEPBANDITS_TOKEN, else none)",
    )
    p.add_argument(
        "--durability",
        choices=("normal", "full"),
        default="normal",
        help="normal: a commit survives the process being killed; full: it also survives a "
        "power loss (an fsync per commit) (default: normal)",
    )
    p.add_argument(
        "--snapshot-every",
        type=positive_int,
        default=None,
        help="write a checkpoint every N decisions and rewards (default: only on "
        "POST /v1/snapshot and on stop)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=MAX_BODY_BYTES,
        help=f"largest request body accepted, larger ones get 413 (default: {MAX_BODY_BYTES})",
    )
    p.add_argument(
        "--max-context-ratio",
        type=context_ratio,
        default=MAX_CONTEXT_RATIO,
        metavar="R",
        help="refuse (422) a request whose contexts reach more than R times the largest "
        "absolute value decided on so far, which would end exploration for good; 0: no check "
        f"(default: {MAX_CONTEXT_RATIO:g})",
    )
    p.add_argument(
        "--allowed-hosts",
        type=host_list,
        default=None,
        metavar="HOST[,HOST...]",
        help="answer only requests whose Host header names one of these (others get 421; "
        "default: on a loopback --host, the loopback names localhost, 127.0.0.1 and ::1, which "
        "stops a web page that rebinds its DNS name to 127.0.0.1; else any)",
    )
    experiment = p.add_argument_group(
        "live experiment (--backend local)",
        "A control group decides a share of the requests, drawn by a seeded hash of the "
        "decision id, and GET /v1/lift compares the policy with it; challengers run in shadow "
        "(every request and reward, never serving), GET /v1/challengers estimates their value "
        "(IPS, SNIPS, DR) and POST /v1/promote swaps one in.",
    )
    experiment.add_argument(
        "--control",
        default=None,
        metavar="SPEC",
        help="the control group of a new state folder: 'uniform' (every available arm alike), "
        "'arm=K' (arm K when available), a policy specification or a file written by "
        "policy.save; an existing folder keeps the control it was created with",
    )
    experiment.add_argument(
        "--control-share",
        type=number_between(0.0, 0.5),
        default=None,
        metavar="FLOAT",
        help="the share of requests the control decides, in [0, 0.5] (default with --control: "
        "0.05)",
    )
    experiment.add_argument(
        "--lift-window",
        type=at_least_two,
        default=None,
        metavar="N",
        help="the most recent rewards in the lift's sliding window (default with --control: 10000)",
    )
    experiment.add_argument(
        "--challenger",
        action="append",
        default=[],
        metavar="SPEC",
        help="a policy specification to run in shadow, listed under that name; repeat for "
        "several; one already registered (a restart with the same options) is kept as it is",
    )
    p.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: one process; ray: --replicas replicas on Ray Serve, each with its own log "
        "in STATE/replica-<i>, sharing what they learn by merge rounds (default: local)",
    )
    p.add_argument(
        "--replicas", type=positive_int, default=2, help="replicas of --backend ray (default: 2)"
    )
    p.add_argument(
        "--merge-every",
        type=float,
        default=10.0,
        help="seconds between merge rounds of --backend ray; 0: only on POST /v1/merge "
        "(default: 10)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="the Ray cluster of --backend ray (default: $RAY_ADDRESS, else a Ray instance "
        "started here, on loopback when --host is, with Ray's token authentication)",
    )


def context_ratio(text: str) -> float | None:
    """``--max-context-ratio``: a number > 1, or 0 for no check."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value == 0:
        return None
    if not value > 1 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 1, or 0 for none; got {text!r}")
    return value


def host_list(text: str) -> list[str]:
    """``--allowed-hosts``: comma-separated host names."""
    hosts = [h.strip() for h in text.split(",") if h.strip()]
    if not hosts:
        raise argparse.ArgumentTypeError(f"expected host names separated by commas, got {text!r}")
    return hosts


def add_export_log_options(p: argparse.ArgumentParser) -> None:
    """The ``export-log`` command's options: the state folder, the format and the file."""
    p.add_argument("state", type=Path, help="the state folder of deepbandits serve")
    p.add_argument(
        "--format", choices=("parquet", "csv"), default="parquet", help="default: parquet"
    )
    p.add_argument("--out", type=Path, required=True, help="the file to write")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def refuse_without_reward_range(args: argparse.Namespace) -> None:
    """Refuse, before a new state folder is made, a policy that bounds each reward's variance
    by the reward range (``variance='range'``) and is given none: the service would start, then
    refuse every reward that does not bring its own range. An existing folder's policy is left
    to :func:`serve_command`'s warning (its specification cannot change)."""
    if args.policy is None and args.checkpoint is None:
        return
    if any((args.state / sub / "service.json").exists() for sub in (".", "replica-0")):
        return
    from deepbandits.policies import load_policy, make_policy
    from deepbandits.serve.reward_range import lacks_reward_range, with_reward_range
    from deepbandits.specs import parse_spec

    needs = (
        "needs the range [a, b] of the rewards (it bounds each reward's variance by it: "
        "variance='range')"
    )
    refused = "so every reward that does not bring its own range would be refused"
    if args.policy is not None:
        name, params = parse_spec(args.policy)
        if not lacks_reward_range(make_policy(name, **params)):
            return
        raise InputValueError(
            f"--policy {args.policy.strip()} {needs}, but none is given, {refused}; give it in "
            f"the specification, e.g. --policy '{with_reward_range(args.policy, '[0,1]')}' for "
            "rewards between 0 and 1"
        )
    policy = load_policy(args.checkpoint)
    if not lacks_reward_range(policy):
        return
    name = policy.registry_name() or type(policy).__name__
    raise InputValueError(
        f"--checkpoint {args.checkpoint}: its policy, {name}, {needs}, but was saved without "
        f"one, {refused}; save it built with reward_range=(a, b), or serve --policy "
        f"'{with_reward_range(name, '[0,1]')}' (rewards between 0 and 1) instead"
    )


def experiment_options(args: argparse.Namespace) -> list[str]:
    """The ``--challenger`` specifications, each once, checked before anything is made (a
    name and a policy each, at most as many as a service runs); ``--backend ray`` with any
    option of the live experiment is refused."""
    given = [
        option
        for option, value in (
            ("--control", args.control),
            ("--control-share", args.control_share),
            ("--lift-window", args.lift_window),
            ("--challenger", args.challenger or None),
        )
        if value is not None
    ]
    if args.backend == "ray" and given:
        raise InputValueError(
            f"{', '.join(given)}: a control group and challengers need --backend local "
            "(replicas on Ray Serve do not run a live experiment yet)"
        )
    specs = list(dict.fromkeys(args.challenger or []))
    if not specs:
        return specs
    from deepbandits.serve.experiment import MAX_CHALLENGERS, check_name, policy_of_spec

    if len(specs) > MAX_CHALLENGERS:
        raise InputValueError(
            f"--challenger is given {len(specs)} policies, but a service runs at most "
            f"{MAX_CHALLENGERS}"
        )
    for spec in specs:
        try:
            check_name(spec)
            policy_of_spec(spec, 0)
        except InputValueError as exc:
            raise InputValueError(f"--challenger {spec!r:.80}: {exc}") from None
    return specs


def register_challengers(state: ServiceState, specs: list[str]) -> list[str]:
    """Register the ``--challenger`` specifications ``specs`` not in the experiment already
    (as a challenger, or as the champion a promotion made of one); returns those registered."""
    health = state.health()
    known = {*health["challengers"], health["champion"]}
    added = [spec for spec in specs if spec not in known]
    for spec in added:
        state.add_challenger(spec)
    return added


def serve_command(args: argparse.Namespace) -> int:
    """``deepbandits serve``: open (or create) the state folder, recover it, and serve it until
    SIGINT or SIGTERM; a checkpoint is written on the way out."""
    challengers = experiment_options(args)
    refuse_without_reward_range(args)
    if args.backend == "ray":
        from deepbandits.serve.ray_run import serve_ray

        return serve_ray(args)
    from deepbandits.serve.app import create_app
    from deepbandits.serve.guard import loopback_hosts
    from deepbandits.serve.reward_range import lacks_reward_range, no_reward_range
    from deepbandits.serve.server import bind, is_loopback, run, url_of
    from deepbandits.serve.state import ServiceState

    token = args.token if args.token is not None else os.environ.get("DEEPBANDITS_TOKEN") or None
    if token is not None and not token.strip():
        raise InputValueError("--token must not be empty")
    logging.basicConfig(format="deepbandits: %(message)s", level=logging.INFO)
    sock = bind(args.host, args.port)
    try:
        state = ServiceState(
            args.state,
            policy=args.policy,
            checkpoint=args.checkpoint,
            durability=args.durability,
            snapshot_every=args.snapshot_every,
            max_context_ratio=args.max_context_ratio,
            control=args.control,
            control_share=args.control_share,
            lift_window=args.lift_window,
        )
    except BaseException:
        sock.close()
        raise
    url = url_of(sock)
    try:
        added = register_challengers(state, challengers)
        hosts = args.allowed_hosts
        if hosts is None and is_loopback(args.host):
            hosts = loopback_hosts()
        app = create_app(
            state, token=token, max_body_bytes=args.max_body_bytes, allowed_hosts=hosts
        )
        health = state.health()
        serving = health["policy"]
        if health["champion_version"]:  # a challenger was promoted: it serves now
            serving = f"{health['champion']} (champion version {health['champion_version']})"
        print(
            f"deepbandits: serving {serving} from {args.state} on {url} (docs: {url}/docs;"
            f" durability {args.durability}; {health['events']} events logged, "
            f"{state.replayed} replayed after the checkpoint at event {state.last_checkpoint}"
            f"{'; bearer token required' if token else ''}); Ctrl-C stops",
            file=sys.stderr,
        )
        for note in state.notes:
            print(f"deepbandits: recovered: {note}", file=sys.stderr)
        print_experiment(health, state.lift()["share"], added)
        if lacks_reward_range(state.policy):
            print(f"deepbandits: warning: {no_reward_range(state.spec)}", file=sys.stderr)
        if not is_loopback(args.host) and token is None:
            print(
                f"deepbandits: warning: {args.host} is reachable from other machines and no "
                "--token is set: anyone who reaches it can decide and send rewards",
                file=sys.stderr,
            )
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            run(app, sock)
        except KeyboardInterrupt:
            pass
    finally:
        state.close(snapshot=True)
        sock.close()
    print(
        f"deepbandits: stopped; checkpoint at event {state.last_checkpoint} in {args.state}",
        file=sys.stderr,
    )
    return 0


def print_experiment(health: dict[str, Any], share: float, added: list[str]) -> None:
    """Say on stderr what the live experiment of a service starting is (nothing without one):
    the control and its ``share`` of requests, the challengers (``added``: registered now)."""
    if health["control"] is not None:
        print(
            f"deepbandits: control group: {health['control']} decides {share:.4g} of the "
            "requests; GET /v1/lift compares the policy with it",
            file=sys.stderr,
        )
    if health["challengers"]:
        names = ", ".join(
            f"{name}{' (registered now)' if name in added else ''}"
            for name in health["challengers"]
        )
        print(
            f"deepbandits: challengers in shadow: {names}; GET /v1/challengers estimates them",
            file=sys.stderr,
        )


def export_log_command(args: argparse.Namespace) -> int:
    """``deepbandits export-log``: the state folder's decisions and rewards as one table (its
    intact events; those left out as damaged are listed)."""
    from deepbandits.serve.export import export_log
    from deepbandits.serve.logfile import numbers

    table = export_log(args.state, args.out, args.format)
    rewarded = int(table["reward"].notna().sum())
    damaged = table.attrs["damaged_events"]
    aside = ""
    if damaged:
        aside = f"; {len(damaged)} damaged event{'s' * (len(damaged) > 1)} set aside: "
        aside += numbers(damaged)
    print(f"{len(table)} decisions ({rewarded} with a reward) written to {args.out}{aside}")
    return 0
