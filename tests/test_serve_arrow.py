"""``decide_batch`` in Apache Arrow: the same decisions as the JSON form and the library, one
batch event in the log, masks per request, and the library's messages for bodies of another
shape."""

from __future__ import annotations

import httpx
import numpy as np
import pyarrow as pa
import pytest

import deepbandits as db
from deepbandits.serve import arrow
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, running

K, D, B = 4, 5, 12
ARROW = {"content-type": arrow.MEDIA_TYPE}


def requests(seed: int) -> tuple[np.ndarray, list[list[bool] | None]]:
    """``B`` requests ``[K, d]``, every third with a mask."""
    X = np.random.default_rng(seed).standard_normal((B, K, D))
    masks = [[True, False, True, True] if i % 3 == 0 else None for i in range(B)]
    return X, masks


def post(client, body: bytes) -> httpx.Response:
    return httpx.post(f"{client.url}/v1/decide_batch", content=body, headers=ARROW)


def test_arrow_answers_what_json_and_the_library_decide(tmp_path):
    X, masks = requests(0)
    library = db.make_policy("linucb", reward_range=(0, 1), seed=0)
    expected = library.decide_batch(X, masks)
    with running(tmp_path / "a", LINUCB) as (state, client):
        answer = post(client, arrow.requests_table(X, masks))
        assert answer.status_code == 200
        assert answer.headers["content-type"] == arrow.MEDIA_TYPE
        table = arrow.read_table(answer.content)
        assert table.column_names == [
            *("decision_id", "arm", "propensity", "mean", "width", "model_version")
        ]
        assert table.schema.field("mean").type == pa.list_(pa.float64(), K)
        assert table.column("arm").to_pylist() == [d.arm for d in expected]
        assert table.column("propensity").to_pylist() == [d.propensity for d in expected]
        mean = np.array(table.column("mean").to_pylist())
        assert np.array_equal(mean, np.stack([d.mean for d in expected]))
        assert all(arm != 1 for arm in table.column("arm").to_pylist()[::3])  # the masks held
        ids = table.column("decision_id").to_pylist()
        assert sorted(ids) == sorted(state.policy.pending_.ids())
        assert [e.kind for e in state.log.read()] == ["batch"]  # one event for the batch
        client.learn(ids[5], 0.5)  # rewarded by id, as a JSON decision
        A = state.policy.ridge_.A.copy()
    with running(tmp_path / "j", LINUCB) as (state, client):
        served = client.decide_batch([x.tolist() for x in X], masks)  # lists: JSON
        assert [d.arm for d in served] == [d.arm for d in expected]
        assert np.array_equal(np.stack([d.width for d in served]), [d.width for d in expected])
    with ServiceState(tmp_path / "a") as restarted:  # the Arrow batch replays
        assert np.array_equal(restarted.policy.ridge_.A, A)
        assert len(restarted.policy.pending_.ids()) == B - 1


def test_the_client_sends_arrays_as_arrow(tmp_path, monkeypatch):
    X, masks = requests(1)
    sent = []
    real = arrow.requests_table
    monkeypatch.setattr(arrow, "requests_table", lambda *a: sent.append(a) or real(*a))
    with running(tmp_path / "s", LINUCB) as (_, client):
        served = client.decide_batch(X, masks)
        assert len(sent) == 1 and len(served) == B
        assert isinstance(served[0], db.client.ServedDecision)
        assert served[0].mean.shape == (K,) and 0 < served[0].propensity <= 1
        client.decide_batch([X[0], X[1][:2]])  # two shapes: JSON
        assert len(sent) == 1
        with pytest.raises(db.InputValueError, match="contexts"):
            client.decide_batch(np.full((2, K, D), np.nan))  # the policy's own check
        assert len(sent) == 2


def test_bodies_of_another_shape_get_the_library_messages(tmp_path):
    good = arrow.requests_table(*requests(2))

    def table(**columns) -> bytes:
        return arrow.to_stream(pa.table(columns))

    cases = [
        (b"not arrow", "not an Arrow IPC stream"),
        (good[: len(good) // 2], "not an Arrow IPC stream"),
        (table(x=pa.array([1.0])), "must have the column contexts"),
        (table(contexts=[[[1.0] * D] * K], extra=[1]), "must have the column contexts"),
        (table(contexts=pa.array([1.0])), "contexts must be a list of K rows"),
        (table(contexts=[[1.0, 2.0]]), "each row a list of d numbers"),
        (table(contexts=[[["a"] * D] * K]), "contexts must hold numbers"),
        (table(contexts=[[[1.0] * D] * K, [[1.0] * D] * (K - 1)]), "from 3 to 4"),
        (table(contexts=[[[1.0] * D] * K, None]), "no nulls"),
        (table(contexts=[[[1.0, None]]]), "no nulls"),
        (table(contexts=[[[np.nan] * D] * K]), "contexts"),
        (table(contexts=[[[1.0] * D] * K], mask=[[1, 0, 1, 1]]), "mask must be a list of bool"),
        (table(contexts=[[[1.0] * D] * K], mask=[[True]]), "mask"),
        (table(contexts=pa.array([], pa.list_(pa.list_(pa.float64())))), "at least one request"),
    ]
    with running(tmp_path / "s", LINUCB) as (state, client):
        for body, words in cases:
            answer = post(client, body)
            assert answer.status_code == 422, (words, answer.text)
            assert words in answer.json()["detail"], (words, answer.json())
            assert answer.json()["error"] in ("InputValueError", "InputTypeError")
        assert state.policy.pending_.counts()["decided"] == 0  # nothing was decided
        assert state.log.seq == 0
        integers = table(contexts=[[[1] * D] * K, [[2] * D] * K])  # cast to float64
        assert post(client, integers).status_code == 200


def test_the_openapi_page_documents_the_arrow_form(tmp_path):
    with running(tmp_path / "s", LINUCB) as (_, client):
        spec = httpx.get(f"{client.url}/openapi.json").json()
        operation = spec["paths"]["/v1/decide_batch"]["post"]
        assert set(operation["requestBody"]["content"]) == {"application/json", arrow.MEDIA_TYPE}
        assert arrow.MEDIA_TYPE in operation["responses"]["200"]["content"]
