"""The atomic writer every file goes through."""

import os

import pytest

from deepbandits._io import write_atomic


def test_write_atomic_replaces_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "sub" / "f.json"
    write_atomic(path, "old")
    write_atomic(path, b"new")
    assert path.read_text() == "new"
    assert sorted(os.listdir(path.parent)) == ["f.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "f.csv"
    write_atomic(path, "kept")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "lost")
    assert path.read_text() == "kept"
    assert sorted(os.listdir(tmp_path)) == ["f.csv"]
