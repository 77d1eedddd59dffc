"""The choice rule every policy shares: the top available arm, ties broken uniformly, and an
exploration floor ε; and the exact probability of each choice.

Among the available arms (``mask``) with the top index, ties are broken uniformly by the policy's
generator, and with probability ε a uniformly drawn available arm is played instead, so arm ``a``
has probability ``(1 − ε)·[a ∈ ties]/#ties + ε/#available``. :func:`choose_arms` applies the rule
to ``B`` requests at once as arrays (``decide_batch``), :func:`choose_one` to one request on
scalars (``decide``, ``select``); both make the same random draws in the same order.
:func:`guaranteed_min_propensity` is the smallest probability a policy's log can then hold for
an available arm: the floor that lets the log evaluate any other policy off-line.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_int, check_real
from deepbandits.errors import InputValueError, NumericalError

Array = NDArray[np.float64]
Mask = NDArray[np.bool_] | None


def request_masks(masks: Any, n_requests: int) -> list[Any]:
    """The masks of ``n_requests`` requests, one entry each (None: no mask for any), each still
    to be checked by :func:`check_mask`; a wrong count raises
    :class:`~deepbandits.errors.InputValueError`."""
    out = [None] * n_requests if masks is None else list(masks)
    if len(out) != n_requests:
        raise InputValueError(
            f"masks must have one entry per request ({n_requests}), but {len(out)} are given"
        )
    return out


def check_mask(mask: Any, n_arms: int) -> NDArray[np.bool_] | None:
    """Validate a mask of available arms: booleans of shape ``[n_arms]``, at least one True."""
    if mask is None:
        return None
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise InputValueError(
            f"mask must be an array of booleans (True = the arm may be chosen), but an array of "
            f"{arr.dtype} is given"
        )
    if arr.shape != (n_arms,):
        raise InputValueError(
            f"mask must have one entry per arm, shape ({n_arms},), but shape {arr.shape} is given"
        )
    if not arr.any():
        raise InputValueError("mask allows no arm: at least one arm must be available")
    return arr.copy()  # the decision keeps it read-only; the caller's array stays theirs


class Choice(NamedTuple):
    """The arms chosen for ``B`` requests, whether each arm was among the top ``[B, K]``, how
    many tied, and how many were available."""

    arms: NDArray[np.int64]
    is_top: NDArray[np.bool_]
    n_ties: NDArray[np.int64]
    n_available: NDArray[np.int64]


def choose_arms(
    index: Array, masks: NDArray[np.bool_] | None, epsilon: float, rng: np.random.Generator
) -> Choice:
    """Apply the rule to an index ``[B, K]`` (masked arms: ``masks`` False). Random draws are
    made in request order, only where a request has ties or ε > 0."""
    B, K = index.shape
    scores = index if masks is None else np.where(masks, index, -np.inf)
    top = scores.max(axis=1)
    if np.isnan(top).any():
        raise NumericalError(
            "an arm scored NaN: the policy's state is not finite (contexts or rewards too large "
            "for its settings?)"
        )
    is_top = scores == top[:, None]
    if masks is not None:
        is_top &= masks
    n_ties = is_top.sum(axis=1)
    arms = is_top.argmax(axis=1)
    if epsilon > 0.0 or (n_ties > 1).any():
        for i in range(B):
            if epsilon > 0.0 and rng.random() < epsilon:
                available = np.arange(K) if masks is None else np.flatnonzero(masks[i])
                arms[i] = rng.choice(available)
            elif n_ties[i] > 1:
                arms[i] = rng.choice(np.flatnonzero(is_top[i]))
    n_available = np.full(B, K) if masks is None else masks.sum(axis=1)
    return Choice(arms, is_top, n_ties, n_available)


def choose_one(
    index: Array, mask: NDArray[np.bool_] | None, epsilon: float, rng: np.random.Generator
) -> tuple[int, int, float]:
    """:func:`choose_arms` and :func:`tie_propensities` of one request ``[K]``, on Python
    scalars: ``(arm, number of tied top arms, the arm's exact probability)``. The same rule
    with the same draws (``tests/test_choice.py`` checks them against the arrays' version);
    it runs once per ``decide``, where array bookkeeping would cost more than the scoring."""
    scores = index if mask is None else np.where(mask, index, -np.inf)
    arm = int(scores.argmax())  # the first top arm, or the first NaN
    top = scores[arm]
    if top != top:
        raise NumericalError(
            "an arm scored NaN: the policy's state is not finite (contexts or rewards too large "
            "for its settings?)"
        )
    if mask is None:  # on a list of floats: the same counts, without array temporaries
        values = index.tolist()
        best = values[arm]
        n_ties = values.count(best)
        if epsilon > 0.0 and rng.random() < epsilon:
            arm = int(rng.choice(np.arange(len(values))))
        elif n_ties > 1:
            arm = int(rng.choice([k for k, v in enumerate(values) if v == best]))
        return arm, n_ties, (1.0 - epsilon) * (values[arm] == best) / n_ties + epsilon / len(values)
    is_top = scores == top
    if mask is not None:
        is_top &= mask
    n_ties = int(np.count_nonzero(is_top))
    n_available = len(index) if mask is None else int(np.count_nonzero(mask))
    if epsilon > 0.0 and rng.random() < epsilon:
        available = np.arange(len(index)) if mask is None else np.flatnonzero(mask)
        arm = int(rng.choice(available))
    elif n_ties > 1:
        arm = int(rng.choice(np.flatnonzero(is_top)))
    elif mask is not None:
        arm = int(is_top.argmax())
    return arm, n_ties, (1.0 - epsilon) * bool(is_top[arm]) / n_ties + epsilon / n_available


def tie_propensities(choice: Choice, epsilon: float) -> Array:
    """The exact probability of each chosen arm under the rule (module notes)."""
    rows = np.arange(len(choice.arms))
    top = choice.is_top[rows, choice.arms]
    return (1.0 - epsilon) * top / choice.n_ties + epsilon / choice.n_available


def greedy_propensities(index: Array, mask: Mask, epsilon: float) -> Array:
    """Every arm's probability under the rule, for one request ``[K]`` or many ``[B, K]``
    (``mask`` of the same shape); 0 for masked arms, and for every arm of a request whose
    available top index is NaN."""
    scores = index if mask is None else np.where(mask, index, -np.inf)
    is_top = scores == scores.max(axis=-1, keepdims=True)  # none where the top is NaN
    if mask is not None:
        is_top &= mask
    n_top = is_top.sum(axis=-1, keepdims=True)
    probs = (1.0 - epsilon) * is_top / np.maximum(n_top, 1)
    if epsilon > 0.0:
        available = np.ones_like(is_top) if mask is None else mask
        probs = probs + (n_top > 0) * (epsilon * available / available.sum(axis=-1, keepdims=True))
    return probs


def guaranteed_min_propensity(
    n_available: int, *, epsilon: float = 0.0, min_propensity: float = 0.0
) -> float:
    """The smallest probability a policy can give an available arm: the floor its log keeps.

    With the ε floor (``epsilon``, every policy) a uniformly drawn available arm is played with
    probability ε, so each of the ``n`` available arms has at least ε/n; inverse gap weighting's
    ``min_propensity`` p (:class:`~deepbandits.policies.parts.InverseGapWeighting`) keeps every
    available arm at least p before the ε floor mixes in, so together each arm has at least
    ``(1 − ε)·p + ε/n``. Without either (plain UCB, greedy) the floor is 0: a deterministic
    policy logs propensity 1 for the arm it plays and 0 for the others, and its log cannot
    support off-policy evaluation of any policy that plays them
    (:class:`~deepbandits.ope.support.SupportWarning`).

    A log whose propensities are all at least the floor f > 0 supports off-policy evaluation of
    any policy π: every importance weight π(a | x)/π₀(a | x) is at most 1/f, so an IPS term
    w·r is at most R/f and its variance at most Σₐ π(a | x)²/π₀(a | x)·R² ≤ R²/f per round, R
    the largest absolute reward.

    Parameters
    ----------
    n_available : int
        Available arms n of a round (its mask's True entries, else every arm). The ε floor ε/n
        shrinks with n: for a log whose masks vary, the guarantee over the whole log is that of
        the most arms ever available (the number of arms, K, bounds it).
    epsilon : float, default=0.0
        The policy's exploration floor ε, in [0, 1].
    min_propensity : float, default=0.0
        Inverse gap weighting's floor p, in [0, 1/n] (a larger one is refused by the policy
        at its decision); 0 for any other exploration rule.

    Returns
    -------
    float
        ``(1 − ε)·p + ε/n``: 0 for a policy without either floor; at most 1/n.

    Raises
    ------
    InputValueError
        ``n_available`` below 1, ``epsilon`` outside [0, 1], or ``min_propensity`` outside
        [0, 1/n].
    """
    n = check_int(n_available, "n_available", minimum=1)
    eps = check_real(epsilon, "epsilon")
    p = check_real(min_propensity, "min_propensity")
    if not 0.0 <= eps <= 1.0:
        raise InputValueError(f"epsilon must be in [0, 1], but {epsilon!r} is given")
    if not 0.0 <= p or n * p > 1.0 + 1e-12:
        raise InputValueError(
            f"min_propensity={min_propensity!r} cannot hold for {n} available arms: it must be "
            f"in [0, 1/{n}] = [0, {1.0 / n:.6g}]"
        )
    return (1.0 - eps) * p + eps / n
