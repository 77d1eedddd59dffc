"""How a run is stored: :class:`RunResult`, its files, and the checked read of a finished one.

The per-round records (:data:`~deepbandits.experiments.runner.COLUMNS`) are saved as CSV or
Parquet (:data:`FORMATS`) next to a JSON file holding the exact configuration (policy and
environment parameters, T, seed, versions).

A saved run is *finished* when its JSON file, written last, reads back and describes the other
files: their names, SHA-256 and row counts (``"files"``), ``T`` rows of records and a last
cumulative regret equal to ``final_regret`` (:func:`load_finished`). Anything else (a file
missing, truncated, damaged, or from another run) is not a finished run, and a resumed sweep runs
it again; a kill at any moment leaves the previous finished run or none. A JSON written before
file names were recorded describes CSV files.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from deepbandits._io import write_atomic
from deepbandits._validation import check_choice
from deepbandits.errors import DataError


@dataclass
class RunResult:
    """A finished run: the per-round ``records``, the ``config`` that produced them and, when
    the run had checkpoints, the ``holdout`` forecasts
    (:data:`~deepbandits.experiments.runner.HOLDOUT_COLUMNS`)."""

    records: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)
    holdout: pd.DataFrame | None = None

    @property
    def final_regret(self) -> float:
        return float(self.records["cum_regret"].iloc[-1])

    def save(self, stem: str | Path, fmt: str = "csv") -> tuple[Path, Path]:
        """Write the records (``<stem>.csv``, or ``<stem>.parquet`` with ``fmt="parquet"``),
        the hold-out forecasts when there are any (``<stem>.holdout.csv`` / ``.parquet``) and,
        last, ``<stem>.json`` (configuration, and the name and digest of each file); return the
        records and JSON paths.

        An earlier run at ``stem`` stops being finished before any of its files is replaced
        (its JSON is removed first), so a kill during the save never leaves a JSON that
        describes files of another run; its files of the other format are removed.

        Raises
        ------
        InputValueError
            For a ``fmt`` not in :data:`FORMATS`.
        """
        stem = Path(stem)
        fmt = check_choice(fmt, "fmt", FORMATS)
        json_path = _file(stem, ".json")
        json_path.unlink(missing_ok=True)
        tables = {"records": self.records, "holdout": self.holdout}
        files = {
            part: _write_table(table_path(stem, part, fmt), table)
            for part, table in tables.items()
            if table is not None
        }
        written = {json_path} | {stem.with_name(record["name"]) for record in files.values()}
        for path in run_files(stem):
            if path not in written:
                path.unlink(missing_ok=True)
        config = {**self.config, "files": files}
        write_atomic(json_path, json.dumps(config, indent=2, default=str))
        return table_path(stem, "records", fmt), json_path

    @classmethod
    def load(cls, stem: str | Path) -> RunResult:
        """Read the files at ``stem`` as they are, in the format its JSON records (see
        :func:`load_finished` for a checked read)."""
        stem = Path(stem)
        config = json.loads(_file(stem, ".json").read_text(encoding="utf-8"))
        recorded = config.get("files") or {}
        records = _read_table(_recorded_path(stem, recorded, "records"), None)
        path = _recorded_path(stem, recorded, "holdout")
        return cls(records, config, _read_table(path, None) if path.exists() else None)


class UnfinishedRunError(DataError):
    """The files at a run's path are not a finished run: missing, damaged or inconsistent."""


#: File formats of a run's tables (records and hold-out forecasts); its JSON is always JSON.
FORMATS = ("csv", "parquet")


def _file(stem: Path, suffix: str) -> Path:
    return stem.with_name(stem.name + suffix)


def table_path(stem: str | Path, part: str = "records", fmt: str = "csv") -> Path:
    """Where a run at ``stem`` keeps a table: ``part`` ``"records"`` (``<stem>.<fmt>``) or
    ``"holdout"`` (``<stem>.holdout.<fmt>``)."""
    return _file(Path(stem), f".{fmt}" if part == "records" else f".{part}.{fmt}")


def _recorded_format(recorded: dict[str, Any], part: str) -> str:
    """The suffix, without its dot, of the file of ``part`` that a run's JSON records
    (``recorded``: its ``"files"``); ``"csv"`` when it records none."""
    record = recorded.get(part)
    name = record.get("name") if isinstance(record, dict) else None
    return "csv" if name is None else Path(str(name)).suffix[1:]


