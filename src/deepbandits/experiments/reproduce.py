"""Run experiment configs: ``deepbandits reproduce NAME | --all`` and ``deepbandits experiment
run my.toml``.

An experiment is an :data:`~deepbandits.experiments.config.ExperimentConfig` (a TOML file; the
paper's are shipped under ``deepbandits/experiments/configs``), one model per kind.
:func:`run_experiment` runs one into a folder by the runner of its model:

* ``sweep``: every policy × seed as one job of the sweep engine
  (:func:`~deepbandits.experiments.compare.compare` on a local or Ray executor; resumable, a
  failed job recorded and the others run), then the report (``out/report``) with the paper's
  numbers and the verdict on each of the paper's claims
  (``out/paper_reference.json`` holds both);
* ``latency``: :func:`~deepbandits.experiments.latency.run_latency`;
* ``matched``: :func:`~deepbandits.experiments.matched.run_matched`.

``out/experiment.json`` records the config as run (after ``--quick`` scaling and overrides).
:func:`reproduce_all` runs every shipped config, each into ``root/<name>``, goes on past a
failed one, and builds one report over all of them (``root/report``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import singledispatch
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from deepbandits._io import folder_lock, write_atomic
from deepbandits.errors import DeepBanditsError, InputTypeError, InputValueError
from deepbandits.experiments.compare import compare, label_of
from deepbandits.experiments.config import (
    Experiment,
    ExperimentConfig,
    LatencyConfig,
    MatchedConfig,
    SweepConfig,
    builtin_configs,
)
from deepbandits.experiments.executors import Executor, executor_or_local
from deepbandits.experiments.latency import run_latency
from deepbandits.experiments.matched import run_matched
from deepbandits.experiments.report import REFERENCE_FILE, build_report, build_suite_report
from deepbandits.experiments.report.load import EXPERIMENT_FILE, find_comparisons
from deepbandits.experiments.sweep import SweepFailedError

#: Hold-out checkpoints of Figs. calib_details_0..3 (``deepbandits demo`` uses them too).
PAPER_CHECKPOINTS = (0, 2000, 5000, 7500)
#: The traceback of an experiment of ``reproduce --all`` that failed (removed once it succeeds).
ERROR_FILE = "error.txt"


@dataclass(frozen=True)
class Outcome:
    """What :func:`run_experiment` produced: the ``folder``, the ``summary`` table (sweep and
    matched: one row per policy; latency: one row per timing) and the report files."""

    name: str
    folder: Path
    summary: pd.DataFrame
    reports: tuple[Path, ...]


def with_overrides(
    config: ExperimentConfig,
    *,
    quick: bool = False,
    seeds: Sequence[int] | None = None,
    T: int | None = None,
) -> ExperimentConfig:
    """``config`` scaled down by its ``[quick]`` table when ``quick``, then with ``seeds`` and
    ``T`` replaced (its ``overridden``): a sweep's (checkpoints after ``T`` dropped), or a
    matched protocol's evaluation seeds and every environment's T. A latency experiment takes
    neither."""
    config = config.scaled(quick)
    if seeds is None and T is None:
        return config
    return config.overridden(seeds, T)


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    *,
    quick: bool = False,
    seeds: Sequence[int] | None = None,
    T: int | None = None,
    executor: Executor | None = None,
    force: bool = False,
    fmt: str = "csv",
    device: str | None = None,
    progress: bool = True,
    matched: Mapping[str, Any] | None = None,
) -> Outcome:
    """Run ``config`` into ``out`` (see the module documentation); resumable.

    ``executor`` runs a sweep's jobs (default: a :class:`~deepbandits.experiments.LocalExecutor`
    on every core). The options of the sweep engine apply to sweeps: ``force`` recomputes
    finished runs, ``fmt`` is ``"csv"`` or ``"parquet"``, ``device`` (e.g. ``"cuda"``) puts the
    networks there. A
    latency experiment is always measured afresh (``device`` applies); a matched protocol runs
    its tunings on local processes, as many as the executor's workers (every core for a Ray
    executor), and resumes from its studies (``force``, ``fmt`` and ``device`` do not apply);
    ``matched`` replaces settings of its protocol after the ``--quick`` scaling (the keywords
    of :func:`~deepbandits.experiments.matched.matched_protocol`, e.g. ``envs``, ``n_trials``,
    ``tuning_seeds``).

    ``out/experiment.json`` (the config as run) is written once the experiment has finished,
    or after a sweep whose failed jobs are recorded; a call refused before anything ran (a bad
    override, a finished run in ``out`` made with another configuration) writes nothing.

    Raises
    ------
    SweepFailedError
        After a sweep with failed jobs, once the report of the finished runs is written.
    """
    config = with_overrides(config, quick=quick, seeds=seeds, T=T)
    if matched:
        if not isinstance(config, MatchedConfig):
            raise InputValueError(
                f"matched replaces a matched protocol's settings; {config.name!r} is a "
                f"{config.kind} experiment"
            )
        config = config.with_protocol(matched)
    run = _Run(Path(out), quick, force, fmt, device, progress)
    with executor_or_local(executor) as running:
        return _run(config, run, running)


@dataclass(frozen=True)
class _Run:
    """The options of one :func:`run_experiment` call, once resolved."""

    out: Path
    quick: bool
    force: bool
    fmt: str
    device: str | None
    progress: bool


@singledispatch
def _run(config: Experiment, run: _Run, executor: Executor) -> Outcome:
    """Run ``config`` as its kind's model says (one registered function per model)."""
    raise InputTypeError(f"no runner for a {type(config).__name__}")


