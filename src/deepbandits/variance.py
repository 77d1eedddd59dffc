"""Where the noise-variance bound σ²ₜ of each round comes from (Algorithm 1, line 10).

* ``none``: no weighting; every observation has weight 1 (plain ridge, Eq. 5).
* ``oracle``: σ²ₜ is given by the caller (the environment's true Var(rₜ)), Section 3.1.
* ``range``: σ̂²ₜ = (b − μ̂)(μ̂ − a) with μ̂ = θₜ₋₁ᵀφ(xₜ,ₐₜ), Eq. 13, Section 3.2.
* ``mle-var``: σ²ₜ = φᵀA⁻¹φ of the arm played, the predictive variance that the MLE loss of
  Eq. 14 fits (the Neural_MLE_Var ablation of Section 5.5, Fig. ablation_study).
* ``schedule``: a user-given sequence σ²ₜ (the heuristic baseline of Fig. heuristic).

All but ``none`` are floored, σ̄² = max(σ², R²/d) (Eq. 9), and the observation weight is 1/σ̄².
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
from deepbandits.formulas import floored_variance, range_variance_bound

VARIANCE_SOURCES = ("none", "oracle", "range", "mle-var", "schedule")
_LINEAR_SPEC = re.compile(r"^linear:([^:]+):([^:]+)(?::(\d+))?$")


def parse_variance_schedule(
    spec: str | Sequence[float], horizon: int | None, *, required: bool = True
) -> NDArray[np.float64] | None:
    """Turn a σ² schedule into an array σ²₁..σ²_T.

    ``spec`` is either a sequence of non-negative floats or ``"linear:START:END[:T]"``, σ² moving
    linearly from START to END over T rounds (T from the spec, else ``horizon``); e.g.
    ``"linear:1:0"`` is the paper's heuristic "σ²ₜ decreasing from 1 to 0" (Fig. heuristic).
    With ``required=False`` a linear spec without any horizon is only checked and ``None`` is
    returned (the horizon may still be set before the first round).
    """
    if isinstance(spec, str):
        match = _LINEAR_SPEC.match(spec.strip())
        if match is None:
            raise InputValueError(
                f"schedule {spec!r} is not understood; expected 'linear:START:END[:T]' "
                "or a sequence of floats"
            )
        try:
            start, end = float(match.group(1)), float(match.group(2))
        except ValueError as exc:
            raise InputValueError(f"schedule {spec!r}: START and END must be numbers") from exc
        T = int(match.group(3)) if match.group(3) else horizon
        if T is None and not required:
            return None
        if T is None or T < 1:
            raise InputValueError(
                f"schedule {spec!r} needs a horizon: write 'linear:START:END:T' or pass horizon=T"
            )
        values = np.linspace(start, end, T)
    else:
        values = np.asarray(spec, dtype=np.float64)
        if values.ndim != 1 or len(values) == 0:
            raise InputValueError(f"schedule must be a 1-d sequence, got shape {values.shape}")
    if not np.isfinite(values).all() or (values < 0).any():
        raise InputValueError("schedule values must be finite and >= 0")
    return values


def round_variance(
    source: str,
    *,
    mean_hat: float,
    t: int,
    R: float,
    d: int,
    oracle: float | None,
    reward_range: tuple[float, float] | None,
    schedule: NDArray[np.float64] | None,
    predictive_variance: float = float("nan"),
) -> tuple[float, float]:
    """σ̄²ₜ used to weight round ``t`` (0-based) and the raw estimate σ̂²ₜ (NaN if not estimated).

    ``predictive_variance`` is φᵀA⁻¹φ of the arm played (used by ``mle-var`` only).
    Returns ``(sigma2_bar, sigma2_hat)``; for ``none`` σ̄² is 1 (unit weights).
    """
    if source == "none":
        return 1.0, float("nan")
    if source == "oracle":
        if oracle is None:
            raise InputValueError(
                "variance='oracle' needs the oracle σ² of each round: update(..., sigma2=v)"
            )
        raw = oracle
    elif source == "range":
        if reward_range is None:
            raise InputValueError(
                "variance='range' needs a reward range [a, b]: pass reward_range=(a, b) to the "
                "policy or to update(), or run it on an environment that declares one"
            )
        raw = float(range_variance_bound(mean_hat, *reward_range))
    elif source == "mle-var":
        raw = predictive_variance
    else:
        assert schedule is not None
        if t >= len(schedule):
            raise InputValueError(
                f"schedule has {len(schedule)} values but round {t + 1} is being played"
            )
        raw = float(schedule[t])
    return float(floored_variance(raw, R, d)), raw
