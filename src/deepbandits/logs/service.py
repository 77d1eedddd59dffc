"""The decision service's log as a :class:`~deepbandits.logs.bandit.LoggedBandit`.

``deepbandits export-log STATE --format parquet|csv`` (:mod:`deepbandits.serve.export`) writes
one row per decision with the columns ``action`` (int; ``arm`` is read too), ``propensity``
(float in (0, 1]), ``reward`` (float, null while pending), ``contexts`` (the request's arm
contexts, a list of K lists of d floats; JSON text in CSV) and optionally ``mask`` (K booleans,
or null for all), ``position``, and ``time_decided`` (the log's ``times``, for splits by
time); the service's other columns (``decision_id``, ``time_rewarded``, ``model_version``,
``reward_range``, ``n_arms``) are not needed. Decisions without a reward are left out (a
warning says how many); requests with fewer arms than the largest are padded with masked zero
rows. The service reads its own state folder into the same table
(:func:`deepbandits.serve.export.read_log`), so this module never reads the service's files.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.errors import DataError, DataNotFoundError, InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.logs.columns import numbers

SERVICE_COLUMNS = ("action", "propensity", "reward", "contexts")


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


def read_service_frame(path: Path) -> pd.DataFrame:
    """The table of an exported service log (Parquet or CSV)."""
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
            return pd.read_parquet(path)
        return pd.read_csv(path)
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
