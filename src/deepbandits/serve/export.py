"""The event log as one table of logged bandit data (``deepbandits export-log``), for off-policy
evaluation.

One row per decision, in the order they were made:

================= =====================================================================
``decision_id``   the decision's id
``time_decided``  when it was made (seconds since the epoch)
``time_rewarded`` when its reward was learned (null: none yet, or it expired)
``model_version`` the network version that made it
``group``         who decided: ``policy`` (the served policy) or ``control`` (the control group
                  of a live experiment, :mod:`deepbandits.serve.control`)
``champion_version`` the champion's version when it was made: 0, then one more after each
                  promotion of a challenger (:mod:`deepbandits.serve.experiment`)
``action``        the arm played (index among the rows of ``contexts``)
``propensity``    the probability the policy had of playing it
``reward``        the reward learned (null if none)
``reward_range``  the reward's range [a, b] given with it (null: the policy's)
``n_arms``        how many arms the request had
``contexts``      every arm's context: a list of K lists of d numbers (JSON text in CSV)
``mask``          the arms available: K booleans, or null for all (JSON text in CSV)
``logging_policy`` what the service knew about the policy that made it: specification,
                  reward range, d and K (:class:`~deepbandits.logs.service.LoggingPolicy`,
                  JSON text; d and K those of the whole table). The folder's policy until
                  a promotion, then the champion of the time: the challenger promoted, as
                  it was added (a former champion promoted back: as it served before);
                  a ``control`` row: the control, its ``source`` ``"control"`` and its
                  ``spec`` as given (``"uniform"``, ``"arm=K"``, a specification or a file)
================= =====================================================================

The policy's reward range is the one it was built with (its specification's ``reward_range``,
or the checkpoint's); ``reward_range`` is a reward's own, when one was given with it.
:func:`read_logging_policy` reads the description from a state folder or an exported file (of
a live experiment's log, the policy it was started with:
:func:`~deepbandits.logs.service.logging_policy_of`).

The log is read through a read-only connection, so a running service may keep writing. Both
layouts of the log give the same table: a decision event is one row, a batch event
(:mod:`deepbandits.serve.batches`) one row per decision it holds. The experiment's own events
(a challenger added or removed, a promotion) are no decisions and have no row; a promotion
counts in the ``champion_version`` and the ``logging_policy`` of the decisions after it.

Only intact rows are read: a row whose checksum does not match is left out, as are the rows the
service set aside (:mod:`deepbandits.serve.log`). The table's ``attrs["damaged_events"]`` lists
the numbers of the events left out, in order (empty for a sound log).
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd

from deepbandits._io import write_atomic
from deepbandits._validation import check_reward_range
from deepbandits.errors import DataError, DeepBanditsError, EventLogError, InputValueError
from deepbandits.logs.bandit import LoggedBandit
from deepbandits.logs.service import (
    CONTROL,
    LOGGING_POLICY,
    LoggingPolicy,
    logging_policy_of,
    read_service_frame,
    service_log,
)
from deepbandits.logs.service import read_logging_policy as read_file_policy
from deepbandits.serve.batches import KIND as BATCH
from deepbandits.serve.batches import batch_ids, read_batch, request_masks
from deepbandits.serve.events import Event, is_control
from deepbandits.serve.logfile import checked, connect, log_format, problem_of, set_aside_in
from deepbandits.serve.store import LOG_FILE, StateFolder
from deepbandits.specs import parse_spec

FORMATS = ("parquet", "csv")
COLUMNS = (
    "decision_id",
    "time_decided",
    "time_rewarded",
    "model_version",
    "group",
    "champion_version",
    "action",
    "propensity",
    "reward",
    "reward_range",
    "n_arms",
    "contexts",
    "mask",
    LOGGING_POLICY,
)
DECIDED = ("decision", BATCH)


def _decided(kind: str, decision_id: str | None, body: str | bytes) -> list[dict[str, Any]]:
    """The decisions of a decision or batch event: id, action, propensity, contexts, mask."""
    if kind != BATCH:
        d = json.loads(body)
        return [
            {
                "decision_id": decision_id,
                "action": d["arm"],
                "propensity": d["propensity"],
                "contexts": d["contexts"],
                "mask": d["mask"],
            }
        ]
    arrays = read_batch(body)[1]  # type: ignore[arg-type]
    masks = [None if m is None else m.tolist() for m in request_masks(arrays)]
    columns = zip(
        arrays["ids"].tolist(),
        arrays["arms"].tolist(),
        arrays["propensity"].tolist(),
        arrays["contexts"].tolist(),
        masks,
        strict=True,
    )
    return [
        {"decision_id": i.decode("ascii"), "action": a, "propensity": p, "contexts": x, "mask": m}
        for i, a, p, x, m in columns
    ]


def _log_path(state: str | Path) -> Path:
    """The log of the state folder ``state``, checked."""
    path = Path(state) / LOG_FILE
    if not path.is_file():
        raise EventLogError(
            f"{state} holds no event log ({LOG_FILE}): give the --state folder of a "
            "deepbandits serve"
        )
    problem = problem_of(path)
    if problem is not None:
        raise EventLogError(
            f"the event log {path} is damaged ({problem}): start deepbandits serve on {state} "
            "once, which copies every event SQLite can still read into a sound log, then export it"
        )
    return path


def _intact(path: Path) -> tuple[list[Event], list[int]]:
    """The intact events of the log at ``path`` in order, and the numbers of those left out
    (damaged, or set aside by the service) in order."""
    with closing(connect(path, read_only=True)) as conn:
        try:
            log_format(conn)
            events, damaged = [], set_aside_in(conn)
            for event, intact in checked(conn):
                if intact:
                    events.append(event)
                else:
                    damaged.append(event.seq)
        except sqlite3.DatabaseError as exc:
            raise EventLogError(f"the event log {path} cannot be read: {exc}") from None
    return events, sorted(damaged)


def logged_ids(state: str | Path) -> tuple[list[str], list[str]]:
    """The ids of the decisions (those of batch events included) and of the rewards in the log
    of the state folder ``state``, each in the order logged (intact events only)."""
    events = _intact(_log_path(state))[0]
    decided: list[str] = []
    for e in events:
        if e.kind == BATCH:
            decided.extend(batch_ids(e.body))  # type: ignore[arg-type]
        elif e.kind == "decision":
            decided.append(str(e.decision_id))
    return decided, [str(e.decision_id) for e in events if e.kind == "reward"]


def _service_info(state: Path) -> dict[str, Any]:
    """``service.json`` of the state folder ``state``."""
    info = StateFolder(state).read_service()
    if info is None:  # pragma: no cover - _log_path found a log, so the file is there
        raise EventLogError(f"{state} is not a deepbandits serve state folder")
    return info


#: A logging policy without the shape of the decisions: spec, name, source, reward range.
Described = tuple[str, str, str, tuple[float, float] | None]


def _folder_policy(state: Path, info: dict[str, Any]) -> Described:
    """The policy the state folder ``state`` was created with (``service.json``; the base
    checkpoint's parameters when it was started from a checkpoint)."""
    from deepbandits.policies import load_policy  # torch: only when a folder is read

    spec = str(info["policy"])
    if info.get("source") == "spec":
        name, params = str(info.get("name") or spec.partition(":")[0]), info.get("params", {})
    else:
        policy = load_policy(state / "base.pt")
        name = policy.registry_name() or type(policy).__name__
        params = policy.get_params(deep=False)
    bounds = params.get("reward_range")
    source = str(info.get("source", "spec"))
    return spec, name, source, None if bounds is None else check_reward_range(bounds)


def _spec_policy(spec: str, source: str = "spec") -> Described:
    """The policy of a specification as the service was given it: a challenger's, or the
    control's (``source="control"``: ``uniform``, ``arm=K``, a specification or a file)."""
    try:
        if source == CONTROL and (Path(spec).suffix == ".pt" or os.sep in spec):
            name, params = spec, {}  # a saved policy's file, which may be gone
        else:
            name, params = parse_spec(spec)
        bounds = params.get("reward_range")
        return spec, name, source, None if bounds is None else check_reward_range(bounds)
    except DeepBanditsError:  # pragma: no cover - the service checked it before logging it
        return spec, spec, source, None


def _shape(rows: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """d and K of the decisions ``rows``: the arm contexts' dimension and the most arms."""
    if not rows:
        return None, None
    return len(rows[0]["contexts"][0]), max(len(row["contexts"]) for row in rows)


def _logging_policy(state: Path, rows: list[dict[str, Any]]) -> LoggingPolicy:
    """What the state folder ``state`` says about the policy it was created with, with d and K
    of the decisions ``rows``."""
    described = _folder_policy(state, _service_info(state))
    return LoggingPolicy(*described, *_shape(rows))


class _Champions:
    """Who decided each row of a log read in order: the control, or the champion of the time
    (the folder's policy, then the challenger of each promotion), by :meth:`see`."""

    def __init__(self, state: Path) -> None:
        info = _service_info(state)
        self.policies: dict[Described, int] = {}
        self.champion = self._index(_folder_policy(state, info))
        self.champion_name = str(info["policy"])  # Experiment's name of the folder's policy
        self.champion_version = 0
        control = (info.get("experiment") or {}).get("control")
        self.control = None if control is None else self._index(_spec_policy(control, CONTROL))
        #: The policy of each challenger's name, as the log registered it.
        self.named: dict[str, int] = {}

    def _index(self, described: Described) -> int:
        return self.policies.setdefault(described, len(self.policies))

    def see(self, event: Event) -> None:
        """Follow a challenger or promote event (others change nothing)."""
        if event.kind == "challenger":
            v = event.values()
            if v["action"] == "add":
                self.named[v["name"]] = self._index(_spec_policy(str(v["spec"])))
        elif event.kind == "promote":
            v = event.values()
            self.champion_version = int(v["champion_version"])
            former = self.champion  # a challenger now, under the name it served under
            name = str(v["name"])
            self.champion = self.named.get(name)
            if self.champion is None:  # its add event is damaged: its name is its spec
                self.champion = self._index(_spec_policy(name))
            self.named[self.champion_name] = former
            self.champion_name = name

    def of(self, event: Event) -> tuple[str, int]:
        """The group of decision or batch ``event`` and the index of its policy."""
        if not is_control(event):
            return "policy", self.champion
        return "control", self.champion if self.control is None else self.control

    def descriptions(self, rows: list[dict[str, Any]]) -> list[str]:
        """The ``logging_policy`` cell of each policy, by index, with d and K of ``rows``."""
        shape = _shape(rows)
        return [LoggingPolicy(*described, *shape).to_json() for described in self.policies]


def _frame(path: Path) -> pd.DataFrame:
    """The table of a state folder (:func:`log_table`) or of a file it exported."""
    if not path.is_dir():
        return read_service_frame(path)
    try:
        return log_table(path)
    except DeepBanditsError as exc:
        raise DataError(str(exc)) from None


def _policy_of(frame: pd.DataFrame, path: Path) -> LoggingPolicy | None:
    """The logging policy of the table ``frame`` read from ``path``; a state folder without a
    decision says what it serves."""
    policy = logging_policy_of(frame, path)
    if policy is None and path.is_dir():
        return _logging_policy(path, [])
    return policy


def read_logging_policy(path: str | os.PathLike[str]) -> LoggingPolicy | None:
    """What the service knew about the policy that logged ``path``: a state folder, or a file
    it exported (:func:`deepbandits.logs.service.read_logging_policy`; None for a file that
    does not say)."""
    path = Path(path)
    if not path.is_dir():
        return read_file_policy(path)
    return _policy_of(_frame(path), path)


def read_log_and_policy(
    path: str | os.PathLike[str],
) -> tuple[LoggedBandit, LoggingPolicy | None]:
    """:func:`read_log` and :func:`read_logging_policy` of ``path``, from one reading."""
    path = Path(path)
    frame = _frame(path)
    return service_log(frame, path), _policy_of(frame, path)


def log_table(state: str | Path) -> pd.DataFrame:
    """The decisions of the state folder ``state`` with their rewards (module notes);
    ``attrs["damaged_events"]``: the events left out as damaged."""
    events, damaged = _intact(_log_path(state))
    rewards = {e.decision_id: (e.time, e.values()) for e in events if e.kind == "reward"}
    champions = _Champions(Path(state))
    rows: list[dict[str, Any]] = []
    policies: list[int] = []  # each row's logging policy, by index
    for e in events:
        if e.kind not in DECIDED:
            champions.see(e)
            continue
        group, policy = champions.of(e)
        for row in _decided(e.kind, e.decision_id, e.body):
            t_reward, r = rewards.get(row["decision_id"], (None, None))
            rows.append(
                {
                    **row,
                    "time_decided": e.time,
                    "time_rewarded": t_reward,
                    "model_version": e.model_version,
                    "group": group,
                    "champion_version": champions.champion_version,
                    "reward": None if r is None else r["reward"],
                    "reward_range": None if r is None else r["reward_range"],
                    "n_arms": len(row["contexts"]),
                }
            )
            policies.append(policy)
    described = champions.descriptions(rows)
    for row, policy in zip(rows, policies, strict=True):
        row[LOGGING_POLICY] = described[policy]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["reward"] = table["reward"].astype("float64")
    table["time_rewarded"] = table["time_rewarded"].astype("float64")
    table.attrs["damaged_events"] = damaged
    return table


def read_log(path: str | os.PathLike[str]) -> LoggedBandit:
    """The service log at ``path`` as a :class:`~deepbandits.logs.bandit.LoggedBandit`: a state
    folder (its decisions with their rewards, :func:`log_table`) or a file it exported
    (:func:`deepbandits.logs.read_service_log`)."""
    path = Path(path)
    return service_log(_frame(path), path)


def export_log(state: str | Path, out: str | Path, fmt: str = "parquet") -> pd.DataFrame:
    """Write :func:`log_table` of ``state`` to ``out`` as Parquet or CSV (atomically); returns
    the table (its ``attrs["damaged_events"]``: the events left out as damaged)."""
    if fmt not in FORMATS:
        raise InputValueError(f"format must be one of {', '.join(FORMATS)}, but {fmt!r} is given")
    table = log_table(state)
    if fmt == "parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        write_atomic(out, buffer.getvalue())
    else:
        text = table.copy()
        for column in ("contexts", "mask", "reward_range"):
            text[column] = [None if v is None else json.dumps(v) for v in text[column]]
        write_atomic(out, text.to_csv(index=False))
    return table
