"""One style for every figure: colours that stay distinct for colour-blind readers (Okabe & Ito
2008), each series also told apart by line style and marker so that a greyscale print still
separates them, legends outside the axes so they never hide data."""

from __future__ import annotations

import functools
import io
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from deepbandits._io import write_atomic

if TYPE_CHECKING:  # matplotlib (0.6 s to import) loads when a figure is made, not with the library
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Okabe–Ito colours, black first.
PALETTE = ("#000000", "#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

RC = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "deepbandits",
}


#: Fixed styles of the paper's main policies, so that a policy looks the same in every figure.
FIXED_STYLES = {
    "linucb": 0,
    "neural-linucb": 1,
    "neural-sigma2-linucb": 2,
    "neural-ucb": 3,
    "neural-ts": 4,
    "neural-lingreedy": 5,
    "sigma2-linucb": 6,
    "kernel-ucb": 7,
}


def series_style(k: int, n_points: int = 0) -> dict[str, Any]:
    """Colour, line style and marker of style ``k`` (distinct for k < 32), with a marker every
    ~n_points/8 points."""
    style: dict[str, Any] = {
        "color": PALETTE[k % len(PALETTE)],
        "linestyle": LINESTYLES[(k + k // len(PALETTE)) % len(LINESTYLES)],
        "marker": MARKERS[(k + 3 * (k // len(PALETTE))) % len(MARKERS)],
        "markersize": 4,
        "linewidth": 1.6,
    }
    if n_points > 12:
        style["markevery"] = max(n_points // 8, 1)
    return style


def series_styles(labels: Sequence[str], n_points: int = 0) -> list[dict[str, Any]]:
    """One style per label: a main policy (by the name before any ``:``) keeps its fixed style
    (:data:`FIXED_STYLES`; among variants of one policy, the plain name keeps it); every other
    label takes the first style not used in this figure, so no two series share one."""
    names = [label.split(":")[0].strip() for label in labels]
    fixed = [FIXED_STYLES.get(name) for name in names]
    plain = [label.strip() == name for label, name in zip(labels, names, strict=True)]
    owners: dict[int, int] = {}  # style → the label that keeps it: the plain name, else the first
    for i, k in enumerate(fixed):
        if k is not None and (k not in owners or (plain[i] and not plain[owners[k]])):
            owners[k] = i
    taken = set(owners)
    indices = []
    for i, k in enumerate(fixed):
        if k is None or owners[k] != i:  # not a main policy, or a variant of one already drawn
            k = next(j for j in itertools.count() if j not in taken)
            taken.add(k)
        indices.append(k)
    return [series_style(k, n_points) for k in indices]


P = ParamSpec("P")
R = TypeVar("R")


def styled(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a figure function under the library's style (:data:`RC`)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import matplotlib

        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def new_figure(
    ncols: int = 1, width: float = 5.0, height: float = 3.4
) -> tuple[Figure, list[Axes]]:
    """A row of ``ncols`` axes on a :class:`~matplotlib.figure.Figure` made without pyplot (no
    global state, no GUI backend: works headless and leaves a notebook's backend alone)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width + (ncols - 1) * 0.75 * width, height))
    axes = fig.subplots(1, ncols, squeeze=False, gridspec_kw={"wspace": 0.3})
    return fig, list(axes[0])


def outside_legend(ax: Axes) -> None:
    """A legend to the right of the axes (never over the data); the saved image widens to hold
    it (``bbox_inches="tight"``), so long labels never shrink the axes."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def title_above(fig: Figure, title: str) -> None:
    """A figure title above the axes' own titles."""
    if title:
        fig.suptitle(title, y=1.0, va="bottom")


def save_figure(fig: Figure, stem: str | Path) -> list[Path]:
    """Write ``<stem>.png`` (150 dpi) and ``<stem>.svg`` atomically; return both paths."""
    stem = Path(stem)
    paths = [stem.with_name(stem.name + ext) for ext in (".png", ".svg")]
    for path, options in zip(paths, ({"dpi": 150}, {"metadata": {"Date": None}}), strict=True):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=path.suffix[1:], bbox_inches="tight", **options)
        write_atomic(path, buffer.getvalue())
    return paths
