"""Variance sources: where the noise-variance bound σ²ₜ of each round comes from (Algorithm 1,
line 10), one class per source.

* :class:`NoWeighting`: every observation has weight 1 (the plain ridge of Eq. 5).
* :class:`OracleVariance`: σ²ₜ given by the caller (the environment's true Var(rₜ)), Section 3.1.
* :class:`RangeBound`: σ̂²ₜ = (b − μ̂)(μ̂ − a) with μ̂ = θₜ₋₁ᵀφ(xₜ,ₐₜ), Eq. 13, Section 3.2;
  with ``confidence`` c > 0, the largest (b − μ)(μ − a) for μ within c·√(φᵀA⁻¹φ) of μ̂.
* :class:`PredictiveVariance`: σ²ₜ = φᵀA⁻¹φ of the arm played, the predictive variance that the
  MLE loss of Eq. 14 fits (the Neural_MLE_Var ablation of Section 5.5, Fig. ablation_study).
* :class:`ScheduledVariance`: a user-given sequence σ²ₜ (the heuristic of Fig. heuristic).

All but :class:`NoWeighting` are floored, σ̄² = max(σ², R²/d′) (Eq. 9), and the observation
weight is 1/σ̄². A source is asked for :meth:`~VarianceSource.raw` of one round with the head's
estimate of that round (:class:`RoundEstimate`); it says through ``needs`` which estimates it
reads, so the head computes only those.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits.errors import InputValueError
from deepbandits.policies.params import (
    HORIZON_SPEC,
    R_SPEC,
    RANGE_CONFIDENCE_SPEC,
    SCHEDULE_SPEC,
    Spec,
)
from deepbandits.policies.parts.part import Part

Array = NDArray[np.float64]
_LINEAR_SPEC = re.compile(r"^linear:([^:]+):([^:]+)(?::(\d+))?$")


def range_variance_bound(mean: ArrayLike, a: float, b: float) -> Array:
    """σ̂² = (b − μ̂)(μ̂ − a), the variance bound of a reward in [a, b] with mean μ̂ (Eq. 13).

    Theorem 3.2: a random variable confined to [a, b] with mean μ has variance at most
    (b − μ)(μ − a). The value is negative when μ̂ falls outside [a, b]; the floor of
    :func:`floored_variance` is always applied after it.
    """
    mu = mean if isinstance(mean, float) else np.asarray(mean, dtype=np.float64)
    return (b - mu) * (mu - a)  # type: ignore[no-any-return]


def range_variance_bound_near(mean: float, half_width: float, a: float, b: float) -> float:
    """The largest (b − μ)(μ − a) over μ ∈ [μ̂ − h, μ̂ + h]: Eq. 13's bound for a mean known
    only to within ``half_width`` h of ``mean`` μ̂.

    (b − μ)(μ − a) is a parabola with its top at the middle (a + b)/2 of the range, so the
    largest value is at the point of the interval nearest the middle. With h = 0 it is
    :func:`range_variance_bound` of μ̂; once h reaches the distance from μ̂ to the middle it is
    the range's largest variance, (b − a)²/4.
    """
    middle = 0.5 * (a + b)
    nearest = min(max(middle, mean - half_width), mean + half_width)
    return float(range_variance_bound(nearest, a, b))


def variance_floor(R: float, d: int) -> float:
    """The floor R²/d of σ̄² = max(σ², R²/d) (Eq. 9, Algorithm 1 line 11)."""
    return R * R / d


def floored_variance(sigma2: ArrayLike, R: float, d: int) -> Array:
    """σ̄² = max(σ², R²/d), the proxy variance that weights each ridge observation (Eq. 9–10)."""
    floor = variance_floor(R, d)
    if isinstance(sigma2, float):  # one round: the same number, without an array round trip
        return max(sigma2, floor)  # type: ignore[return-value]  # NaN stays NaN, as np.maximum
    return np.maximum(np.asarray(sigma2, dtype=np.float64), floor)


def parse_variance_schedule(
    spec: str | Sequence[float], horizon: int | None, *, required: bool = True
) -> Array | None:
    """Turn a σ² schedule into an array σ²₁..σ²_T.

    ``spec`` is either a sequence of non-negative floats or ``"linear:START:END[:T]"``, σ² moving
    linearly from START to END over T rounds (T from the spec, else ``horizon``); e.g.
    ``"linear:1:0"`` is the paper's heuristic "σ²ₜ decreasing from 1 to 0" (Fig. heuristic).
    With ``required=False`` a linear spec without any horizon is only checked and ``None`` is
    returned (the horizon may still be set before the first round).
    """
    if isinstance(spec, str):
        match = _LINEAR_SPEC.match(spec.strip())
        if match is None:
            raise InputValueError(
                f"schedule {spec!r} is not understood; expected 'linear:START:END[:T]' "
                "or a sequence of floats"
            )
        try:
            start, end = float(match.group(1)), float(match.group(2))
        except ValueError as exc:
            raise InputValueError(f"schedule {spec!r}: START and END must be numbers") from exc
        T = int(match.group(3)) if match.group(3) else horizon
        if T is None and not required:
            return None
        if T is None or T < 1:
            raise InputValueError(
                f"schedule {spec!r} needs a horizon: write 'linear:START:END:T' or pass horizon=T"
            )
        values = np.linspace(start, end, T)
    else:
        values = np.asarray(spec, dtype=np.float64)
        if values.ndim != 1 or len(values) == 0:
            raise InputValueError(f"schedule must be a 1-d sequence, got shape {values.shape}")
    if not np.isfinite(values).all() or (values < 0).any():
        raise InputValueError("schedule values must be finite and >= 0")
    return values


@dataclass(frozen=True)
class RoundEstimate:
    """What a variance source may read of one round: its 0-based index ``t``, the head's
    prediction μ̂ = θₜ₋₁ᵀφ and predictive variance φᵀA⁻¹φ of the arm played (NaN unless the
    source ``needs`` them), the caller's oracle σ² and the reward range in force."""

    t: int
    mean: float
    predictive: float
    oracle: float | None
    reward_range: tuple[float, float] | None


