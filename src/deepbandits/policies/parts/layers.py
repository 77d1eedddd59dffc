"""SAVE's layered search (Zhao et al. 2023), an exploration rule with statistics of its own.

SAVE ("SupLin + Adaptive Variance-aware Exploration", Algorithm 1 of Zhao et al. 2023) is a
variance-aware SupLinUCB. It keeps L = ⌈log₂(1/α)⌉ weighted ridge estimators ("layers");
layer ℓ = 1..L starts from Σ_ℓ = 4^{-ℓ}I and only receives rounds it explored, each with weight
w = 2^{-ℓ}/‖a‖_{Σ_ℓ⁻¹} (so its statistics add w²aaᵀ and w²ra). Each round descends the layers
with the surviving arms 𝒜 (all arms at ℓ = 1):

1. if every width ‖a‖_{Σ_ℓ⁻¹} ≤ α: play argmax θ̂_ℓᵀa + β̂_ℓ‖a‖_{Σ_ℓ⁻¹} (exploit; stored nowhere);
2. else if every width ≤ 2^{-ℓ}: keep the arms with θ̂_ℓᵀa ≥ max θ̂_ℓᵀa′ − 2·2^{-ℓ}β̂_ℓ and go
   to layer ℓ + 1;
3. else: play an arm with width > 2^{-ℓ} (we take the widest) and add it to layer ℓ.

β̂_ℓ is SAVE's variance-adaptive radius, built from the layer's weighted residual sum
Var̂_ℓ = Σ w²(r − θ̂_ℓᵀa)² (:func:`save_radius`). Following Appendix B.3 of the paper, the
"contexts" a are the features φ(x; w) of the network, trained as in Neural-LinUCB on an
unweighted ridge head over every round (that head is used for training only).

Taken from Zhao et al. (2023): the layer structure and descent rule above, λ_ℓ = 4^{-ℓ}, the
weights w = 2^{-ℓ}/‖a‖, the elimination margin 2·2^{-ℓ}β̂, L = ⌈log₂(1/α)⌉ and the form of β̂
(Freedman-type: 2^{-ℓ}·√(Var̂·ι) plus 2^{-ℓ}R·ι terms, ι = log(4t²L/δ)). Our choices: α = 1/T
from the ``horizon`` (``threshold`` overrides it), the widest eligible arm in step 3, and
``beta_scale`` to shrink β̂. The constants 16, 8, 6 of :func:`save_radius` are our reading of
their Theorem; with them SAVE explores heavily, the over-exploration that the paper reports
(Fig. full_demo).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.errors import InputValueError
from deepbandits.linalg.ridge import RidgeState
from deepbandits.policies.evaluation import Evaluation, Observation
from deepbandits.policies.params import (
    DELTA_SPEC,
    HORIZON_SPEC,
    M_SPEC,
    R_SPEC,
    REFRESH_EVERY_SPEC,
    Spec,
)
from deepbandits.policies.parts.explore import Exploration, Situation
from deepbandits.policies.parts.part import part

Array = NDArray[np.float64]


def save_radius(
    level: NDArray[np.int64],
    var_hat: Array,
    t: int,
    n_layers: int,
    R: float,
    M: float,
    delta: float,
) -> Array:
    """β̂_{t,ℓ} of each layer ``level`` (1-based) from its weighted residual sum ``var_hat``."""
    iota = math.log(4.0 * max(t, 1) ** 2 * n_layers / delta)
    scale = 2.0 ** (-level.astype(np.float64))
    inner = (8.0 * np.maximum(var_hat, 0.0) + 6.0 * R**2 * iota + 2.0 * scale**2) * iota
    return 16.0 * scale * np.sqrt(inner) + 6.0 * scale * R * iota + scale * M


def save_layer_search(
    means: Array, widths: Array, betas: Array, alpha: float
) -> tuple[int | None, NDArray[np.int64], Array]:
    """SAVE's descent through the layers for one round (module doc, steps 1–3).

    ``means`` and ``widths`` are ``[L, K]`` (θ̂_ℓᵀa and ‖a‖_{Σ_ℓ⁻¹}), ``betas`` is ``[L]``.
    Returns ``(layer, arms, scores)``: the 0-based layer the round explores (None for an exploit
    round), the arms that may be played, and the score to maximise over them.
    """
    arms = np.arange(means.shape[1])
    for i in range(means.shape[0]):
        threshold = 2.0 ** -(i + 1)
        w = widths[i, arms]
        if (w <= alpha).all():
            return None, arms, means[i, arms] + betas[i] * w
        if (w <= threshold).all():
            m = means[i, arms]
            arms = arms[m >= m.max() - 2.0 * threshold * betas[i]]
            continue
        wide = w > threshold
        return i, arms[wide], w[wide]
    last = means.shape[0] - 1  # every width ≤ 2^{-L} ≤ α: unreachable in exact arithmetic
    return None, arms, means[last, arms] + betas[last] * widths[last, arms]


def on_arms(values: Array, arms: NDArray[np.int64], n_arms: int) -> Array:
    """``[L, len(arms)]`` values of some arms spread over all ``n_arms`` (NaN elsewhere)."""
    out = np.full((len(values), n_arms), np.nan)
    out[:, arms] = values
    return out


@part
class LayeredSearch(Exploration):
    """SAVE's descent through L weighted ridge layers on the features (module notes).

    Parameters
    ----------
    threshold : float, optional
        SAVE's α; default 1/``horizon``. The number of layers is ⌈log₂(1/α)⌉.
    beta_scale : float, default=1.0
        Multiplies β̂.
    R, M, delta : float
        Noise bound, ‖θ*‖ bound and confidence of β̂.
    horizon : int, optional
        T (the runner sets it to the run's T).
    refresh_every : int, default=500
        Rank-one updates between exact re-inversions of each layer.
    """

    specs: ClassVar[dict[str, Spec]] = {
        "threshold": Spec(
            "real",
            "SAVE's α (None: 1/horizon)",
            low=0,
            high=1,
            low_inclusive=False,
            high_inclusive=False,
            optional=True,
        ),
        "beta_scale": Spec("real", "multiplies the radius β̂", low=0),
        "R": R_SPEC,
        "M": M_SPEC,
        "delta": DELTA_SPEC,
        "horizon": HORIZON_SPEC,
        "refresh_every": REFRESH_EVERY_SPEC,
    }
    #: each round's layer depends on every round before it: learned one at a time
    sequential: ClassVar[bool] = True

    threshold: float | None = None
    beta_scale: float = 1.0
    R: float = 1.0
    M: float = 1.0
    delta: float = 0.05
    horizon: int | None = None
    refresh_every: int = 500

    def initialize(self, dim: int) -> None:
        """L layers over features of dimension ``dim``, layer ℓ with prior 4^{-ℓ}I."""
        if self.threshold is None and self.horizon is None:
            raise InputValueError(
                "SAVE needs the horizon T (horizon=T) or its threshold α (threshold=...); "
                "the runner sets horizon to the run's T"
            )
        self.threshold_ = self.threshold if self.threshold is not None else 1.0 / self.horizon
        L = max(1, math.ceil(math.log2(1.0 / self.threshold_)))
        self.levels_ = np.arange(1, L + 1)
        self.layers_ = RidgeState(dim, L, 4.0**-self.levels_, self.refresh_every)
        self.sq_rewards_ = np.zeros(L)  # Σ w² r² per layer, for Var̂

    def layer_radii(self, t: int) -> Array:
        """β̂_{t,ℓ} of every layer for the coming round (``t`` rewards learned)."""
        ly = self.layers_
        lam = 4.0**-self.levels_
        # Var̂ = Σ w²(r − θᵀa)² = Σw²r² − 2θᵀb + θᵀ(A − λI)θ
        quad = np.einsum("li,lij,lj->l", ly.theta, ly.A, ly.theta) - lam * (ly.theta**2).sum(1)
        var_hat = self.sq_rewards_ - 2.0 * (ly.theta * ly.b).sum(1) + quad
        radii = save_radius(self.levels_, var_hat, t + 1, len(lam), self.R, self.M, self.delta)
        return self.beta_scale * radii

    def search(
        self, phi: Array, t: int
    ) -> tuple[int | None, NDArray[np.int64], Array, Array, Array]:
        L, K = len(self.levels_), len(phi)
        heads = np.repeat(np.arange(L), K)
        mean, width = self.layers_.score(np.tile(phi, (L, 1)), heads)
        means, widths = mean.reshape(L, K), width.reshape(L, K)
        radii = self.layer_radii(t)
        layer, arms, scores = save_layer_search(means, widths, radii, self.threshold_)
        return layer, arms, scores, means, widths

    def index(self, ev: Evaluation, sit: Situation) -> Array:
        """SAVE's descent over the available arms (all, or those of ``ev.mask``); the others
        score −∞. The decision shows the layer's means and widths."""
        assert ev.features is not None
        n_arms = len(ev.features)
        available = None if ev.mask is None else np.flatnonzero(ev.mask)
        phi = ev.features if available is None else ev.features[available]
        layer, arms, scores, means, widths = self.search(phi, sit.t)
        if available is not None:  # back to the request's arm indices
            arms = available[arms]
            means, widths = (on_arms(v, available, n_arms) for v in (means, widths))
        at = len(self.levels_) - 1 if layer is None else layer
        ev.shown = (means[at], widths[at])
        ev.search = (layer, arms, widths)
        index = np.full(n_arms, -np.inf)
        index[arms] = scores
        return index

    def observe(self, ev: Evaluation, arm: int, t: int) -> dict[str, Any]:
        """The layer an exploration round enters and the arm's width there (nothing for an
        exploit round)."""
        if ev.search is not None:
            layer, arms, widths = ev.search
        else:
            assert ev.features is not None
            layer, arms, _, _, widths = self.search(ev.features, t)
        if layer is None or arm not in arms:  # an exploit round: stored in no layer
            return {}
        return {"layer": layer, "width": float(widths[layer, arm])}

    def learn(self, observations: Sequence[Observation], rewards: Sequence[float]) -> None:
        """Add each exploration round of layer ℓ with weight w = 2^{-ℓ}/‖a‖_{Σ_ℓ⁻¹}, in
        order (exploit rounds enter no layer)."""
        for obs, reward in zip(observations, rewards, strict=True):
            if "layer" in obs.extra:
                layer = int(obs.extra["layer"])
                w = 2.0 ** -(layer + 1) / obs.extra["width"]
                self.layers_.update(obs.features, reward, w * w, layer)
                self.sq_rewards_[layer] += w * w * reward * reward

    def state_dict(self) -> dict[str, Any]:
        return {"layers": self.layers_.state_dict(), "sq_rewards": self.sq_rewards_.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.layers_ = RidgeState.from_state_dict(state["layers"])
        self.sq_rewards_ = as_numpy(state["sq_rewards"]).copy()
