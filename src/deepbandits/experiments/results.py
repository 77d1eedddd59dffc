"""Every finished run of a results folder as one table.

:func:`load_results` reads the runs that sweeps wrote (``compare``, ``reproduce``, ``tune``'s
evaluation, :func:`~deepbandits.experiments.sweep.run_sweep`), in CSV or Parquet, into one
DataFrame with one row per round, ready for pandas (``groupby(["policy", "seed"])``) or to be
written as one Parquet file for polars or DuckDB.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from deepbandits.errors import DataNotFoundError
from deepbandits.experiments.executors import hash_identity, identity_of
from deepbandits.experiments.runner import (
    COLUMNS,
    RunResult,
    UnfinishedRunError,
    load_finished,
)
from deepbandits.experiments.sweep import is_run

#: Columns :func:`load_results` puts before :data:`~deepbandits.experiments.runner.COLUMNS`.
RUN_COLUMNS: dict[str, str] = {
    "run": "the run's path under the folder, without suffix (e.g. 'linucb/seed_0')",
    "policy": "policy specification the run was made with (its class name if none)",
    "env": "environment specification (its class name if none)",
    "seed": "seed of the run",
    "T": "rounds of the run",
    "config_hash": "hash of the run's configuration (Job.config_hash)",
}


def _label(run: RunResult, part: str) -> str:
    section = run.config.get(part, {})
    return section.get("spec") or section.get("class", "")


def _table(run: RunResult, name: str) -> pd.DataFrame:
    """The run's records with :data:`RUN_COLUMNS` first."""
    config = run.config
    ids = {
        "run": name,
        "policy": _label(run, "policy"),
        "env": _label(run, "env"),
        "seed": config.get("seed"),
        "T": config.get("T"),
        "config_hash": hash_identity(identity_of(config)),
    }
    records = run.records.reindex(columns=list(COLUMNS))
    return pd.concat([pd.DataFrame(ids, index=records.index), records], axis=1)


def load_results(folder: str | Path) -> pd.DataFrame:
    """Every finished run under ``folder`` (searched recursively), one row per round: the
    columns :data:`RUN_COLUMNS` then :data:`~deepbandits.experiments.runner.COLUMNS`, runs in
    the order of their paths.

    Runs in CSV and in Parquet are read alike. Files that are not a finished run
    (:func:`~deepbandits.experiments.runner.load_finished`) are left out with a warning;
    ``<stem>.failed.json`` records and other JSON files are not runs.

    Raises
    ------
    DataNotFoundError
        When ``folder`` does not exist or holds no finished run.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataNotFoundError(f"results folder {folder} does not exist")
    tables = []
    for json_path in sorted(folder.rglob("*.json")):
        if not is_run(json_path):
            continue
        stem = json_path.with_name(json_path.name.removesuffix(".json"))
        try:
            run = load_finished(stem)
        except UnfinishedRunError as exc:
            warnings.warn(f"{exc}; left out of the results", stacklevel=2)
            continue
        tables.append(_table(run, stem.relative_to(folder).as_posix()))
    if not tables:
        raise DataNotFoundError(
            f"no finished run under {folder}: a run is <name>.json beside <name>.csv or "
            "<name>.parquet, written by compare, reproduce or run_sweep"
        )
    return pd.concat(tables, ignore_index=True)
