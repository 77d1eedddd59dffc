"""The evaluation policy's action distribution π(· | xₜ) on every logged round.

An evaluation policy is given either as an array ``[n, K]`` of probabilities or as a policy of
the library. A policy's distribution is that of its decisions: the top available arm of its
index, ties broken uniformly, and an exploration floor ε
(:mod:`~deepbandits.policies.choice`), so arm ``a`` has probability
``(1 − ε)·[a ∈ ties]/#ties + ε/#available`` — the same rule, and so the same numbers, as each
:class:`~deepbandits.policies.decision.Decision`'s ``propensity``. The policy is read as it
stands and left unchanged (no learning, no pending decision, its generator restored). Policies
whose index samples (NeuralTS, SAVE's search) have no closed-form distribution: evaluate them
by replay (:mod:`~deepbandits.ope.replay`).

This module reads the policy through the hooks that ``decide`` uses (``_evaluate``,
``_index``), the one place of :mod:`deepbandits.ope` that does; a public
``Policy.probabilities`` would replace it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import as_real_array
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope.log import LoggedBandit
from deepbandits.policies.policy import Policy
from deepbandits.policies.transaction import atomic

Array = NDArray[np.float64]


def greedy_distribution(index: Array, masks: NDArray[np.bool_] | None, epsilon: float) -> Array:
    """The choice rule's probability of every arm ``[B, K]`` for indices ``[B, K]``: the top
    available arms share 1 − ε, every available arm gets ε / #available, masked arms 0."""
    scores = index if masks is None else np.where(masks, index, -np.inf)
    top = scores.max(axis=1, keepdims=True)
    is_top = scores == top
    if masks is not None:
        is_top &= masks
    probs = (1.0 - epsilon) * is_top / is_top.sum(axis=1, keepdims=True)
    if epsilon > 0.0:
        available = np.ones_like(is_top) if masks is None else masks
        probs += epsilon * available / available.sum(axis=1, keepdims=True)
    return probs


def policy_probabilities(policy: Policy, log: LoggedBandit, batch: int = 512) -> Array:
    """π(a | xₜ) ``[n, K]`` of a library policy on every round of ``log`` (module notes)."""
    if policy._samples:
        raise InputValueError(
            f"{type(policy).__name__} samples its index, so its action distribution has no "
            "closed form; evaluate it by replay (deepbandits.ope.replay) instead"
        )
    epsilon = float(policy.get_params().get("epsilon", 0.0) or 0.0)
    n, K = len(log), log.n_actions
    out = np.empty((n, K))
    with atomic(policy, read_only=True):
        for start in range(0, n, batch):
            rows = np.arange(start, min(n, start + batch))
            X3 = log.contexts_of(rows)
            masks = None if log.masks is None else log.masks[rows]
            if policy._vectorised and len(rows) > 1:
                flat = policy._check(X3.reshape(len(rows) * K, -1))
                index = policy._index(policy._evaluate_uniform(flat, len(rows), K))
            else:
                index = np.stack([_round_index(policy, X, masks, i) for i, X in enumerate(X3)])
            out[rows] = greedy_distribution(np.asarray(index, dtype=np.float64), masks, epsilon)
    return out


def _round_index(policy: Policy, X: Array, masks: NDArray[np.bool_] | None, i: int) -> Array:
    ev = policy._evaluate(policy._check(X))
    ev.mask = None if masks is None else masks[i]
    return np.asarray(policy._index(ev), dtype=np.float64)


def action_distribution(target: Any, log: LoggedBandit) -> Array:
    """π(· | xₜ) ``[n, K]`` of ``target``: an array of probabilities (checked: finite, ≥ 0,
    each row summing to 1, 0 on masked arms) or a library policy."""
    if isinstance(target, Policy):
        return policy_probabilities(target, log)
    if not hasattr(target, "__array__") and not isinstance(target, list | tuple):
        raise InputTypeError(
            "policy must be a policy of the library or an array [n, K] of action "
            f"probabilities, but {type(target).__name__} is given"
        )
    dist = as_real_array(target, "policy")
    n, K = len(log), log.n_actions
    if dist.shape != (n, K):
        raise InputValueError(
            f"an action distribution must have shape ({n}, {K}) (rounds, arms), but shape "
            f"{dist.shape} is given"
        )
    if not np.isfinite(dist).all() or (dist < 0).any():
        raise InputValueError("action probabilities must be finite and >= 0")
    sums = dist.sum(axis=1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise InputValueError(
            f"action probabilities must sum to 1 on every round, but round {bad} sums to "
            f"{sums[bad]:.6g}"
        )
    if log.masks is not None and (dist * ~log.masks).max() > 0:
        raise InputValueError("the action distribution puts probability on masked arms")
    return dist
