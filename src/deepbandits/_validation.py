"""Input checks shared by every public entry point.

Each helper returns a cleaned value or raises ``ValueError`` with a message that says what was
expected and what was given, so a bad call fails at the API boundary and never deep inside numpy
or torch.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

import numpy as np


def check_contexts(contexts: Any, n_features: int | None = None) -> Any:
    """Validate a round's arm contexts: a finite float array of shape ``(n_arms, n_features)``.

    A :class:`~deepbandits.encoding.BlockContexts` is checked through its blocks and returned
    as it is; anything else becomes a float64 numpy array.
    """
    from deepbandits.encoding import BlockContexts  # encoding imports this module

    block = isinstance(contexts, BlockContexts)
    try:
        arr = contexts.blocks if block else np.asarray(contexts, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"contexts must be a numeric array, got {type(contexts).__name__}"
        ) from exc
    if arr.ndim != 2:
        raise ValueError(
            f"contexts must be a 2-d array of shape (n_arms, n_features), got shape {arr.shape}"
        )
    shape = contexts.shape if block else arr.shape
    if shape[0] == 0:
        raise ValueError("contexts has 0 arms: at least one arm is needed to select")
    if n_features is not None and shape[1] != n_features:
        raise ValueError(
            f"contexts have {shape[1]} features per arm, but this policy was fitted with "
            f"{n_features}"
        )
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"contexts contain NaN or inf (first at arm {bad[0]}, "
            f"{'block ' if block else ''}feature {bad[1]}: {arr[bad[0], bad[1]]})"
        )
    return contexts if block else arr


def check_arm(arm: Any, n_arms: int) -> int:
    """Validate an arm index against the number of arms offered this round."""
    if isinstance(arm, bool) or not isinstance(arm, int | np.integer):
        raise ValueError(f"arm must be an integer index, got {arm!r}")
    if not 0 <= int(arm) < n_arms:
        raise ValueError(
            f"arm index {arm} is out of range for {n_arms} arms (valid: 0..{n_arms - 1})"
        )
    return int(arm)


def check_finite_scalar(value: Any, name: str) -> float:
    """Validate a finite real scalar (a reward, a variance, ...)."""
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number, got {value!r}") from exc
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    return out


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Validate a positive (or non-negative) finite scalar."""
    out = check_finite_scalar(value, name)
    if out < 0 or (out == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, but {value!r} is given")
    return out


def check_int(value: Any, name: str, *, minimum: int = 0) -> int:
    """Validate an integer parameter with a lower bound."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, but {value!r} is given")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, but {value!r} is given")
    return int(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Validate a string option against its allowed values."""
    options = tuple(choices)
    if value not in options:
        raise ValueError(
            f"unknown {name} {value!r}; expected one of {', '.join(map(repr, options))}"
        )
    return str(value)


def check_reward_range(reward_range: Any) -> tuple[float, float]:
    """Validate a reward range ``(a, b)`` with ``a < b``, both finite."""
    try:
        a, b = reward_range
    except (TypeError, ValueError) as exc:
        raise ValueError(f"reward_range must be a pair (a, b), got {reward_range!r}") from exc
    a = check_finite_scalar(a, "reward_range lower bound a")
    b = check_finite_scalar(b, "reward_range upper bound b")
    if not a < b:
        raise ValueError(f"reward_range needs a < b, got a={a}, b={b}")
    return a, b


def check_unknown_keys(given: Iterable[str], allowed: Iterable[str], what: str) -> None:
    """Reject unknown keyword names with a message listing the valid ones."""
    allowed_set = set(allowed)
    unknown = sorted(set(given) - allowed_set)
    if unknown:
        close = {k: difflib.get_close_matches(k, allowed_set, n=1) for k in unknown}
        hints = [f"{m[0]!r} for {k!r}" for k, m in close.items() if m]
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for {what}{hint}; "
            f"valid options: {', '.join(sorted(allowed_set))}"
        )
