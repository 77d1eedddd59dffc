"""Batches of decisions in the event log: one binary batch event per ``decide_batch`` call (log
format 2), replayed bit for bit after ``kill -9``, rewarded by decision id after a restart and
exported one row per decision; a format-1 log (one JSON row per decision) still replays and
exports."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

import numpy as np
import pytest

import deepbandits as db
from deepbandits.client import ServiceClient
from deepbandits.serve import logfile
from deepbandits.serve.events import decision_body, rng_json, row_crc
from deepbandits.serve.export import log_table, logged_ids, read_log
from deepbandits.serve.state import ServiceState
from deepbandits.specs import parse_spec
from serve_support import LINUCB, Served, reward_of, running

K, D, B = 4, 5, 12


def requests(seed: int) -> tuple[np.ndarray, list[list[bool] | None]]:
    """``B`` requests ``[K, d]``, every third with a mask."""
    X = np.random.default_rng(seed).standard_normal((B, K, D))
    masks = [[True, False, True, True] if i % 3 == 0 else None for i in range(B)]
    return X, masks


def kinds(folder) -> list[str]:
    with closing(sqlite3.connect(f"file:{folder / 'events.sqlite'}?mode=ro", uri=True)) as conn:
        return [k for (k,) in conn.execute("SELECT kind FROM events ORDER BY seq")]


def library_policy(folder) -> db.Policy:
    """A library policy built as the folder's."""
    name, params = parse_spec(json.loads((folder / "service.json").read_text())["policy"])
    return db.make_policy(name, **params)


def assert_same_decisions(mine: list[db.Decision], theirs: list[db.Decision]) -> None:
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs, strict=True):
        assert (a.id, a.arm, a.propensity, a.round, a.time, a.model_version, a.head) == (
            b.id,
            b.arm,
            b.propensity,
            b.round,
            b.time,
            b.model_version,
            b.head,
        )
        for x, y in zip(a[3:5] + a[8:11], b[3:5] + b[8:11], strict=True):
            assert (x is None and y is None) or np.array_equal(x, y)


def test_a_batch_is_one_event_and_replays_bit_for_bit(tmp_path):
    folder = tmp_path / "s"
    X, masks = requests(0)
    with ServiceState(folder, policy=LINUCB) as state:
        made, future = state.decide_batch(list(X), masks)
        future.result()
        live = [state.policy.pending_._pending[d.id] for d in made]
        rng = state.policy._rng.bit_generator.state
        assert state.health()["events"] == B
    assert kinds(folder) == ["batch"]
    with ServiceState(folder) as state:  # no checkpoint: the batch is replayed from the log
        replayed = [state.policy.pending_._pending[d.id] for d in made]
        assert_same_decisions(replayed, live)
        assert state.policy._rng.bit_generator.state == rng
        assert state.health()["events"] == B and state.health()["pending"] == B
        state.snapshot()
    with ServiceState(folder) as state:  # counted by the checkpoint
        assert state.health()["events"] == B


