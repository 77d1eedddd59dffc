"""Which observations a float64 ridge accepts: the bound :data:`STAT_LIMIT` on the products of one
update of A = λI + Σ wᵢ φᵢφᵢᵀ and b = Σ wᵢ rᵢ φᵢ (Eq. 10), checked in O(d) without reading A.

As A ⪰ λI is symmetric positive definite, ``|A⁻¹ᵢⱼ| ≤ 1/λ``, ``xᵀA⁻¹x ≤ ‖x‖²/λ`` and
``(A⁻¹x)ᵢ² ≤ ‖x‖²/λ²``: the two scalar bounds ``max(w, 1)·‖x‖²/min(λ, λ², 1)`` (A, A⁻¹) and
``w·|r|·‖x‖/min(λ, 1)`` (b, θ) cover every product, and after n updates every statistic is below
n·STAT_LIMIT, so that even its square is finite. Both bounds are false for a NaN or an infinity
anywhere.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError

Array = NDArray[np.float64]
#: bound on every product of one update (w·xxᵀ, (A⁻¹x)(A⁻¹x)ᵀ, w·r·x, A⁻¹b); an update that could
#: exceed it is refused. Statistics then stay below n·1e100 after n updates, and their squares (the
#: widths, θᵀAθ, ...) far below float64's 1.8e308.
STAT_LIMIT = 1e100


def check_observation(x: Array, reward: float, weight: float, lam: float) -> None:
    """Raise :class:`~deepbandits.errors.InputValueError` unless the observation ``(x, reward)``
    with weight ``weight``, on a ridge of prior ``lam``, keeps every product of one update
    below :data:`STAT_LIMIT` (see the module's notes); the message names the first fault."""
    norm = math.hypot(*x.tolist())  # no overflow (numpy's x @ x warns past 1e154)
    if (
        weight >= 0.0
        and max(weight, 1.0) * norm * norm < STAT_LIMIT * min(lam, lam * lam, 1.0)
        and weight * abs(reward) * norm < STAT_LIMIT * min(lam, 1.0)
    ):
        return
    if math.isnan(norm):
        raise InputValueError("x must be finite, but it has a NaN entry")
    if not (math.isfinite(weight) and weight >= 0):
        raise InputValueError(f"weight must be finite and >= 0, but {weight!r} is given")
    if not math.isfinite(reward):
        raise InputValueError(f"reward must be finite, but {reward!r} is given")
    if not max(weight, 1.0) * norm * norm < STAT_LIMIT * min(lam, lam * lam, 1.0):
        raise InputValueError(
            f"x of norm {norm:.3g} with weight {weight:.3g} and λ = {lam:.3g} "
            f"would take the ridge statistics A and A⁻¹ past {STAT_LIMIT:.0e}, the bound "
            "of the products of one update; the update is refused"
        )
    raise InputValueError(
        f"reward {reward:.3g} with weight {weight:.3g}, x of norm {norm:.3g} "
        f"and λ = {lam:.3g} would take the ridge statistics b and θ past "
        f"{STAT_LIMIT:.0e}, the bound of the products of one update; the update is refused"
    )


def within_limit(X: Array, rewards: Array, weights: Array, lams: Array) -> NDArray[np.bool_]:
    """For each row, whether ``(X[i], rewards[i])`` with ``weights[i]`` on a ridge of prior
    ``lams[i]`` passes :func:`check_observation` (vectorised; ``False`` for a NaN or infinity)."""
    with np.errstate(over="ignore", invalid="ignore"):
        norm2 = np.einsum("nd,nd->n", X, X)
        return (
            (weights >= 0.0)
            & (
                np.maximum(weights, 1.0) * norm2
                < STAT_LIMIT * np.minimum.reduce([lams, lams * lams, np.ones(len(X))])
            )
            & (weights * np.abs(rewards) * np.sqrt(norm2) < STAT_LIMIT * np.minimum(lams, 1.0))
        )
