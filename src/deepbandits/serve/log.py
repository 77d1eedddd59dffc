"""The event log of a decision service: one SQLite file in WAL mode, appended by group commits.

:class:`EventLog` numbers each event as it is appended (the caller appends under the policy's
lock, so the numbers are the order the policy applied the events in) and hands it to one writer
thread. The writer drains everything queued, writes it in one transaction and only then resolves
each event's future: an answer sent after its future resolved is on disk. Under load the queue
fills while a commit runs, so one transaction carries many events (group commit).

The writer never checkpoints (``wal_autocheckpoint=0``): copying the write-ahead log into the
database file, and its fsync, would hold up every answer waiting for that commit (the p99 of a
decision under load went from 4.6 ms to 8.8 ms with SQLite's automatic checkpoints). A thread of
its own runs a ``PASSIVE`` checkpoint every :data:`CHECKPOINT_SECONDS` on its own connection,
which writers do not wait for; SQLite starts the write-ahead log over once it is all copied.

Durability is SQLite's ``synchronous`` setting: ``normal`` (``synchronous=NORMAL``: a commit is
in the write-ahead log in the operating system's hands, which survives the process being killed)
or ``full`` (``synchronous=FULL``: the log is fsynced at each commit, which also survives a power
loss).

The file is plain SQLite (any ``sqlite3`` reads it; the table ``events`` is described in
:mod:`deepbandits.serve.events`). Its ``meta`` table records the layout's version, ``format``:
1, one JSON row per decision; 2 (:data:`FORMAT`), which adds the binary batch event
(:mod:`deepbandits.serve.batches`). A format-1 log is read as it is and marked format 2 once
opened for writing (its rows stay valid); a log of a newer format is refused.

Opening checks the file (``PRAGMA quick_check``, the schema); a damaged file is moved aside
and the readable rows, in order up to the first damaged one, are copied into a new file
(:func:`salvage`), with a message saying so.
"""

from __future__ import annotations

import logging
import queue
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

from deepbandits.errors import EventLogError, InputValueError
from deepbandits.serve.events import Event, row_crc

DURABILITY = {"normal": "NORMAL", "full": "FULL"}
#: Most events one transaction writes.
MAX_GROUP = 4096
#: Seconds between two checkpoints of the write-ahead log (module notes).
CHECKPOINT_SECONDS = 0.5
#: The layout this version writes (module notes).
FORMAT = 2
LOG = logging.getLogger("deepbandits.serve")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    time REAL NOT NULL,
    decision_id TEXT,
    model_version INTEGER NOT NULL,
    body TEXT NOT NULL,
    crc INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_decision ON events (decision_id);
"""
INSERT = (
    "INSERT INTO events (seq, kind, time, decision_id, model_version, body, crc) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
SELECT = "SELECT seq, kind, time, decision_id, model_version, body, crc FROM events"


def connect(
    path: Path, durability: str = "normal", *, read_only: bool = False
) -> sqlite3.Connection:
    """A connection to the log at ``path`` in WAL mode with the durability's ``synchronous``."""
    if durability not in DURABILITY:
        raise InputValueError(
            f"durability must be one of {', '.join(DURABILITY)}, but {durability!r} is given"
        )
    if read_only:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={DURABILITY[durability]}")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def problem_of(path: Path) -> str | None:
    """What is wrong with the log at ``path`` (None: nothing)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            result = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if result != ["ok"]:
        return "; ".join(result[:3])
    if not {"events", "meta"} <= tables:
        return "it has no events table (not a deepbandits event log)"
    return None


def log_format(conn: sqlite3.Connection) -> int:
    """The format of the log open on ``conn`` (1 when unrecorded); a format newer than
    :data:`FORMAT` raises :class:`~deepbandits.errors.EventLogError`."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    found = 1 if row is None else int(row[0])
    if found > FORMAT:
        raise EventLogError(
            f"the event log is of format {found}, newer than this version of deepbandits reads "
            f"({FORMAT}): upgrade deepbandits"
        )
    return found


def _rows(conn: sqlite3.Connection, after: int) -> Iterator[Event]:
    """The rows after ``after`` in order; a row whose CRC does not match raises."""
    for seq, kind, t, decision_id, version, body, crc in conn.execute(
        f"{SELECT} WHERE seq > ? ORDER BY seq", (after,)
    ):
        event = Event(seq, kind, t, decision_id, version, body)
        if event.crc() != crc:
            raise EventLogError(f"event {seq} of the log is damaged (its checksum does not match)")
        yield event


