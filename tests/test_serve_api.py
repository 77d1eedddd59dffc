"""The HTTP contract on a real server with a real client, on both backends (one process, and
one replica on Ray Serve behind Serve's own HTTP proxy): codes, messages, auth, host, size
limits, health, metrics, snapshots, Arrow and JSON batches. One app serves both
(:func:`deepbandits.serve.app.create_app`), so every test here runs on each."""

from __future__ import annotations

import json
import socket
import time

import httpx
import numpy as np
import pytest

import deepbandits as db
from deepbandits.client import ServiceClient
from deepbandits.serve import arrow
from serve_support import LINUCB, running, serving

JSON = {"content-type": "application/json"}
X = np.arange(12, dtype=np.float64).reshape(4, 3) / 10

try:
    from ray import serve as ray_serve_module
except ImportError:  # the extra is not installed
    ray_serve_module = None
BACKENDS = [
    "local",
    pytest.param(
        "ray",
        marks=pytest.mark.skipif(
            ray_serve_module is None, reason='Ray Serve is not installed ("deepbandits[ray]")'
        ),
    ),
]


@pytest.fixture(params=BACKENDS)
def service(request, tmp_path):
    """A function that serves a policy on the test's backend: ``service(policy, **options)``
    is a context manager giving a client."""
    harness = request.getfixturevalue("ray_serve") if request.param == "ray" else None

    def start(policy: str = LINUCB, **options):
        return serving(request.param, tmp_path / "s", policy, harness, **options)

    start.backend = request.param
    return start


def test_decide_and_reward_answer_the_contract(service):
    with service() as client:
        d = client.decide(X)
        assert len(d.id.rpartition(":")[2]) == 32 and 0 <= d.arm < 4 and d.model_version == 0
        assert d.mean.shape == (4,) and d.width.shape == (4,) and 0 < d.propensity <= 1
        masked = client.decide(X, mask=[False, True, False, False])
        assert masked.arm == 1 and masked.propensity == 1.0
        out = client.learn(d, 0.5)
        assert out == {"decision_id": d.id, "rewards_learned": 1, "sigma2": 1.0, "model_version": 0}
        client.reward(masked.id, 1.0, reward_range=(0.0, 2.0))  # the alias, a round's range
        raw = httpx.post(f"{client.url}/v1/decide", json={"contexts": X.tolist()})
        assert raw.status_code == 200
        assert set(raw.json()) == {
            "decision_id",
            "arm",
            "propensity",
            "mean",
            "width",
            "model_version",
        }
        batch = client.decide_batch(np.stack([X, X, X]), masks=[None, [True, False] * 2, None])
        assert len(batch) == 3 and batch[1].arm in (0, 2) and len({b.id for b in batch}) == 3
        health = client.health()
        counts = {k: health[k] for k in ("decided", "pending", "learned", "expired")}
        assert counts == {"decided": 6, "pending": 4, "learned": 2, "expired": 0}


def test_batches_in_json_and_arrow_answer_the_same_decisions(service):
    stream = np.random.default_rng(3).standard_normal((6, 4, 3))
    library = db.make_policy("linucb", reward_range=(0, 1), seed=0)
    expected = library.decide_batch(stream)
    with service() as client:
        as_arrow = client.decide_batch(stream)  # one shape: Arrow
        assert [d.arm for d in as_arrow] == [d.arm for d in expected]
        np.testing.assert_array_equal(
            np.stack([d.width for d in as_arrow]), [e.width for e in expected]
        )
        ragged = [stream[0], stream[1][:3], stream[2]]  # shapes differ: JSON
        as_json = client.decide_batch(ragged)
        assert len(as_json) == 3 and len(as_json[1].mean) == 3
        uniform = client._request(  # equal shapes sent as JSON: the stacked path
            "POST", "/v1/decide_batch", {"requests": [{"contexts": x.tolist()} for x in stream]}
        )
        assert len(uniform["decisions"]) == 6
        client.learn(as_arrow[2], 0.5)
        client.learn(as_json[1].id, 0.25)
        assert client.health()["learned"] == 2
        bad = httpx.post(
            f"{client.url}/v1/decide_batch",
            content=arrow.requests_table(stream)[:-40],
            headers={"content-type": arrow.MEDIA_TYPE},
        )
        assert bad.status_code == 422 and bad.json()["error"] == "InputValueError"


