"""Reports of results folders: tables, figures, the paper's numbers beside ours and its claims
checked, for one results folder (:func:`build_report`) or a whole suite of experiments
(:func:`build_suite_report`).

The reports read what the experiments write, and ``deepbandits reproduce`` writes them, so
their code lives in :mod:`deepbandits.experiments.report`; this package is its public face."""

from deepbandits.experiments.report import (
    REFERENCE_FILE,
    build_report,
    build_suite_report,
    evaluate_claims,
)

__all__ = ["REFERENCE_FILE", "build_report", "build_suite_report", "evaluate_claims"]
