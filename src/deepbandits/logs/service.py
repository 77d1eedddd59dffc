"""The decision service's log as a :class:`~deepbandits.logs.bandit.LoggedBandit`.

``deepbandits export-log STATE --format parquet|csv`` (:mod:`deepbandits.serve.export`) writes
one row per decision with the columns ``action`` (int; ``arm`` is read too), ``propensity``
(float in (0, 1]), ``reward`` (float, null while pending), ``contexts`` (the request's arm
contexts, a list of K lists of d floats; JSON text in CSV) and optionally ``mask`` (K booleans,
or null for all), ``position``, and ``time_decided`` (the log's ``times``, for splits by
time); the service's other columns (``decision_id``, ``time_rewarded``, ``model_version``,
``reward_range``, ``n_arms``, ``logging_policy``) are not needed. Decisions without a reward
are left out (a warning says how many); requests with fewer arms than the largest are padded
with masked zero rows. The service reads its own state folder into the same table
(:func:`deepbandits.serve.export.read_log`), so this module never reads the service's files.

The column ``logging_policy`` holds, on every row, what the service knew about the policy that
logged it (:class:`LoggingPolicy`, as JSON text): its specification, its reward range [a, b],
the dimension of the arm contexts and the largest number of arms of a request (the control
group of a live experiment and each champion of its time name their own).
:func:`read_logging_policy` reads it back (None for a file without it);
``deepbandits ope`` builds the evaluated policy with the logging policy's reward range where the
user gives none.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits._validation import check_reward_range
from deepbandits.errors import (
    DataError,
    DataNotFoundError,
    DeepBanditsError,
    InputTypeError,
    InputValueError,
)
from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.logs.columns import numbers

SERVICE_COLUMNS = ("action", "propensity", "reward", "contexts")
#: The column of what the service knew about its policy (:class:`LoggingPolicy`).
LOGGING_POLICY = "logging_policy"
#: The ``source`` of the control group's policy (:class:`LoggingPolicy`).
CONTROL = "control"


@dataclass(frozen=True)
class LoggingPolicy:
    """What a decision service knew about the policy that logged its decisions.

    Attributes
    ----------
    spec : str
        The policy's specification as the service was started with it
        (``"sigma2-linucb:reward_range=[0,1]"``), or the registry name of the policy of a
        checkpoint it was started from.
    name : str
        The policy's registry name (``"sigma2-linucb"``).
    source : {"spec", "checkpoint", "control"}
        Whether the service built the policy from ``spec`` or loaded it from a checkpoint;
        ``"control"``: the control group of a live experiment, ``spec`` as it was given
        (``"uniform"``, ``"arm=K"``, a specification or a file).
    reward_range : (a, b) or None
        The policy's reward range (None: it declares none).
    n_features : int or None
        The dimension d of the arm contexts it was given (None: no decision logged).
    n_arms : int or None
        The largest number of arms of a request it decided (None: no decision logged).
    """

    spec: str
    name: str
    source: str
    reward_range: tuple[float, float] | None
    n_features: int | None
    n_arms: int | None

    def to_json(self) -> str:
        """The description as one line of JSON (the ``logging_policy`` column)."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str) -> LoggingPolicy:
        """The description written by :meth:`to_json`; ``where`` is named in the
        :class:`~deepbandits.errors.DataError` of a malformed one."""
        try:
            d = json.loads(text)
            rr = d["reward_range"]
            return cls(
                spec=str(d["spec"]),
                name=str(d["name"]),
                source=str(d["source"]),
                reward_range=None if rr is None else check_reward_range(rr),
                n_features=None if d["n_features"] is None else int(d["n_features"]),
                n_arms=None if d["n_arms"] is None else int(d["n_arms"]),
            )
        except (ValueError, TypeError, KeyError, DeepBanditsError) as exc:
            raise DataError(
                f"{where}: column {LOGGING_POLICY!r} is not a description of the logging policy "
                f"(JSON with spec, name, source, reward_range, n_features, n_arms): {exc}"
            ) from None

    def describe(self) -> str:
        """The policy in one line: its specification, reward range, d and K."""
        parts = (
            [] if self.reward_range is None else [f"reward range {format_range(self.reward_range)}"]
        )
        if self.n_features is not None:
            parts.append(f"{self.n_features} context features")
        if self.n_arms is not None:
            parts.append(f"up to {self.n_arms} arms")
        source = {"checkpoint": " (from a checkpoint)", CONTROL: " (the control group)"}.get(
            self.source, ""
        )
        return f"{self.spec}{source}" + (f" ({', '.join(parts)})" if parts else "")


def format_range(bounds: tuple[float, float]) -> str:
    """``(0.0, 1.0)`` → ``"[0, 1]"``."""
    return f"[{bounds[0]:g}, {bounds[1]:g}]"


