"""The Open Bandit Dataset (Saito, Aihara, Matsutani & Narita 2021, arXiv:2008.07146) as
:class:`~deepbandits.logs.bandit.LoggedBandit` tables.

ZOZOTOWN's three-slot fashion recommendation widget logged by a uniform-random policy
(``random``) and by Bernoulli Thompson sampling (``bts``), campaigns ``all`` (80 items),
``men`` (34), ``women`` (46). The folder ``<data dir>/obd/<behavior>/<campaign>/`` holds
``<campaign>.csv`` and ``item_context.csv``, the layout Open Bandit Pipeline ships (the
10,000-row sample is in the ``obp`` wheel and in github.com/st-tech/zr-obp, folder ``obd/``).
The data directory is the ``data_dir`` argument, else ``$DEEPBANDITS_DATA``, else
``~/.cache/deepbandits/data`` (:func:`~deepbandits.datasets.location.data_home`). A round's
context is the user: the four hashed user features one-hot (``user_features="onehot"``) or as
integer codes (``"codes"``, for an embedding), followed by the user-item affinities; the items'
features (item_feature_0, then item_feature_1..3 one-hot, encoded per file since the two logs
hash them differently) are the action features; positions 1..3 become 0..2.

The random log's policy is uniform over the items at every position (each of its propensities
is 1/K, checked when read), so its ``logging_dist`` is known: 1/K for every arm, which the
estimators that read π₀ of every arm (MIPS) need.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits._validation import check_choice
from deepbandits.datasets.location import ENV_VAR, data_home, data_home_origin
from deepbandits.errors import DataError, DataNotFoundError, InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.logs.columns import numbers

OBD_BEHAVIORS = ("random", "bts")
OBD_CAMPAIGNS = ("all", "men", "women")
USER_FEATURES = ("onehot", "codes")
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
    propensities = frame["propensity_score"].to_numpy(np.float64)
    uniform = behavior == "random" and np.allclose(propensities, 1.0 / n_items)
    try:
        return make_log(
            np.concatenate(parts, axis=1),
            frame["item_id"].to_numpy(),
            frame["click"].to_numpy(np.float64),
            propensities,
            n_actions=n_items,
            positions=positions - 1,
            action_features=item_feats,
            logging_dist=np.full((len(frame), n_items), 1.0 / n_items) if uniform else None,
            name=f"obd/{behavior}/{campaign}",
        )
    except (InputValueError, InputTypeError) as exc:
        raise DataError(f"{log_path}: {exc}") from None
