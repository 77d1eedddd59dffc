"""NeuralUCB (Zhou et al. 2020) and NeuralTS (Zhang et al. 2021): exploration on the gradient
features of the whole network.

A scalar network f(x; w) is trained on every round played (MSE, Eq. 6 with θ = 1 on a linear
output). Its gradient g(x; w) = ∇_w f(x; w) is the feature of a ridge statistic
Z = λI + Σₛ g(xₛ)g(xₛ)ᵀ/m over the rounds played, and the width of an arm is
‖g(x)/√m‖_{Z⁻¹}. NeuralUCB plays argmax f(x) + γ‖g/√m‖_{Z⁻¹}; NeuralTS samples
r̃ ~ N(f(x), ν²λ gᵀZ⁻¹g/m) for each arm and plays the largest.

``mode="full"`` keeps Z⁻¹ exactly (a float64 :class:`~deepbandits.linalg.ridge.RidgeState` of
dimension p, the number of network parameters: only for small networks); ``mode="diag"`` keeps
the diagonal of Z, as every published experiment of both methods does, and computes gᵀdiag(Z)⁻¹g
for all arms without forming g (:func:`~deepbandits.networks.gradients.diagonal_quadratic_form`).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.encoding import Contexts
from deepbandits.errors import InputValueError
from deepbandits.linalg.ridge import RidgeState
from deepbandits.networks.gradients import (
    diagonal_quadratic_form,
    diagonal_quadratic_form_of,
    network_output_gradients,
    per_sample_gradients,
    squared,
)
from deepbandits.networks.learner import (
    NETWORK_PARAMS,
    NetworkLearner,
    check_network_params,
    seeded_generator,
)
from deepbandits.networks.mlp import add_outer_, as_input
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, context_rows
from deepbandits.policies.params import (
    ALPHA_SPEC,
    LAM_SPEC,
    NETWORK_SPECS,
    REFRESH_EVERY_SPEC,
    Spec,
    given_params,
)
from deepbandits.policies.parts.explore import (
    UCB,
    InverseGapWeighting,
    Situation,
    Thompson,
    thompson_scale,
)
from deepbandits.policies.policy import Policy
from deepbandits.policies.space import ALPHA, HIDDEN, LAM, LR, TRAIN_STEPS, Param

Array = NDArray[np.float64]
EXPLORATIONS = ("ucb", "ts")
MODES = ("diag", "full")


class NeuralGradientBandit(Policy):
    """UCB or Thompson sampling on the gradient features of a neural reward model.

    Parameters
    ----------
    exploration : {"ucb", "ts"}, default="ucb"
        NeuralUCB (γ = ``alpha``) or NeuralTS (ν = ``alpha``).
    mode : {"diag", "full"}, default="diag"
        Diagonal approximation of Z, or the exact Z⁻¹ (p × p, refused above ``max_full_params``).
    alpha : float, default=0.02
        Exploration rate γ (UCB) or ν (TS); the paper uses 0.02 for every method.
    lam : float, default=1.0
        Regulariser λ of Z.
    propensity_samples : int, default=1000
        NeuralTS: Monte Carlo samples of the arms' posterior draws behind each decision's
        propensity, P(arm) ≈ (wins + 1)/(samples + 1) counting the draw actually made (a
        standard error below 0.016); drawn from a generator of their own, seeded by the
        policy's seed and the decision's round, so they leave the trajectory unchanged.
    max_full_params : int, default=5000
        Largest parameter count accepted by ``mode="full"`` (Z⁻¹ takes 8p² bytes).
    refresh_every : int, default=500
        ``mode="full"``: rank-one updates between exact re-inversions of Z.
    explore : {"own", "igw"}, default="own"
        The rule ``exploration`` names, or inverse gap weighting on the network's means
        (:class:`~deepbandits.policies.parts.explore.InverseGapWeighting`, SquareCB), whose log
        has exact propensities above 0.
    gamma, gamma_exponent, min_propensity
        ``explore="igw"``: γₜ = gamma·(t + 1)^gamma_exponent and the floor on every arm's
        probability.
    network, hidden, n_layers, train_schedule, train_every, train_start, warmup_every,
    train_steps, batch_size, optimizer, lr, weight_decay, max_grad_norm, max_history, device
        The network and its training, as in
        :class:`~deepbandits.policies.parts.NetworkFeatures` and
        :class:`~deepbandits.policies.parts.Trainer`; the output is one linear unit and
        m = ``hidden`` in the 1/m scaling. With ``network="lenet"`` the gradient features cover
        the convolutions too (the trunk's part by ``torch.func``,
        :func:`~deepbandits.networks.gradients.network_output_gradients`).
    seed : int, optional
        Seeds the network, the minibatches, the Thompson samples and tie-breaking.
    """

    _uses_torch: ClassVar[bool] = True
    param_specs: ClassVar[dict[str, Spec]] = {
        "exploration": Spec("choice", "NeuralUCB or NeuralTS", choices=EXPLORATIONS),
        "mode": Spec("choice", "diagonal approximation of Z, or the exact Z⁻¹", choices=MODES),
        "alpha": ALPHA_SPEC,
        "lam": LAM_SPEC,
        "max_full_params": Spec("int", "most network parameters for mode='full'", low=1),
        "propensity_samples": Spec("int", "NeuralTS: Monte Carlo samples per propensity", low=1),
        "refresh_every": REFRESH_EVERY_SPEC,
        "explore": Spec(
            "choice",
            "the policy's own rule (UCB or Thompson, by exploration) or inverse gap weighting",
            choices=("own", "igw"),
        ),
        **InverseGapWeighting.specs,
        **NETWORK_SPECS,
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA,
        "lam": LAM,
        "lr": LR,
        "hidden": HIDDEN,
        "train_steps": TRAIN_STEPS,
    }
    _samples = True  # Thompson draws (NeuralUCB draws only for ties)
    block_contexts = True

    def __init__(
        self,
        *,
        exploration: str = "ucb",
        mode: str = "diag",
        alpha: float = 0.02,
        lam: float = 1.0,
        max_full_params: int = 5000,
        propensity_samples: int = 1000,
        refresh_every: int = 500,
        explore: str = "own",
        gamma: float = 10.0,
        gamma_exponent: float = 0.5,
        min_propensity: float = 0.0,
        seed: int | None = None,
        **network_params: Any,
    ) -> None:
        super().__init__(**given_params(locals(), "network_params", NETWORK_PARAMS))

    def _check_parts(self) -> None:
        p = self._params
        self.train_schedule_, self.device_ = check_network_params(p)
        self.explore_: UCB | Thompson | InverseGapWeighting
        if p["explore"] == "igw":
            self.explore_ = InverseGapWeighting(
                p["gamma"], p["gamma_exponent"], p["min_propensity"]
            )
        elif p["exploration"] == "ucb":
            self.explore_ = UCB(p["alpha"])
        else:
            self.explore_ = Thompson(thompson_scale(p["alpha"], p["lam"]), p["propensity_samples"])

    def _initialize(self, X: Contexts) -> None:
        p = self._params
        self._torch_gen = seeded_generator(p["seed"])
        self.learner_ = NetworkLearner.build(
            X.shape[1],
            1,
            output_activation=False,
            params=p,
            device=self.device_,
            generator=self._torch_gen,
            block_dim=getattr(X, "block_dim", None),
        )
        self.n_params_ = self.learner_.network.n_params
        self._m = float(p["hidden"])
        self.z_diag_: list[torch.Tensor] = []
        self.z_: RidgeState | None = None
        if p["mode"] == "full":
            if self.n_params_ > p["max_full_params"]:
                raise InputValueError(
                    f"mode='full' keeps a {self.n_params_} x {self.n_params_} matrix "
                    f"({8 * self.n_params_**2 / 2**30:.1f} GiB) for this network, above "
                    f"max_full_params={p['max_full_params']}; use mode='diag' or a smaller network"
                )
            self.z_ = RidgeState(self.n_params_, 1, p["lam"], p["refresh_every"])
        else:
            self.z_diag_ = [
                torch.full_like(w, p["lam"], dtype=torch.float64)
                for w in self.learner_.network.parameters()
            ]

    @property
    def n_trainings_(self) -> int:
        return self.learner_.n_trainings

    def _evaluate(self, X: Contexts) -> Evaluation:
        """f(x) and ‖g(x)/√m‖_{Z⁻¹} for every arm, from one batched backward pass."""
        net = self.learner_.network
        with torch.no_grad():
            if self.z_ is None:
                f, trunk, deltas, acts = network_output_gradients(net, as_input(X, self.device_))
                k = len(trunk)  # the trunk's parameters come first in Z's diagonal
                inv = [1.0 / z for z in self.z_diag_[k:]]
                q = diagonal_quadratic_form(deltas, acts, inv)
                if trunk:
                    q = q + diagonal_quadratic_form_of(trunk, self.z_diag_[:k])
                quad = q.cpu().numpy()
            else:
                f, g = per_sample_gradients(net, as_input(X, self.device_))
                g64 = g.to("cpu", torch.float64).numpy()
                quad = ((g64 @ self.z_.A_inv[0]) * g64).sum(axis=1)
        mean = f.to("cpu", torch.float64).numpy()
        width = np.sqrt(np.maximum(quad, 0.0) / self._m)
        return Evaluation(mean, width)

    def _situation(self, ev: Evaluation) -> Situation:
        return Situation(self.t_, ev.round, self._rng, self._params["seed"])

    def _index(self, ev: Evaluation) -> Array:
        return self.explore_.index(ev, self._situation(ev))  # type: ignore[no-any-return]

    def _propensity(self, ev: Evaluation, index: Array, arm: int, exact: float) -> float:
        """UCB: exact (the choice rule). NeuralTS: the Monte Carlo estimate of
        ``propensity_samples`` draws, with the exploration floor ε added exactly."""
        if not self.explore_.samples:
            return exact
        sit = self._situation(ev)
        return float(
            self.explore_.propensity(ev, index, ev.mask, arm, sit, self._params["epsilon"])
        )

    def _learn(self, feedback: Feedback) -> Learned:
        net = self.learner_.network
        context = feedback.obs.context
        x = as_input(context_rows(context), self.device_)
        with torch.no_grad():
            if self.z_ is None:  # Z += g gᵀ/m, diagonal part: δ² ⊗ a² per perceptron layer
                _, trunk, deltas, acts = network_output_gradients(net, x)
                k = len(trunk)
                for z, g in zip(self.z_diag_[:k], trunk, strict=True):
                    z += (g[0] * g[0]).to(torch.float64) / self._m
                for i, (delta, a) in enumerate(zip(deltas, acts, strict=False)):
                    d2 = (delta * delta).to(torch.float64) / self._m
                    add_outer_(self.z_diag_[k + 2 * i], d2, squared(a, torch.float64))
                    self.z_diag_[k + 2 * i + 1] += d2[0]
            else:
                _, g = per_sample_gradients(net, x)
                self.z_.update(g[0].to("cpu", torch.float64).numpy(), 0.0, 1.0 / self._m)
        self.learner_.history.append(context, feedback.reward, 1.0, 0)
        if self.train_schedule_.should_train(self.t_ + 1):
            start = time.perf_counter()
            self.learner_.train_reward_model(self.train_schedule_, self._torch_gen)
            return Learned(train_seconds=time.perf_counter() - start)
        return Learned()

    def _state(self) -> dict[str, Any]:
        return {
            "learner": self.learner_.state_dict(),
            "torch_gen": self._torch_gen.get_state(),
            "z_diag": [z.cpu() for z in self.z_diag_],
            "z": self.z_.state_dict() if self.z_ is not None else None,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.learner_.load_state_dict(state["learner"])
        self._torch_gen.set_state(state["torch_gen"])
        self.z_diag_ = [torch.as_tensor(z).to(self.device_) for z in state["z_diag"]]
        if state["z"] is not None:
            self.z_ = RidgeState.from_state_dict(state["z"])
