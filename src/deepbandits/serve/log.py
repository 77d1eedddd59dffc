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

The file itself (its layout, the checks when it is opened, the salvage of a damaged one) is
:mod:`deepbandits.serve.logfile`'s.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

from deepbandits.errors import EventLogError
from deepbandits.serve.events import Event, row_crc
from deepbandits.serve.logfile import (
    FORMAT,
    INSERT,
    MISMATCH,
    SCHEMA,
    SET_ASIDE,
    Owner,
    _rows,
    checked,
    connect,
    log_format,
    numbers,
    problem_of,
    salvage,
    set_aside_in,
)

#: Most events one transaction writes.
MAX_GROUP = 4096
#: Seconds between two checkpoints of the write-ahead log (module notes).
CHECKPOINT_SECONDS = 0.5
LOG = logging.getLogger("deepbandits.serve")


class _Pending:
    __slots__ = ("future", "row")

    def __init__(self, row: tuple[object, ...]) -> None:
        self.row = row
        self.future: Future[int] = Future()


class EventLog:
    """The log at ``path`` (created if missing; checked, salvaged and its damaged rows set
    aside: module notes).

    Parameters
    ----------
    path : path
        The SQLite file (``STATE/events.sqlite``).
    durability : {"normal", "full"}
        SQLite's ``synchronous`` (module notes).
    owner : Owner, optional
        The state folder the log must belong to: a log of another folder raises
        :class:`~deepbandits.errors.EventLogError`, an empty one (or one without an id, for an
        adopting folder) is marked as the folder's. None: any log.

    Attributes
    ----------
    notes : list of str
        What opening found and repaired (empty for a sound log).
    """

    def __init__(
        self, path: str | Path, durability: str = "normal", owner: Owner | None = None
    ) -> None:
        self.path = Path(path)
        self.durability = durability
        self.notes: list[str] = []
        found: list[int] = []
        unknown = False  # salvaged without its meta table: taken as the owner's
        if self.path.exists():
            problem = problem_of(self.path)
            if problem is not None:
                salvaged = salvage(self.path, problem)
                found, unknown = salvaged.damaged, not salvaged.meta
                lost = ""
                if salvaged.lost:
                    lost = f"; events {numbers(salvaged.lost)} could not be read"
                self.notes.append(
                    f"the event log was damaged ({problem}); its {salvaged.kept} readable events "
                    f"were kept{lost}; the damaged file is kept as {salvaged.aside.name}"
                )
                LOG.warning(self.notes[-1])
        self._conn = connect(self.path, durability)
        try:
            self._conn.executescript(SCHEMA)
            self._conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('format', ?), ('created', ?)",
                (str(FORMAT), repr(time.time())),
            )
            log_format(self._conn)
            if owner is not None:
                self._bind(owner._replace(adopting=True) if unknown else owner)
        except EventLogError:
            self._conn.close()
            raise
        self._conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT),))
        self._set_aside_damaged(found)
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

    def _bind(self, owner: Owner) -> None:
        """Refuse a log of another state folder; mark an empty one (or, for an adopting
        folder, one without an id) as ``owner``'s."""
        meta = dict(
            self._conn.execute("SELECT key, value FROM meta WHERE key IN ('folder_id', 'policy')")
        )
        theirs = meta.get("folder_id")
        if (theirs, meta.get("policy")) == (owner.folder_id, owner.policy):
            return
        empty = not self.last_seq()
        if theirs is not None and not empty:
            raise EventLogError(
                f"{self.path} belongs to another state folder (id {theirs}, policy "
                f"{meta.get('policy')!r}), not this one (id {owner.folder_id}, policy "
                f"{owner.policy!r}): put this folder's own {self.path.name} back, or serve that "
                "log from its own folder"
            )
        if theirs is None and not empty and not owner.adopting:
            raise EventLogError(
                f"{self.path} holds the events of a state folder without an id (made by an older "
                f"version of deepbandits), not of this one (id {owner.folder_id}): put this "
                f"folder's own {self.path.name} back, or serve that log from its own folder"
            )
        self._conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('folder_id', ?), ('policy', ?)",
            (owner.folder_id, owner.policy),
        )

    def _set_aside_damaged(self, found: list[int]) -> None:
        """Check every row's CRC-32 and set aside those that do not match; note them, and those
        set aside before (``found``: just now, by :func:`salvage`)."""
        just_now = set(found)
        earlier = [s for s in set_aside_in(self._conn) if s not in just_now]
        damaged = [event.seq for event, intact in checked(self._conn) if not intact]
        self.set_aside([(seq, MISMATCH) for seq in damaged])
        found = sorted([*found, *damaged])
        if earlier:
            self.notes.append(
                f"{len(earlier)} event{'s' * (len(earlier) > 1)} of the log set aside at an "
                f"earlier start (table damaged_events of {self.path.name}): {numbers(earlier)}"
            )
            LOG.warning(self.notes[-1])
        if found:
            self.notes.append(
                f"{len(found)} damaged event{'s' * (len(found) > 1)} of the log found at this "
                f"start ({MISMATCH}) and set aside in the table damaged_events of "
                f"{self.path.name}: {numbers(found)}"
            )
            LOG.warning(self.notes[-1])

    # ------------------------------------------------------------------ reading
    def reader(self) -> sqlite3.Connection:
        """A new read-only connection (readers never block the writer in WAL mode)."""
        return connect(self.path, read_only=True)

    def last_seq(self) -> int:
        """The number of the last event on disk, set aside or not (0 for none)."""
        row = self._conn.execute(
            "SELECT MAX(seq) FROM (SELECT MAX(seq) AS seq FROM events "
            "UNION ALL SELECT MAX(seq) FROM damaged_events)"
        ).fetchone()
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

    def damaged(self) -> list[Event]:
        """The events set aside, in order, as they were found (any column may be damaged)."""
        sql = "SELECT seq, kind, time, decision_id, model_version, body FROM damaged_events"
        return [Event(*row) for row in self._conn.execute(f"{sql} ORDER BY seq")]

    def set_aside(self, rows: list[tuple[int, str]]) -> None:
        """Move the events ``rows`` (number, reason) into the table ``damaged_events``, with
        the reason and the time, in one transaction."""
        if not rows:
            return
        now = time.time()
        conn = self._conn
        conn.execute("BEGIN")
        try:
            conn.executemany(SET_ASIDE, [(reason, now, seq) for seq, reason in rows])
            conn.executemany("DELETE FROM events WHERE seq = ?", [(seq,) for seq, _ in rows])
            conn.execute("COMMIT")
        except BaseException:
            conn.rollback()
            raise

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
