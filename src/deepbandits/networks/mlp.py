"""The feature network φ(x; w) of Eq. 7: an L-layer ReLU perceptron, and its block-encoded input.

A network's input is a dense ``[n, d]`` tensor or a :class:`BlockInput`, the device-side form of
:class:`~deepbandits.encoding.BlockContexts`: the first layer then multiplies each row's
non-zero block by the matching D columns of W₁ only (:func:`block_linear`), the same result up to
rounding as the dense product with K× fewer operations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import nn

from deepbandits.encoding import BlockContexts, Contexts


@dataclass(frozen=True)
class BlockInput:
    """Rows of a block-encoded input on a device: row i is ``blocks[i]`` in block ``slots[i]``."""

    blocks: torch.Tensor
    slots: NDArray[np.int64]
    n_blocks: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.blocks.shape[0], self.n_blocks * self.blocks.shape[1]

    def take(self, rows: torch.Tensor) -> BlockInput:
        """The rows ``rows`` (a 1-d index tensor)."""
        return BlockInput(self.blocks[rows], self.slots[rows.cpu().numpy()], self.n_blocks)

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> BlockInput:
        """The same structure with ``fn`` applied to the blocks (e.g. squaring, a dtype)."""
        return BlockInput(fn(self.blocks), self.slots, self.n_blocks)

    def dense(self) -> torch.Tensor:
        n, D = self.blocks.shape
        out = self.blocks.new_zeros(n, self.n_blocks, D)
        out[torch.arange(n), torch.as_tensor(self.slots)] = self.blocks
        return out.reshape(n, self.n_blocks * D)

    @cached_property
    def groups(self) -> dict[int, slice | torch.Tensor]:
        """``{block: rows}`` for each block that some row occupies: a slice when the rows are
        sorted by block (no gather or scatter needed), else an index tensor."""
        n = len(self.slots)
        if (
            n
            and self.slots[0] == self.slots[-1]
            and (n <= 2 or np.all(self.slots == self.slots[0]))
        ):
            return {int(self.slots[0]): slice(0, n)}  # one block (e.g. a single-sample step)
        if np.all(self.slots[1:] >= self.slots[:-1]):
            blocks, starts = np.unique(self.slots, return_index=True)
            bounds = [*starts[1:], len(self.slots)]
            return {int(k): slice(a, b) for k, a, b in zip(blocks, starts, bounds, strict=True)}
        order = np.argsort(self.slots, kind="stable")
        blocks, starts = np.unique(self.slots[order], return_index=True)
        bounds = [*starts[1:], len(order)]
        device = self.blocks.device
        return {
            int(k): torch.as_tensor(order[a:b], device=device)
            for k, a, b in zip(blocks, starts, bounds, strict=True)
        }


@dataclass(frozen=True)
class BlockOuterSum:
    """The weight gradient Σ_b δ_b a_bᵀ of a layer whose input ``a`` is block-encoded, kept as
    its factors: its norm and an SGD step then cost O(B·(D + out)) per block instead of a pass
    over the whole ``[out, n_blocks·D]`` matrix."""

    delta: torch.Tensor
    a: BlockInput

    def squared_norm(self) -> torch.Tensor:
        """‖Σ_b δ_b a_bᵀ‖²_F = Σ_k Σ_{b,c ∈ block k} (δ_b·δ_c)(a_b·a_c): Gram matrices only."""
        total = self.delta.new_zeros(())
        for rows in self.a.groups.values():
            d, x = self.delta[rows], self.a.blocks[rows]
            total += ((d @ d.t()) * (x @ x.t())).sum()
        return total

    def add_to_(self, target: torch.Tensor, alpha: float = 1.0) -> None:
        """In place, ``target += alpha · Σ_b δ_b a_bᵀ``."""
        add_outer_(target, self.delta, self.a, alpha)

    def dense(self, out: torch.Tensor | None = None) -> torch.Tensor:
        return block_weight_gradient(self.delta, self.a, out)


NetInput = torch.Tensor | BlockInput


#: Block-encoded contexts narrower than this go to the network dense: for them one dense product
#: costs less than a product per block.
MIN_BLOCK_FEATURES = 1024


def as_input(X: Contexts, device: torch.device, dtype: torch.dtype = torch.float32) -> NetInput:
    """Contexts (dense or :class:`~deepbandits.encoding.BlockContexts`) as a network input
    (block-encoded from :data:`MIN_BLOCK_FEATURES` features on, dense below)."""
    if isinstance(X, BlockContexts) and X.shape[1] < MIN_BLOCK_FEATURES:
        X = X.dense()
    if isinstance(X, BlockContexts):
        return BlockInput(as_tensor(X.blocks, device, dtype), X.slots, X.n_blocks)
    return as_tensor(X, device, dtype)


def as_tensor(X: NDArray[np.float64], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A numpy array as a tensor of ``dtype`` on ``device`` (a read-only array is copied)."""
    if dtype == torch.float32:  # converted by numpy: one copy, the same rounding as torch's
        return torch.from_numpy(np.array(X, dtype=np.float32, order="C")).to(device)
    X = np.ascontiguousarray(X)
    return torch.from_numpy(X if X.flags.writeable else X.copy()).to(device, dtype)


