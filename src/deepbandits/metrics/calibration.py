"""Calibration and sharpness of a policy's reward forecasts (Appendix B.3, Eqs. calib, sharpness,
calib2), as pure functions of forecasts and outcomes.

A forecast Fₜ is a distribution for the reward rₜ; a UCB policy's forecast is a Gaussian with its
predicted mean and a standard deviation derived from its exploration width. Calibration asks
that a p-quantile forecast be exceeded 1 − p of the time: the probability integral transform
Fₜ(rₜ) is then uniform on [0, 1].
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr

from deepbandits._validation import as_real_array
from deepbandits.errors import InputValueError

#: The confidence levels p₁ < … < p_m of Eq. calib by default: 0.05, 0.10, …, 0.95.
DEFAULT_LEVELS: NDArray[np.float64] = np.round(np.arange(1, 20) * 0.05, 2)


def _levels(levels: ArrayLike | None) -> NDArray[np.float64]:
    p = DEFAULT_LEVELS if levels is None else as_real_array(levels, "levels")
    if p.ndim != 1 or p.size == 0:
        raise InputValueError(
            f"levels must be a non-empty 1-d sequence, but an array of shape {p.shape} is given"
        )
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1) or np.any(np.diff(p) <= 0):
        raise InputValueError(f"levels must be increasing and lie in [0, 1], but {p} is given")
    return p


def gaussian_pit(rewards: ArrayLike, mean: ArrayLike, std: ArrayLike) -> NDArray[np.float64]:
    """Fₜ(rₜ) for Gaussian forecasts N(meanₜ, stdₜ²); a zero std is a point forecast (a step)."""
    r, m, s = (as_real_array(v, n) for v, n in ((rewards, "rewards"), (mean, "mean"), (std, "std")))
    if r.shape != m.shape or r.shape != s.shape:
        raise InputValueError(
            f"rewards, mean and std must have one shape, but shapes {r.shape}, {m.shape} and "
            f"{s.shape} are given"
        )
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        bad = s[~(np.isfinite(s) & (s >= 0))][0]
        raise InputValueError(f"std must be finite and >= 0, but it holds {bad}")
    z = np.divide(r - m, s, out=np.where(r >= m, np.inf, -np.inf), where=s > 0)
    return ndtr(z)


def observed_frequencies(pit: ArrayLike, levels: ArrayLike | None = None) -> NDArray[np.float64]:
    """|{t : Fₜ(rₜ) ≤ p_j}| / T for each level p_j: the observed side of a reliability diagram."""
    u = as_real_array(pit, "pit").ravel()
    if u.size == 0:
        raise InputValueError("pit must hold at least one forecast's Fₜ(rₜ), but it is empty")
    p = _levels(levels)
    return np.searchsorted(np.sort(u), p, side="right") / u.size


def calibration_error(pit: ArrayLike, levels: ArrayLike | None = None) -> float:
    """cal = Σⱼ (p_j − |{t : Fₜ(rₜ) ≤ p_j}|/T)² (Eq. calib over rounds, Eq. calib2 over a
    hold-out set)."""
    p = _levels(levels)
    return float(np.sum((p - observed_frequencies(pit, p)) ** 2))


def reliability_table(pit: ArrayLike, levels: ArrayLike | None = None) -> pd.DataFrame:
    """Reliability-diagram data: ``expected`` level p_j, ``observed`` frequency, their gap."""
    p = _levels(levels)
    observed = observed_frequencies(pit, p)
    return pd.DataFrame({"expected": p, "observed": observed, "gap": observed - p})


def sharpness(variances: ArrayLike) -> float:
    """sha = √(mean over t of Var(Fₜ)) (Eq. sharpness): smaller means tighter forecasts."""
    v = as_real_array(variances, "variances")
    if v.size == 0 or np.any(v < 0) or not np.all(np.isfinite(v)):
        raise InputValueError(
            f"variances must be a non-empty array of finite values >= 0, but "
            f"{'an empty array' if v.size == 0 else v[~(np.isfinite(v) & (v >= 0))][0]} is given"
        )
    return float(np.sqrt(v.mean()))
