"""Finding the comparisons of a results folder and loading their runs.

A *comparison* is a folder whose sub-folders hold runs (``<policy>/seed_<s>.json`` with its
records, as :func:`~deepbandits.experiments.compare` writes them), maybe the records of jobs that
failed (``<policy>/seed_<s>.failed.json``, :func:`~deepbandits.experiments.sweep.failed_path`),
and maybe :data:`REFERENCE_FILE`: the paper's numbers and claims about it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepbandits.errors import DataError, DataNotFoundError
from deepbandits.experiments.storage import RunResult
from deepbandits.experiments.sweep import failed_path, is_run

#: A comparison folder may hold this file (written by ``deepbandits reproduce``): the paper's
#: values to print beside the measured ones (``"source"``, ``"metrics"``, ``"values"``) and its
#: claims to check (``"claims"``, see :func:`deepbandits.report.evaluate_claims`).
REFERENCE_FILE = "paper_reference.json"

#: ``deepbandits reproduce`` and ``experiment run`` record the config as it ran in this file of
#: the results folder, with ``"quick": true`` for the smoke-test scale (:func:`is_quick`).
EXPERIMENT_FILE = "experiment.json"


@dataclass
class Comparison:
    """The runs of one results folder: ``{policy label: runs in seed order}``, and the
    failure records of the policies without a finished run: ``{policy label: paths}``."""

    name: str
    folder: Path
    runs: dict[str, list[RunResult]]
    reference: dict[str, Any] | None = None
    failed: dict[str, list[Path]] = field(default_factory=dict)

    @property
    def policies(self) -> list[str]:
        """Every policy of the comparison: those with runs, then those whose jobs all
        failed."""
        return [*self.runs, *(k for k in self.failed if k not in self.runs)]


def run_stems(policy_dir: Path) -> list[Path]:
    """Stems ``seed_<s>`` of the runs in one policy folder, sorted: a JSON with its records
    beside it (:func:`deepbandits.experiments.sweep.is_run`; a failed job's
    ``seed_<s>.failed.json`` is not a run)."""
    jsons = sorted(p for p in policy_dir.glob("seed_*.json") if is_run(p))
    return [p.with_name(p.name.removesuffix(".json")) for p in jsons]


def failure_records(policy_dir: Path) -> list[Path]:
    """The failed jobs' records ``seed_<s>.failed.json`` of one policy folder, sorted."""
    return sorted(policy_dir.glob(failed_path(Path("seed_*")).name))


def find_comparisons(root: str | Path) -> list[Path]:
    """Folders under ``root`` (``root`` included) whose sub-folders hold runs."""
    root = Path(root)
    if not root.is_dir():
        raise DataNotFoundError(f"results folder {root} does not exist")
    policy_dirs = {p.parent for p in root.rglob("seed_*.json")}
    return sorted({d.parent for d in policy_dirs if run_stems(d)})


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


def _read_json(path: Path) -> Any:
    """The JSON value in ``path`` (None when there is no such file); unreadable → DataError."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None


def load_reference(folder: Path) -> dict[str, Any] | None:
    """The folder's :data:`REFERENCE_FILE`, or ``None`` when it has none."""
    path = folder / REFERENCE_FILE
    reference = _read_json(path)
    if reference is not None and not isinstance(reference, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(reference).__name__}")
    return reference


def is_quick(results: Path) -> bool:
    """Whether ``results`` holds an experiment run at its smoke-test scale (``--quick``), as its
    :data:`EXPERIMENT_FILE` records; False without one."""
    recorded = _read_json(results / EXPERIMENT_FILE)
    return isinstance(recorded, dict) and recorded.get("quick") is True


def failed_policy(record: Path) -> str | None:
    """The policy specification a failure record names (its ``"job"``), or ``None`` when the
    record cannot be read."""
    try:
        job = json.loads(record.read_text(encoding="utf-8")).get("job")
    except (OSError, ValueError, AttributeError):
        return None
    policy = job.get("policy") if isinstance(job, dict) else None
    return policy if isinstance(policy, str) else None


def load_comparison(folder: Path, name: str) -> Comparison:
    """The runs under ``folder``, labelled by the policy spec they were run with, and the
    failure records of the policy folders without a run (labelled by the spec they name, or
    by the folder's name)."""
    runs: dict[str, list[RunResult]] = {}
    failed: dict[str, list[Path]] = {}
    for policy_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        stems = run_stems(policy_dir)
        if stems:
            loaded = sorted((load_run(s) for s in stems), key=lambda r: r.config.get("seed", 0))
            label = loaded[0].config.get("policy", {}).get("spec", policy_dir.name)
            runs[label] = loaded
        elif records := failure_records(policy_dir):
            failed[failed_policy(records[0]) or policy_dir.name] = records
    return Comparison(name, folder, runs, load_reference(folder), failed)


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