def test_a_batch_survives_kill_9_takes_rewards_and_exports(tmp_path):
    folder = tmp_path / "s"
    X, masks = requests(1)
    served = Served(folder, LINUCB)
    with ServiceClient(served.start()) as client:
        decisions = client.decide_batch(X, masks)
        client.learn(decisions[0].id, reward_of(X[0], decisions[0].arm))
    served.kill()
    rewarded = [0, 3, 7, B - 1]
    with running(folder, snapshot=True) as (_, client):
        for i in rewarded[1:]:  # decided in the batch before the kill
            client.learn(decisions[i].id, reward_of(X[i], decisions[i].arm))
        assert client.health()["learned"] == len(rewarded)
        with pytest.raises(db.DeepBanditsError, match="already learned"):
            client.learn(decisions[3].id, 0.5)
    assert kinds(folder) == ["batch", "reward", "reward", "reward", "reward"]
    # the same requests and rewards through one library policy: the same statistics, exactly
    policy = library_policy(folder)
    mine = policy.decide_batch(X, masks)
    for i in rewarded:
        policy.learn(mine[i], reward_of(X[i], mine[i].arm))
    sidecar = sorted((folder / "checkpoints").glob("ckpt-*.json"))[-1]
    saved = db.load_policy(folder / json.loads(sidecar.read_text())["file"])
    assert np.array_equal(saved.ridge_.A, policy.ridge_.A)
    assert np.array_equal(saved.ridge_.b, policy.ridge_.b)

    out = tmp_path / "log.csv"
    argv = ["export-log", str(folder), "--out", str(out), "--format", "csv"]
    subprocess.run(
        [sys.executable, "-m", "deepbandits", *argv],
        check=True,
        capture_output=True,
    )
    table = log_table(folder)
    assert list(table["decision_id"]) == [d.id for d in decisions]
    assert list(table["action"]) == [d.arm for d in decisions] == [d.arm for d in mine]
    assert np.array_equal(table["propensity"], [d.propensity for d in decisions])
    assert np.array_equal(np.array(table["contexts"].tolist()), X)
    assert list(table["mask"]) == masks
    assert sorted(np.flatnonzero(table["reward"].notna())) == rewarded
    assert logged_ids(folder) == ([d.id for d in decisions], [decisions[i].id for i in rewarded])
    assert table["reward"][3] == reward_of(X[3], decisions[3].arm)
    with pytest.warns(UserWarning, match="8 of 12 decisions have no reward"):
        logged, direct = db.load_logged(out), read_log(folder)
    assert len(logged) == len(rewarded)
    assert np.array_equal(direct.contexts, logged.contexts)


def write_format_1(folder, X, masks) -> list[db.Decision]:
    """A log as the previous version wrote it: one JSON decision row per decision of a batch
    (meta format 1), then a reward row for the first decision."""
    policy = library_policy(folder)
    decisions = policy.decide_batch(X, masks)
    rng = rng_json(policy._rng.bit_generator.state)
    rows = [
        ("decision", d.time, d.id, 0, decision_body(d, X[i], rng)) for i, d in enumerate(decisions)
    ]
    reward = json.dumps({"reward": 0.25, "reward_range": None, "sigma2": None})
    rows.append(("reward", decisions[-1].time, decisions[0].id, 0, reward))
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        conn.executescript(logfile.SCHEMA)
        conn.execute("INSERT INTO meta VALUES ('format', '1'), ('created', '0.0')")
        conn.executemany(
            logfile.INSERT,
            [(seq, *row, row_crc(seq, *row)) for seq, row in enumerate(rows, start=1)],
        )
        conn.commit()
    policy.learn(decisions[0], 0.25)
    return decisions


def test_a_format_1_log_still_replays_and_exports(tmp_path):
    folder = tmp_path / "s"
    ServiceState(folder, policy=LINUCB).close()
    (folder / "events.sqlite").unlink()
    for name in ("service.json", "base.json"):  # a folder of the previous version: no id
        written = json.loads((folder / name).read_text())
        written.pop("id", None)
        written.pop("folder_id", None)
        (folder / name).write_text(json.dumps(written))
    X, masks = requests(2)
    old = write_format_1(folder, X, masks)
    table = log_table(folder)  # read as it is
    assert list(table["decision_id"]) == [d.id for d in old]
    assert np.array_equal(np.array(table["contexts"].tolist()), X)
    assert table["reward"].notna().sum() == 1
    with ServiceState(folder) as state:
        assert state.health()["events"] == B + 1 and state.health()["learned"] == 1
        assert_same_decisions([state.policy.pending_._pending[d.id] for d in old[1:]], old[1:])
        state.learn(old[5].id, 0.5)[1].result()
        more, future = state.decide_batch(list(X), masks)  # now a batch event
        future.result()
    assert kinds(folder)[-2:] == ["reward", "batch"]
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='format'").fetchone() == ("2",)
    table = log_table(folder)
    assert list(table["decision_id"]) == [d.id for d in old + more]
    assert table["reward"].notna().sum() == 2
    with ServiceState(folder) as state:
        assert state.health()["events"] == 2 * B + 2 and state.health()["pending"] == 2 * B - 2


def test_a_log_of_a_newer_format_is_refused(tmp_path):
    folder = tmp_path / "s"
    ServiceState(folder, policy=LINUCB).close()
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
        conn.commit()
    with pytest.raises(db.EventLogError, match="format 99, newer"):
        ServiceState(folder)
    with pytest.raises(db.EventLogError, match="format 99, newer"):
        log_table(folder)
