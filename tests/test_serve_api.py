"""The HTTP contract of issue 24 on a real server with a real client: codes, messages, auth,
size limit, health and metrics."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

import deepbandits as db
from deepbandits.client import ServiceClient
from serve_support import LINUCB, running

JSON = {"content-type": "application/json"}
X = np.arange(12, dtype=np.float64).reshape(4, 3) / 10


def test_decide_and_reward_answer_the_contract(tmp_path):
    with running(tmp_path / "s", LINUCB) as (state, client):
        d = client.decide(X)
        assert len(d.id) == 32 and 0 <= d.arm < 4 and d.model_version == 0
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
        assert state.policy.pending_.counts() == {
            "decided": 6,
            "pending": 4,
            "learned": 2,
            "expired": 0,
        }


def test_errors_are_the_library_messages_with_their_status(tmp_path):
    with running(tmp_path / "s", LINUCB) as (_, client):
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


def test_an_expired_decision_is_404_and_says_so(tmp_path):
    spec = f"{LINUCB},reward_timeout=1"
    with running(tmp_path / "s", spec) as (_, client):
        first = client.decide(X)
        client.decide(X)
        client.decide(X)  # the first is now two decisions old
        with pytest.raises(db.ExpiredDecisionError, match="expired"):
            client.learn(first, 0.5)


def test_the_token_is_required_everywhere_but_health(tmp_path):
    with running(tmp_path / "s", LINUCB, token="s3cret") as (_, client):
        client.decide(X)  # the client sends it
        for token in (None, "wrong"):
            other = ServiceClient(client.url, token=token)
            with pytest.raises(db.AuthenticationError, match="Bearer"):
                other.decide(X)
            with pytest.raises(db.AuthenticationError):
                other.snapshot()
            with pytest.raises(db.AuthenticationError):
                other.metrics()
            assert other.health()["status"] == "ok"
        answer = httpx.get(f"{client.url}/docs")
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        docs = httpx.get(f"{client.url}/openapi.json", headers={"authorization": "Bearer s3cret"})
        assert {"/v1/decide", "/v1/decide_batch", "/v1/reward"} <= set(docs.json()["paths"])


def test_a_body_over_the_limit_is_413_declared_or_streamed(tmp_path):
    with running(tmp_path / "s", LINUCB, max_body_bytes=4000) as (state, client):
        with pytest.raises(db.PayloadTooLargeError, match="at most 4000 bytes"):
            client.decide(np.ones((400, 3)))

        def chunks():  # no Content-Length: the limit is counted as the body arrives
            yield b'{"contexts": ['
            for _ in range(300):
                yield b"[1.0, 2.0, 3.0],"
            yield b"[1.0, 2.0, 3.0]]}"

        answer = httpx.post(f"{client.url}/v1/decide", content=chunks())
        assert answer.status_code == 413 and answer.json()["error"] == "PayloadTooLargeError"
        assert state.policy.pending_.counts()["decided"] == 0
        assert client.decide(X).arm in range(4)  # the service goes on


def test_health_and_metrics_count_what_happened(tmp_path):
    with running(tmp_path / "s", LINUCB) as (_, client):
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


def test_non_finite_numbers_never_reach_the_wire(tmp_path):
    with running(tmp_path / "s", LINUCB) as (_, client):
        body = b'{"contexts": [[NaN, 1, 2]]}'  # Python's JSON reads NaN; the policy refuses it
        answer = httpx.post(f"{client.url}/v1/decide", content=body, headers=JSON)
        assert answer.status_code == 422 and "finite" in answer.json()["detail"]
        json.loads(answer.text)  # the answer is strict JSON
