"""Resumable sweeps: compute the jobs that are not finished on disk and write each as it ends.

:func:`run_sweep` takes a list of :class:`~deepbandits.experiments.executors.Job`\\ s, skips
those whose run is finished at their ``stem`` with the same configuration hash, has an
executor compute the others, and writes each result in the calling process as soon as it
arrives (:meth:`~deepbandits.experiments.runner.RunResult.save`: records, hold-out forecasts,
then the JSON with the job's identity and ``config_hash``). So the workers (on this machine or
on a Ray cluster) need no access to the results folder, and a crash or Ctrl-C loses only the
jobs in flight: running the sweep again computes only what is missing.

* A finished run with another configuration at a job's stem is refused (nothing is run or
  overwritten) unless ``force``; ``force`` recomputes every job. So is one whose specifications
  now resolve to other policy or environment parameters (:func:`check_resolved`).
* A finished run in the other format (CSV or Parquet) is not computed again but saved again in
  the sweep's format (its files of the other format removed), so that after a sweep every run
  is in its format.
* Files that are not a finished run (missing, truncated, damaged) are computed again, with a
  warning.
* A job that raises is recorded in ``<stem>.failed.json`` (configuration hash, job, error,
  traceback) and the sweep goes on; a later sweep that computes that run, or finds it
  finished, removes the file.

:func:`run_sweep` does not lock folders: a caller writing into a folder holds
:func:`~deepbandits._io.folder_lock` on it, as :func:`~deepbandits.experiments.compare` does.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from deepbandits._io import write_atomic
from deepbandits._validation import check_choice
from deepbandits.errors import DataError, InputTypeError, InputValueError, JobFailedError
from deepbandits.experiments.executors import Executor, Failure, LocalExecutor
from deepbandits.experiments.jobs import Job, build_env, hash_identity, identity_of
from deepbandits.experiments.storage import (
    FORMATS,
    RunResult,
    UnfinishedRunError,
    load_finished,
    run_files,
    saved_format,
)
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the jobs computed and written (``done``, in the order they
    finished), those already finished on disk (``skipped``, some saved again in the sweep's
    format) and those that raised (``failed``)."""

    done: list[Job] = field(default_factory=list)
    skipped: list[Job] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)


class SweepFailedError(JobFailedError):
    """Jobs of a sweep raised (raised by a caller of :func:`run_sweep`, such as
    :func:`~deepbandits.experiments.compare`, once it has written what it makes of the runs
    that finished): :attr:`failures` holds each, each recorded in its ``<stem>.failed.json``."""

    def __init__(self, failures: Sequence[Failure]) -> None:
        self.failures = list(failures)
        lines = [
            f"  {f.job.policy_spec} seed {f.job.seed}: {f.error} (see {failed_path(f.job.stem)})"
            for f in self.failures
        ]
        super().__init__(
            f"{len(lines)} run(s) failed; the others are written, and running the sweep again "
            "runs only the failed ones:\n" + "\n".join(lines)
        )


def failed_path(stem: str | Path) -> Path:
    """Where a failed job at ``stem`` is recorded: ``<stem>.failed.json``."""
    stem = Path(stem)
    return stem.with_name(stem.name + ".failed.json")


def is_run(json_path: Path) -> bool:
    """Whether ``json_path`` belongs to a run rather than to a failure record or a hold-out
    table: a table of records beside it, and the JSON either unreadable (a damaged run) or a
    run's configuration (it has ``final_regret``)."""
    stem = json_path.with_name(json_path.name.removesuffix(".json"))
    if not any(path.exists() for path in run_files(stem)[1:]):
        return False
    try:
        config = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    return isinstance(config, dict) and "final_regret" in config


