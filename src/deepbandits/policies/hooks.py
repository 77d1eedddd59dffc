"""What the modules of the public calls need of a policy: its learned counters and the hooks.

:mod:`~deepbandits.policies.acting`, :mod:`~deepbandits.policies.learning`,
:mod:`~deepbandits.policies.merging`, :mod:`~deepbandits.policies.checkpoint` and
:mod:`~deepbandits.policies.transaction` work on any object of this shape;
:class:`~deepbandits.policies.policy.Policy` is one (it binds their functions as its methods), so
they never import it and the package imports one way: those modules, then ``policy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.policies.evaluation import Evaluation, Feedback, Learned, Observation
from deepbandits.policies.pending import PendingDecisions

Array = NDArray[np.float64]


class Builder(Protocol):
    """What a policy keeps of the :class:`~deepbandits.policies.registry.Recipe` that built it:
    its name, and how to build it again with other keywords."""

    name: str

    def build(self, params: dict[str, Any]) -> Any: ...


class PolicyCore(Protocol):
    """A policy as the public calls see it (:class:`~deepbandits.policies.policy.Policy`
    documents each member)."""

    n_features_in_: int | None
    block_dim_: int | None
    t_: int
    pending_: PendingDecisions
    parts: dict[str, Any]
    recipe_: Builder | None
    _params: dict[str, Any]
    _rng: np.random.Generator
    _samples: bool
    _vectorised: bool
    _takes_weights: bool
    _reward_range: tuple[float, float] | None
    _range_seen: tuple[Any, Any]

    # parameters, lifecycle, state
    def get_params(self, deep: bool = False) -> dict[str, Any]: ...
    def reset(self, seed: int | None = None) -> Any: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    def _check(self, contexts: ArrayLike | BlockContexts) -> Contexts: ...
    def _initialize(self, X: Contexts) -> None: ...
    def _state(self) -> dict[str, Any]: ...
    def _load_state(self, state: dict[str, Any]) -> None: ...

    # acting
    def _evaluate(self, X: Contexts) -> Evaluation: ...
    def _evaluate_many(self, batch: list[Contexts]) -> list[Evaluation]: ...
    def _evaluate_uniform(self, X: Array, n_requests: int, n_arms: int) -> Evaluation: ...
    def _index(self, ev: Evaluation) -> Array: ...
    def _propensity(self, ev: Evaluation, index: Array, arm: int, exact: float) -> float: ...
    def _observe(self, X: Contexts, arm: int, ev: Evaluation | None) -> Observation: ...

    # learning and merging
    def _learn(self, feedback: Feedback) -> Learned: ...
    def _learn_many(self, batch: Sequence[Feedback]) -> Learned: ...
    def _check_learn_many(self, n: int) -> None: ...
    def _initial_contexts(self) -> Contexts: ...
    def _merge(self, other: Any, base: Any) -> None: ...
