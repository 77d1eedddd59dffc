"""Where a dataset's canonical files come from and how they get into its folder: downloaded
when allowed, unpacked, checked against the published checksums, and otherwise a
:class:`~deepbandits.errors.DataNotFoundError` saying how to get them.
"""

from __future__ import annotations

import os
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._io import write_atomic
from deepbandits.datasets.download import Checksum, DownloadError, fetch
from deepbandits.datasets.location import ENV_VAR, data_home, data_home_origin
from deepbandits.datasets.readers import CIFAR_BATCHES
from deepbandits.errors import DataNotFoundError


@dataclass(frozen=True)
class Source:
    """One canonical file: where to download it and how to check what was downloaded."""

    url: str
    checksum: Checksum | None
    #: turns the downloaded file into the canonical file(s) in the folder (decompress, extract)
    unpack: Callable[[Path, Path], None] | None = None
    download_name: str | None = None
    #: checksum of the canonical file after ``unpack`` (when the download itself has none)
    unpacked_checksum: Checksum | None = None


@dataclass(frozen=True)
class Spec:
    """A dataset of the catalog: its folder under the data directory, the files its reader
    opens, how to read them, where each comes from and, for the error message, how to get
    them by hand."""

    folder: str
    required: tuple[str, ...]
    read: Callable[[Path, list[Path]], tuple[NDArray[Any], NDArray[np.int64], str]]
    sources: dict[str, Source]
    #: files of which any subset is used (CIFAR-10 batches); at least one must be present
    optional: tuple[str, ...] = ()
    how_to_get: str = ""


def unlzw_to(name: str) -> Callable[[Path, Path], None]:
    """Decompress a Unix ``compress`` (``.Z``) file, the format UCI ships ``shuttle.trn`` in."""

    def unpack(downloaded: Path, folder: Path) -> None:
        import unlzw3

        write_atomic(folder / name, unlzw3.unlzw(downloaded.read_bytes()))
        downloaded.unlink()

    return unpack


def extract_cifar(downloaded: Path, folder: Path) -> None:
    """Copy the batch files out of ``cifar-10-python.tar.gz`` (regular files with known names
    only, so a crafted archive cannot write elsewhere)."""
    wanted = {f"cifar-10-batches-py/{name}" for name in (*CIFAR_BATCHES, "batches.meta")}
    with tarfile.open(downloaded, "r:gz") as tar:
        for member in tar.getmembers():
            if member.name in wanted and member.isfile():
                src = tar.extractfile(member)
                assert src is not None
                with src:
                    write_atomic(folder / Path(member.name).name, src.read())
    downloaded.unlink()


#: What unpacking a damaged download may raise (a bad tar or gzip, a bad ``.Z`` stream).
_UNPACK_ERRORS = (OSError, EOFError, ValueError, tarfile.TarError, zlib.error)


def _missing_message(
    name: str,
    spec: Spec,
    data_dir: str | os.PathLike[str] | None,
    folder: Path,
    missing: list[str],
    reason: str,
) -> str:
    return (
        f"dataset {name!r} not found: {', '.join(missing)} missing from {folder} (data "
        f"directory {folder.parent}, {data_home_origin(data_dir)}; {reason}). Get "
        f"{spec.how_to_get} and put them in {folder}, or point the data directory at a folder "
        f"that has a '{spec.folder}/' subfolder with them: data_dir=... or the {ENV_VAR} "
        "environment variable."
    )


def ensure_files(
    name: str, spec: Spec, data_dir: str | os.PathLike[str] | None, download: bool
) -> Path:
    """The folder of dataset ``name`` (described by ``spec``), with its required files present
    (downloaded if allowed).

    Raises :class:`~deepbandits.errors.DataNotFoundError` (a ``FileNotFoundError``) saying
    which dataset, where it was looked for and how to get it, when a file is missing and
    cannot be downloaded.
    """
    folder = data_home(data_dir) / spec.folder
    missing = [f for f in spec.required if not (folder / f).is_file()]
    if spec.optional and not any((folder / f).is_file() for f in spec.optional):
        missing.append(f"any of {', '.join(spec.optional)}")
    if not missing:
        return folder  # optional files (CIFAR batches) are fetched only when none is present
    if not download:
        raise DataNotFoundError(
            _missing_message(name, spec, data_dir, folder, missing, "download=False")
        )
    wanted = [f for f in (*spec.required, *spec.optional) if not (folder / f).is_file()]
    done: set[int] = set()
    for fname in wanted:
        source = spec.sources[fname]
        if id(source) in done or (folder / fname).is_file():
            continue
        done.add(id(source))
        target = folder / (source.download_name or fname)
        try:
            fetch(source.url, target, source.checksum)
            if source.unpack is not None:
                source.unpack(target, folder)
        except (DownloadError, *_UNPACK_ERRORS) as exc:
            if fname in spec.required or not any((folder / f).is_file() for f in spec.optional):
                reason = f"download failed: {exc}"
                raise DataNotFoundError(
                    _missing_message(name, spec, data_dir, folder, missing, reason)
                ) from None
            continue  # optional file (a CIFAR batch): use what is present
        check = source.unpacked_checksum
        if check is not None and not check.matches(folder / fname):
            (folder / fname).unlink()
            raise DataNotFoundError(
                f"dataset {name!r}: {source.url} unpacked to a {fname} whose {check.algorithm} "
                "is not the published one; the file was discarded"
            )
    return folder
