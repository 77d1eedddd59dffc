"""KernelUCB (Valko et al. 2013) with an explicit memory bound.

Kernel ridge regression on the contexts played: with K the Gram matrix of the n points kept,
y their rewards and k(x) = [k(x, xᵢ)]ᵢ,

    μ(x) = k(x)ᵀ(K + λI)⁻¹y,   w(x)² = (k(x, x) − k(x)ᵀ(K + λI)⁻¹k(x)) / λ,

and the arm maximising μ(x) + α w(x) is played. With the linear kernel k(x, y) = xᵀy these are
exactly θᵀx and ‖x‖_{A⁻¹} of LinUCB (push-through identity), which the tests use.

(K + λI)⁻¹ is kept up to date by block (Schur-complement) updates, O(n²) per round, and recomputed
exactly every ``refresh_every`` rounds. Its memory grows as n², so at most ``max_history`` points
are kept: beyond that, ``overflow="window"`` (default) replaces the oldest point by the new one
each round (a sliding-window KernelUCB: a rank-2 update of the inverse, done in place, O(n²) per
round), and ``overflow="error"`` refuses to continue.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.errors import InputValueError
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, context_rows
from deepbandits.policies.params import ALPHA_SPEC, LAM_SPEC, REFRESH_EVERY_SPEC, Spec, given_params
from deepbandits.policies.policy import Policy
from deepbandits.policies.space import ALPHA, Param, log_float

Array = NDArray[np.float64]
KERNELS = ("rbf", "linear")
OVERFLOWS = ("window", "error")


def kernel_matrix(X: Array, Y: Array, kernel: str, lengthscale: float) -> Array:
    """k(xᵢ, yⱼ) for the rows of ``X`` and ``Y``: RBF exp(−‖x − y‖²/(2ℓ²)) or linear xᵀy."""
    if kernel == "linear":
        return X @ Y.T
    sq = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2.0 * (X @ Y.T)
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * lengthscale**2))


def grow_inverse(M_inv: Array, k: Array, c: float) -> Array:
    """Inverse of [[M, k], [kᵀ, c]] from M⁻¹ (bordering by the Schur complement)."""
    v = M_inv @ k
    s = c - float(k @ v)
    n = len(k)
    out = np.empty((n + 1, n + 1))
    out[:n, :n] = M_inv + np.outer(v, v) / s
    out[:n, n] = out[n, :n] = -v / s
    out[n, n] = 1.0 / s
    return out


def replace_inverse(M_inv: Array, i: int, delta: Array) -> None:
    """In place, M⁻¹ → M′⁻¹ where the symmetric M′ is M with row and column ``i`` changed by δ.

    M′ = M + δ̃eᵢᵀ + eᵢδ̃ᵀ with δ̃ = δ − (δᵢ/2)eᵢ, a rank-2 change: by the Woodbury identity
    M′⁻¹ = B − [Bδ̃, Beᵢ] (I + [eᵢ, δ̃]ᵀB[δ̃, eᵢ])⁻¹ [Beᵢ, Bδ̃]ᵀ with B = M⁻¹.
    """
    d = delta.copy()
    d[i] *= 0.5
    p, b = M_inv @ d, M_inv[:, i].copy()
    small = np.array([[1.0 + p[i], b[i]], [float(d @ p), 1.0 + p[i]]])
    left = np.column_stack([p, b]) @ np.linalg.inv(small)
    right = np.column_stack([b, p])
    torch.from_numpy(M_inv).addmm_(torch.from_numpy(left), torch.from_numpy(right).T, alpha=-1.0)


class KernelUCB(Policy):
    """Kernel ridge UCB on the raw contexts.

    Parameters
    ----------
    alpha : float, default=0.1
        Exploration rate (η/√λ·… of Valko et al. folded into one constant, as for every method).
    lam : float, default=0.1
        Regulariser λ (γ in Valko et al.).
    kernel : {"rbf", "linear"}, default="rbf"
    lengthscale : float, default=1.0
        RBF length-scale ℓ.
    max_history : int, default=1000
        Most points kept; the inverse takes 8·max_history² bytes (8 MB at 1000).
    overflow : {"window", "error"}, default="window"
        Beyond ``max_history`` points: drop the oldest (sliding window) or raise.
    refresh_every : int, default=500
        Rounds between exact re-inversions of K + λI.
    seed : int, optional
        Tie-breaking.

    Notes
    -----
    The defaults λ = 0.1, α = 0.1 were chosen on h1 (seeds 0–2, T = 3000; regret 515, 496, 503).
    With λ = 1 the quadratic part of the RBF kernel is so heavily regularised that two of those
    three seeds never learned h1 (regret ≈ 1350, like LinUCB), whatever α.
    """

    param_specs: ClassVar[dict[str, Spec]] = {
        "alpha": ALPHA_SPEC,
        "lam": LAM_SPEC,
        "kernel": Spec("choice", "kernel k(x, y)", choices=KERNELS),
        "lengthscale": Spec("real", "RBF length-scale ℓ", low=0, low_inclusive=False),
        "max_history": Spec("int", "most points kept (memory 8·max_history² bytes)", low=1),
        "overflow": Spec(
            "choice", "beyond max_history: drop the oldest or raise", choices=OVERFLOWS
        ),
        "refresh_every": REFRESH_EVERY_SPEC,
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA,
        "lam": log_float(1e-3, 10.0),
        "lengthscale": log_float(0.1, 10.0),
    }

    def __init__(
        self,
        *,
        alpha: float = 0.1,
        lam: float = 0.1,
        kernel: str = "rbf",
        lengthscale: float = 1.0,
        max_history: int = 1000,
        overflow: str = "window",
        refresh_every: int = 500,
        seed: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**given_params(locals(), "options"))

    def _initialize(self, X: Array) -> None:
        self.X_ = np.empty((0, X.shape[1]))
        self.y_ = np.empty(0)
        self.M_inv_ = np.empty((0, 0))
        self._alpha_y = np.empty(0)
        self.oldest_ = 0  # slot the next point replaces once the window is full

    def _k(self, X: Array, Y: Array) -> Array:
        return kernel_matrix(X, Y, self._params["kernel"], self._params["lengthscale"])

    def _evaluate(self, X: Array) -> Evaluation:  # type: ignore[override]
        lam = self._params["lam"]
        kxx = np.einsum("kd,kd->k", X, X) if self._params["kernel"] == "linear" else np.ones(len(X))
        if len(self.y_) == 0:
            mean, var = np.zeros(len(X)), kxx
        else:
            kx = self._k(X, self.X_)
            mean = kx @ self._alpha_y
            var = kxx - ((kx @ self.M_inv_) * kx).sum(axis=1)
        width = np.sqrt(np.maximum(var, 0.0) / lam)
        return Evaluation(mean, width)

    def _index(self, ev: Evaluation) -> Array:
        return ev.mean + self._params["alpha"] * ev.width

    def _learn(self, feedback: Feedback) -> Learned:
        p = self._params
        x, reward = context_rows(feedback.obs.context), feedback.reward
        n = len(self.y_)
        self._check_learn_many(1)
        k = self._k(self.X_, x)[:, 0]
        c = float(self._k(x, x)[0, 0]) + p["lam"]
        if n >= p["max_history"]:
            i = self.oldest_  # column i of K + λI goes from `old` to `k`
            old = self._k(self.X_, self.X_[i : i + 1])[:, 0]
            old[i] += p["lam"]
            k[i] = c
            self.X_[i], self.y_[i] = x[0], reward
            self.oldest_ = (i + 1) % n
            if (self.t_ + 1) % p["refresh_every"]:
                replace_inverse(self.M_inv_, i, k - old)
        else:
            self.X_ = np.vstack([self.X_, x])
            self.y_ = np.append(self.y_, reward)
            if (self.t_ + 1) % p["refresh_every"]:
                self.M_inv_ = grow_inverse(self.M_inv_, k, c)
        if (self.t_ + 1) % p["refresh_every"] == 0:
            self.M_inv_ = np.linalg.inv(self._k(self.X_, self.X_) + p["lam"] * np.eye(len(self.y_)))
        self._alpha_y = self.M_inv_ @ self.y_
        return Learned()

    def _check_learn_many(self, n: int) -> None:
        p = self._params
        if p["overflow"] == "error" and len(self.y_) + n > p["max_history"]:
            raise InputValueError(
                f"KernelUCB keeps at most max_history={p['max_history']} points and its "
                f"memory grows as their square; it holds {len(self.y_)}, and {n} more do not "
                "fit: raise max_history or use overflow='window'"
            )

    def exact_inverse_error(self) -> float:
        """Largest entry of |(K + λI)⁻¹ − inv(K + λI)|: the drift of the block updates."""
        M = self._k(self.X_, self.X_) + self._params["lam"] * np.eye(len(self.y_))
        return float(np.max(np.abs(self.M_inv_ - np.linalg.inv(M))))

    def _state(self) -> dict[str, Any]:
        return {
            "X": self.X_.copy(),
            "y": self.y_.copy(),
            "M_inv": self.M_inv_.copy(),
            "oldest": self.oldest_,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.X_ = np.array(as_numpy(state["X"]).reshape(-1, self.n_features_in_ or 0))
        self.y_ = np.array(as_numpy(state["y"]))
        n = len(self.y_)
        self.M_inv_ = np.array(as_numpy(state["M_inv"]).reshape(n, n))
        self._alpha_y = self.M_inv_ @ self.y_
        self.oldest_ = int(state["oldest"])
