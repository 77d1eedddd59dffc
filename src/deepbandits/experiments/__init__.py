"""Running policies on environments, comparing them, and tuning their hyperparameters."""

from deepbandits.experiments.compare import compare
from deepbandits.experiments.matched import MatchedProtocol, run_matched
from deepbandits.experiments.runner import COLUMNS, RunResult, run
from deepbandits.experiments.tune import TuneResult, tune

__all__ = [
    "COLUMNS",
    "MatchedProtocol",
    "RunResult",
    "TuneResult",
    "compare",
    "run",
    "run_matched",
    "tune",
]
