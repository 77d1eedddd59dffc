"""Pure float64 kernels of a ridge inverse A⁻¹: Sherman–Morrison rank-one steps (Eq. 5, Eq. 10)
and the exact re-inversion that bounds their drift.

These functions hold no state: :class:`~deepbandits.linalg.ridge.RidgeState` calls them on its
heads and decides when to re-invert (see the notes of :mod:`deepbandits.linalg.ridge`). Each keeps
the operation order the ridge's trajectories were recorded with, so that they are bit for bit the
same.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
#: float64 unit roundoff ε
EPS = float(np.finfo(np.float64).eps) / 2


def rank_one_gain(A_inv: Array, x: Array, weight: float) -> tuple[Array, float]:
    """``(A⁻¹x, γ)`` with ``γ = 1 + weight · xᵀA⁻¹x``: the factor by which the step to
    ``A + weight · x xᵀ`` shrinks A⁻¹ along x (its rounding error is about ``ε·γ``)."""
    Ax = A_inv.dot(x)  # ndarray.dot: the same BLAS product as @, at a third of its call cost
    return Ax, 1.0 + weight * float(x.dot(Ax))


def rank_one_step(A_inv: Array, Ax: Array, scale: float, out: Array | None = None) -> Array:
    """``A⁻¹ − scale · (A⁻¹x)(A⁻¹x)ᵀ``, the Sherman–Morrison step given ``A⁻¹x`` (into ``out``,
    which may be ``A_inv`` itself)."""
    step = outer(Ax)
    step *= scale
    return np.subtract(A_inv, step, out=out)


def outer(x: Array) -> Array:
    """``x xᵀ`` of a float64 vector, as one BLAS product of ``[d, 1]`` by ``[1, d]``: every entry
    is the one rounded product ``xᵢxⱼ`` (np.outer's numbers), at half np.outer's call cost."""
    column = x.reshape(-1, 1)
    return column.dot(column.T)


def sherman_morrison_update(A_inv: Array, x: Array, weight: float) -> Array:
    """Inverse of ``A + weight · x xᵀ`` from ``A⁻¹`` (Sherman–Morrison), for symmetric ``A``."""
    Ax, gain = rank_one_gain(A_inv, x, weight)
    return rank_one_step(A_inv, Ax, weight / gain)


def exact_inverse(A: Array, lam: float, symmetric: bool) -> Array | None:
    """``inv(A)`` of ``A ⪰ λI`` (its symmetric part if ``symmetric``), or ``None`` when A is
    singular in float64 (features so large against √λ that A's entries cannot hold λ), which
    shows as an error or as entries beyond the bound 1/λ of every entry of A⁻¹."""
    try:
        A_inv = np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return None
    if not (-2.0 / lam <= A_inv.min() and A_inv.max() <= 2.0 / lam):  # also catches NaN
        return None
    # Rank-one steps leave the antisymmetric rounding of an LU inverse unchanged while A⁻¹
    # shrinks: after a drift (A ill-conditioned, A⁻¹ about to shrink by large factors) it would
    # grow without bound relative to A⁻¹, so such re-inversions keep the symmetric part.
    return (A_inv + A_inv.T) / 2 if symmetric else A_inv


def batched_theta(A_inv: NDArray[np.float64], b: Array) -> Array:
    """θ = A⁻¹b of every head, from ``[h, d, d]`` inverses and ``[h, d]`` vectors."""
    return np.einsum("hij,hj->hi", A_inv, b)


def ucb_width(Z: Array, X: Array) -> Array:
    """Widths ‖x‖_{A⁻¹} = √(xᵀA⁻¹x) of the rows of ``X`` (any leading shape) given
    ``Z = X A⁻¹`` row by row, with the tiny negative rounding of a near-zero quadratic form
    clipped to 0."""
    return width_of(np.einsum("...d,...d->...", Z, X))


def width_of(quad: Array) -> Array:
    """√(xᵀA⁻¹x) from the quadratic forms, their tiny negative rounding clipped to 0."""
    return np.sqrt(np.maximum(quad, 0.0))
