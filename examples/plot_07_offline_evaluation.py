"""
# Off-policy evaluation on a simulated log

How good would a policy have been on traffic that another policy already served? A logged round
holds the contexts, the arm the logging policy played, its probability (the propensity) and the
reward. The estimators of `deepbandits.ope` (IPS, SNIPS, the direct method DM, DR, SNDR,
Switch-DR, DRos) answer from those alone, each with a bootstrap interval. A simulated log knows
the true answer, so the estimates can be checked against it.
"""

import matplotlib.pyplot as plt
import numpy as np

import deepbandits as db
from deepbandits import ope
from deepbandits.ope.simulate import simulate_log

# %%
# The log: 3000 rounds of h1 played by a softmax policy over a weak model's scores.

env = db.make_env("h1", seed=0)
sim = simulate_log(env, 3000, logging="softmax", seed=0)
log = sim.log
print(
    f"{len(log.rewards)} logged rounds, {log.n_actions} arms,"
    f" propensities from {log.propensities.min():.3f} to {log.propensities.max():.3f}"
)

# %%
# The policies to evaluate learned on other rounds of h1 (seed 1); what they would have done on
# each logged round is their decision probabilities there (`ope.policy_probabilities`).

targets = {}
for name, keywords in {"linucb": {}, "neural-sigma2-linucb": {"train_steps": 100}}.items():
    policy = db.make_policy(name, env=env, seed=1, **keywords)
    db.run(policy, db.make_env("h1", seed=1), T=1500)
    targets[name] = policy

# %%
# The direct method and the doubly robust estimators need a model of the reward of every arm on
# every round: fitted once here by cross-fitting (each fold predicted by a model that did not
# see it; gradient-boosted trees of scikit-learn) and shared by both evaluations.

q_hat = ope.cross_fitted_rewards(log, "hgb", n_folds=3, seed=0)
rows = []
for name, policy in targets.items():
    truth = sim.true_value(policy)
    result = ope.evaluate(log, policy, q_hat=q_hat, n_bootstrap=200, seed=0, warn=False)
    result = result.with_truth(truth)
    print(f"\n{name}: true value {truth:.3f}")
    print(
        result.table[["estimator", "estimate", "lower", "upper", "ess", "covered"]]
        .round(3)
        .to_string(index=False)
    )
    rows.append((name, truth, result.table))

# %%
# Each estimator's estimate and 95 % interval against the true value (dashed). The direct
# method is only as good as its reward model; the doubly robust estimators use the model and
# correct its error with the propensities. `ess` is the effective sample size of the
# importance weights: how many of the logged rounds the estimate effectively rests on.

fig, axes = plt.subplots(1, len(rows), figsize=(8, 3.2), sharey=True)
for ax, (name, truth, table) in zip(np.atleast_1d(axes), rows, strict=True):
    y = np.arange(len(table))
    ax.errorbar(
        table["estimate"],
        y,
        xerr=[table["estimate"] - table["lower"], table["upper"] - table["estimate"]],
        fmt="o",
        capsize=3,
    )
    ax.axvline(truth, linestyle="--", color="0.4")
    ax.set_yticks(y, table["estimator"])
    ax.set_title(name)
    ax.set_xlabel("value (mean reward)")
fig.tight_layout()
plt.show()
