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
  process itself with one worker;
* :class:`RayExecutor`: the tasks of a Ray cluster, one CPU (or one GPU for a job with
  ``device="cuda"``) each; Ray is an optional extra (``pip install "deepbandits[ray]"``).

Every job runs with torch's and the BLAS's thread pools pinned to one thread
(:func:`~deepbandits.experiments.runner.pinned_threads`), so parallel jobs do not oversubscribe
the cores and a run's numbers do not depend on the executor or the number of workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from deepbandits._io import worker_pool
from deepbandits._validation import check_choice, check_int
from deepbandits._version import __version__
from deepbandits.envs import Environment, make_env
from deepbandits.errors import InputValueError
from deepbandits.experiments.runner import RunResult, pinned_threads, run
from deepbandits.experiments.specs import parse_spec
from deepbandits.policies import Policy, make_policy

#: Library version that enters every configuration hash (``major.minor``): results of another
#: minor version are not taken for this one's.
HASH_VERSION = ".".join(__version__.split(".")[:2])


@dataclass(frozen=True)
class Job:
    """One run of a sweep: ``policy_spec`` on ``env_spec`` with ``seed`` for ``T`` rounds, with
    hold-out forecasts at ``checkpoints`` (``holdout_size`` rounds), the neural networks on
    ``device`` (``None``: the policy's own default), its files at ``stem`` (``<stem>.json``,
    ``<stem>.csv`` ...)."""

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


def build_policy(spec: str, env: Environment | None, device: str | None = None) -> Policy:
    """The policy of ``spec`` with the environment's recommended settings
    (:func:`~deepbandits.policies.make_policy` with ``env``), its network on ``device`` when
    one is given, the policy has a network and ``spec`` names no device."""
    name, params = parse_spec(spec)
    if device is not None and "device" in make_policy(name).get_params():
        params.setdefault("device", device)
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
        return Failure(job, f"{type(exc).__name__}: {exc}", traceback.format_exc())


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


class LocalExecutor:
    """Jobs in ``workers`` processes on this machine (``None``: one per core,
    :func:`os.cpu_count`); with one worker, or one job, in the calling process, where
    ``progress`` shows a bar over each run's rounds."""

    def __init__(self, workers: int | None = None, *, progress: bool = False) -> None:
        self.workers = check_int(
            (os.cpu_count() or 1) if workers is None else workers, "workers", minimum=1
        )
        self.progress = progress

    @property
    def capacity(self) -> int:
        return self.workers

    def map_unordered(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, RunResult | Failure]]:
        workers = min(self.workers, len(jobs))
        if workers <= 1:
            for job in jobs:
                yield job, attempt(job, self.progress)
            return
        with worker_pool(workers) as pool:
            futures = {pool.submit(attempt, job): job for job in jobs}
            for future in as_completed(futures):
                yield futures[future], future.result()


class RayUnavailableError(InputValueError):
    """The Ray backend was asked for but Ray is not installed."""


class RayExecutor:
    """Jobs as tasks of a Ray cluster: one CPU each, and one GPU for a job with
    ``device="cuda"`` (or ``"cuda:N"``); results stream back to the calling process as they finish.

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

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            options = {} if self.num_cpus is None else {"num_cpus": self.num_cpus}
            ray.init(address=self.address, **options)
        return ray

    @property
    def capacity(self) -> int:
        return max(1, int(self._connect().cluster_resources().get("CPU", 1)))

    def map_unordered(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, RunResult | Failure]]:
        ray = self._connect()
        task = ray.remote(attempt)
        pending = {task.options(num_cpus=1, num_gpus=_gpus(job)).remote(job): job for job in jobs}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                job = pending.pop(ready[0])
                try:
                    outcome = ray.get(ready[0])
                except ray.exceptions.RayError as exc:  # the task's worker or node was lost
                    outcome = Failure(job, f"{type(exc).__name__}: {exc}", traceback.format_exc())
                yield job, outcome
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


def _gpus(job: Job) -> int:
    """GPUs a job asks of Ray: one on a CUDA device."""
    return 1 if str(job.device).startswith("cuda") else 0


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
