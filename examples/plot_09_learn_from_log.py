"""
# Learning a new policy from a log, and deciding whether to ship it

The service logged what its policy decided, with the propensities and the rewards. Can a new
policy learned from last month's rounds do better on this week's? `ope.learn_from_log` trains
it on the earlier rounds (unweighted, by IPS weights, or on doubly robust pseudo-rewards of
every arm), `ope.evaluate` estimates its value on the later rounds, and the decision compares
the interval with the logging policy's own value there. A simulated log knows the truth.
"""

import numpy as np

import deepbandits as db
from deepbandits import ope

# %%
# A log of 37 days: 2000 rounds of a linear problem served by an ε-greedy policy over a weak
# model (ε = 0.3), one decision time per round as the service's export has them.

env = db.make_env("linear", d=5, n_arms=4, noise="fixed", noise_std=0.3, seed=0)
sim = ope.simulate_log(env, 2000, logging="epsilon-greedy", epsilon=0.3, seed=0)
day = 86400.0
times = np.arange(2000) * (37 * day / 2000)

# %%
# Learn the first 30 days, hold out the last week.

train, test = ope.split_log_by_time(sim.log, until=30 * day, times=times)
held_out = sim.expected_rewards[len(train) :]
print(f"learned {len(train)} rounds, held out {len(test)}")
print(f"the logging policy's value on the held-out rounds: {test.rewards.mean():.3f}")

# %%
# Greedy LinUCB learned three ways; each is evaluated by DR on the held-out rounds, beside its
# true value there.

for weighting in ("none", "ips", "dr"):
    policy = db.make_policy("linucb", alpha=0.0, seed=0)
    learned = ope.learn_from_log(policy, train, weighting=weighting, reward_model="ridge")
    result = ope.evaluate(
        test, policy, estimators="dr", reward_model="ridge", n_bootstrap=200, seed=0, warn=False
    )
    row = result.table.iloc[0]
    truth = ope.true_value(ope.policy_probabilities(policy, test), held_out)
    ship = row["lower"] > test.rewards.mean()
    print(
        f"{weighting:>4}: {learned.n_updates} updates, DR {row['estimate']:.3f} "
        f"({row['lower']:.3f} to {row['upper']:.3f}), true {truth:.3f}; "
        f"{'ship' if ship else 'do not ship'}"
    )
