"""Warm starts: a policy learns from a logged table before it goes live.

Every logged round (context, logged arm, reward) is learned through the policy's public
``update``, in log order, so the policy ends where it would had it played those arms itself;
a neural policy trains its network on its usual schedule.

With ``weights="ips"`` each round counts in proportion to its importance weight
wₜ = min(1/π₀(aₜ | xₜ), clip), normalised to mean 1 (Strehl, Langford, Li & Kakade 2010,
Section 3; the clip bounds the variance, Ionides 2008). The regression then sees the arms as a
uniform logging policy would have shown them, instead of crowding on the logging policy's
favourites; without weights it is the policy's ordinary (possibly weighted by its own σ²)
ridge. As ``update`` takes no observation weight, a weight is realised by repetition: round t
is learned ⌊wₜ⌋ times and once more with probability wₜ − ⌊wₜ⌋, so that its expected count in
every sum the policy keeps (A = λI + Σ φφᵀ, b = Σ rφ, the network's history) is wₜ. A public
observation weight on ``update`` (multiplying the σ² weight 1/σ̄² of the ridge family) would
make this exact, through the one weight path of the weighted ridge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_positive, check_seed
from deepbandits.errors import InputValueError
from deepbandits.ope.log import LoggedBandit
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
        Updates made (rounds × their repetitions).
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


def repetitions(weights: Array, rng: np.random.Generator) -> NDArray[np.int64]:
    """⌊w⌋ plus a Bernoulli(w − ⌊w⌋) draw per round: counts whose mean is w."""
    base = np.floor(weights)
    return (base + (rng.random(len(weights)) < weights - base)).astype(np.int64)


def learn_log(
    policy: Policy,
    log: LoggedBandit,
    *,
    weights: str | None = None,
    clip: float = CLIP,
    reward_range: tuple[float, float] | None = None,
    seed: int | None = 0,
) -> WarmStart:
    """Teach ``policy`` the rounds of ``log`` (module notes); returns what was learned.

    Parameters
    ----------
    policy : Policy
        Any policy of the library, fresh or not; it is changed.
    log : LoggedBandit
        The rounds, learned in order with their logged arms and rewards.
    weights : {None, "ips"}
        None: each round once. ``"ips"``: each round in proportion to its clipped, normalised
        importance weight.
    clip : float, default=20
        Bound on 1/π₀ before normalising.
    reward_range : (a, b), optional
        The rewards' range, passed to every ``update`` (the σ² policies' Eq. 13 needs one when
        the policy declares none).
    seed : int, optional
        Seeds the repetition draws.
    """
    if weights not in WEIGHTINGS:
        raise InputValueError(f"weights must be None or 'ips', but {weights!r} is given")
    clip = check_positive(clip, "clip")
    if clip < 1.0:
        raise InputValueError(f"clip bounds 1/propensity >= 1, so it must be >= 1, not {clip}")
    rng = np.random.default_rng(check_seed(seed))
    w, n_clipped = (None, 0)
    if weights == "ips":
        w, n_clipped = importance_weights_clipped(log.propensities, clip)
    counts = np.ones(len(log), np.int64) if w is None else repetitions(w, rng)
    for t in np.flatnonzero(counts):
        X = log.round_contexts(int(t))
        for _ in range(counts[t]):
            policy.update(X, int(log.actions[t]), float(log.rewards[t]), reward_range=reward_range)
    return WarmStart(len(log), int(counts.sum()), w, n_clipped)
