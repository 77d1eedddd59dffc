"""LinUCB and its variance-weighted form σ²-LinUCB (OFUL ridge, Eq. 4–5; weighted ridge, Eq. 9–10).

:class:`LinUCB` is the ridge-UCB machinery of the whole family: it scores arms by
θᵀφ(x) + α‖φ(x)‖_{A⁻¹} (Eq. 4) on a feature map φ that is the identity here and a neural
network in :class:`~deepbandits.policies.neural_linear.NeuralLinearBandit`, and weights each
observation by 1/σ̄²ₜ according to its variance source (:mod:`deepbandits.variance`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.errors import InputValueError
from deepbandits.formulas import theory_alpha, variance_floor
from deepbandits.linalg.ridge import RidgeState
from deepbandits.policies.base import Evaluation, Observation, Observed, Policy, Preset, arm_context
from deepbandits.policies.features import FeatureMap, IdentityFeatures, stack_contexts
from deepbandits.policies.heads import RidgeHead
from deepbandits.policies.params import (
    DISCOUNT_DEFAULTS,
    DISCOUNT_SPECS,
    LAM_SPEC,
    REFRESH_EVERY_SPEC,
    Spec,
)
from deepbandits.policies.space import ALPHA, LAM, Param
from deepbandits.variance import VARIANCE_SOURCES, parse_variance_schedule, round_variance

Array = NDArray[np.float64]


class LinUCB(Policy):
    """Ridge-regression UCB (OFUL; Abbasi-Yadkori et al. 2011), Eq. 4–5 with φ(x) = x.

    Parameters
    ----------
    alpha : float or "theory", default=0.02
        Exploration rate α (the paper's experiments use 0.02 for every method), or ``"theory"``
        for the αₜ of Theorem 4.1 with parameters ``delta``, ``M``, ``lam``, ``R``.
    lam : float, default=1.0
        Ridge regulariser λ.
    per_arm : bool, default=False
        One ridge (A, b) per arm (the disjoint LinUCB of Li et al. 2010, as in the paper's code)
        instead of a θ shared by all arms. Needs the same number of arms every round.
    variance : {"none", "oracle", "range", "mle-var", "schedule"}, default="none"
        Source of σ²ₜ for the weighted ridge of Eq. 10 (see :mod:`deepbandits.variance`);
        ``"none"`` is the unweighted ridge of Eq. 5.
    R : float, default=1.0
        Noise bound R of Eq. 3; the variance floor is R²/d′ with d′ the feature dimension.
    reward_range : (a, b), optional
        Reward range for ``variance="range"`` (Eq. 13). A reward outside it is rejected.
    schedule : str or sequence of float, optional
        σ²ₜ for ``variance="schedule"``: ``"linear:START:END[:T]"`` or explicit values
        (``"linear:1:0"`` and ``"linear:10:0"`` are the heuristics of Fig. heuristic).
    horizon : int, optional
        Number of rounds T, used by schedules that do not state it; the runner sets it to the
        run's T when it is not given.
    delta, M : float
        δ and the bound M ≥ ‖θ*‖ of Theorem 4.1 (``alpha="theory"`` only).
    refresh_every : int, default=500
        Rank-one updates of a ridge head between exact re-inversions.
    discount : float, default=1.0
        γ ≤ 1: every ``discount_every`` rewards learned, the ridge statistics shrink towards the
        prior, A → λI + γ(A − λI), b → γb, so that old rounds weigh γ^(age/discount_every)
        (live traffic drifts); 1 keeps every round (Eq. 5/10).
    discount_every : int, default=100
        Rewards learned between two discounts.
    seed : int, optional
        Seed of the policy's generator (tie-breaking; network initialisation and minibatches in
        the neural family).
    """

    param_specs: ClassVar[dict[str, Spec]] = {
        "alpha": Spec(
            "real", "exploration rate α, or 'theory' for Theorem 4.1", low=0, choices=("theory",)
        ),
        "lam": LAM_SPEC,
        "per_arm": Spec("bool", "one ridge per arm instead of a shared θ"),
        "variance": Spec(
            "choice", "source of σ²ₜ for the weighted ridge", choices=VARIANCE_SOURCES
        ),
        "R": Spec("real", "noise bound R (variance floor R²/d′)", low=0, low_inclusive=False),
        "reward_range": Spec(
            "pair", "reward range (a, b); rewards outside it are refused", optional=True
        ),
        "schedule": Spec(
            "schedule",
            "σ²ₜ for variance='schedule': 'linear:START:END[:T]' or values",
            optional=True,
        ),
        "horizon": Spec("int", "number of rounds T (set by the runner)", low=1, optional=True),
        "delta": Spec(
            "real", "δ of Theorem 4.1", low=0, high=1, low_inclusive=False, high_inclusive=False
        ),
        "M": Spec("real", "bound M ≥ ‖θ*‖ of Theorem 4.1", low=0),
        "refresh_every": REFRESH_EVERY_SPEC,
        **DISCOUNT_SPECS,
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {"alpha": ALPHA, "lam": LAM}
    #: whether φ is the identity (the ridge then sees the raw contexts)
    _raw_features: ClassVar[bool] = True
    block_contexts: ClassVar[bool] = True
    _vectorised: ClassVar[bool] = True

    def __init__(
        self,
        *,
        alpha: float | str = 0.02,
        lam: float = 1.0,
        per_arm: bool = False,
        variance: str = "none",
        R: float = 1.0,
        reward_range: tuple[float, float] | None = None,
        schedule: str | list[float] | None = None,
        horizon: int | None = None,
        delta: float = 0.05,
        M: float = 1.0,
        refresh_every: int = 500,
        discount: float = DISCOUNT_DEFAULTS["discount"],
        discount_every: int = DISCOUNT_DEFAULTS["discount_every"],
        seed: int | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(
            alpha=alpha,
            lam=lam,
            per_arm=per_arm,
            variance=variance,
            R=R,
            reward_range=reward_range,
            schedule=schedule,
            horizon=horizon,
            delta=delta,
            M=M,
            refresh_every=refresh_every,
            discount=discount,
            discount_every=discount_every,
            seed=seed,
            **extra,
        )

    # ------------------------------------------------------------------ parameters
    def _validate_params(self) -> None:
        p = self._params
        self._schedule: Array | None = None
        if p["variance"] == "schedule":
            if p["schedule"] is None:
                raise InputValueError(
                    "variance='schedule' needs schedule (e.g. 'linear:1:0:10000')"
                )
            self._schedule = parse_variance_schedule(p["schedule"], p["horizon"], required=False)
        elif p["schedule"] is not None:
            raise InputValueError("schedule is only used with variance='schedule'")

    # ------------------------------------------------------------------ parts
    def _feature_map(self, X: Contexts, blockwise: bool) -> FeatureMap:
        """The feature map φ of this policy (the identity here; a network in the neural
        family)."""
        return IdentityFeatures(X.shape[1], blockwise)

    def _feature_dim(self, n_features: int) -> int:
        return n_features

    def _initialize(self, X: Contexts) -> None:
        p = self._params
        self._feature_dim_ = self._feature_dim(X.shape[1])
        # On block-encoded contexts every x lives in one block, so A = λI + Σ x xᵀ is
        # block-diagonal: the shared ridge of Eq. 5 is exactly one ridge per block on the D
        # features of that block (same θᵀx and ‖x‖_{A⁻¹}, K² times less memory).
        by_block = self._raw_features and isinstance(X, BlockContexts) and not p["per_arm"]
        self._build_head("per_block" if by_block else "per_arm" if p["per_arm"] else "shared", X)
        self.features_ = self._feature_map(X, by_block)
        self._last_sigma2_bar = variance_floor(p["R"], self._feature_dim_)
        if p["variance"] == "schedule" and self._schedule is None:
            self._schedule = parse_variance_schedule(p["schedule"], p["horizon"])

    def _build_head(self, layout: str, X: Contexts) -> None:
        p = self._params
        block = layout == "per_block" and isinstance(X, BlockContexts)
        self.head_ = RidgeHead(
            X.block_dim if block else self._feature_dim_,  # type: ignore[union-attr]
            layout,
            p["lam"],
            p["refresh_every"],
            X.n_blocks if block else None,  # type: ignore[union-attr]
        )

    @property
    def ridge_(self) -> RidgeState | None:
        """The ridge statistics of the head (None before the first round of a per-arm head)."""
        return self.head_.ridge

    @property
    def by_block_(self) -> bool:
        """Whether the head keeps one ridge per block of block-encoded contexts."""
        return self.head_.layout == "per_block"

    # ------------------------------------------------------------------ acting
    def alpha_t(self, n_arms: int) -> float:
        """Exploration rate of the coming round: the constant α or αₜ of Theorem 4.1."""
        p = self._params
        if p["alpha"] != "theory":
            return float(p["alpha"])
        return theory_alpha(
            self.t_ + 1,
            d=self._feature_dim_,
            sigma2_bar=self._last_sigma2_bar,
            lam=p["lam"],
            delta=p["delta"],
            M=p["M"],
            R=p["R"],
            H=self._theory_H(),
            K=n_arms,
        )

    def _theory_H(self) -> int:
        return 1

    def _features_and_heads(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        phi, slots = self.features_.transform(X)
        return phi, self.head_.heads(X.shape[0], slots)

    def _evaluate(self, X: Contexts) -> Evaluation:
        phi, heads = self._features_and_heads(X)
        mean, width = self.head_.score(phi, heads)
        return Evaluation(mean, width, phi, heads)

    def _score_stacked(
        self, X: Contexts, sizes: list[int]
    ) -> tuple[Array, Array, Array, NDArray[np.int64] | None]:
        """Mean, width, features and head of every row of several requests stacked in ``X``
        (``sizes`` arms each): one feature-map call, one grouped ridge evaluation. Every
        request is checked against a per-arm head before any is scored."""
        per_arm = self.head_.layout == "per_arm"
        if per_arm:
            for n in set(sizes):
                self.head_.heads(n, None)
        phi, slots = self.features_.transform(X)
        if per_arm:  # each request's arms 0..n-1
            starts = np.cumsum([0, *sizes[:-1]])
            heads: NDArray[np.int64] | None = np.arange(len(phi)) - np.repeat(starts, sizes)
        else:
            heads = self.head_.heads(len(phi), slots)
        mean, width = self.head_.score(phi, heads, grouped=True)
        return mean, width, phi, heads

    def _evaluate_many(self, batch: list[Contexts]) -> list[Evaluation]:
        """The rounds of a batch scored together (:meth:`_score_stacked`)."""
        blocks = {X.n_blocks if isinstance(X, BlockContexts) else None for X in batch}
        if len(batch) == 1 or len(blocks) > 1:  # mixed encodings: one by one
            return [self._evaluate(X) for X in batch]
        sizes = [X.shape[0] for X in batch]
        mean, width, phi, heads = self._score_stacked(stack_contexts(batch), sizes)
        bounds = np.cumsum([0, *sizes])
        return [
            Evaluation(mean[a:b], width[a:b], phi[a:b], None if heads is None else heads[a:b])
            for a, b in itertools.pairwise(bounds)
        ]

    def _evaluate_uniform(
        self, X: Array, n_requests: int, n_arms: int
    ) -> tuple[Array, Array, Array | None, NDArray[np.int64] | None]:
        mean, width, phi, heads = self._score_stacked(X, [n_arms] * n_requests)
        shape = (n_requests, n_arms)
        return mean.reshape(shape), width.reshape(shape), phi, heads

    def _index(self, ev: Evaluation, X: Contexts) -> Array:
        return ev.mean + self.alpha_t(X.shape[0]) * ev.width

    def _index_uniform(self, mean: Array, width: Array, n_arms: int) -> Array:
        return mean + self.alpha_t(n_arms) * width

    def _observe(self, X: Contexts, arm: int, ev: Evaluation | None) -> Observation:
        phi, heads = (ev.features, ev.heads) if ev is not None else self._features_and_heads(X)
        assert phi is not None
        return Observation(
            arm_context(X, arm),
            np.array(phi[arm]),
            0 if heads is None else int(heads[arm]),
        )

    # ------------------------------------------------------------------ learning
    def _weight(
        self,
        phi: Array,
        head: int,
        t: int,
        sigma2: float | None,
        reward_range: tuple[float, float] | None,
    ) -> tuple[float, float]:
        """σ̄²ₜ and the σ² estimate of one observation (the variance source, Eq. 9–13)."""
        p = self._params
        ridge = self.head_.ridge
        assert ridge is not None
        source = p["variance"]
        # θₜ₋₁ᵀφ(xₜ,ₐₜ; wₜ₋₁) of Eq. 13, and φᵀA⁻¹φ, only for the sources that use them
        mean_hat = float(phi @ ridge.theta[head]) if source == "range" else np.nan
        predictive = float(phi @ ridge.A_inv[head] @ phi) if source == "mle-var" else np.nan
        return round_variance(
            source,
            mean_hat=mean_hat,
            t=t,
            R=p["R"],
            d=self._feature_dim_,
            oracle=sigma2,
            reward_range=reward_range,
            schedule=self._schedule,
            predictive_variance=predictive,
        )

    def _learn(
        self,
        obs: Observed,
        reward: float,
        sigma2: float | None,
        reward_range: tuple[float, float] | None,
    ) -> None:
        phi, head = obs.features, obs.head
        assert phi is not None and self.head_.ridge is not None
        sigma2_bar, sigma2_hat = self._weight(phi, head, self.t_, sigma2, reward_range)
        weight = 1.0 / sigma2_bar
        self.head_.ridge.update(phi, reward, weight, head)
        self._last_sigma2_bar = sigma2_bar
        self._finish_learning([obs.context], [reward], [weight], [head], sigma2_bar, sigma2_hat)

    def _learn_many(
        self,
        observations: Sequence[Observed],
        rewards: list[float],
        sigma2: list[float | None],
        ranges: list[tuple[float, float] | None],
    ) -> None:
        """All the rewards by one batched ridge update, each weighted with the model as it is
        at the call (σ̂² of Eq. 13 from θ before the batch)."""
        ridge = self.head_.ridge
        assert ridge is not None
        phis = np.stack([o.features for o in observations])  # type: ignore[arg-type]
        heads = np.array([o.head for o in observations], dtype=np.int64)
        if self._params["variance"] == "none":  # unit weights (Eq. 5)
            used = [(1.0, float("nan"))]
            weights = np.ones(len(phis))
        else:
            used = [
                self._weight(phi, int(h), self.t_ + i, s2, rr)
                for i, (phi, h, s2, rr) in enumerate(zip(phis, heads, sigma2, ranges, strict=True))
            ]
            weights = 1.0 / np.array([u[0] for u in used])
        values = np.asarray(rewards, dtype=np.float64)
        # a discount falls after each reward whose count is a multiple of discount_every:
        # the batch is added in segments between them, so each round weighs γ^(its age)
        every, gamma = self._params["discount_every"], self._params["discount"]
        first = every - self.t_ % every if gamma < 1.0 else len(phis)
        bounds = [*range(first, len(phis), every), len(phis)]
        start = 0
        for end in bounds:
            if end > start:
                rows = slice(start, end)
                ridge.update_many(phis[rows], values[rows], weights[rows], heads[rows])
            if gamma < 1.0 and (self.t_ + end) % every == 0:
                self.head_.discount(gamma)
            start = end
        self._last_sigma2_bar = used[-1][0]
        self.last_update_ = {"sigma2": 1.0, "sigma2_hat": float("nan"), "train_seconds": 0.0}
        self._finish_learning(
            [o.context for o in observations],
            rewards,
            list(weights),
            list(heads),
            *used[-1],
            discounted=True,
        )
        self.t_ += len(observations)

    def _finish_learning(
        self,
        contexts: list[Any],
        rewards: list[float],
        weights: list[float],
        heads: list[int],
        sigma2_bar: float,
        sigma2_hat: float,
        discounted: bool = False,
    ) -> None:
        """After the ridge update of ``len(rewards)`` rounds: the feature map's training, the
        discount (unless the batch path ``discounted`` already), the diagnostics."""
        start = time.perf_counter()
        trained = self._after_updates(contexts, rewards, weights, heads)
        every, gamma = self._params["discount_every"], self._params["discount"]
        if not discounted and gamma < 1.0 and (self.t_ + len(rewards)) % every == 0:
            self.head_.discount(gamma)
        self.last_update_ = {
            "sigma2": sigma2_bar,
            "sigma2_hat": sigma2_hat,
            "train_seconds": time.perf_counter() - start if trained else 0.0,
        }

    def _after_updates(
        self, contexts: list[Any], rewards: list[float], weights: list[float], heads: list[int]
    ) -> bool:
        """Hook for policies whose feature map learns too; returns True if it trained."""
        return False

    def _merge(self, other: Policy, base: Policy | None) -> None:
        assert isinstance(other, LinUCB)
        if other.head_.layout != self.head_.layout:
            raise InputValueError(
                f"cannot merge a {other.head_.layout} head into a {self.head_.layout} one"
            )
        heads = [self.head_, other.head_] + ([base.head_] if isinstance(base, LinUCB) else [])
        lams = {repr(h.ridge.lam) for h in heads if h.ridge is not None}
        if len(lams) > 1:
            raise InputValueError(
                f"cannot merge ridge heads with different priors λ ({', '.join(sorted(lams))}): "
                "with lam_warmup the prior moves until train_start, so merge replicas after it"
            )
        self.head_.merge(other.head_, base.head_ if isinstance(base, LinUCB) else None)

    def _initial_contexts(self) -> Contexts:
        ridge = self.head_.ridge
        if self.by_block_ and ridge is not None:
            return BlockContexts(np.zeros((1, ridge.dim)), [0], ridge.n_heads)
        return super()._initial_contexts()

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "ridge": self.head_.state_dict(),
            "last_sigma2_bar": self._last_sigma2_bar,
            "by_block": self.by_block_,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        if state.get("by_block", False):
            ridge = state["ridge"]
            self.head_ = RidgeHead(
                int(ridge["dim"]),
                "per_block",
                self._params["lam"],
                self._params["refresh_every"],
                int(ridge["n_heads"]),
            )
            self.features_ = self._feature_map_for_blocks()
        self.head_.load_state_dict(state["ridge"])
        self._last_sigma2_bar = float(state["last_sigma2_bar"])

    def _feature_map_for_blocks(self) -> FeatureMap:
        assert self.n_features_in_ is not None
        return IdentityFeatures(self.n_features_in_, blockwise=True)


class Sigma2LinUCB(Preset, LinUCB):
    """σ²-LinUCB: LinUCB on the raw context with the variance-weighted ridge of Eq. 9–10.

    The paper's "without DNN" ablation (Fig. ab_dynamic (a)). Same parameters as
    :class:`LinUCB`; ``variance`` defaults to ``"range"`` and may not be ``"none"``.
    """

    preset_params: ClassVar[dict[str, Any]] = {"variance": "range"}
    forbidden_params: ClassVar[dict[str, Any]] = {"variance": "none"}
