"""``decide_batch`` in Apache Arrow: the same decisions as the JSON form and the library, one
batch event in the log, masks per request, and the library's messages for bodies of another
shape."""

from __future__ import annotations

import struct
import subprocess
import sys

import httpx
import numpy as np
import pyarrow as pa
import pytest

import deepbandits as db
from deepbandits.serve import arrow
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, arrow_stream, running

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
        (b"not arrow", "not a valid Arrow IPC stream"),
        (good[: len(good) // 2], "not a valid Arrow IPC stream"),
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


def test_offsets_that_run_backwards_are_refused_and_the_process_lives(tmp_path):
    # a mask whose list offsets run backwards: pyarrow read it outside its buffer (SIGSEGV)
    X, _ = requests(3)
    body = arrow.requests_table(X[:3], [[True, False, True, True]] * 3)
    offsets = np.array([0, K, 2 * K, 3 * K], np.int32).tobytes()
    assert body.count(offsets) == 1
    path = tmp_path / "body.arrow"
    path.write_bytes(body.replace(offsets, np.array([0, K, -100_000, 3 * K], np.int32).tobytes()))
    script = (
        "import sys\n"
        "from deepbandits.serve import arrow\n"
        "from deepbandits.errors import InputValueError\n"
        "try:\n"
        "    arrow.read_requests(open(sys.argv[1], 'rb').read(), 2**20)\n"
        "except InputValueError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "not a valid Arrow IPC stream" in done.stdout
    assert "non-monotonic offset" in done.stdout


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
@pytest.mark.parametrize("chunk", [None, 5, 1])
def test_the_decompressed_size_is_what_pyarrow_decodes(compression, chunk):
    X, masks = requests(4)
    table = arrow.read_table(arrow.requests_table(X, masks))
    body = arrow_stream(table, compression, chunk)
    reader = pa.ipc.MessageReader.open_stream(body)
    schema = pa.ipc.read_schema(reader.read_next_message())
    batches = 0
    for message in reader:
        counted = arrow._decompressed_size(message)
        batch = pa.ipc.read_record_batch(message, schema)
        decoded = [b.size for column in batch.columns for b in column.buffers() if b is not None]
        assert counted == sum(decoded) == batch.get_total_buffer_size() > 0
        batches += 1
    assert batches == (1 if chunk is None else -(-B // chunk))
    contexts, read_masks = arrow.read_requests(body, 2**20)
    assert np.array_equal(contexts, X) and read_masks == masks


def test_a_buffer_stored_uncompressed_in_a_compressed_stream_is_counted():
    # Arrow marks a buffer it stored uncompressed (no gain) with the length -1
    X = np.random.default_rng(5).integers(-(2**62), 2**62, (B, K, D))  # incompressible
    rows = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D)
    body = arrow_stream(pa.table({"contexts": pa.FixedSizeListArray.from_arrays(rows, K)}), "zstd")
    raw = X.tobytes()
    start = body.index(struct.pack("<q", len(raw)) + b"\x28\xb5\x2f\xfd")  # zstd's magic
    stored = body[:start] + struct.pack("<q", -1) + raw + body[start + 8 + len(raw) :]
    reader = pa.ipc.MessageReader.open_stream(stored)
    schema = pa.ipc.read_schema(reader.read_next_message())
    message = reader.read_next_message()
    batch = pa.ipc.read_record_batch(message, schema)
    assert arrow._decompressed_size(message) == batch.get_total_buffer_size() >= len(raw)
    assert np.array_equal(arrow.read_requests(stored, 2**20)[0], X)


def test_a_compressed_bomb_is_refused_before_anything_is_decompressed():
    zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2**22)), 2**8)
    body = arrow_stream(
        pa.table({"contexts": pa.FixedSizeListArray.from_arrays(zeros, 2**6)}), "zstd"
    )
    assert len(body) < 20_000  # 32 MiB once decompressed
    pool = pa.proxy_memory_pool(pa.default_memory_pool())  # counts what pyarrow allocates
    default = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        with pytest.raises(db.PayloadTooLargeError, match=r"at most 65536 bytes .* 33554432"):
            arrow.read_requests(body, 2**16)
        assert pool.max_memory() < 2**16
        pa.ipc.open_stream(body).read_all()  # what the check spares
        assert pool.max_memory() >= 2**25
    finally:
        pa.set_memory_pool(default)


def test_streams_of_other_messages_or_types_are_refused():
    X, _ = requests(6)
    body = arrow.requests_table(X)
    schema_end = body.index(b"\xff\xff\xff\xff", 8)  # the second message's marker
    words = arrow.NOT_ARROW
    dictionary = pa.table({"contexts": pa.array(["a", "b"]).dictionary_encode()})
    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(K * D, np.int8)), pa.array([0.5]))
    dictionary_values = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(values, D), K
    )
    tensor = pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.float64(), (K, D)),
        pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(K * D)), K * D),
    )
    with_dictionary = arrow_stream(pa.table({"contexts": dictionary_values}))
    dictionary_batch = with_dictionary[with_dictionary.index(b"\xff\xff\xff\xff", 8) :]
    cases = [
        (b"", db.InputValueError, f"{words}: it holds no schema"),
        (body[schema_end:], db.InputValueError, "starts with a record batch, not a schema"),
        (
            body[:schema_end] + body,
            db.InputValueError,
            "it holds a schema message after its schema",
        ),
        (body[:schema_end] + dictionary_batch, db.InputValueError, "a dictionary message after"),
        (arrow_stream(dictionary), db.InputTypeError, "contexts must be a list of K rows"),
        (with_dictionary, db.InputTypeError, "contexts must hold numbers, but they hold dict"),
        (arrow_stream(pa.table({"contexts": [{"a": 1.0}]})), db.InputTypeError, "it is struct"),
        (arrow_stream(pa.table({"contexts": tensor})), db.InputTypeError, "it is extension<"),
    ]
    for case, error, message in cases:
        with pytest.raises(error, match=message):
            arrow.read_requests(case, 2**20)


def test_a_compressed_body_decides_and_a_bomb_is_413(tmp_path):
    X, masks = requests(7)
    plain = arrow.requests_table(X, masks)
    zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2**14 * D)), D)
    bomb = arrow_stream(pa.table({"contexts": pa.FixedSizeListArray.from_arrays(zeros, K)}), "zstd")
    with running(tmp_path / "s", LINUCB, max_body_bytes=2**16) as (state, client):
        answer = post(client, bomb)
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == "PayloadTooLargeError"
        assert state.log.seq == 0
        answer = post(client, arrow_stream(arrow.read_table(plain), "lz4"))
        assert answer.status_code == 200, answer.text
        arms = arrow.read_table(answer.content).column("arm").to_pylist()
    with running(tmp_path / "p", LINUCB) as (_, client):
        assert arrow.read_table(post(client, plain).content).column("arm").to_pylist() == arms


def test_an_answer_with_offsets_that_run_backwards_is_refused_by_the_reader():
    """The client reads the service's Arrow answers with ``read_table``: a malformed one (a
    hostile or broken server) is the library's error, not a read out of bounds."""
    table = pa.table(
        {"mask": pa.array([[True] * 4, [False] * 4, [True] * 4], pa.list_(pa.bool_()))}
    )
    body = bytearray(arrow_stream(table))
    offsets = np.array([0, 4, 8, 12], dtype=np.int32).tobytes()
    at = bytes(body).rfind(offsets)
    body[at : at + 16] = np.array([0, 4, -100000, 12], dtype=np.int32).tobytes()
    with pytest.raises(db.InputValueError, match="not a valid Arrow IPC stream"):
        arrow.read_table(bytes(body))
