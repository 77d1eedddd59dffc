"""Play a policy with rewards that arrive late, out of order, or never (live traffic offline).

Each round the policy decides (:meth:`~deepbandits.policies.Policy.decide`); the reward of
round t is delivered at round t + u, u drawn uniformly from 0..``delay``, and the rewards due at
a round are learned in random order (:meth:`~deepbandits.policies.Policy.learn` by id); a
share ``missing`` of them is never delivered (those decisions stay pending until the policy's
``reward_timeout`` expires them). With ``delay=0`` and ``missing=0`` this is the runner's
decide/learn loop, round for round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_int, check_seed
from deepbandits.envs.base import Environment, Round
from deepbandits.errors import InputValueError
from deepbandits.experiments.runner import give_horizon
from deepbandits.policies.decision import Decision
from deepbandits.policies.policy import Policy


@dataclass(frozen=True)
class DelayedRun:
    """What :func:`run_delayed` measured: the cumulative regret after each round, and the
    decisions learned, lost on the way (never delivered) and still pending at the end."""

    cum_regret: NDArray[np.float64]
    learned: int
    lost: int
    pending: int

    @property
    def final_regret(self) -> float:
        return float(self.cum_regret[-1])


def run_delayed(
    policy: Policy,
    env: Environment,
    T: int,
    *,
    delay: int = 0,
    missing: float = 0.0,
    seed: int | None = None,
) -> DelayedRun:
    """Play ``T`` rounds with rewards up to ``delay`` rounds late, shuffled, a share
    ``missing`` lost (module notes); with ``seed``, the environment, the policy and the delays
    are seeded (the delays by their own generator)."""
    T = check_int(T, "T", minimum=1)
    delay = check_int(delay, "delay", minimum=0)
    if not 0.0 <= missing < 1.0:
        raise InputValueError(f"missing must be in [0, 1), but {missing!r} is given")
    seed = check_seed(seed)
    give_horizon(policy, T)
    pass_range = policy.get_params().get("reward_range") is None  # as the runner does
    if seed is not None:
        env.reset(seed)
        policy.reset(seed)
    rng = np.random.default_rng(seed)
    waiting: list[tuple[int, Decision, float, Round]] = []
    cum = np.empty(T)
    regret, learned, lost = 0.0, 0, 0
    for t in range(T):
        rnd = env.next_round()
        decision = policy.decide(rnd.contexts)
        reward = env.reward(decision.arm)
        regret += float(rnd.expected_rewards.max() - rnd.expected_rewards[decision.arm])
        cum[t] = regret
        if missing and rng.random() < missing:
            lost += 1
        else:
            waiting.append((t + int(rng.integers(0, delay + 1)), decision, reward, rnd))
        due = [w for w in waiting if w[0] <= t]
        waiting = [w for w in waiting if w[0] > t]
        for i in rng.permutation(len(due)):
            _, d, r, played = due[i]
            bounds = played.reward_range if pass_range else None
            policy.learn(d, r, sigma2=played.sigma2, reward_range=bounds)
            learned += 1
    return DelayedRun(cum, learned, lost, len(policy.pending_))
