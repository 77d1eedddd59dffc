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


@dataclass(frozen=True)
class Holdout:
    """A held-out set of n rounds on which a policy's forecasts are scored at checkpoints
    (Eq. calib2): round i offers ``contexts[i]`` (one row per arm), with ``expected_rewards[i]``
    and one realised reward per arm in ``rewards[i]`` (both ``[n, K]``)."""

    contexts: list[Contexts]
    expected_rewards: NDArray[np.float64]
    rewards: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.contexts)


class Environment(ABC):
    """A contextual bandit environment: :meth:`next_round`, then :meth:`reward` of an arm.

    Attributes
    ----------
    n_arms : int
        Number of arms K.
    reward_range : (a, b)
        The reward range declared for the current round (the round's ``reward_range``), what a
        live loop passes to ``policy.learn(..., reward_range=env.reward_range)``. Every
        environment has both; the bandits built from data also turn raw records into contexts
        (:meth:`~deepbandits.envs.ClassificationEnv.contexts_for`).
    """

    n_arms: int

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

    def holdout(self, n: int) -> Holdout:
        """``n`` rounds drawn apart from the run's own (its trajectory is unchanged), for the
        hold-out calibration cal₂ of Eq. calib2. Environments without one raise."""
        raise NotImplementedError(f"{type(self).__name__} has no hold-out set")

    def variance_bound(self) -> float | None:
        """R², an upper bound on every round's noise variance Var(rₜ), when the environment
        knows one (the R² line of Fig. calib (b)); None otherwise."""
        return None

    @property
    def policy_defaults(self) -> dict[str, Any]:
        """Policy parameters this environment's paper setting uses (e.g. the network schedule
        on real data); ``deepbandits compare`` applies them where a policy spec leaves them
        out. Empty by default."""
        return {}

    def policy_defaults_for(self, policy: str) -> dict[str, Any]:
        """The settings ``policy`` (a registry name) gets here: :attr:`policy_defaults`, unless
        the environment has some for that policy alone."""
        return self.policy_defaults
