"""The four classification datasets of Section 5.2: their files, sources and readers.

:func:`load_dataset` finds a dataset's canonical files in the data directory
(:func:`~deepbandits.datasets.location.data_home`), downloads missing ones when it may, parses
them, and caches the parsed arrays as an ``.npz`` keyed by the sources' SHA-256 (next to the
sources, or in the cache folder when that directory is read-only), so later loads read only the
``.npz``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tarfile
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_choice
from deepbandits.datasets.download import Checksum, DownloadError, fetch, file_digest
from deepbandits.datasets.formats import (
    DatasetFileError,
    read_bytes,
    read_cifar_batch,
    read_idx,
    read_int_table,
)
from deepbandits.datasets.location import ENV_VAR, cache_home, data_home

CACHE_VERSION = 1


@dataclass(frozen=True)
class Dataset:
    """A labelled dataset: features ``X`` ``[n, D]`` (raw, compact dtype), labels ``y`` ``[n]``.

    ``sources`` lists the files it was read from; ``note`` says what is partial about it.
    """

    name: str
    X: NDArray[Any]
    y: NDArray[np.int64]
    sources: tuple[str, ...]
    note: str = ""

    @property
    def n_classes(self) -> int:
        return int(np.unique(self.y).size)


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
    folder: str
    required: tuple[str, ...]
    read: Callable[[Path, list[Path]], tuple[NDArray[Any], NDArray[np.int64], str]]
    sources: dict[str, Source]
    #: files of which any subset is used (CIFAR-10 batches); at least one must be present
    optional: tuple[str, ...] = ()
    how_to_get: str = ""


# ------------------------------------------------------------------------------------ readers
def _read_mnist(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    parts = []
    for split in ("train", "t10k"):
        images = read_idx(folder / f"{split}-images-idx3-ubyte.gz")
        labels = read_idx(folder / f"{split}-labels-idx1-ubyte.gz")
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DatasetFileError(
                folder / f"{split}-images-idx3-ubyte.gz",
                f"images {images.shape} and labels {labels.shape} do not match",
            )
        parts.append((images.reshape(len(images), -1), labels.astype(np.int64)))
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return X, y, ""


def _read_shuttle(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    tables = [read_int_table(folder / name, 10, sep=" ") for name in ("shuttle.trn", "shuttle.tst")]
    data = np.concatenate(tables)
    return data[:, :9].astype(np.int32), data[:, 9] - 1, ""


def _read_covertype(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    path = folder / "covtype.data.gz"
    data = read_int_table(path, 55, sep=",")
    labels = data[:, 54]
    if labels.min() < 1 or labels.max() > 7:
        raise DatasetFileError(path, f"Cover_Type outside 1..7 ({labels.min()}..{labels.max()})")
    return data[:, :54].astype(np.int16), labels - 1, ""


CIFAR_BATCHES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


def _read_cifar(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    present = [name for name in CIFAR_BATCHES if (folder / name).is_file()]
    parts = [read_cifar_batch(folder / name) for name in present]
    missing = [name for name in CIFAR_BATCHES if name not in present]
    note = ""
    if missing:
        note = (
            f"partial CIFAR-10: read {', '.join(present)} ({sum(len(p[1]) for p in parts)} "
            f"images); missing {', '.join(missing)}"
        )
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), note


# ------------------------------------------------------------------------------------ sources
def _gunzip_to(name: str) -> Callable[[Path, Path], None]:
    def unpack(downloaded: Path, folder: Path) -> None:
        (folder / name).write_bytes(read_bytes(downloaded, gunzip=True))
        downloaded.unlink()

    return unpack


def _unlzw_to(name: str) -> Callable[[Path, Path], None]:
    """Decompress a Unix ``compress`` (``.Z``) file, the format UCI ships ``shuttle.trn`` in."""

    def unpack(downloaded: Path, folder: Path) -> None:
        import unlzw3

        (folder / name).write_bytes(unlzw3.unlzw(downloaded.read_bytes()))
        downloaded.unlink()

    return unpack


def _extract_cifar(downloaded: Path, folder: Path) -> None:
    """Copy the batch files out of ``cifar-10-python.tar.gz`` (regular files with known names
    only, so a crafted archive cannot write elsewhere)."""
    wanted = {f"cifar-10-batches-py/{name}" for name in (*CIFAR_BATCHES, "batches.meta")}
    with tarfile.open(downloaded, "r:gz") as tar:
        for member in tar.getmembers():
            if member.name in wanted and member.isfile():
                src = tar.extractfile(member)
                assert src is not None
                with src, open(folder / Path(member.name).name, "wb") as out:
                    shutil.copyfileobj(src, out)
    downloaded.unlink()


_MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_MNIST_CONTENT = {  # SHA-256 of the decompressed IDX files (MANIFEST.md of shared/data)
    "train-images-idx3-ubyte.gz": "ba891046e6505d7aadcbbe25680a0738"
    "ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte.gz": "65a50cbbf4e906d70832878ad85ccda5"
    "333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte.gz": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte.gz": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_CIFAR_TAR = Source(
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    Checksum("md5", "c58f30108f718f92721af3b95e74349a"),
    _extract_cifar,
    "cifar-10-python.tar.gz",
)

SPECS: dict[str, Spec] = {
    "mnist": Spec(
        "mnist",
        tuple(_MNIST_CONTENT),
        _read_mnist,
        {
            name: Source(_MNIST_URL + name, Checksum("sha256", digest, of="gzip"))
            for name, digest in _MNIST_CONTENT.items()
        },
        how_to_get="the four IDX .gz files of yann.lecun.com/exdb/mnist",
    ),
    "shuttle": Spec(
        "shuttle",
        ("shuttle.trn", "shuttle.tst"),
        _read_shuttle,
        {
            "shuttle.trn": Source(
                _UCI + "statlog/shuttle/shuttle.trn.Z",
                None,
                _unlzw_to("shuttle.trn"),
                "shuttle.trn.Z",
                Checksum(
                    "sha256", "87b24ee9fb5137e1d417659cf905d84d0e15342bbaa60770f1ae83da1a38200a"
                ),
            ),
            "shuttle.tst": Source(
                _UCI + "statlog/shuttle/shuttle.tst",
                Checksum(
                    "sha256", "f776934a628d9b94c482cb058a76ddaa63823e0f74aec065813c9dff3b89d661"
                ),
            ),
        },
        how_to_get="shuttle.trn (UCI ships it compressed as shuttle.trn.Z) and shuttle.tst of "
        "the UCI Statlog (Shuttle) dataset",
    ),
    "covertype": Spec(
        "covertype",
        ("covtype.data.gz",),
        _read_covertype,
        {
            "covtype.data.gz": Source(
                _UCI + "covtype/covtype.data.gz",
                Checksum(
                    "sha256",
                    "0a9371cef7c964b5475d6053cc3e0894a5aa6f65ad1ed3ecb01c45aa96217945",
                    of="gzip",
                ),
            )
        },
        how_to_get="covtype.data.gz of the UCI Covertype dataset",
    ),
    "cifar10": Spec(
        "cifar10",
        (),
        _read_cifar,
        dict.fromkeys(CIFAR_BATCHES, _CIFAR_TAR),
        optional=CIFAR_BATCHES,
        how_to_get="the CIFAR-10 python batches (cifar-10-python.tar.gz of "
        "www.cs.toronto.edu/~kriz/cifar.html, folder cifar-10-batches-py)",
    ),
}


def dataset_names() -> list[str]:
    return list(SPECS)


# ------------------------------------------------------------------------------- locating
def _missing_message(spec: Spec, folder: Path, missing: list[str], reason: str) -> str:
    return (
        f"dataset files missing: {', '.join(missing)} not found in {folder} ({reason}). "
        f"Get {spec.how_to_get} and put them in {folder}, or point the data directory at a "
        f"folder that has a '{spec.folder}/' subfolder with them: data_dir=... or the "
        f"{ENV_VAR} environment variable."
    )


def ensure_files(name: str, data_dir: str | os.PathLike[str] | None, download: bool) -> Path:
    """The dataset's folder, with its required files present (downloaded if allowed)."""
    spec = SPECS[name]
    folder = data_home(data_dir) / spec.folder
    missing = [f for f in spec.required if not (folder / f).is_file()]
    if spec.optional and not any((folder / f).is_file() for f in spec.optional):
        missing.append(f"any of {', '.join(spec.optional)}")
    if not missing:
        return folder  # optional files (CIFAR batches) are fetched only when none is present
    if not download:
        raise FileNotFoundError(_missing_message(spec, folder, missing, "download=False"))
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
        except DownloadError as exc:
            if fname in spec.required or not any((folder / f).is_file() for f in spec.optional):
                raise FileNotFoundError(
                    _missing_message(spec, folder, missing, f"download failed: {exc}")
                ) from exc
            continue  # optional file (a CIFAR batch): use what is present
        if source.unpack is not None:
            source.unpack(target, folder)
        check = source.unpacked_checksum
        if check is not None and not check.matches(folder / fname):
            (folder / fname).unlink()
            raise FileNotFoundError(
                f"{source.url} unpacked to a {fname} whose {check.algorithm} is not the "
                "published one; the file was discarded"
            )
    return folder


