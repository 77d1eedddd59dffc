"""Exploration rules: the score an arm is chosen by, from the head's mean and width.

* :class:`UCB`: μ + α·w (Eq. 4), with a constant α or the αₜ of Theorem 4.1 (``alpha="theory"``);
* :class:`Greedy`: μ (Neural-LinGreedy);
* :class:`Thompson`: μ + s·w·z with z ~ N(0, 1) per arm, a draw from each arm's posterior
  (NeuralTS's rule; on a ridge head, Thompson sampling on the ridge posterior's marginals);
* SAVE's layered search (:class:`~deepbandits.policies.parts.layers.LayeredSearch`), which keeps
  statistics of its own.

A rule works on arrays of any leading shape (one request ``[K]`` or a batch ``[B, K]``), and gives
the probability it had of playing an arm (:meth:`Exploration.propensity`): exact for the
deterministic rules, a Monte Carlo estimate for Thompson sampling. What a policy asks of a rule,
and when (the optional hooks for rules that learn: ``initialize``, ``observe``, ``learn``), is
:class:`ExplorationRule`; :class:`Exploration` implements the hooks as doing nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from deepbandits.formulas import theory_alpha
from deepbandits.policies.choice import greedy_propensities
from deepbandits.policies.decision import NO_EXTRA
from deepbandits.policies.evaluation import Evaluation, Observation
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


@runtime_checkable
class ExplorationRule(Protocol):
    """What a policy of the ridge family asks of its exploration rule, and when.

    :class:`Exploration` implements every member but :meth:`index`; a rule that does not
    derive from it must have them all (the policy checks when it is composed).

    ``samples`` (class flag)
        Whether :meth:`index` draws random numbers (then :meth:`propensity` has no closed form
        and decisions are not scored as ``[B, K]`` arrays).
    ``observes`` (class flag)
        Whether :meth:`observe` keeps anything (else it is not called; if it does, every
        decision is observed on its own, never as part of ``[B, K]`` arrays).
        :class:`Exploration` sets it for a subclass that overrides :meth:`observe`.
    ``learns`` (class flag)
        Whether :meth:`learn` learns anything (else it is not called). :class:`Exploration` sets
        it for a subclass that overrides :meth:`learn`.
    ``sequential`` (class flag)
        Whether every reward must be learned before the next is scored (SAVE's layers): a batch
        of rewards is then learned reward by reward, and replicas cannot be merged.
    :meth:`initialize` ``(dim)``
        Once the feature dimension ``dim`` is known: at the first decision, and when a checkpoint
        is loaded or a replica merged into a fresh policy. Builds the rule's learned state.
    :meth:`index` ``(ev, sit)``
        At every decision: the score maximised over the available arms (``[K]``, or ``[B, K]``
        for a batch of requests of one shape when nothing samples).
    :meth:`propensity` ``(ev, index, mask, arm, sit, epsilon)``
        After the arm is chosen: the probability the rule had of playing it.
    :meth:`observe` ``(ev, arm, t)``
        After the arm is chosen: what the rule keeps with the decision for learning (the
        decision's ``extra``, a plain mapping; empty for none).
    :meth:`learn` ``(observations, rewards)``
        After the head learned rewards: every :class:`~deepbandits.policies.evaluation.Observation`
        learned by the call and its reward, in order (one for ``learn``/``update``, the whole
        batch for ``learn_batch``).
    """

    samples: ClassVar[bool]
    observes: ClassVar[bool]
    learns: ClassVar[bool]
    sequential: ClassVar[bool]

    def initialize(self, dim: int) -> None: ...

    def index(self, ev: Evaluation, sit: Situation) -> Array: ...

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float: ...

    def observe(self, ev: Evaluation, arm: int, t: int) -> Mapping[str, Any]: ...

    def learn(self, observations: Sequence[Observation], rewards: Sequence[float]) -> None: ...


#: The members of :class:`ExplorationRule`, which a rule composed into a policy must have.
RULE_MEMBERS = (
    "samples",
    "observes",
    "learns",
    "sequential",
    "initialize",
    "index",
    "propensity",
    "observe",
    "learn",
)


class Exploration(Part):
    """An exploration rule without randomness and without learned state: subclasses implement
    :meth:`index`, and the hooks of :class:`ExplorationRule` they need (the others do nothing).
    The propensity is exact (uniform ties, ε floor)."""

    samples: ClassVar[bool] = False
    observes: ClassVar[bool] = False
    learns: ClassVar[bool] = False
    sequential: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.observes = cls.observe is not Exploration.observe
        cls.learns = cls.learn is not Exploration.learn

    def initialize(self, dim: int) -> None:
        """Build learned state for features of dimension ``dim`` (none here)."""
        return None

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        raise NotImplementedError

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float:
        if mask is None and epsilon == 0.0 and ev.n_ties == 1:
            return 1.0
        return float(greedy_propensities(index, mask, epsilon)[arm])

    def observe(self, ev: Evaluation, arm: int, t: int) -> Mapping[str, Any]:
        """What the decision keeps for :meth:`learn` (nothing here)."""
        return NO_EXTRA

    def learn(self, observations: Sequence[Observation], rewards: Sequence[float]) -> None:
        """Learn the rewards the head just learned (nothing here)."""
        return None


@part
class UCB(Exploration):
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


class Greedy(Exploration):
    """μ: no exploration bonus (Neural-LinGreedy)."""

    def __init__(self) -> None:
        pass

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        return ev.mean


class Thompson(Exploration):
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