class VarianceSource(Protocol):
    """σ²ₜ of one round; ``needs`` names the head estimates it reads ("mean", "predictive")."""

    needs: ClassVar[frozenset[str]]
    weighted: ClassVar[bool]

    def raw(self, est: RoundEstimate) -> float:
        """The unfloored σ²ₜ (or σ̂²ₜ) of the round."""
        ...

    def initialize(self, horizon: int | None) -> None: ...


class _Floored(Part):
    """A weighting source: σ̄² = max(raw, R²/d′) (Eq. 9). ``R`` is the noise bound of Eq. 3."""

    needs: ClassVar[frozenset[str]] = frozenset()
    weighted: ClassVar[bool] = True
    specs: ClassVar[dict[str, Spec]] = {"R": R_SPEC}

    def __init__(self, R: float = 1.0) -> None:
        self.R = R

    def initialize(self, horizon: int | None) -> None:
        return None

    def raw(self, est: RoundEstimate) -> float:
        raise NotImplementedError


class NoWeighting(Part):
    """Unit weights: the unweighted ridge of Eq. 5 (Neural-LinUCB, LinUCB)."""

    needs: ClassVar[frozenset[str]] = frozenset()
    weighted: ClassVar[bool] = False
    R = 1.0

    def initialize(self, horizon: int | None) -> None:
        return None

    def raw(self, est: RoundEstimate) -> float:
        return float("nan")


class OracleVariance(_Floored):
    """σ²ₜ given with each reward (``learn(..., sigma2=v)``): the oracle algorithm, Section 3.1."""

    def raw(self, est: RoundEstimate) -> float:
        if est.oracle is None:
            raise InputValueError(
                "variance='oracle' needs the oracle σ² of each round: update(..., sigma2=v)"
            )
        return est.oracle


