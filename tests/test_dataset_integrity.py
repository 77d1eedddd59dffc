"""Dataset files checked when read: canonical checksums (once per file version), damaged caches
rebuilt, missing datasets reported in one short message. Tiny fixtures, never the real data."""

import gzip
import hashlib
import io
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from deepbandits.datasets import Checksum, DatasetFileError, DownloadError, catalog, fetch, verify
from deepbandits.envs import TableError, TableFileNotFoundError
from deepbandits.errors import DataError, DataNotFoundError, InputTypeError
from test_datasets import make_covertype, make_shuttle


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Caches and verification records go to a temporary folder, never to the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DEEPBANDITS_DATA", raising=False)


def sha256(path: Path) -> Checksum:
    return Checksum("sha256", hashlib.sha256(path.read_bytes()).hexdigest())


def declare_canonical(monkeypatch, dataset: str, folder: Path) -> None:
    """Make the fixture files of ``folder`` the canonical files of ``dataset``."""
    files = {name: (sha256(folder / name),) for name in catalog.CANONICAL[dataset]}
    monkeypatch.setitem(catalog.CANONICAL, dataset, files)


def age(folder: Path) -> None:
    """Date the files of ``folder`` an hour back, as files not modified just now."""
    past = time.time_ns() - 3600 * 10**9
    for path in folder.iterdir():
        os.utime(path, ns=(past, past))


