"""Where a sweep's runs are computed: jobs, and the executors that compute them.

A :class:`Job` is one run (policy × environment × seed × T ...) described by value, with a
content hash of its configuration (:attr:`Job.config_hash`). :func:`execute_job` computes it
and returns the :class:`~deepbandits.experiments.runner.RunResult` without writing anything, so
the process that writes the results (:func:`~deepbandits.experiments.sweep.run_sweep`) may be on
another machine than the one that computes them.

An :class:`Executor` computes a list of jobs and yields each result as it finishes, in any
order; a job that raises yields a :class:`Failure` (its error and traceback) and the others go
on:

* :class:`LocalExecutor`: worker processes on this machine
  (:func:`~deepbandits._io.worker_pool`, whose workers exit when the sweep dies), or the calling
  process itself with one worker; a worker that dies (out of memory, a crash) fails the jobs it
  was running beside, and the others go on;
* :class:`RayExecutor`: the tasks of a Ray cluster, one CPU (and one GPU for a job whose
  networks run on ``"cuda"``) each; Ray is an optional extra (``pip install "deepbandits[ray]"``).

A job's ``device`` concerns its policy's networks only: :func:`applied_device` is what a sweep's
device gives a policy (nothing to one without a network), and :func:`check_device` refuses, before
any job runs, a device the executor's jobs cannot use.

Every job runs with torch's and the BLAS's thread pools pinned to one thread
(:func:`~deepbandits.experiments.runner.pinned_threads`), so parallel jobs do not oversubscribe
the cores and a run's numbers do not depend on the executor or the number of workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from deepbandits._io import new_worker_pool
from deepbandits._validation import check_choice, check_int
from deepbandits._version import __version__
from deepbandits.envs import Environment, make_env
from deepbandits.errors import InputValueError
from deepbandits.experiments.runner import RunResult, pinned_threads, run
from deepbandits.experiments.specs import parse_spec
from deepbandits.networks.learner import check_device as check_torch_device
from deepbandits.networks.learner import parse_device
from deepbandits.policies import Policy, make_policy

#: Library version that enters every configuration hash (``major.minor``): results of another
#: minor version are not taken for this one's.
HASH_VERSION = ".".join(__version__.split(".")[:2])


@dataclass(frozen=True)
class Job:
    """One run of a sweep: ``policy_spec`` on ``env_spec`` with ``seed`` for ``T`` rounds, with
    hold-out forecasts at ``checkpoints`` (``holdout_size`` rounds), the neural networks on
    ``device`` (``None``: the policy's own default), its files at ``stem`` (``<stem>.json``,
    ``<stem>.csv`` ...).

    ``device`` enters the configuration hash as it is given: a sweep gives it only to the jobs
    it applies to (:func:`applied_device`), so that a policy without a network has the same
    hash on every device."""

    policy_spec: str
    env_spec: str
    seed: int
    T: int
    stem: Path
    checkpoints: tuple[int, ...] = ()
    holdout_size: int = 500
    device: str | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """What the run's results depend on: every field but ``stem`` (``holdout_size`` only
        with checkpoints), and the library's ``major.minor`` version."""
        return {
            "policy": self.policy_spec,
            "env": self.env_spec,
            "seed": self.seed,
            "T": self.T,
            "checkpoints": list(self.checkpoints),
            "holdout_size": self.holdout_size if self.checkpoints else None,
            "device": self.device,
            "version": HASH_VERSION,
        }

    @property
    def config_hash(self) -> str:
        """The first 16 hexadecimal digits of the SHA-256 of :attr:`identity` as canonical
        JSON: two jobs with the same hash compute the same run."""
        return hash_identity(self.identity)


