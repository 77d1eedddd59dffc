"""
# Quick start: Neural-σ²-LinUCB against LinUCB on h1

The smallest complete run: the synthetic environment h1 of the paper (d = 20, K = 4,
h(x) = 10(xᵀθ)², noise variance vₜ ~ U(0, 1)), two policies by name with their default
settings, and the cumulative regret of each over 3,000 rounds (the paper's runs have 10,000).
"""

import matplotlib.pyplot as plt

import deepbandits as db

T = 3000
env = db.make_env("h1", seed=0)

results = {
    name: db.run(spec, env, T=T, seed=0)
    for name, spec in {
        "LinUCB": "linucb",
        "Neural-σ²-LinUCB": "neural-sigma2-linucb",
    }.items()
}
for name, result in results.items():
    print(f"{name:18s} final regret after {T} rounds: {result.final_regret:8.1f}")

# %%
# Each result holds one row per round (`result.records`, a pandas DataFrame): the arm played,
# the reward, the regret, the policy's predicted mean and width, timings.

print(results["Neural-σ²-LinUCB"].records[["t", "arm", "reward", "cum_regret"]].tail())

fig, ax = plt.subplots(figsize=(6, 3.5))
for name, result in results.items():
    ax.plot(result.records["t"], result.records["cum_regret"], label=name)
ax.set_xlabel("round t")
ax.set_ylabel("cumulative regret")
ax.set_title(f"h1, seed 0, T = {T}")
ax.legend()
fig.tight_layout()
plt.show()
