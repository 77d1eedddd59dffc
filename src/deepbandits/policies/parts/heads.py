"""The ridge head: the (variance-weighted) ridge regression of Eq. 10 on a feature map's output,
scored as θᵀφ and ‖φ‖_{A⁻¹} (Eq. 4).

One head holds one :class:`~deepbandits.linalg.ridge.RidgeState` laid out in one of three ways:

* ``"shared"``: one θ for every arm (Eq. 5 as written);
* ``"per_arm"``: one ridge per arm index (the disjoint LinUCB of Li et al. 2010), created on the
  first round, which fixes the number of arms;
* per block: on block-encoded contexts seen through the identity, a shared head keeps one ridge
  per block (A = λI + Σ xxᵀ is block-diagonal, so this is the same regression in K² less memory;
  see :mod:`deepbandits.policies.parts.features`).

Its statistics are sums, so the head also forgets (``discount``: every ``discount_every`` rewards
A → λI + γ(A − λI), b → γb) and adds another replica's observations (:meth:`RidgeHead.merge`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
from deepbandits.linalg.ridge import RidgeState
from deepbandits.policies.params import DISCOUNT_SPECS, LAM_SPEC, REFRESH_EVERY_SPEC, Spec
from deepbandits.policies.parts.part import Part, part

Array = NDArray[np.float64]
Heads = NDArray[np.int64] | None


@part
class RidgeHead(Part):
    """A weighted ridge head over the features of a feature map.

    Parameters
    ----------
    layout : {"shared", "per_arm"}, default="shared"
        One θ shared by every arm, or one ridge per arm (needs the same number of arms every
        round).
    lam : float, default=1.0
        Ridge regulariser λ.
    refresh_every : int, default=500
        Rank-one updates between exact re-inversions.
    discount : float, default=1.0
        γ ≤ 1 applied every ``discount_every`` rewards learned (1 keeps every round, Eq. 5/10).
    discount_every : int, default=100
    """

    specs: ClassVar[dict[str, Spec]] = {
        "layout": Spec(
            "choice", "one θ for all arms, or one per arm", choices=("shared", "per_arm")
        ),
        "lam": LAM_SPEC,
        "refresh_every": REFRESH_EVERY_SPEC,
        **DISCOUNT_SPECS,
    }

    layout: str = "shared"
    lam: float = 1.0
    refresh_every: int = 500
    discount: float = 1.0
    discount_every: int = 100

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the statistics (the layout is fixed again by :meth:`initialize`)."""
        self.ridge_: RidgeState | None = None
        self.by_block_ = False
        self.dim_ = 0

    def initialize(self, dim: int, n_blocks: int | None = None) -> None:
        """Ridge statistics for features of dimension ``dim`` (one ridge per block when
        ``n_blocks`` is given; per-arm ridges wait for the first round)."""
        self.dim_ = dim
        self.by_block_ = n_blocks is not None
        if self.by_block_:
            self.ridge_ = RidgeState(dim, int(n_blocks), self.lam, self.refresh_every)  # type: ignore[arg-type]
        elif self.layout == "shared":
            self.ridge_ = RidgeState(dim, 1, self.lam, self.refresh_every)

    @property
    def kind_(self) -> str:
        """The layout in force: ``"shared"``, ``"per_arm"`` or ``"per_block"``."""
        return "per_block" if self.by_block_ else self.layout

    def heads(self, n_arms: int, slots: Heads) -> Heads:
        """The head of each of ``n_arms`` rows (None: all on head 0); creates the per-arm ridges
        on the first call. Raises before changing anything when the rows do not fit."""
        if self.by_block_:
            if slots is None:
                raise InputValueError(
                    "this policy was fitted on block-encoded contexts (BlockContexts) and keeps "
                    "one ridge per block; dense contexts cannot be scored"
                )
            return slots
        if self.layout == "shared":
            return None
        if self.ridge_ is None:
            self.ridge_ = RidgeState(self.dim_, n_arms, self.lam, self.refresh_every)
        elif n_arms != self.ridge_.n_heads:
            raise InputValueError(
                f"per_arm=True keeps one model per arm and was fitted with {self.ridge_.n_heads} "
                f"arms, but {n_arms} arms are given"
            )
        return np.arange(n_arms)

    def score(self, phi: Array, heads: Heads, grouped: bool = False) -> tuple[Array, Array]:
        """θᵀφ and ‖φ‖_{A⁻¹} of every row (``grouped``: rows of many rounds)."""
        assert self.ridge_ is not None
        if self.kind_ == "per_arm" and not grouped:
            return self.ridge_.score_each(phi)
        return self.ridge_.score(phi, heads, grouped)

    def estimate(self, phi: Array, head: int, needs: frozenset[str]) -> tuple[float, float]:
        """θₜ₋₁ᵀφ (Eq. 13's μ̂) and φᵀA⁻¹φ of one row, each only if ``needs`` names it."""
        ridge = self.ridge_
        assert ridge is not None
        mean = float(phi @ ridge.theta[head]) if "mean" in needs else np.nan
        predictive = float(phi @ ridge.A_inv[head] @ phi) if "predictive" in needs else np.nan
        return mean, predictive

    def learn_one(self, phi: Array, reward: float, weight: float, head: int, t: int) -> None:
        """Add round ``t + 1`` (weighted, Eq. 10) by a rank-one update, and the discount if it
        falls there."""
        ridge = self.ridge_
        assert ridge is not None
        ridge.update(phi, reward, weight, head)
        if self.discount < 1.0 and (t + 1) % self.discount_every == 0:
            ridge.discount(self.discount)

    def learn(
        self, phis: Array, rewards: Array, weights: Array, heads: NDArray[np.int64], t: int
    ) -> None:
        """Add rounds ``t + 1 .. t + n`` (weighted, Eq. 10) and apply the discounts that fall
        among them, so that each round weighs γ^(its age / discount_every)."""
        if len(phis) == 1:
            self.learn_one(phis[0], float(rewards[0]), float(weights[0]), int(heads[0]), t)
            return
        ridge = self.ridge_
        assert ridge is not None
        every, gamma = self.discount_every, self.discount
        first = every - t % every if gamma < 1.0 else len(phis)
        start = 0
        for end in [*range(first, len(phis), every), len(phis)]:
            if end > start:
                rows = slice(start, end)
                ridge.update_many(phis[rows], rewards[rows], weights[rows], heads[rows])
            if gamma < 1.0 and (t + end) % every == 0:
                ridge.discount(gamma)
            start = end

    def merge(self, other: RidgeHead, base: RidgeHead | None = None) -> None:
        """Add the observations ``other`` learned (since ``base``) to this head."""
        if other.kind_ != self.kind_ or other.dim_ != self.dim_:
            raise InputValueError(
                f"cannot merge a {other.kind_} ridge head of dim {other.dim_} into a "
                f"{self.kind_} one of dim {self.dim_}"
            )
        heads = [h for h in (self, other, base) if h is not None and h.ridge_ is not None]
        lams = {repr(h.ridge_.lam) for h in heads}  # type: ignore[union-attr]
        if len(lams) > 1:
            raise InputValueError(
                f"cannot merge ridge heads with different priors λ ({', '.join(sorted(lams))}): "
                "with lam_warmup the prior moves until train_start, so merge replicas after it"
            )
        if other.ridge_ is None:
            return
        if self.ridge_ is None:
            self.ridge_ = RidgeState(self.dim_, other.ridge_.n_heads, self.lam, self.refresh_every)
        self.ridge_.add(other.ridge_, base.ridge_ if base is not None else None)

    def state_dict(self) -> dict[str, Any]:
        return {
            "ridge": self.ridge_.state_dict() if self.ridge_ is not None else None,
            "by_block": self.by_block_,
            "dim": self.dim_,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.by_block_ = bool(state["by_block"])
        self.dim_ = int(state["dim"])
        ridge = state["ridge"]
        self.ridge_ = RidgeState.from_state_dict(ridge) if ridge is not None else None
