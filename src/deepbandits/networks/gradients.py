"""Explicit forward and backward passes of the ReLU perceptron, batched over samples.

For the small networks of the paper an explicit chain rule is several times faster than autograd,
and it gives per-sample gradients in one pass: the gradient of a linear layer for sample b is the
outer product δ_b a_bᵀ of the back-propagated error δ_b and the layer's input a_b. The parameter
order is that of ``MLP.parameters()`` (weight, then bias, layer by layer).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.func import functional_call, grad_and_value, vmap

from deepbandits.errors import InputValueError
from deepbandits.networks.mlp import (
    MLP,
    BlockInput,
    BlockOuterSum,
    NetInput,
    block_weight_gradient,
    input_linear,
)


def forward_cache(net: MLP, x: NetInput) -> tuple[list[torch.Tensor], list[Any]]:
    """Pre-activations of every layer and the inputs of every layer plus the output.

    Returns ``(pres, acts)`` with ``acts[0] = x`` (dense or a
    :class:`~deepbandits.networks.mlp.BlockInput`), ``acts[-1]`` the network output and
    ``pres[i] = acts[i] W_iᵀ + b_i``.
    """
    acts: list[Any] = [x]
    pres: list[torch.Tensor] = []
    for i, layer in enumerate(net.layers):
        pre = input_linear(acts[-1], layer.weight, layer.bias)
        pres.append(pre)
        acts.append(pre.clamp_min(0.0) if net.activated(i) else pre)
    return pres, acts


def backpropagate(net: MLP, pres: list[torch.Tensor], grad_out: torch.Tensor) -> list[torch.Tensor]:
    """Per-sample errors δᵢ = ∂ℓ_b/∂preᵢ of every layer, given ``grad_out`` = ∂ℓ_b/∂output."""
    deltas: list[torch.Tensor] = []
    g = grad_out
    for i in range(len(net.layers) - 1, -1, -1):
        if net.activated(i):
            g = g * (pres[i] > 0)
        deltas.insert(0, g)
        if i > 0:
            g = g @ net.layers[i].weight
    return deltas


#: A parameter's gradient: a tensor, or a block-encoded layer's weight gradient kept as factors.
Gradient = torch.Tensor | BlockOuterSum


def summed_gradients(
    deltas: list[torch.Tensor],
    acts: list[Any],
    out: list[torch.Tensor] | None = None,
    factored: bool = False,
) -> list[Gradient]:
    """Gradients of Σ_b ℓ_b with respect to each parameter, in ``MLP.parameters()`` order.

    With ``out`` (one tensor shaped like each parameter) they are written there, so a training
    loop allocates no gradient memory per step. With ``factored``, the weight gradient of a
    block-encoded input is returned as a :class:`~deepbandits.networks.mlp.BlockOuterSum`
    instead of a dense matrix.
    """
    grads: list[Gradient] = []
    for i, (delta, a) in enumerate(zip(deltas, acts, strict=False)):
        w_out, b_out = (out[2 * i], out[2 * i + 1]) if out is not None else (None, None)
        weight_grad: Gradient
        if isinstance(a, BlockInput) and factored:
            weight_grad = BlockOuterSum(delta, a)
        elif isinstance(a, BlockInput):
            weight_grad = block_weight_gradient(delta, a, w_out)
        elif w_out is not None:
            weight_grad = torch.matmul(delta.t(), a, out=w_out)
        else:
            weight_grad = delta.t() @ a
        bias_grad = delta.sum(dim=0) if b_out is None else torch.sum(delta, dim=0, out=b_out)
        grads += [weight_grad, bias_grad]
    return grads


def output_gradients(net: MLP, x: NetInput) -> tuple[torch.Tensor, list[torch.Tensor], list[Any]]:
    """Scalar outputs f(x_b; w) and the errors and inputs that make up ∇_w f(x_b; w).

    Returns ``(f, deltas, acts)``; :func:`per_sample_gradients` flattens them and
    :func:`diagonal_quadratic_form` uses them without building the gradient vectors.
    """
    if net.layers[-1].out_features != 1:
        raise InputValueError("gradient features need a network with a single output")
    pres, acts = forward_cache(net, x)
    deltas = backpropagate(net, pres, torch.ones_like(acts[-1]))
    return acts[-1][:, 0], deltas, acts


def sample_gradients(net: torch.nn.Module, x: NetInput) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """f(x_b; w) ``[B]`` and, for each parameter, ∇ f(x_b; w) of every row ``[B, *shape]``, by
    ``torch.func`` (the gradient of one row's output, vmapped over the rows): the path of a
    network without an explicit backward pass (a :class:`~deepbandits.networks.conv.ConvNet`;
    a block-encoded row goes in as its one image and the one-hot of its block)."""
    params = {name: p.detach() for name, p in net.named_parameters()}
    if isinstance(x, BlockInput):
        slots = torch.tensor(x.slots, device=x.blocks.device)
        hot = torch.nn.functional.one_hot(slots, x.n_blocks).to(x.blocks.dtype)

        def block_output(
            p: dict[str, torch.Tensor], image: torch.Tensor, h: torch.Tensor
        ) -> torch.Tensor:
            return functional_call(net, p, (image[None], h[None]))[0, 0]

        step = vmap(grad_and_value(block_output), in_dims=(None, 0, 0))
        grads, f = step(params, x.blocks, hot)
    else:

        def row_output(p: dict[str, torch.Tensor], row: torch.Tensor) -> torch.Tensor:
            return functional_call(net, p, (row[None],))[0, 0]

        grads, f = vmap(grad_and_value(row_output), in_dims=(None, 0))(params, x)
    return f, [grads[name] for name in params]


def per_sample_gradients(net: torch.nn.Module, x: NetInput) -> tuple[torch.Tensor, torch.Tensor]:
    """f(x_b; w) and ∇_w f(x_b; w) for every row of ``x`` in one pass: ``([B], [B, p])``."""
    if not isinstance(net, MLP):
        f, grads = sample_gradients(net, x)
        return f, torch.cat([g.flatten(1) for g in grads], dim=1)
    f, deltas, acts = output_gradients(net, x.dense() if isinstance(x, BlockInput) else x)
    B = x.shape[0]
    parts = []
    for delta, a in zip(deltas, acts, strict=False):
        parts += [(delta[:, :, None] * a[:, None, :]).reshape(B, -1), delta]
    return f, torch.cat(parts, dim=1)


def squared(a: NetInput, dtype: torch.dtype) -> NetInput:
    """Elementwise square of a dense or block-encoded layer input, as ``dtype``."""
    if isinstance(a, BlockInput):
        return a.map(lambda b: (b * b).to(dtype))
    return (a * a).to(dtype)


def diagonal_quadratic_form(
    deltas: list[torch.Tensor], acts: list[Any], inv_diag: list[torch.Tensor]
) -> torch.Tensor:
    """gᵀ diag(z)⁻¹ g for each sample's gradient g, without forming g.

    ``inv_diag`` holds 1/z for each parameter tensor (weight ``[out, in]``, bias ``[out]``). For
    a weight, Σᵢₖ δ_bi² a_bk² / z_ik = Σᵢ δ_bi² (z⁻¹ a_b²)ᵢ: one matrix product per layer (only
    the occupied block of z⁻¹ for a block-encoded input).
    """
    dtype = inv_diag[0].dtype
    total = torch.zeros(deltas[0].shape[0], dtype=dtype, device=deltas[0].device)
    for i, (delta, a) in enumerate(zip(deltas, acts, strict=False)):
        d2 = (delta * delta).to(dtype)
        a2 = squared(a, dtype)
        if isinstance(a2, BlockInput):
            total += (input_linear(a2, inv_diag[2 * i], None) * d2).sum(dim=1)
        else:
            total += ((d2 @ inv_diag[2 * i]) * a2).sum(dim=1)
        total += d2 @ inv_diag[2 * i + 1]
    return total


def diagonal_quadratic_form_of(
    grads: list[torch.Tensor], z_diag: list[torch.Tensor]
) -> torch.Tensor:
    """gᵀ diag(z)⁻¹ g for each row's gradient, given as per-parameter tensors ``[B, *shape]``
    (:func:`sample_gradients`) and z of each parameter ``[*shape]``."""
    total = torch.zeros(grads[0].shape[0], dtype=z_diag[0].dtype, device=grads[0].device)
    for g, z in zip(grads, z_diag, strict=True):
        total += ((g * g).to(z.dtype) / z).flatten(1).sum(dim=1)
    return total
