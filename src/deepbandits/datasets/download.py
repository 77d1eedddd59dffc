"""Downloads with a progress bar, checked against a published checksum before they are kept."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Checksum:
    """A digest of a file, or of its decompressed content (``of="gzip"``): re-compressed copies of
    a dataset have other bytes but the same content."""

    algorithm: str
    digest: str
    of: str = "file"

    def matches(self, path: Path) -> bool:
        return file_digest(path, self.algorithm, gunzip=self.of == "gzip") == self.digest


def file_digest(path: Path, algorithm: str = "sha256", *, gunzip: bool = False) -> str:
    """Hex digest of a file (of its gzip content with ``gunzip=True``), read in chunks."""
    h = hashlib.new(algorithm)
    opener = gzip.open if gunzip else open
    with opener(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


class DownloadError(OSError):
    """A download failed or gave a file whose checksum is not the published one."""


def fetch(url: str, dest: Path, checksum: Checksum | None, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` through a temporary file; keep it only if ``checksum`` matches.

    Shows a progress bar. Raises :class:`DownloadError` (naming the URL) when the machine is
    offline, the server refuses, or the checksum differs.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name) as bar:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        raise DownloadError(f"could not download {url}: {exc}") from exc
    if checksum is not None and not checksum.matches(part):
        part.unlink()
        raise DownloadError(
            f"{url} was downloaded but its {checksum.algorithm} ({checksum.of}) is not the "
            f"published {checksum.digest}; the file was discarded"
        )
    shutil.move(part, dest)
    return dest
