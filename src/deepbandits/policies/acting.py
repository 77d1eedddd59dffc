"""Acting: choosing arms for one request or many, and predicting.

:func:`decide` and :func:`decide_batch` share one path (:func:`_decide_requests`) and one choice
rule (:func:`~deepbandits.policies.choice.choose_arms`): a request is scored by the policy's
``_evaluate`` and ``_index``; a batch of requests of one shape, for policies that score arrays
(``_vectorised``), is scored as ``[B, K]`` arrays in one pass, with the same random draws in the
same order as one request after another.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits.encoding import BlockContexts
from deepbandits.errors import InputTypeError, InputValueError, NumericalError
from deepbandits.policies.choice import check_mask, choose_arms, tie_propensities
from deepbandits.policies.decision import Decision, FrozenDict, freeze
from deepbandits.policies.evaluation import Evaluation, Observation
from deepbandits.policies.transaction import atomic

if TYPE_CHECKING:
    from deepbandits.policies.policy import Policy

Array = NDArray[np.float64]


def _choose(policy: Policy, ev: Evaluation, mask: NDArray[np.bool_] | None) -> tuple[int, float]:
    """The arm played for one request and its probability."""
    ev.mask = mask
    index = policy._index(ev)
    epsilon = policy._params["epsilon"]
    try:
        choice = choose_arms(
            index[None], None if mask is None else mask[None], epsilon, policy._rng
        )
    except NumericalError:
        raise NumericalError(
            f"{type(policy).__name__} scored an arm NaN; its state is not finite (contexts or "
            "rewards too large for its settings?)"
        ) from None
    arm = int(choice.arms[0])
    ev.n_ties = int(choice.n_ties[0])
    exact = float(tie_propensities(choice, epsilon)[0])
    return arm, policy._propensity(ev, index, arm, exact)


def select(policy: Policy, contexts: ArrayLike, mask: ArrayLike | None = None) -> int:
    """Index of the arm to play among the rows of ``contexts`` ``[K_t, d]`` (the synchronous
    shortcut of :meth:`decide`: nothing is kept pending; learn with :meth:`update`).

    Ties are broken uniformly at random by the policy's own seeded generator; ``mask``
    (booleans ``[K_t]``) leaves out the arms that are not available.
    """
    with atomic(policy):
        X = policy._check(contexts)
        checked = check_mask(mask, X.shape[0])
        return _choose(policy, policy._evaluate(X), checked)[0]


def decide(
    policy: Policy, contexts: ArrayLike | BlockContexts, mask: ArrayLike | None = None
) -> Decision:
    """Choose an arm among the rows of ``contexts`` ``[K_t, d]`` and return the decision.

    The decision (:class:`~deepbandits.policies.decision.Decision`) carries its id, the arm,
    its propensity, every arm's mean and width, the model version and what learning needs;
    the policy keeps it pending until :meth:`learn` gets its reward (by the decision or its
    id), it expires (``reward_timeout``) or the table is full (``max_pending``,
    ``when_full``). ``mask`` (booleans ``[K_t]``) leaves out unavailable arms: they are
    never chosen and have propensity 0; a mask with no arm raises.
    """
    return _decide_requests(policy, [contexts], [mask], many=False)[0]


def decide_batch(
    policy: Policy,
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
    mask_list = [None] * len(batch) if masks is None else list(masks)
    if len(mask_list) != len(batch):
        raise InputValueError(
            f"masks must have one entry per request ({len(batch)}), but {len(mask_list)} are given"
        )
    return _decide_requests(policy, batch, mask_list, many=True)


def _uniform(policy: Policy, batch: list[Any]) -> bool:
    """Whether a batch is scored as arrays: a vectorised policy, several dense requests of
    one shape."""
    return (
        policy._vectorised
        and len(batch) > 1
        and all(isinstance(X, np.ndarray) for X in batch)
        and len({X.shape for X in batch}) == 1
        and batch[0].ndim == 2
    )


def _decide_requests(
    policy: Policy, batch: list[Any], masks: list[Any], *, many: bool
) -> list[Decision]:
    """Validate every request, choose, and only then keep the decisions pending: a request
    that fails leaves the policy (generator included) as it was."""
    now = time.time()
    with atomic(policy, rng=many):
        if _uniform(policy, batch):
            chosen = _choose_uniform(policy, np.stack(batch), masks, now)
        else:
            Xs = [policy._check(X) for X in batch]
            checked = [check_mask(m, X.shape[0]) for m, X in zip(masks, Xs, strict=True)]
            policy.pending_.check_room(len(Xs), now)
            evs = policy._evaluate_many(Xs) if many else [policy._evaluate(Xs[0])]
            first = policy.pending_.n_decided
            chosen = []
            for i, (X, ev, mask) in enumerate(zip(Xs, evs, checked, strict=True)):
                ev.round = first + i
                arm, propensity = _choose(policy, ev, mask)
                chosen.append((ev, arm, propensity, policy._observe(X, arm, ev)))
    ids = policy.pending_.next_ids(len(chosen))
    decisions = [_record(policy, *c, ids[i], now) for i, c in enumerate(chosen)]
    policy.pending_.expire(policy.pending_.n_decided - 1, now)
    return decisions


def _choose_uniform(
    policy: Policy, X3: Array, masks: list[Any], now: float
) -> list[tuple[Evaluation, int, float, Observation]]:
    """:func:`_decide_requests` for ``B`` requests of one shape ``[K, d]``, as arrays."""
    B, K, d = X3.shape
    flat = policy._check(np.asarray(X3).reshape(B * K, d))
    checked = [check_mask(m, K) for m in masks]
    given = any(m is not None for m in checked)
    M = np.stack([np.ones(K, dtype=bool) if m is None else m for m in checked]) if given else None
    policy.pending_.check_room(B, now)
    ev = policy._evaluate_uniform(flat, B, K)
    epsilon = policy._params["epsilon"]
    try:
        choice = choose_arms(policy._index(ev), M, epsilon, policy._rng)
    except NumericalError:
        raise NumericalError(
            f"{type(policy).__name__} scored an arm NaN; its state is not finite (contexts or "
            "rewards too large for its settings?)"
        ) from None
    propensity = tie_propensities(choice, epsilon).tolist()
    rows, arms = np.arange(B), choice.arms
    contexts = X3[rows, arms].astype(np.float64)  # a copy: the caller's array stays theirs
    phi = ev.features
    features = None if phi is None else phi.reshape(B, K, -1)[rows, arms]
    heads = np.zeros(B, dtype=np.int64) if ev.heads is None else ev.heads.reshape(B, K)[rows, arms]
    return [
        (
            Evaluation(ev.mean[i], ev.width[i], mask=checked[i] if given else None),
            int(arms[i]),
            propensity[i],
            Observation(contexts[i], None if features is None else features[i], int(heads[i])),
        )
        for i in range(B)
    ]


def _record(
    policy: Policy,
    ev: Evaluation,
    arm: int,
    propensity: float,
    obs: Observation,
    decision_id: str,
    now: float,
) -> Decision:
    """Build a decision and keep it pending."""
    mean, width = ev.shown if ev.shown is not None else (ev.mean, ev.width)
    freeze(mean, width, ev.mask, obs.context, obs.features)
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
        FrozenDict(obs.extra),
    )
    policy.pending_.add(decision)
    return decision


def predict(policy: Policy, contexts: ArrayLike) -> tuple[Array, Array]:
    """Estimated mean reward and exploration width of every arm, each of shape ``[K_t]``.

    The width is the posterior standard deviation of the mean that the policy's UCB index
    multiplies by α (‖φ‖_{A⁻¹} for the ridge policies, ‖g/√m‖_{Z⁻¹} for NeuralUCB/TS, the
    ensemble's spread for BootstrappedNN). Predicting changes nothing: no learned state, no
    pending decision, no random number; a fresh policy stays fresh (its context dimension is
    not fixed by it).
    """
    with atomic(policy, read_only=True):
        ev = policy._evaluate(policy._check(contexts))
        return ev.mean, ev.width
