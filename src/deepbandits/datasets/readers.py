"""How each dataset of :mod:`~deepbandits.datasets.catalog` is assembled from its canonical
files: features in a compact dtype and labels mapped to 0..K−1 (MNIST digits, shuttle and
covertype classes minus one, CIFAR-10 classes), each file's structure checked by
:mod:`~deepbandits.datasets.formats`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.datasets.formats import (
    DatasetFileError,
    read_cifar_batch,
    read_idx,
    read_int_table,
)

#: The CIFAR-10 batch files, of which any subset may be present.
CIFAR_BATCHES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


def read_mnist(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    parts = []
    for split in ("train", "t10k"):
        images = read_idx(folder / f"{split}-images-idx3-ubyte.gz")
        labels_path = folder / f"{split}-labels-idx1-ubyte.gz"
        labels = read_idx(labels_path)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DatasetFileError(
                folder / f"{split}-images-idx3-ubyte.gz",
                f"images {images.shape} and labels {labels.shape} do not match",
            )
        if labels.size and labels.max() > 9:
            raise DatasetFileError(labels_path, f"labels outside 0..9 (max {labels.max()})")
        parts.append((images.reshape(len(images), -1), labels.astype(np.int64)))
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return X, y, ""


def read_shuttle(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    tables = [read_int_table(folder / name, 10, sep=" ") for name in ("shuttle.trn", "shuttle.tst")]
    for name, table in zip(("shuttle.trn", "shuttle.tst"), tables, strict=True):
        labels = table[:, 9]
        if labels.size and (labels.min() < 1 or labels.max() > 7):
            raise DatasetFileError(
                folder / name, f"classes outside 1..7 ({labels.min()}..{labels.max()})"
            )
    data = np.concatenate(tables)
    return data[:, :9].astype(np.int32), data[:, 9] - 1, ""


def read_covertype(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
    path = folder / "covtype.data.gz"
    data = read_int_table(path, 55, sep=",")
    labels = data[:, 54]
    if labels.min() < 1 or labels.max() > 7:
        raise DatasetFileError(path, f"Cover_Type outside 1..7 ({labels.min()}..{labels.max()})")
    return data[:, :54].astype(np.int16), labels - 1, ""


def read_cifar(folder: Path, files: list[Path]) -> tuple[NDArray[Any], NDArray[Any], str]:
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
