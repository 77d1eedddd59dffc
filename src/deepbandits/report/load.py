"""Finding the comparisons of a results folder and loading their runs.

A *comparison* is a folder whose sub-folders hold runs (``<policy>/seed_<s>.json`` with its
records, as :func:`~deepbandits.experiments.compare` writes them), and maybe
:data:`REFERENCE_FILE`: the paper's numbers and claims about it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepbandits.errors import DataError, DataNotFoundError
from deepbandits.experiments.runner import RunResult

#: A comparison folder may hold this file (written by ``deepbandits reproduce``): the paper's
#: values to print beside the measured ones (``"source"``, ``"metrics"``, ``"values"``) and its
#: claims to check (``"claims"``, see :func:`deepbandits.report.evaluate_claims`).
REFERENCE_FILE = "paper_reference.json"

#: Suffixes of a run's per-round records (CSV, or Parquet when the sweep wrote that format).
RECORD_SUFFIXES = (".csv", ".parquet")


@dataclass
class Comparison:
    """The runs of one results folder: ``{policy label: runs in seed order}``."""

    name: str
    folder: Path
    runs: dict[str, list[RunResult]]
    reference: dict[str, Any] | None = None


def run_stems(policy_dir: Path) -> list[Path]:
    """Stems ``seed_<s>`` of the runs in one policy folder that have their JSON and records
    (a failed job's ``seed_<s>.failed.json`` is not a run)."""
    stems = [p.with_suffix("") for p in policy_dir.glob("seed_*.json")]
    return sorted(s for s in stems if any(s.with_suffix(x).exists() for x in RECORD_SUFFIXES))


def find_comparisons(root: str | Path) -> list[Path]:
    """Folders under ``root`` (``root`` included) whose sub-folders hold runs."""
    root = Path(root)
    if not root.is_dir():
        raise DataNotFoundError(f"results folder {root} does not exist")
    return sorted({p.parent.parent for p in root.rglob("seed_*.json") if run_stems(p.parent)})


def load_run(stem: Path) -> RunResult:
    """A run's files, or a :class:`~deepbandits.errors.DataError` naming the one that cannot be
    read."""
    try:
        run = RunResult.load(stem)
    except (OSError, ValueError) as exc:  # JSON and CSV parse errors are ValueErrors
        raise DataError(f"cannot read the run {stem} (.csv/.json/.holdout.csv): {exc}") from None
    missing = {"t", "reward", "cum_regret", "mean", "width"} - set(run.records.columns)
    if missing:
        raise DataError(f"the run {stem}.csv lacks the columns {sorted(missing)}")
    return run


def load_reference(folder: Path) -> dict[str, Any] | None:
    """The folder's :data:`REFERENCE_FILE`, or ``None`` when it has none."""
    path = folder / REFERENCE_FILE
    if not path.exists():
        return None
    try:
        reference = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    if not isinstance(reference, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(reference).__name__}")
    return reference


def load_comparison(folder: Path, name: str) -> Comparison:
    """The runs under ``folder``, labelled by the policy spec they were run with."""
    runs: dict[str, list[RunResult]] = {}
    for policy_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        stems = run_stems(policy_dir)
        if not stems:
            continue
        loaded = sorted((load_run(s) for s in stems), key=lambda r: r.config.get("seed", 0))
        label = loaded[0].config.get("policy", {}).get("spec", policy_dir.name)
        runs[label] = loaded
    return Comparison(name, folder, runs, load_reference(folder))


def configuration(comp: Comparison) -> dict[str, Any]:
    """What produced the runs: environment, T, seeds and each policy's parameters."""
    first = next(iter(comp.runs.values()))[0].config
    return {
        "env": first.get("env"),
        "T": first.get("T"),
        "checkpoints": first.get("checkpoints"),
        "library_version": first.get("version"),
        "torch": first.get("torch"),
        "policies": {
            k: {"seeds": [r.config.get("seed") for r in rs], **rs[0].config.get("policy", {})}
            for k, rs in comp.runs.items()
        },
    }
