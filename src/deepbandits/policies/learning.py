"""Learning: rewards of pending decisions (by id, one or many) and of the round just played.

Every reward is checked by one function (:func:`check_reward`: finite, bounded, inside the reward
range in force) before anything is learned, and learning runs inside
:func:`~deepbandits.policies.transaction.atomic`, so a call that raises changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deepbandits._validation import (
    MAX_ABS_INPUT,
    check_arm,
    check_finite_scalar,
    check_positive,
    check_reward_range,
)
from deepbandits.errors import DecisionError, InputTypeError, InputValueError
from deepbandits.policies.core import PolicyCore, per_round
from deepbandits.policies.decision import Decision
from deepbandits.policies.evaluation import Feedback, Learned
from deepbandits.policies.transaction import atomic


def check_reward(
    policy: PolicyCore,
    reward: Any,
    sigma2: Any,
    reward_range: Any,
    weight: Any = 1.0,
) -> tuple[float, float | None, tuple[float, float] | None, float]:
    """Validated reward, oracle σ², the reward range in force (the round's, else the
    policy's) and the observation's weight; a reward outside that range is refused, and a
    weight other than 1 by a policy that learns every reward alike."""
    if not (type(weight) is float and weight == 1.0):
        weight = check_positive(weight, "weight", allow_zero=True, bound=MAX_ABS_INPUT)
        if weight != 1.0 and not policy._takes_weights:
            raise InputValueError(
                f"{type(policy).__name__} learns every reward at weight 1, but weight={weight}"
                " is given; observation weights need a policy of the ridge family"
            )
    if not (type(reward) is float and -MAX_ABS_INPUT <= reward <= MAX_ABS_INPUT):
        reward = check_finite_scalar(reward, "reward", bound=MAX_ABS_INPUT)
    if sigma2 is not None:
        sigma2 = check_positive(sigma2, "sigma2", allow_zero=True, bound=MAX_ABS_INPUT)
    if reward_range is None:
        bounds = policy._reward_range
    elif type(reward_range) is tuple and reward_range is policy._range_seen[0]:
        bounds = policy._range_seen[1]  # the same (immutable) tuple as last time: checked
    else:
        bounds = check_reward_range(reward_range)
        if type(reward_range) is tuple:
            policy._range_seen = (reward_range, bounds)
    if bounds is not None and not bounds[0] <= reward <= bounds[1]:
        raise InputValueError(
            f"reward {reward} is outside the reward range [{bounds[0]}, {bounds[1]}]"
        )
    return reward, sigma2, bounds, weight


def _plain_rewards(policy: PolicyCore, rewards: ArrayLike) -> bool:
    """Whether ``rewards`` is an array of floats that :func:`check_reward` would each accept
    with no σ² and the policy's reward range (then they are checked at once; otherwise one by
    one, which names the first that fails)."""
    if not (isinstance(rewards, np.ndarray) and rewards.dtype == np.float64):
        return False
    bounds = policy._reward_range
    low, high = (-MAX_ABS_INPUT, MAX_ABS_INPUT) if bounds is None else bounds
    low, high = max(low, -MAX_ABS_INPUT), min(high, MAX_ABS_INPUT)
    return bool(rewards.size == 0 or (rewards.min() >= low and rewards.max() <= high))


def _learn_one(policy: PolicyCore, feedback: Feedback) -> Learned:
    learned = policy._learn(feedback)
    policy.t_ += 1
    return learned


class Learning(PolicyCore):
    """The learning calls of a policy: rewards of pending decisions and of the round just played."""

    @per_round
    def update(
        self,
        contexts: ArrayLike,
        arm: int,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
        weight: float = 1.0,
    ) -> Learned:
        """Learn from the round just played (the synchronous shortcut of :meth:`learn`).

        Parameters
        ----------
        contexts : array of shape [K_t, d]
            The contexts the arm was chosen from; the features are computed from them with the
            model as it is now.
        arm : int
            Index of the arm played.
        reward : float
            Observed reward.
        sigma2 : float, optional
            Oracle bound on this round's noise variance, when the caller has one.
        reward_range : (a, b), optional
            This round's reward range; overrides the policy's ``reward_range`` (dynamic ranges,
            Fig. ab_dynamic (b)). A reward outside the range in force is refused.
        weight : float, default=1.0
            The observation's weight (≥ 0; an importance weight when learning from a log), which
            multiplies the ridge family's 1/σ̄²; the other policies take only 1.

        Returns
        -------
        Learned
            What the update did (the weight's σ̄², the σ̂² estimate, training time).
        """
        with atomic(self):
            X = self._check(contexts)
            arm = check_arm(arm, X.shape[0])
            checked = check_reward(self, reward, sigma2, reward_range, weight)
            return _learn_one(self, Feedback(self._observe(X, arm, None), *checked))

    @per_round
    def update_batch(
        self,
        contexts: Sequence[ArrayLike],
        arms: Sequence[int],
        rewards: Sequence[float],
        *,
        sigma2: Sequence[float | None] | None = None,
        reward_ranges: Sequence[tuple[float, float] | None] | None = None,
    ) -> Learned | None:
        """Learn several rounds played elsewhere at once (:meth:`update` of each, as
        :meth:`learn_batch` learns pending decisions): ``contexts`` the rounds' context matrices,
        ``arms`` the arms played, ``rewards`` their rewards; ``sigma2`` and ``reward_ranges``
        give each round's (None: none). Everything is checked before anything is learned; an
        empty batch learns nothing. The features come from the model as it is at the call.
        """
        for name, values in (("contexts", contexts), ("arms", arms), ("rewards", rewards)):
            if not isinstance(values, Sequence | np.ndarray) or isinstance(values, str):
                raise InputTypeError(
                    f"{name} must be a list with one entry per round, but a "
                    f"{type(values).__name__} is given"
                )
        n = len(contexts)
        if not (len(arms) == len(rewards) == n):
            raise InputValueError(
                f"contexts, arms and rewards must have one entry per round, but {n}, {len(arms)} "
                f"and {len(rewards)} are given"
            )
        s2 = [None] * n if sigma2 is None else list(sigma2)
        ranges = [None] * n if reward_ranges is None else list(reward_ranges)
        if len(s2) != n or len(ranges) != n:
            raise InputValueError(
                f"sigma2 and reward_ranges must have one entry per round ({n}), but {len(s2)} "
                f"and {len(ranges)} are given"
            )
        if n == 0:
            return None
        self._check_learn_many(n)
        with atomic(self):
            batch = []
            for X, arm, r, v, b in zip(contexts, arms, rewards, s2, ranges, strict=True):
                checked = self._check(X)
                observed = self._observe(checked, check_arm(arm, checked.shape[0]), None)
                batch.append(Feedback(observed, *check_reward(self, r, v, b, 1.0)))
            return self._learn_many(batch)

    @per_round
    def learn(
        self,
        decision: Decision | str,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
        weight: float = 1.0,
    ) -> Learned:
        """Learn the reward of a pending decision (given as the Decision or its id).

        The update uses what the policy saw when it decided (the decision's context and
        features), whatever it has learned since. A decision takes one reward: a second one, or a
        reward for an expired or unknown decision, raises
        :class:`~deepbandits.errors.DecisionError` and changes nothing. ``sigma2``,
        ``reward_range`` and ``weight`` are as in :meth:`update`. Returns what the update did
        (:class:`~deepbandits.policies.evaluation.Learned`).
        """
        now = time.time()
        latest = self.pending_.n_decided - 1
        found = self.pending_.lookup(decision, latest, now)
        checked = check_reward(self, reward, sigma2, reward_range, weight)
        with atomic(self):
            learned = _learn_one(self, Feedback(found, *checked))
        self.pending_.pop(found.id)
        self.pending_.expire(latest, now)
        return learned

    @per_round
    def learn_batch(
        self,
        decisions: Sequence[Decision | str],
        rewards: ArrayLike,
        *,
        sigma2: Sequence[float | None] | None = None,
        reward_ranges: Sequence[tuple[float, float] | None] | None = None,
        weights: ArrayLike | None = None,
    ) -> Learned | None:
        """Learn the rewards of several pending decisions at once, in the order given.

        Every decision and reward is checked before anything is learned (a call that raises
        changes nothing); an empty batch learns nothing. The ridge family (LinUCB to
        Neural-σ²-LinUCB) adds the whole batch to its head by one batched update, with the
        observation weights (σ̂² of Eq. 13) computed from θ as it is at the call and the
        discounts (``discount``) applied at their rounds; its network trains at most once, at
        the end, if its schedule has a training within the batch. The other policies learn the
        rewards one by one, in order (their networks train at the scheduled rounds). ``sigma2``,
        ``reward_ranges`` and ``weights`` give each reward's (as in :meth:`update`). Returns what
        learning the batch did (None for an empty batch).
        """
        if not isinstance(decisions, Sequence) or isinstance(decisions, str):
            raise InputTypeError(
                f"decisions must be a list of Decisions or ids, but a {type(decisions).__name__}"
                " is given"
            )
        decisions = list(decisions)
        n = len(decisions)
        reward_array = np.asarray(rewards, dtype=object)
        if reward_array.shape != (n,):
            raise InputValueError(
                f"rewards must have shape ({n},), one per decision, but shape "
                f"{reward_array.shape} is given"
            )
        rewards_list = list(reward_array)
        for name, values in (
            ("sigma2", sigma2),
            ("reward_ranges", reward_ranges),
            ("weights", weights),
        ):
            if values is not None and (
                not isinstance(values, Sequence | np.ndarray) or isinstance(values, str)
            ):
                raise InputTypeError(
                    f"{name} must be a list with one entry per decision (or None), but "
                    f"{values!r} is given"
                )
        s2 = [None] * n if sigma2 is None else list(sigma2)
        ranges = [None] * n if reward_ranges is None else list(reward_ranges)
        ws = [1.0] * n if weights is None else list(weights)  # type: ignore[arg-type]
        if len(s2) != n or len(ranges) != n or len(ws) != n:
            raise InputValueError(
                f"sigma2, reward_ranges and weights must have one entry per decision ({n}), but "
                f"{len(s2)}, {len(ranges)} and {len(ws)} are given"
            )
        if n == 0:
            return None
        now = time.time()
        latest = self.pending_.n_decided - 1
        found = self.pending_.lookup_many(decisions, latest, now)
        ids = [d.id for d in found]
        if len(set(ids)) != n:
            twice = next(i for i in ids if ids.count(i) > 1)
            raise DecisionError(f"decision {twice} appears twice: a decision takes one reward")
        if (
            sigma2 is None
            and reward_ranges is None
            and weights is None
            and _plain_rewards(self, rewards)
        ):
            bounds = self._reward_range  # every reward checked at once (what check_reward does)
            new = tuple.__new__  # Feedback's fields in order, without the NamedTuple's __new__
            batch = [
                new(Feedback, (obs, r, None, bounds, 1.0))
                for obs, r in zip(
                    found, np.asarray(rewards, dtype=np.float64).tolist(), strict=True
                )
            ]
        else:
            batch = [
                Feedback(obs, *check_reward(self, r, v, b, w))
                for obs, r, v, b, w in zip(found, rewards_list, s2, ranges, ws, strict=True)
            ]
        self._check_learn_many(n)
        with atomic(self):
            learned = self._learn_many(batch)
        self.pending_.pop_many(ids)
        self.pending_.expire(latest, now)
        return learned
