"""Canonical dataset files checked by their published checksums, once per version of each file.

A file in a dataset folder under a name the catalog knows (``shuttle.trn``, …) must have one of
that name's checksums (:data:`~deepbandits.datasets.catalog.CANONICAL`); a file that has none is
damaged or another version, and is refused with a
:class:`~deepbandits.datasets.formats.DatasetFileError` (a
:class:`~deepbandits.errors.DataError`) that names the file, the expected and the actual digests
and what to do. A file under a name without known checksums is not canonical and never refused.

Hashing takes a fraction of a second per file, so each outcome is remembered in a small JSON
record in the cache folder, ``<cache_home>/verified/<dataset>.json``: for each file its absolute
path, size, modification time (ns) and the checksum that identifies it (the canonical checksum it
matched, or its SHA-256 when it has no known checksum, which still keys the parsed-array cache).
A later load of a file with the same size and modification time trusts the record; any change
to either verifies the file again. As file systems stamp times by a clock tick (up to 2 s), a
file modified less than :data:`RECENT_NS` before it was hashed is not recorded: a second edit
within the same tick would keep its size and time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from deepbandits._io import write_atomic
from deepbandits.datasets.download import Checksum, digests
from deepbandits.datasets.formats import GZIP_ERRORS, DatasetFileError
from deepbandits.datasets.location import ENV_VAR, cache_home

#: Version of the record's layout; a record of another version is ignored (files re-verified).
RECORD_FORMAT = 1

#: A file modified less than this long (ns) before it is hashed is hashed again next time.
RECENT_NS = 2 * 10**9


@dataclass(frozen=True)
class FileVersion:
    """What tells two versions of a file apart without reading it: size and mtime (ns)."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileVersion:
        stat = path.stat()
        return cls(stat.st_size, stat.st_mtime_ns)


def records_path(dataset: str) -> Path:
    """The JSON record of the verified files of ``dataset``."""
    return cache_home() / "verified" / f"{dataset}.json"


def _advice(dataset: str) -> str:
    return (
        "Delete it and load the dataset again to download it afresh (or copy a fresh canonical "
        f"file there), or point {ENV_VAR} (or data_dir=...) at a folder whose '{dataset}/' "
        "subfolder holds the canonical files."
    )


def _digests(path: Path, algorithms: list[str], gunzip: bool, dataset: str) -> dict[str, str]:
    """:func:`~deepbandits.datasets.download.digests`, its errors turned into
    :class:`DatasetFileError` naming the file."""
    try:
        return digests(path, algorithms, gunzip=gunzip)
    except GZIP_ERRORS as exc:
        problem = (
            f"damaged: corrupt or truncated gzip stream ({exc}); it is not the canonical "
            f"{path.name} of the {dataset!r} dataset. {_advice(dataset)}"
        )
    except OSError as exc:
        problem = f"cannot be read ({exc})"
    raise DatasetFileError(path, problem)


def identify(path: Path, accepted: tuple[Checksum, ...], dataset: str) -> Checksum:
    """Hash ``path``: the checksum of ``accepted`` it matches, or its SHA-256 when ``accepted``
    is empty (a file that is not canonical).

    Raises
    ------
    DatasetFileError
        ``accepted`` is not empty and the file matches none of them, or its gzip stream (for a
        checksum of the decompressed content) is damaged, or it cannot be read.
    """
    if not accepted:
        return Checksum("sha256", _digests(path, ["sha256"], False, dataset)["sha256"])
    found: list[Checksum] = []
    for of in dict.fromkeys(check.of for check in accepted):
        group = [check for check in accepted if check.of == of]
        algorithms = list(dict.fromkeys(check.algorithm for check in group))
        computed = _digests(path, algorithms, of == "gzip", dataset)
        for check in group:
            if computed[check.algorithm] == check.digest:
                return check
        found += [Checksum(name, digest, of) for name, digest in computed.items()]
    raise DatasetFileError(
        path,
        f"not the canonical {path.name} of the {dataset!r} dataset: expected "
        f"{' or '.join(check.describe() for check in accepted)}; found "
        f"{', '.join(check.describe() for check in found)}. The file is damaged or another "
        f"version. {_advice(dataset)}",
    )


def _checksum(value: Any) -> Checksum | None:
    """The checksum a record stores (``None`` if the entry is not a well-formed one)."""
    if not isinstance(value, dict) or set(value) != {"algorithm", "digest", "of"}:
        return None
    if not all(isinstance(v, str) for v in value.values()):
        return None
    return Checksum(**value)


def _recorded(entry: Any, version: FileVersion) -> Checksum | None:
    """The checksum ``entry`` records for this version of a file, else ``None``."""
    if not isinstance(entry, dict):
        return None
    if entry.get("size") != version.size or entry.get("mtime_ns") != version.mtime_ns:
        return None
    return _checksum(entry.get("checksum"))


def _load_records(path: Path) -> dict[str, Any]:
    """The entries of a record file; an absent, unreadable or damaged one reads as empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _save_records(path: Path, entries: dict[str, Any]) -> None:
    """Write the record (entries of files that no longer exist dropped); a cache folder that
    cannot be written only means the files are verified again next time."""
    kept = {name: entry for name, entry in entries.items() if Path(name).is_file()}
    text = json.dumps({"format": RECORD_FORMAT, "files": kept}, indent=1, sort_keys=True)
    try:
        write_atomic(path, text + "\n")
    except OSError:
        pass


def verified_identities(
    dataset: str, paths: list[Path], canonical: Mapping[str, tuple[Checksum, ...]]
) -> list[Checksum]:
    """The checksum identifying each file of ``paths``, each canonical file verified.

    ``canonical`` maps a file name to its accepted checksums. A file is hashed only when the
    record has no entry for its current size and modification time (or one that the accepted
    checksums no longer admit); what was hashed is recorded (unless modified within
    :data:`RECENT_NS`), even when a later file is refused.

    Raises
    ------
    DatasetFileError
        A canonical file matches none of its checksums (see :func:`identify`).
    """
    record = records_path(dataset)
    entries = _load_records(record)
    verified: dict[str, Any] = {}
    identities: list[Checksum] = []
    try:
        for path in paths:
            accepted = canonical.get(path.name, ())
            name = str(path.absolute())
            version = FileVersion.of(path)
            identity = _recorded(entries.get(name), version)
            if identity is None or (accepted and identity not in accepted):
                identity = identify(path, accepted, dataset)
                settled = time.time_ns() - version.mtime_ns > RECENT_NS
                if settled and FileVersion.of(path) == version:  # and not rewritten meanwhile
                    verified[name] = {**asdict(version), "checksum": asdict(identity)}
            identities.append(identity)
    finally:
        if verified:  # merged into the record as it is now: another process may have added to it
            _save_records(record, {**_load_records(record), **verified})
    return identities
