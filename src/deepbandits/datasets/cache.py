"""The parsed arrays of a dataset, cached as an ``.npz`` tied to the version of its sources.

The cache of dataset ``name`` is ``<name>.<key>.npz``, where ``key`` is derived from the checksum
that identifies each source file (:func:`~deepbandits.datasets.verify.verified_identities`), so a
changed source gives another key and is parsed again. The key is also stored inside the archive
and checked on reading, with the names, shapes and types of the arrays; a cache that is
truncated, unreadable, of another version or holding other arrays is discarded with a warning
and rebuilt from the sources, never used. Caches are written with
:func:`~deepbandits._io.write_atomic`, next to the sources or, when that folder is read-only, in
the cache folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._io import write_atomic
from deepbandits.datasets.download import Checksum
from deepbandits.datasets.location import cache_home

#: Bumped whenever what a cache holds or how its key is derived changes.
CACHE_VERSION = 2

#: The arrays a cache holds, exactly.
ARRAYS = frozenset({"X", "y", "note", "key"})

Parsed = tuple[NDArray[Any], NDArray[np.int64], str]


def cache_key(paths: list[Path], identities: list[Checksum]) -> str:
    """A short key for this version of the sources: their names and identifying checksums."""
    h = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    for path, identity in zip(paths, identities, strict=True):
        h.update(f"{path.name}\0{identity.algorithm}\0{identity.of}\0{identity.digest}\n".encode())
    return h.hexdigest()[:16]


def cache_candidates(name: str, folder: Path, key: str) -> list[Path]:
    """Where the cache may be, in order of preference: next to the sources, in the cache folder."""
    fname = f"{name}.{key}.npz"
    return [folder / fname, cache_home() / "converted" / fname]


def _read(path: Path, key: str) -> Parsed:
    """The arrays of one cache file; ``ValueError`` saying what is wrong with it otherwise."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:  # a damaged zip raises any of a dozen types (zipfile, numpy, ...)
        raise ValueError(f"unreadable: {type(exc).__name__}: {exc}") from None
    if set(arrays) != ARRAYS:
        raise ValueError(f"arrays {sorted(arrays)}, expected {sorted(ARRAYS)}")
    X, y, note, stored = (arrays[name] for name in ("X", "y", "note", "key"))
    if stored.shape != () or str(stored) != key:
        raise ValueError("written for another version of the source files")
    if note.shape != () or note.dtype.kind != "U":
        raise ValueError("no text note")
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise ValueError(f"X is not a 2-D numeric array ({X.dtype}, shape {X.shape})")
    if y.shape != (len(X),) or y.dtype != np.int64:
        raise ValueError(f"y ({y.dtype}, shape {y.shape}) does not fit X ({X.shape})")
    return X, y, str(note)


def read_cache(candidates: list[Path], key: str) -> Parsed | None:
    """The cached arrays from the first sound candidate, or ``None`` when there is none.

    A damaged candidate is deleted (if its folder allows) and reported by a warning, so that
    the caller parses the sources again and rewrites it.
    """
    damaged = []
    for path in candidates:
        if not path.is_file():
            continue
        try:
            return _read(path, key)
        except ValueError as exc:
            damaged.append(f"{path} ({exc})")
            try:
                path.unlink()
            except OSError:
                pass  # a read-only folder: the rebuilt cache goes to the next candidate
    if damaged:
        warnings.warn(
            f"damaged dataset cache ignored: {'; '.join(damaged)}. The dataset is parsed again "
            "from its source files and the cache rebuilt",
            stacklevel=3,
        )
    return None


def _writable(folder: Path) -> bool:
    """Whether ``folder`` may be written: its owner-write bit is set (a folder marked read-only
    is left alone even by root) and the process has write access."""
    return bool(folder.stat().st_mode & stat.S_IWUSR) and os.access(folder, os.W_OK)


def write_cache(candidates: list[Path], key: str, arrays: Parsed) -> Path | None:
    """Write the parsed arrays to the first writable candidate (atomically), dropping the caches
    of older versions of the sources next to it; ``None`` when no candidate can be written."""
    X, y, note = arrays
    buffer = io.BytesIO()
    np.savez(buffer, X=X, y=y.astype(np.int64), note=np.str_(note), key=np.str_(key))
    data = buffer.getvalue()
    for path in candidates:
        if path.parent.is_dir() and not _writable(path.parent):
            continue
        try:
            write_atomic(path, data)
        except OSError:
            continue
        for old in path.parent.glob(path.name.split(".")[0] + ".*.npz"):
            if old != path:
                old.unlink(missing_ok=True)
        return path
    return None
