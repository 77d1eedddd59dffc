"""The synthetic environments of Section 5.1 and Appendix B.3.

Contexts are uniform on the unit sphere of ℝᵈ, θ is uniform on the unit sphere, and

* h1(x) = 10 (xᵀθ)²            ∈ [0, 10]
* h2(x) = xᵀAᵀAx, A ∈ ℝ^{d×d} with N(0, 1) entries (as in NeuralUCB)  ∈ [0, ‖A‖₂²]
* h3(x) = cos(3 xᵀθ)            ∈ [−1, 1]
* linear(x) = xᵀθ               ∈ [−1, 1]  (not in the paper: the setting LinUCB is built for)

with reward rₜ,ₐ = h(xₜ,ₐ) + ξₜ, one ξₜ ~ N(0, vₜ) per round (Eq. 2). Noise schedules:

* ``uniform``: vₜ ~ U(0, 1) (Section 5.1, the default);
* ``rising``: standard deviation rising linearly from 1 to 10 over the horizon (Fig. B.3 (a));
* ``falling``: standard deviation falling linearly from 2 to 0 (Fig. B.3 (b));
* ``fixed``: standard deviation ``noise_std`` (0.1, 1 or 2 in Fig. B.3 (c)).

Declared reward range. The paper's bound of Eq. 3 needs |ξₜ| ≤ R; a Gaussian is unbounded, so
the noise is truncated at ``truncate`` (default 3) times the largest standard deviation of the
schedule, s_max: |ξₜ| ≤ R_env = truncate · s_max (the truncation moves less than 0.3 % of the
mass for truncate = 3; Var(ξₜ) ≤ vₜ still holds, so vₜ stays a valid oracle bound). The
environment then declares [a, b] = [min h − R_env, max h + R_env], computed from its own
parameters before the first round: it never looks at rewards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._validation import check_arm, check_choice, check_int, check_positive, check_seed
from deepbandits.envs.base import Environment, Holdout, Round
from deepbandits.errors import CallOrderError

REWARD_FUNCTIONS = ("h1", "h2", "h3", "linear")
NOISES = ("uniform", "rising", "falling", "fixed")
_BLOCK = 1024


def unit_sphere(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
    """Samples uniform on the unit sphere of the last axis (normalised Gaussians)."""
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class SyntheticEnv(Environment):
    """Synthetic contextual bandit of Section 5.1.

    Parameters
    ----------
    reward_fn : {"h1", "h2", "h3", "linear"}, default="h1"
    d : int, default=20
        Context dimension.
    n_arms : int, default=4
        Number of arms K.
    noise : {"uniform", "rising", "falling", "fixed"}, default="uniform"
        Noise schedule of the variance vₜ (see the module documentation).
    noise_std : float, default=1.0
        Standard deviation of the ``fixed`` schedule.
    horizon : int, default=10000
        Length T over which ``rising``/``falling`` schedules move (after T they stay at the end
        value).
    truncate : float, default=3.0
        Noise truncation in units of the schedule's largest standard deviation.
    seed : int, optional
        The one seed of all randomness (θ or A, contexts, variances, noise).
    """

    def __init__(
        self,
        reward_fn: str = "h1",
        *,
        d: int = 20,
        n_arms: int = 4,
        noise: str = "uniform",
        noise_std: float = 1.0,
        horizon: int = 10000,
        truncate: float = 3.0,
        seed: int | None = None,
    ) -> None:
        self.reward_fn = check_choice(reward_fn, "reward_fn", REWARD_FUNCTIONS)
        self.d = check_int(d, "d", minimum=1)
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        self.noise = check_choice(noise, "noise", NOISES)
        self.noise_std = check_positive(noise_std, "noise_std", allow_zero=True)
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.truncate = check_positive(truncate, "truncate")
        self.seed = check_seed(seed)
        self.reset(seed)

    def get_params(self) -> dict[str, Any]:
        return {
            "reward_fn": self.reward_fn,
            "d": self.d,
            "n_arms": self.n_arms,
            "noise": self.noise,
            "noise_std": self.noise_std,
            "horizon": self.horizon,
            "truncate": self.truncate,
            "seed": self.seed,
        }

    def reset(self, seed: int | None = None) -> SyntheticEnv:
        if seed is not None:
            self.seed = check_seed(seed)
        ss = np.random.SeedSequence(self.seed)
        param_seq, stream_seq = ss.spawn(2)
        prng = np.random.default_rng(param_seq)
        self.theta = unit_sphere(prng, (self.d,))
        self.A = prng.standard_normal((self.d, self.d)) if self.reward_fn == "h2" else None
        self._rng = np.random.default_rng(stream_seq)
        self.t = 0
        self._block_start = 0
        self._fill_block()
        h_lo, h_hi = self.mean_range()
        r_env = self.noise_bound()
        self.reward_range = (h_lo - r_env, h_hi + r_env)
        self._current: int | None = None
        return self

    # ------------------------------------------------------------------ model
    def mean_range(self) -> tuple[float, float]:
        """Exact range of h over the unit sphere."""
        if self.reward_fn == "h1":
            return 0.0, 10.0
        if self.reward_fn == "h2":
            assert self.A is not None
            return 0.0, float(np.linalg.norm(self.A, 2) ** 2)
        return -1.0, 1.0  # h3 and linear

    def expected_reward(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """h(x) for each row of ``X``."""
        if self.reward_fn == "h1":
            return 10.0 * (X @ self.theta) ** 2
        if self.reward_fn == "h2":
            assert self.A is not None
            AX = X @ self.A.T
            return np.einsum("...i,...i->...", AX, AX)
        if self.reward_fn == "linear":
            return X @ self.theta
        return np.cos(3.0 * (X @ self.theta))

    def noise_std_at(self, t: NDArray[np.int64]) -> NDArray[np.float64] | None:
        """Standard deviation of rounds ``t`` (0-based) for deterministic schedules."""
        frac = np.minimum(t / max(self.horizon - 1, 1), 1.0)
        if self.noise == "rising":
            return 1.0 + 9.0 * frac
        if self.noise == "falling":
            return 2.0 * (1.0 - frac)
        if self.noise == "fixed":
            return np.full(t.shape, self.noise_std)
        return None

    def noise_bound(self) -> float:
        """R_env = truncate × the largest standard deviation of the schedule."""
        s_max = {"uniform": 1.0, "rising": 10.0, "falling": 2.0, "fixed": self.noise_std}[
            self.noise
        ]
        return self.truncate * s_max

    def variance_bound(self) -> float:
        """R² = s_max², the largest variance of the noise schedule (1 for ``uniform``)."""
        return (self.noise_bound() / self.truncate) ** 2

    def _draw_noise(
        self, rng: np.random.Generator, t: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Variance vₜ and truncated noise ξₜ ~ N(0, vₜ) of rounds ``t`` (0-based)."""
        u = rng.random(t.shape)
        z = rng.standard_normal(t.shape)
        std = self.noise_std_at(t)
        var = u if std is None else std**2
        bound = self.noise_bound()
        return var, np.clip(np.sqrt(var) * z, -bound, bound)

    def holdout(self, n: int) -> Holdout:
        """``n`` rounds from a stream of their own (the run's rounds are not touched): contexts
        and θ as in the run, an independent noise draw per arm, at a round drawn uniformly from
        the horizon for the ``rising``/``falling`` schedules."""
        n = check_int(n, "n", minimum=1)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(3)[2])
        contexts = unit_sphere(rng, (n, self.n_arms, self.d))
        expected = self.expected_reward(contexts)
        t = np.repeat(rng.integers(0, self.horizon, n)[:, None], self.n_arms, axis=1)
        _, noise = self._draw_noise(rng, t)
        return Holdout(list(contexts), expected, expected + noise)

    def _fill_block(self) -> None:
        n = _BLOCK
        t = np.arange(self._block_start, self._block_start + n)
        contexts = unit_sphere(self._rng, (n, self.n_arms, self.d))
        self._contexts = contexts
        self._expected = self.expected_reward(contexts)
        self._var, self._noise = self._draw_noise(self._rng, t)

    # ------------------------------------------------------------------ interface
    def next_round(self) -> Round:
        i = self.t - self._block_start
        if i >= _BLOCK:
            self._block_start += _BLOCK
            self._fill_block()
            i = 0
        self._current = i
        self.t += 1
        return Round(
            contexts=self._contexts[i],
            expected_rewards=self._expected[i],
            sigma2=float(self._var[i]),
            reward_range=self.reward_range,
        )

    def reward(self, arm: int) -> float:
        if self._current is None:
            raise CallOrderError("call next_round() before reward()")
        i = self._current
        arm = check_arm(arm, self.n_arms)
        return float(self._expected[i, arm] + self._noise[i])
