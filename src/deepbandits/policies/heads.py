"""The ridge head: the (variance-weighted) ridge regression of Eq. 10 on a feature map's output,
scored as θᵀφ and ‖φ‖_{A⁻¹} (Eq. 4).

One head holds one :class:`~deepbandits.linalg.ridge.RidgeState` laid out in one of three ways:

* ``"shared"``: one θ for every arm (Eq. 5 as written);
* ``"per_arm"``: one ridge per arm index (the disjoint LinUCB of Li et al. 2010), created on the
  first round, which fixes the number of arms;
* ``"per_block"``: one ridge per block of block-encoded contexts (the shared θ of LinUCB on
  such contexts, stored block by block; see :mod:`deepbandits.policies.features`).

Its statistics are sums, so the head also forgets (:meth:`RidgeHead.discount`) and adds another
replica's observations (:meth:`RidgeHead.merge`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
from deepbandits.linalg.ridge import RidgeState

Array = NDArray[np.float64]
LAYOUTS = ("shared", "per_arm", "per_block")


class RidgeHead:
    """A weighted ridge head over features of dimension ``dim``.

    Parameters
    ----------
    dim : int
        Feature dimension.
    layout : {"shared", "per_arm", "per_block"}
    lam : float
        Ridge regulariser λ.
    refresh_every : int
        Rank-one updates between exact re-inversions.
    n_blocks : int, optional
        Number of blocks (``layout="per_block"``).
    """

    def __init__(
        self,
        dim: int,
        layout: str,
        lam: float,
        refresh_every: int,
        n_blocks: int | None = None,
    ) -> None:
        self.dim = dim
        self.layout = layout
        self.lam = lam
        self.refresh_every = refresh_every
        self.ridge: RidgeState | None = None
        if layout == "shared":
            self.ridge = RidgeState(dim, 1, lam, refresh_every)
        elif layout == "per_block":
            assert n_blocks is not None
            self.ridge = RidgeState(dim, n_blocks, lam, refresh_every)

    def heads(self, n_arms: int, slots: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
        """The head of each of ``n_arms`` rows (None: all on head 0); creates the per-arm
        ridges on the first call. Raises before changing anything when the rows do not fit."""
        if self.layout == "shared":
            return None
        if self.layout == "per_block":
            if slots is None:
                raise InputValueError(
                    "this policy was fitted on block-encoded contexts (BlockContexts) and keeps "
                    "one ridge per block; dense contexts cannot be scored"
                )
            return slots
        if self.ridge is None:
            self.ridge = RidgeState(self.dim, n_arms, self.lam, self.refresh_every)
        elif n_arms != self.ridge.n_heads:
            raise InputValueError(
                f"per_arm=True keeps one model per arm and was fitted with {self.ridge.n_heads} "
                f"arms, but {n_arms} arms are given"
            )
        return np.arange(n_arms)

    def score(
        self, phi: Array, heads: NDArray[np.int64] | None, grouped: bool = False
    ) -> tuple[Array, Array]:
        """θᵀφ and ‖φ‖_{A⁻¹} of every row (``grouped``: rows of many rounds)."""
        assert self.ridge is not None
        if self.layout == "per_arm" and not grouped:
            return self.ridge.score_each(phi)
        return self.ridge.score(phi, heads, grouped)

    def discount(self, gamma: float) -> None:
        """Shrink the data's weight by γ on every head (prior kept)."""
        if self.ridge is not None:
            self.ridge.discount(gamma)

    def merge(self, other: RidgeHead, base: RidgeHead | None = None) -> None:
        """Add the observations ``other`` learned (since ``base``) to this head."""
        if other.layout != self.layout or other.dim != self.dim:
            raise InputValueError(
                f"cannot merge a {other.layout} ridge head of dim {other.dim} into a "
                f"{self.layout} one of dim {self.dim}"
            )
        if other.ridge is None:
            return
        if self.ridge is None:
            self.ridge = RidgeState(self.dim, other.ridge.n_heads, self.lam, self.refresh_every)
        self.ridge.add(other.ridge, base.ridge if base is not None else None)

    def state_dict(self) -> dict[str, Any] | None:
        return self.ridge.state_dict() if self.ridge is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state is not None:
            self.ridge = RidgeState.from_state_dict(state)
