"""
# Your own table: a CSV file as a bandit

Any labelled table is a bandit: each round shows one row, each distinct label is an arm, and
the reward is 1 when the policy picks the row's label. This example writes a small CSV with a
categorical column into a temporary folder, plays two policies on it, and turns a raw record
of the file's own columns into the policy's contexts, as a live system would.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import deepbandits as db

rng = np.random.default_rng(0)
n = 800
size = rng.normal(10, 3, n)
weight = size * 2 + rng.normal(0, 2, n)
color = rng.choice(["red", "green", "blue"], n)
score = size + 3 * (color == "red") - 2 * (color == "blue")
kind = np.select([score < 8, score < 12], ["small", "medium"], "large")
table = pd.DataFrame({"color": color, "size": size, "weight": weight, "kind": kind})
path = Path(tempfile.mkdtemp()) / "parcels.csv"
table.to_csv(path, index=False)
print(table.head())

# %%
# `label` names the column whose values become the arms (sorted: large, medium, small);
# `categorical` columns are one-hot encoded; the features are standardised (the default for
# your own data, `preprocess="standardize"`).

env = db.make_env("table", path=str(path), label="kind", categorical=["color"], seed=0)
params = env.get_params()
print("arms:", list(env.classes_), "| features:", params["features"])
curves = {}
for spec in ["linucb", "neural-sigma2-linucb:train_steps=100"]:
    result = db.run(spec, env, T=1500, seed=0)
    correct = result.records["regret"].eq(0).tail(500).mean()
    print(f"{spec:38s} regret {result.final_regret:5.0f}, accuracy (last 500) {correct:.2f}")
    curves[spec.split(":")[0]] = result.records["cum_regret"]

fig, ax = plt.subplots(figsize=(6, 3.2))
for name, curve in curves.items():
    ax.plot(curve.to_numpy(), label=name)
ax.set_xlabel("round t")
ax.set_ylabel("cumulative regret (mistakes)")
ax.set_title("parcels.csv: 3 arms, one-hot colour")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# A live record, in the file's own columns, becomes the policy's contexts with the table's
# fitted one-hot encoding, standardisation and arm encoding: exactly as the environment's own
# rounds.

policy = db.make_policy("linucb", env=env, seed=0)
db.run(policy, env, T=1500)
record = {"color": "red", "size": 11.0, "weight": 22.5}
decision = policy.decide(env.contexts_for(record))
print(record, "->", env.classes_[decision.arm])
print("estimated reward per arm:", dict(zip(env.classes_, decision.mean.round(2), strict=True)))
