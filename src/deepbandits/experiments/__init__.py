"""Running policies on environments, and comparing them."""

from deepbandits.experiments.runner import COLUMNS, RunResult, run

__all__ = ["COLUMNS", "RunResult", "run"]
