"""A state folder's integrity: a damaged row of the log is found wherever it is, set aside (not
deleted, not cut with everything after it) and reported by its number, at start and on export;
a log, or a checkpoint, copied in from another state folder is refused."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing

import numpy as np
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.serve import log as event_log
from deepbandits.serve import logfile
from deepbandits.serve.export import export_log, log_table
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, contexts_stream, reward_of

N = 30  # decisions, each followed by its reward: decision i is event 2i + 1, its reward 2i + 2


def fill(folder, *, snapshot_at=None, spec=LINUCB, seed=0):
    """``N`` decisions and their rewards on a new folder (a checkpoint after ``snapshot_at``
    events); returns the live policy's ridge statistics, generator state and the contexts."""
    stream = contexts_stream(seed, N)
    with ServiceState(folder, policy=spec) as state:
        for X in stream:
            d = state.decide(X)[0]
            state.learn(d.id, reward_of(X, d.arm))[1].result()
            if state.log.seq == snapshot_at:
                state.snapshot()
        policy = state.policy
        return {
            "A": policy.ridge_.A.copy(),
            "b": policy.ridge_.b.copy(),
            "rng": policy._rng.bit_generator.state,
            "ids": policy.pending_.ids(),
            "stream": stream,
        }


def damage(folder, *seqs):
    """Change a byte of each decision row ``seqs`` behind the log's back (its CRC no longer
    matches)."""
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        for seq in seqs:
            conn.execute(
                "UPDATE events SET body = replace(body, '\"arm\":', '\"arm\": ') WHERE seq = ?",
                (seq,),
            )
        conn.commit()


def rows(folder, table="events"):
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        return [r[0] for r in conn.execute(f"SELECT seq FROM {table} ORDER BY seq")]


def meta(folder):
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


def service(folder):
    return json.loads((folder / "service.json").read_text())