def finished_run(job: Job, envs: dict[Any, Any] | None = None) -> RunResult | None:
    """``job``'s run if it is finished on disk with ``job``'s configuration hash, else
    ``None``.

    No file of the run: not finished. Files that are not a finished run
    (:func:`~deepbandits.experiments.runner.load_finished`: one missing, truncated, damaged or
    left by another run) are not finished either, and a warning says that it runs again. A run
    saved before configuration hashes were recorded is compared by the identity its JSON
    records (:func:`~deepbandits.experiments.executors.identity_of`).

    Raises
    ------
    InputValueError
        When the finished run was made with another configuration (policy, environment,
        seed, T, checkpoints, hold-out size, device or library version), or when its
        specifications now resolve to other policy or environment parameters
        (:func:`check_resolved`: the library's recommended settings of the dataset changed),
        naming each difference: reusing it would mix settings silently, and running it again
        would destroy it.
    """
    if not any(path.exists() for path in run_files(job.stem)):
        return None
    try:
        run = load_finished(job.stem)
    except UnfinishedRunError as exc:
        warnings.warn(f"{exc}; running it again", stacklevel=2)
        return None
    found, wanted = identity_of(run.config), job.identity
    if hash_identity(found) == job.config_hash:
        check_resolved(job, run.config, envs)
        return run
    keys = list(wanted) + [k for k in found if k not in wanted]
    diff = [
        f"{k} {_shown(found.get(k))!r} (now {_shown(wanted.get(k))!r})"
        for k in keys
        if found.get(k) != wanted.get(k)
    ]
    raise InputValueError(
        f"{job.stem} was run with {', '.join(diff)}; recompute it with force=True (--force), "
        "write to another output folder or delete that run"
    )


#: Parameters left out when a finished run's parameters are compared with what its
#: specifications give now: those the run sets itself (:func:`~deepbandits.experiments.runner.run`)
#: and the policy's device, which the job's identity holds already (and which may not exist on
#: the machine that plans a sweep for a cluster's GPUs).
_NOT_COMPARED = {"policy": ("seed", "horizon", "reward_range", "device"), "env": ("seed",)}


