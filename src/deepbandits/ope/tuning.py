"""Shrinkage tuned from the data: Switch-DR's τ and DRos's λ chosen by SLOPE.

SLOPE (Su, Srinath & Krishnamurthy 2020, "Adaptive estimator selection for off-policy
evaluation", Algorithm 1) picks one of a family of estimators ordered by variance, each the mean
of a per-round column: the candidates are taken from the widest deviation down, and the next is
accepted while its estimate lies within its own deviation plus c times each accepted one's
(Lepski's principle); the last accepted is chosen. It adapts to the unknown bias of the
low-variance candidates without estimating it. The deviation of a candidate is the Student-t
one, t₍ₙ₋₁₎(1 − δ) √(Var(column) / (n − 1)), and c = √6 − 1 (Tucker & Lee 2021, "Improved
estimator selection for off-policy evaluation"); both as Open Bandit Pipeline 0.5 tunes its
``SwitchDoublyRobustTuning`` and ``DoublyRobustWithShrinkageTuning`` (whose default δ is 0.1,
where ours is 0.05: ``benchmarks/ope_obp.py`` gives both 0.05 on the same inputs).

The choice is made once, on the log; the bootstrap resamples the chosen estimator's column (as
obp's intervals do), so the interval does not count the choice's own variability.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import stdtrit

from deepbandits._validation import check_positive
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.ope.estimator import MeanEstimator, Terms, register_estimator
from deepbandits.ope.estimators import DRos, SubGaussianDR, SubGaussianIPS, SwitchDR

Array = NDArray[np.float64]

#: c of the acceptance rule |V̂ᵢ − V̂ⱼ| ≤ wᵢ + c·wⱼ (Tucker & Lee 2021).
SLOPE_C = float(np.sqrt(6.0) - 1.0)
#: The candidate τ or λ when none are given, from no reweighting (0) to plain DR (∞).
DEFAULT_GRID: tuple[float, ...] = (
    0.0,
    1.0,
    2.0,
    5.0,
    10.0,
    20.0,
    50.0,
    100.0,
    200.0,
    500.0,
    1000.0,
    float("inf"),
)


def student_t_deviation(column: Array, delta: float) -> float:
    """t₍ₙ₋₁₎(1 − δ) √(Var(column) / (n − 1)), Var with divisor n: the half-width of a one-sided
    Student-t bound on the mean of ``column`` (Thomas et al. 2015, Section 2.4)."""
    n = len(column)
    if n < 2:
        return float("inf")
    return float(stdtrit(n - 1, 1.0 - delta) * np.sqrt(np.var(column) / (n - 1)))


def slope_index(values: Sequence[float], widths: Sequence[float], c: float = SLOPE_C) -> int:
    """The index SLOPE chooses among candidates with estimates ``values`` and deviations
    ``widths``: in decreasing width, accept each while |Vₖ − Vⱼ| ≤ wₖ + c·wⱼ for every accepted
    j; the last accepted."""
    if len(values) != len(widths) or not len(values):
        raise InputValueError("SLOPE needs one width per value, and at least one candidate")
    order = np.argsort(-np.asarray(widths, dtype=float), kind="stable")
    accepted: list[int] = []
    for k in map(int, order):
        if all(abs(values[k] - values[j]) <= widths[k] + c * widths[j] for j in accepted):
            accepted.append(k)
        else:
            break
    return accepted[-1]


@dataclass(frozen=True)
class SlopeTuned(MeanEstimator):
    """An estimator of the class :attr:`base` whose one hyperparameter :attr:`param` SLOPE
    chooses from ``grid`` (None: the class's :attr:`default_grid`) on the log (module notes);
    ``delta`` sets the deviations' level."""

    grid: tuple[float, ...] | None = None
    delta: float = 0.05
    base: ClassVar[type[MeanEstimator]]
    param: ClassVar[str]
    default_grid: ClassVar[tuple[float, ...]] = DEFAULT_GRID

    def __post_init__(self) -> None:
        if self.grid is not None:
            values = self.grid if isinstance(self.grid, list | tuple) else [self.grid]
            grid = tuple(self._checked(i, v) for i, v in enumerate(values))
            if not grid or len(set(grid)) < len(grid):
                raise InputValueError(
                    f"grid must be a non-empty list of distinct {self.param} values, but "
                    f"{list(values)} is given"
                )
            object.__setattr__(self, "grid", grid)
        delta = check_positive(self.delta, "delta")
        if delta >= 1:
            raise InputValueError(f"delta must be in (0, 1), but {delta} is given")
        object.__setattr__(self, "delta", delta)

    def _checked(self, i: int, value: object) -> float:
        """``value`` as the base class checks its :attr:`param`, named ``grid[i]`` if refused."""
        try:
            return float(getattr(self.base(**{self.param: value}), self.param))
        except DeepBanditsError as exc:  # a value of the wrong type or out of range
            raise InputValueError(f"grid[{i}]: {exc}") from None

    @property
    def values(self) -> tuple[float, ...]:
        """The candidate values (``grid``, or the class's default)."""
        return self.default_grid if self.grid is None else self.grid

    @property
    def needs_model(self) -> bool:  # type: ignore[override]
        return self.base.needs_model

    def candidates(self) -> list[MeanEstimator]:
        """The estimators of the grid, in its order."""
        return [self.base(**{self.param: value}) for value in self.values]

    def choose(self, terms: Terms) -> MeanEstimator:
        """The candidate SLOPE chooses on ``terms``."""
        candidates = self.candidates()
        columns = [c.term(terms) for c in candidates]
        values = [float(column.mean()) for column in columns]
        widths = [student_t_deviation(column, self.delta) for column in columns]
        return candidates[slope_index(values, widths)]

    def describe(self, terms: Terms) -> str:
        chosen = self.choose(terms)
        value = getattr(chosen, self.param)
        return f"{self.title} (SLOPE chose {self.param}={value:g})"

    def term(self, terms: Terms) -> Array:
        return self.choose(terms).term(terms)


@register_estimator
@dataclass(frozen=True)
class SwitchDRSlope(SlopeTuned):
    """Switch-DR with its threshold τ chosen by SLOPE (Su et al. 2020) from ``grid``."""

    short = "switch-dr-slope"
    display = "Switch-DR, τ by SLOPE"
    base = SwitchDR
    param = "tau"


@register_estimator
@dataclass(frozen=True)
class DRosSlope(SlopeTuned):
    """DRos with its shrinkage λ chosen by SLOPE (Su et al. 2020) from ``grid``."""

    short = "dr-os-slope"
    display = "DRos, λ by SLOPE"
    base = DRos
    param = "lam"


#: λ of the sub-Gaussian estimators, from none (0: IPS, DR) to the logging policy's value (1).
UNIT_GRID: tuple[float, ...] = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


@register_estimator
@dataclass(frozen=True)
class SubGaussianIPSSlope(SlopeTuned):
    """Sub-Gaussian IPS with its λ chosen by SLOPE from ``grid`` (as obp's
    ``SubGaussianInverseProbabilityWeightingTuning``)."""

    short = "sg-ips-slope"
    display = "SG-IPS, λ by SLOPE"
    base = SubGaussianIPS
    param = "lam"
    default_grid = UNIT_GRID


@register_estimator
@dataclass(frozen=True)
class SubGaussianDRSlope(SlopeTuned):
    """Sub-Gaussian DR with its λ chosen by SLOPE from ``grid`` (as obp's
    ``SubGaussianDoublyRobustTuning``)."""

    short = "sg-dr-slope"
    display = "SG-DR, λ by SLOPE"
    base = SubGaussianDR
    param = "lam"
    default_grid = UNIT_GRID
