"""Marginalized importance weights for large action spaces whose actions have embeddings.

When many actions share what matters about them (an item's category, brand, price band), the
reward depends on the action only through its embedding e(a), and importance weights over the
actions are needlessly large. MIPS (Saito & Joachims 2022, "Off-policy evaluation for large
action spaces via embeddings", Eq. 4) weights each round by the ratio of the probabilities of
the logged action's *embedding* instead,

    w(xₜ, eₜ) = p(eₜ | xₜ, π) / p(eₜ | xₜ, π₀),   p(e | x, π) = Σₐ π(a | x) p(e | x, a),

and is unbiased when the embedding carries every effect of the action on the reward (no
direct effect, their Assumption 2.2) and π₀ gives every embedding π uses a positive
probability, with a variance that shrinks as more actions share an embedding.

Here an action's embedding is deterministic: the values of chosen columns of the log's
``action_features`` (each distinct row of them is one embedding value, as categories are), so
p(e | x, a) = 1{e(a) = e} and p(e | x, π) is the mass π puts on the actions sharing e (with
one column per category dimension this is Open Bandit Pipeline's ``p_e_a`` one-hot). The
ratio needs π₀ of every action, the log's ``logging_dist`` (simulated logs, a uniform logger,
or :func:`~deepbandits.ope.propensity.with_estimated_propensities`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope.estimator import MeanEstimator, RatioEstimator, Terms, register_estimator

Array = NDArray[np.float64]


def embedding_groups(action_features: Array, columns: tuple[int, ...] | None) -> NDArray[np.int64]:
    """The embedding value of each action ``[K]``, as an index 0..G−1: actions whose
    ``action_features`` agree on ``columns`` (None: all columns) share one."""
    feats = action_features if columns is None else action_features[:, list(columns)]
    _, groups = np.unique(feats, axis=0, return_inverse=True)
    return groups.reshape(-1).astype(np.int64)


def marginal_weights(
    action_dist: Array, logging_dist: Array, actions: NDArray[np.int64], groups: NDArray[np.int64]
) -> Array:
    """w(xₜ, eₜ) = Σ_{a: e(a)=e(aₜ)} π(a | xₜ) / Σ_{a: e(a)=e(aₜ)} π₀(a | xₜ) of every round
    (Saito & Joachims 2022, Eq. 4, deterministic embeddings ``groups`` ``[K]``)."""
    members = np.zeros((len(groups), int(groups.max()) + 1))
    members[np.arange(len(groups)), groups] = 1.0
    rows = np.arange(len(actions))
    target = (action_dist @ members)[rows, groups[actions]]
    logged = (logging_dist @ members)[rows, groups[actions]]
    return target / logged


def _check_embedding(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items or not all(isinstance(c, int) and not isinstance(c, bool) for c in items):
        raise InputTypeError(
            f"embedding must be None or a list of action-feature column indices, but {value!r} "
            "is given"
        )
    if min(items) < 0 or len(set(items)) != len(items):
        raise InputValueError(
            f"embedding must be distinct column indices >= 0, but {items} is given"
        )
    return tuple(items)


@register_estimator
@dataclass(frozen=True)
class MIPS(MeanEstimator):
    """Σ w(xₜ, eₜ) rₜ / n, marginalized IPS over the embedding of the logged action (module
    notes); ``embedding``: the ``action_features`` columns that form the embedding (None:
    all)."""

    short = "mips"
    display = "MIPS"
    in_all = False  # most logs lack embeddings and π₀ of every arm
    embedding: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "embedding", _check_embedding(self.embedding))

    def weights(self, terms: Terms) -> Array:
        """w(xₜ, eₜ) of every round."""
        log, dist = terms.logged(self)
        if log.action_features is None:
            raise InputValueError(
                f"{self.title} needs the log's action_features: the embedding of each action"
            )
        if log.logging_dist is None:
            raise InputValueError(
                f"{self.title} needs π₀ of every action (the log's logging_dist), which this "
                "log lacks; with_estimated_propensities(log) estimates it"
            )
        width = log.action_features.shape[1]
        if self.embedding is not None and max(self.embedding) >= width:
            raise InputValueError(
                f"embedding must index the {width} action-feature columns, but "
                f"{list(self.embedding)} is given"
            )
        groups = embedding_groups(log.action_features, self.embedding)
        return marginal_weights(dist, log.logging_dist, log.actions, groups)

    def term(self, terms: Terms) -> Array:
        return self.weights(terms) * terms.rewards


@register_estimator
@dataclass(frozen=True)
class SNMIPS(RatioEstimator):
    """Σ w(xₜ, eₜ) rₜ / Σ w(xₜ, eₜ), self-normalized MIPS (Saito & Joachims 2022, Section
    4)."""

    short = "snmips"
    display = "SNMIPS"
    in_all = False
    embedding: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "embedding", _check_embedding(self.embedding))

    def columns(self, terms: Terms) -> dict[str, Array]:
        mips = MIPS(self.embedding)
        w = mips.weights(terms)
        return {f"[{mips.label}]": w * terms.rewards, f"w[{mips.label}]": w}

    def ratios(self) -> tuple[tuple[str, str], ...]:
        label = MIPS(self.embedding).label
        return ((f"[{label}]", f"w[{label}]"),)
