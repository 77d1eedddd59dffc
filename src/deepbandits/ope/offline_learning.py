"""Off-policy learning: a new policy learned from a logged table, to be evaluated by off-policy
evaluation on later rows of the log before it is served.

:func:`learn_from_log` teaches a policy of the library the rounds of a log by one of three
weightings:

* ``"none"``: every logged (context, arm, reward) at weight 1, in log order (the warm start of
  :func:`~deepbandits.ope.warm.learn_log`).
* ``"ips"``: each logged round at its clipped, normalised importance weight
  min(1/π₀(aₜ | xₜ), clip) (Strehl, Langford, Li & Kakade 2010), through the ridge family's
  ``update(..., weight=)`` (:func:`~deepbandits.ope.warm.learn_log` with ``weights="ips"``).
  Only the ridge family takes observation weights; the others are refused. A network feature
  map keeps the weights in its history but draws its minibatches from it uniformly, so with a
  network only the ridge head is weighted.
* ``"dr"``: full-information doubly robust pseudo-rewards (Dudík, Langford & Li 2011,
  Section 3; Dudík, Erhan, Langford & Li 2014, Section 4, who learn policies from them). For
  every round and every available arm a,

      Γₜ(a) = q̂(xₜ, a) + 1{a = aₜ} · min(1/π₀(aₜ | xₜ), clip) · (rₜ − q̂(xₜ, aₜ)),

  with q̂ cross-fitted (:func:`~deepbandits.ope.reward_model.cross_fitted_rewards`;
  Chernozhukov et al. 2018), so that no round's q̂ has seen its own reward. Without the clip,
  E[Γₜ(a) | xₜ] = μ(xₜ, a) for every arm, whatever q̂ is: each arm's regression sees an unbiased
  target on every round, not only on the rounds where the logging policy happened to play it.
  Every Γₜ(a) is learned by ``policy.update`` at weight 1 (K updates per round, the arms in
  order), so any policy of the library can learn them, and a network feature map (Neural-LinUCB,
  Neural-σ²-LinUCB) trains on its history of pseudo-rewards of every arm on its usual schedule.

How the variance is controlled (``"dr"``): the importance weight of the correction is clipped at
``clip`` (20 by default; Ionides 2008, Bottou et al. 2013), which bounds every pseudo-reward to
[b − clip·(b − a), a + clip·(b − a)] for rewards and q̂ in [a, b], and its variance by
clip·(b − a)² given xₜ; the price is a bias of the clipped rounds' corrections towards q̂, and
:attr:`LearnedPolicy.n_clipped` says on how many rounds it was paid. Pseudo-rewards leave the
rewards' range, so their updates carry the range spanned by the pseudo-rewards and the range
in force (the one given, else the policy's): a σ²-weighted policy's Eq. 13 then bounds a
pseudo-reward's variance by that span.

:func:`split_log_by_time` cuts a log into the rounds learned and the later rounds evaluated:
the export of the decision service is in the order the decisions were made
(:mod:`deepbandits.serve.export`), so the first rows are the earliest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import as_real_array, check_choice, check_finite_scalar
from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit, check_log
from deepbandits.ope.estimators import effective_sample_size
from deepbandits.ope.reward_model import cross_fitted_rewards
from deepbandits.ope.target import check_policy
from deepbandits.ope.warm import CLIP, check_clip, learn_log, learn_rows
from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]
WEIGHTINGS = ("none", "ips", "dr")


@dataclass(frozen=True)
class WeightSummary:
    """The importance weights of the logged rounds as they were used: 1 (``"none"``), the
    clipped weights normalised to mean 1 (``"ips"``), or the clipped 1/π₀ of each round's
    correction (``"dr"``).

    Attributes
    ----------
    minimum, mean, maximum : float
    ess : float
        Kish's effective sample size (Σ w)² / Σ w²
        (:func:`~deepbandits.ope.estimators.effective_sample_size`).
    """

    minimum: float
    mean: float
    maximum: float
    ess: float

    @classmethod
    def of(cls, w: Array) -> WeightSummary:
        """The summary of the weights ``w``."""
        return cls(float(w.min()), float(w.mean()), float(w.max()), effective_sample_size(w))


@dataclass(frozen=True)
class LearnedPolicy:
    """What :func:`learn_from_log` did.

    Attributes
    ----------
    policy : Policy
        The policy, trained (the one given, changed).
    weighting : str
        ``"none"``, ``"ips"`` or ``"dr"``.
    n_rounds : int
        Logged rounds learned.
    n_updates : int
        Updates made: one per round, or one per round and available arm with ``"dr"``.
    weights : WeightSummary
        The weights used.
    n_clipped : int
        Rounds whose 1/π₀ exceeded the clip.
    """

    policy: Policy
    weighting: str
    n_rounds: int
    n_updates: int
    weights: WeightSummary
    n_clipped: int


def dr_pseudo_rewards(
    log: LoggedBandit, q_hat: ArrayLike, *, clip: float = CLIP
) -> tuple[Array, Array, int]:
    """The doubly robust pseudo-rewards Γₜ(a) ``[n, K]`` of every round and arm (module notes),
    the clipped weights min(1/π₀, clip) ``[n]`` of the corrections, and the number of rounds
    clipped.

    Parameters
    ----------
    log : LoggedBandit
    q_hat : array ``[n, K]``
        The reward model's prediction of every round and arm, best cross-fitted
        (:func:`~deepbandits.ope.reward_model.cross_fitted_rewards`).
    clip : float, default=20
        Bound on 1/π₀ (≥ 1; one of at least 1/min π₀ clips nothing: the unbiased
        pseudo-rewards).
    """
    log = check_log(log)
    clip = check_clip(clip)
    q = as_real_array(q_hat, "q_hat")
    n, K = len(log), log.n_actions
    if q.shape != (n, K) or not np.isfinite(q).all():
        raise InputValueError(
            f"q_hat must be finite, of shape ({n}, {K}), one value per round and arm, but shape "
            f"{q.shape} is given"
        )
    raw = 1.0 / log.propensities
    w = np.minimum(raw, clip)
    rows = np.arange(n)
    gamma = q.copy()
    gamma[rows, log.actions] += w * (log.rewards - q[rows, log.actions])
    return gamma, w, int((raw > clip).sum())


def learn_from_log(
    policy: Policy,
    log: LoggedBandit,
    *,
    weighting: str = "dr",
    clip: float = CLIP,
    reward_range: tuple[float, float] | None = None,
    reward_model: Any = "auto",
    q_hat: ArrayLike | None = None,
    n_folds: int = 5,
    seed: int | None = 0,
) -> LearnedPolicy:
    """Teach ``policy`` the rounds of ``log`` by ``weighting`` (module notes); returns what it
    learned. All or nothing: a call that raises leaves the policy as it was.

    Parameters
    ----------
    policy : Policy
        A policy of the library, fresh or not; it is trained in place.
    log : LoggedBandit
        The rounds learned, in order (the earlier part of a log: :func:`split_log_by_time`).
    weighting : {"none", "ips", "dr"}, default="dr"
        ``"ips"`` needs a policy of the ridge family (LinUCB, σ²-LinUCB, Neural-LinUCB,
        Neural-σ²-LinUCB, ...); the others take every policy.
    clip : float, default=20
        Bound on 1/π₀ (``"ips"``, ``"dr"``).
    reward_range : (a, b), optional
        The rewards' range, passed to every update (the policy's own when not given); with
        ``"dr"``, widened to the pseudo-rewards' span.
    reward_model : str or scikit-learn estimator, default="auto"
        ``"dr"``: q̂, cross-fitted over ``n_folds`` folds on ``log``
        (:func:`~deepbandits.ope.reward_model.cross_fitted_rewards`).
    q_hat : array ``[n, K]``, optional
        ``"dr"``: predictions to use instead of fitting ``reward_model``.
    n_folds : int, default=5
    seed : int, optional
        Seeds the folds and the reward model.
    """
    policy, log = check_policy(policy), check_log(log)
    weighting = check_choice(weighting, "weighting", WEIGHTINGS)
    if weighting != "dr":
        done = learn_log(
            policy,
            log,
            weights=None if weighting == "none" else "ips",
            clip=clip,
            reward_range=reward_range,
        )
        w = np.ones(len(log)) if done.weights is None else done.weights
        return LearnedPolicy(
            policy, weighting, done.n_rounds, done.n_updates, WeightSummary.of(w), done.n_clipped
        )
    if q_hat is None:
        q_hat = cross_fitted_rewards(log, reward_model, n_folds=n_folds, seed=seed)
    gamma, w, n_clipped = dr_pseudo_rewards(log, q_hat, clip=clip)
    n, K = gamma.shape
    available = np.ones((n, K), dtype=bool) if log.masks is None else log.masks
    pseudo = gamma[available]
    in_force = reward_range if reward_range is not None else policy._reward_range
    low, high = float(pseudo.min()), float(pseudo.max())
    if in_force is not None:
        low, high = min(low, float(in_force[0])), max(high, float(in_force[1]))
    rows, arms = np.nonzero(available)  # round by round, the arms in order
    n_updates = learn_rows(policy, log, rows, arms, pseudo, np.ones(len(rows)), (low, high))
    return LearnedPolicy(policy, "dr", n, n_updates, WeightSummary.of(w), n_clipped)


def split_log_by_time(
    log: LoggedBandit,
    *,
    fraction: float | None = None,
    until: float | None = None,
    times: ArrayLike | None = None,
) -> tuple[LoggedBandit, LoggedBandit]:
    """The rounds learned and the later rounds held out, by one of:

    * ``fraction``: the first ``fraction`` of the rounds in log order, and the rest (the
      service's export is in the order the decisions were made);
    * ``until``: the rounds with ``times`` ≤ ``until``, and those after it (``times``: each
      round's time in seconds since the epoch, any order; default the log's own ``times``,
      the service's ``time_decided``).

    Both parts keep log order; neither may be empty.
    """
    log = check_log(log)
    if (fraction is None) == (until is None):
        raise InputValueError(
            f"give one of fraction and until, but fraction={fraction!r} and until={until!r} "
            "are given"
        )
    if fraction is not None:
        if times is not None:
            raise InputValueError("times go with until, not with fraction")
        return log.split(fraction, seed=None)
    times = log.times if times is None else times
    if times is None:
        raise InputValueError(
            "until needs times: this log has none (a service export has time_decided); give "
            "times=, one per round, or fraction="
        )
    t = as_real_array(times, "times")
    if t.shape != (len(log),) or not np.isfinite(t).all():
        raise InputValueError(
            f"times must be finite, one per round ({len(log)}), but shape {t.shape} is given"
        )
    until = check_finite_scalar(until, "until")
    learned = t <= until
    if learned.all() or not learned.any():
        raise InputValueError(
            f"until={until!r} leaves a part empty: the rounds' times run from {t.min()!r} to "
            f"{t.max()!r}"
        )
    return log.subset(learned), log.subset(~learned)
