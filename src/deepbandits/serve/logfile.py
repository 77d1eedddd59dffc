"""The file of a decision service's event log: its layout, its checks, and the salvage of a
damaged one (:mod:`deepbandits.serve.log` appends to it).

The file is plain SQLite (any ``sqlite3`` reads it; the table ``events`` is described in
:mod:`deepbandits.serve.events`). Its ``meta`` table records the layout's version, ``format``:
1, one JSON row per decision; 2 (:data:`FORMAT`), which adds the binary batch event
(:mod:`deepbandits.serve.batches`). A format-1 log is read as it is and marked format 2 once
opened for writing (its rows stay valid); a log of a newer format is refused.

The ``meta`` table also records the state folder the log belongs to (``folder_id``, the id in
its ``service.json``) and the policy that folder serves (``policy``): opening the log for an
:class:`Owner` refuses a log of another folder (:mod:`deepbandits.serve.recovery`).

Opening checks the file twice. SQLite's ``PRAGMA quick_check`` finds a damaged file: it is moved
aside and every row SQLite can still read, before and after the damaged pages, is copied into a
new file (:func:`salvage`). Then every row's CRC-32 is checked, in one pass over the table (0.3
to 0.5 s per 100,000 events of four arms × six features): a row whose checksum does not match
is set aside, moved with the reason and the time into the table ``damaged_events`` of the same
file, so that nothing is deleted, the events after it still replay, and the next opening does
not report it as new (it says it is there).
:attr:`deepbandits.serve.log.EventLog.notes` names the events set aside, by number.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from deepbandits.errors import EventLogError, InputValueError
from deepbandits.serve.events import Event

DURABILITY = {"normal": "NORMAL", "full": "FULL"}
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
CREATE TABLE IF NOT EXISTS damaged_events (
    seq INTEGER NOT NULL,
    kind,
    time,
    decision_id,
    model_version,
    body,
    crc,
    reason TEXT NOT NULL,
    set_aside REAL NOT NULL
);
"""
INSERT = (
    "INSERT INTO events (seq, kind, time, decision_id, model_version, body, crc) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
SELECT = "SELECT seq, kind, time, decision_id, model_version, body, crc FROM events"
# the damaged row's columns as they are (no type: nothing is converted), with why and when
SET_ASIDE = (
    "INSERT INTO damaged_events SELECT seq, kind, time, decision_id, model_version, body, crc, "
    "?, ? FROM events WHERE seq = ?"
)
#: Why a row whose CRC-32 does not match is set aside.
MISMATCH = "its checksum does not match"
#: Most event numbers a message lists.
LISTED = 20


class Owner(NamedTuple):
    """The state folder a log belongs to (module notes).

    Attributes
    ----------
    folder_id : str
        The folder's id (``service.json``).
    policy : str
        What the folder serves (its policy spec, or its source checkpoint and checksum).
    adopting : bool
        A log without an id is the folder's own: the folder was made by an older version and
        takes its first id now (or the log was salvaged without its ``meta`` table).
    """

    folder_id: str
    policy: str
    adopting: bool = False


def numbers(seqs: Iterable[int]) -> str:
    """Event numbers for a message: the first :data:`LISTED`, then "..."."""
    seqs = list(seqs)
    listed = ", ".join(str(s) for s in seqs[:LISTED])
    return listed + (", ..." if len(seqs) > LISTED else "")


def _text(raw: bytes) -> str:
    """A text column as read: a damaged one that is not UTF-8 still reads (its CRC fails)."""
    return raw.decode("utf-8", "surrogateescape")


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
    conn.text_factory = _text
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


def checked(conn: sqlite3.Connection, after: int = 0) -> Iterator[tuple[Event, bool]]:
    """The rows of ``events`` after ``after`` in order, each with whether its CRC-32 matches
    (``conn`` from :func:`connect`)."""
    for seq, kind, t, decision_id, version, body, crc in conn.execute(
        f"{SELECT} WHERE seq > ? ORDER BY seq", (after,)
    ):
        event = Event(seq, kind, t, decision_id, version, body)
        yield event, _intact(event, crc)


def _rows(conn: sqlite3.Connection, after: int) -> Iterator[Event]:
    """The rows after ``after`` in order; a row whose CRC does not match raises."""
    for event, intact in checked(conn, after):
        if not intact:
            raise EventLogError(f"event {event.seq} of the log is damaged ({MISMATCH})")
        yield event


def set_aside_in(conn: sqlite3.Connection) -> list[int]:
    """The numbers of the events set aside in the log open on ``conn`` (none for a log
    without the table ``damaged_events``)."""
    try:
        return [s for (s,) in conn.execute("SELECT seq FROM damaged_events ORDER BY seq")]
    except sqlite3.OperationalError:  # a log written before the table was
        return []


def _readable(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], list[int]]:
    """The rows of ``events`` SQLite can still read, in order, and the numbers it cannot read:
    past a damaged page, each number up to the largest is looked up on its own."""
    found: list[tuple[Any, ...]] = []
    lost: list[int] = []
    last, top = 0, None
    while True:
        try:
            for row in conn.execute(f"{SELECT} WHERE seq > ? ORDER BY seq", (last,)):
                found.append(row)
                last = row[0]
            return found, lost
        except sqlite3.DatabaseError:
            pass
        if top is None:
            try:
                top = int(conn.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0)
            except sqlite3.DatabaseError:
                top = last  # where the rows end cannot be read either
        while True:
            last += 1
            if last > top:
                return found, lost
            try:
                row = conn.execute(f"{SELECT} WHERE seq = ?", (last,)).fetchone()
            except sqlite3.DatabaseError:
                lost.append(last)
                continue
            if row is not None:
                found.append(row)
                break


