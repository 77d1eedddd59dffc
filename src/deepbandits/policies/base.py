"""The interface every policy implements, and what they all share.

A policy is built from keyword parameters (stored unchanged, returned by :meth:`Policy.get_params`)
and learns through :meth:`Policy.update`. Its learned state is a ``state_dict`` of arrays and plain
values; :meth:`Policy.save` writes it with ``torch.save`` and :func:`load_policy` reads it back with
``torch.load(weights_only=True)``, so loading a file never executes code.
"""

from __future__ import annotations

import io
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from deepbandits._io import write_atomic
from deepbandits._validation import (
    MAX_ABS_INPUT,
    check_arm,
    check_finite_scalar,
    check_positive,
    check_reward_range,
    check_unknown_keys,
)
from deepbandits.encoding import BlockContexts, Contexts, as_real_array, check_contexts
from deepbandits.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    DecisionError,
    DeepBanditsError,
    InputTypeError,
    InputValueError,
    NumericalError,
)
from deepbandits.policies.checkpoint import (
    FORMAT_VERSION,
    check_checkpoint,
    jsonable,
    read_checkpoint,
    to_saveable,
)
from deepbandits.policies.decision import (
    Decision,
    FrozenDict,
    PendingDecisions,
    check_mask,
    freeze,
    greedy_propensities,
    top_arms,
)
from deepbandits.policies.params import (
    DECISION_DEFAULTS,
    DECISION_SPECS,
    SEED_SPEC,
    Spec,
    check_param,
    check_search_space,
    merge_specs,
)
from deepbandits.policies.space import Param

_CLASSES: dict[str, type[Policy]] = {}
Array = NDArray[np.float64]


@dataclass
class Evaluation:
    """What a policy computes of one round's contexts before choosing (no randomness, no state
    change): every arm's mean and width as :meth:`Policy.predict` returns them, the features
    its head scored, each row's head, and policy-specific values. ``shown`` replaces
    ``(mean, width)`` in the decision when the choice was made on other numbers (the member
    BootstrappedNN drew, SAVE's layer); ``mask`` is the request's mask when it is chosen."""

    mean: Array
    width: Array
    features: Array | None = None
    heads: NDArray[np.int64] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    shown: tuple[Array, Array] | None = None
    mask: NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class Observation:
    """What learning from one round needs: the arm's context, the features the head saw (None
    when the policy learns from the context), its head and policy-specific values."""

    context: Any
    features: Array | None = None
    head: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


#: What learning reads of a round: an :class:`Observation` or the pending :class:`Decision`
#: itself (both have ``context``, ``features``, ``head`` and ``extra``).
Observed = Observation | Decision


def context_rows(context: Any) -> Contexts:
    """A decision's context as a one-row matrix (what a network or a kernel takes)."""
    return context if isinstance(context, BlockContexts) else context[None]


def arm_context(X: Contexts, arm: int) -> Any:
    """The context of ``arm``, detached from the caller's array (a decision keeps it)."""
    context = X[arm]
    return context.copy() if isinstance(context, np.ndarray) else context