@_run.register
def _run_latency(config: LatencyConfig, run: _Run, executor: Executor) -> Outcome:
    out = run.out
    with folder_lock(out):
        settings = config.latency.model_dump()
        table = run_latency(settings, out, device=run.device, progress=run.progress)
        _record(config, out, run.quick)
    return Outcome(config.name, out, table, (out / "latency.md",))


@_run.register
def _run_matched(config: MatchedConfig, run: _Run, executor: Executor) -> Outcome:
    out = run.out
    workers = getattr(executor, "workers", None) or os.cpu_count() or 1
    summary = run_matched(out, protocol=config.protocol, jobs=workers, progress=run.progress)
    with folder_lock(out):
        _record(config, out, run.quick)
    return Outcome(config.name, out, summary, (out / "matched.md",))


@_run.register
def _run_sweep(config: SweepConfig, run: _Run, executor: Executor) -> Outcome:
    out, quick = run.out, run.quick
    folders = {env: out if len(config.envs) == 1 else out / label_of(env) for env in config.envs}
    summaries, failures = [], []
    for env, folder in folders.items():
        try:
            summaries.append(
                compare(
                    config.policy_list(),
                    env,
                    list(config.seeds),
                    config.T,
                    folder,
                    executor=executor,
                    force=run.force,
                    fmt=run.fmt,
                    device=run.device,
                    progress=run.progress,
                    checkpoints=config.checkpoints,
                    holdout_size=config.holdout_size,
                ).assign(env=env)
            )
        except SweepFailedError as exc:
            failures += exc.failures
    with folder_lock(out):
        try:
            reports = _sweep_report(config, out, folders.values(), quick)
        except DeepBanditsError as exc:
            if not failures:
                raise
            warnings.warn(f"the report of {out} could not be built: {exc}", stacklevel=2)
            reports = ()  # the failed jobs are the error to raise
        _record(config, out, quick)
    if failures:
        raise SweepFailedError(failures)
    return Outcome(config.name, out, pd.concat(summaries, ignore_index=True), reports)


