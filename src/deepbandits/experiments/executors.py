"""Where tasks are computed: the executors of sweeps and of the matched protocol's tunings.

A task is anything with ``execute(progress)`` (:class:`Task`), described by value so that it can
travel to another process: a :class:`~deepbandits.experiments.jobs.Job` (one run, whose result
:func:`~deepbandits.experiments.sweep.run_sweep` writes in the calling process, which may be on
another machine than the one that computes it), or a tuning of the matched protocol.

An :class:`Executor` computes a list of tasks and yields each result as it finishes, in any
order; a task that raises yields a :class:`Failure` (its error, traceback and exception) and the
others go on:

* :class:`LocalExecutor`: worker processes on this machine
  (:func:`~deepbandits._io.new_worker_pool`, whose workers exit when the caller dies), or the
  calling process itself with one worker; a worker that dies (out of memory, a crash) fails the
  tasks it was running beside, and the others go on;
* :class:`RayExecutor`: the tasks of a Ray cluster, one CPU (and one GPU for a job whose
  networks run on ``"cuda"``) each; Ray is an optional extra (``pip install "deepbandits[ray]"``).

A job's ``device`` concerns its policy's networks only
(:func:`~deepbandits.experiments.jobs.applied_device`), and :func:`check_device` refuses, before
any job runs, a device the executor's jobs cannot use.

Every job runs with torch's and the BLAS's thread pools pinned to one thread
(:func:`~deepbandits._threads.pinned_threads`), so parallel jobs do not oversubscribe
the cores and a run's numbers do not depend on the executor or the number of workers.
"""

from __future__ import annotations

import os
import traceback
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import torch

from deepbandits._io import new_worker_pool
from deepbandits._validation import check_choice, check_int
from deepbandits.errors import InputValueError
from deepbandits.experiments.jobs import (
    HASH_VERSION,
    Job,
    applied_device,
    build_env,
    build_policy,
    execute_job,
    hash_identity,
    identity_of,
    job_device,
)
from deepbandits.networks.learner import check_device as check_torch_device
from deepbandits.networks.learner import parse_device


class Task(Protocol):
    """What an executor computes: a picklable description of work whose
    :meth:`execute` returns its result (a :class:`~deepbandits.experiments.jobs.Job`'s: its
    run)."""

    def execute(self, progress: bool = False) -> Any:
        """Compute the task in this process; ``progress`` may show a bar."""
        ...


#: A task type, so that an executor yields back the tasks it was given.
T = TypeVar("T", bound=Task)


@dataclass(frozen=True)
class Failure:
    """A task that raised: the error (``"Type: message"``), its formatted traceback, and the
    exception itself (``None`` where it could not travel back, e.g. from a lost Ray worker)."""

    job: Any
    error: str
    traceback: str
    exception: BaseException | None = None


def attempt(job: Task, progress: bool = False) -> Any:
    """``job.execute(progress)``, with an exception it raises returned as a :class:`Failure`
    (what every executor runs, in whichever process)."""
    try:
        return job.execute(progress)
    except Exception as exc:
        return _failure(job, exc)


def _failure(job: Task, exc: BaseException, why: str = "") -> Failure:
    """The :class:`Failure` of ``job`` for the exception being handled, ``why`` before its
    message."""
    return Failure(job, f"{type(exc).__name__}: {why}{exc}", traceback.format_exc(), exc)


class Executor(Protocol):
    """Computes jobs; see the module documentation."""

    @property
    def capacity(self) -> int:
        """How many jobs run at once (for the progress display)."""
        ...

    def map_unordered(self, jobs: Sequence[T]) -> Iterator[tuple[T, Any]]:
        """Compute every task; yield each with its result or :class:`Failure` as it finishes.
        Leaving the iteration early (Ctrl-C included) cancels the tasks not yet started."""
        ...

    def close(self) -> None:
        """Release what the executor keeps between sweeps (worker processes)."""
        ...