def hash_identity(identity: dict[str, Any]) -> str:
    """:attr:`Job.config_hash` of an :attr:`Job.identity`."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def identity_of(config: dict[str, Any]) -> dict[str, Any]:
    """The :attr:`Job.identity` a saved run's configuration records (``"job"``), or, for a run
    saved before identities were recorded, the one rebuilt from its specifications, seed, T,
    checkpoints, hold-out size and version (its device: the policy's default)."""
    recorded = config.get("job")
    if isinstance(recorded, dict):
        return recorded
    return {
        "policy": _spec(config, "policy"),
        "env": _spec(config, "env"),
        "seed": config.get("seed"),
        "T": config.get("T"),
        "checkpoints": list(config.get("checkpoints") or ()),
        "holdout_size": config.get("holdout_size"),
        "device": None,
        "version": ".".join(str(config.get("version", "")).split(".")[:2]),
    }


def _spec(config: dict[str, Any], part: str) -> Any:
    section = config.get(part)
    return section.get("spec") if isinstance(section, dict) else None


@dataclass(frozen=True)
class Failure:
    """A job that raised: the error (``"Type: message"``) and its formatted traceback."""

    job: Job
    error: str
    traceback: str


def applied_device(spec: str, device: str | None) -> str | None:
    """What ``device`` (a sweep's device, e.g. ``"cuda"``) gives the policy of ``spec``:
    ``device`` when the policy has a network (a ``device`` parameter) and ``spec`` names no
    device of its own, else ``None``."""
    if device is None:
        return None
    name, params = parse_spec(spec)
    return device if "device" not in params and "device" in make_policy(name).get_params() else None


def job_device(job: Job) -> str | None:
    """Where ``job``'s networks run: the device its policy specification names, else
    :func:`applied_device` of the job's device (``None``: no network, or the policy's default
    device, the CPU)."""
    own = parse_spec(job.policy_spec)[1].get("device")
    return str(own) if own is not None else applied_device(job.policy_spec, job.device)


def build_policy(spec: str, env: Environment | None, device: str | None = None) -> Policy:
    """The policy of ``spec`` with the environment's recommended settings
    (:func:`~deepbandits.policies.make_policy` with ``env``), its network on ``device`` when
    one is given, the policy has a network and ``spec`` names no device
    (:func:`applied_device`)."""
    name, params = parse_spec(spec)
    applied = applied_device(spec, device)
    if applied is not None:
        params["device"] = applied
    return make_policy(name, env=env, **params)


def execute_job(job: Job, progress: bool = False) -> RunResult:
    """Compute ``job``'s run and return it, its configuration completed with the job's
    specifications, :attr:`~Job.identity` (``"job"``) and ``"config_hash"``; no file is
    written. Torch's and the BLAS's threads are pinned to one for the whole job; ``progress``
    shows a bar over its rounds."""
    with pinned_threads(1):
        env_name, env_params = parse_spec(job.env_spec)
        env_params.setdefault("horizon", job.T)
        env = make_env(env_name, **env_params)
        result = run(
            build_policy(job.policy_spec, env, job.device),
            env,
            job.T,
            seed=job.seed,
            progress=progress,
            checkpoints=job.checkpoints,
            holdout_size=job.holdout_size,
            threads=None,
        )
    result.config["policy"]["spec"] = job.policy_spec
    result.config["env"]["spec"] = job.env_spec
    result.config["job"] = job.identity
    result.config["config_hash"] = job.config_hash
    return result


def attempt(job: Job, progress: bool = False) -> RunResult | Failure:
    """:func:`execute_job`, with an exception it raises returned as a :class:`Failure` (the
    task every executor runs, in whichever process)."""
    try:
        return execute_job(job, progress)
    except Exception as exc:
        return _failure(job, exc)


def _failure(job: Job, exc: BaseException, why: str = "") -> Failure:
    """The :class:`Failure` of ``job`` for the exception being handled, ``why`` before its
    message."""
    return Failure(job, f"{type(exc).__name__}: {why}{exc}", traceback.format_exc())


class Executor(Protocol):
    """Computes jobs; see the module documentation."""

    @property
    def capacity(self) -> int:
        """How many jobs run at once (for the progress display)."""
        ...

    def map_unordered(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, RunResult | Failure]]:
        """Compute every job; yield each with its result or :class:`Failure` as it finishes.
        Leaving the iteration early (Ctrl-C included) cancels the jobs not yet started."""
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

    def map_unordered(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, RunResult | Failure]]:
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


#: What a :class:`Failure` of a job whose worker process died says.
WORKER_DIED = (
    "the worker process died (killed by the system, e.g. out of memory, or crashed) while "
    "it computed this job or one beside it; "
)


def _through_pool(
    pool: ProcessPoolExecutor, waiting: deque[Job], workers: int
) -> Generator[tuple[Job, RunResult | Failure], None, bool]:
    """Compute the jobs of ``waiting`` (taken from it as they start) in ``pool``, at most one
    job per worker, until none is left or the pool breaks; the jobs running when it breaks are
    :class:`Failure`\\ s. Returns whether the pool broke."""
    running: dict[Future[RunResult | Failure], Job] = {}
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

    def map_unordered(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, RunResult | Failure]]:
        devices = [job_device(job) for job in jobs]
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