class RangeBound(_Floored):
    """σ̂²ₜ = (b − μ̂)(μ̂ − a) from the reward range [a, b] and the head's prediction μ̂ of the
    arm played (Eq. 13): the paper's practical Neural-σ²-LinUCB.

    Parameters
    ----------
    R : float, default=1.0
        Noise bound of Eq. 3 (the floor R²/d′).
    confidence : float, default=0.0
        c ≥ 0. With c > 0 the bound is taken at the μ within c·√(φᵀA⁻¹φ) of μ̂ where it is
        largest (:func:`range_variance_bound_near`; φᵀA⁻¹φ is the weighted ridge's variance
        of μ̂). Eq. 13 is a bound on the noise only if μ̂ is the true mean; while the head is
        uncertain, a μ̂ near an end of the range gives a small σ̂², hence a large weight, to a
        round whose mean may be far from that end. 0 is Eq. 13 as published.

    Notes
    -----
    The bound carries information about the noise only where the noise's variance moves with
    the mean reward. For rewards in {a, b} it is the variance itself, (b − μ)(μ − a). Where the
    noise varies independently of the mean, as in the paper's h2 and h3 (a variance drawn
    afresh each round), the bound cannot follow it: ``benchmarks/h2h3_tie.py`` measured a rank
    correlation of 0.00 and 0.01 with the true variance. There the weights come out nearly flat,
    and the bound mostly rescales λ and α. On a classification bandit the reward is determined
    by the sample, so σ̂² says how sure the head is, not how noisy the reward is; ``confidence``
    limits the weight that gives to an uncertain head's rounds. The site's Records page has
    the measurements.
    """

    specs: ClassVar[dict[str, Spec]] = {"R": R_SPEC, "confidence": RANGE_CONFIDENCE_SPEC}

    def __init__(self, R: float = 1.0, confidence: float = 0.0) -> None:
        super().__init__(R)
        self.confidence = confidence

    @property
    def needs(self) -> frozenset[str]:  # type: ignore[override]
        """μ̂, and φᵀA⁻¹φ when ``confidence`` widens it."""
        return frozenset({"mean", "predictive"} if self.confidence else {"mean"})

    def raw(self, est: RoundEstimate) -> float:
        if est.reward_range is None:
            raise InputValueError(
                "variance='range' needs a reward range [a, b]: pass reward_range=(a, b) to the "
                "policy or to update(), or run it on an environment that declares one"
            )
        if not self.confidence:
            return float(range_variance_bound(est.mean, *est.reward_range))
        half_width = self.confidence * math.sqrt(max(est.predictive, 0.0))
        return range_variance_bound_near(est.mean, half_width, *est.reward_range)


class PredictiveVariance(_Floored):
    """σ²ₜ = φᵀA⁻¹φ of the arm played (the Neural_MLE_Var ablation, Fig. ablation_study)."""

    needs: ClassVar[frozenset[str]] = frozenset({"predictive"})

    def raw(self, est: RoundEstimate) -> float:
        return est.predictive


class ScheduledVariance(_Floored):
    """σ²ₜ from a schedule: ``"linear:START:END[:T]"`` or explicit values (Fig. heuristic);
    a linear schedule without T takes the run's ``horizon``."""

    specs: ClassVar[dict[str, Spec]] = {
        "R": R_SPEC,
        "schedule": SCHEDULE_SPEC,
        "horizon": HORIZON_SPEC,
    }

    def __init__(
        self, schedule: str | Sequence[float] | None, R: float = 1.0, horizon: int | None = None
    ) -> None:
        super().__init__(R)
        self.schedule = schedule
        self.horizon = horizon

    def _check(self) -> None:
        if self.schedule is None:
            raise InputValueError("variance='schedule' needs schedule (e.g. 'linear:1:0:10000')")
        self.values_ = parse_variance_schedule(self.schedule, self.horizon, required=False)

    def initialize(self, horizon: int | None) -> None:
        if self.values_ is None:
            self.values_ = parse_variance_schedule(self.schedule, self.horizon or horizon)

    def raw(self, est: RoundEstimate) -> float:
        assert self.values_ is not None
        if est.t >= len(self.values_):
            raise InputValueError(
                f"schedule has {len(self.values_)} values but round {est.t + 1} is being played"
            )
        return float(self.values_[est.t])


def round_variance(source: Any, est: RoundEstimate, dim: int) -> tuple[float, float]:
    """σ̄²ₜ used to weight the round and the raw estimate (NaN when not weighted): 1 for
    :class:`NoWeighting`, else max(raw, R²/d′) (Eq. 9)."""
    if not source.weighted:
        return 1.0, float("nan")
    raw = source.raw(est)
    return float(floored_variance(raw, source.R, dim)), raw
