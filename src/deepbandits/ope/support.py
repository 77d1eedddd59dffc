"""How well a log supports an evaluation policy, and the warnings, with numbers, when it does not.

Importance weighting needs π₀(a | x) > 0 wherever π(a | x) > 0 (positivity, or overlap), and
its variance grows with the weights. Four symptoms are checked:

* **small propensities**: logged rounds with π₀(aₜ | xₜ) below ``min_propensity``, whose
  weights reach 1/π₀;
* **a deterministic logger**: rounds logged with propensity 1, where π₀ could take no other
  arm in that context; π's mass on those other arms is mass the log cannot support (IPS counts
  those rounds as reward 0 and underestimates, SNIPS and DR rest on the rounds where the two
  policies agree);
* **arms the log never took**: the share of π's mass on arms with no logged round (IPS sees
  none of their rewards and underestimates; DM extrapolates to them), or, when π₀'s whole
  distribution is known, on (round, arm) pairs with π₀ = 0;
* **effective sample size** (Kish's (Σw)²/Σw²,
  :func:`~deepbandits.ope.estimators.effective_sample_size`) below ``min_ess_fraction``
  of the rounds, or below ``min_ess`` rounds: the estimate rests on a few rounds.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits.logs.bandit import LoggedBandit
from deepbandits.ope.estimators import effective_sample_size

Array = NDArray[np.float64]

#: Default thresholds of the warnings.
MIN_PROPENSITY = 1e-3
MIN_ESS_FRACTION = 0.01
MIN_ESS = 10.0
MAX_UNSUPPORTED_MASS = 0.01


class SupportWarning(UserWarning):
    """The log supports the evaluation policy poorly: the estimates may be far off."""


@dataclass(frozen=True)
class Support:
    """Support diagnostics of one (log, policy) pair.

    Attributes
    ----------
    n : int
        Logged rounds.
    ess : float
        Effective sample size of the importance weights.
    max_weight : float
        Largest importance weight.
    n_small_propensity : int
        Rounds with π₀(aₜ | xₜ) < ``min_propensity``.
    min_propensity : float
        Smallest logged propensity.
    unsupported_mass : float
        Mean over rounds of π's mass on arms the logging policy could not take: arms the log
        never took and, on rounds logged with propensity 1, every arm but the logged one (or,
        with π₀ known, arms with π₀ = 0).
    unseen_arms : tuple of int
        Arms π plays that the log never took.
    n_matched : int
        Rounds whose logged action π plays (importance weight > 0): the only rounds whose
        rewards the weighted estimators see.
    n_deterministic : int
        Rounds logged with propensity 1 (a deterministic logging policy there).
    deterministic_mass : float
        The part of ``unsupported_mass`` on those rounds: the mean over all rounds of π's mass
        on the arms other than the logged one where the propensity is 1.
    """

    n: int
    ess: float
    max_weight: float
    n_small_propensity: int
    min_propensity: float
    unsupported_mass: float
    unseen_arms: tuple[int, ...]
    n_matched: int
    n_deterministic: int
    deterministic_mass: float

    @property
    def ess_fraction(self) -> float:
        return self.ess / self.n if self.n else 0.0


def support_of(log: LoggedBandit, action_dist: Array, w: Array, threshold: float) -> Support:
    """The diagnostics of :class:`Support` (``threshold``: the small-propensity bound)."""
    n = len(log)
    taken = np.bincount(log.actions, minlength=log.n_actions) > 0
    certain = log.propensities >= 1.0
    if log.logging_dist is not None:
        outside = log.logging_dist <= 0
    else:
        outside = np.broadcast_to(~taken, action_dist.shape).copy()
        outside[certain] = True  # a deterministic logger could take only the logged arm there
        outside[np.flatnonzero(certain), log.actions[certain]] = False
    lost = (action_dist * outside).sum(axis=1)
    played = action_dist.max(axis=0) > 0
    return Support(
        n=n,
        ess=effective_sample_size(w),
        max_weight=float(w.max()) if len(w) else 0.0,
        n_small_propensity=int((log.propensities < threshold).sum()),
        min_propensity=float(log.propensities.min()),
        unsupported_mass=float(lost.mean()) if n else 0.0,
        unseen_arms=tuple(int(a) for a in np.flatnonzero(played & ~taken)),
        n_matched=int((w > 0).sum()),
        n_deterministic=int(certain.sum()),
        deterministic_mass=float(lost[certain].sum() / n) if n else 0.0,
    )


def support_messages(
    s: Support,
    *,
    min_propensity: float = MIN_PROPENSITY,
    min_ess_fraction: float = MIN_ESS_FRACTION,
    min_ess: float = MIN_ESS,
    max_unsupported_mass: float = MAX_UNSUPPORTED_MASS,
) -> list[str]:
    """The problems of ``s`` in words, with their numbers (empty when the support is good)."""
    out = []
    if s.n_small_propensity:
        out.append(
            f"{s.n_small_propensity} of {s.n} logged rounds ({s.n_small_propensity / s.n:.1%}) "
            f"have a logging propensity below {min_propensity:g} (smallest "
            f"{s.min_propensity:.3g}); importance weights reach {s.max_weight:.4g}"
        )
    if s.deterministic_mass > max_unsupported_mass:
        out.append(
            f"{s.n_deterministic} of {s.n} logged rounds ({s.n_deterministic / s.n:.1%}) have "
            "propensity 1: the logging policy was deterministic there, and the evaluation policy "
            f"puts {s.deterministic_mass:.1%} of its probability on arms the logging policy did "
            "not choose in those contexts: IPS counts them as reward 0 (it underestimates), "
            "SNIPS and DR rest on the rounds where the two policies agree; the log cannot tell "
            "this policy's value"
        )
    elsewhere = s.unsupported_mass - s.deterministic_mass
    if elsewhere > max_unsupported_mass:
        arms = ", ".join(map(str, s.unseen_arms[:10])) + (" ..." if len(s.unseen_arms) > 10 else "")
        where = f" (arms the log never took: {arms})" if s.unseen_arms else ""
        out.append(
            f"the evaluation policy puts {elsewhere:.1%} of its probability on actions "
            f"the logging policy could not take{where}: IPS and DR cannot see those rewards "
            "(they underestimate), DM extrapolates to them"
        )
    if s.n and not s.n_matched:
        out.append(
            f"none of the {s.n} logged rounds took an action the evaluation policy plays (every "
            "importance weight is 0): IPS, SNIPS and the weighted parts of DR estimate 0 with an "
            "interval of [0, 0], which says nothing of the policy's value; only DM extrapolates"
        )
    elif s.ess < max(min_ess_fraction * s.n, min_ess):
        below = (
            f"below {min_ess_fraction:.0%}"
            if s.ess_fraction < min_ess_fraction
            else f"below {min_ess:g} rounds"
        )
        out.append(
            f"the effective sample size is {s.ess:.1f} of {s.n} rounds ({s.ess_fraction:.2%}, "
            f"{below}): the weighted estimates rest on a few rounds"
        )
    return out


def warn_support(messages: list[str], stacklevel: int = 3) -> None:
    """One :class:`SupportWarning` per message."""
    for message in messages:
        warnings.warn(f"poor support: {message}", SupportWarning, stacklevel=stacklevel)
