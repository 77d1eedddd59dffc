"""The neural-linear family: LinUCB on the last-layer features φ(x; w) of a trained network.

One class, :class:`NeuralLinearBandit`, covers Neural-LinGreedy, Neural-LinUCB (Xu et al. 2022)
and Neural-σ²-LinUCB (Algorithm 1 of the paper); the named classes below only fix presets.
Per round: score arms by Eq. 4 on φ(x; wₜ₋₁), update the (weighted) ridge of Eq. 10 with the
chosen arm, append the round to the history, and, when the schedule says so, train w on the
whole history with θ fixed (Eq. 6 or Eq. 14).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from deepbandits.encoding import Contexts
from deepbandits.errors import InputValueError
from deepbandits.formulas import warmup_prior
from deepbandits.networks.learner import NetworkLearner, check_network_params, seeded_generator
from deepbandits.networks.mlp import MLP
from deepbandits.networks.training import LOSSES
from deepbandits.policies.base import Policy, Preset
from deepbandits.policies.features import FeatureMap, NetworkFeatures
from deepbandits.policies.linucb import LinUCB
from deepbandits.policies.params import NETWORK_SPECS, Spec
from deepbandits.policies.space import ALPHA, FEATURE_DIM, HIDDEN, LAM, LR, TRAIN_STEPS, Param


class NeuralLinearBandit(LinUCB):
    """UCB on neural features with a (variance-weighted) ridge head.

    All parameters of :class:`~deepbandits.policies.linucb.LinUCB` (``alpha``, ``lam``,
    ``per_arm``, ``variance``, ``R``, ``reward_range``, ...) apply to the ridge head on φ, plus:

    Parameters
    ----------
    hidden : int, default=100
        Width m of the hidden layers.
    n_layers : int, default=2
        Number of layers L.
    feature_dim : int, default=20
        Feature dimension d′ (the paper uses 20 on synthetic data, 64 on real data).
    loss : {"mse", "mle"}, default="mse"
        Network loss: Eq. 6 or the Gaussian likelihood of Eq. 14.
    train_schedule : {"default", "paper", "paper-code"}, default="default"
        Named training schedule (:mod:`deepbandits.networks.schedule`); the five entries below
        override its fields when given.
    train_every, train_start, warmup_every, train_steps, batch_size : int, optional
        H, t₀, rounds between trainings before t₀ (0 = none), n, and the minibatch size.
    optimizer : {"sgd", "adam"}, default="sgd"
    lr : float, default=1e-2
    weight_decay : float, default=0.0
    max_grad_norm : float or None, default=10.0
        Clip each minibatch gradient to this global L2 norm (None = no clipping). Without it,
        SGD on large rewards (h2, rewards up to ~60) kills every ReLU of φ in some seeds.
    max_history : int or None, default=100000
        Most rounds the network trains on (None = all): beyond it, the last ``max_history``
        rounds (a sliding window, :class:`~deepbandits.networks.training.History`). A run that
        never exceeds it (every run of the paper, T ≤ 30,000) is bit for bit the uncapped run.
        The history takes 8·(d + 3) bytes per round, 8·(D + 4) for block-encoded contexts
        (README, "Memory per round"). With ``refit_on_update``, A and b are refitted on the
        rounds kept.
    refit_on_update : bool, default=False
        Recompute A and b with the new features after each training (False = Algorithm 1,
        where A and b keep the features each round was played with).
    lam_warmup : bool, default=True
        During the warm-up (rounds t ≤ t₀ = ``train_start``) the prior is
        λₜ = λ·(f + (1 − f)·t/t₀) with f = min(1, mean observation weight so far), reaching λ at
        t₀ (:func:`~deepbandits.formulas.warmup_prior`). The weighted ridge of Eq. 10 is the
        unweighted one with λ·σ̄²: on h1, σ̂² ≈ 40 at first, so a fixed λ = 1 acts like
        λ = 40 and shrinks θ towards 0 while the features are young, and the first 1000
        rounds cost 2–3 times the unweighted policies' regret. Scaled this way the prior counts
        as in the unweighted ridge early and as in Algorithm 1 from t₀ on. With unit weights
        (``variance="none"``), or weights ≥ 1, f = 1 and λ never changes; ``False`` keeps λ
        fixed throughout (Algorithm 1).
    device : str, default="cpu"
        Torch device of the network ("cuda" when available).
    """

    param_specs: ClassVar[dict[str, Spec]] = {
        **NETWORK_SPECS,
        "feature_dim": Spec("int", "feature dimension d′ of φ", low=1),
        "loss": Spec("choice", "network loss: MSE (Eq. 6) or likelihood (Eq. 14)", choices=LOSSES),
        "refit_on_update": Spec("bool", "refit A and b on the new features after a training"),
        "lam_warmup": Spec("bool", "scale λ by the mean weight until t₀"),
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA,
        "lam": LAM,
        "lr": LR,
        "feature_dim": FEATURE_DIM,
        "hidden": HIDDEN,
        "train_steps": TRAIN_STEPS,
    }
    _raw_features = False

    def __init__(
        self,
        *,
        hidden: int = 100,
        n_layers: int = 2,
        feature_dim: int = 20,
        loss: str = "mse",
        train_schedule: str = "default",
        train_every: int | None = None,
        train_start: int | None = None,
        warmup_every: int | None = None,
        train_steps: int | None = None,
        batch_size: int | None = None,
        optimizer: str = "sgd",
        lr: float = 1e-2,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 10.0,
        max_history: int | None = 100_000,
        refit_on_update: bool = False,
        lam_warmup: bool = True,
        device: str = "cpu",
        **linucb_params: Any,
    ) -> None:
        super().__init__(
            hidden=hidden,
            n_layers=n_layers,
            feature_dim=feature_dim,
            loss=loss,
            train_schedule=train_schedule,
            train_every=train_every,
            train_start=train_start,
            warmup_every=warmup_every,
            train_steps=train_steps,
            batch_size=batch_size,
            optimizer=optimizer,
            lr=lr,
            weight_decay=weight_decay,
            max_grad_norm=max_grad_norm,
            max_history=max_history,
            refit_on_update=refit_on_update,
            lam_warmup=lam_warmup,
            device=device,
            **linucb_params,
        )

    def _validate_params(self) -> None:
        super()._validate_params()
        self.train_schedule_, self.device_ = check_network_params(self._params)
        if self._params["refit_on_update"] and self._params["discount"] != 1.0:
            raise InputValueError(
                "refit_on_update=True rebuilds A and b from the whole history at full weight, "
                f"which undoes discount={self._params['discount']}; use one or the other"
            )

    def _feature_dim(self, n_features: int) -> int:
        return int(self._params["feature_dim"])

    def _theory_H(self) -> int:
        return self.train_schedule_.train_every

    def _feature_map(self, X: Contexts, blockwise: bool) -> FeatureMap:
        p = self._params
        self._torch_gen = seeded_generator(p["seed"])
        self.learner_ = NetworkLearner(
            X.shape[1],
            p["feature_dim"],
            output_activation=True,
            params=p,
            device=self.device_,
            generator=self._torch_gen,
        )
        return NetworkFeatures(self.learner_, p["feature_dim"])

    def _initialize(self, X: Contexts) -> None:
        super()._initialize(X)
        self._weight_sum = 0.0

    @property
    def network_(self) -> MLP:
        """The feature network φ(·; w)."""
        return self.learner_.network

    @property
    def n_trainings_(self) -> int:
        return self.learner_.n_trainings

    def _after_updates(
        self, contexts: list[Any], rewards: list[float], weights: list[float], heads: list[int]
    ) -> bool:
        """The trainer's part of learning: keep the rounds for training, move the warm-up
        prior, and train φ when the schedule has a training among the new rounds."""
        for context, reward, weight, head in zip(contexts, rewards, weights, heads, strict=True):
            self.learner_.history.append(context, reward, weight, head)
            self._weight_sum += weight
        first, t, t0 = self.t_ + 1, self.t_ + len(rewards), self.train_schedule_.train_start
        if self._params["lam_warmup"] and first <= t0:  # warmup_prior is λ from t0 on
            lam = warmup_prior(self._params["lam"], self._weight_sum / t, t, t0)
            assert self.ridge_ is not None
            if lam != self.ridge_.lam:
                self.ridge_.set_lam(lam)
        if not any(self.train_schedule_.should_train(s) for s in range(first, t + 1)):
            return False
        self.train_network()
        return True

    def train_network(self, steps: int | None = None) -> float:
        """Train φ on the whole history with θ (and A⁻¹) fixed; returns the last minibatch loss."""
        assert self.ridge_ is not None
        loss = self.learner_.train(
            self.ridge_.theta,
            self.ridge_.A_inv,
            loss=self._params["loss"],
            schedule=self.train_schedule_,
            generator=self._torch_gen,
            steps=steps,
        )
        if self._params["refit_on_update"]:
            X, r, w, h = self.learner_.history.view()
            self.ridge_.refit(self.features_.transform(X)[0], r, w, h)
        return loss

    def _merge(self, other: Policy, base: Policy | None) -> None:
        """Merge the ridge head of a replica with the same network, and extend the training
        history by the rounds it learned (since ``base``)."""
        assert isinstance(other, NeuralLinearBandit)
        for mine, theirs in zip(
            self.network_.state_dict().values(), other.network_.state_dict().values(), strict=True
        ):
            if not torch.equal(mine.cpu(), theirs.cpu()):
                raise InputValueError(
                    "merge needs replicas that share the network φ (the same weights): their "
                    "heads are sums over the same features only then; merge between trainings, "
                    "or train one network and copy it"
                )
        super()._merge(other, base)
        done = base.learner_.history.seen if isinstance(base, NeuralLinearBandit) else 0
        new = min(other.learner_.history.seen - done, other.learner_.history.size)
        X, r, w, h = other.learner_.history.view()
        for i in range(other.learner_.history.size - new, other.learner_.history.size):
            self.learner_.history.append(X[i], float(r[i]), float(w[i]), int(h[i]))
            self._weight_sum += float(w[i])

    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "learner": self.learner_.state_dict(),
            "torch_gen": self._torch_gen.get_state(),
            "weight_sum": self._weight_sum,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)
        self.learner_.load_state_dict(state["learner"])
        self._torch_gen.set_state(state["torch_gen"])
        self._weight_sum = float(state.get("weight_sum", 0.0))


class NeuralLinGreedy(Preset, NeuralLinearBandit):
    """Neural-LinGreedy (Xu et al. 2022): greedy on θᵀφ(x; w), unweighted ridge."""

    fixed_params: ClassVar[dict[str, Any]] = {"alpha": 0.0, "variance": "none"}


class NeuralLinUCB(Preset, NeuralLinearBandit):
    """Neural-LinUCB (Xu et al. 2022): UCB on φ(x; w) with the unweighted ridge of Eq. 5."""

    fixed_params: ClassVar[dict[str, Any]] = {"variance": "none"}


class NeuralSigma2LinUCB(Preset, NeuralLinearBandit):
    """Neural-σ²-LinUCB (Algorithm 1): the ridge of Eq. 10 weighted by 1/σ̄²ₜ.

    ``variance`` defaults to ``"range"`` (σ̂²ₜ of Eq. 13, the paper's practical algorithm);
    ``"oracle"`` is the oracle algorithm of Section 3.1 and ``"schedule"`` the heuristic of
    Fig. heuristic. ``loss="mle"`` trains with Eq. 14, ``alpha="theory"`` uses Theorem 4.1.
    """

    preset_params: ClassVar[dict[str, Any]] = {"variance": "range"}
    forbidden_params: ClassVar[dict[str, Any]] = {"variance": "none"}
