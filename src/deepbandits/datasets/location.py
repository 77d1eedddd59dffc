"""Where datasets live: an argument, else ``DEEPBANDITS_DATA``, else a per-user cache folder."""

from __future__ import annotations

import os
from pathlib import Path

from deepbandits.errors import InputTypeError

ENV_VAR = "DEEPBANDITS_DATA"


def cache_home() -> Path:
    """The per-user cache folder: ``$XDG_CACHE_HOME/deepbandits`` (``~/.cache/deepbandits``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "deepbandits"


def data_home(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$DEEPBANDITS_DATA``, else
    ``cache_home() / "data"``. Each dataset has its own folder inside it (``mnist/``, …)."""
    if data_dir is not None:
        if not isinstance(data_dir, str | os.PathLike):
            raise InputTypeError(
                f"data_dir must be a path (str or os.PathLike) or None, but {data_dir!r} "
                f"({type(data_dir).__name__}) is given"
            )
        return Path(data_dir).expanduser()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return cache_home() / "data"


def data_home_origin(data_dir: str | os.PathLike[str] | None = None) -> str:
    """Which rule of :func:`data_home` chose the data directory, in words (for messages)."""
    if data_dir is not None:
        return "given as data_dir"
    if os.environ.get(ENV_VAR):
        return f"from {ENV_VAR}"
    return f"the default, as neither data_dir nor {ENV_VAR} is set"
