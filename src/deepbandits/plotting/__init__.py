"""Figures of the paper from plain arrays (matplotlib, headless; each saved as PNG and SVG)."""

from deepbandits.plotting.figures import (
    estimation_error_curves,
    holdout_reliability_diagrams,
    latency_bars,
    regret_curves,
    reliability_diagram,
    variance_traces,
)
from deepbandits.plotting.style import save_figure

__all__ = [
    "estimation_error_curves",
    "holdout_reliability_diagrams",
    "latency_bars",
    "regret_curves",
    "reliability_diagram",
    "save_figure",
    "variance_traces",
]
