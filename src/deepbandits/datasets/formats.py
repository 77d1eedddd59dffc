"""Readers of the canonical dataset files: IDX (MNIST), CIFAR-10 python batches, UCI text tables.

Every reader parses the whole file with vectorised numpy/pandas calls and checks its structure
(headers, sizes, column and row counts, label ranges); a truncated or corrupt file raises
:class:`DatasetFileError` naming the file, never a half-loaded array.
"""

from __future__ import annotations

import gzip
import io
import pickle
import zlib
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deepbandits.errors import DataError

#: What a damaged gzip stream raises while it is read (bad header, truncated, corrupt data).
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


class DatasetFileError(DataError):
    """A dataset file is truncated, corrupt, not in the expected format, or not the canonical
    file its name promises (checksum)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


def read_bytes(path: Path, *, gunzip: bool = False) -> bytes:
    """The bytes of ``path`` (decompressed with ``gunzip``), with gzip damage reported by name."""
    try:
        if gunzip:
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except GZIP_ERRORS as exc:
        raise DatasetFileError(path, f"corrupt or truncated gzip stream ({exc})") from exc


# ---------------------------------------------------------------------------------------- IDX
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: Path) -> NDArray[Any]:
    """An IDX file (``.gz`` or not): magic ``00 00 TT NN``, NN big-endian uint32 sizes, data."""
    raw = read_bytes(path, gunzip=path.suffix == ".gz")
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise DatasetFileError(path, f"not an IDX file (magic bytes {raw[:4].hex() or 'none'})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise DatasetFileError(path, f"IDX header truncated ({len(raw)} bytes)")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(raw) != expected:
        raise DatasetFileError(
            path,
            f"IDX data of shape {shape} needs {expected} bytes, the file has {len(raw)} "
            f"({'truncated' if len(raw) < expected else 'trailing bytes'})",
        )
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


# ----------------------------------------------------------------------------------- CIFAR-10
class _DtypeStub:
    """Stands in for ``numpy.dtype`` while unpickling: records the type code only."""

    def __init__(self, code: Any, align: Any = False, copy: Any = False) -> None:
        self.code = code

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _ArrayStub:
    """Stands in for ``numpy.ndarray``: keeps shape, dtype stub and raw bytes, runs nothing."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


def _reconstruct_stub(cls: Any, shape: Any, dtype_code: Any) -> _ArrayStub:
    if cls is not _ArrayStub:
        raise pickle.UnpicklingError("array reconstruction of an unexpected class")
    return _ArrayStub()


def _latin1_encode(text: Any, encoding: Any = "latin1") -> bytes:
    """Python 3 pickles bytes at protocol 2 as ``_codecs.encode(str, "latin1")``; this accepts
    exactly that and nothing else."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode used for something other than bytes")
    return text.encode("latin-1")


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler for CIFAR-10 batches: builtin containers, bytes and numbers only.

    The pixel array of a batch is pickled through ``numpy.core.multiarray._reconstruct``; those
    three globals (``_reconstruct``, ``ndarray``, ``dtype``) are replaced by inert stubs that only
    record their arguments, and :func:`stub_to_array` turns the recorded bytes into a ``uint8``
    array; ``_codecs.encode``, with which Python 3 writes bytes at protocol 2, is admitted for
    latin-1 strings only. Any other global — ``os.system``, ``builtins.eval``, … — is refused,
    so a malicious file cannot run code.
    """

    _STUBS: ClassVar[dict[tuple[str, str], Any]] = {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct_stub,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct_stub,
        ("numpy", "ndarray"): _ArrayStub,
        ("numpy", "dtype"): _DtypeStub,
        ("_codecs", "encode"): _latin1_encode,
    }

    def find_class(self, module: str, name: str) -> Any:
        stub = self._STUBS.get((module, name))
        if stub is None:
            raise pickle.UnpicklingError(f"forbidden global {module}.{name} in a data file")
        return stub


def stub_to_array(stub: Any, path: Path) -> NDArray[np.uint8]:
    """The ``uint8`` array an :class:`_ArrayStub` recorded (shape and byte count checked)."""
    if not isinstance(stub, _ArrayStub) or not hasattr(stub, "state"):
        raise DatasetFileError(path, "the 'data' entry is not a pickled numpy array")
    try:
        _, shape, dtype, _, raw = stub.state
    except (TypeError, ValueError) as exc:
        raise DatasetFileError(path, "the 'data' array has an unexpected pickle state") from exc
    if not isinstance(dtype, _DtypeStub) or dtype.code not in ("u1", b"u1"):
        raise DatasetFileError(path, "the 'data' array is not uint8")
    shape = tuple(int(s) for s in shape)
    if not isinstance(raw, bytes | bytearray) or len(raw) != int(np.prod(shape)):
        raise DatasetFileError(path, f"the 'data' array of shape {shape} has the wrong byte count")
    return np.frombuffer(raw, np.uint8).reshape(shape).copy()


def read_cifar_batch(path: Path) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """One CIFAR-10 python batch: ``data`` ``[n, 3072]`` uint8 and ``labels`` ``[n]`` in 0..9."""
    try:
        batch = RestrictedUnpickler(io.BytesIO(read_bytes(path)), encoding="bytes").load()
    except pickle.UnpicklingError as exc:
        raise DatasetFileError(path, f"refused or corrupt pickle: {exc}") from exc
    except (EOFError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise DatasetFileError(path, f"corrupt or truncated pickle ({exc!r})") from exc
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise DatasetFileError(path, "not a CIFAR-10 batch (no b'data' and b'labels' entries)")
    data = stub_to_array(batch[b"data"], path)
    labels = np.asarray(batch[b"labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or labels.shape != (data.shape[0],):
        raise DatasetFileError(
            path, f"expected data [n, 3072] and n labels, got {data.shape} and {labels.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetFileError(path, f"labels outside 0..9 ({labels.min()}..{labels.max()})")
    return data, labels


# ------------------------------------------------------------------------------ UCI tables
def read_int_table(path: Path, n_columns: int, *, sep: str) -> NDArray[np.int64]:
    """A headerless table of integers (``.gz`` decompressed) with exactly ``n_columns`` columns."""
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            header=None,
            dtype=np.int64,
            compression="gzip" if path.suffix == ".gz" else None,
        )
    except GZIP_ERRORS as exc:
        raise DatasetFileError(path, f"corrupt or truncated gzip stream ({exc})") from exc
    except (ValueError, pd.errors.ParserError) as exc:
        raise DatasetFileError(path, f"not a table of {n_columns} integers ({exc})") from exc
    if frame.shape[1] != n_columns or frame.isna().any().any():
        raise DatasetFileError(
            path, f"expected {n_columns} integer columns per row, found {frame.shape[1]}"
        )
    return frame.to_numpy()
