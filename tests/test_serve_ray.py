"""``deepbandits serve --backend ray``: two replicas on a local Ray instance (Ray Serve's HTTP
proxy on a loopback port, the real client): each decides and logs on its own, rewards reach the
replica that decided, and after a merge round every replica's ridge statistics equal those of
one policy that learned every reward (twice: the second round adds only what was learned since
the first)."""

from __future__ import annotations

import json
import socket
import sqlite3
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


def free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from deepbandits.serve.ray_app import build_app

    root = tmp_path_factory.mktemp("ray") / "state"
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app(root, SPEC, 2, merge_every=None), name="deepbandits", route_prefix="/")
    try:
        yield root, f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def replica_ridge(i: int) -> dict:
    handle = serve.get_deployment_handle(f"replica-{i}", app_name="deepbandits")
    return handle.ridge.remote().result()


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


def test_after_a_merge_every_replica_equals_one_policy_that_learned_everything(served):
    root, url = served
    with ServiceClient(url) as client, httpx.Client(base_url=url, timeout=60) as http:
        first = play(client, 0, 30)
        assert {d.id.split(":")[0] for d in first} == {"0", "1"}  # both replicas decided
        before = [replica_ridge(i) for i in range(2)]
        assert before[0]["t"] + before[1]["t"] == 30 and min(r["t"] for r in before) > 0
        assert not np.allclose(before[0]["A"], before[1]["A"])  # each learned its own share
        for generation, seed in ((1, 1), (2, 2)):
            answer = http.post("/v1/merge").json()
            assert answer["generation"] == generation
            reference = everything_learned(root)
            assert answer["rewards_learned"] == reference.t_
            for i in range(2):
                ridge = replica_ridge(i)
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
