"""What the service tests share: a real server on a free loopback port with a real client."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

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


@contextmanager
def running(
    folder: Path,
    policy: str | None = None,
    *,
    token: str | None = None,
    max_body_bytes: int | None = None,
    snapshot: bool = False,
    **options: Any,
) -> Iterator[tuple[ServiceState, ServiceClient]]:
    """A service on ``folder`` served on a free loopback port, and a client of it; on exit the
    server stops and the state closes (with a checkpoint if ``snapshot``)."""
    state = ServiceState(folder, policy=policy, **options)
    limits = {} if max_body_bytes is None else {"max_body_bytes": max_body_bytes}
    app = create_app(state, token=token, **limits)
    try:
        with BackgroundServer(app) as server, ServiceClient(server.url, token=token) as client:
            yield state, client
    finally:
        state.close(snapshot=snapshot)


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
