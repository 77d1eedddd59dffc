"""Warm starts: a policy learns from a logged table before it goes live.

Every logged round (context, logged arm, reward) is learned through the policy's public
``update``, in log order, so the policy ends where it would had it played those arms itself;
a neural policy trains its network on its usual schedule.

With ``weights="ips"`` each round counts in proportion to its importance weight
wₜ = min(1/π₀(aₜ | xₜ), clip), normalised to mean 1 (Strehl, Langford, Li & Kakade 2010,
Section 3; the clip bounds the variance, Ionides 2008). The regression then sees the arms as a
uniform logging policy would have shown them, instead of crowding on the logging policy's
favourites; without weights it is the policy's ordinary (possibly weighted by its own σ²)
ridge. The weight goes through ``update(..., weight=wₜ)``, which multiplies the ridge family's
σ² weight 1/σ̄² (Eq. 10): one weight path, into every sum the policy keeps (A = λI + Σ wφφᵀ,
b = Σ wrφ, the network's history; the network's minibatches are drawn from that history
uniformly, so its training itself is unweighted). Policies outside the ridge family learn every
reward at weight 1 and refuse ``weights="ips"``.

Learning is all or nothing: a call that raises (a reward outside the policy's range at some
round, an interrupt) puts the policy back as it was (:func:`learn_rows`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from deepbandits._validation import check_positive
from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit, check_log
from deepbandits.ope.target import check_policy
from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]
WEIGHTINGS = (None, "ips")
#: Default bound of the importance weights 1/π₀ before normalising.
CLIP = 20.0


@dataclass(frozen=True)
class WarmStart:
    """What :func:`learn_log` did.

    Attributes
    ----------
    n_rounds : int
        Logged rounds read.
    n_updates : int
        Updates made (one per round).
    weights : ndarray or None
        The normalised weights wₜ (None without weighting).
    n_clipped : int
        Rounds whose 1/π₀ exceeded the clip.
    """

    n_rounds: int
    n_updates: int
    weights: Array | None
    n_clipped: int


def importance_weights_clipped(propensities: Array, clip: float) -> tuple[Array, int]:
    """min(1/π₀, clip), normalised to mean 1, and how many were clipped."""
    raw = 1.0 / propensities
    clipped = np.minimum(raw, clip)
    return clipped / clipped.mean(), int((raw > clip).sum())


def check_clip(clip: float) -> float:
    """A bound on the importance weights 1/π₀, which are ≥ 1: a finite number ≥ 1."""
    clip = check_positive(clip, "clip")
    if clip < 1.0:
        raise InputValueError(f"clip bounds 1/propensity >= 1, so it must be >= 1, not {clip}")
    return clip


def learn_log(
    policy: Policy,
    log: LoggedBandit,
    *,
    weights: str | None = None,
    clip: float = CLIP,
    reward_range: tuple[float, float] | None = None,
    progress: bool = False,
) -> WarmStart:
    """Teach ``policy`` the rounds of ``log`` (module notes); returns what was learned.

    Parameters
    ----------
    policy : Policy
        Any policy of the library, fresh or not; it is changed.
    log : LoggedBandit
        The rounds, learned in order with their logged arms and rewards.
    weights : {None, "ips"}
        None: each round at weight 1. ``"ips"``: each round at its clipped, normalised
        importance weight (ridge-family policies).
    clip : float, default=20
        Bound on 1/π₀ before normalising.
    reward_range : (a, b), optional
        The rewards' range, passed to every ``update`` (the σ² policies' Eq. 13 needs one when
        the policy declares none).
    progress : bool, default=False
        Show a progress bar of the rounds learned (``learning``) on stderr.
    """
    policy, log = check_policy(policy), check_log(log)
    if weights not in WEIGHTINGS:
        raise InputValueError(f"weights must be None or 'ips', but {weights!r} is given")
    if weights == "ips" and not policy._takes_weights:
        raise InputValueError(
            f"weights='ips' needs a policy of the ridge family, which takes observation weights, "
            f"but {type(policy).__name__} learns every reward at weight 1"
        )
    clip = check_clip(clip)
    w, n_clipped = (None, 0)
    if weights == "ips":
        w, n_clipped = importance_weights_clipped(log.propensities, clip)
    each = np.ones(len(log)) if w is None else w
    rows = np.arange(len(log))
    n_updates = learn_rows(
        policy, log, rows, log.actions, log.rewards, each, reward_range, progress=progress
    )
    return WarmStart(len(log), n_updates, w, n_clipped)


def learn_rows(
    policy: Policy,
    log: LoggedBandit,
    rows: NDArray[np.int64],
    arms: NDArray[np.int64],
    rewards: Array,
    weights: Array,
    reward_range: tuple[float, float] | None,
    *,
    progress: bool = False,
) -> int:
    """``policy.update`` of round ``rows[i]``'s contexts, arm ``arms[i]``, reward ``rewards[i]``
    at weight ``weights[i]``, for each i in order; returns the number of updates. All or
    nothing: if an update raises, the policy's saved state from before the first is loaded
    back (:meth:`~deepbandits.policies.Policy.state_dict`). ``progress``: a bar of the rounds
    (``learning``) on stderr."""
    before = copy.deepcopy(policy.state_dict())
    each = zip(rows.tolist(), arms.tolist(), rewards.tolist(), weights.tolist(), strict=True)
    try:
        for t, arm, reward, weight in tqdm(
            each, total=len(rows), desc="learning", unit="round", disable=not progress
        ):
            X = log.round_contexts(t)
            policy.update(X, arm, reward, reward_range=reward_range, weight=weight)
    except BaseException:
        policy.load_state_dict(before)
        raise
    return len(rows)
