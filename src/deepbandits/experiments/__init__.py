"""Running policies on environments, comparing them, and tuning their hyperparameters."""

from deepbandits.experiments.compare import compare
from deepbandits.experiments.executors import (
    Executor,
    Failure,
    Job,
    LocalExecutor,
    RayExecutor,
    execute_job,
    make_executor,
)
from deepbandits.experiments.matched import MatchedProtocol, run_matched
from deepbandits.experiments.results import load_results
from deepbandits.experiments.runner import COLUMNS, RunResult, run
from deepbandits.experiments.sweep import SweepFailedError, SweepResult, run_sweep
from deepbandits.experiments.tune import TuneResult, tune

__all__ = [
    "COLUMNS",
    "Executor",
    "Failure",
    "Job",
    "LocalExecutor",
    "MatchedProtocol",
    "RayExecutor",
    "RunResult",
    "SweepFailedError",
    "SweepResult",
    "TuneResult",
    "compare",
    "execute_job",
    "load_results",
    "make_executor",
    "run",
    "run_matched",
    "run_sweep",
    "tune",
]