class Salvaged(NamedTuple):
    """What :func:`salvage` kept of a damaged log.

    Attributes
    ----------
    kept : int
        Events copied into the new log.
    damaged : list of int
        Events SQLite read but whose checksum does not match (set aside in the new log).
    lost : list of int
        Event numbers SQLite could not read.
    aside : path
        Where the damaged file went.
    meta : bool
        Whether its ``meta`` table was read (else which folder it belongs to is unknown).
    """

    kept: int
    damaged: list[int]
    lost: list[int]
    aside: Path
    meta: bool


def salvage(path: Path, reason: str) -> Salvaged:
    """Move the damaged log ``path`` aside and copy every row SQLite can still read of it into
    a new log at ``path``: the intact ones as events, the others (and the rows already set
    aside) into ``damaged_events`` (module notes)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            shutil.move(source, Path(f"{aside}{suffix}"))
    kept: list[tuple[Any, ...]] = []
    damaged: list[tuple[Any, ...]] = []
    now = time.time()
    old = connect(aside, read_only=True)
    try:
        meta = _all(old, "SELECT key, value FROM meta")
        found, lost = _readable(old)
        earlier = _all(old, "SELECT * FROM damaged_events")
    finally:
        old.close()
    for row in found:
        if _intact(Event(*row[:6]), row[6]):
            kept.append(row)
        else:
            damaged.append((*row, MISMATCH, now))
    new = connect(path)
    try:
        new.executescript(SCHEMA)
        new.execute("BEGIN")
        new.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta)
        new.executemany(INSERT, kept)
        new.executemany(
            "INSERT INTO damaged_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", earlier + damaged
        )
        new.execute("COMMIT")
    finally:
        new.close()
    LOG.warning(
        "the event log %s was damaged (%s): its %d readable events were kept, the damaged file "
        "was moved to %s",
        path,
        reason,
        len(kept),
        aside,
    )
    return Salvaged(len(kept), [int(row[0]) for row in damaged], lost, aside, bool(meta))


def _all(conn: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on a damaged log; none when they cannot be read (or the table is
    missing: a log written before it was)."""
    try:
        return list(conn.execute(sql))
    except sqlite3.DatabaseError as exc:
        LOG.warning("the damaged log cannot be read (%s): %s", sql, exc)
        return []


def _intact(event: Event, crc: object) -> bool:
    """Whether ``crc`` is the CRC-32 of ``event`` (False for a column damaged into another
    type or into text that is not UTF-8)."""
    try:
        return event.crc() == crc
    except (AttributeError, ValueError):
        return False
