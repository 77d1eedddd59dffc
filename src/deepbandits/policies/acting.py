"""Acting: choosing arms for one request or many, and predicting.

:meth:`Acting.decide` and :meth:`Acting.decide_batch` share one path per request
(:func:`_choose_request`) and one choice rule (:mod:`~deepbandits.policies.choice`): a request
is scored by the policy's ``_evaluate`` and ``_index``; a batch of requests of one shape, for
policies that score arrays (``_vectorised``), is scored as ``[B, K]`` arrays in one pass, with
the same random draws in the same order as one request after another.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.errors import InputTypeError, InputValueError, NumericalError
from deepbandits.policies.choice import (
    check_mask,
    choose_arms,
    choose_one,
    greedy_propensities,
    request_masks,
    tie_propensities,
)
from deepbandits.policies.core import PolicyCore, per_round
from deepbandits.policies.decision import NO_EXTRA, Decision, FrozenDict, array_bytes, freeze
from deepbandits.policies.evaluation import Evaluation, Observation
from deepbandits.policies.transaction import atomic

Array = NDArray[np.float64]


def _choose(
    policy: PolicyCore, ev: Evaluation, mask: NDArray[np.bool_] | None
) -> tuple[int, float]:
    """The arm played for one request and its probability."""
    ev.mask = mask
    index = policy._index(ev)
    try:
        arm, ev.n_ties, exact = choose_one(index, mask, policy._params["epsilon"], policy._rng)
    except NumericalError:
        raise _nan_error(policy) from None
    return arm, policy._propensity(ev, index, arm, exact)


def _nan_error(policy: PolicyCore) -> NumericalError:
    return NumericalError(
        f"{type(policy).__name__} scored an arm NaN; its state is not finite (contexts or "
        "rewards too large for its settings?)"
    )


def _choose_request(
    policy: PolicyCore,
    X: Contexts,
    mask: NDArray[np.bool_] | None,
    ev: Evaluation,
    now: float,
    offset: int = 0,
) -> tuple[Evaluation, int, float, Observation]:
    """Choose and observe one checked request scored in ``ev``, the ``offset``-th of its
    call; nothing is kept yet."""
    ev.round = policy.pending_.n_decided + offset
    arm, propensity = _choose(policy, ev, mask)
    return ev, arm, propensity, policy._observe(X, arm, ev)


def _decision_bytes(ev: Evaluation, X: Contexts, mask: NDArray[np.bool_] | None) -> int:
    """The size (:func:`~deepbandits.policies.decision.decision_nbytes`) of the decision of
    the request ``X`` scored in ``ev``, known before its arm is chosen (every arm's row of the
    contexts and of the features has the same size): the pending table checks it, then keeps
    it as the decision's."""
    K = X.shape[0]
    size = ev.mean.nbytes + ev.width.nbytes + array_bytes(mask) + array_bytes(X) // K
    if ev.features is not None and ev.features is not X:
        size += ev.features.nbytes // K
    return size


def _uniform(policy: PolicyCore, batch: list[Any], stacked: Array | None) -> bool:
    """Whether a batch is scored as arrays: a vectorised policy, several dense requests of
    one shape (given as one array ``stacked``, or a list)."""
    if len(batch) < 2 or not policy._vectorised:
        return False
    return stacked is not None or (
        all(isinstance(X, np.ndarray) for X in batch)
        and len({X.shape for X in batch}) == 1
        and batch[0].ndim == 2
    )


def _decide_requests(
    policy: PolicyCore,
    batch: list[Any],
    masks: list[Any],
    stacked: Array | None = None,
    decision_ids: Sequence[str] | None = None,
) -> list[Decision]:
    """Validate every request, choose, and only then keep the decisions pending: a request
    that fails leaves the policy (generator included) as it was."""
    now = time.time()
    ids = policy.pending_.given_ids(decision_ids, len(batch))
    with atomic(policy, rng=True):
        uniform = _uniform(policy, batch, stacked)
        if uniform:
            X3 = stacked if stacked is not None else np.stack(batch)
            chosen, sizes = _choose_uniform(policy, X3, masks, now)
        else:
            Xs = [policy._check(X) for X in batch]
            checked = [check_mask(m, X.shape[0]) for m, X in zip(masks, Xs, strict=True)]
            evs = policy._evaluate_many(Xs)
            sizes = [_decision_bytes(*r) for r in zip(evs, Xs, checked, strict=True)]
            policy.pending_.check_room(sizes, now)
            chosen = [
                _choose_request(policy, *request, now, i)
                for i, request in enumerate(zip(Xs, checked, evs, strict=True))
            ]
    if uniform:
        decisions = _record_uniform(policy, chosen, ids, now, sizes)
    else:
        decisions = [_record(policy, *c, ids[i], now, sizes[i]) for i, c in enumerate(chosen)]
    policy.pending_.expire(policy.pending_.n_decided - 1, now)
    return decisions


