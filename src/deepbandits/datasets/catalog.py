"""The four classification datasets of Section 5.2: their files, checksums and sources.

Each entry of :data:`SPECS` names a dataset's files, its reader
(:mod:`~deepbandits.datasets.readers`) and where each file comes from
(:mod:`~deepbandits.datasets.sources`).

:func:`load_dataset` finds a dataset's canonical files in the data directory
(:func:`~deepbandits.datasets.location.data_home`), downloads missing ones when it may, checks
each against its published checksum (:data:`CANONICAL`; once per version of the file, see
:mod:`~deepbandits.datasets.verify`), parses them, and caches the parsed arrays as an ``.npz``
tied to that version of the sources (:mod:`~deepbandits.datasets.cache`), so later loads read
only the ``.npz``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_bool, check_choice
from deepbandits.datasets.cache import cache_candidates, cache_key, read_cache, write_cache
from deepbandits.datasets.download import Checksum
from deepbandits.datasets.readers import (
    CIFAR_BATCHES,
    read_cifar,
    read_covertype,
    read_mnist,
    read_shuttle,
)
from deepbandits.datasets.sources import Source, Spec, ensure_files, extract_cifar, unlzw_to
from deepbandits.datasets.verify import verified_identities


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


# The canonical content of each file (MANIFEST.md of the shared data folder): SHA-256 of the
# decompressed IDX files for MNIST and of covtype.data for Covertype (their gzip wrappers vary
# between copies), of the files themselves for Shuttle.
_MNIST_CONTENT = {
    "train-images-idx3-ubyte.gz": "ba891046e6505d7aadcbbe25680a0738"
    "ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte.gz": "65a50cbbf4e906d70832878ad85ccda5"
    "333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte.gz": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte.gz": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
_MNIST = {name: Checksum("sha256", digest, of="gzip") for name, digest in _MNIST_CONTENT.items()}
_SHUTTLE = {
    "shuttle.trn": Checksum(
        "sha256", "87b24ee9fb5137e1d417659cf905d84d0e15342bbaa60770f1ae83da1a38200a"
    ),
    "shuttle.tst": Checksum(
        "sha256", "f776934a628d9b94c482cb058a76ddaa63823e0f74aec065813c9dff3b89d661"
    ),
}
_COVTYPE = Checksum(
    "sha256", "0a9371cef7c964b5475d6053cc3e0894a5aa6f65ad1ed3ecb01c45aa96217945", of="gzip"
)
# CIFAR-10 batches: the MD5 of the original files (those in cifar-10-python.tar.gz, the values
# torchvision checks; no SHA-256 of them is published), and the SHA-256 of the batches 1-3 of the
# shared data folder, rebuilt from lossless sprites with placeholder b"filenames" (which the
# reader does not use) and otherwise identical in content.
_CIFAR_ORIGINAL_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
_CIFAR_REBUILT_SHA256 = {
    "data_batch_1": "cd810db010560d1e89f5cb3189b7b61145f8abbede18a4c5b4418cf50a5e74ed",
    "data_batch_2": "6edb87bfeae4162bc379daa571dc80134b2f05c3b8ceece70c412704d51b7ed9",
    "data_batch_3": "16cf3356162c72402ae2b00bc950f07a2a97e5899197784e3d2d4362c428bc1b",
}

#: The canonical files: for each dataset, every file its reader opens and the checksums that file
#: may have (any one of them). A file under one of these names that has none of them is damaged
#: or another version, and is refused (:mod:`~deepbandits.datasets.verify`); replace an entry
#: (tests: ``monkeypatch.setitem(CANONICAL["shuttle"], "shuttle.tst", (checksum,))``) to declare
#: other files canonical.
CANONICAL: dict[str, dict[str, tuple[Checksum, ...]]] = {
    "mnist": {name: (check,) for name, check in _MNIST.items()},
    "shuttle": {name: (check,) for name, check in _SHUTTLE.items()},
    "covertype": {"covtype.data.gz": (_COVTYPE,)},
    "cifar10": {
        name: (
            Checksum("md5", md5),
            *(
                (Checksum("sha256", _CIFAR_REBUILT_SHA256[name]),)
                if name in _CIFAR_REBUILT_SHA256
                else ()
            ),
        )
        for name, md5 in _CIFAR_ORIGINAL_MD5.items()
    },
}

_MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_CIFAR_TAR = Source(
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    Checksum("md5", "c58f30108f718f92721af3b95e74349a"),
    extract_cifar,
    "cifar-10-python.tar.gz",
)

SPECS: dict[str, Spec] = {
    "mnist": Spec(
        "mnist",
        tuple(_MNIST),
        read_mnist,
        {name: Source(_MNIST_URL + name, check) for name, check in _MNIST.items()},
        how_to_get="the four IDX .gz files of yann.lecun.com/exdb/mnist",
    ),
    "shuttle": Spec(
        "shuttle",
        ("shuttle.trn", "shuttle.tst"),
        read_shuttle,
        {
            "shuttle.trn": Source(
                _UCI + "statlog/shuttle/shuttle.trn.Z",
                None,
                unlzw_to("shuttle.trn"),
                "shuttle.trn.Z",
                _SHUTTLE["shuttle.trn"],
            ),
            "shuttle.tst": Source(_UCI + "statlog/shuttle/shuttle.tst", _SHUTTLE["shuttle.tst"]),
        },
        how_to_get="shuttle.trn (UCI ships it compressed as shuttle.trn.Z) and shuttle.tst of "
        "the UCI Statlog (Shuttle) dataset",
    ),
    "covertype": Spec(
        "covertype",
        ("covtype.data.gz",),
        read_covertype,
        {"covtype.data.gz": Source(_UCI + "covtype/covtype.data.gz", _COVTYPE)},
        how_to_get="covtype.data.gz of the UCI Covertype dataset",
    ),
    "cifar10": Spec(
        "cifar10",
        (),
        read_cifar,
        dict.fromkeys(CIFAR_BATCHES, _CIFAR_TAR),
        optional=CIFAR_BATCHES,
        how_to_get="the CIFAR-10 python batches (cifar-10-python.tar.gz of "
        "www.cs.toronto.edu/~kriz/cifar.html, folder cifar-10-batches-py)",
    ),
}


def dataset_names() -> list[str]:
    """The names :func:`load_dataset` reads: ``mnist``, ``shuttle``, ``covertype``, ``cifar10``."""
    return list(SPECS)


# -------------------------------------------------------------------------------- loading
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
        checksum).

    Returns
    -------
    Dataset
        Raw features in a compact dtype and labels mapped to 0..K−1 by the reader (MNIST digits,
        shuttle and covertype classes minus one, CIFAR-10 classes).

    Raises
    ------
    DataNotFoundError
        A file is missing and cannot be downloaded (offline, or ``download=False``); the message
        says which dataset, where it was looked for and how to get it.
    DatasetFileError
        A file is not the canonical one (its checksum is not the published one: damaged or
        another version; checked once per version of the file, remembered in the cache folder),
        or cannot be parsed. Both are :class:`~deepbandits.errors.DataError`.

    A cache of the parsed arrays that is damaged is discarded with a warning and rebuilt.
    """
    check_choice(name, "dataset", SPECS)
    download = check_bool(download, "download")
    spec = SPECS[name]
    folder = ensure_files(name, spec, data_dir, download)
    present = [folder / f for f in (*spec.required, *spec.optional) if (folder / f).is_file()]
    key = cache_key(present, verified_identities(name, present, CANONICAL.get(name, {})))
    candidates = cache_candidates(name, folder, key)
    arrays = read_cache(candidates, key)
    if arrays is None:
        arrays = spec.read(folder, present)
        write_cache(candidates, key, arrays)
    X, y, note = arrays
    if note:
        warnings.warn(f"{name}: {note}", stacklevel=2)
    return Dataset(name, X, y.astype(np.int64), tuple(str(p) for p in present), note)