def test_errors_are_the_library_messages_with_their_status(service):
    with service() as client:
        d = client.decide(X)
        client.learn(d, 0.5)
        cases = [
            (lambda: client.learn(d, 0.5), 409, db.RewardAlreadyLearnedError, "already learned"),
            (lambda: client.learn("f" * 32, 0.5), 404, db.UnknownDecisionError, "not pending"),
            (lambda: client.decide([["a", 1, 2]]), 422, db.InputTypeError, "contexts must"),
            (lambda: client.decide(np.ones((4, 2))), 422, db.InputValueError, "3 features"),
            (lambda: client.decide(X, mask=[True]), 422, db.InputValueError, "mask must"),
            (
                lambda: client.learn(client.decide(X), 5.0),
                422,
                db.InputValueError,
                "outside the reward range",
            ),
            (lambda: client.learn(client.decide(X), "x"), 422, db.InputTypeError, "reward must"),
            (
                lambda: client.learn(client.decide(X), 0.5, reward_range=7),  # type: ignore[arg-type]
                422,
                db.InputTypeError,
                "reward_range must be a pair",
            ),
        ]
        for call, _status, kind, words in cases:
            with pytest.raises(kind, match=words):
                call()
        for status, body, words in [
            (422, b"{not json", "not valid JSON"),
            (422, b'{"mask": null}', "contexts: Field required"),
            (422, b'{"contexts": [[1, 2, 3]], "extra": 1}', "extra"),
        ]:
            answer = httpx.post(f"{client.url}/v1/decide", content=body, headers=JSON)
            assert answer.status_code == status and words in answer.json()["detail"]
        answer = httpx.post(f"{client.url}/v1/decide", content=b'{"contexts": [[1, 2, 3]]}')
        assert answer.status_code == 422 and "Content-Type" in answer.json()["detail"]
        answer = httpx.post(f"{client.url}/v1/reward", json={"decision_id": "f" * 32, "reward": 1})
        assert answer.status_code == 404 and answer.json()["error"] == "UnknownDecisionError"


def test_an_expired_decision_is_404_and_says_so(service):
    with service(f"{LINUCB},reward_timeout=1") as client:
        first = client.decide(X)
        client.decide(X)
        client.decide(X)  # the first is now two decisions old
        with pytest.raises(db.ExpiredDecisionError, match="expired"):
            client.learn(first, 0.5)


