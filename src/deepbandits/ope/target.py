"""The evaluation policy's action distribution π(· | xₜ) on every logged round.

An evaluation policy is given either as an array ``[n, K]`` of probabilities or as a policy of
the library. A policy's distribution is that of its decisions: the top available arm of its
index, ties broken uniformly, and an exploration floor ε
(:mod:`~deepbandits.policies.choice`), so arm ``a`` has probability
``(1 − ε)·[a ∈ ties]/#ties + ε/#available`` — the same rule, and so the same numbers, as each
:class:`~deepbandits.policies.decision.Decision`'s ``propensity``. The policy is read as it
stands and left unchanged (no learning, no pending decision, its generator restored). Policies
whose index samples (NeuralTS, Thompson sampling) have no closed-form distribution: evaluate them
by replay (:mod:`~deepbandits.ope.replay`).

A policy's distribution is read by its public ``probabilities``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import as_real_array
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.logs.bandit import LoggedBandit
from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]


def policy_probabilities(policy: Policy, log: LoggedBandit, batch: int = 512) -> Array:
    """π(a | xₜ) ``[n, K]`` of a library policy on every round of ``log`` (module notes), by
    :meth:`Policy.probabilities <deepbandits.policies.Policy.probabilities>` on batches of
    rounds."""
    n, K = len(log), log.n_actions
    out = np.empty((n, K))
    for start in range(0, n, batch):
        rows = np.arange(start, min(n, start + batch))
        masks = None if log.masks is None else log.masks[rows]
        out[rows] = policy.probabilities(log.contexts_of(rows), masks)
    return out


def check_policy(policy: Any, name: str = "policy") -> Policy:
    """``policy`` itself when it is a policy of the library; an
    :class:`~deepbandits.errors.InputTypeError` otherwise."""
    if not isinstance(policy, Policy):
        raise InputTypeError(
            f"{name} must be a policy of the library (deepbandits.make_policy(...)), but "
            f"{type(policy).__name__} is given"
        )
    return policy


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
