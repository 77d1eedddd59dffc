"""
# A new policy from parts

A policy is a composition of parts with one job each: a feature map φ, a ridge head, a variance
source, an exploration rule and, for networks, a trainer. A new policy is a new part plugged
into the others, not a subclass. Here the feature map is φ(x) = [x, x²], a fixed non-linear
map; with a ridge head and UCB exploration it is LinUCB on [x, x²], which can represent h1's
h(x) = 10(xᵀθ)² only in part (the cross terms are missing). Registering a recipe gives it a
name that `db.run`, `make_policy`, the command line and configs accept.
"""

import matplotlib.pyplot as plt
import numpy as np

import deepbandits as db
from deepbandits.policies import Greedy, Part, Recipe, RidgeHead, RidgeUCB, register_policy


class SquaredFeatures(Part):
    """φ(x) = [x, x²]: a fixed non-linear feature map."""

    raw = False  # not the identity: no per-block layout

    def out_dim(self, n_features: int) -> int:
        return 2 * n_features

    def initialize(self, n_features: int, blockwise: bool, generator: np.random.Generator) -> None:
        pass

    def transform(self, X: np.ndarray) -> tuple[np.ndarray, None]:
        X = np.asarray(X)
        return np.hstack([X, X * X]), None


# %%
# The parts composed by hand: greedy on a ridge over [x, x²] (λ = 2).

policy = RidgeUCB(features=SquaredFeatures(), head=RidgeHead(lam=2.0), explore=Greedy(), seed=0)
greedy = db.run(policy, db.make_env("h1", seed=0), T=2000)
policy.set_params(head__lam=1.0)  # a part's parameter, scikit-learn style; the policy restarts
print("greedy on [x, x²]:", round(greedy.final_regret, 1))

# %%
# As a registered name with a keyword of its own (α, declared with the UCB part's spec).

QuadraticUCB = register_policy(
    "quadratic-ucb",
    Recipe(
        "quadratic-ucb",
        "LinUCB on [x, x²]",
        specs={"alpha": db.policies.UCB.specs["alpha"]},
        defaults={"alpha": 0.1},
        base=RidgeUCB,
        compose=lambda p: {"features": SquaredFeatures(), "explore": db.policies.UCB(p["alpha"])},
        class_name="QuadraticUCB",
    ),
)
env = db.make_env("h1", seed=0)
specs = ["linucb", "quadratic-ucb:alpha=0.2"]
results = {spec: db.run(spec, env, T=2000, seed=0) for spec in specs}
for spec, result in results.items():
    print(f"{spec:25s} final regret {result.final_regret:7.1f}")

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(greedy.records["cum_regret"], label="greedy on [x, x²]")
for spec, result in results.items():
    ax.plot(result.records["cum_regret"], label=spec)
ax.set_xlabel("round t")
ax.set_ylabel("cumulative regret")
ax.set_title("h1: a fixed quadratic feature map against LinUCB")
ax.legend()
fig.tight_layout()
plt.show()
