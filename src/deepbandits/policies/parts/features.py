"""Feature maps: what a ridge head sees of each arm's context, φ(x).

A feature map turns the contexts of one or more rounds into one feature row per arm, in one
call (a batch of rounds is one network forward pass):

* :class:`IdentityFeatures`: φ(x) = x, LinUCB and σ²-LinUCB (Eq. 4–5), with a constant 1
  appended if ``intercept``. On block-encoded contexts it hands a shared head the blocks
  themselves (one ridge per block, see :mod:`deepbandits.policies.parts.heads`).
* :class:`NetworkFeatures`: the last hidden layer φ(x; w) of a network, the neural-linear family
  (Xu et al. 2022; Algorithm 1 of the paper), trained by a
  :class:`~deepbandits.policies.parts.trainer.Trainer`.

The gradient features of NeuralUCB/NeuralTS live with their policy
(:mod:`deepbandits.policies.neural_ucb`): their ridge is over every network parameter and is
scored without forming the gradients.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Protocol

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.networks.conv import ConvNet, build_network
from deepbandits.networks.learner import check_device
from deepbandits.networks.mlp import MLP, as_input
from deepbandits.policies.params import NETWORK_SPECS, Spec
from deepbandits.policies.parts.part import Part, part

Array = NDArray[np.float64]


class FeatureMap(Protocol):
    """φ: contexts ``[n, d]`` → features ``[n, dim_]`` (plus, for blocks, each row's block)."""

    #: whether φ is the identity (a head may then keep one ridge per block)
    raw: ClassVar[bool]

    def out_dim(self, n_features: int) -> int:
        """The feature dimension d′ for contexts of ``n_features`` columns."""
        ...

    def initialize(self, n_features: int, blockwise: bool, generator: Any) -> None:
        """Fresh state for contexts of ``n_features`` columns. A feature map whose
        ``initialize`` also takes the keyword ``block_dim`` is given the width of one block of
        block-encoded contexts (:func:`initialize_features`)."""
        ...

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        """Features of every row, and each row's block when the head keeps one per block."""
        ...


@part
class IdentityFeatures(Part):
    """φ(x) = x, or φ(x) = (x, 1) with an intercept.

    Parameters
    ----------
    intercept : bool, default=False
        Append a constant 1 to each arm's context, so that the ridge fits an intercept, as
        scikit-learn's linear models do with ``fit_intercept`` (its coefficient is regularised by
        λ like the others, and its width makes a rarely played arm's mean uncertain). Each ridge
        gets its own: one per block on block-encoded contexts (so one per arm of a disjoint
        encoding, whose block is the arm's context), one per arm with ``per_arm``, and one shared
        by every arm on a shared head over dense contexts (a dense disjoint encoding, unlike its
        block form, then shares it). Without it a linear model on centred features predicts 0 at
        the mean context, so it cannot fit how often an arm pays on average (on shuttle, whose
        majority class is 80 % of the samples, LinUCB's regret fell from 2,185.5 to 716.8 with
        it: :mod:`deepbandits.envs.settings`).
    """

    raw: ClassVar[bool] = True
    specs: ClassVar[dict[str, Spec]] = {
        "intercept": Spec("bool", "append a constant 1 to each arm's context (fit an intercept)")
    }

    intercept: bool = False

    def __post_init__(self) -> None:
        self.blockwise_ = False

    def out_dim(self, n_features: int) -> int:
        return n_features + int(self.intercept)

    def initialize(self, n_features: int, blockwise: bool, generator: Any) -> None:
        self.blockwise_ = blockwise

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        """The contexts (each block, or each row, with a 1 appended if ``intercept``); a shared
        head's block-encoded contexts as their blocks, with each row's block."""
        if isinstance(X, BlockContexts):
            blocks = with_ones(X.blocks) if self.intercept else X.blocks
            if self.blockwise_:  # a shared head's one ridge per block: no dense matrix
                return blocks, X.slots
            return (
                BlockContexts(blocks, X.slots, X.n_blocks) if self.intercept else X
            ).dense(), None
        return (with_ones(X) if self.intercept else X), None

    def state_dict(self) -> dict[str, Any]:
        return {"blockwise": self.blockwise_}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.blockwise_ = bool(state["blockwise"])


def initialize_features(
    features: FeatureMap,
    n_features: int,
    blockwise: bool,
    generator: Any,
    block_dim: int | None,
) -> None:
    """``features.initialize(n_features, blockwise, generator)``, with ``block_dim`` too when
    its ``initialize`` takes it (a network that reads an image's shape from the block), so that
    feature maps written for the three-argument form keep working."""
    if "block_dim" in inspect.signature(features.initialize).parameters:
        features.initialize(n_features, blockwise, generator, block_dim=block_dim)  # type: ignore[call-arg]
    else:
        features.initialize(n_features, blockwise, generator)


def with_ones(X: Array) -> Array:
    """``X`` ``[n, d]`` with a column of ones appended: ``[n, d + 1]``."""
    return np.hstack([X, np.ones((len(X), 1))])


@part
class NetworkFeatures(Part):
    """φ(x; w): the ReLU output layer of an MLP (Eq. 7), on the raw context or on what a
    convolutional trunk extracts from it.

    Parameters
    ----------
    dim : int, default=20
        Feature dimension d′ (the paper uses 20 on synthetic data, 64 on real data).
    hidden : int, default=100
        Width m of the hidden layers.
    n_layers : int, default=2
        Number of layers L.
    device : str, default="cpu"
        Torch device of the network ("cuda" when available).
    network : {"mlp", "lenet"}, default="mlp"
        ``"mlp"``: the perceptron of Eq. 7 on the context. ``"lenet"``: a LeNet-5 trunk on each
        arm's context, which must be a square image of 1 or 3 channels, then that perceptron
        (:class:`~deepbandits.networks.conv.ConvNet`).
    """

    raw: ClassVar[bool] = False
    specs: ClassVar[dict[str, Spec]] = {
        "dim": Spec("int", "feature dimension d′ of φ", low=1),
        "hidden": NETWORK_SPECS["hidden"],
        "n_layers": NETWORK_SPECS["n_layers"],
        "device": NETWORK_SPECS["device"],
        "network": NETWORK_SPECS["network"],
    }

    dim: int = 20
    hidden: int = 100
    n_layers: int = 2
    device: str = "cpu"
    network: str = "mlp"

    def __post_init__(self) -> None:
        self.network_: MLP | ConvNet | None = None

    def _check(self) -> None:
        self.device_ = check_device(self.device)

    def out_dim(self, n_features: int) -> int:
        return int(self.dim)

    def initialize(
        self,
        n_features: int,
        blockwise: bool,
        generator: torch.Generator,
        block_dim: int | None = None,
    ) -> None:
        """A new network; its initial weights are drawn from ``generator``."""
        network = build_network(
            self.network,
            n_features,
            self.hidden,
            self.n_layers,
            self.dim,
            generator,
            True,
            block_dim,
        )
        self.network_ = network.to(self.device_).eval()

    def transform(self, X: Contexts) -> tuple[Array, NDArray[np.int64] | None]:
        """φ of every row as float64 numpy; block-encoded contexts skip their zero blocks in
        the first layer."""
        assert self.network_ is not None
        with torch.no_grad():
            out = self.network_.forward(as_input(X, self.device_))  # no module hooks to run
            return out.to("cpu", torch.float64).numpy(), None

    def state_dict(self) -> dict[str, Any]:
        assert self.network_ is not None
        return {"network": {k: v.detach().cpu() for k, v in self.network_.state_dict().items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        assert self.network_ is not None
        self.network_.load_state_dict(state["network"])


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