def resolved_params(job: Job, envs: dict[Any, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The policy's and the environment's parameters that ``job``'s specifications give now (the
    environment's recommended settings included), as a run's JSON records them, without
    :data:`_NOT_COMPARED`. ``envs`` keeps the environments built, by specification and T, so that
    a sweep reads each dataset once."""
    envs = {} if envs is None else envs
    key = (job.env_spec, job.T)
    if key not in envs:
        envs[key] = build_env(job.env_spec, job.T)
    env = envs[key]
    name, keywords = parse_spec(job.policy_spec)
    keywords.pop("device", None)
    params = {
        "policy": make_policy(name, env=env, **keywords).get_params(),
        "env": env.get_params(),
    }
    return {part: _comparable(params[part], part) for part in params}


def _comparable(params: Any, part: str) -> dict[str, Any]:
    """``params`` as JSON gives them back, without :data:`_NOT_COMPARED`."""
    as_saved = json.loads(json.dumps(params, default=str))
    if not isinstance(as_saved, dict):
        return {}
    return {k: v for k, v in as_saved.items() if k not in _NOT_COMPARED[part]}


def check_resolved(job: Job, config: dict[str, Any], envs: dict[Any, Any] | None = None) -> None:
    """Refuse a finished run whose policy or environment parameters differ from those ``job``'s
    specifications give now: the same specifications resolve to other settings when the
    library's recommended settings of a dataset change, and reusing the run would mix them. A
    part whose parameters the run did not save is not compared; when the environment cannot be
    built here (its dataset is not on this machine), a warning says that nothing was compared."""
    saved = {
        part: _comparable(config.get(part, {}).get("params", {}), part)
        for part in ("policy", "env")
    }
    try:
        now = resolved_params(job, envs)
    except DataError as exc:
        warnings.warn(
            f"{job.stem}: its settings were not compared with today's ({exc})", stacklevel=3
        )
        return
    diff = [
        f"{part} {key} {saved[part].get(key)!r} (now {now[part].get(key)!r})"
        for part in ("policy", "env")
        if saved[part]
        for key in sorted(set(saved[part]) | set(now[part]))
        if saved[part].get(key) != now[part].get(key)
    ]
    if diff:
        raise InputValueError(
            f"{job.stem} was run with {'; '.join(diff)}: the same specifications give other "
            "settings now; recompute it with force=True (--force), write to another output "
            "folder or delete that run"
        )


def _shown(value: Any) -> Any:
    """A value of an identity as a Job holds it (checkpoints as a tuple)."""
    return tuple(value) if isinstance(value, list) else value


def _plan(jobs: list[Job], force: bool) -> tuple[list[tuple[Job, str]], list[Job]]:
    """The finished jobs to skip, each with the format it is saved in, and the jobs to
    compute; every refusal at once."""
    if force:
        return [], jobs
    finished, todo, refused = [], [], []
    envs: dict[Any, Any] = {}
    for job in jobs:
        try:
            run = finished_run(job, envs)
        except InputValueError as exc:
            refused.append(str(exc))
            continue
        if run is None:
            todo.append(job)
        else:
            finished.append((job, saved_format(run)))
    if refused:
        raise InputValueError("\n".join(refused))
    return finished, todo


def _record_failure(failure: Failure) -> None:
    record = {
        "config_hash": failure.job.config_hash,
        "job": failure.job.identity,
        "error": failure.error,
        "traceback": failure.traceback,
        "failed_at": datetime.now(UTC).isoformat(),
    }
    write_atomic(failed_path(failure.job.stem), json.dumps(record, indent=2))


def run_sweep(
    jobs: Sequence[Job],
    *,
    executor: Executor | None = None,
    force: bool = False,
    fmt: str = "csv",
    progress: bool = True,
) -> SweepResult:
    """Compute the jobs not finished on disk with ``executor`` and write each result as it
    arrives, in format ``fmt`` (``"csv"`` or ``"parquet"``; a finished run in the other format
    is saved again in ``fmt``); see the module documentation.

    ``executor`` defaults to a :class:`~deepbandits.experiments.executors.LocalExecutor` with
    one worker per core; it is not used when every job is finished. ``progress`` shows one bar
    over the jobs to compute, with the jobs done, failed and running and the time left.

    Raises
    ------
    InputTypeError
        For an item of ``jobs`` that is not a Job.
    InputValueError
        For two jobs with one stem, an unknown ``fmt``, or a finished run of another
        configuration at a job's stem without ``force`` (:func:`finished_run`; every such run
        is named, and nothing is computed or written).
    """
    jobs = list(jobs)
    fmt = check_choice(fmt, "fmt", FORMATS)
    for job in jobs:
        if not isinstance(job, Job):
            raise InputTypeError(f"jobs must hold Job objects, but a {type(job).__name__} is given")
    stems = [job.stem for job in jobs]
    repeated = sorted({str(s) for s in stems if stems.count(s) > 1})
    if repeated:
        raise InputValueError(f"two jobs would write the same run: {', '.join(repeated)}")
    finished, todo = _plan(jobs, force)
    for job, saved in finished:
        if saved != fmt:
            load_finished(job.stem).save(job.stem, fmt=fmt)
        failed_path(job.stem).unlink(missing_ok=True)
    result = SweepResult(skipped=[job for job, _ in finished])
    if not todo:
        return result
    owned = executor is None
    executor = LocalExecutor() if owned else executor
    bar = tqdm(total=len(todo), desc="runs", unit="run", disable=not progress)
    try:
        with closing(executor.map_unordered(todo)) as outcomes:
            capacity = executor.capacity
            bar.set_postfix_str(f"done 0, failed 0, running {min(capacity, len(todo))}")
            for job, outcome in outcomes:
                if isinstance(outcome, Failure):
                    _record_failure(outcome)
                    result.failed.append(outcome)
                else:
                    outcome.save(job.stem, fmt=fmt)
                    failed_path(job.stem).unlink(missing_ok=True)
                    result.done.append(job)
                bar.update()
                running = min(capacity, len(todo) - len(result.done) - len(result.failed))
                bar.set_postfix_str(
                    f"done {len(result.done)}, failed {len(result.failed)}, running {running}"
                )
    finally:
        bar.close()
        if owned:
            executor.close()
    return result
