"""What every policy is before it acts: its parameters, its parts, its lifecycle and the hooks.

:class:`PolicyCore` holds the parameters (validated against ``param_specs``; as in scikit-learn,
:meth:`~PolicyCore.get_params` returns them as they were given and the learned state has names
ending in ``_``), the parts a composition is built from (their ``state_dict`` is the policy's
learned state) and the hooks a policy class implements. The public calls are methods of the
classes that extend it, one concern each (:mod:`~deepbandits.policies.acting`,
:mod:`~deepbandits.policies.learning`, :mod:`~deepbandits.policies.merging`,
:mod:`~deepbandits.policies.checkpoint`), and :class:`~deepbandits.policies.policy.Policy` is
their union.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._threads import per_round_threads
from deepbandits._validation import check_unknown_keys
from deepbandits.encoding import BlockContexts, Contexts, check_contexts
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, Observation, arm_context
from deepbandits.policies.params import (
    COMMON_SPECS,
    DECISION_DEFAULTS,
    Spec,
    check_param,
    check_search_space,
)
from deepbandits.policies.pending import PendingDecisions
from deepbandits.policies.space import Param

if TYPE_CHECKING:
    from deepbandits.policies.parts.trainer import TrainingJob

Array = NDArray[np.float64]
Call = TypeVar("Call", bound=Callable[..., Any])


def per_round(method: Call) -> Call:
    """Run the public call ``method`` of a policy with its ``threads`` option's torch threads
    (:class:`~deepbandits._threads.per_round_threads`): small per-round products never spin a
    pool of threads against other busy processes."""

    @functools.wraps(method)
    def call(self: PolicyCore, *args: Any, **kwargs: Any) -> Any:
        threads = self._round_threads
        if threads is None:  # numpy only (no pool to spin), or torch's setting left alone
            return method(self, *args, **kwargs)
        with per_round_threads(threads):
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


class PolicyCore(ABC):
    """Parameters, parts, lifecycle and hooks: what the public calls of a policy build on.

    Subclasses implement :meth:`_initialize` (build state once the context dimension is known),
    :meth:`_evaluate` (mean and width per arm), :meth:`_index` (the score maximised),
    :meth:`_observe` (what learning needs of the arm played), :meth:`_learn` and the
    ``_state``/``_load_state`` pair. The learned state a policy shows is listed by
    :class:`~deepbandits.policies.policy.Policy`.
    """

    #: Whether the policy works on BlockContexts directly (the others get the dense matrix).
    block_contexts: ClassVar[bool] = False
    #: The type, range and meaning of every keyword parameter: a class declares its own, and
    #: gets its parents' too; a registry name's class (:mod:`~deepbandits.policies.named`) has
    #: its name's keywords.
    param_specs: ClassVar[dict[str, Spec]] = dict(COMMON_SPECS)
    #: The keywords the constructor of this class chain checks (``param_specs`` but for a
    #: registry name's class, whose keywords become the arguments of the class it extends).
    _own_specs: ClassVar[dict[str, Spec]] = dict(COMMON_SPECS)
    #: Hyperparameters searched by ``deepbandits tune``, each inside its parameter's spec.
    search_space: ClassVar[dict[str, Param]] = {}
    #: The registry name that builds this class as it is (set by the name's recipe,
    #: :mod:`deepbandits.policies.named`); read by :meth:`registry_name`.
    _registry_name: ClassVar[str] = ""
    #: Whether deciding or learning runs torch (a network): the calls that do pin its threads.
    _uses_torch: ClassVar[bool] = False
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
        parent = next(vars(k)["_own_specs"] for k in cls.__mro__[1:] if "_own_specs" in vars(k))
        cls._own_specs = {**parent, **vars(cls).get("param_specs", {})}
        cls.param_specs = cls._own_specs
        check_search_space(cls.__name__, cls.param_specs, cls.search_space)

    def __init__(self, *, parts: dict[str, Any] | None = None, **params: Any) -> None:
        params = {**DECISION_DEFAULTS, **params}
        check_unknown_keys(params, self._own_specs, type(self).__name__)
        self._parts: dict[str, Any] = dict(parts or {})
        self._given = {**self._parts, **params}
        self._params = dict(params)
        self._validate()
        self.reset()

    # ------------------------------------------------------------------ parameters
    @classmethod
    def registry_name(cls) -> str:
        """The registry name that builds this class as it is (``""`` for none: a composition
        built by hand, or a subclass of a registered class)."""
        return str(vars(cls).get("_registry_name", ""))

    @property
    def parts(self) -> dict[str, Any]:
        """The parts the policy is composed of, by role (``features``, ``head``, ...)."""
        return self._parts

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters, as they were given (defaults filled in), as
        scikit-learn's ``get_params``: ``type(p)(**p.get_params(deep=False))`` builds an equal
        policy that has learned nothing (``sklearn.base.clone`` does that). ``deep`` adds every
        part's parameters as ``part__param``."""
        params = dict(self._given)
        if deep:
            for name, part in self._parts.items():
                params.update({f"{name}__{k}": v for k, v in part.get_params().items()})
        return params

    def set_params(self, **params: Any) -> Self:
        """Change parameters (validated) and :meth:`reset` the policy: any key
        :meth:`get_params` returns, a part's parameter as ``part__param``
        (``set_params(head__lam=2.0)``). A value that does not validate changes nothing. Like
        refitting an estimator, the policy forgets what it learned."""
        known = self.get_params()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise InputValueError(
                f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                f"parameters: {', '.join(sorted(known))}"
            )
        flat = {k: v for k, v in params.items() if "__" not in k}
        rebuilt = type(self)(**{**self._given, **flat})  # a value that does not fit raises here
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            if "__" in key:
                name, param = key.split("__", 1)
                nested.setdefault(name, {})[param] = value
        done: list[tuple[Any, dict[str, Any]]] = []
        try:
            for name, values in nested.items():
                part = rebuilt._parts[name]
                before = part.get_params()
                part.set_params(**values)
                done.append((part, {k: before[k] for k in values}))
            rebuilt._check_parts()
        except BaseException:
            for part, before in reversed(done):
                part.set_params(**before)
            raise
        self.__dict__.clear()
        self.__dict__.update(rebuilt.__dict__)
        return self

    def __repr__(self) -> str:
        defaults = self._defaults()
        args = ", ".join(
            f"{k}={v!r}" for k, v in self.get_params(deep=False).items() if _differs(v, defaults, k)
        )
        return f"{type(self).__name__}({args})"

    def _defaults(self) -> dict[str, Any]:
        """The parameters of this class built with no argument (what :meth:`__repr__` leaves
        out)."""
        return type(self)().get_params(deep=False)

    def _validate(self) -> None:
        """Check every keyword against its spec, each part, then the rules between them."""
        p = self._params
        for key, spec in self._own_specs.items():
            p[key] = check_param(key, spec, p[key])
        self._reward_range = p.get("reward_range")
        for part in self._parts.values():
            part.validate()
        self._check_parts()
        self._round_threads: int | None = p["threads"] if self._uses_torch else None

    def _check_parts(self) -> None:
        """Rules that tie parameters or parts together; raise the library's errors."""
        return None

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int | None = None) -> Self:
        """Forget everything learned; with ``seed``, also replace the ``seed`` parameter."""
        if seed is not None:
            self._params["seed"] = check_param("seed", self._own_specs["seed"], seed)
            self._given["seed"] = seed
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

    def initialize(self, contexts: ArrayLike | BlockContexts) -> Self:
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
        :meth:`~deepbandits.policies.Policy.state_dict`. Replaying logged decisions therefore
        needs this state alone.
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

    #: Whether an index that samples has a closed-form distribution (:meth:`_distribution`).
    _closed_form: ClassVar[bool] = False

    def _distribution(self, ev: Evaluation) -> Array:
        """Every arm's probability ``[K]`` of one request's evaluation (with its ``mask``)
        under a sampling index of closed form (:attr:`_closed_form`), ε included."""
        raise NotImplementedError

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

    def _merge(self, other: PolicyCore, base: PolicyCore | None) -> None:
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


def _differs(value: Any, defaults: dict[str, Any], key: str) -> bool:
    """Whether a parameter's value is not its default (parts always show)."""
    if key not in defaults or defaults[key] is None:
        return value is not None
    try:
        return bool(value != defaults[key])
    except (TypeError, ValueError):  # arrays and the like
        return True