class LocalExecutor:
    """Jobs in ``workers`` processes on this machine (``None``: one per core,
    :func:`os.cpu_count`); with one worker, or one job, in the calling process, where
    ``progress`` shows a bar over each run's rounds.

    Each worker computes one job at a time, and no job waits in a queue: a worker process that
    dies (killed for memory, a crash) breaks the pool, the jobs then running (the one that
    killed it, and those beside it) come back as :class:`Failure`\\ s saying so, and the jobs
    not started go on in a fresh pool. A crash in the calling process (one worker) ends the
    sweep. The worker processes are kept from one :meth:`map_unordered` to the next (a suite
    of short sweeps starts them once) until :meth:`close`; the executor is a context manager.
    """

    def __init__(self, workers: int | None = None, *, progress: bool = False) -> None:
        self.workers = check_int(
            (os.cpu_count() or 1) if workers is None else workers, "workers", minimum=1
        )
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None

    @property
    def capacity(self) -> int:
        return self.workers

    def map_unordered(self, jobs: Sequence[T]) -> Iterator[tuple[T, Any]]:
        if self.workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                yield job, attempt(job, self.progress)
            return
        waiting = deque(jobs)
        try:
            while waiting:
                if self._pool is None:
                    self._pool = new_worker_pool(self.workers)
                broken = yield from _through_pool(self._pool, waiting, self.workers)
                if broken:
                    self.close()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the worker processes (they are started by the first sweep of several jobs and
        kept for the next ones, so that a suite of short sweeps pays their start-up once)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def executor_or_local(executor: Executor | None) -> Iterator[Executor]:
    """``executor``, or (None) a :class:`LocalExecutor` for the block, closed at its end."""
    if executor is not None:
        yield executor
        return
    with LocalExecutor() as own:
        yield own


#: What a :class:`Failure` of a job whose worker process died says.
WORKER_DIED = (
    "the worker process died (killed by the system, e.g. out of memory, or crashed) while "
    "it computed this job or one beside it; "
)


def _through_pool(
    pool: ProcessPoolExecutor, waiting: deque[T], workers: int
) -> Generator[tuple[T, Any], None, bool]:
    """Compute the jobs of ``waiting`` (taken from it as they start) in ``pool``, at most one
    job per worker, until none is left or the pool breaks; the jobs running when it breaks are
    :class:`Failure`\\ s. Returns whether the pool broke."""
    running: dict[Future[Any], T] = {}
    broken = False
    while running or (waiting and not broken):
        try:
            while waiting and not broken and len(running) < workers:
                running[pool.submit(attempt, waiting[0])] = waiting[0]
                waiting.popleft()
        except BrokenProcessPool:
            broken = True  # waiting[0] did not start: it goes to the next pool
        if not running:
            return broken
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            job = running.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool as exc:
                broken = True
                outcome = _failure(job, exc, WORKER_DIED)
            yield job, outcome
    return broken


class RayUnavailableError(InputValueError):
    """The Ray backend was asked for but Ray is not installed."""


