"""Logged bandit data as :class:`~deepbandits.ope.log.LoggedBandit` tables: the Open Bandit
Dataset and the decision service's exported log.

**Open Bandit Dataset** (Saito, Aihara, Matsutani & Narita 2021, arXiv:2008.07146): ZOZOTOWN's
three-slot fashion recommendation widget logged by a uniform-random policy (``random``) and by
Bernoulli Thompson sampling (``bts``), campaigns ``all`` (80 items), ``men`` (34), ``women``
(46). The folder ``<data dir>/obd/<behavior>/<campaign>/`` holds ``<campaign>.csv`` and
``item_context.csv``, the layout Open Bandit Pipeline ships (the 10,000-row sample is in the
``obp`` wheel and in github.com/st-tech/zr-obp, folder ``obd/``). The data directory is the
``data_dir`` argument, else ``$DEEPBANDITS_DATA``, else ``~/.cache/deepbandits/data``
(:func:`~deepbandits.datasets.location.data_home`). A round's context is the user: the four
hashed user features one-hot (``user_features="onehot"``) or as integer codes (``"codes"``,
for an embedding), followed by the user-item affinities; the items' features (item_feature_0,
then item_feature_1..3 one-hot, encoded per file since the two logs hash them differently) are
the action features; positions 1..3 become 0..2.

**The decision service's log** (``deepbandits export-log STATE --format parquet|csv``,
:mod:`deepbandits.serve.export`, or the state folder ``STATE`` itself, read the same way from
either layout of its log): one row per decision with the columns ``action`` (int; ``arm`` is
read too), ``propensity`` (float in (0, 1]), ``reward`` (float, null while pending),
``contexts`` (the request's arm contexts, a list of K lists of d floats; JSON text in CSV) and
optionally ``mask`` (K booleans, or null for all), ``position``; the service's other columns
(``decision_id``, ``time_decided``, ``time_rewarded``, ``model_version``, ``reward_range``,
``n_arms``) are not needed. Decisions without a reward are left out (a warning says how many);
requests with fewer arms than the largest are padded with masked zero rows.
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

from deepbandits._validation import check_choice
from deepbandits.datasets.location import ENV_VAR, data_home, data_home_origin
from deepbandits.errors import (
    DataError,
    DataNotFoundError,
    DeepBanditsError,
    InputTypeError,
    InputValueError,
)
from deepbandits.ope.log import LoggedBandit, make_log

OBD_BEHAVIORS = ("random", "bts")
OBD_CAMPAIGNS = ("all", "men", "women")
USER_FEATURES = ("onehot", "codes")
SERVICE_COLUMNS = ("action", "propensity", "reward", "contexts")
_OBD_COLUMNS = ("item_id", "position", "click", "propensity_score")


def obd_folder(behavior: str, campaign: str, data_dir: str | os.PathLike[str] | None) -> Path:
    """``<data dir>/obd/<behavior>/<campaign>``, with both files present; a
    :class:`~deepbandits.errors.DataNotFoundError` saying where it looked and how to get them
    otherwise."""
    folder = data_home(data_dir) / "obd" / behavior / campaign
    missing = [f for f in (f"{campaign}.csv", "item_context.csv") if not (folder / f).is_file()]
    if missing:
        raise DataNotFoundError(
            f"Open Bandit Dataset files not found: {', '.join(missing)} missing from {folder} "
            f"(data directory {data_home(data_dir)}, {data_home_origin(data_dir)}). Copy the "
            "'obd' folder of Open Bandit Pipeline (github.com/st-tech/zr-obp, or "
            "obp/dataset/obd inside the obp wheel) into the data directory, or point "
            f"data_dir=... or {ENV_VAR} at a folder holding 'obd/{behavior}/{campaign}/'"
        )
    return folder


def _read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, index_col=0)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path} cannot be read as CSV: {exc}") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{path} lacks the column(s) {', '.join(missing)}")
    if frame.empty:
        raise DataError(f"{path} has a header but no rows")
    if frame[list(required)].isna().any().any():
        raise DataError(f"{path} has missing values in {', '.join(required)}")
    for column in required:
        numbers(frame, column, path)
    return frame


def numbers(frame: pd.DataFrame, column: str, path: Path) -> NDArray[np.float64]:
    """The column ``column`` of a table read from ``path`` as floats; a
    :class:`~deepbandits.errors.DataError` naming the file, the row, the column and the first
    value that is not a number otherwise."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}, row {row}, column {column!r}: expected a number, got "
            f"{frame[column].iloc[row]!r}"
        )
    return values.to_numpy(np.float64)


def _one_hot(frame: pd.DataFrame, columns: list[str]) -> NDArray[np.float64]:
    if not columns:
        return np.zeros((len(frame), 0))
    return pd.get_dummies(frame[columns].astype(str), dtype=np.float64).to_numpy()


