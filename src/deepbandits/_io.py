"""The one way files are written: atomically.

:func:`write_atomic` writes to a uniquely named temporary file in the destination's folder,
flushes and fsyncs it, then renames it over the destination (:func:`os.replace`, atomic on
POSIX and Windows), so a reader — or a run resumed after a kill — sees the old file or the new
one, never half of one, and two processes writing the same path never share a temporary file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; returns the path.

    The folder is created if missing. On any error the temporary file is removed and the
    destination is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