def salvage(path: Path, reason: str) -> tuple[int, Path]:
    """Move the damaged log ``path`` aside and copy its readable events, in order up to the
    first damaged one, into a new log at ``path``; returns the last event kept and where the
    damaged file went."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            shutil.move(source, Path(f"{aside}{suffix}"))
    kept: list[tuple[object, ...]] = []
    meta: list[tuple[str, str]] = []
    try:
        old = sqlite3.connect(f"file:{aside}?mode=ro", uri=True)
        try:
            meta = list(old.execute("SELECT key, value FROM meta"))
            for event in _rows(old, 0):
                kept.append((*event, event.crc()))
        finally:
            old.close()
    except (sqlite3.DatabaseError, EventLogError) as exc:
        LOG.warning("reading the damaged log stopped at event %d: %s", len(kept), exc)
    new = connect(path)
    try:
        new.executescript(SCHEMA)
        new.execute("BEGIN")
        new.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta)
        new.executemany(INSERT, kept)
        new.execute("COMMIT")
    finally:
        new.close()
    last = int(kept[-1][0]) if kept else 0  # type: ignore[call-overload]
    LOG.warning(
        "the event log %s was damaged (%s): its %d readable events up to event %d were kept, the "
        "damaged file was moved to %s",
        path,
        reason,
        len(kept),
        last,
        aside,
    )
    return last, aside


class _Pending:
    __slots__ = ("future", "row")

    def __init__(self, row: tuple[object, ...]) -> None:
        self.row = row
        self.future: Future[int] = Future()


class EventLog:
    """The log at ``path`` (created if missing; checked and salvaged if damaged).

    Parameters
    ----------
    path : path
        The SQLite file (``STATE/events.sqlite``).
    durability : {"normal", "full"}
        SQLite's ``synchronous`` (module notes).

    Attributes
    ----------
    notes : list of str
        What opening found and repaired (empty for a sound log).
    """

    def __init__(self, path: str | Path, durability: str = "normal") -> None:
        self.path = Path(path)
        self.durability = durability
        self.notes: list[str] = []
        if self.path.exists():
            problem = problem_of(self.path)
            if problem is not None:
                last, aside = salvage(self.path, problem)
                self.notes.append(
                    f"the event log was damaged ({problem}); recovered up to event {last}, the "
                    f"damaged file is kept as {aside.name}"
                )
        self._conn = connect(self.path, durability)
        self._conn.executescript(SCHEMA)
        self._conn.execute(
            "INSERT OR IGNORE INTO meta VALUES ('format', ?), ('created', ?)",
            (str(FORMAT), repr(time.time())),
        )
        try:
            log_format(self._conn)
        except EventLogError:
            self._conn.close()
            raise
        self._conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT),))
        self._seq = self.last_seq()
        self._committed = self._seq
        self._lock = threading.Lock()
        self._done = threading.Condition()
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self.failure: BaseException | None = None
        self.n_commits = 0
        self._writer = threading.Thread(target=self._write, name="deepbandits-log", daemon=True)
        self._writer.start()
        self._stop_checkpoints = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoint, name="deepbandits-log-checkpoint", daemon=True
        )
        self._checkpointer.start()

    # ------------------------------------------------------------------ reading
    def reader(self) -> sqlite3.Connection:
        """A new read-only connection (readers never block the writer in WAL mode)."""
        return connect(self.path, read_only=True)

    def last_seq(self) -> int:
        """The number of the last event on disk (0 for none)."""
        row = self._conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def count_to(self, seq: int, *kinds: str) -> int:
        """How many events of ``kinds`` the log holds up to event ``seq``."""
        marks = ",".join("?" * len(kinds))
        conn = self.reader()
        try:
            sql = f"SELECT COUNT(*) FROM events WHERE seq <= ? AND kind IN ({marks})"
            return int(conn.execute(sql, (seq, *kinds)).fetchone()[0])
        finally:
            conn.close()

    def read(self, after: int = 0) -> Iterator[Event]:
        """The events after ``after``, in order; a damaged row raises
        :class:`~deepbandits.errors.EventLogError`."""
        conn = self.reader()
        try:
            yield from _rows(conn, after)
        except sqlite3.DatabaseError as exc:
            raise EventLogError(f"the event log {self.path} cannot be read: {exc}") from None
        finally:
            conn.close()

    def cut_after(self, seq: int, reason: str) -> None:
        """Keep the events up to ``seq`` only (the rest are damaged); the whole file is first
        copied aside, as :func:`salvage` does."""
        self.flush()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.stem}.damaged-{stamp}{self.path.suffix}")
        self._conn.execute("VACUUM INTO ?", (str(aside),))
        self._conn.execute("DELETE FROM events WHERE seq > ?", (seq,))
        self._seq = self._committed = seq
        self.notes.append(
            f"event {seq + 1} of the log was damaged ({reason}); recovered up to event {seq}, "
            f"the whole log is kept as {aside.name}"
        )
        LOG.warning(self.notes[-1])

    # ------------------------------------------------------------------ writing
    def skip_to(self, seq: int) -> None:
        """Number the next event after ``seq`` at least (a checkpoint ahead of the log)."""
        with self._lock:
            self._seq = max(self._seq, seq)
            self._committed = max(self._committed, seq)

    def append(
        self, kind: str, t: float, decision_id: str | None, model_version: int, body: str | bytes
    ) -> tuple[int, Future[int]]:
        """Number an event and queue it for the writer; its future resolves (to its number)
        once it is committed, or fails with :class:`~deepbandits.errors.EventLogError`."""
        if self.failure is not None:
            raise EventLogError(f"the event log cannot be written: {self.failure}")
        with self._lock:
            self._seq += 1
            seq = self._seq
        crc = row_crc(seq, kind, t, decision_id, model_version, body)
        item = _Pending((seq, kind, t, decision_id, model_version, body, crc))
        self._queue.put(item)
        return seq, item.future

    @property
    def seq(self) -> int:
        """The number of the last event appended (committed or queued)."""
        return self._seq

    @property
    def committed(self) -> int:
        """The number of the last event committed."""
        return self._committed

    def flush(self, seq: int | None = None, timeout: float = 30.0) -> None:
        """Wait until every event up to ``seq`` (default: all appended) is committed."""
        target = self._seq if seq is None else seq
        with self._done:
            if not self._done.wait_for(
                lambda: self._committed >= target or self.failure is not None, timeout
            ):
                raise EventLogError(f"the event log did not commit event {target} in {timeout} s")
        if self.failure is not None:
            raise EventLogError(f"the event log cannot be written: {self.failure}")

    def _write(self) -> None:
        conn = connect(self.path, self.durability)
        conn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's work (module notes)
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = False
                while len(batch) < MAX_GROUP:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stop = True
                        break
                    batch.append(item)
                self._commit(conn, batch)
                if stop:
                    return
        finally:
            conn.close()

    def _commit(self, conn: sqlite3.Connection, batch: list[_Pending]) -> None:
        try:
            if self.failure is not None:
                raise self.failure
            conn.execute("BEGIN")
            conn.executemany(INSERT, [p.row for p in batch])
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            self.failure = self.failure or exc
            error = EventLogError(f"the event log cannot be written: {exc}")
            for p in batch:
                p.future.set_exception(error)
            with self._done:
                self._done.notify_all()
            LOG.error("writing the event log failed: %s", exc)
            return
        self.n_commits += 1
        with self._done:
            self._committed = max(self._committed, int(batch[-1].row[0]))  # type: ignore[call-overload]
            self._done.notify_all()
        for p in batch:
            p.future.set_result(p.row[0])  # type: ignore[arg-type]

    def _checkpoint(self) -> None:
        """Copy the write-ahead log into the database file now and then, beside the writer."""
        conn = connect(self.path, self.durability)
        try:
            while not self._stop_checkpoints.wait(CHECKPOINT_SECONDS):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # the writer reports what fails to be written
                    LOG.warning("a checkpoint of the event log failed: %s", exc)
        finally:
            conn.close()

    def close(self) -> None:
        """Commit what is queued, stop the writer and the checkpoints, close the file."""
        self._stop_checkpoints.set()
        self._checkpointer.join()
        if self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()
        self._conn.close()