def _sweep_report(
    config: SweepConfig, out: Path, folders: Iterable[Path], quick: bool
) -> tuple[Path, ...]:
    """Write the paper's numbers and claims beside every comparison of a sweep, then its
    report (``out/report``; a ``quick`` one judges no claim); nothing when no run finished."""
    reference = {**(config.paper or {}), "claims": [c.model_dump() for c in config.claims]}
    for folder in folders:
        write_atomic(folder / REFERENCE_FILE, json.dumps(reference, indent=2))
    if not find_comparisons(out):
        return ()
    return tuple(build_report(out, out / "report", quick=quick))


def _record(config: Experiment, out: Path, quick: bool) -> None:
    """``out/experiment.json``: the config as it ran."""
    record = {**config.model_dump(mode="json"), "quick": quick}
    write_atomic(out / EXPERIMENT_FILE, json.dumps(record, indent=2))


def expected_cpu_seconds(configs: Sequence[Experiment], quick: bool) -> float:
    """The sum of the configs' expected CPU seconds (``[cost]``), quick or full; a config
    without a ``[cost]`` table counts as 0."""
    return float(sum((c.quick_cpu_s if quick else c.full_cpu_s) or 0.0 for c in configs))


def format_duration(seconds: float) -> str:
    """``3725`` → ``"1 h 2 min"``; ``95`` → ``"1.6 min"``; ``42.3`` → ``"42 s"``."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def reproduce_all(
    root: str | Path,
    *,
    quick: bool = False,
    names: Sequence[str] | None = None,
    executor: Executor | None = None,
    force: bool = False,
    fmt: str = "csv",
    device: str | None = None,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], tuple[Path, Path]]:
    """Run every shipped config (or those in ``names``) into ``root/<name>``, going on past a
    failed one, then build the suite report in ``root/report``
    (:func:`~deepbandits.report.build_suite_report`). Returns the report's entries (one per
    experiment: name, title, what it reproduces, kind, folder, status ``done`` or ``failed``,
    the error) and the report's HTML and Markdown paths."""
    root = Path(root)
    configs = builtin_configs()
    chosen = list(configs) if names is None else list(names)
    unknown = [n for n in chosen if n not in configs]
    if unknown:
        raise InputValueError(
            f"unknown experiment(s) {', '.join(unknown)}; expected some of {', '.join(configs)}"
        )
    entries = []
    options = {"quick": quick, "force": force, "fmt": fmt, "device": device, "progress": progress}
    with executor_or_local(executor) as running:
        for i, name in enumerate(chosen, start=1):
            config = configs[name]
            if progress:
                cost = config.quick_cpu_s if quick else config.full_cpu_s
                expected = "" if cost is None else f", expected CPU time {format_duration(cost)}"
                tqdm.write(f"[{i}/{len(chosen)}] {name}: {config.title}{expected}", file=sys.stderr)
            entry: dict[str, Any] = {
                "name": name,
                "title": config.title,
                "reproduces": list(config.reproduces),
                "kind": config.kind,
                "folder": root / name,
                "status": "done",
                "error": None,
                "quick": quick,
            }
            try:
                run_experiment(config, root / name, executor=running, **options)
                (root / name / ERROR_FILE).unlink(missing_ok=True)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # one experiment's failure must not stop the suite
                entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
                write_atomic(root / name / ERROR_FILE, "".join(traceback.format_exception(exc)))
            entries.append(entry)
    try:
        reports = build_suite_report(root, entries, root / "report")
    except Exception as exc:  # the runs are on disk; say what failed, keep the statuses
        write_atomic(root / ERROR_FILE, "".join(traceback.format_exception(exc)))
        raise SuiteReportError(
            f"every experiment ran ({sum(e['status'] == 'done' for e in entries)} of "
            f"{len(entries)} finished), but the suite report could not be built: "
            f"{type(exc).__name__}: {exc} (traceback in {root / ERROR_FILE}; "
            f"'deepbandits report {root}' reports the runs)"
        ) from exc
    return entries, reports


class SuiteReportError(DeepBanditsError):
    """``reproduce --all`` ran its experiments but could not build the suite report."""
