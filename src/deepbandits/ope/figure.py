"""The figure of an off-policy evaluation: each estimator's estimate with its interval, and the
truth or the logging policy's value as reference lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from deepbandits.plotting.style import PALETTE, new_figure, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@styled
def estimates_figure(
    table: pd.DataFrame, title: str = "", references: dict[str, float] | None = None
) -> Figure:
    """Estimates (points) and intervals (bars) per estimator, one row each; a dashed vertical
    line per reference value (``{"truth": 0.0042}``); a ``truth`` column of the table is drawn
    as the truth."""
    refs = dict(references or {})
    if "truth" in table.columns and table["truth"].notna().any():
        refs.setdefault("truth", float(table["truth"].iloc[0]))
    labels = list(table["name"] if "name" in table.columns else table["estimator"])
    y = np.arange(len(labels))[::-1]
    fig, (ax,) = new_figure(height=0.35 * len(labels) + 1.2)
    est = table["estimate"].to_numpy(dtype=float)
    lo, hi = table["lower"].to_numpy(dtype=float), table["upper"].to_numpy(dtype=float)
    has = np.isfinite(lo) & np.isfinite(hi)
    ax.errorbar(
        est[has],
        y[has],
        xerr=np.vstack([est[has] - lo[has], hi[has] - est[has]]),
        fmt="o",
        color=PALETTE[0],
        capsize=3,
        label="estimate and interval",
    )
    ax.plot(est[~has], y[~has], "o", color=PALETTE[0])
    for k, (name, value) in enumerate(refs.items()):
        ax.axvline(value, color=PALETTE[(k + 1) % len(PALETTE)], ls="--", lw=1, label=name)
    ax.set_yticks(y, labels)
    ax.set_xlabel("estimated value (mean reward per round)")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
    return fig
