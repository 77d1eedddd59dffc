"""The paper's figures, each from plain arrays: regret curves (Figs. demo, real_world),
reliability diagrams (Fig. calib (a), Figs. calib_details_0..3), variance traces (Fig. calib (b),
ablation_study2 (b, c)), estimation errors over time (Figs. ablation_study2 (a),
ablation_study (b)) and latency bars (Fig. latency). Each function returns a
:class:`~matplotlib.figure.Figure`; :func:`~deepbandits.plotting.save_figure` writes it as PNG
and SVG."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits.plotting.style import (
    PALETTE,
    new_figure,
    outside_legend,
    series_styles,
    styled,
    title_above,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RELIABILITY_X = "expected frequency (confidence level p)"
RELIABILITY_Y = "observed frequency of F(r) ≤ p"

#: ``{label: (rounds [T], values [n_seeds, T])}``: one curve per seed of each series.
Curves = Mapping[str, tuple[ArrayLike, ArrayLike]]


def band_edges(values: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Mean over seeds (axis 0) and the mean ± one std band, clipped to the seeds' own range.

    With skewed spreads (one seed of three far off) mean − std can fall below every seed, e.g.
    below 0 for a regret; the clipped band never shows a value no seed reached.
    """
    mean, std = values.mean(axis=0), values.std(axis=0)
    low = np.maximum(mean - std, values.min(axis=0))
    high = np.minimum(mean + std, values.max(axis=0))
    return mean, low, high


def _band(ax, style: dict[str, Any], label: str, t: NDArray, values: NDArray) -> None:
    mean, low, high = band_edges(values)
    ax.plot(t, mean, label=f"{label} (n={len(values)})", **style)
    ax.fill_between(t, low, high, color=style["color"], alpha=0.15, linewidth=0)


def _longest(curves: Curves) -> int:
    return max((len(np.asarray(t)) for t, _ in curves.values()), default=0)


@styled
def regret_curves(curves: Curves, title: str = "") -> Figure:
    """Cumulative pseudo-regret against rounds, mean ± one std band over seeds (`band_edges`)."""
    fig, (ax,) = new_figure()
    styles = series_styles(list(curves), _longest(curves))
    for style, (label, (t, values)) in zip(styles, curves.items(), strict=True):
        _band(ax, style, label, np.asarray(t), np.atleast_2d(np.asarray(values, dtype=float)))
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative pseudo-regret")
    ax.set_title(title)
    outside_legend(ax)
    return fig


def _diagonal(ax) -> None:
    ax.plot(
        [0, 1],
        [0, 1],
        color="0.6",
        linewidth=1,
        linestyle=(0, (1, 1)),
        label="perfectly calibrated",
    )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")


@styled
def reliability_diagram(
    observed: Mapping[str, ArrayLike], levels: ArrayLike, title: str = ""
) -> Figure:
    """Observed against expected frequency per confidence level, one line per policy
    (Fig. calib (a)); above the diagonal: under-confident, below: over-confident."""
    fig, (ax,) = new_figure(width=4.6, height=3.6)
    p = np.asarray(levels)
    _diagonal(ax)
    for style, (label, freq) in zip(series_styles(list(observed)), observed.items(), strict=True):
        ax.plot(p, np.asarray(freq), label=label, **style)
    ax.set_xlabel(RELIABILITY_X)
    ax.set_ylabel(RELIABILITY_Y)
    ax.set_title(title)
    outside_legend(ax)
    return fig


@styled
def holdout_reliability_diagrams(
    observed: Mapping[int, Mapping[str, ArrayLike]],
    levels: ArrayLike,
    title: str = "",
) -> Figure:
    """One reliability diagram per checkpoint (``{checkpoint: {policy: frequencies}}``), side
    by side (Figs. calib_details_0..3, one figure per arm)."""
    fig, axes = new_figure(ncols=len(observed), width=3.6, height=3.4)
    p = np.asarray(levels)
    for ax, (t, curves) in zip(axes, observed.items(), strict=True):
        _diagonal(ax)
        for style, (label, freq) in zip(series_styles(list(curves)), curves.items(), strict=True):
            ax.plot(p, np.asarray(freq), label=label, **style)
        ax.set_title(f"t = {t}")
    axes[0].set_ylabel(RELIABILITY_Y)
    fig.supxlabel(RELIABILITY_X, y=0.0, va="top")
    outside_legend(axes[-1])
    title_above(fig, title)
    return fig