def test_a_damaged_row_before_the_checkpoint_is_found_at_start_and_export_keeps_the_rest(
    tmp_path, capsys
):
    folder = tmp_path / "s"
    live = fill(folder, snapshot_at=40)
    damage(folder, 5)
    with ServiceState(folder) as state:
        assert state.last_checkpoint == 40
        notes = state.health()["notes"]
        assert any("damaged" in n and "5" in n.split(":")[-1] for n in notes), notes
        assert np.array_equal(state.policy.ridge_.A, live["A"])  # the checkpoint includes it
        assert state.policy._rng.bit_generator.state == live["rng"]
    assert 5 not in rows(folder) and rows(folder, "damaged_events") == [5]
    table = log_table(folder)  # every intact row
    assert len(table) == N - 1 and table.attrs["damaged_events"] == [5]
    out = tmp_path / "log.csv"
    assert main(["export-log", str(folder), "--format", "csv", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{N - 1} decisions ({N - 1} with a reward) written to {out}" in said
    assert "1 damaged event set aside: 5" in said


def test_a_damaged_row_after_the_checkpoint_loses_no_later_event(tmp_path):
    folder = tmp_path / "s"
    live = fill(folder, snapshot_at=20)
    damage(folder, 25)  # decision 12; its reward (event 26) can no longer be learned
    with ServiceState(folder) as state:
        health = state.health()
        notes = health["notes"]
        assert any("25" in n and "damaged" in n for n in notes), notes
        assert any("26" in n and "25" in n and "reward" in n for n in notes), notes
        # every later event is there: 29 rewards learned, the last decision's draws go on
        assert state.policy.t_ == N - 1 and health["events"] == 2 * N - 2
        assert state.policy._rng.bit_generator.state == live["rng"]
        assert state.policy.pending_.counts()["learned"] == N - 1
        with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
            set_aside = dict(conn.execute("SELECT seq, reason FROM damaged_events"))
            arm = json.loads(
                conn.execute("SELECT body FROM damaged_events WHERE seq = 25").fetchone()[0]
            )["arm"]
        assert sorted(set_aside) == [25, 26]
        assert "checksum" in set_aside[25] and "25" in set_aside[26]
        # the replayed statistics are the live ones without decision 12's reward (one ridge)
        X = live["stream"][12]
        A, b = live["A"].copy(), live["b"].copy()
        A[0] -= np.outer(X[arm], X[arm])
        b[0] -= reward_of(X, arm) * X[arm]
        assert np.allclose(state.policy.ridge_.A, A) and np.allclose(state.policy.ridge_.b, b)
        assert not np.array_equal(state.policy.ridge_.A, live["A"])
    with ServiceState(folder) as state:
        notes = state.health()["notes"]  # the next start: said again, not as new
        assert any("25" in n and "26" in n and "earlier" in n for n in notes), notes
        assert not any("found" in n for n in notes), notes
    assert len(rows(folder)) + len(rows(folder, "damaged_events")) == 2 * N  # none deleted


def test_events_go_on_being_numbered_after_a_damaged_last_row(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    damage(folder, 2 * N - 1)  # the last decision
    with ServiceState(folder) as state:
        assert state.policy.t_ == N - 1
        future = state.decide(contexts_stream(9, 1)[0])[1]
        assert future.result() == 2 * N + 1  # not a number the set-aside rows hold


def test_sqlite_damage_is_salvaged_past_an_unreadable_page(tmp_path):
    path = tmp_path / "events.sqlite"
    log = event_log.EventLog(path)
    for seq in range(1, 301):
        log.append("decision", float(seq), f"id{seq}", 0, f"MARK{seq:05d}" + "x" * 1000)
    log.flush()
    log.close()
    data = bytearray(path.read_bytes())
    page_size = 4096
    page = data.index(b"MARK00150") // page_size
    data[page * page_size : page * page_size + 8] = b"\xff" * 8  # not a b-tree page any more
    path.write_bytes(bytes(data))
    assert logfile.problem_of(path) is not None
    log = event_log.EventLog(path)
    try:
        kept = [e.seq for e in log.read()]
        assert kept[-1] == 300 and 150 not in kept
        lost = sorted(set(range(1, 301)) - set(kept))
        assert len(lost) <= 5 and lost == list(range(lost[0], lost[-1] + 1))
        assert any(f"{lost[0]}" in n and "could not be read" in n for n in log.notes), log.notes
    finally:
        log.close()


def test_a_log_salvaged_without_its_meta_table_is_still_the_folders(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    path = folder / "events.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    data[start : start + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))
    with ServiceState(folder) as state:
        assert any("the event log was damaged" in n for n in state.health()["notes"])
        assert state.policy.t_ == N
    assert meta(folder)["folder_id"] == service(folder)["id"]


def test_another_folders_log_is_refused(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    fill(mine)
    fill(theirs, seed=1)
    shutil.copyfile(theirs / "events.sqlite", mine / "events.sqlite")
    their_id, my_id = service(theirs)["id"], service(mine)["id"]
    assert their_id != my_id and meta(theirs)["folder_id"] == their_id
    with pytest.raises(db.EventLogError) as caught:
        ServiceState(mine)
    message = str(caught.value)
    assert "events.sqlite belongs to another state folder" in message
    assert their_id in message and my_id in message and "linucb" in message


def test_a_folder_of_an_older_version_adopts_an_id_once(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    for path in (folder / "service.json", folder / "base.json"):  # as an older version wrote
        written = json.loads(path.read_text())
        written.pop("id", None)
        written.pop("folder_id", None)
        path.write_text(json.dumps(written))
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        conn.execute("DELETE FROM meta WHERE key IN ('folder_id', 'policy')")
        conn.commit()
    with ServiceState(folder) as state:
        assert state.policy.t_ == N and state.replayed == 2 * N  # from its base checkpoint
        notes = state.health()["notes"]
        assert [n for n in notes if "had no id" in n] == notes and len(notes) == 1
        state.snapshot()
    given = service(folder)["id"]
    assert "adopting" not in service(folder)
    assert meta(folder)["folder_id"] == given and "linucb" in meta(folder)["policy"]
    (sidecar,) = (folder / "checkpoints").glob("ckpt-*.json")
    assert json.loads(sidecar.read_text())["folder_id"] == given
    with ServiceState(folder) as state:  # once
        assert state.health()["notes"] == [] and state.policy.t_ == N
    assert service(folder)["id"] == given


def test_an_adoption_stopped_halfway_is_taken_up_again(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    info = service(folder)
    (folder / "service.json").write_text(json.dumps({**info, "adopting": True}))
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:  # stopped before the log
        conn.execute("DELETE FROM meta WHERE key IN ('folder_id', 'policy')")
        conn.commit()
    with ServiceState(folder) as state:
        assert state.policy.t_ == N
    assert meta(folder)["folder_id"] == info["id"] == service(folder)["id"]
    assert "adopting" not in service(folder)


def test_a_log_with_an_id_in_a_folder_without_one_is_refused_unless_empty(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    info = service(folder)
    log_id = info.pop("id")
    (folder / "service.json").write_text(json.dumps(info))
    with pytest.raises(db.EventLogError, match=f"another state folder \\(id {log_id}"):
        ServiceState(folder)
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:  # nothing in it
        conn.execute("DELETE FROM events")
        conn.commit()
    with ServiceState(folder):
        pass
    assert meta(folder)["folder_id"] == service(folder)["id"] != log_id


def test_a_log_without_an_id_in_a_folder_with_one_is_refused(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    with closing(sqlite3.connect(folder / "events.sqlite")) as conn:
        conn.execute("DELETE FROM meta WHERE key IN ('folder_id', 'policy')")
        conn.commit()
    with pytest.raises(db.EventLogError, match=r"events\.sqlite holds the events of a state"):
        ServiceState(folder)


def test_a_checkpoint_of_another_folder_is_refused(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    live = fill(mine, snapshot_at=20)
    fill(theirs, snapshot_at=50, seed=1)
    (theirs_ckpt,) = (theirs / "checkpoints").glob("ckpt-*.json")
    for path in (theirs_ckpt, theirs_ckpt.with_suffix(".pt")):
        shutil.copyfile(path, mine / "checkpoints" / path.name)  # the newest, by its name
    with ServiceState(mine) as state:
        notes = state.health()["notes"]
        assert any(theirs_ckpt.name in n and "another state folder" in n for n in notes), notes
        assert state.last_checkpoint == 20
        assert np.array_equal(state.policy.ridge_.A, live["A"])


def test_export_log_attaches_what_was_set_aside(tmp_path):
    folder = tmp_path / "s"
    fill(folder)
    damage(folder, 7, 9)
    out = tmp_path / "log.parquet"
    table = export_log(folder, out)  # before any start: found by their checksums
    assert table.attrs["damaged_events"] == [7, 9] and len(table) == N - 2
    ServiceState(folder).close()  # set aside, with the rewards of those decisions
    table = export_log(folder, out)
    assert table.attrs["damaged_events"] == [7, 8, 9, 10] and len(table) == N - 2
