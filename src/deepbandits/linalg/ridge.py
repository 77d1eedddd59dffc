"""Weighted ridge regression statistics, batched over heads (Eq. 5 and Eq. 10).

One :class:`RidgeState` holds ``n_heads`` independent ridge regressions of the same dimension:
a single head is the shared-θ LinUCB of the paper (one A for all arms); ``n_heads = K`` is the
disjoint variant of Li et al. (2010), one A and b per arm. Everything is float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits._convert import as_numpy

Array = NDArray[np.float64]
#: from this dimension on, rank-one updates are done in place (torch ``addr_``)
_IN_PLACE_DIM = 256


def sherman_morrison_update(A_inv: Array, x: Array, weight: float) -> Array:
    """Inverse of ``A + weight · x xᵀ`` from ``A⁻¹`` (Sherman–Morrison), for symmetric ``A``."""
    Ax = A_inv @ x
    return A_inv - np.outer(Ax, Ax) * (weight / (1.0 + weight * float(x @ Ax)))


class RidgeState:
    """Statistics A = λI + Σ wᵢ φᵢφᵢᵀ, b = Σ wᵢ rᵢ φᵢ and θ = A⁻¹b of a weighted ridge (Eq. 10).

    With unit weights this is the ordinary ridge of OFUL/LinUCB (Eq. 5); with
    ``wᵢ = 1/σ̄ᵢ²`` it is the variance-weighted ridge of Eq. 9.

    Parameters
    ----------
    dim : int
        Feature dimension.
    n_heads : int, default=1
        Number of independent regressions (1 = shared θ; K = one per arm).
    lam : float or sequence of float, default=1.0
        Ridge regulariser λ > 0, shared or one per head (SAVE's layers use λ_ℓ = 4^{-ℓ}).
    refresh_every : int, default=500
        A⁻¹ is maintained by rank-one Sherman–Morrison updates; every ``refresh_every`` updates of
        a head its inverse is recomputed exactly from A, which bounds the floating-point drift.
    """

    def __init__(
        self,
        dim: int,
        n_heads: int = 1,
        lam: float | Sequence[float] = 1.0,
        refresh_every: int = 500,
    ):
        if dim < 1 or n_heads < 1:
            raise ValueError(f"RidgeState needs dim >= 1 and n_heads >= 1, got {dim}, {n_heads}")
        lams = np.broadcast_to(np.asarray(lam, dtype=np.float64), (int(n_heads),)).copy()
        if not (lams > 0).all():
            raise ValueError(f"lam must be > 0, but {lam!r} is given")
        self.dim = int(dim)
        self.n_heads = int(n_heads)
        self.lam = float(lams[0]) if (lams == lams[0]).all() else lams
        self._lams = lams
        self.refresh_every = int(refresh_every)
        eye = np.eye(self.dim)
        self.A = eye[None] * lams[:, None, None]
        self.A_inv = eye[None] / lams[:, None, None]
        self.b = np.zeros((self.n_heads, self.dim))
        self.theta = np.zeros((self.n_heads, self.dim))
        self.n_updates = np.zeros(self.n_heads, dtype=np.int64)

    def update(self, x: Array, reward: float, weight: float = 1.0, head: int = 0) -> None:
        """Add one observation ``(x, reward)`` with weight ``weight`` to head ``head``."""
        self.n_updates[head] += 1
        refresh = self.n_updates[head] % self.refresh_every == 0
        if self.dim >= _IN_PLACE_DIM:
            # large heads (NeuralUCB's full Z): rank-one updates in place, no d × d temporaries
            A, A_inv = torch.from_numpy(self.A[head]), torch.from_numpy(self.A_inv[head])
            xt = torch.from_numpy(x)
            A.addr_(xt, xt, alpha=weight)
            if not refresh:
                Ax = A_inv @ xt
                A_inv.addr_(Ax, Ax, alpha=-weight / (1.0 + weight * float(xt @ Ax)))
        else:
            self.A[head] += weight * np.outer(x, x)
            if not refresh:
                self.A_inv[head] = sherman_morrison_update(self.A_inv[head], x, weight)
        if refresh:
            self.A_inv[head] = np.linalg.inv(self.A[head])
        self.b[head] += (weight * reward) * x
        self.theta[head] = self.A_inv[head] @ self.b[head]

    def refit(self, X: Array, rewards: Array, weights: Array, heads: NDArray[np.int64]) -> None:
        """Rebuild all heads from scratch on the observations ``(X, rewards, weights, heads)``."""
        eye = np.eye(self.dim)
        WX = X * weights[:, None]
        for h in range(self.n_heads):
            sel = heads == h
            self.A[h] = eye * self._lams[h] + WX[sel].T @ X[sel]
            self.b[h] = WX[sel].T @ rewards[sel]
        self.A_inv = np.linalg.inv(self.A)
        self.theta = np.einsum("hij,hj->hi", self.A_inv, self.b)

    def set_lam(self, lam: float) -> None:
        """Replace the prior λI of every head by ``lam``·I (A, A⁻¹ exactly, θ), keeping the
        observations: A = λI + Σ w x xᵀ."""
        lam = float(lam)
        if not lam > 0:
            raise ValueError(f"lam must be > 0, but {lam!r} is given")
        self.A += np.eye(self.dim)[None] * (lam - self._lams)[:, None, None]
        self._lams = np.full(self.n_heads, lam)
        self.lam = lam
        self.A_inv = np.linalg.inv(self.A)
        self.theta = np.einsum("hij,hj->hi", self.A_inv, self.b)

    def score(self, X: Array, heads: NDArray[np.int64] | None = None) -> tuple[Array, Array]:
        """Mean θᵀx and width ‖x‖_{A⁻¹} for each row of ``X``, in one batched operation.

        ``heads`` gives the head of each row; ``None`` scores every row with head 0.
        """
        if heads is None:
            Z = X @ self.A_inv[0]
            mean = X @ self.theta[0]
        elif self.dim >= _IN_PLACE_DIM and np.array_equal(heads, np.arange(self.n_heads)):
            # row k on head k (per-arm and per-block ridges): batched BLAS on A⁻¹ itself,
            # no gathered copy of n_heads d×d matrices
            Z = np.matmul(X[:, None, :], self.A_inv)[:, 0, :]
            mean = np.einsum("kd,kd->k", X, self.theta)
        else:
            Z = np.einsum("kd,kde->ke", X, self.A_inv[heads])
            mean = np.einsum("kd,kd->k", X, self.theta[heads])
        width = np.sqrt(np.maximum(np.einsum("kd,kd->k", Z, X), 0.0))
        return mean, width

    def exact_inverse_error(self) -> float:
        """Largest entry of |A⁻¹ − inv(A)| over heads: the drift of the rank-one updates."""
        return float(np.max(np.abs(self.A_inv - np.linalg.inv(self.A))))

    def state_dict(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "n_heads": self.n_heads,
            "lam": self._lams.copy(),
            "refresh_every": self.refresh_every,
            "A": self.A.copy(),
            "A_inv": self.A_inv.copy(),
            "b": self.b.copy(),
            "theta": self.theta.copy(),
            "n_updates": self.n_updates.copy(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> RidgeState:
        """Rebuild from :meth:`state_dict` (arrays may come back as CPU tensors from a file)."""
        lam = as_numpy(state["lam"])
        ridge = cls(int(state["dim"]), int(state["n_heads"]), lam, int(state["refresh_every"]))
        for key in ("A", "A_inv", "b", "theta"):
            setattr(ridge, key, as_numpy(state[key]).copy())
        ridge.n_updates = as_numpy(state["n_updates"], np.int64).copy()
        return ridge
