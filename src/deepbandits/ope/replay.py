"""Replay: evaluating a policy that learns as it goes on a logged stream (Li, Chu, Langford &
Wang 2011, "Unbiased offline evaluation of contextual-bandit-based news article recommendation
algorithms", Algorithm 3), with rejection sampling for logs of known non-uniform propensities.

The log is read in order. At each round the policy chooses among the round's arms
(``policy.select``); if it chooses the logged arm, the round is *accepted* with probability
p_min / π₀(aₜ | xₜ) (always, on a uniform log), the policy learns its reward
(``policy.update``) and the reward counts; otherwise the round is skipped as if it never
happened. An accepted round is then distributed as a round played online: P(accepted, arm a |
x) = π(a | x) p_min, so given acceptance the context is drawn as in the log and the arm as the
policy would. The accepted rounds are the policy's online trajectory, about n·p_min of them
(n/K on a uniform log), whatever it learns in between. ``p_min`` must not exceed any logged
propensity; by default it is the smallest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from deepbandits._validation import check_int, check_positive, check_seed
from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit, check_log
from deepbandits.ope.target import check_policy
from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]


@dataclass(frozen=True)
class ReplayResult:
    """The accepted rounds of a replay.

    Attributes
    ----------
    rounds : ndarray of int
        Indices of the accepted rounds in the log.
    arms : ndarray of int
        The arm played at each (the logged arm).
    rewards : ndarray
        The reward learned at each.
    regret : ndarray or None
        Per accepted round, best mean reward minus the arm's (when the log's mean rewards are
        known, :mod:`~deepbandits.ope.simulate`).
    n_logged : int
        Rounds read.
    p_min : float
        The acceptance scale.
    """

    rounds: NDArray[np.int64]
    arms: NDArray[np.int64]
    rewards: Array
    regret: Array | None
    n_logged: int
    p_min: float

    @property
    def value(self) -> float:
        """The replayed policy's mean reward per round (NaN with no accepted round)."""
        return float(self.rewards.mean()) if len(self.rewards) else float("nan")

    @property
    def n_accepted(self) -> int:
        return len(self.rounds)

    @property
    def std_error(self) -> float:
        """The standard error s/√n of :attr:`value` over the accepted rounds (NaN with fewer
        than two)."""
        n = self.n_accepted
        return float(self.rewards.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")

    def interval(self, alpha: float = 0.05) -> tuple[float, float]:
        """A ``1 - alpha`` confidence interval of :attr:`value`: Wilson's score interval when
        every accepted reward is 0 or 1 (a click rate: it stays inside [0, 1] and keeps a width
        at 0 or n clicks, where the normal interval collapses to a point), else the normal
        interval value ± z·SE; (NaN, NaN) with no accepted round, or with one real reward."""
        alpha = check_positive(alpha, "alpha")
        if alpha >= 1:
            raise InputValueError(f"alpha must be in (0, 1), but {alpha} is given")
        n = self.n_accepted
        z = NormalDist().inv_cdf(1 - alpha / 2)
        if n and np.isin(self.rewards, (0.0, 1.0)).all():
            return wilson_interval(float(self.rewards.sum()), n, z)
        half = z * self.std_error
        return self.value - half, self.value + half

    def cumulative_regret(self) -> Array:
        """Cumulative regret over the accepted rounds (needs the mean rewards)."""
        if self.regret is None:
            raise InputValueError("the regret needs the log's mean rewards (expected_rewards=)")
        return np.cumsum(self.regret)


def wilson_interval(successes: float, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval of a binomial proportion (Wilson 1927; Brown, Cai & DasGupta
    2001, Eq. 4): centre (p̂ + z²/2n) / (1 + z²/n), half-width z √(p̂(1 − p̂)/n + z²/4n²) /
    (1 + z²/n), for ``successes`` of ``n`` trials at the normal quantile ``z``."""
    p = successes / n
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / scale
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def replay(
    policy: Policy,
    log: LoggedBandit,
    *,
    learn: bool = True,
    p_min: float | None = None,
    max_accepted: int | None = None,
    expected_rewards: Array | None = None,
    seed: int | None = 0,
    progress: bool = False,
) -> ReplayResult:
    """Replay ``policy`` on ``log`` (module notes); it learns the accepted rounds' rewards
    unless ``learn=False``.

    Parameters
    ----------
    policy : Policy
        Any policy of the library (sampling ones included); it is changed by learning.
    log : LoggedBandit
    learn : bool, default=True
    p_min : float, optional
        Acceptance scale, at most the smallest logged propensity (its default).
    max_accepted : int, optional
        Stop after this many accepted rounds.
    expected_rewards : ndarray ``[n, K]``, optional
        The log's mean rewards, for the regret.
    seed : int, optional
        Seeds the acceptance draws.
    progress : bool, default=False
        Show a progress bar of the rounds read (``replay``) on stderr.
    """
    policy, log = check_policy(policy), check_log(log)
    if not len(log):
        raise InputValueError("log must hold at least one round, but it is empty")
    smallest = float(log.propensities.min())
    p_min = smallest if p_min is None else check_positive(p_min, "p_min")
    if p_min > smallest * (1 + 1e-12):
        raise InputValueError(
            f"p_min must not exceed the smallest logged propensity {smallest:g}, but {p_min:g} "
            "is given: rounds logged with a smaller propensity would be over-accepted"
        )
    if max_accepted is not None:
        max_accepted = check_int(max_accepted, "max_accepted", minimum=1)
    if expected_rewards is not None and np.shape(expected_rewards) != (len(log), log.n_actions):
        raise InputValueError(
            f"expected_rewards must have shape ({len(log)}, {log.n_actions}), but shape "
            f"{np.shape(expected_rewards)} is given"
        )
    rng = np.random.default_rng(check_seed(seed))
    accept = rng.random(len(log)) < p_min / log.propensities
    rounds: list[int] = []
    read = 0
    for t in tqdm(range(len(log)), desc="replay", unit="round", disable=not progress):
        read = t + 1
        X = log.round_contexts(t)
        mask = None if log.masks is None else log.masks[t]
        arm = policy.select(X, mask)
        if arm != log.actions[t] or not accept[t]:
            continue
        if learn:
            policy.update(X, arm, float(log.rewards[t]))
        rounds.append(t)
        if max_accepted is not None and len(rounds) >= max_accepted:
            break
    idx = np.array(rounds, dtype=np.int64)
    regret = None
    if expected_rewards is not None:
        h = np.asarray(expected_rewards)[idx]
        regret = h.max(axis=1) - h[np.arange(len(idx)), log.actions[idx]]
    return ReplayResult(idx, log.actions[idx], log.rewards[idx], regret, read, p_min)