def rewrite(path: Path, text: str) -> None:
    """Replace a file's content as an edit made later would: a later modification time (file
    systems stamp times by the clock tick, so two writes within one tick share it)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def change_one_label(path: Path) -> None:
    """Swap the class of the first row between 1 and 2: same size, still a valid table."""
    lines = path.read_text().splitlines()
    fields = lines[0].split(" ")
    fields[-1] = "2" if fields[-1] == "1" else "1"
    rewrite(path, "\n".join([" ".join(fields), *lines[1:]]) + "\n")


def count_hashing(monkeypatch) -> list[Path]:
    """Record every file verify hashes."""
    hashed: list[Path] = []
    original = verify.digests

    def counting(source, algorithms, **kwargs):
        hashed.append(source)
        return original(source, algorithms, **kwargs)

    monkeypatch.setattr(verify, "digests", counting)
    return hashed


# --------------------------------------------------------------------- canonical checksums
def test_every_file_a_reader_opens_has_a_canonical_checksum():
    for name, spec in catalog.SPECS.items():
        assert set(catalog.CANONICAL[name]) == {*spec.required, *spec.optional}, name
        for checks in catalog.CANONICAL[name].values():
            assert checks and all(len(c.digest) in (32, 64) for c in checks)
    # the downloads are checked against the same checksums as the files read
    assert (
        catalog.SPECS["shuttle"].sources["shuttle.trn"].unpacked_checksum
        == (catalog.CANONICAL["shuttle"]["shuttle.trn"][0])
    )


def test_a_label_changed_in_a_canonical_file_is_refused_by_its_checksum(tmp_path, monkeypatch):
    rows = make_shuttle(tmp_path, np.random.default_rng(0))
    folder = tmp_path / "shuttle"
    age(folder)
    declare_canonical(monkeypatch, "shuttle", folder)
    expected = catalog.CANONICAL["shuttle"]["shuttle.trn"][0].digest
    np.testing.assert_array_equal(catalog.load_dataset("shuttle", tmp_path).y, rows[:, 9] - 1)
    assert verify.records_path("shuttle").is_file()  # verified and remembered
    change_one_label(folder / "shuttle.trn")
    with pytest.raises(DataError) as err:
        catalog.load_dataset("shuttle", tmp_path, download=False)
    assert isinstance(err.value, DatasetFileError) and isinstance(err.value, ValueError)
    text = str(err.value)
    actual = sha256(folder / "shuttle.trn").digest
    assert str(folder / "shuttle.trn") in text and expected in text and actual in text
    assert "Delete it" in text and "DEEPBANDITS_DATA" in text
    # the same file is a user's own data when no checksum is known for it: not refused
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    changed = catalog.load_dataset("shuttle", tmp_path, download=False)
    assert changed.y[0] != rows[0, 9] - 1 and changed.y.size == len(rows)


def test_any_of_several_checksums_is_accepted_and_all_are_named(tmp_path):
    path = tmp_path / "data_batch_1"
    path.write_bytes(b"batch bytes")
    md5 = Checksum("md5", hashlib.md5(b"batch bytes").hexdigest())
    other = Checksum("sha256", "0" * 64)
    assert verify.identify(path, (other, md5), "cifar10") == md5
    path.write_bytes(b"other bytes")
    with pytest.raises(DatasetFileError) as err:
        verify.identify(path, (md5, other), "cifar10")
    text = str(err.value)
    assert f"md5 {md5.digest} or sha256 {'0' * 64}" in text
    assert hashlib.md5(b"other bytes").hexdigest() in text
    assert hashlib.sha256(b"other bytes").hexdigest() in text


def test_gzip_files_are_checked_by_their_content(tmp_path, monkeypatch):
    rows = make_covertype(tmp_path, np.random.default_rng(1))
    path = tmp_path / "covertype" / "covtype.data.gz"
    content = gzip.decompress(path.read_bytes())
    check = Checksum("sha256", hashlib.sha256(content).hexdigest(), of="gzip")
    monkeypatch.setitem(catalog.CANONICAL, "covertype", {"covtype.data.gz": (check,)})
    path.write_bytes(gzip.compress(content, compresslevel=1, mtime=123))  # another wrapper
    assert catalog.load_dataset("covertype", tmp_path).y.tolist() == (rows[:, 54] - 1).tolist()
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(DatasetFileError, match=r"covtype\.data\.gz: damaged: corrupt"):
        catalog.load_dataset("covertype", tmp_path)


def test_files_are_hashed_once_per_version(tmp_path, monkeypatch):
    make_shuttle(tmp_path, np.random.default_rng(2))
    folder = tmp_path / "shuttle"
    age(folder)
    declare_canonical(monkeypatch, "shuttle", folder)
    hashed = count_hashing(monkeypatch)
    catalog.load_dataset("shuttle", tmp_path)
    assert sorted(p.name for p in hashed) == ["shuttle.trn", "shuttle.tst"]
    record = json.loads(verify.records_path("shuttle").read_text())
    entry = record["files"][str(folder / "shuttle.tst")]
    stat = (folder / "shuttle.tst").stat()
    assert entry["size"] == stat.st_size and entry["mtime_ns"] == stat.st_mtime_ns
    assert entry["checksum"]["digest"] == sha256(folder / "shuttle.tst").digest
    hashed.clear()
    catalog.load_dataset("shuttle", tmp_path)
    assert hashed == []  # trusted: same size and modification time
    # a new version of one file (here the canonical one replaced by itself, rewritten later)
    rewrite(folder / "shuttle.tst", (folder / "shuttle.tst").read_text())
    catalog.load_dataset("shuttle", tmp_path)
    assert [p.name for p in hashed] == ["shuttle.tst"]
    hashed.clear()
    # a damaged record is not trusted: everything is verified again
    verify.records_path("shuttle").write_text("{not json")
    catalog.load_dataset("shuttle", tmp_path)
    assert sorted(p.name for p in hashed) == ["shuttle.trn", "shuttle.tst"]


def test_a_file_modified_just_now_is_hashed_again(tmp_path, monkeypatch):
    """Within one clock tick a second edit could keep size and time: not trusted yet."""
    make_shuttle(tmp_path, np.random.default_rng(9))
    declare_canonical(monkeypatch, "shuttle", tmp_path / "shuttle")
    hashed = count_hashing(monkeypatch)
    for _ in range(2):
        catalog.load_dataset("shuttle", tmp_path)
    assert sorted(p.name for p in hashed) == ["shuttle.trn"] * 2 + ["shuttle.tst"] * 2
    assert not verify.records_path("shuttle").exists()


def test_a_record_of_a_non_canonical_file_does_not_vouch_for_it(tmp_path, monkeypatch):
    """A file loaded while no checksum was known is hashed again once one is."""
    make_shuttle(tmp_path, np.random.default_rng(3))
    age(tmp_path / "shuttle")
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    catalog.load_dataset("shuttle", tmp_path)
    assert verify.records_path("shuttle").is_file()
    bad = (Checksum("sha256", "f" * 64),)
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {"shuttle.trn": bad, "shuttle.tst": bad})
    with pytest.raises(DatasetFileError, match="f" * 64):
        catalog.load_dataset("shuttle", tmp_path)


def test_a_changed_source_invalidates_the_cache(tmp_path, monkeypatch):
    make_shuttle(tmp_path, np.random.default_rng(4))
    age(tmp_path / "shuttle")
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    first = catalog.load_dataset("shuttle", tmp_path)
    change_one_label(tmp_path / "shuttle" / "shuttle.trn")
    second = catalog.load_dataset("shuttle", tmp_path)
    assert second.y[0] != first.y[0]
    np.testing.assert_array_equal(second.y[1:], first.y[1:])
    assert len(list((tmp_path / "shuttle").glob("shuttle.*.npz"))) == 1


# -------------------------------------------------------------------------- damaged caches
def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _flip_middle(raw: bytes) -> bytes:
    middle = len(raw) // 2
    return raw[:middle] + bytes([raw[middle] ^ 0xFF]) + raw[middle + 1 :]


def _cache_of(key: str, X: np.ndarray, y: np.ndarray) -> bytes:
    return _npz(X=X, y=y, note=np.str_(""), key=np.str_(key))


#: damage(sound cache bytes, its key) -> damaged bytes
DAMAGES = {
    "truncated": lambda raw, key: raw[: len(raw) // 2],
    "empty": lambda raw, key: b"",
    "garbage": lambda raw, key: np.random.default_rng(0).bytes(len(raw)),
    "byte flipped": lambda raw, key: _flip_middle(raw),
    "other arrays": lambda raw, key: _npz(X=np.zeros((2, 9)), labels=np.zeros(2)),
    "another version": lambda raw, key: _cache_of("x", np.zeros((2, 9)), np.zeros(2, np.int64)),
    "labels not fitting": lambda raw, key: _cache_of(key, np.zeros((2, 9)), np.zeros(3, np.int64)),
    "float labels": lambda raw, key: _cache_of(key, np.zeros((2, 9)), np.zeros(2)),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_cache_is_rebuilt_never_used(tmp_path, monkeypatch, damage):
    rows = make_shuttle(tmp_path, np.random.default_rng(5))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    catalog.load_dataset("shuttle", tmp_path)
    (cache,) = (tmp_path / "shuttle").glob("shuttle.*.npz")
    cache.write_bytes(DAMAGES[damage](cache.read_bytes(), cache.name.split(".")[1]))
    with pytest.warns(UserWarning, match="damaged dataset cache") as caught:
        ds = catalog.load_dataset("shuttle", tmp_path)
    assert str(cache) in str(caught[0].message)
    np.testing.assert_array_equal(ds.X, rows[:, :9])
    np.testing.assert_array_equal(ds.y, rows[:, 9] - 1)
    # the rebuilt cache is sound: used without parsing or warning
    spec = catalog.SPECS["shuttle"]

    def no_parsing(*args):
        raise AssertionError("the sources were parsed again")

    monkeypatch.setitem(
        catalog.SPECS, "shuttle", catalog.Spec(**{**spec.__dict__, "read": no_parsing})
    )
    np.testing.assert_array_equal(catalog.load_dataset("shuttle", tmp_path).y, rows[:, 9] - 1)


def test_a_cache_truncated_anywhere_is_rebuilt(tmp_path, monkeypatch):
    rows = make_shuttle(tmp_path, np.random.default_rng(6))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    catalog.load_dataset("shuttle", tmp_path)
    (cache,) = (tmp_path / "shuttle").glob("shuttle.*.npz")
    sound = cache.read_bytes()
    for cut in range(0, len(sound), max(1, len(sound) // 40)):
        cache.write_bytes(sound[:cut])
        with pytest.warns(UserWarning, match="damaged dataset cache"):
            ds = catalog.load_dataset("shuttle", tmp_path)
        np.testing.assert_array_equal(ds.y, rows[:, 9] - 1)
        assert cache.stat().st_size == len(sound)  # rewritten whole (zip times differ)


def test_a_damaged_cache_in_a_read_only_folder_is_bypassed(tmp_path, monkeypatch):
    rows = make_shuttle(tmp_path, np.random.default_rng(7))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    catalog.load_dataset("shuttle", tmp_path)
    folder = tmp_path / "shuttle"
    (cache,) = folder.glob("shuttle.*.npz")
    cache.write_bytes(b"garbage")
    os.chmod(folder, 0o555)
    try:
        with pytest.warns(UserWarning, match="damaged dataset cache"):
            catalog.load_dataset("shuttle", tmp_path)
        converted = tmp_path / "xdg" / "deepbandits" / "converted" / cache.name
        assert converted.is_file()
        ds = catalog.load_dataset("shuttle", tmp_path)  # the sound copy; no second warning
        np.testing.assert_array_equal(ds.y, rows[:, 9] - 1)
    finally:
        os.chmod(folder, 0o755)


# ---------------------------------------------------------------------- missing datasets
def _offline(monkeypatch):
    def refuse(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.mark.parametrize("where", ["argument", "environment", "default"])
def test_a_missing_dataset_offline_is_one_short_message(tmp_path, monkeypatch, where):
    _offline(monkeypatch)
    data_dir = None
    if where == "argument":
        data_dir, home, origin = tmp_path / "d", tmp_path / "d", "given as data_dir"
    elif where == "environment":
        home, origin = tmp_path / "env", "from DEEPBANDITS_DATA"
        monkeypatch.setenv("DEEPBANDITS_DATA", str(home))
    else:
        home, origin = tmp_path / "xdg" / "deepbandits" / "data", "neither data_dir nor"
    with pytest.raises(DataNotFoundError) as err:
        catalog.load_dataset("mnist", data_dir)
    exc = err.value
    assert isinstance(exc, FileNotFoundError) and isinstance(exc, DataError)
    text = str(exc)
    assert "dataset 'mnist'" in text and str(home / "mnist") in text and origin in text
    assert "train-images-idx3-ubyte.gz" in text and "download failed" in text
    assert "DEEPBANDITS_DATA" in text and "data_dir=" in text and "yann.lecun.com" in text
    assert exc.__cause__ is None and exc.__suppress_context__  # no chained traceback
    assert len(text) < 1000
    assert not [p for p in home.rglob("*") if p.is_file()]  # nothing half-downloaded left


def test_a_failed_download_leaves_no_file(tmp_path):
    with pytest.raises(DownloadError):
        fetch((tmp_path / "absent").as_uri(), tmp_path / "out" / "f", None)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


# ---------------------------------------------------------------------- reader arguments
def test_reader_arguments_and_label_ranges_are_checked(tmp_path, monkeypatch):
    with pytest.raises(InputTypeError, match="data_dir must be a path"):
        catalog.load_dataset("shuttle", 3)
    with pytest.raises(InputTypeError, match="download must be True or False"):
        catalog.load_dataset("shuttle", tmp_path, download="no")
    make_shuttle(tmp_path, np.random.default_rng(8))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})
    path = tmp_path / "shuttle" / "shuttle.tst"
    path.write_text(path.read_text() + "1 2 3 4 5 6 7 8 9 11\n")  # 11 classes
    with pytest.raises(DatasetFileError, match=r"shuttle\.tst: classes outside 1\.\.7 \(1\.\.11\)"):
        catalog.load_dataset("shuttle", tmp_path)


def test_file_errors_are_data_errors():
    assert issubclass(DatasetFileError, DataError)
    assert issubclass(DownloadError, DataError) and issubclass(DownloadError, OSError)
    assert issubclass(TableError, DataError)
    assert issubclass(TableFileNotFoundError, DataNotFoundError)
    missing = TableFileNotFoundError(2, "table file not found", "/x/absent.csv")
    assert str(missing) == "[Errno 2] table file not found: '/x/absent.csv'"
    assert missing.filename == "/x/absent.csv" and isinstance(missing, TableError)
