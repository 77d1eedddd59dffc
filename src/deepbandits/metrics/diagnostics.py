"""Per-run uncertainty and estimation diagnostics (Section 5.3, Appendix B.3), from a run's
per-round record and hold-out forecasts (:mod:`deepbandits.experiments.runner`).

The forecast Fₜ of a policy at round t is the Gaussian N(μₜ, wₜ²) of its predicted mean μₜ and
exploration width wₜ for the arm it played (:meth:`~deepbandits.policies.Policy.predict`). As in
the paper's code, the width is not multiplied by α and no noise variance is added:

* LinUCB and the neural-linear family: wₜ = √(φᵀA⁻¹φ). For the σ²-weighted ridge
  (A = λI + Σ φφᵀ/σ̄²ₛ) this is the posterior standard deviation of θᵀφ in reward units; for the
  unweighted ridge it is the same under unit noise variance, which is why the paper reports
  Neural-LinUCB and LinUCB as sharp but over-confident.
* NeuralUCB and NeuralTS: wₜ = √(gᵀZ⁻¹g/m), the width their index multiplies by γ (ν).
* BootstrappedNN: the standard deviation of its members' predictions (its mean in-run is the
  prediction of the member it follows that round, on the hold-out set the members' average).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import as_real_array, check_int, check_real
from deepbandits.errors import InputValueError
from deepbandits.metrics.calibration import (
    calibration_error,
    gaussian_pit,
    observed_frequencies,
    sharpness,
)


def mean_estimation_error(expected: ArrayLike, mean: ArrayLike) -> NDArray[np.float64]:
    """|h(xₜ,ₐₜ) − θₜᵀφ(xₜ,ₐₜ)| per round (Fig. ablation_study2 (a))."""
    return np.abs(as_real_array(expected, "expected") - as_real_array(mean, "mean"))


def variance_estimation_error(width: ArrayLike, variance: ArrayLike) -> NDArray[np.float64]:
    """|φᵀA⁻¹φ − Var(rₜ)| = |wₜ² − Var(rₜ)| per round (Fig. ablation_study (b))."""
    w = as_real_array(width, "width")
    return np.abs(w * w - as_real_array(variance, "variance"))


def window_accuracy(regret: ArrayLike, window: int = 1000) -> float:
    """Fraction of the last ``window`` rounds (all rounds if fewer) played with zero regret: on a
    classification bandit, the accuracy of the arms chosen."""
    r = as_real_array(regret, "regret")[-check_int(window, "window", minimum=1) :]
    return float(np.mean(r == 0.0)) if len(r) else float("nan")


def mean_gap(mean: ArrayLike, arm: int, mask: ArrayLike | None = None) -> float:
    """maxₐ μₐ − μₐₜ over the available arms (``mask``; None: all): the predicted mean a choice
    gave up. 0 when the arm played ``arm`` is a greedy one (ties included); > 0 when its width
    (UCB) or a draw (Thompson sampling, ε) chose another arm: an exploring round."""
    mu = as_real_array(mean, "mean")
    if mu.ndim != 1 or not 0 <= check_int(arm, "arm", minimum=0) < len(mu):
        raise InputValueError(
            f"arm must index the 1-d mean (shape {mu.shape}), but arm {arm!r} is given"
        )
    if mask is None:
        return float(mu.max() - mu[arm])
    available = np.asarray(mask, dtype=bool)
    if available.shape != mu.shape or not available[arm]:
        raise InputValueError(
            f"mask must be a boolean [{len(mu)}] that makes arm {arm} available, but "
            f"{np.asarray(mask)!r} is given"
        )
    return float(mu[available].max() - mu[arm])


def explored_rounds(mean_gap: ArrayLike) -> NDArray[np.bool_]:
    """Which rounds explored: played an arm whose predicted mean was below the largest
    (:func:`mean_gap` > 0). NaN gaps (a policy without means) are not exploring rounds."""
    return as_real_array(mean_gap, "mean_gap") > 0.0


def exploration_split(regret: ArrayLike, mean_gap: ArrayLike) -> dict[str, float]:
    """How much of a run explored, and what that cost: the share of rounds whose arm was not a
    greedy one (``explored_share``) and the regret paid in them (``explored_regret``; the rest
    of the regret is the greedy choices' mistakes). NaN for both when the record has no finite
    gaps (runs saved before the ``mean_gap`` column)."""
    r, gap = as_real_array(regret, "regret"), as_real_array(mean_gap, "mean_gap")
    if r.shape != gap.shape:
        raise InputValueError(
            f"regret and mean_gap must have the same length, but shapes {r.shape} and "
            f"{gap.shape} are given"
        )
    if not len(gap) or not np.isfinite(gap).any():
        return {"explored_share": float("nan"), "explored_regret": float("nan")}
    explored = explored_rounds(gap)
    return {"explored_share": float(explored.mean()), "explored_regret": float(r[explored].sum())}


def _arm_indices(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """A 1-d sequence of whole-number arm indices as int64 (a float column of whole numbers,
    as pandas reads one with gaps, is accepted; 2.5 is not)."""
    x = as_real_array(values, name)
    if x.ndim != 1:
        raise InputValueError(
            f"{name} must be 1-d (one arm per round), but shape {x.shape} is given"
        )
    if not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
        bad = x[~np.isfinite(x) | (x != np.round(x))][0]
        raise InputValueError(f"{name} must hold whole-number arm indices, but it holds {bad}")
    return x.astype(np.int64)


def unplayed_arms(arms: ArrayLike, n_arms: int, window: int = 1000) -> int:
    """How many of the arms 0..n_arms−1 were never played in the last ``window`` rounds: on a
    classification bandit, the classes the policy has locked out."""
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    played = np.unique(_arm_indices(arms, "arms")[-check_int(window, "window", minimum=1) :])
    return int(n_arms - np.count_nonzero((played >= 0) & (played < n_arms)))


def locked_out_arms(
    arms: ArrayLike,
    best_arms: ArrayLike,
    n_arms: int,
    window: int = 1000,
    min_share: float = 0.01,
) -> int:
    """How many arms were the best arm in at least ``min_share`` of the last ``window`` rounds
    and were never played in them: the arms a policy has locked out while they still pay.

    :func:`unplayed_arms` also counts an arm that was never worth playing: on shuttle two of the
    seven classes occur about once in 10,000 samples, and a policy that never plays them loses
    nothing by it. ``best_arms`` is the record's ``best_arm`` column (argmaxₐ h(xₜ, a)).
    """
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    window = check_int(window, "window", minimum=1)
    if not 0 <= check_real(min_share, "min_share") <= 1:
        raise InputValueError(f"min_share must be in [0, 1], but {min_share!r} is given")
    all_played, all_best = _arm_indices(arms, "arms"), _arm_indices(best_arms, "best_arms")
    if all_played.shape != all_best.shape:
        raise InputValueError(
            f"arms and best_arms must have the same length, but lengths {len(all_played)} and "
            f"{len(all_best)} are given"
        )
    played, best = all_played[-window:], all_best[-window:]
    n_best = np.bincount(best[(best >= 0) & (best < n_arms)], minlength=n_arms)
    n_played = np.bincount(played[(played >= 0) & (played < n_arms)], minlength=n_arms)
    return int(np.count_nonzero((n_best >= min_share * len(best)) & (n_best > 0) & (n_played == 0)))


def _forecasts(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with a finite mean and width (a policy may leave a round unscored)."""
    ok = np.isfinite(frame["mean"].to_numpy()) & np.isfinite(frame["width"].to_numpy())
    return frame[ok]


def run_metrics(records: pd.DataFrame, levels: ArrayLike | None = None) -> dict[str, float]:
    """One run's summary: final regret, cumulative reward, cal₁ (Eq. calib) and sharpness
    (Eq. sharpness) of its in-run forecasts, mean |h − μ| and, when the environment reports
    Var(rₜ), mean |w² − Var(rₜ)|, and what share of the rounds explored and the regret they
    cost (:func:`exploration_split`)."""
    f = _forecasts(records)
    out = {
        "final_regret": float(records["cum_regret"].iloc[-1]),
        "cumulative_reward": float(records["reward"].sum()),
        "calibration_error": np.nan,
        "sharpness": np.nan,
        "mean_error": np.nan,
        "variance_error": np.nan,
        "explored_share": np.nan,
        "explored_regret": np.nan,
    }
    if "mean_gap" in records:
        out.update(exploration_split(records["regret"], records["mean_gap"]))
    if len(f):
        pit = gaussian_pit(f["reward"], f["mean"], f["width"])
        out["calibration_error"] = calibration_error(pit, levels)
        out["sharpness"] = sharpness(f["width"].to_numpy() ** 2)
        out["mean_error"] = float(mean_estimation_error(f["expected_reward"], f["mean"]).mean())
        var = f["sigma2_oracle"].to_numpy()
        if np.isfinite(var).all():
            out["variance_error"] = float(variance_estimation_error(f["width"], var).mean())
    return out


def reliability_curve(frame: pd.DataFrame, levels: ArrayLike | None = None) -> NDArray[np.float64]:
    """Observed frequency |{Fₜ(rₜ) ≤ p_j}|/T of each level for the forecasts of ``frame``
    (columns ``reward``, ``mean``, ``width``): the curve of a reliability diagram."""
    f = _forecasts(frame)
    return observed_frequencies(gaussian_pit(f["reward"], f["mean"], f["width"]), levels)


def holdout_calibration(holdout: pd.DataFrame, levels: ArrayLike | None = None) -> pd.DataFrame:
    """cal₂ (Eq. calib2) of a run's hold-out forecasts at each checkpoint, over all arms
    (``arm`` = "all") and per arm."""
    rows: list[dict[str, Any]] = []
    for t, at_t in holdout.groupby("checkpoint", sort=True):
        parts = [("all", at_t), *((str(a), g) for a, g in at_t.groupby("arm", sort=True))]
        for arm, g in parts:
            f = _forecasts(g)
            cal = calibration_error(gaussian_pit(f["reward"], f["mean"], f["width"]), levels)
            rows.append({"checkpoint": int(t), "arm": arm, "cal2": cal, "n": len(f)})
    return pd.DataFrame(rows)
