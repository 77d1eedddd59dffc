"""Files and processes that concurrent and killed sweeps cannot damage.

* :func:`write_atomic` is the one way the library writes a file. It writes a uniquely named
  temporary file ``.<name>.<pid>.<random>.tmp`` in the destination's folder, flushes and fsyncs
  it, renames it over the destination (:func:`os.replace`, atomic on POSIX and Windows) and
  fsyncs the folder, so a reader (or a run resumed after a kill) sees the old file or the new
  one, never half of one, and two processes writing one path never share a temporary file. A
  writer killed mid-write leaves its temporary file behind; the next successful write to the
  same path removes the temporary files of that path whose writing process no longer exists
  (POSIX; a process is identified by its PID, so writers of one path must share a PID namespace).
* :func:`folder_lock` gives one process at a time an output folder: a second sweep into the
  folder fails at once with :class:`~deepbandits.errors.ConcurrentUseError` naming the folder and
  the PID that holds it. The lock is an ``fcntl.flock`` on ``<folder>/.deepbandits.lock``, so the
  operating system releases it when the holder exits, however it exits (SIGKILL included). A
  block that leaves nothing in the folder but the lock (a command refused after taking it)
  removes the lock file and the folders it created.
* :func:`worker_pool` is the one way the library starts worker processes: a ``spawn``
  :class:`~concurrent.futures.ProcessPoolExecutor` whose workers exit within
  :data:`PARENT_POLL_SECONDS` once the process that started them is gone, so a sweep killed
  with SIGKILL leaves no orphan computing (and writing) on.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from deepbandits.errors import ConcurrentUseError, InputValueError

try:
    import fcntl
except ImportError:  # Windows: folders are not locked
    fcntl = None  # type: ignore[assignment]

#: Name of the lock file :func:`folder_lock` keeps in a folder.
LOCK_NAME = ".deepbandits.lock"
#: Seconds between a worker's checks that the process that started it is alive.
PARENT_POLL_SECONDS = 1.0

#: Folders this process has locked, with how many nested :func:`folder_lock` hold each.
_held: dict[Path, int] = {}
#: The process's umask (read once: reading it means setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; returns the path.

    The folder is created if missing. On any error the temporary file is removed and the
    destination is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent
    )
    try:
        if os.name == "posix":  # the permissions of a file made by open(), not mkstemp's 0600
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if os.name == "posix":
        _fsync_folder(path.parent)
        _remove_orphans(path)
    return path


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (POSIX: signal 0 probes without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _remove_orphans(path: Path) -> None:
    """Remove the temporary files of ``path`` left by writers that no longer exist."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"(\d+)\.[a-z0-9_]+\.tmp")
    for entry in os.scandir(path.parent):
        match = pattern.fullmatch(entry.name)
        if match and int(match[1]) != os.getpid() and not _alive(int(match[1])):
            Path(entry.path).unlink(missing_ok=True)


def missing_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """``folder`` and those of its ancestors that do not exist, deepest first: the folders that
    ``folder.mkdir(parents=True)`` would create."""
    missing: list[Path] = []
    for path in (Path(folder), *Path(folder).parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    return missing


def remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first, as :func:`missing_folders` lists them) while they are
    empty; the first that is not (or cannot be removed) stops it."""
    for path in folders:
        try:
            path.rmdir()
        except OSError:
            return


def _open_lock(folder: Path) -> int:
    """Create ``folder`` if missing and open its lock file; a folder that cannot be created or
    written is refused with :class:`~deepbandits.errors.InputValueError`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputValueError(
            f"cannot use {folder} as an output folder: {exc.strerror or exc}"
        ) from exc


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the file open as ``fd`` (a lock file removed by a holder that
    left nothing else in its folder is not)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _lock(folder: Path) -> int:
    """Open ``folder``'s lock file and take its lock; the open file. Another holder is refused
    with :class:`~deepbandits.errors.ConcurrentUseError`."""
    while True:
        fd = _open_lock(folder)
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.lseek(fd, 0, os.SEEK_SET)
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise ConcurrentUseError(
                f"the output folder {folder} is in use by another deepbandits process "
                f"(PID {holder}); wait until it ends, or write to another folder"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, folder / LOCK_NAME):
            return fd
        os.close(fd)  # locked a file its holder removed on leaving: take the new one


def _only_lock(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but its lock file."""
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries] == [LOCK_NAME]
    except OSError:
        return False


@contextmanager
def folder_lock(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``folder`` (created if missing) for this process for the duration of the block.

    Nested calls on one folder in one process share the lock (``reproduce`` runs ``compare``
    into its own folder). The lock file stays in the folder, holding the PID of the process
    that holds it (empty when free); it is never replaced, since a lock belongs to one file.
    A block that leaves nothing in the folder but the lock file (a command refused before it
    wrote anything) removes the lock file, and the folder and its parents where the block
    created them, so a refused command leaves nothing behind.

    Raises
    ------
    ConcurrentUseError
        When another process holds the folder.
    InputValueError
        When the folder cannot be created or written.
    """
    folder = Path(folder)
    key = folder.resolve()
    if key in _held:
        _held[key] += 1
        try:
            yield folder
        finally:
            _held[key] -= 1
        return
    created = missing_folders(folder)
    fd = _lock(folder)
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        _held[key] = 1
        try:
            yield folder
        finally:
            del _held[key]
            os.ftruncate(fd, 0)
            if _only_lock(folder):  # removed while still held: no one else saw it empty
                (folder / LOCK_NAME).unlink(missing_ok=True)
                remove_empty(created)
    finally:
        os.close(fd)  # releases the lock


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: end this process once ``parent`` is no longer its parent (it died
    and the worker was re-parented), checked every :data:`PARENT_POLL_SECONDS` by a daemon
    thread, which needs no cooperation from the task the worker is running."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="deepbandits-parent-watch", daemon=True).start()


def new_worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A ``spawn`` process pool of ``jobs`` workers (no forked torch thread pools) that exit
    when this process dies."""
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with_parent,
        initargs=(os.getpid(),),
    )


@contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """:func:`new_worker_pool` for the block. Leaving the block waits for the workers; an
    exception in the block first cancels the tasks that have not started."""
    pool = new_worker_pool(jobs)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
