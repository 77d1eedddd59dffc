"""What a policy computes of one round before choosing, and what learning from it needs.

An :class:`Evaluation` holds every arm's mean and width (as
:meth:`~deepbandits.policies.Policy.predict` returns them) and what the parts computed on the
way (the features the head scored, each row's head, an ensemble's outputs, SAVE's search); the
choice adds the request's mask, the number of tied top arms and, when the decision shows other
numbers than those it chose on, ``shown``. An :class:`Observation` is what learning from the arm
played needs; a pending :class:`~deepbandits.policies.decision.Decision` carries the same
fields. A :class:`Feedback` is one checked reward with what it is learned from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.policies.decision import NO_EXTRA

Array = NDArray[np.float64]


@dataclass
class Evaluation:
    """Mean and width ``[K]`` of every arm, and what the parts computed of them.

    Attributes
    ----------
    mean, width : ndarray
        θᵀφ and ‖φ‖_{A⁻¹} (or the policy's equivalents).
    features : ndarray, optional
        The features the head scored, one row per arm.
    heads : ndarray of int, optional
        Each row's head (per-arm or per-block ridges).
    outputs : ndarray, optional
        An ensemble's ``[members, K]`` predictions (BootstrappedNN).
    search : tuple, optional
        SAVE's layer search ``(layer, arms, widths)``.
    shown : (mean, width), optional
        What the decision shows when the choice was made on other numbers.
    mask : ndarray of bool, optional
        The request's mask, once chosen.
    n_ties : int
        How many available arms shared the top score.
    round : int
        The decision's round (decisions made before it).
    """

    mean: Array
    width: Array
    features: Array | None = None
    heads: NDArray[np.int64] | None = None
    outputs: Array | None = None
    search: tuple[Any, ...] | None = None
    shown: tuple[Array, Array] | None = None
    mask: NDArray[np.bool_] | None = None
    n_ties: int = 0
    round: int = 0


class Observation(NamedTuple):
    """What learning from one round needs: the arm's context, the features the head saw (None
    when the policy learns from the context), its head and SAVE's layer values (an immutable
    value, as the :class:`~deepbandits.policies.decision.Decision` that carries the same)."""

    context: Any
    features: Array | None = None
    head: int = 0
    extra: Mapping[str, Any] = NO_EXTRA


class Feedback(NamedTuple):
    """One reward to learn, checked: what the policy observed of the arm played (an
    :class:`Observation`, or the pending :class:`~deepbandits.policies.decision.Decision`), the
    reward, the oracle σ² given with it, the reward range in force, and the observation's weight
    (an importance weight; it multiplies the ridge family's 1/σ̄²)."""

    obs: Any
    reward: float
    sigma2: float | None = None
    reward_range: tuple[float, float] | None = None
    weight: float = 1.0


def context_rows(context: Any) -> Contexts:
    """A decision's context as a one-row matrix (what a network or a kernel takes)."""
    return context if isinstance(context, BlockContexts) else context[None]


def arm_context(X: Contexts, arm: int) -> Any:
    """The context of ``arm``, detached from the caller's array (a decision keeps it)."""
    context = X[arm]
    return context.copy() if isinstance(context, np.ndarray) else context


class Learned(NamedTuple):
    """What learning a reward (or the last of a batch) did (a named tuple: it is made on every
    reward, where a frozen dataclass would cost a tenth of a LinUCB update).

    Attributes
    ----------
    sigma2 : float
        σ̄² used as the observation's weight 1/σ̄² (1 for unweighted policies).
    sigma2_hat : float
        The variance source's raw estimate (σ̂² of Eq. 13; NaN when not estimated).
    train_seconds : float
        Seconds spent training a network (0 when no training ran).
    """

    sigma2: float = 1.0
    sigma2_hat: float = float("nan")
    train_seconds: float = 0.0

    @property
    def trained(self) -> bool:
        """Whether a network was trained."""
        return self.train_seconds > 0.0
