"""``deepbandits serve --backend ray --replicas N``: the application of
:mod:`deepbandits.serve.ray_app` on a local Ray instance (or the cluster of ``--address`` /
``RAY_ADDRESS``), served until SIGINT or SIGTERM; each replica writes a checkpoint on the way out.

A Ray instance this command starts itself is started as safely as Ray allows
(:func:`ray_init_options`): on the loopback address when ``--host`` is a loopback one (Ray's
node address and object store, and Serve's HTTP proxy on ``--host`` only), without its
dashboard, and with Ray's token authentication on (Ray turns it on for a local instance unless
``RAY_AUTH_MODE`` says otherwise, and this command warns when it does): Ray's own core
processes (GCS, raylet, workers) listen on every interface whatever the node address, and Ray's
security guidance is that anyone who reaches them can run code; with the token, a peer without
it cannot. An existing cluster (``--address``) is the operator's: follow Ray's security guide
for it (https://docs.ray.io/en/latest/ray-security/index.html).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
from contextlib import closing
from types import FrameType
from typing import Any

from deepbandits.errors import InputValueError
from deepbandits.serve.guard import loopback_hosts
from deepbandits.serve.server import is_loopback

APP = "deepbandits"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def ray_init_options(host: str, address: str | None) -> dict[str, Any]:
    """The arguments of ``ray.init`` for ``--host`` and ``--address`` (module notes); warns when
    ``RAY_AUTH_MODE`` turns Ray's token authentication off for a Ray this process starts."""
    if address:
        return {"address": address}
    if os.environ.get("RAY_AUTH_MODE", "token") != "token":
        print(
            f"deepbandits: warning: RAY_AUTH_MODE={os.environ['RAY_AUTH_MODE']}: the Ray "
            "instance starts without token authentication, and anyone who reaches its ports "
            "can run code on this machine",
            file=sys.stderr,
        )
    options: dict[str, Any] = {"include_dashboard": False}
    if is_loopback(host):
        options["_node_ip_address"] = "127.0.0.1"
    return options


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
    from deepbandits.serve.ray_app import LOGGING, build_app

    if args.checkpoint is not None:
        raise InputValueError("--backend ray serves a --policy SPEC; --checkpoint is not supported")
    token = args.token if args.token is not None else os.environ.get("DEEPBANDITS_TOKEN") or None
    options = {
        "durability": args.durability,
        "snapshot_every": args.snapshot_every,
        "max_context_ratio": args.max_context_ratio,
    }
    every = args.merge_every or None
    hosts = args.allowed_hosts
    if hosts is None and is_loopback(args.host):
        hosts = loopback_hosts()
    app = build_app(
        args.state,
        args.policy,
        args.replicas,
        merge_every=every,
        token=token,
        max_body_bytes=args.max_body_bytes,
        allowed_hosts=hosts,
        options=options,
    )
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    ray.init(**ray_init_options(args.host, address))
    # after ray.init, which installs a SIGTERM handler of its own that ends the process at once
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        # a free port chosen once Ray's own processes hold theirs
        port = args.port or _free_port(args.host)
        try:
            serve.start(http_options={"host": args.host, "port": port}, logging_config=LOGGING)
        except Exception as exc:  # Serve's proxy reports a failed bind as its own error
            raise InputValueError(
                f"Ray Serve cannot listen on {args.host}:{port} ({exc.__class__.__name__}; "
                "another service on that port? choose another with --port)"
            ) from None
        ingress = serve.run(app, name=APP, route_prefix="/")
        print(
            f"deepbandits: serving {args.policy or 'the policy of ' + str(args.state)} with "
            f"{args.replicas} replicas on Ray Serve on http://{args.host}:{port} (merge rounds "
            f"{'every ' + str(every) + ' s' if every else 'on POST /v1/merge only'}); "
            "Ctrl-C stops",
            file=sys.stderr,
        )
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
