"""One entry to every logged table the library reads: :func:`load_logged`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit
from deepbandits.logs.obd import load_obd
from deepbandits.logs.service import read_service_frame, service_log
from deepbandits.logs.table import table_log


def load_logged(
    source: str | os.PathLike[str] = "obd",
    *,
    behavior: str = "random",
    campaign: str = "all",
    data_dir: str | os.PathLike[str] | None = None,
    user_features: str = "onehot",
    affinity: bool = True,
    action: str = "action",
    reward: str = "reward",
    propensity: str = "propensity",
    position: str | None = None,
    features: Sequence[str] | None = None,
) -> LoggedBandit:
    """A logged bandit table: ``"obd"`` (the Open Bandit Dataset's ``behavior`` log of
    ``campaign``, read from the data directory, :mod:`~deepbandits.logs.obd`), or a Parquet or
    CSV file: a service log exported by ``deepbandits export-log`` (it has a ``contexts``
    column; :mod:`~deepbandits.logs.service`; the service reads its own state folder:
    :func:`deepbandits.serve.export.read_log`), or else a flat table of the user's, one column
    per context feature (:mod:`~deepbandits.logs.table`).

    Parameters
    ----------
    source : "obd" or path
        ``"obd"``, or the path of a Parquet or CSV file.
    behavior : {"random", "bts"}
    campaign : {"all", "men", "women"}
    data_dir : path, optional
        Data directory holding ``obd/``; default ``$DEEPBANDITS_DATA``, else
        ``~/.cache/deepbandits/data``.
    user_features : {"onehot", "codes"}
    affinity : bool, default=True
        Append the user-item affinities to the user's context.
    action, reward, propensity, position, features : str, optional
        A flat table's columns: the arm played (0..K−1), the reward, π₀(aₜ | xₜ), the slot
        (None: one), and the context's columns (None: every other column).

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
    path = Path(source)
    frame = read_service_frame(path)
    if "contexts" in frame.columns:
        return service_log(frame, path)
    return table_log(
        frame,
        path,
        action=action,
        reward=reward,
        propensity=propensity,
        position=position,
        features=features,
    )
