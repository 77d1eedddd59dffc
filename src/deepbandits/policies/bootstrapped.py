"""BootstrappedNN (Riquelme et al. 2018): Thompson sampling by an ensemble of networks.

Each of ``n_models`` networks f_e(x; w_e) with a linear output is trained (MSE, Eq. 6) on its own
bootstrap resample of the rounds played: online bagging, where each round enters member e's data
k ~ Poisson(1) times (Oza and Russell 2001, the online form of sampling with replacement). Every
round one member is drawn uniformly and its greedy arm is played.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import Contexts
from deepbandits.networks.learner import (
    NETWORK_PARAMS,
    NetworkLearner,
    check_network_params,
    seeded_generator,
)
from deepbandits.policies.choice import greedy_propensities
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned
from deepbandits.policies.params import NETWORK_SPECS, Spec
from deepbandits.policies.policy import Policy
from deepbandits.policies.space import HIDDEN, LR, TRAIN_STEPS, Param

Array = NDArray[np.float64]


class BootstrappedNN(Policy):
    """Greedy on one randomly drawn member of a bootstrapped ensemble of networks.

    Parameters
    ----------
    n_models : int, default=5
        Ensemble size.
    network, hidden, n_layers, train_schedule, train_every, train_start, warmup_every,
    train_steps, batch_size, optimizer, lr, weight_decay, max_grad_norm, max_history, device
        Each member's network and training, as in
        :class:`~deepbandits.policies.parts.NetworkFeatures` and
        :class:`~deepbandits.policies.parts.Trainer` (output: one linear unit).
    seed : int, optional
        Seeds the networks, the resampling, the member drawn each round and tie-breaking.

    Notes
    -----
    ``predict`` returns the ensemble mean and standard deviation over members; a decision plays
    the argmax of the drawn member, and its ``mean`` holds that member's predictions. Its
    propensity is exact: the share of members whose greedy choice (ties split) is the arm.
    """

    _uses_torch: ClassVar[bool] = True
    param_specs: ClassVar[dict[str, Spec]] = {
        "n_models": Spec("int", "ensemble size", low=1),
        **NETWORK_SPECS,
    }
    #: hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`)
    search_space: ClassVar[dict[str, Param]] = {
        "lr": LR,
        "hidden": HIDDEN,
        "train_steps": TRAIN_STEPS,
    }
    _samples = True  # Thompson draws / bootstrap resampling (NeuralUCB draws only for ties)
    block_contexts = True

    def __init__(self, *, n_models: int = 5, seed: int | None = None, **network_params: Any):
        super().__init__(n_models=n_models, seed=seed, **{**NETWORK_PARAMS, **network_params})

    def _check_parts(self) -> None:
        self.train_schedule_, self.device_ = check_network_params(self._params)

    def _initialize(self, X: Contexts) -> None:
        self._torch_gen = seeded_generator(self._params["seed"])
        self.members_ = [
            NetworkLearner.build(
                X.shape[1],
                1,
                output_activation=False,
                params=self._params,
                device=self.device_,
                generator=self._torch_gen,
                block_dim=getattr(X, "block_dim", None),
            )
            for _ in range(self._params["n_models"])
        ]
        self.n_trainings_ = 0

    def _outputs(self, X: Contexts) -> Array:
        """``[n_models, K]`` predictions of every member."""
        return np.stack([m.forward(X)[:, 0] for m in self.members_])

    def _evaluate(self, X: Contexts) -> Evaluation:
        out = self._outputs(X)
        return Evaluation(out.mean(axis=0), out.std(axis=0), outputs=out)

    def _index(self, ev: Evaluation) -> Array:
        """Greedy on one member drawn at random; the decision shows that member's prediction as
        the mean and the members' spread as the width (the forecast's standard deviation)."""
        member = int(self._rng.integers(len(self.members_)))
        out = ev.outputs
        assert out is not None
        ev.shown = (out[member], ev.width)
        return out[member]

    def _propensity(self, ev: Evaluation, index: Array, arm: int, exact: float) -> float:
        """Exact: the mean over members of the probability each gives ``arm`` greedily."""
        epsilon = self._params["epsilon"]
        mask = ev.mask
        assert ev.outputs is not None
        shares = [greedy_propensities(member, mask, 0.0)[arm] for member in ev.outputs]
        n_available = len(index) if mask is None else int(mask.sum())
        return (1.0 - epsilon) * float(np.mean(shares)) + epsilon / n_available

    def _learn(self, feedback: Feedback) -> Learned:
        copies = self._rng.poisson(1.0, len(self.members_))
        for member, k in zip(self.members_, copies, strict=True):
            for _ in range(k):
                member.history.append(feedback.obs.context, feedback.reward, 1.0, 0)
        if self.train_schedule_.should_train(self.t_ + 1):
            start = time.perf_counter()
            for member in self.members_:
                member.train_reward_model(self.train_schedule_, self._torch_gen, self.t_ + 1)
            self.n_trainings_ += 1
            return Learned(train_seconds=time.perf_counter() - start)
        return Learned()

    def _state(self) -> dict[str, Any]:
        return {
            "members": [m.state_dict() for m in self.members_],
            "torch_gen": self._torch_gen.get_state(),
            "n_trainings": self.n_trainings_,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        for member, saved in zip(self.members_, state["members"], strict=True):
            member.load_state_dict(saved)
        self._torch_gen.set_state(state["torch_gen"])
        self.n_trainings_ = int(state["n_trainings"])