def logging_policy_of(frame: pd.DataFrame, path: Path) -> LoggingPolicy | None:
    """The :class:`LoggingPolicy` of a service log's table (its ``logging_policy`` column), or
    None when the table does not say (no such column, or no row with a value).

    The rows of a live experiment name the control (``source="control"``) and each champion of
    its time: the table is described by the first policy other than the control that decided a
    row (the one the service was started with, unless a promotion came before any decision).
    A table whose rows disagree on d or K (logs of several services put together) is refused."""
    if LOGGING_POLICY not in frame.columns:
        return None
    given = dict.fromkeys(v for v in frame[LOGGING_POLICY] if isinstance(v, str) and v)
    if not given:
        return None
    policies = [LoggingPolicy.from_json(v, str(path)) for v in given]
    if len({(p.n_features, p.n_arms) for p in policies}) > 1:
        raise DataError(
            f"{path}: its rows were logged by {len(given)} different policies (column "
            f"{LOGGING_POLICY!r}) of different shapes; evaluate the log of one service at a time"
        )
    served = [p for p in policies if p.source != CONTROL]
    return (served or policies)[0]


def read_logging_policy(path: str | os.PathLike[str]) -> LoggingPolicy | None:
    """What the service knew about the policy that logged the exported file ``path`` (module
    notes), or None when the file does not say; only its ``logging_policy`` column is read."""
    path = Path(path)
    return logging_policy_of(read_service_frame(path, columns=[LOGGING_POLICY]), path)


def _cell(value: Any, path: Path, row: int, column: str) -> Any:
    """A list cell of the service log (Parquet: nested arrays; CSV: JSON text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            shown = value if len(value) <= 60 else value[:57] + "..."
            raise DataError(
                f"{path}, row {row}, column {column!r}: expected a JSON list, got {shown!r}"
            ) from None
    return value


def _request(value: Any, path: Path, row: int) -> NDArray[np.float64]:
    where = f"{path}, row {row}, column 'contexts'"
    rows = _cell(value, path, row, "contexts")
    try:
        matrix = np.array([np.asarray(r, dtype=np.float64) for r in rows])
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: expected a list of K lists of d numbers ({exc})") from None
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise DataError(f"{where}: expected K >= 1 lists of d numbers")
    return matrix


def read_service_frame(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """The table of an exported service log (Parquet or CSV); with ``columns``, only those of
    them that it has."""
    if path.is_dir():
        raise DataError(
            f"{path} is a folder: a service's state folder is read by the service, "
            "deepbandits.serve.export.read_log(path) (or export it first: deepbandits "
            "export-log STATE)"
        )
    if not path.is_file():
        raise DataNotFoundError(f"no log file at {path}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            if columns is not None:
                import pyarrow.parquet as pq

                present = set(pq.read_schema(path).names)
                columns = [c for c in columns if c in present]
            return pd.read_parquet(path, columns=columns)
        wanted = None if columns is None else columns.__contains__
        return pd.read_csv(path, usecols=wanted)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} cannot be read as {path.suffix[1:] or 'CSV'}: {exc}") from None


def read_service_log(path: str | os.PathLike[str]) -> LoggedBandit:
    """The decision service's log exported as Parquet or CSV (module notes)."""
    path = Path(path)
    return service_log(read_service_frame(path), path)


def service_log(frame: pd.DataFrame, path: Path) -> LoggedBandit:
    """The :class:`LoggedBandit` of a service log's table ``frame`` (module notes), read from
    ``path`` (named in messages)."""
    if "action" not in frame.columns and "arm" in frame.columns:
        frame = frame.rename(columns={"arm": "action"})
    missing = [c for c in SERVICE_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} lacks the column(s) {', '.join(missing)}; a service log has "
            f"{', '.join(SERVICE_COLUMNS)} (and optionally mask, position, decision_id, "
            "time_decided, time_rewarded, model_version)"
        )
    pending = frame["reward"].isna()
    if pending.any():
        warnings.warn(
            f"{path}: {int(pending.sum())} of {len(frame)} decisions have no reward yet "
            "(pending); they are left out",
            stacklevel=4,
        )
        frame = frame.loc[~pending].reset_index(drop=True)
    if frame.empty:
        raise DataError(f"{path} has no decision with a reward")
    requests = [_request(v, path, i) for i, v in enumerate(frame["contexts"])]
    dims = {m.shape[1] for m in requests}
    if len(dims) > 1:
        raise DataError(f"{path}: contexts have different dimensions {sorted(dims)}")
    K, d = max(m.shape[0] for m in requests), dims.pop()
    contexts = np.zeros((len(requests), K, d))
    masks = np.zeros((len(requests), K), dtype=bool)
    for i, m in enumerate(requests):
        contexts[i, : len(m)] = m
        given = _cell(frame["mask"].iloc[i], path, i, "mask") if "mask" in frame.columns else None
        if given is None or (isinstance(given, float) and np.isnan(given)):
            masks[i, : len(m)] = True
        elif np.shape(given) != (len(m),):
            raise DataError(
                f"{path}, row {i}, column 'mask': expected {len(m)} booleans, got {given!r}"
            )
        else:
            masks[i, : len(m)] = np.asarray(given, dtype=bool)
    positions = frame["position"].to_numpy() if "position" in frame.columns else None
    actions, rewards = numbers(frame, "action", path), numbers(frame, "reward", path)
    propensities = numbers(frame, "propensity", path)
    try:
        return make_log(
            contexts,
            actions,
            rewards,
            propensities,
            n_actions=K,
            positions=positions,
            masks=None if masks.all() else masks,
            times=numbers(frame, "time_decided", path) if "time_decided" in frame else None,
            name=str(path),
        )
    except (InputValueError, InputTypeError) as exc:
        raise DataError(f"{path}: {exc}") from None