class RayExecutor:
    """Jobs as tasks of a Ray cluster: one CPU each, and one GPU for a job whose networks run
    on ``"cuda"`` (:func:`job_device`); results stream back to the calling process as they
    finish.

    Ray picks each task's GPU and makes it the only one the task sees (``CUDA_VISIBLE_DEVICES``),
    where it is ``"cuda"``: an indexed device such as ``"cuda:1"`` would not exist there, and is
    refused (:class:`~deepbandits.errors.InputValueError`) before any job is submitted.

    ``address`` is that of :func:`ray.init`: ``"auto"`` (the cluster this machine belongs
    to), ``"HOST:PORT"``, or ``None``: the ``RAY_ADDRESS`` environment variable, else a new
    local Ray instance with ``num_cpus`` CPUs (``None``: all). Ray is started or connected on
    the first jobs, and not at all if this process already did (:func:`ray.is_initialized`).
    The cluster's nodes need ``deepbandits`` installed (the same version); they need not share
    a file system with this process, which writes every file.

    Raises
    ------
    RayUnavailableError
        When Ray is not installed.
    InputValueError
        For ``num_cpus`` with a cluster to connect to (it sizes a new local instance only).
    """

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise RayUnavailableError(
                'the Ray backend needs Ray: pip install "deepbandits[ray]"'
            ) from exc
        if num_cpus is not None:
            num_cpus = check_int(num_cpus, "num_cpus", minimum=1)
            target = address if address is not None else os.environ.get("RAY_ADDRESS")
            if target not in (None, "", "local"):
                raise InputValueError(
                    f"num_cpus sizes a new local Ray instance, but the cluster at {target!r} "
                    f"is to be used; leave num_cpus out (it is {num_cpus})"
                )
        self.address = address
        self.num_cpus = num_cpus

    @property
    def workers(self) -> int | None:
        """The CPUs of the local Ray instance it starts (``num_cpus``); ``None`` when Ray
        decides (all CPUs of this machine, or a cluster's)."""
        return self.num_cpus

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            options = {} if self.num_cpus is None else {"num_cpus": self.num_cpus}
            ray.init(address=self.address, **options)
        return ray

    @property
    def capacity(self) -> int:
        return max(1, int(self._connect().cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        """Nothing to release: a Ray instance this executor started stays up for the session
        (``ray.shutdown()`` stops it)."""

    def map_unordered(self, jobs: Sequence[T]) -> Iterator[tuple[T, Any]]:
        devices = [job_device(job) if isinstance(job, Job) else None for job in jobs]
        for device in devices:
            if device is not None:
                check_ray_device(device)
        ray = self._connect()
        task = ray.remote(attempt)
        pending = {
            task.options(num_cpus=1, num_gpus=_gpus(device)).remote(job): job
            for job, device in zip(jobs, devices, strict=True)
        }
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                job = pending.pop(ready[0])
                try:
                    outcome = ray.get(ready[0])
                except ray.exceptions.RayError as exc:  # the task's worker or node was lost
                    outcome = _failure(job, exc)
                yield job, outcome
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


def _gpus(device: str | None) -> int:
    """GPUs a job whose networks run on ``device`` (:func:`job_device`) asks of Ray: one on
    CUDA."""
    return 1 if device is not None and torch.device(device).type == "cuda" else 0


def check_ray_device(device: str) -> None:
    """Refuse a ``device`` that Ray tasks cannot use: not a torch device, or an indexed CUDA
    device (see :class:`RayExecutor`)."""
    dev = parse_device(device)
    if dev.type == "cuda" and dev.index is not None:
        raise InputValueError(
            f"device {device!r} names a GPU, but with the Ray backend Ray picks each job's GPU "
            "and the job sees it as the only one; give device 'cuda'"
        )


def check_device(device: str, executor: Executor | None = None) -> None:
    """Refuse a ``device`` that ``executor``'s jobs cannot use, before any job runs: with a
    :class:`RayExecutor`, :func:`check_ray_device` (the GPUs are the cluster's, not this
    machine's); with any other executor or ``None`` (the jobs run on this machine), a device
    that is not ``"cpu"``, ``"cuda"`` or ``"cuda:N"``, CUDA where it is not available, or a GPU
    index past this machine's GPUs.

    Raises
    ------
    InputValueError
        Naming ``device``, what was given and why it cannot be used.
    """
    if isinstance(executor, RayExecutor):
        check_ray_device(device)
        return
    dev = check_torch_device(device)
    count = torch.cuda.device_count()
    if dev.type == "cuda" and dev.index is not None and dev.index >= count:
        raise InputValueError(
            f"device {device!r} was asked for, but this machine has {count} GPU(s) "
            f"(cuda:0 to cuda:{count - 1})"
        )


#: Backends of :func:`make_executor`.
BACKENDS = ("local", "ray")


def make_executor(
    backend: str = "local", *, workers: int | None = None, address: str | None = None
) -> Executor:
    """The executor of ``backend``: ``"local"`` (:class:`LocalExecutor` with ``workers``) or
    ``"ray"`` (:class:`RayExecutor` at ``address``; ``workers`` sizes a new local instance).

    Raises
    ------
    InputValueError
        For an unknown backend, or an ``address`` with the local backend.
    """
    backend = check_choice(backend, "backend", BACKENDS)
    if backend == "ray":
        return RayExecutor(address, num_cpus=workers)
    if address is not None:
        raise InputValueError(
            f"address is for the Ray backend, but backend 'local' is given with {address!r}"
        )
    return LocalExecutor(workers)


__all__ = [
    "BACKENDS",
    "HASH_VERSION",
    "WORKER_DIED",
    "Executor",
    "Failure",
    "Job",
    "LocalExecutor",
    "RayExecutor",
    "RayUnavailableError",
    "Task",
    "applied_device",
    "attempt",
    "build_env",
    "build_policy",
    "check_device",
    "check_ray_device",
    "execute_job",
    "hash_identity",
    "identity_of",
    "job_device",
    "make_executor",
]