def block_linear(x: BlockInput, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x.dense() @ weightᵀ + bias`` from the non-zero blocks: ``[n, out]``."""
    n, D = x.blocks.shape
    W = weight.view(weight.shape[0], x.n_blocks, D)
    if n == x.n_blocks and np.array_equal(x.slots, np.arange(n)):  # one round: row k, block k
        out = torch.einsum("kd,okd->ko", x.blocks, W)
    elif len(x.groups) == 1:  # every row in one block: one product, nothing to scatter
        (k,) = x.groups
        out = x.blocks @ W[:, k, :].t()
    else:
        out = x.blocks.new_empty(n, weight.shape[0])
        for k, rows in x.groups.items():
            out[rows] = x.blocks[rows] @ W[:, k, :].t()
    return out if bias is None else out + bias


def add_outer_(target: torch.Tensor, delta: torch.Tensor, a: NetInput, alpha: float = 1.0) -> None:
    """In place, ``target += alpha · Σ_b δ_b a_bᵀ`` (``[out, in]``), touching only occupied
    blocks."""
    if isinstance(a, torch.Tensor):
        target.add_(delta.t() @ a, alpha=alpha)
        return
    T = target.view(target.shape[0], a.n_blocks, a.blocks.shape[1])
    for k, rows in a.groups.items():
        T[:, k, :].addmm_(delta[rows].t(), a.blocks[rows], alpha=alpha)


def block_weight_gradient(
    delta: torch.Tensor, a: BlockInput, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``Σ_b δ_b a_bᵀ`` ``[out, n_blocks·D]`` for a block-encoded ``a``, one block at a time
    (written into ``out`` when given)."""
    D = a.blocks.shape[1]
    if out is None:
        out = delta.new_empty(delta.shape[1], a.n_blocks * D)
    G = out.view(out.shape[0], a.n_blocks, D)
    for k in range(a.n_blocks):
        rows = a.groups.get(k)
        if rows is None:
            G[:, k, :].zero_()
        else:
            G[:, k, :] = delta[rows].t() @ a.blocks[rows]
    return out


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
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def activated(self, index: int) -> bool:
        """Whether layer ``index`` is followed by the ReLU."""
        return self.output_activation or index < len(self.layers) - 1

    def forward(self, x: NetInput) -> torch.Tensor:
        """Outputs for the rows of ``x`` (``[n, in_dim]`` or a :class:`BlockInput`)."""
        h = first_layer(self.layers[0], x)
        for i, layer in enumerate(self.layers):
            if i > 0:
                h = F.linear(h, layer.weight, layer.bias)  # nn.Linear's forward, no hook overhead
            if self.activated(i):
                h = torch.relu(h)
        return h


def first_layer(layer: nn.Linear, x: NetInput) -> torch.Tensor:
    """Pre-activation W₁x + b₁ of a dense or block-encoded input."""
    return input_linear(x, layer.weight, layer.bias)


def input_linear(x: NetInput, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weightᵀ (+ bias)`` for a dense or block-encoded ``x``."""
    if isinstance(x, BlockInput):
        return block_linear(x, weight, bias)
    return x @ weight.t() if bias is None else torch.addmm(bias, x, weight.t())