def _recorded_path(stem: Path, recorded: dict[str, Any], part: str) -> Path:
    """``stem``'s file of ``part`` in the format of the file name the JSON records (CSV when
    it records none); the name itself may be another stem's (a run copied to a new name)."""
    fmt = _recorded_format(recorded, part)
    if fmt not in FORMATS:
        raise UnfinishedRunError(
            f"the run {stem} records the file {recorded[part].get('name')!r} for its {part}"
        )
    return table_path(stem, part, fmt)


def saved_format(run: RunResult) -> str:
    """The format (:data:`FORMATS`) of the tables of a run read from disk
    (:func:`load_finished`), as its JSON records them: CSV for a JSON written before file
    names were recorded."""
    return _recorded_format(run.config.get("files") or {}, "records")


def _write_table(path: Path, table: pd.DataFrame) -> dict[str, Any]:
    """Write ``table`` atomically in the format of ``path``'s suffix; return its file name,
    row count and SHA-256."""
    if path.suffix == ".parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        raw = buffer.getvalue()
    else:
        raw = table.to_csv(index=False).encode("utf-8")
    write_atomic(path, raw)
    return {"name": path.name, "rows": len(table), "sha256": hashlib.sha256(raw).hexdigest()}


def _read_table(path: Path, record: dict[str, Any] | None) -> pd.DataFrame:
    """Read a CSV or Parquet file (by its suffix), checked against its ``{"rows", "sha256"}``
    record when there is one."""
    raw = path.read_bytes()
    if record is not None and (
        not isinstance(record, dict) or hashlib.sha256(raw).hexdigest() != record.get("sha256")
    ):
        raise UnfinishedRunError(f"{path} is not the file its run recorded (SHA-256 differs)")
    read = pd.read_parquet if path.suffix == ".parquet" else pd.read_csv
    table = read(io.BytesIO(raw))
    if record is not None and len(table) != record["rows"]:
        raise UnfinishedRunError(f"{path} has {len(table)} rows, its run recorded {record}")
    return table


def run_files(stem: str | Path) -> list[Path]:
    """The files a run at ``stem`` may have: ``.json``, and the records and hold-out forecasts
    in each of :data:`FORMATS`."""
    stem = Path(stem)
    return [_file(stem, ".json")] + [
        table_path(stem, part, fmt) for fmt in FORMATS for part in ("records", "holdout")
    ]


def load_finished(stem: str | Path) -> RunResult:
    """The finished run at ``stem``, checked (see the module documentation).

    The JSON must parse; each file it records (``"files"``) must have the recorded SHA-256
    and row count (a JSON written before digests were recorded is checked by the rest only);
    the records must have ``T`` rows and end at ``final_regret``; a run with checkpoints must
    have its hold-out forecasts.

    Raises
    ------
    UnfinishedRunError
        Saying which file is missing, damaged or does not match the others.
    """
    stem = Path(stem)
    json_path = _file(stem, ".json")
    try:
        config = json.loads(json_path.read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise DataError(f"a JSON object is expected, not {type(config).__name__}")
        files = config.get("files")
        if files is not None and not isinstance(files, dict):
            raise DataError(f'"files" must be a JSON object, not {files!r}')
        recorded = files or {}
        records_path = _recorded_path(stem, recorded, "records")
        records = _read_table(records_path, recorded.get("records"))
        hpath = _recorded_path(stem, recorded, "holdout")
        holdout = (
            _read_table(hpath, recorded.get("holdout"))
            if "holdout" in recorded or (files is None and hpath.exists())
            else None
        )
        final = float(records["cum_regret"].iloc[-1]) if len(records) else math.nan
    except UnfinishedRunError:
        raise
    except (OSError, ValueError, KeyError) as exc:  # parse errors are ValueErrors
        raise UnfinishedRunError(f"the run {stem} cannot be read: {exc}") from exc
    if len(records) != config.get("T") or not _same_float(final, config.get("final_regret")):
        raise UnfinishedRunError(
            f"{records_path} has {len(records)} rounds ending at cumulative regret "
            f"{final}, but {json_path.name} records T={config.get('T')!r} and final regret "
            f"{config.get('final_regret')!r}"
        )
    if config.get("checkpoints") and holdout is None:
        raise UnfinishedRunError(f"the run {stem} has checkpoints but no hold-out forecasts")
    return RunResult(records, config, holdout)


def _same_float(a: float, b: Any) -> bool:
    return isinstance(b, int | float) and math.isclose(a, b, rel_tol=1e-12)
