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
``sg-ips``     Σ wₜ/(1 − λ + λwₜ) rₜ / n                                           Metelli et al.
                                                                                   2021, Eq. 12
``sg-dr``      Σ [q̂(xₜ, π) + wₜ/(1 − λ + λwₜ) (rₜ − q̂(xₜ, aₜ))] / n                 Metelli et al.
                                                                                   2021
============== =================================================================== ==============

These are the definitions of Open Bandit Pipeline 0.4.1 (``obp.ope``; Switch-DR keeps q̂(xₜ, π)
on every round and drops the correction where wₜ > τ), which ``benchmarks/ope.py`` checks to
1e-10. Each is a :class:`~deepbandits.ope.estimator.RatioEstimator` (one class, its
hyperparameters its fields), so that the same sums give the estimate on the log and on every
bootstrap resample at once (:mod:`deepbandits.ope.bootstrap`); the weight functions below are
the pure functions they are built from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_positive
from deepbandits.errors import InputValueError
from deepbandits.ope.estimator import MeanEstimator, RatioEstimator, Terms, register_estimator

Array = NDArray[np.float64]

#: Switch-DR's threshold τ and DRos's shrinkage λ when none is given (fixed, not tuned).
SWITCH_TAU = 100.0
SHRINKAGE_LAMBDA = 100.0


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
    """λw / (w² + λ): the optimistic shrinkage of DRos (Su et al. 2020, Eq. 6); λ = ∞ is w,
    and a weight of 0 stays 0 (at λ = 0 too, where the ratio is 0/0: its limit)."""
    if np.isinf(lam):
        return w.copy()
    denominator = w * w + lam
    return np.divide(lam * w, denominator, out=np.zeros_like(w), where=denominator > 0)


def power_mean_weights(w: Array, lam: float) -> Array:
    """w / (1 − λ + λw): the power-mean correction of the sub-Gaussian estimators (Metelli,
    Russo & Restelli 2021, Eq. 12 with s = −1); λ = 0 is w, λ = 1 is 1 (no reweighting), and in
    between each weight is below 1/λ; a weight of 0 stays 0 (at λ = 1 too, its limit)."""
    denominator = 1.0 - lam + lam * w
    return np.divide(w, denominator, out=np.zeros_like(w), where=denominator > 0)


def effective_sample_size(w: Array, counts: Array | None = None) -> float:
    """Kish's effective sample size (Σ w)² / Σ w² of importance weights (Kong 1992; Owen 2013,
    Eq. 9.13): n for equal weights, 1 when one weight dominates; 0 when every weight is 0."""
    c = np.ones_like(w) if counts is None else counts
    s2 = float(c @ (w * w))
    return float((c @ w) ** 2 / s2) if s2 > 0 else 0.0


def check_threshold(value: object, name: str) -> float:
    """A threshold ≥ 0, infinity allowed (Switch-DR's τ = ∞ and DRos's λ = ∞ are DR)."""
    if isinstance(value, float) and value == float("inf"):
        return value
    return check_positive(value, name, allow_zero=True)


@register_estimator
@dataclass(frozen=True)
class IPS(MeanEstimator):
    """Σ wₜ rₜ / n (Horvitz & Thompson 1952; Strehl et al. 2010); a subclass that transforms
    the weights (:meth:`weights`) is another member of the family."""

    short = "ips"
    display = "IPS"

    def weights(self, w: Array) -> Array:
        """The weights that multiply the rewards: wₜ itself."""
        return w

    def term(self, terms: Terms) -> Array:
        return self.weights(terms.w) * terms.rewards


@register_estimator
@dataclass(frozen=True)
class SNIPS(RatioEstimator):
    """Σ wₜ rₜ / Σ wₜ (Swaminathan & Joachims 2015)."""

    short = "snips"
    display = "SNIPS"

    def columns(self, terms: Terms) -> dict[str, Array]:
        return {"[ips]": IPS().term(terms), "w": terms.w}  # IPS's column, shared with it

    def ratios(self) -> tuple[tuple[str, str], ...]:
        return (("[ips]", "w"),)


