"""What the service tests share: a real server on a free loopback port with a real client, in
this process or on Ray Serve (:class:`RayServe`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from deepbandits.client import ServiceClient
from deepbandits.errors import ServiceError
from deepbandits.serve.app import create_app
from deepbandits.serve.server import BackgroundServer
from deepbandits.serve.state import ServiceState

LINUCB = "linucb:reward_range=[0,1],seed=0"
# small networks that train every few rounds (a training takes milliseconds)
NEURAL = (
    "neural-sigma2-linucb:hidden=8,feature_dim=4,reward_range=[0,1],train_start=20,"
    "train_every=10,warmup_every=5,train_steps=10,batch_size=8,seed=0"
)


#: The options of :func:`create_app` (the rest go to the state).
APP_OPTIONS = ("token", "max_body_bytes", "allowed_hosts", "body_timeout")


@contextmanager
def running(
    folder: Path,
    policy: str | None = None,
    *,
    snapshot: bool = False,
    header_timeout: float | None = None,
    **options: Any,
) -> Iterator[tuple[ServiceState, ServiceClient]]:
    """A service on ``folder`` served on a free loopback port, and a client of it; on exit the
    server stops and the state closes (with a checkpoint if ``snapshot``). ``options`` go to
    :func:`create_app` (:data:`APP_OPTIONS`) and to the state."""
    app_options = {k: options.pop(k) for k in APP_OPTIONS if options.get(k) is not None}
    options = {k: v for k, v in options.items() if k not in APP_OPTIONS}
    state = ServiceState(folder, policy=policy, **options)
    app = create_app(state, **app_options)
    timeouts = {} if header_timeout is None else {"header_timeout": header_timeout}
    try:
        with (
            BackgroundServer(app, **timeouts) as server,
            ServiceClient(server.url, token=app_options.get("token")) as client,
        ):
            yield state, client
    finally:
        state.close(snapshot=snapshot)


def free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RayServe:
    """A Ray instance with Serve's HTTP proxy on a free loopback port; :meth:`running` deploys
    one service at a time at its root."""

    APP = "deepbandits"

    def __init__(self) -> None:
        import ray
        from ray import serve

        from deepbandits.serve.ray_app import LOGGING
        from deepbandits.serve.ray_run import ray_init_options

        ray.init(num_cpus=2, log_to_driver=False, **ray_init_options("127.0.0.1", None))
        self.port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": self.port}, logging_config=LOGGING)
        self.url = f"http://127.0.0.1:{self.port}"

    @contextmanager
    def running(
        self, folder: Path, policy: str, replicas: int = 1, **options: Any
    ) -> Iterator[ServiceClient]:
        """``replicas`` replicas of ``policy`` on ``folder`` (merges on ``POST /v1/merge``
        only), and a client; ``options`` as :func:`running`'s app options."""
        from ray import serve

        from deepbandits.serve.ray_app import build_app

        app = build_app(folder, policy, replicas, merge_every=None, **options)
        serve.run(app, name=self.APP, route_prefix="/")
        try:
            with ServiceClient(self.url, token=options.get("token")) as client:
                yield client
        finally:
            handle = serve.get_deployment_handle("ingress", app_name=self.APP)
            handle.stop.remote().result(timeout_s=60)
            serve.delete(self.APP)

    def replica(self, i: int) -> Any:
        """The handle of replica ``i`` of the service deployed now."""
        from ray import serve

        return serve.get_deployment_handle(f"replica-{i}", app_name=self.APP)

    def close(self) -> None:
        import ray
        from ray import serve

        serve.shutdown()
        ray.shutdown()


@contextmanager
def serving(
    backend: str, folder: Path, policy: str, ray_serve: RayServe | None = None, **options: Any
) -> Iterator[ServiceClient]:
    """A client of ``policy`` served on ``folder`` by ``backend`` ("local", or "ray" on
    ``ray_serve`` with one replica); ``options`` as :func:`running`'s app options."""
    if backend == "local":
        with running(folder, policy, **options) as (_, client):
            yield client
    else:
        assert ray_serve is not None
        with ray_serve.running(folder, policy, 1, **options) as client:
            yield client


def contexts_stream(seed: int, n: int, K: int = 3, d: int = 5) -> list[np.ndarray]:
    """``n`` context matrices ``[K, d]``."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((K, d)) for _ in range(n)]


def reward_of(contexts: np.ndarray, arm: int) -> float:
    """A reward in [0, 1] that depends on the arm's context."""
    return float(1.0 / (1.0 + np.exp(-contexts[arm].sum())))


def wait_idle(state: ServiceState, timeout: float = 30.0) -> None:
    """Wait until no training runs."""
    deadline = time.monotonic() + timeout
    while state.training:
        assert time.monotonic() < deadline, "the training did not finish"
        time.sleep(0.01)


class Served:
    """``deepbandits serve`` on ``folder`` as a real process (port 0, stderr to a file)."""

    def __init__(self, folder: Path, spec: str) -> None:
        self.folder = folder
        self.spec = spec
        self.lives = 0

    def start(self) -> str:
        self.lives += 1
        self.err = self.folder.parent / f"serve-{self.lives}.err"
        argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", self.spec]
        argv += ["--state", str(self.folder), "--port", "0", "--snapshot-every", "25"]
        with open(self.err, "w") as err:
            self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r" on (http://127\.0\.0\.1:\d+) ", self.err.read_text())
            if found:
                self.url = found[1]
                break
            assert self.process.poll() is None, self.err.read_text()
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.05)
        with ServiceClient(self.url) as client:
            while True:
                try:
                    client.health()
                    return self.url
                except ServiceError:
                    assert time.monotonic() < deadline, "the service did not answer"
                    time.sleep(0.05)

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        assert self.process.wait(30) == -signal.SIGKILL


def arrow_stream(
    table: pa.Table, compression: str | None = None, chunk: int | None = None
) -> bytes:
    """``table`` as an Arrow IPC stream (compressed buffers, batches of ``chunk`` rows)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table, max_chunksize=chunk)
    return bytes(sink.getvalue())
