"""``deepbandits serve --backend ray --replicas N``: the application of
:mod:`deepbandits.serve.ray_app` on a local Ray instance (or the cluster of ``RAY_ADDRESS``),
served until SIGINT or SIGTERM; each replica writes a checkpoint on the way out."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
from contextlib import closing
from types import FrameType

from deepbandits.errors import InputValueError

APP = "deepbandits"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _free_port(host: str) -> int:
    with closing(socket.socket()) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def serve_ray(args: argparse.Namespace) -> int:
    """Run the replicas and the ingress on Ray Serve until stopped (module notes)."""
    try:
        import ray
        from ray import serve
    except ImportError:
        raise InputValueError(
            '--backend ray needs Ray Serve: pip install "deepbandits[ray]"'
        ) from None
    from deepbandits.serve.ray_app import build_app

    if args.checkpoint is not None:
        raise InputValueError("--backend ray serves a --policy SPEC; --checkpoint is not supported")
    token = args.token if args.token is not None else os.environ.get("DEEPBANDITS_TOKEN") or None
    port = args.port or _free_port(args.host)
    options = {"durability": args.durability, "snapshot_every": args.snapshot_every}
    every = args.merge_every or None
    app = build_app(
        args.state, args.policy, args.replicas, merge_every=every, token=token, options=options
    )
    ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False)
    try:
        serve.start(http_options={"host": args.host, "port": port})
        ingress = serve.run(app, name=APP, route_prefix="/")
        print(
            f"deepbandits: serving {args.policy or 'the policy of ' + str(args.state)} with "
            f"{args.replicas} replicas on Ray Serve on http://{args.host}:{port} (merge rounds "
            f"{'every ' + str(every) + ' s' if every else 'on POST /v1/merge only'}); "
            "Ctrl-C stops",
            file=sys.stderr,
        )
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
        ingress.stop.remote().result(timeout_s=60)
    finally:
        serve.shutdown()
        ray.shutdown()
    print(f"deepbandits: stopped; each replica wrote a checkpoint in {args.state}", file=sys.stderr)
    return 0