@register_estimator
@dataclass(frozen=True)
class DM(MeanEstimator):
    """Σ q̂(xₜ, π) / n, the direct method (Beygelzimer & Langford 2009)."""

    short = "dm"
    display = "DM"
    needs_model = True

    def term(self, terms: Terms) -> Array:
        return terms.model(self)[0]


@register_estimator
@dataclass(frozen=True)
class DR(MeanEstimator):
    """Σ [q̂(xₜ, π) + wₜ (rₜ − q̂(xₜ, aₜ))] / n, doubly robust (Dudík et al. 2011, Eq. 3); a
    subclass that transforms the weights of the correction (:meth:`weights`: Switch-DR, DRos,
    sub-Gaussian DR) is another member of the family."""

    short = "dr"
    display = "DR"
    needs_model = True

    def weights(self, w: Array) -> Array:
        """The weights of the correction rₜ − q̂(xₜ, aₜ): wₜ itself."""
        return w

    def term(self, terms: Terms) -> Array:
        dm, residual = terms.model(self)
        return dm + self.weights(terms.w) * residual


@register_estimator
@dataclass(frozen=True)
class SNDR(RatioEstimator):
    """Σ q̂(xₜ, π) / n + Σ wₜ (rₜ − q̂(xₜ, aₜ)) / Σ wₜ, self-normalised DR (Kallus & Uehara
    2019)."""

    short = "sndr"
    display = "SNDR"
    needs_model = True

    def columns(self, terms: Terms) -> dict[str, Array]:
        dm, residual = terms.model(self)
        return {"[dm]": dm, "wres": terms.w * residual, "w": terms.w}  # DM's column, shared

    def ratios(self) -> tuple[tuple[str, str], ...]:
        return (("[dm]", "one"), ("wres", "w"))


@register_estimator
@dataclass(frozen=True)
class SwitchDR(DR):
    """Σ [q̂(xₜ, π) + 1{wₜ ≤ τ} wₜ (rₜ − q̂(xₜ, aₜ))] / n (Wang, Agarwal & Dudík 2017)."""

    tau: float = SWITCH_TAU
    short = "switch-dr"
    display = "Switch-DR"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tau", check_threshold(self.tau, "tau"))

    def weights(self, w: Array) -> Array:
        return switched_weights(w, self.tau)


@register_estimator
@dataclass(frozen=True)
class DRos(DR):
    """Σ [q̂(xₜ, π) + λwₜ/(wₜ² + λ) (rₜ − q̂(xₜ, aₜ))] / n, DR with optimistic shrinkage (Su et
    al. 2020, Eq. 6)."""

    lam: float = SHRINKAGE_LAMBDA
    short = "dr-os"
    display = "DRos"

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", check_threshold(self.lam, "lam"))

    def weights(self, w: Array) -> Array:
        return shrunk_weights(w, self.lam)


def _unit_interval(value: object, name: str) -> float:
    value = check_positive(value, name, allow_zero=True)
    if value > 1:
        raise InputValueError(f"{name} must be in [0, 1], but {value} is given")
    return value


@register_estimator
@dataclass(frozen=True)
class SubGaussianIPS(IPS):
    """Σ wₜ/(1 − λ + λwₜ) rₜ / n, sub-Gaussian IPS (Metelli et al. 2021): λ = 0 is IPS, larger λ
    trades bias for lighter tails. The default λ = 0 changes nothing: choose λ, or let
    ``sg-ips-slope`` choose it."""

    lam: float = 0.0
    short = "sg-ips"
    display = "SG-IPS"
    in_all = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", _unit_interval(self.lam, "lam"))

    def weights(self, w: Array) -> Array:
        return power_mean_weights(w, self.lam)


@register_estimator
@dataclass(frozen=True)
class SubGaussianDR(DR):
    """Σ [q̂(xₜ, π) + wₜ/(1 − λ + λwₜ) (rₜ − q̂(xₜ, aₜ))] / n, sub-Gaussian DR (Metelli et al.
    2021): λ = 0 is DR."""

    lam: float = 0.0
    short = "sg-dr"
    display = "SG-DR"
    in_all = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", _unit_interval(self.lam, "lam"))

    def weights(self, w: Array) -> Array:
        return power_mean_weights(w, self.lam)
