"""One entry to every logged table the library reads: :func:`load_logged`."""

from __future__ import annotations

import os

from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit
from deepbandits.logs.obd import load_obd
from deepbandits.logs.service import read_service_log


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
    ``campaign``, read from the data directory, :mod:`~deepbandits.logs.obd`) or the path of a
    service log exported by ``deepbandits export-log`` (:mod:`~deepbandits.logs.service`; the
    service reads its own state folder: :func:`deepbandits.serve.export.read_log`).

    Parameters
    ----------
    source : "obd" or path
        ``"obd"``, or a service log: a file written by ``deepbandits export-log``.
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
