"""Weighted ridge regression statistics, batched over heads (Eq. 5 and Eq. 10).

One :class:`RidgeState` holds ``n_heads`` independent ridge regressions of the same dimension:
a single head is the shared-θ LinUCB of the paper (one A for all arms); ``n_heads = K`` is the
disjoint variant of Li et al. (2010), one A and b per arm. Everything is float64.

The class keeps the state and decides when to re-invert; the pure Sherman–Morrison and inversion
kernels it applies are in :mod:`deepbandits.linalg.rank_one`, and the bounds an observation must
meet (:data:`STAT_LIMIT`) in :mod:`deepbandits.linalg.limits`.

Accuracy of A⁻¹
---------------
A⁻¹ is kept by Sherman–Morrison rank-one updates. The step to ``A + w x xᵀ`` shrinks A⁻¹ by the
factor ``γ = 1 + w xᵀA⁻¹x`` along x, by subtracting two nearly equal terms: it leaves a rounding
error of about ``ε·γ`` relative to the result (ε the float64 unit roundoff). With well-scaled
features γ is O(d) at the start and near 1 afterwards, and a re-inversion every
``refresh_every`` updates bounds the slow drift; but when the features are large against √λ
(columns scaled over 10⁶) the first updates have γ up to 10¹² and left 10⁻⁶ to 10⁻⁵ of relative
error until the first re-inversion. Each head therefore sums ``ε·γ`` since its last exact
inversion (:attr:`RidgeState.drift`, O(1) per update) and, once the sum has passed
:data:`DRIFT_TOL`, inverts A exactly at the next update whose count is a multiple of d. That
spacing keeps the cost of these O(d³) inversions at O(d²) per update, as a rank-one step, and it
measured more accurate than inverting at once: before the data span every direction, A is
ill-conditioned and its inverse no better than the rank-one one. Such a re-inversion keeps the
symmetric part of the LU inverse: a rank-one step never changes the antisymmetric part, which
would otherwise grow relative to A⁻¹ as A⁻¹ shrinks. Problems whose sum never reaches the
tolerance (every well-scaled one) follow exactly the rank-one trajectory of the periodic refresh
alone.

``benchmarks/ridge_accuracy.py`` measures A⁻¹, θ and the widths against a long-double reference
over 10⁶ updates. One limit is inherent to float64 statistics: while some direction has no data,
A holds λ beside entries w‖x‖², and when w‖x‖²/λ approaches 1/ε (10¹⁶) A cannot carry λ at all;
no way of keeping the inverse recovers it (if A is then singular in float64, the rank-one inverse
is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.errors import InputValueError
from deepbandits.linalg.limits import STAT_LIMIT, check_observation, within_limit
from deepbandits.linalg.rank_one import (
    EPS,
    batched_theta,
    exact_inverse,
    outer,
    rank_one_gain,
    rank_one_step,
    sherman_morrison_update,
    ucb_width,
    width_of,
)

__all__ = ["DRIFT_TOL", "STAT_LIMIT", "RidgeState", "sherman_morrison_update"]

Array = NDArray[np.float64]
#: from this dimension on, rank-one updates are done in place (torch ``addr_``)
_IN_PLACE_DIM = 256
#: an estimated drift of A⁻¹ (Σ ε·γ since the last exact inversion) past which A is re-inverted
#: exactly. Measured against a long-double reference (d in 4..64, column scales spanning up to 10⁷,
#: λ in [0.01, 100], weights over e^±4.5, every few updates from n = 2d on) the relative error of
#: A⁻¹, θ and the widths stayed below 6e-11; well-scaled runs reach at most 1e-13 (h1, every
#: ridge policy) and LinUCB on raw digits pixels 3e-12, so they never trigger it
DRIFT_TOL = 1e-11
_INTEGER = (int, np.integer)


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
        A head is also re-inverted, at most once per ``dim`` updates, when its estimated drift
        has passed :data:`DRIFT_TOL` (see the module's notes).

    Attributes
    ----------
    A, A_inv, b, theta : ndarray
        ``[n_heads, dim, dim]`` and ``[n_heads, dim]`` statistics of every head.
    n_updates : ndarray of int64
        Updates of each head.
    drift : ndarray of float64
        Estimated relative error of each head's A⁻¹ since its last exact inversion (Σ ε·γ).
    """

    def __init__(
        self,
        dim: int,
        n_heads: int = 1,
        lam: float | Sequence[float] = 1.0,
        refresh_every: int = 500,
    ):
        if dim < 1 or n_heads < 1:
            raise InputValueError(
                f"RidgeState needs dim >= 1 and n_heads >= 1, but {dim}, {n_heads} are given"
            )
        lams = np.broadcast_to(np.asarray(lam, dtype=np.float64), (int(n_heads),)).copy()
        if not (lams > 0).all():
            raise InputValueError(f"lam must be > 0, but {lam!r} is given")
        self.dim = int(dim)
        self.n_heads = int(n_heads)
        self._lams = lams
        self.refresh_every = int(refresh_every)
        eye = np.eye(self.dim)
        self.A = eye[None] * lams[:, None, None]
        self.A_inv = eye[None] / lams[:, None, None]
        self.b = np.zeros((self.n_heads, self.dim))
        self.theta = np.zeros((self.n_heads, self.dim))
        self.n_updates = np.zeros(self.n_heads, dtype=np.int64)
        self.drift = np.zeros(self.n_heads)

    @property
    def lam(self) -> float | Array:
        """λ: a float when every head has the same, else one per head (change it by
        :meth:`set_lam`)."""
        lams = self._lams
        return float(lams[0]) if (lams == lams[0]).all() else lams.copy()

    def update(self, x: Array, reward: float, weight: float = 1.0, head: int = 0) -> None:
        """Add one observation ``(x, reward)`` with weight ``weight`` to head ``head``.

        Raises :class:`~deepbandits.errors.InputValueError`, leaving every statistic as it was,
        when ``x``, ``reward``, ``weight`` or ``head`` is out of range, or when the update could
        take a statistic past :data:`STAT_LIMIT`.
        """
        x = np.asarray(x, dtype=np.float64)
        self._check_update(x, float(reward), float(weight), head)
        A, A_inv, n = self.A[head], self.A_inv[head], self.n_updates.item(head) + 1
        in_place = self.dim >= _IN_PLACE_DIM
        if in_place:
            # large heads (NeuralUCB's full Z): rank-one updates in place, no d × d temporaries
            A_inv_t, xt = (
                torch.from_numpy(A_inv),
                torch.from_numpy(x if x.flags.writeable else x.copy()),
            )
            Ax_t = A_inv_t @ xt
            gain = 1.0 + weight * float(xt @ Ax_t)
        else:
            Ax, gain = rank_one_gain(A_inv, x, weight)  # γ: A⁻¹ shrinks by this factor along x
        drift = self.drift.item(head) + EPS * gain
        # at most one drift re-inversion (O(d³)) per d updates: O(d²) amortised, as a rank-one step
        drifted = drift > DRIFT_TOL and n % self.dim == 0
        refresh = drifted or n % self.refresh_every == 0
        self.n_updates[head] = n
        if in_place:
            torch.from_numpy(A).addr_(xt, xt, alpha=weight)
        else:
            xx = outer(x)
            if weight != 1.0:  # w·(xxᵀ), the same numbers as the product with w = 1 skipped
                xx *= weight
            A += xx
        exact = exact_inverse(A, self._lams[head], drifted) if refresh else None
        if exact is not None:
            A_inv[...] = exact
        elif in_place:
            A_inv_t.addr_(Ax_t, Ax_t, alpha=-weight / gain)
        else:
            rank_one_step(A_inv, Ax, weight / gain, out=A_inv)
        self.drift[head] = drift if exact is None else 0.0
        b = self.b[head]
        if weight * reward != 0.0:  # a 0 reward (half the rounds of 0/1 rewards) leaves b as it is
            b += (weight * reward) * x
        A_inv.dot(b, out=self.theta[head])

    def _check_update(self, x: Array, reward: float, weight: float, head: int) -> None:
        """Raise :class:`InputValueError` unless ``(x, reward, weight, head)`` is a valid
        observation whose products in :meth:`update` all stay below :data:`STAT_LIMIT`
        (:func:`~deepbandits.linalg.limits.check_observation`). O(d), reads no statistic.
        """
        if not isinstance(head, _INTEGER) or not 0 <= head < self.n_heads:
            raise InputValueError(
                f"head must be an integer in [0, {self.n_heads}), but {head!r} is given"
            )
        if x.shape != (self.dim,):
            raise InputValueError(f"x must have shape ({self.dim},), but {x.shape} is given")
        check_observation(x, reward, weight, self._lams.item(head))

    def update_many(
        self, X: Array, rewards: Array, weights: Array, heads: NDArray[np.int64]
    ) -> None:
        """Add the observations ``(X[i], rewards[i])`` with ``weights[i]`` to ``heads[i]`` at
        once: A and b by one matrix product per head touched, then A⁻¹ and θ of those heads by
        one exact batched inversion (the same statistics as :meth:`update` row by row).

        Every row is checked first (:meth:`update`'s bounds); a refused row changes nothing.
        """
        X = np.asarray(X, dtype=np.float64)
        rewards = np.asarray(rewards, dtype=np.float64)
        weights = np.asarray(weights, dtype=np.float64)
        heads = np.asarray(heads, dtype=np.int64)
        n = len(X)
        if X.shape != (n, self.dim) or rewards.shape != (n,) or weights.shape != (n,):
            raise InputValueError(
                f"update_many needs X [n, {self.dim}], rewards [n], weights [n], but "
                f"{X.shape}, {rewards.shape}, {weights.shape} are given"
            )
        if heads.shape != (n,) or (n and not (0 <= heads.min() and heads.max() < self.n_heads)):
            raise InputValueError(
                f"heads must be {n} integers in [0, {self.n_heads}), but {heads!r} is given"
            )
        ok = within_limit(X, rewards, weights, self._lams[heads])
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            self._check_update(X[bad], float(rewards[bad]), float(weights[bad]), int(heads[bad]))
        touched = np.unique(heads)
        for h in touched:
            rows = heads == h
            Xh, wh = X[rows], weights[rows]
            self.A[h] += (Xh * wh[:, None]).T @ Xh
            self.b[h] += Xh.T @ (wh * rewards[rows])
            self.n_updates[h] += int(rows.sum())
        self.A_inv[touched] = np.linalg.inv(self.A[touched])
        self.theta[touched] = batched_theta(self.A_inv[touched], self.b[touched])
        self.drift[touched] = 0.0

    def discount(self, gamma: float) -> None:
        """Forget: A → λI + γ(A − λI) and b → γb on every head, then A⁻¹ and θ exactly.

        The prior λI stays; the data's weight shrinks by γ (an exponential forgetting of the
        observations, for rewards that drift)."""
        eye = np.eye(self.dim)[None] * self._lams[:, None, None]
        self.A = eye + gamma * (self.A - eye)
        self.b = gamma * self.b
        self._invert_all()

    def add(self, other: RidgeState, base: RidgeState | None = None) -> None:
        """Add the observations of ``other`` (those since ``base``, when given) to this state:
        ridge statistics are sums, so two replicas that each learned part of a stream add up
        to one that learned it all. Needs the same dimension, heads and λ."""
        if (other.dim, other.n_heads) != (self.dim, self.n_heads) or not np.array_equal(
            other._lams, self._lams
        ):
            raise InputValueError(
                f"cannot add a ridge of dim {other.dim}, {other.n_heads} heads, λ {other.lam} "
                f"to one of dim {self.dim}, {self.n_heads} heads, λ {self.lam}"
            )
        start = (
            base
            if base is not None
            else RidgeState(self.dim, self.n_heads, self._lams, self.refresh_every)
        )
        if (start.dim, start.n_heads) != (self.dim, self.n_heads) or not np.array_equal(
            start._lams, self._lams
        ):
            raise InputValueError("base must be a ridge of the same dimension, heads and λ")
        self.A = self.A + (other.A - start.A)
        self.b = self.b + (other.b - start.b)
        self.n_updates = self.n_updates + (other.n_updates - start.n_updates)
        self._invert_all()

    def refit(self, X: Array, rewards: Array, weights: Array, heads: NDArray[np.int64]) -> None:
        """Rebuild all heads from scratch on the observations ``(X, rewards, weights, heads)``."""
        eye = np.eye(self.dim)
        WX = X * weights[:, None]
        for h in range(self.n_heads):
            sel = heads == h
            self.A[h] = eye * self._lams[h] + WX[sel].T @ X[sel]
            self.b[h] = WX[sel].T @ rewards[sel]
        self._invert_all()

    def set_lam(self, lam: float) -> None:
        """Replace the prior λI of every head by ``lam``·I (A, A⁻¹ exactly, θ), keeping the
        observations: A = λI + Σ w x xᵀ."""
        lam = float(lam)
        if not lam > 0:
            raise InputValueError(f"lam must be > 0, but {lam!r} is given")
        self.A += np.eye(self.dim)[None] * (lam - self._lams)[:, None, None]
        self._lams = np.full(self.n_heads, lam)
        self._invert_all()

    def _invert_all(self) -> None:
        """A⁻¹ and θ of every head exactly from A and b."""
        self.A_inv = np.linalg.inv(self.A)
        self.theta = batched_theta(self.A_inv, self.b)
        self.drift[:] = 0.0

    def score(
        self, X: Array, heads: NDArray[np.int64] | None = None, grouped: bool = False
    ) -> tuple[Array, Array]:
        """Mean θᵀx and width ‖x‖_{A⁻¹} for each row of ``X``, in batched operations.

        ``heads`` gives the head of each row; ``None`` scores every row with head 0. With
        ``grouped``, the rows of each head are scored by one matrix product (many rows per
        head: a batch of rounds); the numbers agree with the default to rounding.
        """
        if heads is None:
            Z = X @ self.A_inv[0]
            mean = X @ self.theta[0]
        elif len(heads) == self.n_heads and np.array_equal(heads, np.arange(self.n_heads)):
            return self.score_each(X)
        elif grouped:
            # many rows per head (a batch of rounds): one product per head
            Z = np.empty_like(X)
            mean = np.empty(len(X))
            for h in np.unique(heads):
                rows = heads == h
                Z[rows] = X[rows] @ self.A_inv[h]
                mean[rows] = X[rows] @ self.theta[h]
        else:
            Z = np.einsum("kd,kde->ke", X, self.A_inv[heads])
            mean = np.einsum("kd,kd->k", X, self.theta[heads])
        return mean, ucb_width(Z, X)

    def score_each(self, X: Array) -> tuple[Array, Array]:
        """:meth:`score` of row k on head k (per-arm and per-block ridges) for ``X`` of shape
        ``[K, d]``, or of ``[B, K, d]`` (B requests: each one's row k on head k), on A⁻¹ itself:
        no gathered copy of the d×d matrices, one batched product per call."""
        if X.ndim == 2:  # one request: K products of one row (cheaper than einsum's set-up)
            Z = np.vecmat(X, self.A_inv)
            return np.vecdot(X, self.theta), width_of(np.vecdot(Z, X))
        Xt = X.transpose(1, 0, 2)  # [K, B, d]
        mean = np.matmul(Xt, self.theta[:, :, None])[..., 0]
        width = ucb_width(np.matmul(Xt, self.A_inv), Xt)
        return mean.T, width.T

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
            "drift": self.drift.copy(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> RidgeState:
        """Rebuild from :meth:`state_dict` (arrays may come back as CPU tensors from a file).

        A state saved before :attr:`drift` existed continues with no drift since its last
        exact inversion.
        """
        lam = as_numpy(state["lam"])
        ridge = cls(int(state["dim"]), int(state["n_heads"]), lam, int(state["refresh_every"]))
        for key in ("A", "A_inv", "b", "theta"):
            setattr(ridge, key, as_numpy(state[key]).copy())
        ridge.n_updates = as_numpy(state["n_updates"], np.int64).copy()
        if "drift" in state:
            ridge.drift = as_numpy(state["drift"]).copy()
        return ridge
