"""The atomic writer every file goes through, killed and raced by other processes."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import deepbandits
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


# ------------------------------------------------------------------ writers in other processes
SRC = Path(deepbandits.__file__).parent
SIZE = 4 << 20  # bytes per payload: a write takes long enough to be killed in the middle

# A writer process that imports only deepbandits._io (not the package and torch): it writes
# the payloads b"<letter>" * SIZE, one letter after another, ``loops`` times (0: until killed),
# and says "ready" after its first complete write.
WRITER = """
import sys, types
package = types.ModuleType("deepbandits")
package.__path__ = [sys.argv[1]]
sys.modules["deepbandits"] = package
from deepbandits._io import write_atomic
path, letters, size, loops = sys.argv[2], sys.argv[3].encode(), int(sys.argv[4]), int(sys.argv[5])
i = 0
while not loops or i < loops:
    write_atomic(path, letters[i % len(letters) : i % len(letters) + 1] * size)
    if i == 0:
        print("ready", flush=True)
    i += 1
"""


def start_writer(path, letters, loops=0):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(SRC), str(path), letters, str(SIZE), str(loops)],
        stdout=subprocess.PIPE,
        text=True,
    )


def temporaries(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def test_a_writer_killed_mid_write_leaves_the_old_or_a_whole_new_file(tmp_path):
    path = tmp_path / "seed_0.csv"
    write_atomic(path, b"old")
    whole = {b"old", b"a" * SIZE, b"b" * SIZE}
    rng = random.Random(0)
    torn = 0
    for i in range(20):
        writer = start_writer(path, "ab")
        assert writer.stdout.readline() == "ready\n"
        if i % 2:  # at a random moment
            time.sleep(rng.uniform(0, 0.05))
        else:  # as soon as its temporary file is seen: in the middle of a write
            while not any(f".{writer.pid}." in name for name in temporaries(path)):
                pass
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        assert path.read_bytes() in whole
        # the writer removed the temporary files of the writers killed before it
        left = temporaries(path)
        assert len(left) <= 1
        torn += len(left)
    assert torn > 0  # some kills did land in the middle of a write
    write_atomic(path, b"new")  # the next write removes what the last killed writer left
    assert temporaries(path) == [] and path.read_bytes() == b"new"


def test_two_processes_writing_one_path_never_corrupt_it(tmp_path):
    path = tmp_path / "summary.csv"
    write_atomic(path, b"old")
    whole = {b"old"} | {c.encode() * SIZE for c in "abcd"}
    writers = [start_writer(path, "ab", loops=30), start_writer(path, "cd", loops=30)]
    reads = 0
    while any(w.poll() is None for w in writers):
        assert path.read_bytes() in whole
        reads += 1
    assert [w.returncode for w in writers] == [0, 0] and reads > 0
    for w in writers:
        w.stdout.close()
    assert path.read_bytes() in whole
    assert temporaries(path) == []


def test_only_temporary_files_of_dead_writers_are_removed(tmp_path):
    path = tmp_path / "f.json"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f".f.json.{gone.pid}.abcd1234.tmp"
    live = tmp_path / f".f.json.{os.getppid()}.abcd1234.tmp"  # a writer still running
    other = tmp_path / f".f.json.old.{gone.pid}.abcd1234.tmp"  # a temporary of f.json.old
    for p in (dead, live, other):
        p.write_text("partial")
    write_atomic(path, "new")
    assert sorted(os.listdir(tmp_path)) == sorted(["f.json", live.name, other.name])


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_written_files_get_the_permissions_of_an_ordinary_file(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    path = write_atomic(tmp_path / "report.html", "<p>")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0o600
