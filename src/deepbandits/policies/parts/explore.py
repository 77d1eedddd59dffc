"""Exploration rules: the score an arm is chosen by, from the head's mean and width.

* :class:`UCB`: μ + α·w (Eq. 4), with a constant α or the αₜ of Theorem 4.1 (``alpha="theory"``);
* :class:`Greedy`: μ (Neural-LinGreedy);
* :class:`Thompson`: μ + s·w·z with z ~ N(0, 1) per arm, a draw from each arm's posterior
  (NeuralTS's rule; on a ridge head, Thompson sampling on the ridge posterior's marginals);
* SAVE's layered search (:class:`~deepbandits.policies.parts.layers.LayeredSearch`), which keeps
  statistics of its own.

A rule works on arrays of any leading shape (one request ``[K]`` or a batch ``[B, K]``), and gives
the probability it had of playing an arm (:meth:`UCB.propensity`): exact for the deterministic
rules, a Monte Carlo estimate for Thompson sampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from deepbandits.formulas import theory_alpha
from deepbandits.policies.choice import greedy_propensities
from deepbandits.policies.evaluation import Evaluation
from deepbandits.policies.params import DELTA_SPEC, M_SPEC, THEORY_ALPHA_SPEC, Spec
from deepbandits.policies.parts.part import Part, part

Array = NDArray[np.float64]
Mask = NDArray[np.bool_] | None


class TheoryInputs(NamedTuple):
    """The inputs of Theorem 4.1's αₜ besides t, δ, M and K: feature dimension d, σ̄² of the
    last reward, λ, R and the training period H (named as :func:`~deepbandits.formulas.theory_alpha`
    names them)."""

    d: int = 1
    sigma2_bar: float = 1.0
    lam: float = 1.0
    R: float = 1.0
    H: int = 1


@dataclass(slots=True)
class Situation:
    """What a rule may read when it scores a round: rewards learned ``t``, decisions made
    ``round``, the policy's generator and seed, and (computed when a rule asks, by
    :meth:`theory_inputs`) the inputs of Theorem 4.1."""

    t: int
    round: int
    rng: np.random.Generator
    seed: int | None = None
    theory: Callable[[], TheoryInputs] = TheoryInputs

    def theory_inputs(self) -> TheoryInputs:
        """:class:`TheoryInputs` of the coming round."""
        return self.theory()


class Exploration(Protocol):
    """The score maximised over the available arms, and the probability of each choice."""

    #: whether :meth:`index` draws random numbers
    samples: ClassVar[bool]

    def index(self, ev: Evaluation, sit: Situation) -> Array: ...

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float: ...


class _Deterministic(Part):
    """A rule without randomness: the propensity is exact (uniform ties, ε floor)."""

    samples: ClassVar[bool] = False

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        raise NotImplementedError

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float:
        if mask is None and epsilon == 0.0 and ev.n_ties == 1:
            return 1.0
        return float(greedy_propensities(index, mask, epsilon)[arm])


@part
class UCB(_Deterministic):
    """μ + α·w (Eq. 4).

    Parameters
    ----------
    alpha : float or "theory", default=0.02
        Exploration rate α (the paper's experiments use 0.02 for every method), or ``"theory"``
        for the αₜ of Theorem 4.1 (:func:`~deepbandits.formulas.theory_alpha`).
    delta, M : float
        δ and the bound M ≥ ‖θ*‖ of Theorem 4.1 (``alpha="theory"`` only).
    """

    specs: ClassVar[dict[str, Spec]] = {
        "alpha": THEORY_ALPHA_SPEC,
        "delta": DELTA_SPEC,
        "M": M_SPEC,
    }

    alpha: float | str = 0.02
    delta: float = 0.05
    M: float = 1.0

    def rate(self, n_arms: int, sit: Situation) -> float:
        """α of the coming round: the constant, or αₜ of Theorem 4.1."""
        if self.alpha != "theory":
            return float(self.alpha)
        inputs = sit.theory_inputs()._asdict()
        return theory_alpha(sit.t + 1, delta=self.delta, M=self.M, K=n_arms, **inputs)

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        return ev.mean + self.rate(ev.mean.shape[-1], sit) * ev.width


class Greedy(_Deterministic):
    """μ: no exploration bonus (Neural-LinGreedy)."""

    def __init__(self) -> None:
        pass

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        return ev.mean


class Thompson(Part):
    """μ + s·w·z, z ~ N(0, 1) for each arm: a draw from each arm's posterior.

    Parameters
    ----------
    scale : float, default=0.02
        s; NeuralTS's ν√λ (Zhang et al. 2021, Alg. 1: σ² = ν²λ gᵀZ⁻¹g/m).
    propensity_samples : int, default=1000
        Monte Carlo draws behind each decision's propensity, P(arm) ≈ (wins + 1)/(samples + 1)
        counting the draw actually made (a standard error below 0.016); drawn from a generator
        of their own, seeded by the policy's seed and the decision's round, so they leave the
        trajectory unchanged.
    """

    samples: ClassVar[bool] = True
    specs: ClassVar[dict[str, Spec]] = {
        "scale": Spec("real", "posterior scale s of the draws", low=0),
        "propensity_samples": Spec("int", "Monte Carlo samples per propensity", low=1),
    }

    def __init__(self, scale: float = 0.02, propensity_samples: int = 1000) -> None:
        self.scale = scale
        self.propensity_samples = propensity_samples

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        return ev.mean + self.scale * ev.width * sit.rng.standard_normal(ev.mean.shape[-1])

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float:
        rng = np.random.default_rng([sit.round, sit.seed or 0])
        draws = ev.mean + self.scale * ev.width * rng.standard_normal(
            (self.propensity_samples, len(ev.mean))
        )
        if mask is not None:
            draws[:, ~mask] = -np.inf
        wins = int((draws.argmax(axis=1) == arm).sum())
        estimate = (wins + 1) / (self.propensity_samples + 1)
        n_available = len(index) if mask is None else int(mask.sum())
        return (1.0 - epsilon) * estimate + epsilon / n_available


def thompson_scale(alpha: float, lam: float) -> float:
    """NeuralTS's posterior scale ν√λ from its ``alpha`` (ν) and ``lam`` (λ)."""
    return alpha * math.sqrt(lam)
