"""The frictions of the command line that issue 49 §3 names beside those of ``ope``
(``test_ope_frictions.py``), each pinned by a test that failed before its fix: a refused command
leaves no output folder and no lock file behind (§3.7)."""

from __future__ import annotations

import pytest

from deepbandits._io import LOCK_NAME, folder_lock
from deepbandits.cli import main
from deepbandits.errors import InputValueError

#: Commands refused after their output folder is checked (``--out`` is added to each).
REFUSED = {
    "run, a bad parameter": ["run", "--policy", "linucb:alpha=x", "--T", "5"],
    "compare, an unknown policy": ["compare", "--policy", "nosuch", "--T", "5"],
    "compare, a bad environment": ["compare", "--policy", "linucb", "--env", "h1:d=-1"],
    "tune, an unknown search name": ["tune", "--policy", "linucb", "--search", "bogus"],
    "reproduce, an unknown environment": ["reproduce", "matched", "--quick", "--envs", "nosuch"],
    "ope, a missing log": ["ope", "--log", "nosuch.csv", "--policy", "linucb"],
}


@pytest.mark.parametrize("argv", REFUSED.values(), ids=REFUSED.keys())
def test_a_refused_command_leaves_nothing_behind(argv, tmp_path, capsys):
    out = tmp_path / "new" / "out"
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    assert "deepbandits: error: " in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"  # a folder of the user's own stays, and stays empty
    empty.mkdir()
    assert main([*argv, "--out", str(empty), "--no-progress"]) == 2
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_a_refused_service_leaves_no_state_folder(tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["serve", "--policy", "nosuch", "--state", str(state), "--port", "0"]) == 2
    assert "unknown policy 'nosuch'" in capsys.readouterr().err
    assert not state.exists()


def test_a_lock_left_with_nothing_else_is_removed_with_the_folders_it_made(tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(InputValueError), folder_lock(out):
        assert (out / LOCK_NAME).exists()
        raise InputValueError("refused")
    assert not (tmp_path / "a").exists()
    with folder_lock(out):
        (out / "result.csv").write_text("x\n")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME, "result.csv"]
    with folder_lock(out), folder_lock(out):  # nested: the outer block decides
        pass
    assert (out / LOCK_NAME).exists()


def test_a_lock_file_removed_by_its_holder_is_not_taken(tmp_path, monkeypatch):
    """A process that opened the lock file just before its holder removed it (the folder held
    nothing else) takes the lock of the file now at that path, not of the removed one."""
    import deepbandits._io as io

    out = tmp_path / "out"
    real_open = io._open_lock
    opened = []

    def open_then_removed(folder):
        fd = real_open(folder)
        if not opened:  # the holder leaves at once, removing the file just opened
            (folder / LOCK_NAME).unlink()
        opened.append(fd)
        return fd

    monkeypatch.setattr(io, "_open_lock", open_then_removed)
    with folder_lock(out):
        (out / "result.csv").write_text("x\n")
        assert len(opened) == 2
        assert (out / LOCK_NAME).read_text().strip().isdigit()
