"""RidgeUCB: one policy class for the whole ridge family, built from parts.

``RidgeUCB(features, head, variance, explore, trainer)`` scores every arm by the head's mean θᵀφ
and width ‖φ‖_{A⁻¹} on the feature map's φ (Eq. 4), chooses by its exploration rule, weights each
observation by 1/σ̄²ₜ from its variance source (Eq. 9–10) and, with a trainer, trains the feature
network on the rounds played (Algorithm 1). LinUCB, σ²-LinUCB, Neural-LinGreedy, Neural-LinUCB,
Neural-σ²-LinUCB and SAVE are recipes of it (:mod:`deepbandits.policies.recipes`)::

    RidgeUCB(
        features=NetworkFeatures(dim=20),
        head=RidgeHead(lam=1.0),
        variance=RangeBound(),
        explore=UCB(alpha=0.02),
        trainer=Trainer(),
        reward_range=(0.0, 1.0),
    )
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.networks.learner import seeded_generator
from deepbandits.policies.decision import NO_EXTRA
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, Observation, arm_context
from deepbandits.policies.params import HORIZON_SPEC, REWARD_RANGE_SPEC, Spec
from deepbandits.policies.parts.explore import RULE_MEMBERS, UCB, Situation, TheoryInputs
from deepbandits.policies.parts.features import (
    IdentityFeatures,
    NetworkFeatures,
    initialize_features,
    stack_contexts,
)
from deepbandits.policies.parts.heads import RidgeHead
from deepbandits.policies.parts.trainer import Trainer, TrainingJob, check_refit
from deepbandits.policies.parts.variance import (
    NoWeighting,
    RoundEstimate,
    round_variance,
    variance_floor,
)
from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]


class RidgeUCB(Policy):
    """UCB (or another exploration rule) on a (variance-weighted) ridge head over features.

    Parameters
    ----------
    features : feature map, default=IdentityFeatures()
        φ (:mod:`deepbandits.policies.parts.features`).
    head : RidgeHead, default=RidgeHead()
        The ridge regression on φ (Eq. 5 / Eq. 10).
    variance : variance source, default=NoWeighting()
        Where σ²ₜ comes from (:mod:`deepbandits.policies.parts.variance`).
    explore : exploration rule, default=UCB()
        The score an arm is chosen by (:mod:`deepbandits.policies.parts.explore`).
    trainer : Trainer, optional
        Trains a network feature map on the rounds played (:class:`~.parts.trainer.Trainer`).
    reward_range : (a, b), optional
        Rewards outside it are refused; the range of Eq. 13.
    horizon : int, optional
        T, for parts that need it (a linear σ² schedule, SAVE); the runner sets it.
    seed : int, optional
        Seed of the tie-breaking generator and of the network's weights and minibatches.
    epsilon, reward_timeout, timeout_unit, max_pending, max_pending_bytes, when_full
        The options of every policy for live use (:class:`~deepbandits.policies.Policy`).
    """

    param_specs: ClassVar[dict[str, Spec]] = {
        "reward_range": REWARD_RANGE_SPEC,
        "horizon": HORIZON_SPEC,
    }
    block_contexts: ClassVar[bool] = True
    _takes_weights: ClassVar[bool] = True

    def __init__(
        self,
        features: Any = None,
        head: RidgeHead | None = None,
        variance: Any = None,
        explore: Any = None,
        trainer: Any = None,
        *,
        reward_range: tuple[float, float] | None = None,
        horizon: int | None = None,
        seed: int | None = None,
        **options: Any,
    ) -> None:
        parts = {
            "features": features if features is not None else IdentityFeatures(),
            "head": head if head is not None else RidgeHead(),
            "variance": variance if variance is not None else NoWeighting(),
            "explore": explore if explore is not None else UCB(),
        }
        if trainer is not None:
            parts["trainer"] = trainer
        super().__init__(
            parts=parts, reward_range=reward_range, horizon=horizon, seed=seed, **options
        )

    # ------------------------------------------------------------------ parts
    @property
    def features(self) -> Any:
        return self.parts["features"]

    @property
    def head(self) -> RidgeHead:
        return self.parts["head"]  # type: ignore[no-any-return]

    @property
    def variance(self) -> Any:
        return self.parts["variance"]

    @property
    def explore(self) -> Any:
        return self.parts["explore"]

    @property
    def trainer(self) -> Any:
        return self.parts.get("trainer")

    @property
    def ridge_(self) -> Any:
        """The head's ridge statistics (None before a per-arm head's first round)."""
        return self.head.ridge_

    @property
    def network_(self) -> Any:
        """The feature network φ(·; w) (None for the identity)."""
        return getattr(self.features, "network_", None)

    @property
    def n_trainings_(self) -> int:
        return self.trainer.n_trainings_ if self.trainer is not None else 0

    @property
    def learner_(self) -> Any:
        """The trainer's network learner, with its history (None without a trainer)."""
        return self.trainer.learner_ if self.trainer is not None else None

    @property
    def train_schedule_(self) -> Any:
        """When the network trains (None without a trainer), as NeuralUCB's."""
        return self.trainer.schedule_ if self.trainer is not None else None

    @property
    def _vectorised(self) -> bool:  # type: ignore[override]
        rule = self.explore
        return not (rule.samples or rule.observes or rule.sequential)

    @property
    def _uses_torch(self) -> bool:  # type: ignore[override]
        return self.trainer is not None

    @property
    def _samples(self) -> bool:  # type: ignore[override]
        return bool(self.explore.samples)

    def _check_parts(self) -> None:
        missing = [m for m in RULE_MEMBERS if not hasattr(self.explore, m)]
        if missing:
            raise InputTypeError(
                f"explore must be an exploration rule (ExplorationRule: derive from "
                f"Exploration), but {type(self.explore).__name__} has no {', '.join(missing)}"
            )
        if self.trainer is not None and not hasattr(self.features, "network_"):
            raise InputValueError("a trainer needs a network feature map (NetworkFeatures)")
        if self.trainer is None and isinstance(self.features, NetworkFeatures):
            raise InputValueError("NetworkFeatures need a trainer (trainer=Trainer())")
        check_refit(self.trainer, self.head)

    # ------------------------------------------------------------------ state
    def _initialize(self, X: Contexts) -> None:
        features, head = self.features, self.head
        blocks = features.raw and isinstance(X, BlockContexts)  # φ keeps the blocks
        if blocks:
            self.dim_ = X.n_blocks * features.out_dim(X.block_dim)  # type: ignore[union-attr]
        else:
            self.dim_ = features.out_dim(X.shape[1])
        by_block = blocks and head.layout != "per_arm"
        head.reset()
        if by_block:
            head.initialize(features.out_dim(X.block_dim), X.n_blocks)  # type: ignore[union-attr]
        else:
            head.initialize(self.dim_)
        generator = None
        if self.trainer is not None:
            self.torch_gen_ = generator = seeded_generator(self._params["seed"])
        initialize_features(
            features, X.shape[1], by_block, generator, getattr(X, "block_dim", None)
        )
        if self.trainer is not None:
            self.trainer.initialize(features.network_, X.shape[1])
        self.variance.initialize(self._params["horizon"])
        self.explore.initialize(self.dim_)
        self.last_sigma2_bar_ = variance_floor(self.variance.R, self.dim_)

    def _state(self) -> dict[str, Any]:
        state = {**super()._state(), "last_sigma2_bar": self.last_sigma2_bar_}
        if self.trainer is not None:
            state["torch_gen"] = self.torch_gen_.get_state()
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)
        self.last_sigma2_bar_ = float(state["last_sigma2_bar"])
        if self.trainer is not None:
            self.torch_gen_.set_state(state["torch_gen"])

    # ------------------------------------------------------------------ acting
    def situation(self, t: int | None = None) -> Situation:
        """What the exploration rule reads of the coming round."""
        t = self.t_ if t is None else t
        return Situation(
            t, self.pending_.n_decided, self._rng, self._params["seed"], self.theory_inputs
        )

    def theory_inputs(self) -> TheoryInputs:
        """The inputs of Theorem 4.1's αₜ as the policy stands."""
        return TheoryInputs(
            d=self.dim_,
            sigma2_bar=self.last_sigma2_bar_,
            lam=self.head.lam,
            R=self.variance.R,
            H=self.trainer.schedule_.train_every if self.trainer is not None else 1,
        )

    def _features_and_heads(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        phi, slots = self.features.transform(X)
        return phi, self.head.heads(X.shape[0], slots)

    def _evaluate(self, X: Contexts) -> Evaluation:
        phi, heads = self._features_and_heads(X)
        mean, width = self.head.score(phi, heads)
        return Evaluation(mean, width, phi, heads)

    def _score_stacked(
        self, X: Contexts, sizes: list[int]
    ) -> tuple[Array, Array, Array, NDArray[np.int64] | None]:
        """Mean, width, features and head of every row of several requests stacked in ``X``:
        one feature-map call, one grouped ridge evaluation. Every request is checked against a
        per-arm head before any is scored."""
        head = self.head
        per_arm = head.kind_ == "per_arm"
        if per_arm:
            for n in set(sizes):
                head.heads(n, None)
        phi, slots = self.features.transform(X)
        if per_arm:  # each request's arms 0..n-1
            starts = np.cumsum([0, *sizes[:-1]])
            heads: NDArray[np.int64] | None = np.arange(len(phi)) - np.repeat(starts, sizes)
        else:
            heads = head.heads(len(phi), slots)
        mean, width = head.score(phi, heads, grouped=True)
        return mean, width, phi, heads

    def _evaluate_many(self, batch: list[Contexts]) -> list[Evaluation]:
        blocks = {X.n_blocks if isinstance(X, BlockContexts) else None for X in batch}
        if len(batch) == 1 or len(blocks) > 1:  # mixed encodings: one by one
            return [self._evaluate(X) for X in batch]
        sizes = [X.shape[0] for X in batch]
        mean, width, phi, heads = self._score_stacked(stack_contexts(batch), sizes)
        bounds = np.cumsum([0, *sizes])
        return [
            Evaluation(mean[a:b], width[a:b], phi[a:b], None if heads is None else heads[a:b])
            for a, b in itertools.pairwise(bounds)
        ]

    def _evaluate_uniform(self, X: Array, n_requests: int, n_arms: int) -> Evaluation:
        shape = (n_requests, n_arms)
        if self.head.kind_ != "per_arm":
            mean, width, phi, heads = self._score_stacked(X, [n_arms] * n_requests)
            return Evaluation(mean.reshape(shape), width.reshape(shape), phi, heads)
        self.head.heads(n_arms, None)  # one ridge per arm: each request's arm k on ridge k
        phi, _ = self.features.transform(X)
        mean, width = self.head.ridge_.score_each(phi.reshape(*shape, -1))  # type: ignore[union-attr]
        return Evaluation(mean, width, phi, np.tile(np.arange(n_arms), n_requests))

    def _index(self, ev: Evaluation) -> Array:
        return self.explore.index(ev, self.situation())  # type: ignore[no-any-return]

    @property
    def _closed_form(self) -> bool:  # type: ignore[override]
        return hasattr(self.explore, "probabilities")

    def _distribution(self, ev: Evaluation) -> Array:
        available = np.ones(ev.mean.shape) if ev.mask is None else ev.mask.astype(np.float64)
        epsilon = self._params["epsilon"]
        probs = self.explore.probabilities(ev, ev.mask, self.situation())
        floor = epsilon * available / available.sum(axis=-1, keepdims=True)
        return (1.0 - epsilon) * probs + floor  # type: ignore[no-any-return]

    def _propensity(self, ev: Evaluation, index: Array, arm: int, exact: float) -> float:
        if not self.explore.samples:
            return exact
        sit = Situation(self.t_, ev.round, self._rng, self._params["seed"])
        epsilon = self._params["epsilon"]
        return float(self.explore.propensity(ev, index, ev.mask, arm, sit, epsilon))

    def _observe(self, X: Contexts, arm: int, ev: Evaluation | None) -> Observation:
        if ev is None:
            phi, heads = self._features_and_heads(X)
            ev = Evaluation(np.empty(0), np.empty(0), phi, heads)
        assert ev.features is not None
        explore = self.explore
        extra = explore.observe(ev, arm, self.t_) if explore.observes else NO_EXTRA
        context = arm_context(X, arm)
        # the identity's features are the context: one read-only copy serves as both
        same = ev.features is X and isinstance(context, np.ndarray)
        features = context if same else np.array(ev.features[arm])
        return Observation(context, features, 0 if ev.heads is None else int(ev.heads[arm]), extra)

    # ------------------------------------------------------------------ learning
    def _weights(self, batch: Sequence[Feedback]) -> list[tuple[float, float]]:
        """(σ̄²ₜ, raw σ²ₜ) of each reward, from the head as it is (Eq. 9–13)."""
        source, head = self.variance, self.head
        if not source.weighted:  # unit weights (Eq. 5)
            return [(1.0, float("nan"))] * len(batch)
        out = []
        for i, fb in enumerate(batch):
            mean, predictive = head.estimate(fb.obs.features, fb.obs.head, source.needs)
            est = RoundEstimate(self.t_ + i, mean, predictive, fb.sigma2, fb.reward_range)
            out.append(round_variance(source, est, self.dim_))
        return out

    def _learn(self, feedback: Feedback) -> Learned:
        """One reward: the rank-one update of its head (Eq. 10), weighted by 1/σ̄²ₜ."""
        (sigma2_bar, sigma2_hat), obs = self._weights([feedback])[0], feedback.obs
        weight = feedback.weight / sigma2_bar
        self.head.learn_one(obs.features, feedback.reward, weight, obs.head, self.t_)  # type: ignore[arg-type]
        if self.explore.learns:
            self.explore.learn([obs], [feedback.reward])
        if self.trainer is None:
            self.last_sigma2_bar_ = sigma2_bar
            return Learned(sigma2_bar, sigma2_hat)
        rounds = ([obs.context], [feedback.reward], [weight], [obs.head])
        return self._after_learning(rounds, sigma2_bar, sigma2_hat)

    def _learn_many(self, batch: Sequence[Feedback]) -> Learned:
        """All the rewards by one batched ridge update, each weighted with the model as it is
        at the call (σ̂² of Eq. 13 from θ before the batch); SAVE's layers learn one by one."""
        if self.explore.sequential and len(batch) > 1:
            return super()._learn_many(batch)
        used = self._weights(batch)
        observed = [fb.obs for fb in batch]
        phis = np.stack([obs.features for obs in observed])
        head_list = [obs.head for obs in observed]
        reward_list = [fb.reward for fb in batch]
        weights = [fb.weight / u[0] for fb, u in zip(batch, used, strict=True)]
        heads = np.array(head_list, dtype=np.int64)
        rewards = np.array(reward_list, dtype=np.float64)
        self.head.learn(phis, rewards, np.array(weights), heads, self.t_)
        if self.explore.learns:
            self.explore.learn(observed, reward_list)
        rounds = ([obs.context for obs in observed], reward_list, weights, head_list)
        learned = self._after_learning(rounds, *used[-1])
        self.t_ += len(batch)
        return learned

    def _after_learning(
        self,
        rounds: tuple[list[Any], list[float], list[float], list[int]],
        sigma2_bar: float,
        sigma2_hat: float,
    ) -> Learned:
        """The trainer's turn after the head learned ``rounds`` (contexts, rewards, weights,
        heads of rounds ``t + 1 ..``)."""
        self.last_sigma2_bar_ = sigma2_bar
        seconds = 0.0
        if self.trainer is not None:
            start = time.perf_counter()
            if self.trainer.after_updates(
                self.head, self.features, rounds, self.t_, self.torch_gen_
            ):
                seconds = time.perf_counter() - start
        return Learned(sigma2_bar, sigma2_hat, seconds)

    def train_network(self, steps: int | None = None) -> float:
        """Train φ on the whole history with θ (and A⁻¹) fixed; returns the last minibatch loss."""
        if self.trainer is None:
            raise InputValueError("this policy has no trainer: its features do not learn")
        return self.trainer.train(self.head, self.features, self.torch_gen_, steps)  # type: ignore[no-any-return]

    def prepare_training(self) -> TrainingJob:
        """Step 1 of a deferred training (:mod:`~deepbandits.policies.parts.trainer`): what a
        training of the network reads now, copied; call it where the policy does not change
        meanwhile (a service: under its lock)."""
        return self._trainer_part().prepare_training(self.head, self.torch_gen_, self.t_)

    def apply_training(self, version: dict[str, Any]) -> None:
        """Step 3 of a deferred training: swap in the network version ``version`` that
        :func:`~deepbandits.policies.parts.trainer.run_training` returned (or that a service
        read back from its file)."""
        self._trainer_part().apply_training(version, self.head, self.features, self.torch_gen_)

    def _trainer_part(self) -> Trainer:
        if self.trainer is None:
            raise InputValueError(
                "a deferred training needs a policy with a trainer (trainer=Trainer()), but "
                "this one has none: its features do not learn"
            )
        if self.n_features_in_ is None:
            raise InputValueError(
                "a deferred training needs a policy that has decided once (its network is "
                "built then), but this one is fresh"
            )
        return self.trainer  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ merging
    def _merge(self, other: Policy, base: Policy | None) -> None:
        """Merge the ridge head of a replica with the same features, and extend the training
        history by the rounds it learned (since ``base``)."""
        assert isinstance(other, RidgeUCB)
        if self.explore.sequential:
            raise InputValueError(
                "SaveNeuralLinUCB cannot merge replicas: which layer a round enters depends on "
                "every round before it"
            )
        if self.trainer is not None:
            import torch

            mine, theirs = self.features.network_, other.features.network_
            for a, b in zip(mine.state_dict().values(), theirs.state_dict().values(), strict=True):
                if not torch.equal(a.cpu(), b.cpu()):
                    raise InputValueError(
                        "merge needs replicas that share the network φ (the same weights): "
                        "their heads are sums over the same features only then; merge between "
                        "trainings, or train one network and copy it"
                    )
        since = base if isinstance(base, RidgeUCB) else None
        if other.head.kind_ != self.head.kind_:
            raise InputValueError(
                f"cannot merge a {other.head.kind_} head into a {self.head.kind_} one"
            )
        self.head.merge(other.head, since.head if since is not None else None)
        if self.trainer is not None:
            self.trainer.merge(other.trainer, since.trainer if since is not None else None)

    def _initial_contexts(self) -> Contexts:
        ridge = self.head.ridge_
        if self.head.by_block_ and ridge is not None:
            return BlockContexts(np.zeros((1, ridge.dim)), [0], ridge.n_heads)
        return super()._initial_contexts()
