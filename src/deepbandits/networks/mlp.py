"""The feature network φ(x; w) of Eq. 7: an L-layer ReLU perceptron."""

from __future__ import annotations

from itertools import pairwise

import torch
from torch import nn


class MLP(nn.Module):
    """φ(x; w) = g(W_L g(W_{L−1} ⋯ g(W_1 x))) with ReLU g (Eq. 7 of the paper).

    Parameters
    ----------
    in_dim : int
        Context dimension d.
    hidden : int, default=100
        Width m of the hidden layers.
    n_layers : int, default=2
        Number of weight matrices L (L = 2: d → m → d′).
    feature_dim : int, default=20
        Output (feature) dimension d′ on which the ridge head acts.
    generator : torch.Generator, optional
        Source of the initial weights, so that a seed fixes the network.
    output_activation : bool, default=True
        Apply the ReLU to the last layer too (Eq. 7, the feature map φ of the neural-linear
        family). ``False`` gives a network whose last layer is linear, as the scalar reward
        model f(x; w) of NeuralUCB, NeuralTS and BootstrappedNN needs.

    Notes
    -----
    The paper scales φ by √m for its NTK analysis; a constant scale of φ is absorbed by θ and by
    λ, so it is left out and the layers use PyTorch's default (Kaiming-uniform) initialisation.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int = 100,
        n_layers: int = 2,
        feature_dim: int = 20,
        generator: torch.Generator | None = None,
        output_activation: bool = True,
    ) -> None:
        super().__init__()
        self.output_activation = output_activation
        sizes = [in_dim] + [hidden] * (n_layers - 1) + [feature_dim]
        self.layers = nn.ModuleList(nn.Linear(i, o) for i, o in pairwise(sizes))
        if generator is not None:
            with torch.no_grad():
                for layer in self.layers:
                    bound = 1.0 / layer.in_features**0.5
                    layer.weight.uniform_(-bound, bound, generator=generator)
                    layer.bias.uniform_(-bound, bound, generator=generator)

    @property
    def feature_dim(self) -> int:
        return self.layers[-1].out_features

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def activated(self, index: int) -> bool:
        """Whether layer ``index`` is followed by the ReLU."""
        return self.output_activation or index < len(self.layers) - 1

    def forward(self, x: torch.Tensor, *, block_diagonal: bool = False) -> torch.Tensor:
        """Outputs for the rows of ``x`` ``[n, in_dim]``.

        With ``block_diagonal=True``, ``x`` is ``[K, in_dim / K]``: row k is block k of a
        block-encoded context (:func:`deepbandits.encoding.diagonal_blocks`), and the first
        layer multiplies it by the matching K columns of W₁ only — the same outputs, up to
        rounding, as the dense product on the full ``[K, in_dim]`` contexts, with K× fewer
        operations.
        """
        for i, layer in enumerate(self.layers):
            if i == 0 and block_diagonal:
                W = layer.weight.view(layer.out_features, x.shape[0], x.shape[1])
                x = torch.einsum("kd,okd->ko", x, W) + layer.bias
            else:
                x = layer(x)
            if self.activated(i):
                x = torch.relu(x)
        return x
