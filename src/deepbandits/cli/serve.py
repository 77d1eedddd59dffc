"""``deepbandits serve`` (a policy over HTTP with a durable event log) and ``deepbandits
export-log`` (that log as one table)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from types import FrameType

from deepbandits.errors import InputValueError


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve_command(args: argparse.Namespace) -> int:
    """``deepbandits serve``: open (or create) the state folder, recover it, and serve it until
    SIGINT or SIGTERM; a checkpoint is written on the way out."""
    if args.backend == "ray":
        from deepbandits.serve.ray_run import serve_ray

        return serve_ray(args)
    from deepbandits.serve.app import create_app
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
        )
    except BaseException:
        sock.close()
        raise
    url = url_of(sock)
    try:
        app = create_app(state, token=token, max_body_bytes=args.max_body_bytes)
        health = state.health()
        print(
            f"deepbandits: serving {health['policy']} from {args.state} on {url} (docs: {url}/docs;"
            f" durability {args.durability}; {health['events']} events logged, "
            f"{state.replayed} replayed after the checkpoint at event {state.last_checkpoint}"
            f"{'; bearer token required' if token else ''}); Ctrl-C stops",
            file=sys.stderr,
        )
        for note in state.notes:
            print(f"deepbandits: recovered: {note}", file=sys.stderr)
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


def export_log_command(args: argparse.Namespace) -> int:
    """``deepbandits export-log``: the state folder's decisions and rewards as one table."""
    from deepbandits.serve.export import export_log

    table = export_log(args.state, args.out, args.format)
    rewarded = int(table["reward"].notna().sum())
    print(f"{len(table)} decisions ({rewarded} with a reward) written to {args.out}")
    return 0
