"""Reports of results folders: tables, figures, the paper's numbers beside ours and its claims
checked, for one results folder (:func:`build_report`) or a whole suite of experiments
(:func:`build_suite_report`). Public as :mod:`deepbandits.report`."""

from deepbandits.experiments.report.build import build_report
from deepbandits.experiments.report.load import REFERENCE_FILE
from deepbandits.experiments.report.paper import evaluate_claims
from deepbandits.experiments.report.suite import build_suite_report

__all__ = ["REFERENCE_FILE", "build_report", "build_suite_report", "evaluate_claims"]
