"""The off-policy estimators, as pure functions of per-round columns.

Every estimator of the value V(π) = E_x E_{a∼π(·|x)} [r] below is a sum of ratios of means of
per-round terms. Writing wₜ = π(aₜ | xₜ) / π₀(aₜ | xₜ) for the importance weight,
q̂(x, a) for a reward model and q̂(x, π) = Σₐ π(a | x) q̂(x, a):

============== =================================================================== ==============
name           estimate                                                            reference
============== =================================================================== ==============
``ips``        Σ wₜ rₜ / n                                                         Horvitz-Thompson
                                                                                   1952; Strehl
                                                                                   et al. 2010
``snips``      Σ wₜ rₜ / Σ wₜ                                                      Swaminathan &
                                                                                   Joachims 2015
``dm``         Σ q̂(xₜ, π) / n                                                      Beygelzimer &
                                                                                   Langford 2009
``dr``         Σ [q̂(xₜ, π) + wₜ (rₜ − q̂(xₜ, aₜ))] / n                              Dudík et al.
                                                                                   2011, Eq. 3
``sndr``       Σ q̂(xₜ, π) / n + Σ wₜ (rₜ − q̂(xₜ, aₜ)) / Σ wₜ                        Kallus & Uehara
                                                                                   2019
``switch-dr``  Σ [q̂(xₜ, π) + 1{wₜ ≤ τ} wₜ (rₜ − q̂(xₜ, aₜ))] / n                     Wang, Agarwal
                                                                                   & Dudík 2017
``dr-os``      Σ [q̂(xₜ, π) + λwₜ/(wₜ² + λ) (rₜ − q̂(xₜ, aₜ))] / n                    Su et al. 2020,
                                                                                   Eq. 6
============== =================================================================== ==============

These are the definitions of Open Bandit Pipeline 0.4.1 (``obp.ope``; Switch-DR keeps q̂(xₜ, π)
on every round and drops the correction where wₜ > τ), which ``benchmarks/ope.py`` checks to
1e-10. Each estimator is written as ``ratios``: pairs (numerator column, denominator column) of
the term table :func:`term_table`, so that the same sums give the estimate on the log (weights
1) and on every bootstrap resample at once (:mod:`deepbandits.ope.bootstrap`).
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

#: Display names, in table order.
ESTIMATORS: Final[dict[str, str]] = {
    "ips": "IPS",
    "snips": "SNIPS",
    "dm": "DM",
    "dr": "DR",
    "sndr": "SNDR",
    "switch-dr": "Switch-DR",
    "dr-os": "DRos",
}
#: Estimators that need a reward model q̂.
MODEL_BASED: Final = frozenset({"dm", "dr", "sndr", "switch-dr", "dr-os"})

#: Columns of the term table, each a per-round term whose sum enters an estimate.
COLUMNS: Final = ("one", "w", "wr", "dm", "dr", "wres", "switch", "shrunk")

#: Each estimator as Σ over its pairs of (Σ numerator column) / (Σ denominator column).
RATIOS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "ips": (("wr", "one"),),
    "snips": (("wr", "w"),),
    "dm": (("dm", "one"),),
    "dr": (("dr", "one"),),
    "sndr": (("dm", "one"), ("wres", "w")),
    "switch-dr": (("switch", "one"),),
    "dr-os": (("shrunk", "one"),),
}


def importance_weights(
    action_dist: Array, actions: NDArray[np.int64], propensities: Array
) -> Array:
    """wₜ = π(aₜ | xₜ) / π₀(aₜ | xₜ) of every round, from π's distribution ``[n, K]``."""
    return action_dist[np.arange(len(actions)), actions] / propensities


def policy_model_value(action_dist: Array, q_hat: Array) -> Array:
    """q̂(xₜ, π) = Σₐ π(a | xₜ) q̂(xₜ, a) of every round (the direct method's term).

    Divided by Σₐ π(a | xₜ) as ``numpy.average`` (and so OBP) does, which is 1 up to rounding.
    """
    return (action_dist * q_hat).sum(axis=1) / action_dist.sum(axis=1)


def switched_weights(w: Array, tau: float) -> Array:
    """1{w ≤ τ}·w: Switch-DR's weights (Wang et al. 2017, Eq. 8 as OBP writes it)."""
    return np.where(w <= tau, w, 0.0)


def shrunk_weights(w: Array, lam: float) -> Array:
    """λw / (w² + λ): the optimistic shrinkage of DRos (Su et al. 2020, Eq. 6); λ = ∞ is w."""
    if np.isinf(lam):
        return w.copy()
    return lam * w / (w * w + lam)


def effective_sample_size(w: Array, counts: Array | None = None) -> float:
    """Kish's effective sample size (Σ w)² / Σ w² of importance weights (Kong 1992; Owen 2013,
    Eq. 9.13): n for equal weights, 1 when one weight dominates; 0 when every weight is 0."""
    c = np.ones_like(w) if counts is None else counts
    s2 = float(c @ (w * w))
    return float((c @ w) ** 2 / s2) if s2 > 0 else 0.0


def term_table(
    rewards: Array,
    w: Array,
    dm: Array | None = None,
    q_logged: Array | None = None,
    *,
    tau: float = np.inf,
    lam: float = np.inf,
) -> Array:
    """The per-round terms ``[n, len(COLUMNS)]`` whose sums make every estimate.

    Parameters
    ----------
    rewards, w : ndarray ``[n]``
        Rewards rₜ and importance weights wₜ.
    dm : ndarray ``[n]``, optional
        q̂(xₜ, π) (:func:`policy_model_value`); zeros without a reward model.
    q_logged : ndarray ``[n]``, optional
        q̂(xₜ, aₜ) of the logged action; zeros without a reward model.
    tau, lam : float
        Switch-DR's threshold τ and DRos's shrinkage λ.
    """
    n = len(rewards)
    dm = np.zeros(n) if dm is None else dm
    residual = rewards - (np.zeros(n) if q_logged is None else q_logged)
    wres = w * residual
    table = np.empty((n, len(COLUMNS)))
    table[:, 0] = 1.0
    table[:, 1] = w
    table[:, 2] = w * rewards
    table[:, 3] = dm
    table[:, 4] = dm + wres
    table[:, 5] = wres
    table[:, 6] = dm + switched_weights(w, tau) * residual
    table[:, 7] = dm + shrunk_weights(w, lam) * residual
    return table


def estimates_from_sums(sums: Array, names: list[str]) -> Array:
    """Each named estimate from column sums ``[..., len(COLUMNS)]`` (the log's, or every
    resample's at once): ``[..., len(names)]``. A ratio whose denominator is 0 (no weight on a
    resample) is NaN."""
    col = {c: i for i, c in enumerate(COLUMNS)}
    out = np.zeros((*sums.shape[:-1], len(names)))
    with np.errstate(divide="ignore", invalid="ignore"):
        for j, name in enumerate(names):
            for num, den in RATIOS[name]:
                out[..., j] += sums[..., col[num]] / sums[..., col[den]]
    return out


def point_estimates(table: Array, names: list[str]) -> Array:
    """The estimates on the log itself, each a mean or ratio of means of its column(s)."""
    return estimates_from_sums(table.sum(axis=0), names)
