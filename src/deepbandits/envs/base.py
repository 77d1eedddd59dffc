"""What an environment offers the runner each round."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import Contexts


@dataclass(frozen=True)
class Round:
    """One round of an environment.

    Attributes
    ----------
    contexts : array [K, d] or BlockContexts
        Arm contexts (block-encoded ones as :class:`~deepbandits.encoding.BlockContexts`).
    expected_rewards : array [K]
        h(x) of each arm, for the pseudo-regret.
    sigma2 : float
        Oracle noise variance Var(rₜ) of this round.
    reward_range : (a, b)
        The reward range the environment declares for this round.
    """

    contexts: Contexts
    expected_rewards: NDArray[np.float64]
    sigma2: float
    reward_range: tuple[float, float]


class Environment(ABC):
    """A contextual bandit environment: :meth:`next_round`, then :meth:`reward` of an arm."""

    @abstractmethod
    def reset(self, seed: int | None = None) -> Environment:
        """Restart from round 1 (with a new seed if given)."""

    @abstractmethod
    def next_round(self) -> Round:
        """Advance to the next round and describe it."""

    @abstractmethod
    def reward(self, arm: int) -> float:
        """Realised reward of ``arm`` in the current round."""

    @abstractmethod
    def get_params(self) -> dict[str, object]:
        """Constructor parameters (for the run's configuration file)."""

    @property
    def policy_defaults(self) -> dict[str, Any]:
        """Policy parameters this environment's paper setting uses (e.g. the network schedule
        on real data); ``deepbandits compare`` applies them where a policy spec leaves them
        out. Empty by default."""
        return {}