def _choose_uniform(
    policy: PolicyCore, X3: Array, masks: list[Any], now: float
) -> tuple[list[Any], list[int]]:
    """:func:`_decide_requests` for ``B`` requests of one shape ``[K, d]``, as arrays: the
    columns of the ``B`` decisions (arm, propensity, mean, width, mask, context, features,
    head), their arrays read-only rows of arrays made read-only once."""
    B, K, d = X3.shape
    flat = policy._check(np.asarray(X3).reshape(B * K, d))
    checked = [check_mask(m, K) for m in masks]
    given = any(m is not None for m in checked)
    M = np.stack([np.ones(K, dtype=bool) if m is None else m for m in checked]) if given else None
    ev = policy._evaluate_uniform(flat, B, K)
    phi = ev.features
    size = (ev.mean.nbytes + ev.width.nbytes) // B + array_bytes(flat) // (B * K)
    if phi is not None and phi is not flat:
        size += phi.nbytes // (B * K)
    sizes = [size + array_bytes(m) for m in checked]
    policy.pending_.check_room(sizes, now)
    epsilon = policy._params["epsilon"]
    try:
        choice = choose_arms(policy._index(ev), M, epsilon, policy._rng)
    except NumericalError:
        raise _nan_error(policy) from None
    rows, arms = np.arange(B), choice.arms
    contexts = X3[rows, arms].astype(np.float64)  # a copy: the caller's array stays theirs
    if phi is flat:  # the identity's features are the contexts: one copy serves as both
        features: Any = contexts
    else:
        features = [None] * B if phi is None else phi.reshape(B, K, -1)[rows, arms]
    heads = np.zeros(B, dtype=np.int64) if ev.heads is None else ev.heads.reshape(B, K)[rows, arms]
    freeze(ev.mean, ev.width, contexts, features, *checked)
    propensity = tie_propensities(choice, epsilon).tolist()
    columns = [arms.tolist(), propensity, ev.mean, ev.width, checked, contexts, features]
    return [*columns, heads.tolist()], sizes


def _record_uniform(
    policy: PolicyCore, columns: list[Any], ids: list[str], now: float, sizes: list[int]
) -> list[Decision]:
    """Build the decisions of :func:`_choose_uniform`'s columns and keep them pending, of
    ``sizes`` bytes each."""
    t, first, new = policy.t_, policy.pending_.n_decided, tuple.__new__
    if columns[6] is columns[5]:  # the identity's features: one row serves as both
        columns[5] = columns[6] = list(columns[5])
    # every field in order, without the NamedTuple's Python-level __new__ (a third of the cost)
    decisions = [
        new(
            Decision,
            (i, arm, p, mean, width, t, first + k, now, mask, context, features, head, NO_EXTRA),
        )
        for k, (i, arm, p, mean, width, mask, context, features, head) in enumerate(
            zip(ids, *columns, strict=True)
        )
    ]
    policy.pending_.add_many(decisions, sizes)
    return decisions


def _record(
    policy: PolicyCore,
    ev: Evaluation,
    arm: int,
    propensity: float,
    obs: Observation,
    decision_id: str,
    now: float,
    size: int,
) -> Decision:
    """Build a decision and keep it pending (of ``size`` bytes)."""
    mean, width = ev.shown if ev.shown is not None else (ev.mean, ev.width)
    features = obs.features
    freeze(mean, width, ev.mask, obs.context, None if features is obs.context else features)
    decision = Decision(
        decision_id,
        arm,
        propensity,
        mean,
        width,
        policy.t_,
        policy.pending_.n_decided,
        now,
        ev.mask,
        obs.context,
        obs.features,
        obs.head,
        obs.extra if type(obs.extra) is FrozenDict else FrozenDict(obs.extra),
    )
    policy.pending_.add(decision, size)
    return decision


def _request_index(
    policy: PolicyCore, X: Contexts, mask: NDArray[np.bool_] | None
) -> tuple[Array, Array]:
    """One request's index and every arm's estimated mean."""
    ev = policy._evaluate(X)
    ev.mask = mask
    ev.round = policy.pending_.n_decided
    return policy._index(ev), ev.mean


