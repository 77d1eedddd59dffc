"""Downloads with a progress bar, checked against a published checksum before they are kept."""

from __future__ import annotations

import gzip
import hashlib
import io
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tqdm.auto import tqdm

from deepbandits._io import write_atomic
from deepbandits.datasets.formats import GZIP_ERRORS
from deepbandits.errors import DataError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Checksum:
    """A digest of a file, or of its decompressed content (``of="gzip"``): re-compressed copies of
    a dataset have other bytes but the same content."""

    algorithm: str
    digest: str
    of: str = "file"

    def matches(self, source: Path | bytes) -> bool:
        """Whether the file at ``source`` (or the bytes ``source``) has this digest."""
        computed = digests(source, [self.algorithm], gunzip=self.of == "gzip")
        return computed[self.algorithm] == self.digest

    def describe(self) -> str:
        """``"sha256 <hex>"``, or ``"sha256 of the decompressed content <hex>"``."""
        what = self.algorithm + (" of the decompressed content" if self.of == "gzip" else "")
        return f"{what} {self.digest}"


def digests(
    source: Path | bytes, algorithms: Iterable[str], *, gunzip: bool = False
) -> dict[str, str]:
    """Hex digests ``{algorithm: digest}`` of a file (or of bytes), of its gzip content with
    ``gunzip=True``, all computed in one pass over the data.

    Raises one of :data:`~deepbandits.datasets.formats.GZIP_ERRORS` when ``gunzip`` is set and the
    gzip stream is damaged.
    """
    hashes = {name: hashlib.new(name) for name in algorithms}
    with io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb") as raw:
        stream: BinaryIO = gzip.GzipFile(fileobj=raw) if gunzip else raw
        while chunk := stream.read(_CHUNK):
            for h in hashes.values():
                h.update(chunk)
    return {name: h.hexdigest() for name, h in hashes.items()}


class DownloadError(DataError, OSError):
    """A download failed or gave a file whose checksum is not the published one."""


def fetch(url: str, dest: Path, checksum: Checksum | None, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest``; keep it only if ``checksum`` matches.

    Shows a progress bar. The download is held in memory and written with
    :func:`~deepbandits._io.write_atomic` once checked, so ``dest`` is either absent or complete
    and two processes fetching the same file never share a temporary file. Raises
    :class:`DownloadError` (naming the URL) when the machine is offline, the server refuses, or
    the checksum differs.
    """
    chunks: list[bytes] = []
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name) as bar:
                while chunk := response.read(_CHUNK):
                    chunks.append(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DownloadError(f"could not download {url}: {exc}") from exc
    data = b"".join(chunks)
    del chunks  # one copy of a large download in memory, not two
    if checksum is not None:
        try:
            good = checksum.matches(data)
        except GZIP_ERRORS:
            good = False
        if not good:
            raise DownloadError(
                f"{url} was downloaded but its {checksum.algorithm} ({checksum.of}) is not the "
                f"published {checksum.digest}; the file was discarded"
            )
    return write_atomic(dest, data)
