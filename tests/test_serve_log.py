"""The event log's checkpoints: the writer never copies the write-ahead log into the database
file itself (a commit would wait for it), a thread of its own does, beside it."""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import contextmanager

import pytest

from deepbandits.serve import log as event_log
from deepbandits.serve import logfile


def rows_in_database_file(path, tmp_path):
    """The events the database file holds without its write-ahead log."""
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        except sqlite3.OperationalError:  # not even the table was copied in
            return 0


def append(log, n, size):
    for i in range(n):
        log.append("decision", float(i), f"id{i}", 0, "x" * size)
    log.flush()


@contextmanager
def log_checkpointing_every(seconds, tmp_path, monkeypatch):
    """A new log at ``tmp_path/events.sqlite`` whose checkpointer runs every ``seconds``."""
    monkeypatch.setattr(event_log, "CHECKPOINT_SECONDS", seconds)
    log = event_log.EventLog(tmp_path / "events.sqlite")
    try:
        yield log
    finally:
        log.close()


def test_the_checkpointer_copies_the_log_into_the_database_file(tmp_path, monkeypatch):
    with log_checkpointing_every(0.05, tmp_path, monkeypatch) as log:
        append(log, 500, 100)  # far below SQLite's own checkpoint threshold (1000 pages)
        deadline = time.monotonic() + 10
        while rows_in_database_file(log.path, tmp_path) < 500 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows_in_database_file(log.path, tmp_path) == 500


def test_the_writer_never_checkpoints_itself(tmp_path, monkeypatch):
    with log_checkpointing_every(3600.0, tmp_path, monkeypatch) as log:
        append(log, 3000, 4000)  # 12 MB: three times SQLite's automatic checkpoint threshold
        assert rows_in_database_file(log.path, tmp_path) == 0
        assert log.path.with_name("events.sqlite-wal").stat().st_size > 10_000_000
    path = tmp_path / "events.sqlite"
    with sqlite3.connect(path) as conn:  # closing copied everything in
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3000


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_events_survive_close_and_reopen_with_checkpoints_running(tmp_path, durability):
    path = tmp_path / "events.sqlite"
    log = event_log.EventLog(path, durability)
    append(log, 200, 50)
    log.close()
    log = event_log.EventLog(path, durability)
    try:
        assert log.last_seq() == 200 and [e.seq for e in log.read(190)] == list(range(191, 201))
    finally:
        log.close()


def test_damaged_rows_are_set_aside_whatever_the_damage(tmp_path):
    path = tmp_path / "events.sqlite"
    log = event_log.EventLog(path)
    append(log, 10, 20)
    log.close()
    with sqlite3.connect(path) as conn:  # not UTF-8; another type; a changed checksum
        conn.execute("UPDATE events SET body = CAST(x'ff41' AS TEXT) WHERE seq = 4")
        conn.execute("UPDATE events SET time = 'noon' WHERE seq = 6")
        conn.execute("UPDATE events SET crc = crc + 1 WHERE seq = 10")
    log = event_log.EventLog(path)
    try:
        assert [e.seq for e in log.read()] == [1, 2, 3, 5, 7, 8, 9]
        assert log.notes == [
            "3 damaged events of the log found at this start (its checksum does not match) and "
            "set aside in the table damaged_events of events.sqlite: 4, 6, 10"
        ]
        assert [(e.seq, e.time) for e in log.damaged()][1] == (6, "noon")  # kept as it was
        assert log.last_seq() == 10  # the next event is 11, not a number set aside
    finally:
        log.close()
    log = event_log.EventLog(path)
    try:
        assert log.notes == [
            "3 events of the log set aside at an earlier start (table damaged_events of "
            "events.sqlite): 4, 6, 10"
        ]
    finally:
        log.close()


def test_numbers_lists_the_first_twenty():
    assert logfile.numbers([3, 4]) == "3, 4"
    assert logfile.numbers(range(1, 31)) == ", ".join(map(str, range(1, 21))) + ", ..."