def _sampled_probabilities(policy: PolicyCore, contexts: Any, mask: Any) -> tuple[Array, Array]:
    """:meth:`Acting.probabilities` of an index that samples from a closed-form distribution,
    one request at a time, and every arm's estimated mean."""
    batched = isinstance(contexts, np.ndarray) and contexts.ndim == 3
    requests = list(contexts) if batched else [contexts]
    rows = [None] * len(requests) if mask is None else list(np.asarray(mask)) if batched else [mask]
    if len(rows) != len(requests):
        raise InputValueError(
            f"mask must have one row per request ({len(requests)}), but {len(rows)} are given"
        )
    checked = [check_mask(m, np.shape(X)[0]) for X, m in zip(requests, rows, strict=True)]
    if batched:  # a closed form: the ridge family, which evaluates stacked requests at once
        B, K, d = contexts.shape
        ev = policy._evaluate_uniform(policy._check(contexts.reshape(B * K, d)), B, K)
        ev.mask = None if mask is None else np.stack(checked)  # type: ignore[arg-type]
        return policy._distribution(ev), ev.mean
    ev = policy._evaluate(policy._check(contexts))
    ev.mask = checked[0]
    return policy._distribution(ev), ev.mean


class Acting(PolicyCore):
    """The acting calls of a policy: choosing arms for one request or many, and predicting."""

    @per_round
    def select(self, contexts: ArrayLike, mask: ArrayLike | None = None) -> int:
        """Index of the arm to play among the rows of ``contexts`` ``[K_t, d]`` (the synchronous
        shortcut of :meth:`decide`: nothing is kept pending; learn with
        :meth:`~deepbandits.policies.Policy.update`).

        Ties are broken uniformly at random by the policy's own seeded generator; ``mask``
        (booleans ``[K_t]``) leaves out the arms that are not available.
        """
        with atomic(self):
            X = self._check(contexts)
            checked = check_mask(mask, X.shape[0])
            return _choose(self, self._evaluate(X), checked)[0]

    @per_round
    def decide(
        self,
        contexts: ArrayLike | BlockContexts,
        mask: ArrayLike | None = None,
        *,
        decision_id: str | None = None,
    ) -> Decision:
        """Choose an arm among the rows of ``contexts`` ``[K_t, d]`` and return the decision.

        The decision (:class:`~deepbandits.policies.decision.Decision`) carries its id, the arm,
        its propensity, every arm's mean and width, the model version and what learning needs;
        the policy keeps it pending until :meth:`~deepbandits.policies.Policy.learn` gets its
        reward (by the decision or its id), it expires (``reward_timeout``) or the table is full
        (``max_pending``, ``max_pending_bytes``, ``when_full``). ``mask`` (booleans ``[K_t]``)
        leaves out unavailable arms: they are never chosen and have propensity 0; a mask with no
        arm raises. ``decision_id`` gives the decision an id of the caller's (1 to 128
        printable ASCII characters, not in use); by default it gets 128 random bits.
        """
        now = time.time()
        (given,) = self.pending_.given_ids(None if decision_id is None else [decision_id], 1)
        with atomic(self):
            X = self._check(contexts)
            checked = check_mask(mask, X.shape[0])
            ev = self._evaluate(X)
            size = _decision_bytes(ev, X, checked)
            self.pending_.check_room([size], now)
            chosen = _choose_request(self, X, checked, ev, now)
        decision = _record(self, *chosen, given, now, size)
        self.pending_.expire(decision.round, now)
        return decision

    @per_round
    def decide_batch(
        self,
        contexts: ArrayLike | Sequence[ArrayLike | BlockContexts],
        masks: ArrayLike | Sequence[ArrayLike | None] | None = None,
        *,
        decision_ids: Sequence[str] | None = None,
    ) -> list[Decision]:
        """Decide ``B`` requests at once: ``contexts`` is an array ``[B, K, d]`` or a list of
        ``B`` context matrices, each with its own number of arms; ``masks`` is None, an array
        ``[B, K]`` or a list of masks (None for no mask).

        All ``B`` decisions use the model as it is at the call (no reward learned in between):
        the features of every request come from one network forward pass and the scores from
        one batched ridge evaluation. Random draws (ties, ε, samples) follow request order.
        ``decision_ids`` gives the decisions ids of the caller's, one per request (as
        :meth:`decide`'s ``decision_id``).
        """
        if isinstance(contexts, np.ndarray):
            if contexts.ndim != 3:
                raise InputValueError(
                    "contexts must be an array [B, K, d] or a list of [K, d] matrices, but "
                    f"an array of shape {contexts.shape} is given"
                )
            batch: list[Any] = list(contexts)
            stacked: Array | None = contexts
        elif isinstance(contexts, list | tuple):
            batch = list(contexts)
            stacked = None
        else:
            raise InputTypeError(
                "contexts must be an array [B, K, d] or a list of context matrices, but a "
                f"{type(contexts).__name__} is given"
            )
        if not batch:
            raise InputValueError("decide_batch needs at least one request, but 0 are given")
        return _decide_requests(
            self, batch, request_masks(masks, len(batch)), stacked, decision_ids
        )

    @per_round
    def probabilities(
        self,
        contexts: ArrayLike | BlockContexts,
        mask: ArrayLike | None = None,
        *,
        return_mean: bool = False,
    ) -> Array | tuple[Array, Array]:
        """Every arm's probability of being played by the policy as it stands: ``[K]`` for one
        request ``[K, d]`` (``mask`` ``[K]``), ``[B, K]`` for ``B`` requests ``[B, K, d]``
        (``mask`` ``[B, K]``).

        The choice rule's numbers (:mod:`~deepbandits.policies.choice`): what each
        :class:`~deepbandits.policies.decision.Decision`'s ``propensity`` says of the arm it
        played. Off-policy evaluation reads a policy's action distribution here. Reads and changes
        nothing. An index that samples has the distribution it draws from where that has a
        closed form (inverse gap weighting); one that has none (Thompson sampling) raises
        :class:`~deepbandits.errors.InputValueError`: evaluate it by replay. With
        ``return_mean=True`` (as scikit-learn's ``predict(X, return_std=True)``), also every
        arm's estimated mean (:meth:`predict`'s first array) from the same evaluation: what a
        shadow evaluation reads on each request (:mod:`deepbandits.serve.shadow`).
        """
        if self._samples and self._closed_form:
            with atomic(self, read_only=True):
                probs, means = _sampled_probabilities(self, contexts, mask)
            return (probs, means) if return_mean else probs
        if self._samples:
            raise InputValueError(
                f"{type(self).__name__} samples its index, so its action probabilities have no "
                "closed form; evaluate it by replay (deepbandits.ope.replay) instead"
            )
        epsilon = self._params["epsilon"]
        with atomic(self, read_only=True):
            if isinstance(contexts, np.ndarray) and contexts.ndim == 3:
                B, K, d = contexts.shape
                rows = [None] * B if mask is None else list(np.asarray(mask))
                if len(rows) != B:
                    raise InputValueError(
                        f"mask must have one row per request ({B}), but {len(rows)} are given"
                    )
                checked = [check_mask(m, K) for m in rows]
                masks = None if mask is None else np.stack(checked)  # type: ignore[arg-type]
                if B > 1 and self._vectorised:
                    flat = self._check(contexts.reshape(B * K, d))
                    ev = self._evaluate_uniform(flat, B, K)
                    index, means = self._index(ev), ev.mean
                else:
                    pairs = [
                        _request_index(self, self._check(X), m)
                        for X, m in zip(contexts, checked, strict=True)
                    ]
                    index, means = np.stack([i for i, _ in pairs]), np.stack([m for _, m in pairs])
            else:
                X = self._check(contexts)
                masks = check_mask(mask, X.shape[0])
                index, means = _request_index(self, X, masks)
            probs = greedy_propensities(index, masks, epsilon)
        if not (probs.sum(axis=-1) > 0).all():
            raise _nan_error(self)
        return (probs, means) if return_mean else probs

    @per_round
    def predict(self, contexts: ArrayLike) -> tuple[Array, Array]:
        """Estimated mean reward and exploration width of every arm, each of shape ``[K_t]``.

        The width is the posterior standard deviation of the mean that the policy's UCB index
        multiplies by α (‖φ‖_{A⁻¹} for the ridge policies, ‖g/√m‖_{Z⁻¹} for NeuralUCB/TS, the
        ensemble's spread for BootstrappedNN). Predicting changes nothing: no learned state, no
        pending decision, no random number; a fresh policy stays fresh (its context dimension is
        not fixed by it).
        """
        with atomic(self, read_only=True):
            ev = self._evaluate(self._check(contexts))
            return ev.mean, ev.width
