"""The interface every policy implements: parameters, parts, lifecycle and the hooks.

A policy is built from keyword parameters (validated against its ``param_specs``) and, for the
policies assembled from parts (:class:`~deepbandits.policies.ridge_ucb.RidgeUCB`), from part
objects. Its learned state is the union of its parts' ``state_dict`` and its own counters. The
public calls live in modules of their own and are bound here: acting in
:mod:`~deepbandits.policies.acting`, learning in :mod:`~deepbandits.policies.learning`, merging in
:mod:`~deepbandits.policies.merging`, files in :mod:`~deepbandits.policies.checkpoint`. Every
public call is all or nothing (:mod:`~deepbandits.policies.transaction`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import check_unknown_keys
from deepbandits.encoding import BlockContexts, Contexts, check_contexts
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.policies import acting, checkpoint, learning, merging
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, Observation, arm_context
from deepbandits.policies.params import (
    COMMON_SPECS,
    DECISION_DEFAULTS,
    Spec,
    check_param,
    check_search_space,
    merge_specs,
)
from deepbandits.policies.pending import PendingDecisions
from deepbandits.policies.space import Param

if TYPE_CHECKING:
    from deepbandits.policies.hooks import Builder
    from deepbandits.policies.parts.trainer import TrainingJob

Array = NDArray[np.float64]
CLASSES: dict[str, type[Policy]] = {}


class Policy(ABC):
    """Base class of all bandit policies.

    The acting API is :meth:`decide` (a :class:`~deepbandits.policies.decision.Decision`, kept
    pending by id until :meth:`learn` gets its reward), with :meth:`decide_batch` and
    :meth:`learn_batch` for many requests at once, and :meth:`select` / :meth:`update` as the
    synchronous shortcut. :meth:`predict` reads and changes nothing.

    Subclasses implement :meth:`_initialize` (build state once the context dimension is known),
    :meth:`_evaluate` (mean and width per arm), :meth:`_index` (the score maximised),
    :meth:`_observe` (what learning needs of the arm played), :meth:`_learn` and the
    ``_state``/``_load_state`` pair.

    Attributes
    ----------
    n_features_in_ : int or None
        Context dimension, inferred from the first contexts that change the policy.
    t_ : int
        Number of rewards learned.
    pending_ : PendingDecisions
        Decisions awaiting their reward (:mod:`deepbandits.policies.decision`).
    recipe_ : Recipe or None
        The registry name that built the policy, whose keywords :meth:`get_params` returns.
    """

    #: Whether the policy works on BlockContexts directly (the others get the dense matrix).
    block_contexts: ClassVar[bool] = False
    #: The type, range and meaning of every keyword parameter (merged along the class chain).
    param_specs: ClassVar[dict[str, Spec]] = dict(COMMON_SPECS)
    #: Hyperparameters searched by ``deepbandits tune``, each inside its parameter's spec.
    search_space: ClassVar[dict[str, Param]] = {}
    #: Whether scoring or learning draws random numbers before a check that may still fail.
    _samples: ClassVar[bool] = False
    #: Whether a batch of requests of one shape is scored and chosen as arrays.
    _vectorised: ClassVar[bool] = False
    #: Whether learning takes an observation weight other than 1 (``update(..., weight=)``).
    _takes_weights: ClassVar[bool] = False
    #: The last reward range passed as a tuple, and its checked value (a tuple never changes).
    _range_seen: tuple[Any, Any] = (None, None)
    _reward_range: tuple[float, float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        CLASSES[cls.__name__] = cls
        cls.param_specs = merge_specs(cls.__mro__)
        check_search_space(cls.__name__, cls.param_specs, cls.search_space)

    def __init__(self, *, parts: dict[str, Any] | None = None, **params: Any) -> None:
        params = {**DECISION_DEFAULTS, **params}
        check_unknown_keys(params, self.param_specs, type(self).__name__)
        self.parts: dict[str, Any] = dict(parts or {})
        self._params = params
        self.recipe_: Builder | None = None
        self._recipe_params: dict[str, Any] = {}
        self._validate()
        self.reset()

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = False) -> dict[str, Any]:
        """The parameters: a registry name's keywords (policies made by
        :func:`~deepbandits.policies.make_policy`), else the constructor's, parts included;
        ``deep`` adds every part's parameters as ``part__param``."""
        params = dict(self._recipe_params) if self.recipe_ else {**self.parts, **self._params}
        if deep:
            for name, part in self.parts.items():
                params.update({f"{name}__{k}": v for k, v in part.get_params().items()})
        return params

    def set_params(self, **params: Any) -> Policy:
        """Change parameters (validated) and :meth:`reset` the policy: keywords, or a part's
        parameter as ``part__param`` (``set_params(head__lam=2.0)``). A value that does not
        validate changes nothing. Like refitting an estimator, the policy forgets what it
        learned."""
        nested = {k: v for k, v in params.items() if "__" in k}
        flat = {k: v for k, v in params.items() if "__" not in k}
        known = self.get_params()
        unknown = sorted(set(flat) - set(known))
        for key in nested:
            if key.split("__", 1)[0] not in self.parts:
                unknown.append(key)
        if unknown:
            raise InputValueError(
                f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                f"parameters: {', '.join(sorted(known))}"
            )
        if flat and self.recipe_ is not None:
            rebuilt = self.recipe_.build({**self._recipe_params, **flat})
            self.parts, self._params = rebuilt.parts, rebuilt._params
            self._recipe_params = rebuilt._recipe_params
            self._check_parts()  # what is derived from them (a schedule, the exploration rule)
        elif flat:
            self._set_own(flat)
        for key, value in nested.items():
            name, param = key.split("__", 1)
            self.parts[name].set_params(**{param: value})
            self._check_parts()
        return self.reset()

    def _set_own(self, params: dict[str, Any]) -> None:
        old = (dict(self._params), dict(self.parts))
        for key, value in params.items():
            (self.parts if key in self.parts else self._params)[key] = value
        try:
            self._validate()
        except BaseException:
            self._params, self.parts = old
            self._validate()
            raise

    def __repr__(self) -> str:
        if self.recipe_ is not None:
            args = ", ".join(f"{k}={v!r}" for k, v in self._recipe_params.items())
            return f"{type(self).__name__}.from_recipe({self.recipe_.name!r}, {args})"
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _validate(self) -> None:
        """Check every keyword against its spec, each part, then the rules between them."""
        p = self._params
        for key, spec in self.param_specs.items():
            p[key] = check_param(key, spec, p[key])
        self._reward_range = p.get("reward_range")
        for part in self.parts.values():
            part.validate()
        self._check_parts()

    def _check_parts(self) -> None:
        """Rules that tie parameters or parts together; raise the library's errors."""
        return None

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int | None = None) -> Policy:
        """Forget everything learned; with ``seed``, also replace the ``seed`` parameter."""
        if seed is not None:
            self._params["seed"] = check_param("seed", self.param_specs["seed"], seed)
            if self.recipe_ is not None:
                self._recipe_params["seed"] = self._params["seed"]
        p = self._params
        self.n_features_in_: int | None = None
        self.block_dim_: int | None = None
        self.t_ = 0
        self.pending_ = PendingDecisions(
            p["reward_timeout"],
            p["timeout_unit"],
            p["max_pending"],
            p["when_full"],
            p["max_pending_bytes"],
        )
        self._rng = np.random.default_rng(p.get("seed"))
        return self

    def initialize(self, contexts: ArrayLike | BlockContexts) -> Policy:
        """Fix the context dimension from ``contexts`` ``[K, d]`` and build the learned state,
        as the first call that decides does (replaying a log of decisions into a fresh policy
        needs it); draws no random number. A policy already initialised only checks that the
        contexts fit. Returns the policy."""
        self._check(contexts)
        return self

    def random_state(self) -> dict[str, Any]:
        """The state of the generator that decisions draw from (ties, ε, sampled indices), as
        plain JSON values (numpy's ``bit_generator.state``): :meth:`set_random_state` of it
        makes the next decisions draw what this policy's would.

        The torch generator of a policy with a network is not included: deciding never draws
        from it, only training does (its weights' draws at the first decision, its
        minibatches), and its state is part of what a training returns and of
        :meth:`state_dict`. Replaying logged decisions therefore needs this state alone.
        """
        return dict(self._rng.bit_generator.state)

    def set_random_state(self, state: dict[str, Any]) -> None:
        """Set the decisions' generator to ``state``, a dict of :meth:`random_state` (from
        this policy, another built alike, or JSON text of one); a state of another kind of
        generator raises :class:`~deepbandits.errors.InputValueError` and changes nothing."""
        kind = self._rng.bit_generator.state["bit_generator"]
        if not isinstance(state, dict) or state.get("bit_generator") != kind:
            given = (
                f"a state of {state.get('bit_generator')!r}"
                if isinstance(state, dict)
                else f"a {type(state).__name__}"
            )
            raise InputValueError(
                f"state must be the random_state() of a policy (a {kind!r} generator's state), "
                f"but {given} is given"
            )
        try:
            self._rng.bit_generator.state = state
        except (TypeError, ValueError, KeyError) as exc:
            raise InputValueError(
                f"state must be the random_state() of a policy, but its {kind!r} state does "
                f"not load: {exc}"
            ) from None

    def prepare_training(self) -> TrainingJob:
        """Step 1 of a deferred network training
        (:mod:`~deepbandits.policies.parts.trainer`): a copy of what the training reads. Only
        policies with a :class:`~deepbandits.policies.parts.trainer.Trainer` part (the neural
        ridge family) defer their trainings; the others raise
        :class:`~deepbandits.errors.InputValueError`."""
        raise self._no_trainer()

    def apply_training(self, version: dict[str, Any]) -> None:
        """Step 3 of a deferred network training: swap in the network version ``version`` of
        :func:`~deepbandits.policies.parts.trainer.run_training` (policies without a trainer
        part raise, as :meth:`prepare_training` does)."""
        raise self._no_trainer()

    def _no_trainer(self) -> InputValueError:
        return InputValueError(
            "a deferred training needs a policy with a trainer part (the neural ridge "
            f"family), but {type(self).__name__} has none"
        )

    def _check(self, contexts: ArrayLike | BlockContexts) -> Contexts:
        X = check_contexts(contexts, self.n_features_in_)
        if isinstance(X, BlockContexts) and not self.block_contexts:
            X = X.dense()
        if self.n_features_in_ is None:
            self.n_features_in_ = X.shape[1]
            self.block_dim_ = X.block_dim if isinstance(X, BlockContexts) else None
            try:
                self._initialize(X)
            except DeepBanditsError:  # contexts the policy cannot take: it stays fresh
                self.n_features_in_ = self.block_dim_ = None
                raise
        return X

    @abstractmethod
    def _initialize(self, X: Contexts) -> None:
        """Build the learned state once the context dimension is known."""

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _evaluate(self, X: Contexts) -> Evaluation:
        """Mean and width of every arm and what choosing and learning need; changes nothing."""

    def _evaluate_many(self, batch: list[Contexts]) -> list[Evaluation]:
        """:meth:`_evaluate` of several rounds with the model as it is."""
        return [self._evaluate(X) for X in batch]

    def _evaluate_uniform(self, X: Array, n_requests: int, n_arms: int) -> Evaluation:
        """One evaluation ``[B, K]`` of ``B`` requests stacked in ``X`` (:attr:`_vectorised`)."""
        raise NotImplementedError

    def _index(self, ev: Evaluation) -> Array:
        """The score maximised over the available arms (may draw random numbers); works on
        ``[K]`` and, for :attr:`_vectorised` policies, ``[B, K]``."""
        return ev.mean

    def _propensity(self, ev: Evaluation, index: Array, arm: int, exact: float) -> float:
        """Probability of playing ``arm``: ``exact`` (the choice rule's, for a deterministic
        index); policies that sample override it."""
        return exact

    def _observe(self, X: Contexts, arm: int, ev: Evaluation | None) -> Observation:
        """What learning from ``arm`` needs, from the evaluation of ``X`` when there is one:
        its context (policies that learn from features add them)."""
        return Observation(arm_context(X, arm))

    @abstractmethod
    def _learn(self, feedback: Feedback) -> Learned:
        """Learn one reward; return what learning did."""

    def _learn_many(self, batch: Sequence[Feedback]) -> Learned:
        """Learn several rewards (in order); the ridge family overrides it with one batched
        update."""
        learned = Learned()
        for feedback in batch:
            learned = self._learn(feedback)
            self.t_ += 1
        return learned

    def _check_learn_many(self, n: int) -> None:
        """Raise, before anything is learned, if ``n`` more rewards cannot all be learned."""
        return None

    def _initial_contexts(self) -> Contexts:
        """Contexts that initialise a fresh policy like this one (loading a checkpoint, merging
        into a fresh one): one zero row, in blocks if the policy was fitted on blocks (a
        convolutional network reads its image shape from the block)."""
        assert self.n_features_in_ is not None
        if self.block_dim_ is not None:
            n_blocks = self.n_features_in_ // self.block_dim_
            return BlockContexts(np.zeros((1, self.block_dim_)), [0], n_blocks)
        return np.zeros((1, self.n_features_in_))

    def _merge(self, other: Policy, base: Policy | None) -> None:
        raise InputValueError(
            f"{type(self).__name__} cannot merge replicas: its learned state is not a sum of "
            "per-round statistics"
        )

    def _state(self) -> dict[str, Any]:
        """Learned state once initialised: the parts' and the policy's own."""
        return {name: part.state_dict() for name, part in self.parts.items()}

    def _load_state(self, state: dict[str, Any]) -> None:
        for name, part in self.parts.items():
            part.load_state_dict(state[name])

    # ------------------------------------------------------------------ the public calls
    # acting (one path per request, one choice rule)
    select = acting.select
    decide = acting.decide
    decide_batch = acting.decide_batch
    predict = acting.predict
    probabilities = acting.probabilities

    # learning (one reward check, one update path)
    update = learning.update
    learn = learning.learn
    learn_batch = learning.learn_batch

    # replicas and checkpoints
    merge = merging.merge
    state_dict = checkpoint.state_dict
    load_state_dict = checkpoint.load_state_dict
    save = checkpoint.save
