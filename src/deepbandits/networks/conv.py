"""A convolutional feature network for image contexts: a LeNet-5 trunk on each arm's image, then
the perceptron of Eq. 7 on what the trunk extracts.

The paper's φ(x; w) is a perceptron on the raw context. On images it must learn from each pixel
separately what a convolution shares across positions: told every label, a LeNet classifier
made 439 mistakes in 10,000 rounds of MNIST's seed-1 stream, the policies' disjoint perceptron
610 on the same schedule (``benchmarks/records_full_information.py``). Each block of a
block-encoded context (one arm's image in the disjoint encoding) goes through the same trunk;
the trunk's features keep the block layout, so the perceptron's first layer still has one
block of weights per arm (:func:`~deepbandits.networks.mlp.block_linear`).

The convolutions have no bias, so an all-zero block maps to all-zero features: the dense form of
a disjoint encoding and its block form give the same output up to rounding.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from deepbandits.errors import InputValueError
from deepbandits.networks.mlp import MLP, BlockInput, NetInput

#: The network architectures a feature map may have.
NETWORKS = ("mlp", "lenet")

#: LeNet-5's trunk: two 5×5 convolutions (6 and 16 channels), each followed by a ReLU and 2×2
#: max pooling.
_CHANNELS = (6, 16)
_KERNEL = 5
#: The smallest image side the trunk takes (two convolutions and two poolings leave 1×1).
MIN_SIDE = 16


def image_shape(block_dim: int) -> tuple[int, int, int]:
    """``(channels, side, side)`` of a square image of ``block_dim`` values (1 or 3 channels,
    channel-major as torchvision stores them), or an :class:`InputValueError`."""
    for channels in (1, 3):
        side = math.isqrt(block_dim // channels)
        if block_dim % channels == 0 and side * side * channels == block_dim:
            if side < MIN_SIDE:
                break
            return channels, side, side
    raise InputValueError(
        f"network='lenet' needs each arm's context to be a square image of at least "
        f"{MIN_SIDE}×{MIN_SIDE} pixels (c·s·s values with c = 1 or 3), but a context block has "
        f"{block_dim} values; use network='mlp'"
    )


def trunk_side(side: int) -> int:
    """The side of the trunk's output maps for input images of side ``side``."""
    for _ in _CHANNELS:
        side = (side - _KERNEL + 1) // 2
    return side


class ConvNet(nn.Module):
    """φ(x; w) = MLP(trunk(x)): a LeNet-5 trunk on each image, then :class:`MLP`.

    Parameters
    ----------
    in_dim : int
        Context dimension: ``n_blocks·block_dim``.
    block_dim : int
        Values per image (one block of a block-encoded context; ``in_dim`` when there are no
        blocks): a square image of 1 or 3 channels (:func:`image_shape`).
    hidden, n_layers, feature_dim, generator, output_activation
        As :class:`MLP`, whose input is the trunk's features of every block.
    """

    def __init__(
        self,
        in_dim: int,
        block_dim: int,
        hidden: int = 100,
        n_layers: int = 2,
        feature_dim: int = 20,
        generator: torch.Generator | None = None,
        output_activation: bool = True,
    ) -> None:
        super().__init__()
        if in_dim % block_dim:
            raise InputValueError(
                f"in_dim ({in_dim}) must be a multiple of block_dim ({block_dim})"
            )
        self.shape = image_shape(block_dim)
        self.n_blocks = in_dim // block_dim
        layers: list[nn.Module] = []
        channels = self.shape[0]
        for out in _CHANNELS:
            layers += [nn.Conv2d(channels, out, _KERNEL, bias=False), nn.ReLU(), nn.MaxPool2d(2)]
            channels = out
        self.trunk = nn.Sequential(*layers, nn.Flatten())
        self.trunk_dim = channels * trunk_side(self.shape[1]) ** 2
        self.head = MLP(
            self.n_blocks * self.trunk_dim,
            hidden,
            n_layers,
            feature_dim,
            generator,
            output_activation,
        )
        if generator is not None:
            with torch.no_grad():
                for layer in self.trunk:
                    if isinstance(layer, nn.Conv2d):
                        bound = 1.0 / math.sqrt(layer.weight[0].numel())
                        layer.weight.uniform_(-bound, bound, generator=generator)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def trunk_input(self, x: NetInput) -> tuple[torch.Tensor, NetInput]:
        """The images of ``x`` ``[m, c, s, s]`` (one per block row, or ``n·n_blocks`` for dense
        rows) and the head's input: their trunk features in ``x``'s layout (block or dense)."""
        if isinstance(x, BlockInput):
            images = x.blocks.reshape(-1, *self.shape)
            return images, BlockInput(self.trunk(images), x.slots, x.n_blocks)
        n = x.shape[0]
        images = x.reshape(n * self.n_blocks, *self.shape)
        return images, self.trunk(images).reshape(n, self.n_blocks * self.trunk_dim)

    def forward(self, x: NetInput) -> torch.Tensor:
        """Outputs for the rows of ``x`` (``[n, in_dim]`` or a :class:`BlockInput`)."""
        return self.head(self.trunk_input(x)[1])  # type: ignore[no-any-return]


def build_network(
    network: str,
    in_dim: int,
    hidden: int,
    n_layers: int,
    out_dim: int,
    generator: torch.Generator | None,
    output_activation: bool,
    block_dim: int | None = None,
) -> MLP | ConvNet:
    """A new network of the architecture ``network`` (:data:`NETWORKS`) for contexts of
    ``in_dim`` columns (blocks of ``block_dim``; ``in_dim`` when None)."""
    if network == "lenet":
        block = in_dim if block_dim is None else block_dim
        return ConvNet(in_dim, block, hidden, n_layers, out_dim, generator, output_activation)
    return MLP(in_dim, hidden, n_layers, out_dim, generator, output_activation)
