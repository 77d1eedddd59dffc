"""Feature maps: what a ridge head sees of each arm's context, φ(x).

A feature map turns the contexts of one or more rounds into one feature row per arm, in one
call (a batch of rounds is one network forward pass). Two exist:

* :class:`IdentityFeatures`: φ(x) = x, LinUCB and σ²-LinUCB (Eq. 4–5). On block-encoded
  contexts with a shared θ it hands the ridge head the blocks themselves: A = λI + Σ xxᵀ is then
  block-diagonal, so one ridge per block on D features is the same regression in K² less memory.
* :class:`NetworkFeatures`: the last hidden layer φ(x; w) of a trained network, the
  neural-linear family (Xu et al. 2022; Algorithm 1 of the paper).

The gradient features of NeuralUCB/NeuralTS live with their head
(:mod:`deepbandits.policies.neural_ucb`): their ridge is over every network parameter and is
scored without forming the gradients.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.networks.learner import NetworkLearner

Array = NDArray[np.float64]


class FeatureMap(Protocol):
    """φ: contexts ``[n, d]`` → features ``[n, dim]`` (plus, for blocks, each row's block)."""

    dim: int

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        """Features of every row, and each row's block when the head keeps one per block."""
        ...


class IdentityFeatures:
    """φ(x) = x; with ``blockwise``, block-encoded rows map to their block and its slot."""

    def __init__(self, n_features: int, blockwise: bool) -> None:
        self.dim = n_features
        self.blockwise = blockwise

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        if isinstance(X, BlockContexts):
            if self.blockwise:
                return X.blocks, X.slots
            return X.dense(), None
        return X, None


class NetworkFeatures:
    """φ(x; w): the output of a network trained by a :class:`NetworkLearner` (the trainer)."""

    def __init__(self, learner: NetworkLearner, dim: int) -> None:
        self.learner = learner
        self.dim = dim

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        return self.learner.forward(X), None


def stack_contexts(batch: list[Contexts]) -> Contexts:
    """The rows of several rounds' contexts as one matrix (one forward pass for a batch)."""
    if isinstance(batch[0], BlockContexts):
        first = batch[0]
        return BlockContexts(
            np.concatenate([X.blocks for X in batch]),  # type: ignore[union-attr]
            np.concatenate([X.slots for X in batch]),  # type: ignore[union-attr]
            first.n_blocks,
        )
    return np.concatenate(batch)  # type: ignore[arg-type]
