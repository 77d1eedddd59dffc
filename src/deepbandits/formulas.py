"""Closed-form quantities of the paper, as pure functions.

Equation numbers refer to Bui et al., "Variance-Aware Linear UCB with Deep Representation for
Neural Contextual Bandits" (the LaTeX source in ``shared/paper``): Eq. 10 is the weighted ridge
statistics (``eq:a_t_b_t_ours``), Eq. 13 the variance bound estimate (``eq:est_sigma``);
Theorem 4.1 gives the exploration rate alpha_t. The variance bound of Eq. 13 and its floor (Eq. 9)
live with the variance source that uses them (:mod:`deepbandits.policies.parts.variance`), Eq. 14's
likelihood with the training losses (:mod:`deepbandits.networks.training`).
"""

from __future__ import annotations

import math


def warmup_prior(lam: float, mean_weight: float, t: int, t0: int) -> float:
    """The ridge prior λₜ = λ·(f + (1 − f)·min(t, t₀)/t₀), f = min(1, mean weight), of the
    warm-up rounds t ≤ t₀.

    In the weighted ridge of Eq. 10, A = λI + Σ φφᵀ/σ̄²ₛ, the prior weighs as much as λ·σ̄²
    unit-weight observations would; scaling it by the mean weight f makes it count as in the
    unweighted ridge of Eq. 5 at first, and it returns linearly to λ (Algorithm 1) by t₀.
    ``t0 = 0`` gives λ.
    """
    f = min(1.0, float(mean_weight))
    if t0 <= 0 or f >= 1.0:
        return float(lam)
    return float(lam) * (f + (1.0 - f) * min(t, t0) / t0)


def theory_alpha(
    t: int,
    *,
    d: int,
    sigma2_bar: float,
    lam: float = 1.0,
    delta: float = 0.05,
    M: float = 1.0,
    R: float = 1.0,
    H: int = 100,
    K: int = 4,
) -> float:
    """Exploration rate α_t of Theorem 4.1.

    α_t = 8 √(d log(1 + t d log(HK) / (σ̄_t² d λ)) · log(4t²/δ)) + 4 R/σ̄_t · log(4t²/δ) + √λ M.
    """
    t = max(int(t), 1)
    log_term = math.log(4.0 * t * t / delta)
    inner = 1.0 + t * d * math.log(max(H * K, 2)) / (sigma2_bar * d * lam)
    sigma_bar = math.sqrt(sigma2_bar)
    return (
        8.0 * math.sqrt(d * math.log(inner) * log_term)
        + 4.0 * R / sigma_bar * log_term
        + (math.sqrt(lam) * M)
    )