def raw_request(url: str, head: bytes, wait: float = 10.0) -> bytes:
    """Send ``head`` (a request's first bytes) on a new connection, then read what comes back
    within ``wait`` seconds without sending more."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks):
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


def test_the_token_is_required_everywhere_but_health(service):
    with service(token="s3cret") as client:
        client.decide(X)  # the client sends it
        for token in (None, "wrong"):
            other = ServiceClient(client.url, token=token)
            with pytest.raises(db.AuthenticationError, match="Bearer"):
                other.decide(X)
            with pytest.raises(db.AuthenticationError):
                other.decide_batch(np.stack([X, X]))
            with pytest.raises(db.AuthenticationError):
                other.learn("0" * 32, 0.5)
            with pytest.raises(db.AuthenticationError):
                other.snapshot()
            with pytest.raises(db.AuthenticationError):
                other.metrics()
            assert other.health()["status"] == "ok"
        for path in ("/docs", "/openapi.json", "/redoc", "/v1/merge"):
            answer = httpx.request("POST" if "merge" in path else "GET", f"{client.url}{path}")
            assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        docs = httpx.get(f"{client.url}/openapi.json", headers={"authorization": "Bearer s3cret"})
        assert {"/v1/decide", "/v1/decide_batch", "/v1/reward"} <= set(docs.json()["paths"])
        # the token is checked from the headers: a 40 MiB body declared and not sent is refused
        head = (
            b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b"\r\nContent-Length: 41943040\r\n\r\n"
        )
        assert raw_request(client.url, head).startswith(b"HTTP/1.1 401")


def test_a_host_it_does_not_answer_to_is_421(service):
    with service(allowed_hosts=["localhost", "127.0.0.1"]) as client:
        assert client.decide(X).arm in range(4)  # Host: 127.0.0.1:port
        rebound = httpx.post(
            f"{client.url}/v1/decide",
            json={"contexts": X.tolist()},
            headers={"host": "evil.example"},
        )
        assert rebound.status_code == 421 and rebound.json()["error"] == "MisdirectedRequestError"
        health = httpx.get(f"{client.url}/v1/health", headers={"host": "evil.example:80"})
        assert health.status_code == 421
        assert client.health()["decided"] == 1


def test_a_body_over_the_limit_is_413_declared_or_streamed(service):
    with service(max_body_bytes=4000) as client:
        with pytest.raises(db.PayloadTooLargeError, match="at most 4000 bytes"):
            client.decide(np.ones((400, 3)))

        def chunks():  # no Content-Length: the limit is counted as the body arrives
            yield b'{"contexts": ['
            for _ in range(300):
                yield b"[1.0, 2.0, 3.0],"
            yield b"[1.0, 2.0, 3.0]]}"

        answer = httpx.post(f"{client.url}/v1/decide", content=chunks())
        assert answer.status_code == 413 and answer.json()["error"] == "PayloadTooLargeError"
        big = client._http.post(
            "/v1/decide_batch",
            content=arrow.requests_table(np.ones((100, 4, 3))),
            headers={"content-type": arrow.MEDIA_TYPE},
        )
        assert big.status_code == 413
        assert client.health()["decided"] == 0
        assert client.decide(X).arm in range(4)  # the service goes on


def test_health_and_metrics_count_what_happened(service):
    with service() as client:
        decisions = [client.decide(X) for _ in range(5)]
        for d in decisions[:3]:
            client.learn(d, 0.25)
        with pytest.raises(db.UnknownDecisionError):
            client.learn("0" * 32, 0.1)
        health = client.health()
        assert health["status"] == "ok" and health["model_version"] == 0
        assert health["events"] == 8 and health["pending"] == 2 and health["learned"] == 3
        text = client.metrics()
        assert "deepbandits_decisions_total 5.0" in text
        assert "deepbandits_rewards_total 3.0" in text
        assert 'deepbandits_errors_total{code="404"} 1.0' in text
        assert 'deepbandits_request_seconds_count{endpoint="/v1/decide"} 5.0' in text
        assert "deepbandits_pending_decisions 2.0" in text
        assert "deepbandits_model_version 0.0" in text
        assert "deepbandits_events 8.0" in text
        assert client.snapshot()["seq"] == 8


def test_non_finite_numbers_never_reach_the_wire(service):
    with service() as client:
        body = b'{"contexts": [[NaN, 1, 2]]}'  # Python's JSON reads NaN; the policy refuses it
        answer = httpx.post(f"{client.url}/v1/decide", content=body, headers=JSON)
        assert answer.status_code == 422 and "finite" in answer.json()["detail"]
        json.loads(answer.text)  # the answer is strict JSON


def test_a_slow_client_is_cut_off_at_its_headers_or_its_body(tmp_path):
    """Local backend only: Ray Serve's proxy, not this app, holds the connections there."""
    options = {"header_timeout": 0.5, "body_timeout": 0.5}
    with running(tmp_path / "s", LINUCB, **options) as (state, client):
        start = time.monotonic()
        assert raw_request(client.url, b"POST /v1/decide HTTP/1.1\r\nHost: 127") == b""
        assert time.monotonic() - start < 5  # closed by the server, not by the wait
        head = (
            b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b'\r\nContent-Length: 100\r\n\r\n{"contexts": '
        )
        answer = raw_request(client.url, head)
        assert answer.startswith(b"HTTP/1.1 408") and b"connection: close" in answer.lower()
        assert client.decide(X).arm in range(4) and state.log.seq == 1