#: Variances below this are drawn at it (log axis).
VARIANCE_FLOOR = 1e-3


@styled
def variance_traces(
    t: ArrayLike,
    true_variance: ArrayLike,
    estimates: Mapping[str, ArrayLike],
    bound: float | None,
    window: int = 300,
    title: str = "",
) -> Figure:
    """Var(rₜ), the estimates σ̂²ₜ and the bound R² over the first and the last ``window``
    rounds (Fig. calib (b), Fig. ablation_study2 (b, c)), on a log axis (values below
    :data:`VARIANCE_FLOOR` drawn at it)."""
    t = np.asarray(t)
    var = np.asarray(true_variance, dtype=float)
    fig, axes = new_figure(ncols=2, width=4.6, height=3.4)
    for ax, part, name in zip(
        axes, (slice(0, window), slice(-window, None)), ("first", "last"), strict=True
    ):
        true = np.maximum(var[part], VARIANCE_FLOOR)
        ax.plot(t[part], true, color="0.45", linewidth=1.0, label="Var(r_t) (true)")
        styles = series_styles(list(estimates), len(t[part]))
        for style, (label, est) in zip(styles, estimates.items(), strict=True):
            values = np.maximum(np.asarray(est, dtype=float)[part], VARIANCE_FLOOR)
            ax.plot(t[part], values, label=f"σ̂²_t, {label}", **style)
        if bound is not None:
            ax.axhline(bound, color="0.2", linestyle="--", linewidth=1.4, label=f"R² = {bound:g}")
        ax.set_yscale("log")
        ax.set_ylim(bottom=VARIANCE_FLOOR)
        ax.set_xlabel("round t")
        ax.set_ylabel("variance (reward units²)")
        ax.set_title(f"{name} {window} rounds")
    outside_legend(axes[-1])
    title_above(fig, title)
    return fig


def rolling_mean(values: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Trailing mean over ``window`` rounds along the last axis (shorter at the start)."""
    c = np.cumsum(np.nan_to_num(values), axis=-1)
    n = np.cumsum(np.isfinite(values), axis=-1)
    c[..., window:] = c[..., window:] - c[..., :-window]
    n[..., window:] = n[..., window:] - n[..., :-window]
    return c / np.maximum(n, 1)


@styled
def estimation_error_curves(
    curves: Curves, ylabel: str, window: int = 100, title: str = ""
) -> Figure:
    """A per-round error (e.g. |h − μ̂| or |w² − Var(r)|), averaged over a trailing ``window``
    of rounds, mean ± one std band over seeds (`band_edges`; Figs. ablation_study2 (a),
    ablation_study (b))."""
    fig, (ax,) = new_figure()
    styles = series_styles(list(curves), _longest(curves))
    for style, (label, (t, values)) in zip(styles, curves.items(), strict=True):
        smooth = rolling_mean(np.atleast_2d(np.asarray(values, dtype=float)), window)
        _band(ax, style, label, np.asarray(t), smooth)
    ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel(f"{ylabel} (mean of last {window} rounds)")
    ax.set_title(title)
    outside_legend(ax)
    return fig


@styled
def latency_bars(table: pd.DataFrame, title: str = "") -> Figure:
    """Seconds per 100 rounds of arm selection and of the update (network training included),
    mean ± std over seeds (Fig. latency). ``table`` has columns ``policy``, ``select_mean``,
    ``select_std``, ``update_mean``, ``update_std``."""
    fig, (ax,) = new_figure(width=5.5)
    x = np.arange(len(table))
    w = 0.38
    hatches = ("", "//")
    for j, (part, name) in enumerate(
        (("select", "arm selection"), ("update", "update + training"))
    ):
        ax.bar(
            x + (j - 0.5) * w,
            table[f"{part}_mean"],
            w,
            yerr=table[f"{part}_std"],
            label=name,
            color=PALETTE[2 * j + 2],
            hatch=hatches[j],
            edgecolor="black",
            linewidth=0.6,
            capsize=2,
        )
    ax.set_xticks(x, table["policy"], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("seconds per 100 rounds")
    ax.set_title(title)
    outside_legend(ax)
    return fig
