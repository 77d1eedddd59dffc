"""Run experiment configs: ``deepbandits reproduce NAME | --all`` and ``deepbandits experiment
run my.toml``.

An experiment is an :class:`~deepbandits.experiments.config.ExperimentConfig` (a TOML file; the
paper's are shipped under ``deepbandits/experiments/configs``). :func:`run_experiment` runs one
into a folder according to its ``kind``:

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
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from deepbandits._io import folder_lock, write_atomic
from deepbandits._validation import check_int
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import compare
from deepbandits.experiments.config import ExperimentConfig, builtin_configs
from deepbandits.experiments.executors import Executor, LocalExecutor
from deepbandits.experiments.latency import run_latency
from deepbandits.experiments.matched import run_matched
from deepbandits.report import REFERENCE_FILE, build_report, build_suite_report

#: Hold-out checkpoints of Figs. calib_details_0..3 (``deepbandits demo`` uses them too).
PAPER_CHECKPOINTS = (0, 2000, 5000, 7500)
#: The record of what an experiment folder was run with.
EXPERIMENT_FILE = "experiment.json"


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
    ``T`` replaced (sweeps only; checkpoints after ``T`` dropped)."""
    config = config.scaled(quick)
    if (seeds is not None or T is not None) and config.kind != "sweep":
        raise InputValueError(
            f"--seeds and --T override a sweep's settings; {config.name!r} is a "
            f"{config.kind} experiment (set them in its config instead)"
        )
    if seeds is not None:
        config = replace(config, seeds=tuple(check_int(s, "seed", minimum=0) for s in seeds))
    if T is not None:
        T = check_int(T, "T", minimum=1)
        config = replace(config, T=T, checkpoints=tuple(c for c in config.checkpoints if c <= T))
    return config


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
) -> Outcome:
    """Run ``config`` into ``out`` (see the module documentation); resumable.

    ``executor`` runs a sweep's jobs (default: a :class:`LocalExecutor` on every core); a
    matched protocol runs its tunings on as many local processes as the executor has workers
    (Ray does not apply to it). ``force`` recomputes finished runs; ``fmt`` is ``"csv"`` or
    ``"parquet"``. Raises what the engine raises, e.g.
    :class:`~deepbandits.experiments.compare.SweepFailedError` after a sweep with failed jobs
    (the report of the finished ones is still written).
    """
    config = with_overrides(config, quick=quick, seeds=seeds, T=T)
    out = Path(out)
    executor = LocalExecutor() if executor is None else executor
    with folder_lock(out):
        write_atomic(
            out / EXPERIMENT_FILE, json.dumps({**config.to_dict(), "quick": quick}, indent=2)
        )
    if config.kind == "latency":
        with folder_lock(out):
            table = run_latency(config.options, out, device=device, progress=progress)
        return Outcome(config.name, out, table, (out / "latency.md",))
    if config.kind == "matched":
        workers = getattr(executor, "workers", None) or 1
        summary = run_matched(
            out, protocol=config.matched_protocol(), jobs=workers, progress=progress
        )
        return Outcome(config.name, out, summary, (out / "matched.md",))
    reference = dict(config.paper or {})
    reference["claims"] = [claim_dict(c) for c in config.claims]
    with folder_lock(out):
        write_atomic(out / REFERENCE_FILE, json.dumps(reference, indent=2))
    try:
        summary = compare(
            config.policy_list(),
            config.env,
            list(config.seeds),
            config.T,
            out,
            executor=executor,
            force=force,
            fmt=fmt,
            device=device,
            progress=progress,
            checkpoints=config.checkpoints,
            holdout_size=config.holdout_size,
        )
    finally:
        if any(out.glob("*/seed_*.json")):
            with folder_lock(out):
                reports = build_report(out, out / "report")
    return Outcome(config.name, out, summary, tuple(reports))


def claim_dict(claim: Any) -> dict[str, Any]:
    """A :class:`~deepbandits.experiments.config.Claim` as the report reads it."""
    return {
        "text": claim.text,
        "check": claim.check,
        "metric": claim.metric,
        "policy": claim.policy,
        "than": claim.than,
    }


def expected_cpu_seconds(configs: Sequence[ExperimentConfig], quick: bool) -> float:
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
    executor = LocalExecutor() if executor is None else executor
    entries = []
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
            run_experiment(
                config,
                root / name,
                quick=quick,
                executor=executor,
                force=force,
                fmt=fmt,
                device=device,
                progress=progress,
            )
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # one experiment's failure must not stop the suite
            entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            write_atomic(root / name / "error.txt", "".join(traceback.format_exception(exc)))
        entries.append(entry)
    return entries, build_suite_report(root, entries, root / "report")