# -------------------------------------------------------------------------------- caching
def sources_digest(paths: list[Path]) -> str:
    h = hashlib.sha256(f"v{CACHE_VERSION}".encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(file_digest(path).encode())
    return h.hexdigest()[:16]


def _cache_candidates(name: str, folder: Path, key: str) -> list[Path]:
    fname = f"{name}.{key}.npz"
    return [folder / fname, cache_home() / "converted" / fname]


def load_dataset(
    name: str, data_dir: str | os.PathLike[str] | None = None, *, download: bool = True
) -> Dataset:
    """Load ``mnist``, ``shuttle``, ``covertype`` or ``cifar10`` from its canonical files.

    Parameters
    ----------
    name : str
        Dataset name.
    data_dir : path, optional
        Data directory holding ``<name>/`` folders; default ``$DEEPBANDITS_DATA``, else
        ``~/.cache/deepbandits/data``.
    download : bool, default=True
        Download missing files from their canonical sources (checked against the published
        checksum). Offline or with ``download=False``, a missing file raises
        ``FileNotFoundError`` saying which file, where it was looked for and how to get it.

    Returns
    -------
    Dataset
        Raw features in a compact dtype and labels mapped to 0..K−1 by the reader (MNIST digits,
        shuttle and covertype classes minus one, CIFAR-10 classes).
    """
    check_choice(name, "dataset", SPECS)
    spec = SPECS[name]
    folder = ensure_files(name, data_dir, download)
    present = [folder / f for f in (*spec.required, *spec.optional) if (folder / f).is_file()]
    key = sources_digest(present)
    candidates = _cache_candidates(name, folder, key)
    cached = next((path for path in candidates if path.is_file()), None)
    if cached is not None:
        with np.load(cached, allow_pickle=False) as npz:
            X, y, note = npz["X"], npz["y"], str(npz["note"])
    else:
        X, y, note = spec.read(folder, present)
        _write_cache(candidates, X, y, note)
    if note:
        warnings.warn(f"{name}: {note}", stacklevel=2)
    return Dataset(name, X, y.astype(np.int64), tuple(str(p) for p in present), note)


def _writable(folder: Path) -> bool:
    """Whether ``folder`` may be written: its owner-write bit is set (a folder marked read-only
    is left alone even by root) and the process has write access."""
    return bool(folder.stat().st_mode & stat.S_IWUSR) and os.access(folder, os.W_OK)


def _write_cache(candidates: list[Path], X: NDArray[Any], y: NDArray[Any], note: str) -> None:
    """Write the parsed arrays to the first writable candidate (atomically), dropping the caches
    of older versions of the sources next to it."""
    for path in candidates:
        if path.parent.is_dir() and not _writable(path.parent):
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as f:
                np.savez(f, X=X, y=y.astype(np.int64), note=np.str_(note))
            os.replace(f.name, path)
        except OSError:
            continue
        for old in path.parent.glob(path.name.split(".")[0] + ".*.npz"):
            if old != path:
                old.unlink(missing_ok=True)
        return
