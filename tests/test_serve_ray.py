"""``deepbandits serve --backend ray``: two replicas on a local Ray instance (Ray Serve's HTTP
proxy on a loopback port, the real client): each decides and logs on its own, rewards reach the
replica that decided, and after a merge round every replica's ridge statistics equal those of
one policy that learned every reward (twice: the second round adds only what was learned since
the first). The Ray instance is started as ``deepbandits serve`` starts it: token
authentication on, Serve's proxy on loopback only. (The HTTP contract itself runs on this
backend in ``test_serve_api.py``.)"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import httpx
import numpy as np
import pytest

import deepbandits as db
from deepbandits.client import ServiceClient
from deepbandits.errors import UnknownDecisionError
from serve_support import contexts_stream, reward_of

try:
    import ray
    from ray import serve
except ImportError:  # the extra is not installed, or Serve's dependencies are missing
    ray = serve = None

pytestmark = pytest.mark.skipif(
    serve is None, reason='Ray Serve is not installed (pip install "deepbandits[ray]")'
)
SPEC = "linucb:reward_range=[0,1],seed=11"


@pytest.fixture
def served(ray_serve, tmp_path):
    root = tmp_path / "state"
    with ray_serve.running(root, SPEC, 2) as client:
        yield root, client.url


def replica_ridge(ray_serve, i: int) -> dict:
    return ray_serve.replica(i).ridge.remote().result()


def everything_learned(root) -> db.Policy:
    """One policy that learned every reward of both replicas' logs."""
    policy = db.make_policy("linucb", reward_range=(0, 1), seed=11)
    for i in range(2):
        path = root / f"replica-{i}" / "events.sqlite"
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT kind, decision_id, body FROM events ORDER BY seq")
            decided = {}
            for kind, decision_id, body in rows:
                v = json.loads(body)
                if kind == "decision":
                    decided[decision_id] = (np.asarray(v["contexts"]), v["arm"])
                elif kind == "reward":
                    contexts, arm = decided[decision_id]
                    policy.update(contexts, arm, v["reward"])
    return policy


def play(client: ServiceClient, seed: int, n: int) -> list:
    decisions = []
    for X in contexts_stream(seed, n, K=4, d=5):
        d = client.decide(X)
        client.learn(d, reward_of(X, d.arm))
        decisions.append(d)
    return decisions


def test_after_a_merge_every_replica_equals_one_policy_that_learned_everything(ray_serve, served):
    root, url = served
    with ServiceClient(url) as client, httpx.Client(base_url=url, timeout=60) as http:
        first = play(client, 0, 30)
        assert {d.id.split(":")[0] for d in first} == {"0", "1"}  # both replicas decided
        before = [replica_ridge(ray_serve, i) for i in range(2)]
        assert before[0]["t"] + before[1]["t"] == 30 and min(r["t"] for r in before) > 0
        assert not np.allclose(before[0]["A"], before[1]["A"])  # each learned its own share
        for generation, seed in ((1, 1), (2, 2)):
            answer = http.post("/v1/merge").json()
            assert answer["generation"] == generation
            reference = everything_learned(root)
            assert answer["rewards_learned"] == reference.t_
            for i in range(2):
                ridge = replica_ridge(ray_serve, i)
                assert ridge["t"] == reference.t_
                np.testing.assert_allclose(ridge["A"], reference.ridge_.A, rtol=1e-10, atol=0)
                np.testing.assert_allclose(ridge["b"], reference.ridge_.b, rtol=1e-10, atol=1e-14)
            play(client, seed, 20)  # learned on one replica each, until the next round
        health = client.health()
        assert health["generation"] == 2 and health["events"] == 2 * 70
        assert [h["merged_generation"] for h in health["replicas"]] == [2, 2]
        with pytest.raises(UnknownDecisionError):
            client.learn("7:nope", 0.5)
        assert (root / "merged" / "merged.json").exists()


def listening_addresses(port: int) -> list[str]:
    """The addresses of the TCP sockets listening on ``port`` (Linux's /proc/net/tcp)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    raw = bytes.fromhex(address)
                    if len(raw) == 4:
                        found.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                    else:  # four little-endian 32-bit words
                        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                        found.append(socket.inet_ntop(socket.AF_INET6, words))
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's socket table")
def test_ray_runs_with_token_authentication_and_serves_http_on_loopback_only(ray_serve, served):
    assert os.environ.get("RAY_AUTH_MODE") == "token"  # Ray's own gRPC ports need the token
    assert listening_addresses(ray_serve.port) == ["127.0.0.1"]


def test_sigterm_stops_the_command_with_a_checkpoint_of_every_replica(tmp_path):
    """``deepbandits serve --backend ray`` as a process: SIGTERM (after Ray installed a handler
    of its own, which ends the process at once) stops the replicas, each writing a checkpoint
    that holds every event it logged."""
    state, err = tmp_path / "state", tmp_path / "serve.err"
    argv = [sys.executable, "-m", "deepbandits", "serve", "--backend", "ray", "--replicas", "2"]
    argv += ["--policy", SPEC, "--state", str(state), "--port", "0", "--merge-every", "0"]
    with open(err, "w") as stream:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stream)
    try:
        deadline = time.monotonic() + 180
        while not (found := re.search(r"on (http://127\.0\.0\.1:\d+) \(merge", err.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
            time.sleep(0.2)
        with ServiceClient(found[1]) as client:
            play(client, 5, 6)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, err.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
    assert "each replica wrote a checkpoint" in err.read_text()
    for i in range(2):
        folder = state / f"replica-{i}"
        sidecars = sorted((folder / "checkpoints").glob("ckpt-*.json"))
        with closing(sqlite3.connect(f"file:{folder / 'events.sqlite'}?mode=ro", uri=True)) as c:
            last = c.execute("SELECT MAX(seq) FROM events").fetchone()[0]
        assert last > 0 and json.loads(sidecars[-1].read_text())["seq"] == last
