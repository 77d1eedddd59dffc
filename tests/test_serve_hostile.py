"""What a hostile or careless client cannot do to a service: shift the scale of the contexts
until exploration stops, or fill the pending table so that a SIGTERM outlasts its grace
period."""

from __future__ import annotations

import concurrent.futures
import re
import signal
import subprocess
import sys
import time

import numpy as np
import orjson
import pytest

import deepbandits as db
from deepbandits.client import ServiceClient
from deepbandits.serve import direct
from deepbandits.serve.scale import ContextScale
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, contexts_stream, reward_of, running


def play(state: ServiceState, seed: int, n: int, scale: float = 1.0) -> list:
    decisions = []
    for X in contexts_stream(seed, n):
        d, _ = state.decide(X * scale)
        state.learn(d.id, reward_of(X, d.arm))[1].result()
        decisions.append(d)
    return decisions


def test_without_the_check_one_huge_context_ends_exploration_for_good(tmp_path):
    """The finding: contexts 1e10 times the earlier ones (inside the bound on numbers) make
    every later width zero, silently."""
    with ServiceState(tmp_path / "s", policy=LINUCB, max_context_ratio=None) as state:
        before = play(state, 0, 30)[-1].width
        play(state, 1, 10, scale=1e10)  # a burst of contexts in a unit 1e10 times smaller
        after = play(state, 2, 5)[-1].width
    assert before.min() > 1e-3 and after.max() < 1e-8


def test_a_context_far_outside_the_scale_seen_is_refused_and_changes_nothing(tmp_path):
    with ServiceState(tmp_path / "s", policy=LINUCB) as state:
        play(state, 0, 30)
        counts, events = state.policy.pending_.counts(), state.log.seq
        huge = contexts_stream(1, 1)[0] * 1e10
        with pytest.raises(db.InputValueError, match=r"times the largest absolute value"):
            state.decide(huge)
        with pytest.raises(db.InputValueError, match="max-context-ratio"):
            state.decide_batch([contexts_stream(3, 1)[0], huge[:2]])  # one ragged request
        assert state.policy.pending_.counts() == counts and state.log.seq == events
        assert play(state, 2, 5)[-1].width.min() > 1e-3  # exploration goes on
        assert state.decide(huge / 1e5)[0].arm in range(3)  # 1e5 times: inside the bound
        largest = state.scale.largest
        state.snapshot()
        state.decide(huge / 1e4)  # after the checkpoint: replayed
    with ServiceState(tmp_path / "s") as again:  # the scale seen survives a restart
        assert again.scale.largest == pytest.approx(largest * 10, rel=1e-12)
        with pytest.raises(db.InputValueError):
            again.decide(huge * 1e3)


def test_the_ratio_is_checked():
    for bad in (0.5, 1, float("nan"), "big", True):
        with pytest.raises(db.InputValueError, match="max_context_ratio"):
            ContextScale(bad)
    scale = ContextScale(10.0)
    assert scale.check(np.ones((2, 2))) == 1.0  # nothing seen yet: anything goes
    scale.seen(1.0)
    with pytest.raises(db.InputValueError):
        scale.check(np.full((2, 2), 11.0))
    assert scale.check(np.array([[np.nan, 1e30]])) is None  # the policy refuses these itself


def test_sigterm_with_a_full_pending_table_ends_within_ten_seconds_with_a_checkpoint(tmp_path):
    """The finding: SIGTERM took 58 s with 100,000 pending decisions (the checkpoint's one
    tensor per array); an orchestrator kills a container after about 30 s, often 10."""
    folder, err = tmp_path / "s", tmp_path / "serve.err"
    argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", LINUCB]
    argv += ["--state", str(folder), "--port", "0", "--max-body-bytes", str(64 * 2**20)]
    with open(err, "w") as stream:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stream)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r" on (http://127\.0\.0\.1:\d+) ", err.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        X = np.random.default_rng(0).standard_normal((10_000, 10, 20))
        with ServiceClient(found[1], timeout=120) as client:
            for _ in range(10):
                client.decide_batch(X)
            assert client.health()["pending"] == 100_000
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, err.read_text()
        assert time.monotonic() - start < 10
    finally:
        if process.poll() is None:
            process.kill()
    with ServiceState(folder) as state:  # the checkpoint holds every decision: nothing replays
        assert state.replayed == 0 and state.health()["pending"] == 100_000


def test_a_large_batch_being_read_does_not_hold_other_clients(tmp_path, monkeypatch):
    """The finding: one 2.9 MiB JSON batch stalled every other client for 1.2 s, its parsing
    holding the event loop. Its parsing is made to take 2 s here: a small decision sent
    meanwhile is answered long before the batch."""
    parse = direct.parse

    def slow_parse(model, body):
        if len(body) > direct.THREAD_PARSE_BYTES:
            time.sleep(2.0)
        return parse(model, body)

    monkeypatch.setattr(direct, "parse", slow_parse)
    X = np.random.default_rng(0).standard_normal((700, 10, 20))
    body = orjson.dumps({"requests": [{"contexts": x.tolist()} for x in X]})
    assert len(body) > 2 * 2**20
    with running(tmp_path / "s", LINUCB) as (_, client):
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            start = time.monotonic()
            big = pool.submit(
                client._http.post,
                "/v1/decide_batch",
                content=body,
                headers={"content-type": "application/json"},
            )
            time.sleep(0.3)  # the batch is being parsed
            assert client.decide(X[0]).arm in range(10)
            small = time.monotonic() - start
            assert big.result().status_code == 200
            assert small < 1.5 < time.monotonic() - start