def load_obd(
    behavior: str = "random",
    campaign: str = "all",
    *,
    data_dir: str | os.PathLike[str] | None = None,
    user_features: str = "onehot",
    affinity: bool = True,
) -> LoggedBandit:
    """The Open Bandit Dataset log of ``behavior`` on ``campaign`` (module notes)."""
    behavior = check_choice(behavior, "behavior", OBD_BEHAVIORS)
    campaign = check_choice(campaign, "campaign", OBD_CAMPAIGNS)
    user_features = check_choice(user_features, "user_features", USER_FEATURES)
    folder = obd_folder(behavior, campaign, data_dir)
    log_path, item_path = folder / f"{campaign}.csv", folder / "item_context.csv"
    items = _read_csv(item_path, ("item_id", "item_feature_0"))
    n_items = len(items)
    if not np.array_equal(np.sort(items["item_id"].to_numpy()), np.arange(n_items)):
        raise DataError(f"{item_path}: item_id must be 0..{n_items - 1}, each once")
    frame = _read_csv(log_path, _OBD_COLUMNS)
    user_cols = sorted(c for c in frame.columns if c.startswith("user_feature_"))
    affinity_cols = [f"user-item_affinity_{i}" for i in range(n_items)]
    if affinity and not set(affinity_cols) <= set(frame.columns):
        raise DataError(f"{log_path} lacks the {n_items} user-item_affinity_* columns")
    if user_features == "onehot":
        users = _one_hot(frame, user_cols)
    else:
        users = np.stack([pd.factorize(frame[c], sort=True)[0] for c in user_cols], axis=1).astype(
            np.float64
        )
    parts = [users, frame[affinity_cols].to_numpy(np.float64)] if affinity else [users]
    items = items.sort_values("item_id")
    cat_cols = sorted(
        c for c in items.columns if c.startswith("item_feature_") and c != "item_feature_0"
    )
    item_feats = np.concatenate(
        [items[["item_feature_0"]].to_numpy(np.float64), _one_hot(items, cat_cols)], axis=1
    )
    positions = frame["position"].to_numpy()
    if positions.min() < 1 or positions.max() > 3:
        raise DataError(f"{log_path}: position must be 1, 2 or 3")
    try:
        return make_log(
            np.concatenate(parts, axis=1),
            frame["item_id"].to_numpy(),
            frame["click"].to_numpy(np.float64),
            frame["propensity_score"].to_numpy(np.float64),
            n_actions=n_items,
            positions=positions - 1,
            action_features=item_feats,
            name=f"obd/{behavior}/{campaign}",
        )
    except (InputValueError, InputTypeError) as exc:
        raise DataError(f"{log_path}: {exc}") from None


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


def _service_frame(path: Path) -> pd.DataFrame:
    """The table of a service log: exported (Parquet or CSV), or read from the state folder."""
    if path.is_dir():
        from deepbandits.serve.export import log_table  # the service's modules only when asked

        try:
            return log_table(path)
        except DeepBanditsError as exc:
            raise DataError(str(exc)) from None
    if not path.is_file():
        raise DataNotFoundError(f"no log file at {path}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} cannot be read as {path.suffix[1:] or 'CSV'}: {exc}") from None


def read_service_log(path: str | os.PathLike[str]) -> LoggedBandit:
    """The decision service's log (exported as Parquet or CSV, or its state folder; module
    notes)."""
    path = Path(path)
    frame = _service_frame(path)
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
            stacklevel=3,
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
            name=str(path),
        )
    except (InputValueError, InputTypeError) as exc:
        raise DataError(f"{path}: {exc}") from None


def load_logged(
    source: str | os.PathLike[str] = "obd",
    *,
    behavior: str = "random",
    campaign: str = "all",
    data_dir: str | os.PathLike[str] | None = None,
    user_features: str = "onehot",
    affinity: bool = True,
) -> LoggedBandit:
    """A logged bandit table: ``"obd"`` (the Open Bandit Dataset's ``behavior`` log of
    ``campaign``, read from the data directory) or the path of a service log.

    Parameters
    ----------
    source : "obd" or path
        ``"obd"``, or a service log: a file written by ``deepbandits export-log`` or the
        service's state folder.
    behavior : {"random", "bts"}
    campaign : {"all", "men", "women"}
    data_dir : path, optional
        Data directory holding ``obd/``; default ``$DEEPBANDITS_DATA``, else
        ``~/.cache/deepbandits/data``.
    user_features : {"onehot", "codes"}
    affinity : bool, default=True
        Append the user-item affinities to the user's context.

    Raises
    ------
    DataNotFoundError
        The files are missing (the message says where they were looked for and how to get them).
    DataError
        A file is malformed (missing columns or values, values out of range).
    """
    if isinstance(source, str) and source == "obd":
        return load_obd(
            behavior,
            campaign,
            data_dir=data_dir,
            user_features=user_features,
            affinity=affinity,
        )
    if not isinstance(source, str | os.PathLike):
        raise InputValueError(f"source must be 'obd' or a path, but {source!r} is given")
    return read_service_log(source)
