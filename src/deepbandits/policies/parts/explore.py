"""Exploration rules: the score an arm is chosen by, from the head's mean and width.

* :class:`UCB`: μ + α·w (Eq. 4), with a constant α or the αₜ of Theorem 4.1 (``alpha="theory"``);
* :class:`Greedy`: μ (Neural-LinGreedy);
* :class:`Thompson`: μ + s·w·z with z ~ N(0, 1) per arm, a draw from each arm's posterior
  (NeuralTS's rule; on a ridge head, Thompson sampling on the ridge posterior's marginals);
* :class:`InverseGapWeighting`: an arm drawn with probability 1/(K + γₜ·(μ̂* − μ̂ₐ)) (SquareCB,
  Foster & Rakhlin 2020), optionally kept above a floor, so that its log can evaluate any
  policy off-line;
* SAVE's layered search (:class:`~deepbandits.policies.parts.layers.LayeredSearch`), which keeps
  statistics of its own.

A rule works on arrays of any leading shape (one request ``[K]`` or a batch ``[B, K]``), and gives
the probability it had of playing an arm (:meth:`Exploration.propensity`): exact for the
deterministic rules and inverse gap weighting, a Monte Carlo estimate for Thompson sampling.
What a policy asks of a rule, and when (the optional hooks for rules that learn:
``initialize``, ``observe``, ``learn``), is :class:`ExplorationRule`; :class:`Exploration`
implements the hooks as doing nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
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


def inverse_gap_probabilities(
    mean: Array, gamma: float, mask: Mask = None, min_propensity: float = 0.0
) -> Array:
    """Inverse gap weighting (SquareCB; Foster & Rakhlin 2020, Alg. 1) over the available arms:
    each arm a but the best (the first of the largest mean μ̂*) gets 1/(n + γ·(μ̂* − μ̂ₐ)), n the
    number of available arms, and the best the rest; with ``min_propensity`` p_min the
    probabilities are (1 − n·p_min)·p + p_min, so that every available arm keeps at least p_min
    (``n·p_min ≤ 1``). Masked arms get 0; ``[K]`` in, ``[K]`` out, or ``[B, K]`` (with a mask
    ``[B, K]``) for ``B`` requests at once, each row as alone."""
    if mask is None and mean.ndim == 1:  # every arm available: the same numbers, fewer steps
        n = len(mean)
        best = int(mean.argmax())
        probs = 1.0 / (n + gamma * (mean[best] - mean))
        probs[best] = 0.0
        probs[best] = max(1.0 - probs.sum(), 0.0)
        return (1.0 - n * min_propensity) * probs + min_propensity if min_propensity else probs
    available = np.ones(mean.shape, bool) if mask is None else np.asarray(mask, bool)
    n = available.sum(axis=-1, keepdims=True)
    scores = np.where(available, mean, -np.inf)
    best = scores.argmax(axis=-1)[..., None]
    gaps = np.where(available, np.take_along_axis(scores, best, -1) - mean, 0.0)
    probs = np.where(available, 1.0 / (n + gamma * gaps), 0.0)
    np.put_along_axis(probs, best, 0.0, -1)
    np.put_along_axis(probs, best, np.maximum(1.0 - probs.sum(axis=-1, keepdims=True), 0.0), -1)
    if min_propensity > 0.0:
        probs = (1.0 - n * min_propensity) * probs + min_propensity * available
    return probs


@part
class InverseGapWeighting(Exploration):
    """Draw an arm with inverse-gap-weighted probabilities (SquareCB, Foster & Rakhlin 2020):
    the arm of the largest mean most often, another with probability 1/(n + γₜ·gap), so that a
    log of its decisions has every propensity above 0 and exact.

    Parameters
    ----------
    gamma : float, default=10.0
        Scale of γₜ = gamma·(t + 1)^gamma_exponent, t the rewards learned (Vowpal Wabbit's
        ``--squarecb`` defaults: scale 10, exponent 1/2); larger is greedier.
    gamma_exponent : float, default=0.5
        Growth of γₜ with t (0: a constant γ).
    min_propensity : float, default=0.0
        Floor p_min on every available arm's probability (the capped variant): the
        probabilities are mixed with uniform play, (1 − n·p_min)·p + p_min, which needs
        n·p_min ≤ 1 for the n available arms. A log whose propensities are all at least p_min
        supports off-policy evaluation of any policy, with importance weights at most 1/p_min.
        With the policy's ε floor as well, every available arm keeps (1 − ε)·p_min + ε/n
        (:func:`~deepbandits.policies.choice.guaranteed_min_propensity`); with neither, no
        floor holds: an arm's 1/(n + γₜ·gap) tends to 0 as γₜ grows with t.
    """

    samples: ClassVar[bool] = True
    specs: ClassVar[dict[str, Spec]] = {
        "gamma": Spec("real", "inverse gap weighting: scale of γₜ = gamma·(t+1)^exponent", low=0),
        "gamma_exponent": Spec("real", "inverse gap weighting: growth exponent of γₜ", low=0),
        "min_propensity": Spec(
            "real", "inverse gap weighting: floor on every arm's probability", low=0, high=1
        ),
    }

    gamma: float = 10.0
    gamma_exponent: float = 0.5
    min_propensity: float = 0.0

    def probabilities(self, ev: Evaluation, mask: Mask, sit: Situation) -> Array:
        """Every arm's probability of being drawn this round (``[K]``, or ``[B, K]`` for an
        evaluation of ``B`` requests)."""
        n = ev.mean.shape[-1] if mask is None else int(np.count_nonzero(mask, axis=-1).min())
        if n * self.min_propensity > 1.0 + 1e-12:
            raise InputValueError(
                f"min_propensity={self.min_propensity!r} cannot hold for {n} available arms: "
                f"it must be at most 1/{n} = {1.0 / n:.6g}"
            )
        gamma = self.gamma * (sit.t + 1) ** self.gamma_exponent
        return inverse_gap_probabilities(ev.mean, gamma, mask, self.min_propensity)

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        """1 for the drawn arm, 0 for the others (the mean itself when a score is not finite,
        so that the choice refuses it)."""
        mean = ev.mean if ev.mask is None else ev.mean[ev.mask]
        if not np.all(np.isfinite(mean)):
            return ev.mean
        probs = self.probabilities(ev, ev.mask, sit)
        index = np.zeros_like(ev.mean)
        index[int(sit.rng.choice(len(probs), p=probs / probs.sum()))] = 1.0
        return index

    def propensity(
        self, ev: Evaluation, index: Array, mask: Mask, arm: int, sit: Situation, epsilon: float
    ) -> float:
        n_available = len(index) if mask is None else int(np.count_nonzero(mask))
        p = float(self.probabilities(ev, mask, sit)[arm])
        return (1.0 - epsilon) * p + epsilon / n_available


def thompson_scale(alpha: float, lam: float) -> float:
    """NeuralTS's posterior scale ν√λ from its ``alpha`` (ν) and ``lam`` (λ)."""
    return alpha * math.sqrt(lam)
