"""Where datasets live: an argument, else ``DEEPBANDITS_DATA``, else a per-user cache folder."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "DEEPBANDITS_DATA"


def cache_home() -> Path:
    """The per-user cache folder: ``$XDG_CACHE_HOME/deepbandits`` (``~/.cache/deepbandits``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "deepbandits"


def data_home(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``data_dir`` if given, else ``$DEEPBANDITS_DATA``, else
    ``cache_home() / "data"``. Each dataset has its own folder inside it (``mnist/``, …)."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return cache_home() / "data"