class Policy(ABC):
    """Base class of all bandit policies.

    The acting API is :meth:`decide` (a :class:`~deepbandits.policies.decision.Decision`, kept
    pending by id until :meth:`learn` gets its reward), with :meth:`decide_batch` and
    :meth:`learn_batch` for many requests at once, and :meth:`select` / :meth:`update` as the
    synchronous shortcut (choose; learn from the contexts just shown).

    Subclasses implement :meth:`_initialize` (build state once the context dimension is known),
    :meth:`_evaluate` (mean and width per arm, and the features scored), :meth:`_index` (the
    score maximised), :meth:`_observe` (what learning needs of the arm played), :meth:`_learn`
    and the ``_state``/``_load_state`` pair.

    Every public call is all or nothing: its inputs are validated before any state changes, and a
    call that raises leaves the policy as it was (parameters, learned statistics, context
    dimension, random generator, diagnostics). Subclasses keep that promise by raising only
    before they change learned state.

    Attributes
    ----------
    n_features_in_ : int or None
        Context dimension, inferred from the first contexts seen.
    t_ : int
        Number of rounds learned from.
    pending_ : PendingDecisions
        Decisions awaiting their reward (:mod:`deepbandits.policies.decision`).
    last_update_ : dict
        Diagnostics of the last :meth:`update`: ``sigma2`` (σ̄² used as weight), ``sigma2_hat``
        (the Eq. 13 estimate, NaN when not estimated) and ``train_seconds``.
    """

    #: Whether the policy works on :class:`~deepbandits.encoding.BlockContexts` directly; the
    #: others receive the dense matrix they stand for.
    block_contexts: ClassVar[bool] = False
    #: The type, range and meaning of every constructor parameter
    #: (:mod:`deepbandits.policies.params`). A class declares its own; once the class is defined
    #: this holds the specs of its whole hierarchy, with a preset's forbidden options removed.
    param_specs: ClassVar[dict[str, Spec]] = {"seed": SEED_SPEC, **DECISION_SPECS}
    #: Hyperparameters searched by ``deepbandits tune`` (:mod:`deepbandits.policies.space`),
    #: each inside its parameter's spec.
    search_space: ClassVar[dict[str, Param]] = {}
    #: Whether scoring or learning draws random numbers before a check that may still fail
    #: (Thompson draws before the NaN check, bootstrap resampling): the generator is then part
    #: of what a failing call restores.
    _samples: ClassVar[bool] = False
    #: Whether a batch of requests of one shape is scored and chosen as arrays
    #: (:meth:`_evaluate_uniform`, :meth:`_index_uniform`) rather than request by request.
    _vectorised: ClassVar[bool] = False
    #: The last reward range passed as a tuple, and its checked value (a tuple never changes).
    _range_seen: tuple[Any, Any] = (None, None)
    #: The reward range a reward must lie in (set from a ``reward_range`` parameter), if any.
    _reward_range: tuple[float, float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _CLASSES[cls.__name__] = cls
        specs = merge_specs(cls.__mro__)
        for key, value in getattr(cls, "forbidden_params", {}).items():
            spec = specs[key]
            if spec.kind == "choice":
                specs[key] = replace(spec, choices=tuple(c for c in spec.choices if c != value))
        cls.param_specs = specs
        check_search_space(cls.__name__, specs, cls.search_space)

    def __init__(self, **params: Any) -> None:
        params = {**DECISION_DEFAULTS, **params}
        check_unknown_keys(params, self.param_specs, type(self).__name__)
        self._params = params
        self._validate()
        self.reset()

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """The constructor parameters, as given (with the subclass's fixed presets)."""
        return dict(self._params)

    def set_params(self, **params: Any) -> Policy:
        """Change constructor parameters (validated) and :meth:`reset` the policy.

        Only existing parameters may be set; like refitting an estimator after changing its
        parameters, the policy forgets what it learned.
        """
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            raise InputValueError(
                f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                f"parameters: {', '.join(sorted(self._params))}"
            )
        old = dict(self._params)
        self._params.update(params)
        try:
            self._validate()
        except Exception:
            self._params = old
            self._validate()
            raise
        return self.reset()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"

    def _validate(self) -> None:
        """Check every parameter against its spec, then the rules that tie them together."""
        p = self._params
        for key, spec in self.param_specs.items():
            p[key] = check_param(key, spec, p[key])
        self._reward_range = p.get("reward_range")
        self._validate_params()

    def _validate_params(self) -> None:
        """Check the rules between parameters (each one alone is checked by its spec), and
        build what they define; raise the library's errors naming the parameters."""
        return None

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int | None = None) -> Policy:
        """Forget everything learned; with ``seed``, also replace the ``seed`` parameter."""
        if seed is not None:
            self._params["seed"] = check_param("seed", self.param_specs["seed"], seed)
        p = self._params
        self.n_features_in_: int | None = None
        self.t_ = 0
        self.last_update_: dict[str, float] = {}
        self.pending_ = PendingDecisions(
            p["reward_timeout"], p["timeout_unit"], p["max_pending"], p["when_full"]
        )
        self._rng = np.random.default_rng(p.get("seed"))
        return self

    def _snapshot(self, rng: bool = False) -> tuple[Any, ...]:
        """What a failing call may have changed before it raised: the dimension fixed by a first
        call, the round counter, the diagnostics and, for policies that sample before they can
        fail (:attr:`_samples`) or with ``rng`` (a batch, whose later requests may fail after
        earlier ones drew), the generator's state. Learned statistics are never touched
        before a call's inputs are validated, so they need no snapshot;
        ``tests/test_robustness.py`` checks the whole ``state_dict``."""
        state = self._rng.bit_generator.state if rng or self._samples else None
        return (self.n_features_in_, self.t_, self.last_update_, state)

    def _restore(self, kept: tuple[Any, ...]) -> None:
        """Undo a failing call: put back what :meth:`_snapshot` recorded."""
        (self.n_features_in_, self.t_, self.last_update_, rng) = kept
        if rng is not None:
            self._rng.bit_generator.state = rng

    def _check(self, contexts: ArrayLike | BlockContexts) -> Contexts:
        X = check_contexts(contexts, self.n_features_in_)
        if isinstance(X, BlockContexts) and not self.block_contexts:
            X = X.dense()
        if self.n_features_in_ is None:
            self.n_features_in_ = X.shape[1]
            self._initialize(X)
        return X

    @abstractmethod
    def _initialize(self, X: Contexts) -> None:
        """Build the learned state once the context dimension is known."""

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _evaluate(self, X: Contexts) -> Evaluation:
        """Mean and width of every arm and what choosing and learning need; changes nothing."""

    def _evaluate_many(self, batch: list[Contexts]) -> list[Evaluation]:
        """:meth:`_evaluate` of several rounds with the model as it is (policies with a network
        override it to make one forward pass)."""
        return [self._evaluate(X) for X in batch]

    def _index(self, ev: Evaluation, X: Contexts) -> Array:
        """The score maximised over the available arms (may draw random numbers)."""
        return ev.mean

    def _propensity(
        self, ev: Evaluation, index: Array, mask: NDArray[np.bool_] | None, arm: int
    ) -> float:
        """Probability of playing ``arm``: exact for a deterministic index with uniform
        tie-breaking and the exploration floor (policies that sample override it)."""
        if mask is None and self._params["epsilon"] == 0.0 and ev.extra.get("ties") == 1:
            return 1.0
        return float(greedy_propensities(index, mask, self._params["epsilon"])[arm])

    @abstractmethod
    def _observe(self, X: Contexts, arm: int, ev: Evaluation | None) -> Observation:
        """What learning from ``arm`` needs, from the evaluation of ``X`` when there is one."""

    @abstractmethod
    def _learn(
        self,
        obs: Observed,
        reward: float,
        sigma2: float | None,
        reward_range: tuple[float, float] | None,
    ) -> None: ...

    def _learn_many(
        self,
        observations: Sequence[Observed],
        rewards: list[float],
        sigma2: list[float | None],
        ranges: list[tuple[float, float] | None],
    ) -> None:
        """Learn several rewards (in order); policies with a ridge head override it with one
        batched update."""
        for obs, reward, s2, bounds in zip(observations, rewards, sigma2, ranges, strict=True):
            self._learn_one(obs, reward, s2, bounds)

    def _check_learn_many(self, n: int) -> None:
        """Raise, before anything is learned, if ``n`` more rewards cannot all be learned (a
        policy with a bounded memory that refuses to forget)."""
        return None

    def _learn_one(
        self,
        obs: Observed,
        reward: float,
        sigma2: float | None,
        bounds: tuple[float, float] | None,
    ) -> None:
        self.last_update_ = {"sigma2": 1.0, "sigma2_hat": float("nan"), "train_seconds": 0.0}
        self._learn(obs, reward, sigma2, bounds)
        self.t_ += 1

    # ------------------------------------------------------------------ acting
    def _choose(
        self, X: Contexts, ev: Evaluation, mask: NDArray[np.bool_] | None, propensity: bool
    ) -> tuple[int, float]:
        """The arm played (uniform among the top available ones, or with probability ε any
        available one) and, if asked, its probability."""
        ev.mask = mask
        index = self._index(ev, X)
        ties = top_arms(index, mask)
        if ties is None:
            raise NumericalError(
                f"{type(self).__name__} scored an arm NaN; its state is not finite (contexts "
                "or rewards too large for its settings?)"
            )
        ev.extra["ties"] = len(ties)
        epsilon = self._params["epsilon"]
        if epsilon > 0.0 and self._rng.random() < epsilon:
            available = np.arange(len(index)) if mask is None else np.flatnonzero(mask)
            arm = int(self._rng.choice(available))
        else:
            arm = int(ties[0] if len(ties) == 1 else self._rng.choice(ties))
        return arm, self._propensity(ev, index, mask, arm) if propensity else float("nan")

    def select(self, contexts: ArrayLike, mask: ArrayLike | None = None) -> int:
        """Index of the arm to play among the rows of ``contexts`` ``[K_t, d]`` (the synchronous
        shortcut of :meth:`decide`: nothing is kept pending; learn with :meth:`update`).

        Ties are broken uniformly at random by the policy's own seeded generator; ``mask``
        (booleans ``[K_t]``) leaves out the arms that are not available.
        """
        kept = self._snapshot()
        try:
            X = self._check(contexts)
            mask = check_mask(mask, X.shape[0])
            return self._choose(X, self._evaluate(X), mask, propensity=False)[0]
        except BaseException:
            self._restore(kept)
            raise

    def decide(
        self, contexts: ArrayLike | BlockContexts, mask: ArrayLike | None = None
    ) -> Decision:
        """Choose an arm among the rows of ``contexts`` ``[K_t, d]`` and return the decision.

        The decision (:class:`~deepbandits.policies.decision.Decision`) carries its id, the arm,
        its propensity, every arm's mean and width, the model version and what learning needs;
        the policy keeps it pending until :meth:`learn` gets its reward (by the decision or its
        id), it expires (``reward_timeout``) or the table is full (``max_pending``,
        ``when_full``). ``mask`` (booleans ``[K_t]``) leaves out unavailable arms: they are
        never chosen and have propensity 0; a mask with no arm raises.
        """
        kept = self._snapshot()
        now = time.time()
        try:
            X = self._check(contexts)
            checked = None if mask is None else check_mask(mask, X.shape[0])
            self.pending_.check_room(1, now)
            ev = self._evaluate(X)
            arm, propensity = self._choose(X, ev, checked, propensity=True)
            obs = self._observe(X, arm, ev)
        except BaseException:
            self._restore(kept)
            raise
        decision = self._record(ev, checked, arm, propensity, obs, self.pending_.next_id(), now)
        self.pending_.expire(decision.round, now)
        return decision

    def _record(
        self,
        ev: Evaluation,
        mask: NDArray[np.bool_] | None,
        arm: int,
        propensity: float,
        obs: Observation,
        decision_id: str,
        now: float,
    ) -> Decision:
        """Build a decision and keep it pending."""
        mean, width = ev.shown if ev.shown is not None else (ev.mean, ev.width)
        freeze(mean, width, mask, obs.context, obs.features)
        extra = obs.extra if isinstance(obs.extra, FrozenDict) else FrozenDict(obs.extra)
        decision = Decision(
            decision_id,
            arm,
            propensity,
            mean,
            width,
            self.t_,
            self.pending_.n_decided,
            now,
            mask,
            obs.context,
            obs.features,
            obs.head,
            extra,
        )
        self.pending_.add(decision)
        return decision

    def decide_batch(
        self,
        contexts: ArrayLike | Sequence[ArrayLike | BlockContexts],
        masks: ArrayLike | Sequence[ArrayLike | None] | None = None,
    ) -> list[Decision]:
        """Decide ``B`` requests at once: ``contexts`` is an array ``[B, K, d]`` or a list of
        ``B`` context matrices, each with its own number of arms; ``masks`` is None, an array
        ``[B, K]`` or a list of masks (None for no mask).

        All ``B`` decisions use the model as it is at the call (no reward learned in between):
        the features of every request come from one network forward pass and the scores from
        one batched ridge evaluation. Random draws (ties, ε, samples) follow request order.
        """
        if isinstance(contexts, np.ndarray):
            if contexts.ndim != 3:
                raise InputValueError(
                    "contexts must be an array [B, K, d] or a list of [K, d] matrices, but "
                    f"an array of shape {contexts.shape} is given"
                )
            batch: list[Any] = list(contexts)
        elif isinstance(contexts, list | tuple):
            batch = list(contexts)
        else:
            raise InputTypeError(
                "contexts must be an array [B, K, d] or a list of context matrices, but a "
                f"{type(contexts).__name__} is given"
            )
        if not batch:
            raise InputValueError("decide_batch needs at least one request, but 0 are given")
        if masks is not None:
            masks = list(masks)
            if len(masks) != len(batch):
                raise InputValueError(
                    f"masks must have one entry per request ({len(batch)}), but {len(masks)} "
                    "are given"
                )
        if (
            self._vectorised
            and len(batch) > 1
            and all(isinstance(X, np.ndarray) for X in batch)
            and len({X.shape for X in batch}) == 1
            and batch[0].ndim == 2
        ):
            return self._decide_uniform(
                contexts if isinstance(contexts, np.ndarray) else np.stack(batch), masks
            )
        return self._decide(batch, masks)

    def _evaluate_uniform(
        self, X: Array, n_requests: int, n_arms: int
    ) -> tuple[Array, Array, Array | None, NDArray[np.int64] | None]:
        """Means and widths ``[B, K]`` of ``B`` requests of ``K`` arms whose rows are stacked in
        ``X`` ``[B·K, d]``, with the features and heads of every row (policies with
        :attr:`_vectorised`)."""
        raise NotImplementedError

    def _index_uniform(self, mean: Array, width: Array, n_arms: int) -> Array:
        """The index ``[B, K]`` of a uniform batch (policies with :attr:`_vectorised`)."""
        raise NotImplementedError

    def _decide_uniform(self, X3: Any, masks: list[Any] | None) -> list[Decision]:
        """:meth:`decide_batch` for ``B`` requests of the same shape ``[K, d]``, as arrays: the
        same rule as :meth:`_choose` (uniform ties, ε), with random draws in request order
        only where a request has ties or ε > 0."""
        kept = self._snapshot(rng=True)
        now = time.time()
        try:
            B, K, d = X3.shape
            flat = self._check(np.asarray(X3).reshape(B * K, d))
            if masks is None:
                M = None
            else:
                checked = [check_mask(m, K) for m in masks]
                M = np.stack([np.ones(K, dtype=bool) if m is None else m for m in checked])
            self.pending_.check_room(B, now)
            mean, width, phi, heads = self._evaluate_uniform(flat, B, K)
            index = self._index_uniform(mean, width, K)
            scores = index if M is None else np.where(M, index, -np.inf)
            top = scores.max(axis=1)
            if np.isnan(top).any():
                raise NumericalError(
                    f"{type(self).__name__} scored an arm NaN; its state is not finite (contexts "
                    "or rewards too large for its settings?)"
                )
            is_top = scores == top[:, None]
            if M is not None:
                is_top &= M
            n_ties = is_top.sum(axis=1)
            arms = is_top.argmax(axis=1)
            epsilon = self._params["epsilon"]
            n_available = np.full(B, K) if M is None else M.sum(axis=1)
            if epsilon > 0.0 or (n_ties > 1).any():
                for i in range(B):  # draws in request order, as _choose makes them
                    if epsilon > 0.0 and self._rng.random() < epsilon:
                        available = np.arange(K) if M is None else np.flatnonzero(M[i])
                        arms[i] = self._rng.choice(available)
                    elif n_ties[i] > 1:
                        arms[i] = self._rng.choice(np.flatnonzero(is_top[i]))
            rows = np.arange(B)
            propensity = (1.0 - epsilon) * is_top[rows, arms] / n_ties + epsilon / n_available
        except BaseException:
            self._restore(kept)
            raise
        contexts = X3[rows, arms].astype(np.float64)  # a copy: the caller's array stays theirs
        features = None if phi is None else phi.reshape(B, K, -1)[rows, arms]
        chosen_heads = (
            np.zeros(B, dtype=np.int64) if heads is None else heads.reshape(B, K)[rows, arms]
        )
        freeze(mean, width, contexts, features, M)
        t, first = self.t_, self.pending_.n_decided
        ids = self.pending_.next_ids(B)
        arm_list, p_list, head_list = arms.tolist(), propensity.tolist(), chosen_heads.tolist()
        decisions = [
            Decision(
                ids[i],
                arm_list[i],
                p_list[i],
                mean[i],
                width[i],
                t,
                first + i,
                now,
                None if M is None or checked[i] is None else M[i],
                contexts[i],
                None if features is None else features[i],
                head_list[i],
            )
            for i in range(B)
        ]
        for decision in decisions:
            self.pending_.add(decision)
        self.pending_.expire(self.pending_.n_decided - 1, now)
        return decisions

    def _decide(self, batch: list[Any], masks: list[Any] | None) -> list[Decision]:
        kept = self._snapshot(rng=True)
        now = time.time()
        try:
            Xs = [self._check(X) for X in batch]
            checked = [
                check_mask(None if masks is None else masks[i], X.shape[0])
                for i, X in enumerate(Xs)
            ]
            self.pending_.check_room(len(Xs), now)
            evs = self._evaluate_many(Xs)
            for i, ev in enumerate(evs):
                ev.extra["round"] = self.pending_.n_decided + i
            chosen = [
                self._choose(X, ev, mask, propensity=True)
                for X, ev, mask in zip(Xs, evs, checked, strict=True)
            ]
            observed = [
                self._observe(X, arm, ev) for X, ev, (arm, _) in zip(Xs, evs, chosen, strict=True)
            ]
        except BaseException:
            self._restore(kept)
            raise
        ids = self.pending_.next_ids(len(Xs))
        decisions = [
            self._record(ev, mask, arm, propensity, obs, ids[i], now)
            for i, (ev, mask, (arm, propensity), obs) in enumerate(
                zip(evs, checked, chosen, observed, strict=True)
            )
        ]
        self.pending_.expire(self.pending_.n_decided - 1, now)
        return decisions

    def predict(self, contexts: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Estimated mean reward and exploration width of every arm, each of shape ``[K_t]``.

        The width is the posterior standard deviation of the mean that the policy's UCB index
        multiplies by α (‖φ‖_{A⁻¹} for the ridge policies, ‖g/√m‖_{Z⁻¹} for NeuralUCB/TS, the
        ensemble's spread for BootstrappedNN). Predicting changes no learned state (a first call
        fixes the context dimension, as every call does), no pending decision, and draws no random
        numbers.
        """
        kept = self._snapshot()
        try:
            ev = self._evaluate(self._check(contexts))
            return ev.mean, ev.width
        except BaseException:
            self._restore(kept)
            raise

    def _check_reward(
        self,
        reward: Any,
        sigma2: Any,
        reward_range: Any,
    ) -> tuple[float, float | None, tuple[float, float] | None]:
        """Validated reward, oracle σ² and the reward range in force (the round's, else the
        policy's); a reward outside that range is refused."""
        if not (type(reward) is float and -MAX_ABS_INPUT <= reward <= MAX_ABS_INPUT):
            reward = check_finite_scalar(reward, "reward", bound=MAX_ABS_INPUT)
        if sigma2 is not None:
            sigma2 = check_positive(sigma2, "sigma2", allow_zero=True, bound=MAX_ABS_INPUT)
        if reward_range is None:
            bounds = self._reward_range
        elif type(reward_range) is tuple and reward_range is self._range_seen[0]:
            bounds = self._range_seen[1]  # the same (immutable) tuple as last time: checked
        else:
            bounds = check_reward_range(reward_range)
            if type(reward_range) is tuple:
                self._range_seen = (reward_range, bounds)
        if bounds is not None and not bounds[0] <= reward <= bounds[1]:
            raise InputValueError(
                f"reward {reward} is outside the reward range [{bounds[0]}, {bounds[1]}]"
            )
        return reward, sigma2, bounds

    def _check_rewards(
        self, rewards: list[Any], ranges: list[Any]
    ) -> tuple[list[float], list[tuple[float, float] | None]]:
        """Rewards of a batch and their ranges (each round's, or the policy's where None),
        checked as arrays: finite, bounded, a < b, each reward in its range. On a bad entry
        the one-reward check raises, naming it."""
        values = as_real_array(rewards, "rewards")
        n = len(values)
        given = [i for i, r in enumerate(ranges) if r is not None]
        low = np.full(n, -np.inf if self._reward_range is None else self._reward_range[0])
        high = np.full(n, np.inf if self._reward_range is None else self._reward_range[1])
        if given:
            pairs = as_real_array([ranges[i] for i in given], "reward_ranges")
            if pairs.shape != (len(given), 2) or not (
                (np.abs(pairs) <= MAX_ABS_INPUT).all() and (pairs[:, 0] < pairs[:, 1]).all()
            ):
                for i in given:
                    check_reward_range(ranges[i])  # raises, naming the bad one
            low[given], high[given] = pairs[:, 0], pairs[:, 1]
        bad = ~(np.abs(values) <= MAX_ABS_INPUT) | (values < low) | (values > high)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self._check_reward(rewards[i], None, ranges[i])  # raises, naming what is wrong
        bounds = [
            self._reward_range if r is None else (float(a), float(b))
            for r, a, b in zip(ranges, low.tolist(), high.tolist(), strict=True)
        ]
        return values.tolist(), bounds

    def update(
        self,
        contexts: ArrayLike,
        arm: int,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        """Learn from the round just played (the synchronous shortcut of :meth:`learn`).

        Parameters
        ----------
        contexts : array of shape [K_t, d]
            The contexts the arm was chosen from; the features are computed from them with the
            model as it is now.
        arm : int
            Index of the arm played.
        reward : float
            Observed reward.
        sigma2 : float, optional
            Oracle bound on this round's noise variance, when the caller has one.
        reward_range : (a, b), optional
            This round's reward range; overrides the policy's ``reward_range`` (dynamic ranges,
            Fig. ab_dynamic (b)). A reward outside the range in force is refused.
        """
        kept = self._snapshot()
        try:
            X = self._check(contexts)
            arm = check_arm(arm, X.shape[0])
            checked = self._check_reward(reward, sigma2, reward_range)
            self._learn_one(self._observe(X, arm, None), *checked)
        except BaseException:
            self._restore(kept)
            raise

    def learn(
        self,
        decision: Decision | str,
        reward: float,
        *,
        sigma2: float | None = None,
        reward_range: tuple[float, float] | None = None,
    ) -> dict[str, float]:
        """Learn the reward of a pending decision (given as the Decision or its id).

        The update uses what the policy saw when it decided (the decision's context and
        features), whatever it has learned since. A decision takes one reward: a second one, or a
        reward for an expired or unknown decision, raises
        :class:`~deepbandits.errors.DecisionError` and changes nothing. ``sigma2`` and
        ``reward_range`` are as in :meth:`update`. Returns the update's diagnostics
        (:attr:`last_update_`).
        """
        now = time.time()
        latest = self.pending_.n_decided - 1
        found = self.pending_.lookup(decision, latest, now)
        checked = self._check_reward(reward, sigma2, reward_range)
        kept = self._snapshot()
        try:
            self._learn_one(found, *checked)
        except BaseException:
            self._restore(kept)
            raise
        self.pending_.pop(found.id)
        self.pending_.expire(latest, now)
        return dict(self.last_update_)

    def learn_batch(
        self,
        decisions: Sequence[Decision | str],
        rewards: ArrayLike,
        *,
        sigma2: Sequence[float | None] | None = None,
        reward_ranges: Sequence[tuple[float, float] | None] | None = None,
    ) -> None:
        """Learn the rewards of several pending decisions at once, in the order given.

        Every decision and reward is checked before anything is learned (a call that raises
        changes nothing); an empty batch learns nothing. The ridge family (LinUCB to
        Neural-σ²-LinUCB) adds the whole batch to its head by one batched update, with the
        observation weights (σ̂² of Eq. 13) computed from θ as it is at the call and the
        discounts (``discount``) applied at their rounds; its network trains at most once, at
        the end, if its schedule has a training within the batch. The other policies learn the
        rewards one by one, in order (their networks train at the scheduled rounds).
        """
        if not isinstance(decisions, Sequence) or isinstance(decisions, str):
            raise InputTypeError(
                f"decisions must be a list of Decisions or ids, but a {type(decisions).__name__}"
                " is given"
            )
        decisions = list(decisions)
        n = len(decisions)
        reward_array = np.asarray(rewards, dtype=object)
        if reward_array.shape != (n,):
            raise InputValueError(
                f"rewards must have shape ({n},), one per decision, but shape "
                f"{reward_array.shape} is given"
            )
        rewards_list = list(reward_array)
        for name, values in (("sigma2", sigma2), ("reward_ranges", reward_ranges)):
            if values is not None and (
                not isinstance(values, Sequence | np.ndarray) or isinstance(values, str)
            ):
                raise InputTypeError(
                    f"{name} must be a list with one entry per decision (or None), but "
                    f"{values!r} is given"
                )
        s2 = [None] * n if sigma2 is None else list(sigma2)
        ranges = [None] * n if reward_ranges is None else list(reward_ranges)
        if len(s2) != n or len(ranges) != n:
            raise InputValueError(
                f"sigma2 and reward_ranges must have one entry per decision ({n}), but "
                f"{len(s2)} and {len(ranges)} are given"
            )
        if n == 0:
            return
        now = time.time()
        latest = self.pending_.n_decided - 1
        found = [self.pending_.lookup(d, latest, now) for d in decisions]
        ids = [d.id for d in found]
        if len(set(ids)) != n:
            twice = next(i for i in ids if ids.count(i) > 1)
            raise DecisionError(f"decision {twice} appears twice: a decision takes one reward")
        if sigma2 is None and all(r is None or not isinstance(r, str) for r in ranges):
            values, bounds = self._check_rewards(rewards_list, ranges)
        else:
            checked = [
                self._check_reward(r, v, b)
                for r, v, b in zip(rewards_list, s2, ranges, strict=True)
            ]
            values = [c[0] for c in checked]
            s2 = [c[1] for c in checked]
            bounds = [c[2] for c in checked]
        self._check_learn_many(n)
        kept = self._snapshot()
        try:
            self._learn_many(found, values, s2, bounds)
        except BaseException:
            self._restore(kept)
            raise
        for decision_id in ids:
            self.pending_.pop(decision_id)
        self.pending_.expire(latest, now)

    def merge(self, other: Policy, base: Policy | None = None) -> Policy:
        """Add what another replica learned to this policy, and return this policy.

        Ridge statistics are sums: a replica's observations are ``A − λI`` and ``b`` (those
        since ``base``, the state both replicas started from, when given), so two replicas that
        each learned part of a stream and are merged equal one policy that learned it all. The
        replicas must be the same class with the same parameters and see the same features
        (the same network weights for the neural-linear family; its head is merged, its
        training history extended). Policies whose statistics are not sums refuse.
        """
        for name, replica in (("other", other), ("base", base)):
            if replica is not None and type(replica) is not type(self):
                raise InputTypeError(
                    f"merge needs {name} to be a {type(self).__name__}, but a "
                    f"{type(replica).__name__} is given"
                )
        mine = {k: v for k, v in self._params.items() if k not in ("seed", "device")}
        for name, replica in (("other", other), ("base", base)):
            if replica is None:
                continue
            theirs = {k: v for k, v in replica._params.items() if k not in ("seed", "device")}
            if mine != theirs:
                differ = sorted(k for k in mine if mine[k] != theirs.get(k))
                raise InputValueError(
                    f"merge needs replicas with the same parameters; {name}'s "
                    f"{', '.join(differ)} differ"
                )
        if other.n_features_in_ is None:
            return self
        since = base if base is not None and base.n_features_in_ is not None else None
        for name, dim in (
            ("this policy", self.n_features_in_),
            ("base", getattr(since, "n_features_in_", None)),
        ):
            if dim is not None and dim != other.n_features_in_:
                raise InputValueError(
                    f"merge needs replicas of the same context dimension, but other has "
                    f"{other.n_features_in_} and {name} {dim}"
                )
        if since is not None and not since.t_ <= min(other.t_, self.t_):
            raise InputValueError(
                f"base has learned {since.t_} rewards, more than other ({other.t_}) or this "
                f"policy ({self.t_}): it must be the state both replicas started from"
            )
        before = dict(self.__dict__)
        try:
            if self.n_features_in_ is None:
                self._check(other._initial_contexts())
            self._merge(other, since)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
        self.t_ += other.t_ - (since.t_ if since is not None else 0)
        return self

    def _initial_contexts(self) -> Contexts:
        """Contexts that initialise a fresh policy like this one (merging into a fresh policy)."""
        assert self.n_features_in_ is not None
        return np.zeros((1, self.n_features_in_))

    def _merge(self, other: Policy, base: Policy | None) -> None:
        raise InputValueError(
            f"{type(self).__name__} cannot merge replicas: its learned state is not a sum of "
            "per-round statistics"
        )

    # ------------------------------------------------------------------ state
    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """Learned state (arrays and plain values) once initialised."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this policy is."""
        return {
            "format": FORMAT_VERSION,
            "class": type(self).__name__,
            "params": json.dumps(jsonable(self._params)),
            "rng": json.dumps(self._rng.bit_generator.state),
            "t": self.t_,
            "n_features_in": self.n_features_in_,
            "state": self._state() if self.n_features_in_ is not None else {},
            "pending": self.pending_.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict` of a policy with the same parameters.

        The state is checked against its schema (format version, class, parameter names and
        values, round counter, generator state) and the saved parameters against this policy's
        (``device`` may differ); anything that does not fit raises
        :class:`~deepbandits.errors.CheckpointError` and leaves this policy as it was.
        """
        check_checkpoint(state)
        here = type(self).__name__
        if state["class"] != here:
            raise CheckpointError(
                f"state was saved from {state['class']!r}, cannot load into {here}"
            )
        mine = json.loads(json.dumps(jsonable(self._params)))
        # a parameter added since the state was saved takes its default (older files load)
        defaults = json.loads(json.dumps(jsonable(type(self)().get_params())))
        saved = {**{k: v for k, v in defaults.items() if k in mine}, **json.loads(state["params"])}
        differ = sorted(
            k for k in set(saved) | set(mine) if k != "device" and saved.get(k) != mine.get(k)
        )
        if differ:
            detail = "; ".join(f"{k}: saved {saved.get(k)!r}, here {mine.get(k)!r}" for k in differ)
            raise CheckpointError(
                f"state was saved by a {here} with other parameters ({detail}); build the policy "
                "with the saved parameters, or use load_policy"
            )
        before = dict(self.__dict__)
        try:
            self.reset()
            self._rng.bit_generator.state = json.loads(state["rng"])
            if state["n_features_in"] is not None:
                self.n_features_in_ = int(state["n_features_in"])
                self._initialize(np.zeros((1, self.n_features_in_)))
                self._load_state(state["state"])
            self.t_ = int(state["t"])
            if "pending" in state:  # files written before decisions existed have none
                self.pending_.load_state_dict(state["pending"])
        except Exception as exc:
            self.__dict__.clear()
            self.__dict__.update(before)
            if isinstance(exc, DeepBanditsError):
                raise
            raise CheckpointError(
                f"the saved state of this {here} is damaged or incomplete: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    def save(self, path: str | Path) -> None:
        """Write parameters and learned state to ``path`` (tensors + JSON, no code).

        The file is written atomically: a kill during a save leaves the previous file intact.
        """
        buffer = io.BytesIO()
        torch.save(to_saveable(self.state_dict()), buffer)
        write_atomic(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a policy written by :meth:`save`; the file is parsed with ``weights_only=True``."""
        policy = load_policy(path)
        if not isinstance(policy, cls):
            raise CheckpointError(f"{path} holds a {type(policy).__name__}, not a {cls.__name__}")
        return policy


def load_policy(path: str | Path) -> Policy:
    """Rebuild any policy saved by :meth:`Policy.save`; damaged files raise
    :class:`~deepbandits.errors.CheckpointError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointNotFoundError(f"no saved policy at {path}")
    state = read_checkpoint(path)
    cls = _CLASSES.get(state["class"])
    if cls is None:
        raise CheckpointError(f"{path} holds an unknown policy class {state['class']!r}")
    try:
        policy = cls(**json.loads(state["params"]))
    except (DeepBanditsError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path} holds invalid {cls.__name__} parameters: {exc}") from None
    try:
        policy.load_state_dict(state)
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    return policy


class Preset:
    """Mixin for a named variant of a policy class: parameters it defaults and parameters it fixes.

    ``preset_params`` are defaults the user may override; ``fixed_params`` define the variant
    (Neural-LinGreedy is ``alpha=0``) and may not be changed; ``forbidden_params`` lists values
    that would turn the variant into another one.
    """

    preset_params: ClassVar[dict[str, Any]] = {}
    fixed_params: ClassVar[dict[str, Any]] = {}
    forbidden_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any) -> None:
        self._check_preset(params)
        super().__init__(**{**self.preset_params, **params, **self.fixed_params})

    def _check_preset(self, params: dict[str, Any]) -> None:
        name = type(self).__name__
        for key, value in self.fixed_params.items():
            given = params.get(key, value)
            if isinstance(given, bool) != isinstance(value, bool) or given != value:
                raise InputValueError(f"{name} fixes {key}={value!r}, but {params[key]!r} is given")
        for key, value in self.forbidden_params.items():
            if params.get(key) == value:
                raise InputValueError(f"{name} does not allow {key}={value!r}")

    def set_params(self, **params: Any) -> Any:
        self._check_preset(params)
        return super().set_params(**params)  # type: ignore[misc]
