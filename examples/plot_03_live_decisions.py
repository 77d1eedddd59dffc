"""
# Live decisions: delayed rewards, masks and propensities

A live system does not learn from each round before the next one: it decides now, and the
reward arrives later, by the decision's id, in any order, or never. Here every reward arrives
20 decisions late, one arm in four is unavailable for each request (a mask), and the policy
explores with ε = 0.05 so that every logged decision carries an exact propensity, the
probability with which the arm was chosen (what off-policy evaluation needs). The last part
decides a batch of requests at once and saves and restores the policy with its pending
decisions.
"""

import collections
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from threadpoolctl import threadpool_limits

import deepbandits as db

# Rounds are many small operations: one thread each for torch and BLAS, as db.run does, is
# faster than two thread pools competing for the same cores.
torch.set_num_threads(1)
threadpool_limits(1, "blas")

env = db.make_env("h1", seed=0)
policy = db.make_policy(
    "neural-sigma2-linucb", seed=0, reward_range=env.reward_range, epsilon=0.05, train_steps=100
)
rng = np.random.default_rng(0)
DELAY, T = 20, 1500
waiting: collections.deque = collections.deque()  # (decision, reward) not yet delivered
regret, propensities = [], []
for _ in range(T):
    rnd = env.next_round()
    mask = np.ones(len(rnd.contexts), dtype=bool)
    mask[rng.integers(len(mask))] = False  # this arm cannot be shown to this request
    d = policy.decide(rnd.contexts, mask=mask)
    waiting.append((d, env.reward(d.arm)))
    regret.append(rnd.expected_rewards[mask].max() - rnd.expected_rewards[d.arm])
    propensities.append(d.propensity)
    if len(waiting) > DELAY:
        old, reward = waiting.popleft()
        policy.learn(old.id, reward)  # by id, 20 decisions after it was made

print("pending decisions (rewards not yet delivered):", len(policy.pending_))
print("decided / pending / learned / expired:", policy.pending_.counts())
print("the last decision:", d.id, "arm", d.arm, "propensity", round(d.propensity, 4))
print("masked arm's propensity is 0:", d.mask is not None and not d.mask.all())

# %%
# Every decision is a value that keeps what learning needs; the rewards still waiting are
# learned after the loop. A masked arm is never chosen; with ε = 0.05 and 3 available arms the
# smallest propensity is ε/3.

for old, reward in waiting:
    policy.learn(old, reward)
print("smallest propensity:", round(min(propensities), 4), "= 0.05 / 3:", round(0.05 / 3, 4))

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(np.cumsum(regret))
ax.set_xlabel("decision")
ax.set_ylabel("cumulative regret (among available arms)")
ax.set_title(f"h1, rewards {DELAY} decisions late, one arm masked per request")
fig.tight_layout()
plt.show()

# %%
# A batch: 64 requests decided with one forward pass, their rewards learned with one batched
# ridge update. Then the policy is saved with 64 decisions pending and restored; the restored
# policy learns their rewards.

batch = [env.next_round() for _ in range(64)]
decisions = policy.decide_batch([r.contexts for r in batch])
# h1 knows each arm's expected reward: it stands in here for rewards that arrive later
rewards = [r.expected_rewards[d.arm] for r, d in zip(batch, decisions, strict=True)]
path = Path(tempfile.mkdtemp()) / "policy.pt"
policy.save(path)
restored = db.load_policy(path)
print("pending after load:", len(restored.pending_))
restored.learn_batch(decisions, rewards)
print("pending after learn_batch:", len(restored.pending_))
