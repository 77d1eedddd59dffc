"""The training process of a server: a child Python process that runs the functions its parent
sends it, one at a time (:class:`TrainingProcess`).

The child is ``python -c "...; main()"``, not a :mod:`multiprocessing` process: a ``spawn``ed
child imports the parent's main script again, which runs a user's script from the top when it
lacks an ``if __name__ == "__main__":`` guard, and a ``fork``ed one inherits torch's thread
pools and the server's threads. Requests and answers are pickles in length-prefixed frames on
the child's stdin and stdout, between two processes of the same program (nothing from outside
is unpickled; the state folder holds no pickles). The child runs torch and BLAS on the parent's
thread count, at a lower scheduling priority (``nice`` +:data:`NICE`), and exits when its
parent is gone, even after ``kill -9``. It ignores SIGINT, from its first line on: a Ctrl-C at
a terminal reaches the whole process group, and the parent owns the shutdown (it ends its
trainings, writes its checkpoint, then closes the child's input), where the child would
otherwise print a ``KeyboardInterrupt`` traceback from whatever line it was on.

A child can hang (a deadlock in a library, a stopped process): a call takes a time limit after
which the child is killed, which ends the call's blocked write or read, and the next call starts
a new one; :meth:`TrainingProcess.close` kills a busy child rather than wait on its pipes.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import torch
from threadpoolctl import threadpool_limits

from deepbandits.errors import InputValueError, ServiceError

#: How much lower the training process's scheduling priority is than the server's.
NICE = 10
#: Seconds between two looks of the training process at whether its parent still runs.
PARENT_CHECK_SECONDS = 1.0
_LENGTH = struct.Struct("<Q")
#: The child's program: SIGINT ignored before anything else (module notes), then :func:`main`.
_CHILD = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "from deepbandits.serve.trainer_process import main; main()"
)


def _write(stream: IO[bytes], data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream: IO[bytes]) -> bytes | None:
    """One frame, or None at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    return data if len(data) == length else None


class TrainingProcess:
    """A child process that runs ``function(*args)`` for its parent (module notes); started at
    the first :meth:`start` or :meth:`call`, and again if it died."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    @property
    def pid(self) -> int | None:
        """The child's process id (None before it starts)."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start the child now, if none runs (its imports take seconds: a service whose policy
        trains starts it when it opens, so that they are not a training's wait)."""
        with self._lock:
            self._running()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            argv = [sys.executable, "-c", _CHILD, str(os.getpid()), str(torch.get_num_threads())]
            self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._process

    def call(self, function: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
        """``function(*args)`` run in the child (a module-level function); what it raised is
        raised here. A child that dies, or that has not answered ``timeout`` seconds after the
        call began (None: no limit), raises :class:`~deepbandits.errors.ServiceError`; a late
        child is killed, and the next call starts a new one."""
        if timeout is not None and not timeout > 0:
            raise InputValueError(f"timeout must be > 0 seconds or None, but {timeout!r} is given")
        with self._lock:
            process = self._running()
            assert process.stdin is not None and process.stdout is not None
            watchdog = _Watchdog(process, timeout)
            try:
                _write(process.stdin, pickle.dumps((function, args), protocol=5))
                frame = _read(process.stdout)
            except OSError:  # a broken pipe: the child died or was killed
                frame = None
            finally:
                late = watchdog.stop()
            if frame is None or late:
                process.kill()
                process.wait()
                self._process = None
                if late:
                    raise ServiceError(
                        f"the training process did not answer within {timeout:g} s: it was "
                        "killed, and the next training starts a new one"
                    )
                raise ServiceError(f"the training process ended (exit status {process.returncode})")
        ok, value = pickle.loads(frame)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """End the child: an idle one exits when its input closes; one that runs a call (or
        hangs in one) is killed, which ends that call with
        :class:`~deepbandits.errors.ServiceError`. Never waits on the child's pipes."""
        if not self._lock.acquire(blocking=False):
            # a call holds the pipes: closing stdin would wait for its writer's buffer lock
            busy = self._process
            if busy is not None:
                busy.kill()
                busy.wait()
            return
        try:
            process, self._process = self._process, None
            if process is not None and process.poll() is None:
                assert process.stdin is not None
                process.stdin.close()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        finally:
            self._lock.release()


class _Watchdog:
    """Kills ``process`` once ``timeout`` seconds pass, unless :meth:`stop` comes first (a
    killed child ends the blocked write or read of the call with a broken pipe or EOF)."""

    def __init__(self, process: subprocess.Popen[bytes], timeout: float | None) -> None:
        self._process = process
        self._lock = threading.Lock()
        self._stopped = self._fired = False
        self._timer = None if timeout is None else threading.Timer(timeout, self._fire)
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._stopped:
                self._fired = True
                self._process.kill()

    def stop(self) -> bool:
        """Disarm; returns whether the child was killed for being late."""
        with self._lock:
            self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        return self._fired


def main() -> None:
    """The child: set up (module notes), then answer frames until the input closes."""
    parent, threads = int(sys.argv[1]), int(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # already, by _CHILD; the parent owns shutdown
    torch.set_num_threads(threads)
    threadpool_limits(limits=threads, user_api="blas")  # for the life of the process
    try:
        os.nice(NICE)
    except (AttributeError, OSError):  # not on this platform: the same priority then
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="deepbandits-parent-watch", daemon=True).start()
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, not into the answers
    while (frame := _read(requests)) is not None:
        function, args = pickle.loads(frame)
        try:
            answer = (True, function(*args))
        except Exception as exc:
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, protocol=5)
        except Exception as exc:  # an answer that does not pickle
            data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        _write(answers, data)
