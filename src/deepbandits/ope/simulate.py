"""Simulated logs whose true values are known: a logging policy with known propensities plays an
environment of the library, and the environment's mean-reward function gives every policy's
true value.

The logging policies (each a distribution over the arms of every round, so the propensities
are exact):

* ``"uniform"``: 1/K per arm;
* ``"epsilon-greedy"``: 1 − ε on the arm a weak model scores highest, ε spread uniformly;
* ``"softmax"``: exp(s/T) / Σ exp(s/T) of the weak model's scores s (temperature T).

The weak model's score of an arm is its mean reward h(x, a), standardised, blurred by a fixed
random linear function of the arm's context with ``weakness`` times its spread
(``s = h̃ + weakness · xᵀv``): it prefers good arms without knowing them.

The true value of a policy π on a simulated log is V(π) = (1/n) Σₜ Σₐ π(a | xₜ) h(xₜ, a)
(:func:`true_value`): the mean over the logged contexts, so that an unbiased estimator's error
has mean 0 given them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_choice, check_int, check_positive, check_seed
from deepbandits.envs.base import Environment
from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import LoggedBandit, make_log
from deepbandits.ope.target import action_distribution

Array = NDArray[np.float64]
LOGGING_POLICIES = ("uniform", "epsilon-greedy", "softmax")


@dataclass(frozen=True)
class SimulatedLog:
    """A simulated log and what the environment knows of it.

    Attributes
    ----------
    log : LoggedBandit
        The logged rounds (per-arm contexts ``[n, K, d]``, with ``logging_dist``).
    expected_rewards : ndarray ``[n, K]``
        h(xₜ, a) of every round and arm.
    """

    log: LoggedBandit
    expected_rewards: Array

    def true_value(self, policy: object) -> float:
        """V(π) of ``policy`` (array ``[n, K]`` or library policy) on these rounds."""
        return true_value(action_distribution(policy, self.log), self.expected_rewards)

    def best_value(self) -> float:
        """V of the policy that always plays the best arm."""
        return float(self.expected_rewards.max(axis=1).mean())


def true_value(action_dist: Array, expected_rewards: Array) -> float:
    """(1/n) Σₜ Σₐ π(a | xₜ) h(xₜ, a)."""
    return float((action_dist * expected_rewards).sum(axis=1).mean())


def weak_scores(contexts: Array, expected: Array, weakness: float, seed: int | None) -> Array:
    """The weak model's scores ``[n, K]``: standardised h plus ``weakness`` times a standardised
    fixed random linear function of each arm's context."""
    rng = np.random.default_rng(None if seed is None else seed + 7919)
    v = rng.standard_normal(contexts.shape[-1])
    blur = contexts @ v
    h = (expected - expected.mean()) / (expected.std() + 1e-12)
    return h + weakness * (blur - blur.mean()) / (blur.std() + 1e-12)


def logging_distribution(scores: Array, logging: str, epsilon: float, temperature: float) -> Array:
    """π₀(· | xₜ) ``[n, K]`` of the logging policy ``logging`` given the weak scores."""
    n, K = scores.shape
    if logging == "uniform":
        return np.full((n, K), 1.0 / K)
    if logging == "epsilon-greedy":
        best = np.zeros((n, K))
        best[np.arange(n), scores.argmax(axis=1)] = 1.0
        return (1.0 - epsilon) * best + epsilon / K
    z = scores / temperature
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def simulate_log(
    env: Environment,
    n: int,
    *,
    logging: str = "uniform",
    epsilon: float = 0.1,
    temperature: float = 1.0,
    weakness: float = 1.0,
    seed: int | None = 0,
) -> SimulatedLog:
    """Log ``n`` rounds of ``env`` played by the logging policy ``logging`` (module notes).

    The environment is reset with ``seed``; the logging policy draws its arms from a generator
    seeded by ``seed`` too. Rewards are the environment's realised rewards.
    """
    n = check_int(n, "n", minimum=1)
    logging = check_choice(logging, "logging", LOGGING_POLICIES)
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    if epsilon > 1:
        raise InputValueError(f"epsilon must be in [0, 1], but {epsilon} is given")
    temperature = check_positive(temperature, "temperature")
    seed = check_seed(seed)
    env.reset(seed)
    rounds = [env.next_round() for _ in range(n)]
    contexts = np.stack([np.asarray(r.contexts, dtype=np.float64) for r in rounds])
    expected = np.stack([np.asarray(r.expected_rewards, dtype=np.float64) for r in rounds])
    dist = logging_distribution(
        weak_scores(contexts, expected, weakness, seed), logging, epsilon, temperature
    )
    rng = np.random.default_rng(seed)
    u = rng.random(n)[:, None]
    actions = np.minimum((dist.cumsum(axis=1) < u).sum(axis=1), dist.shape[1] - 1)
    rewards = np.empty(n)
    env.reset(seed)
    for t, arm in enumerate(actions):  # the realised rewards of the rounds as logged
        env.next_round()
        rewards[t] = env.reward(int(arm))
    log = make_log(
        contexts,
        actions,
        rewards,
        dist[np.arange(n), actions],
        logging_dist=dist,
        name=f"{type(env).__name__}/{logging}",
    )
    return SimulatedLog(log, expected)
