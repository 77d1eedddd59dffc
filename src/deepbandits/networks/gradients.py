"""Explicit forward and backward passes of the ReLU perceptron, batched over samples.

For the small networks of the paper an explicit chain rule is several times faster than autograd,
and it gives per-sample gradients in one pass: the gradient of a linear layer for sample b is the
outer product δ_b a_bᵀ of the back-propagated error δ_b and the layer's input a_b. The parameter
order is that of ``MLP.parameters()`` (weight, then bias, layer by layer). A
:class:`~deepbandits.networks.conv.ConvNet`'s perceptron takes the same path, and only its
convolutional trunk is differentiated by ``torch.func`` (:func:`network_output_gradients`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.func import functional_call, grad, vmap

from deepbandits.errors import InputValueError
from deepbandits.networks.conv import ConvNet
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


def trunk_gradients(
    net: ConvNet, images: torch.Tensor, cotangents: torch.Tensor
) -> list[torch.Tensor]:
    """∇_θ ⟨trunk(image_b; θ), v_b⟩ for every image, for each trunk parameter ``[m, *shape]``:
    the per-image vector-Jacobian products of the convolutional trunk, by ``torch.func`` (vmap
    of one image's gradient)."""
    params = {name: p.detach() for name, p in net.trunk.named_parameters()}

    def projected(p: dict[str, torch.Tensor], image: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return (functional_call(net.trunk, p, (image[None],))[0] * v).sum()

    grads = vmap(grad(projected), in_dims=(None, 0, 0))(params, images, cotangents)
    return [grads[name] for name in params]


def network_output_gradients(
    net: MLP | ConvNet, x: NetInput
) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[Any]]:
    """f(x_b; w) and the parts of ∇_w f(x_b; w): ``(f, trunk, deltas, acts)``.

    ``deltas`` and ``acts`` are the perceptron's (:func:`output_gradients`: the gradient of
    its layers without forming it); ``trunk`` holds, for a :class:`ConvNet`, each trunk
    parameter's gradient of every row ``[B, *shape]`` (empty for an :class:`MLP`). The error
    at the perceptron's input, δ₁W₁ restricted to each image's block, is pulled back through
    the trunk (:func:`trunk_gradients`); the rows' images are summed for a dense row.
    """
    if isinstance(net, MLP):
        f, deltas, acts = output_gradients(net, x)
        return f, [], deltas, acts
    images, head_input = net.trunk_input(x)
    f, deltas, acts = output_gradients(net.head, head_input)
    weight = net.head.layers[0].weight
    if isinstance(head_input, BlockInput):
        slots = torch.tensor(x.slots, device=weight.device)
        blocks = weight.view(weight.shape[0], x.n_blocks, net.trunk_dim)[:, slots, :]
        cotangents = torch.einsum("bh,hbd->bd", deltas[0], blocks)
        return f, trunk_gradients(net, images, cotangents), deltas, acts
    B = head_input.shape[0]
    cotangents = (deltas[0] @ weight).reshape(len(images), net.trunk_dim)
    grads = trunk_gradients(net, images, cotangents)
    return f, [g.reshape(B, -1, *g.shape[1:]).sum(dim=1) for g in grads], deltas, acts


def per_sample_gradients(net: MLP | ConvNet, x: NetInput) -> tuple[torch.Tensor, torch.Tensor]:
    """f(x_b; w) and ∇_w f(x_b; w) for every row of ``x`` in one pass: ``([B], [B, p])``, in
    ``net.parameters()`` order."""
    if isinstance(x, BlockInput) and isinstance(net, MLP):
        x = x.dense()
    f, trunk, deltas, acts = network_output_gradients(net, x)
    B = f.shape[0]
    parts = [g.reshape(B, -1) for g in trunk]
    for delta, a in zip(deltas, acts, strict=False):
        dense = a.dense() if isinstance(a, BlockInput) else a
        parts += [(delta[:, :, None] * dense[:, None, :]).reshape(B, -1), delta]
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
    (:func:`trunk_gradients`) and z of each parameter ``[*shape]``."""
    total = torch.zeros(grads[0].shape[0], dtype=z_diag[0].dtype, device=grads[0].device)
    for g, z in zip(grads, z_diag, strict=True):
        total += ((g * g).to(z.dtype) / z).flatten(1).sum(dim=1)
    return total
