"""A logged bandit table: what a logging policy saw, did and earned, with its propensities.

Off-policy evaluation reads rounds ``t = 1..n`` of a log written by a logging (behaviour) policy
π₀: the context xₜ, the action aₜ it took, the reward rₜ it got and the propensity
π₀(aₜ | xₜ) with which it took it (Dudík, Langford & Li 2011, Section 2). Contexts come in the
two shapes the library knows: one context per round ``[n, d]`` (with optional action features
``[K, f]``, as in the Open Bandit Dataset) or one context per arm ``[n, K, d]`` (what
``policy.decide`` takes). A round may also carry its slot ``position`` (a recommendation
widget's left, centre, right) and the ``mask`` of arms that were available.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import as_real_array, check_int, check_seed
from deepbandits.errors import InputTypeError, InputValueError

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class LoggedBandit:
    """Rounds logged by a policy π₀ (build one with :func:`make_log`, which checks it).

    Attributes
    ----------
    contexts : ndarray ``[n, d]`` or ``[n, K, d]``
        One context per round, or one per arm and round.
    actions : ndarray of int ``[n]``
        The arm played, 0..K−1.
    rewards : ndarray ``[n]``
        The reward observed.
    propensities : ndarray ``[n]``
        π₀(aₜ | xₜ) (at the round's position, when there are positions), in (0, 1].
    n_actions : int
        Number of arms K.
    positions : ndarray of int ``[n]`` or None
        The slot of each round, 0..P−1 (None: one slot).
    action_features : ndarray ``[K, f]`` or None
        Features of each arm (item features).
    masks : ndarray of bool ``[n, K]`` or None
        The arms available at each round (None: all).
    logging_dist : ndarray ``[n, K]`` or None
        π₀(· | xₜ) of every arm, when known (simulated logs, a uniform logger) or estimated
        (:func:`~deepbandits.ope.propensity.with_estimated_propensities`).
    times : ndarray ``[n]`` or None
        When each round was decided, in seconds since the epoch (the service's
        ``time_decided``), for splits by time; None when the log does not say.
    name : str
        Where the log comes from (for tables and messages).
    """

    contexts: Array
    actions: NDArray[np.int64]
    rewards: Array
    propensities: Array
    n_actions: int
    positions: NDArray[np.int64] | None = None
    action_features: Array | None = None
    masks: NDArray[np.bool_] | None = None
    logging_dist: Array | None = None
    times: Array | None = None
    name: str = "log"

    def __len__(self) -> int:
        return len(self.actions)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.contexts.shape))
        pos = f", {self.n_positions} positions" if self.positions is not None else ""
        return (
            f"LoggedBandit({self.name!r}: {len(self)} rounds, {self.n_actions} arms{pos}, "
            f"contexts {shape})"
        )

    @property
    def per_arm(self) -> bool:
        """Whether contexts are given per arm (``[n, K, d]``)."""
        return self.contexts.ndim == 3

    @property
    def n_positions(self) -> int:
        """Number of slots P (1 without positions)."""
        return 1 if self.positions is None else int(self.positions.max()) + 1

    def subset(self, rows: ArrayLike) -> LoggedBandit:
        """The rounds ``rows`` (indices or a boolean mask), in that order."""
        idx = np.asarray(rows)
        if idx.dtype == np.bool_:
            idx = np.flatnonzero(idx)

        def take(a: Any) -> Any:
            return None if a is None else a[idx]

        return replace(
            self,
            contexts=self.contexts[idx],
            actions=self.actions[idx],
            rewards=self.rewards[idx],
            propensities=self.propensities[idx],
            positions=take(self.positions),
            masks=take(self.masks),
            logging_dist=take(self.logging_dist),
            times=take(self.times),
        )

    def split(self, fraction: float, seed: int | None = 0) -> tuple[LoggedBandit, LoggedBandit]:
        """Two disjoint parts: the first ``fraction`` of a seeded permutation of the rounds and
        the rest (``seed=None``: the first rounds in log order, the rest after them)."""
        if not 0.0 < fraction < 1.0:
            raise InputValueError(f"fraction must be in (0, 1), but {fraction!r} is given")
        n = len(self)
        cut = round(fraction * n)
        if not 0 < cut < n:
            raise InputValueError(f"a fraction {fraction} of {n} rounds leaves a part empty")
        seed = check_seed(seed)
        order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))

    def round_contexts(self, t: int) -> Array:
        """The arm contexts ``[K, d']`` of round ``t`` as a policy of the library takes them:
        the per-arm contexts, or each arm's ``[x, action features]`` (x alone without them)."""
        return self.contexts_of(np.array([t]))[0]

    def contexts_of(self, rows: NDArray[np.int64]) -> Array:
        """:meth:`round_contexts` of the rounds ``rows``, ``[len(rows), K, d']``."""
        if self.per_arm:
            return self.contexts[rows]
        x = self.contexts[rows]
        stacked = np.broadcast_to(x[:, None, :], (len(x), self.n_actions, x.shape[1]))
        if self.action_features is None:
            return np.array(stacked)
        f = np.broadcast_to(self.action_features, (len(x), *self.action_features.shape))
        return np.concatenate([stacked, f], axis=2)


def check_log(log: Any, name: str = "log") -> LoggedBandit:
    """``log`` itself when it is a :class:`LoggedBandit`; an
    :class:`~deepbandits.errors.InputTypeError` naming what to pass otherwise."""
    if not isinstance(log, LoggedBandit):
        raise InputTypeError(
            f"{name} must be a LoggedBandit (make_log(...), deepbandits.load_logged(...) or "
            f"simulate_log(...)), but {type(log).__name__} is given"
        )
    return log


def _vector(values: Any, name: str, n: int | None) -> Array:
    arr = as_real_array(values, name)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = f"({n},)" if n is not None else "(n,)"
        raise InputValueError(f"{name} must have shape {want}, but shape {arr.shape} is given")
    if not np.isfinite(arr).all():
        raise InputValueError(f"{name} must be finite, but it holds NaN or inf")
    return arr


def _indices(values: Any, name: str, n: int, bound: int | None) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and np.array_equal(arr, np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise InputTypeError(
            f"{name} must be integer indices, but an array of {arr.dtype} is given"
        )
    if arr.shape != (n,):
        raise InputValueError(f"{name} must have shape ({n},), but shape {arr.shape} is given")
    if n and (arr.min() < 0 or (bound is not None and arr.max() >= bound)):
        upper = f"..{bound - 1}" if bound is not None else " or more"
        raise InputValueError(
            f"{name} must lie in 0{upper}, but values {arr.min()}..{arr.max()} are given"
        )
    return arr.astype(np.int64)


def make_log(
    contexts: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    n_actions: int | None = None,
    positions: ArrayLike | None = None,
    action_features: ArrayLike | None = None,
    masks: ArrayLike | None = None,
    logging_dist: ArrayLike | None = None,
    times: ArrayLike | None = None,
    name: str = "log",
) -> LoggedBandit:
    """A checked :class:`LoggedBandit` (shapes, ranges, finiteness; a bad input raises the
    library's errors naming the argument).

    ``n_actions`` defaults to the second axis of per-arm contexts, of ``action_features``, of
    ``masks`` or of ``logging_dist``, else to the largest action + 1.
    """
    X = as_real_array(contexts, "contexts")
    if X.ndim not in (2, 3) or X.shape[0] == 0:
        raise InputValueError(
            f"contexts must be [n, d] or [n, K, d] with n >= 1, but shape {X.shape} is given"
        )
    if not np.isfinite(X).all():
        raise InputValueError("contexts must be finite, but they hold NaN or inf")
    n = X.shape[0]
    acts = np.asarray(actions)
    for arr in (action_features, masks, logging_dist):
        if n_actions is None and arr is not None:
            n_actions = int(np.shape(arr)[0 if arr is action_features else 1])
    if n_actions is None:
        bound = None if X.ndim == 3 else _indices(acts, "actions", n, None).max() + 1
        n_actions = X.shape[1] if bound is None else int(bound)
    K = check_int(n_actions, "n_actions", minimum=1)
    if X.ndim == 3 and X.shape[1] != K:
        raise InputValueError(f"per-arm contexts must have {K} arms, but shape {X.shape} is given")
    a = _indices(acts, "actions", n, K)
    r = _vector(rewards, "rewards", n)
    p = _vector(propensities, "propensities", n)
    if (p <= 0).any() or (p > 1 + 1e-9).any():
        raise InputValueError(
            f"propensities must lie in (0, 1], but values {p.min():g}..{p.max():g} are given; a "
            "propensity of 0 means the logged action could not have been taken"
        )
    pos = None if positions is None else _indices(positions, "positions", n, None)
    feats = None
    if action_features is not None:
        feats = as_real_array(action_features, "action_features")
        if feats.ndim != 2 or feats.shape[0] != K or not np.isfinite(feats).all():
            raise InputValueError(
                f"action_features must be finite, of shape ({K}, f), but shape {feats.shape} "
                "is given"
            )
    m = None
    if masks is not None:
        m = np.asarray(masks)
        if m.dtype != np.bool_ or m.shape != (n, K):
            raise InputValueError(
                f"masks must be booleans of shape ({n}, {K}), but {m.dtype} of shape {m.shape} "
                "is given"
            )
        if not m[np.arange(n), a].all():
            raise InputValueError("masks leave out an arm that the log says was played")
    dist = None
    if logging_dist is not None:
        dist = as_real_array(logging_dist, "logging_dist")
        if dist.shape != (n, K) or (dist < 0).any() or not np.allclose(dist.sum(1), 1.0):
            raise InputValueError(
                f"logging_dist must be probabilities of shape ({n}, {K}) summing to 1 per row"
            )
        if not np.allclose(dist[np.arange(n), a], p):
            raise InputValueError("logging_dist disagrees with propensities at the logged actions")
    when = None if times is None else _vector(times, "times", n)
    return LoggedBandit(X, a, r, p, K, pos, feats, m, dist, when, str(name))
