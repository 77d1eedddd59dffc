"""
# A new environment

An environment offers a round (the arms' contexts, their expected rewards for the regret, the
noise variance and the declared reward range) and then the realised reward of the arm played.
Subclass `deepbandits.envs.Environment`, implement `reset`, `next_round`, `reward` and
`get_params`, declare `n_arms` and `reward_range`, and every runner, comparison and policy of
the library works with it. Registering it in `deepbandits.envs.ENVS` gives it a name for
`make_env` and `db.run`.
"""

import matplotlib.pyplot as plt
import numpy as np

import deepbandits as db
from deepbandits.envs import ENVS, Environment, Round


class SineEnv(Environment):
    """K arms with their own direction θₖ; reward sin(3xᵀθₖ) + N(0, noise_std²)."""

    def __init__(self, n_arms: int = 3, dim: int = 5, noise_std: float = 0.1, seed: int = 0):
        self.n_arms, self.dim, self.noise_std, self.seed = n_arms, dim, noise_std, seed
        # declared from the parameters, never from observed rewards: |sin| ≤ 1, noise cut at 3σ
        bound = 1.0 + 3.0 * noise_std
        self.reward_range = (-bound, bound)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> "SineEnv":
        self.seed = self.seed if seed is None else seed
        self.rng = np.random.default_rng(self.seed)
        theta = self.rng.normal(size=(self.n_arms, self.dim))
        self.theta = theta / np.linalg.norm(theta, axis=1, keepdims=True)
        return self

    def next_round(self) -> Round:
        x = self.rng.normal(size=self.dim)
        x /= np.linalg.norm(x)
        # arm k's context: x in block k (disjoint encoding), so one model can serve every arm
        contexts = np.zeros((self.n_arms, self.n_arms * self.dim))
        for k in range(self.n_arms):
            contexts[k, k * self.dim : (k + 1) * self.dim] = x
        self.expected = np.sin(3.0 * self.theta @ x)
        return Round(contexts, self.expected, self.noise_std**2, self.reward_range)

    def reward(self, arm: int) -> float:
        noise = np.clip(
            self.rng.normal(0.0, self.noise_std), -3 * self.noise_std, 3 * self.noise_std
        )
        return float(self.expected[arm] + noise)

    def get_params(self) -> dict[str, object]:
        return {
            "n_arms": self.n_arms,
            "dim": self.dim,
            "noise_std": self.noise_std,
            "seed": self.seed,
        }


ENVS["sine"] = SineEnv  # now db.make_env("sine", seed=0) and db.run(..., env) know it

env = db.make_env("sine", seed=0)
results = {
    spec: db.run(spec, env, T=1500, seed=0)
    for spec in ["linucb", "neural-sigma2-linucb:train_steps=100"]
}
for spec, result in results.items():
    print(f"{spec:38s} final regret {result.final_regret:6.1f}")

fig, ax = plt.subplots(figsize=(6, 3.2))
for spec, result in results.items():
    ax.plot(result.records["cum_regret"], label=spec.split(":")[0])
ax.set_xlabel("round t")
ax.set_ylabel("cumulative regret")
ax.set_title("SineEnv: K = 3, d = 5, block-encoded")
ax.legend()
fig.tight_layout()
plt.show()
