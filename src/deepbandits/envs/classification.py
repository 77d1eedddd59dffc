"""Classification as a contextual bandit (Beygelzimer & Langford 2009; Section 5.2, Appendix B.2).

Each round draws one sample x ∈ ℝᴰ with label y. Arm k's context is x placed in block k of ℝᴷᴰ
(:func:`~deepbandits.encoding.block_encode`; ``encoding="dense"`` gives the same matrix as a
plain array); the reward is 1 for the arm of the true class and 0 otherwise, so the declared
reward range is [a, b] = [0, 1] and the expected reward of arm k is 1{k = y}. Features are
L2-normalised per sample and labels (of any type) are mapped to arms 0..K−1 in sorted order,
as in the paper's code. Samples are visited in an order shuffled by the seed, reshuffled after
every pass over the data.

``dynamic_range=True`` is the setting of Fig. ab_dynamic (b): from round T/2 on, the rewards are
3 for the true class and 1 otherwise, and the declared range moves from [0, 1] to [1, 3].
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import check_arm, check_choice, check_int
from deepbandits.datasets import load_dataset
from deepbandits.encoding import block_encode
from deepbandits.envs.base import Environment, Holdout, Round

ENCODINGS = ("block", "dense")

#: Appendix B.2: d′ = 64 features, H = 10 rounds between trainings from t₀ = 10,000 (MNIST,
#: covertype, CIFAR-10) or H = 100 from t₀ = 2,000 (shuttle).
PAPER_DEFAULTS: dict[str, dict[str, Any]] = {
    "mnist": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "covertype": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "cifar10": {"feature_dim": 64, "train_every": 10, "train_start": 10000},
    "shuttle": {"feature_dim": 64, "train_every": 100, "train_start": 2000},
}


class ClassificationEnv(Environment):
    """Contextual bandit built from any labelled data.

    Parameters
    ----------
    X : array ``[n, D]``
        Features (any numeric dtype; each row is L2-normalised when ``normalize``).
    y : array ``[n]``
        Labels of any type; the K distinct values become arms 0..K−1 in sorted order.
    encoding : {"block", "dense"}, default="block"
        Arm contexts as :class:`~deepbandits.encoding.BlockContexts` or as the dense
        ``[K, K·D]`` array (the same numbers; the block form is K× cheaper for the policies).
    normalize : bool, default=True
        Divide each sample by its L2 norm (all-zero samples are left at zero).
    dynamic_range : bool, default=False
        Rewards {0, 1} before round ``horizon/2`` and {1, 3} from it on (Fig. ab_dynamic (b)).
    horizon : int, default=15000
        Length T of the run (used only by ``dynamic_range``); the runner sets it to the run's T.
    seed : int, optional
        Seed of the sample order.
    """

    def __init__(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        encoding: str = "block",
        normalize: bool = True,
        dynamic_range: bool = False,
        horizon: int = 15000,
        seed: int | None = None,
    ) -> None:
        X = np.asarray(X)
        y = np.asarray(y)
        if X.ndim != 2 or not np.issubdtype(X.dtype, np.number):
            raise ValueError(f"X must be a 2-d numeric array [n, D], got {X.dtype} {X.shape}")
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"y must be 1-d with one label per row of X ({len(X)}), got {y.shape}")
        if len(X) == 0:
            raise ValueError("X has no samples")
        if np.issubdtype(X.dtype, np.floating) and not np.isfinite(X).all():
            raise ValueError("X contains NaN or inf")
        self.classes_, labels = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has {len(self.classes_)} distinct label(s); a bandit needs >= 2")
        self.X = X
        self.labels = labels.astype(np.int64)
        self.n_arms = len(self.classes_)
        self.encoding = check_choice(encoding, "encoding", ENCODINGS)
        if not isinstance(normalize, bool) or not isinstance(dynamic_range, bool):
            raise ValueError("normalize and dynamic_range must be True or False")
        self.normalize = normalize
        self.dynamic_range = dynamic_range
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.seed = seed
        self.dataset: str | None = None
        self.data_dir: str | None = None
        self.note = ""
        self.reset(seed)

    @classmethod
    def from_dataset(
        cls,
        name: str,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        download: bool = True,
        **params: Any,
    ) -> ClassificationEnv:
        """The bandit of dataset ``name`` (:func:`~deepbandits.datasets.load_dataset`)."""
        ds = load_dataset(name, data_dir, download=download)
        env = cls(ds.X, ds.y, **params)
        env.dataset, env.note = name, ds.note
        env.data_dir = None if data_dir is None else str(data_dir)
        return env

    @property
    def n_features(self) -> int:
        """Context dimension K·D of an arm."""
        return self.n_arms * self.X.shape[1]

    @property
    def policy_defaults(self) -> dict[str, Any]:
        """The paper's network settings for this dataset (Appendix B.2), applied by
        ``deepbandits compare`` to the policies that take them unless given explicitly."""
        return dict(PAPER_DEFAULTS.get(self.dataset or "", {}))

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "encoding": self.encoding,
            "normalize": self.normalize,
            "dynamic_range": self.dynamic_range,
            "horizon": self.horizon,
            "seed": self.seed,
        }
        if self.dataset is not None:
            params.update(dataset=self.dataset, data_dir=self.data_dir, note=self.note)
        else:
            digest = hashlib.sha256(np.ascontiguousarray(self.X).tobytes())
            digest.update(np.ascontiguousarray(self.labels).tobytes())
            params["data"] = f"arrays X {self.X.shape} {self.X.dtype}, sha256 {digest.hexdigest()}"
        params.update(n_samples=len(self.X), n_arms=self.n_arms)
        return params

    def reset(self, seed: int | None = None) -> ClassificationEnv:
        if seed is not None:
            self.seed = seed
        self._rng = np.random.default_rng(self.seed)
        self._order = self._rng.permutation(len(self.X))
        self.t = 0
        self._label: int | None = None
        return self

    def reward_range_at(self, t: int) -> tuple[float, float]:
        """Declared range of round ``t`` (0-based)."""
        return (1.0, 3.0) if self.dynamic_range and t >= self.horizon // 2 else (0.0, 1.0)

    def sample(self, i: int) -> NDArray[np.float64]:
        """Features of sample ``i`` as float64, L2-normalised when ``normalize``."""
        x = self.X[i].astype(np.float64)
        if self.normalize:
            norm = np.linalg.norm(x)
            if norm > 0:
                x /= norm
        return x

    def variance_bound(self) -> float:
        """Rewards are deterministic given the sample: Var(rₜ) = 0."""
        return 0.0

    def holdout(self, n: int) -> Holdout:
        """The last ``n`` samples of the seed's first shuffled pass: never played in a run of
        T ≤ N − n rounds. Rewards as in round 1 (range [0, 1])."""
        n = check_int(n, "n", minimum=1)
        order = np.random.default_rng(self.seed).permutation(len(self.X))
        if n >= len(order):
            raise ValueError(f"a hold-out set of {n} needs more than the {len(order)} samples")
        contexts, expected = [], np.zeros((n, self.n_arms))
        for row, i in enumerate(order[-n:]):
            X = block_encode(self.sample(int(i)), self.n_arms)
            contexts.append(X if self.encoding == "block" else X.dense())
            expected[row, self.labels[i]] = 1.0
        return Holdout(contexts, expected, expected.copy())

    def next_round(self) -> Round:
        n = len(self.X)
        if self.t and self.t % n == 0:
            self._order = self._rng.permutation(n)
        i = int(self._order[self.t % n])
        contexts = block_encode(self.sample(i), self.n_arms)
        a, b = self.reward_range_at(self.t)
        expected = np.full(self.n_arms, a)
        expected[self.labels[i]] = b
        self._label = int(self.labels[i])
        self._expected = expected
        self.t += 1
        return Round(
            contexts=contexts if self.encoding == "block" else contexts.dense(),
            expected_rewards=expected,
            sigma2=0.0,
            reward_range=(a, b),
        )

    def reward(self, arm: int) -> float:
        if self._label is None:
            raise RuntimeError("call next_round() before reward()")
        return float(self._expected[check_arm(arm, self.n_arms)])
