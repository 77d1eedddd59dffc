"""LinUCB and its variance-weighted form σ²-LinUCB (OFUL ridge, Eq. 4–5; weighted ridge, Eq. 9–10).

:class:`LinUCB` is the ridge-UCB machinery of the whole family: it scores arms by
θᵀφ(x) + α‖φ(x)‖_{A⁻¹} (Eq. 4) on a feature map φ that is the identity here and a neural
network in :class:`~deepbandits.policies.neural_linear.NeuralLinearBandit`, and weights each
observation by 1/σ̄²ₜ according to its variance source (:mod:`deepbandits.variance`).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts, same_contexts
from deepbandits.errors import InputValueError
from deepbandits.formulas import theory_alpha, variance_floor
from deepbandits.linalg.ridge import RidgeState
from deepbandits.policies.base import Policy, Preset
from deepbandits.policies.params import LAM_SPEC, REFRESH_EVERY_SPEC, Spec
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
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {"alpha": ALPHA, "lam": LAM}
    #: whether φ is the identity (the ridge then sees the raw contexts)
    _raw_features: ClassVar[bool] = True
    block_contexts: ClassVar[bool] = True

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

    # ------------------------------------------------------------------ features
    def _features(self, X: Contexts) -> Array:
        """φ(x) for each row of ``X`` (identity for LinUCB)."""
        return X

    def _feature_dim(self, n_features: int) -> int:
        return n_features

    def _initialize(self, X: Contexts) -> None:
        p = self._params
        self.ridge_: RidgeState | None = None
        self._feature_dim_ = self._feature_dim(X.shape[1])
        # On block-encoded contexts every x lives in one block, so A = λI + Σ x xᵀ is
        # block-diagonal: the shared ridge of Eq. 5 is exactly one ridge per block on the D
        # features of that block (same θᵀx and ‖x‖_{A⁻¹}, K² times less memory).
        self.by_block_ = self._raw_features and isinstance(X, BlockContexts) and not p["per_arm"]
        if self.by_block_:
            assert isinstance(X, BlockContexts)
            self.ridge_ = RidgeState(X.block_dim, X.n_blocks, p["lam"], p["refresh_every"])
        elif not p["per_arm"]:
            self.ridge_ = RidgeState(self._feature_dim_, 1, p["lam"], p["refresh_every"])
        self._last_sigma2_bar = variance_floor(p["R"], self._feature_dim_)
        self._cache: tuple[Array, Array] | None = None
        if p["variance"] == "schedule" and self._schedule is None:
            self._schedule = parse_variance_schedule(p["schedule"], p["horizon"])

    def _heads(self, X: Contexts) -> NDArray[np.int64] | None:
        if self.by_block_:
            if not isinstance(X, BlockContexts):
                raise InputValueError(
                    "this policy was fitted on block-encoded contexts (BlockContexts) and keeps "
                    "one ridge per block; dense contexts cannot be scored"
                )
            return X.slots
        n_arms = X.shape[0]
        if not self._params["per_arm"]:
            return None
        if self.ridge_ is None:
            self.ridge_ = RidgeState(
                self._feature_dim_, n_arms, self._params["lam"], self._params["refresh_every"]
            )
        elif n_arms != self.ridge_.n_heads:
            raise InputValueError(
                f"per_arm=True keeps one model per arm and was fitted with {self.ridge_.n_heads} "
                f"arms, but {n_arms} arms are given"
            )
        return np.arange(n_arms)

    def _phi(self, X: Contexts) -> Array:
        """Features of ``X``, reusing those of the last call when the contexts are the same."""
        if self._cache is not None and same_contexts(self._cache[0], X):
            return self._cache[1]
        if isinstance(X, BlockContexts) and self.by_block_:
            phi = X.blocks
        else:
            dense = self._raw_features and isinstance(X, BlockContexts)
            phi = self._features(X.dense() if dense else X)
        self._cache = (X.copy(), phi)
        return phi

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

    def _predict(self, X: Contexts) -> tuple[Array, Array]:
        heads = self._heads(X)
        assert self.ridge_ is not None
        mean, width = self.ridge_.score(self._phi(X), heads)
        self.last_selection_ = {"mean": mean, "width": width}
        return mean, width

    def _index(self, X: Contexts) -> Array:
        mean, width = self._predict(X)
        return mean + self.alpha_t(X.shape[0]) * width

    # ------------------------------------------------------------------ learning
    def _learn(
        self,
        X: Contexts,
        arm: int,
        reward: float,
        sigma2: float | None,
        reward_range: tuple[float, float] | None,
    ) -> None:
        p = self._params
        heads = self._heads(X)
        head = 0 if heads is None else int(heads[arm])
        assert self.ridge_ is not None
        phi = self._phi(X)[arm]
        mean_hat = float(phi @ self.ridge_.theta[head])  # θₜ₋₁ᵀφ(xₜ,ₐₜ; wₜ₋₁), Eq. 13
        predictive = (
            float(phi @ self.ridge_.A_inv[head] @ phi) if p["variance"] == "mle-var" else np.nan
        )
        sigma2_bar, sigma2_hat = round_variance(
            p["variance"],
            mean_hat=mean_hat,
            t=self.t_,
            R=p["R"],
            d=self._feature_dim_,
            oracle=sigma2,
            reward_range=reward_range,
            schedule=self._schedule,
            predictive_variance=predictive,
        )
        weight = 1.0 / sigma2_bar
        self.ridge_.update(phi, reward, weight, head)
        self._last_sigma2_bar = sigma2_bar
        start = time.perf_counter()
        trained = self._after_update(X[arm], reward, weight, head)
        self.last_update_ = {
            "sigma2": sigma2_bar,
            "sigma2_hat": sigma2_hat,
            "train_seconds": time.perf_counter() - start if trained else 0.0,
        }

    def _after_update(self, context: Contexts, reward: float, weight: float, head: int) -> bool:
        """Hook for subclasses that learn more than the ridge; returns True if it trained."""
        return False

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "ridge": self.ridge_.state_dict() if self.ridge_ is not None else None,
            "last_sigma2_bar": self._last_sigma2_bar,
            "by_block": self.by_block_,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        if state["ridge"] is not None:
            self.ridge_ = RidgeState.from_state_dict(state["ridge"])
        self._last_sigma2_bar = float(state["last_sigma2_bar"])
        self.by_block_ = bool(state.get("by_block", False))


class Sigma2LinUCB(Preset, LinUCB):
    """σ²-LinUCB: LinUCB on the raw context with the variance-weighted ridge of Eq. 9–10.

    The paper's "without DNN" ablation (Fig. ab_dynamic (a)). Same parameters as
    :class:`LinUCB`; ``variance`` defaults to ``"range"`` and may not be ``"none"``.
    """

    preset_params: ClassVar[dict[str, Any]] = {"variance": "range"}
    forbidden_params: ClassVar[dict[str, Any]] = {"variance": "none"}
