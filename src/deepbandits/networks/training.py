"""Training of the feature network with θ held fixed (Algorithm 1, lines 14–19), or trained
with it.

Losses: ``mse`` is Eq. 6, Σ (θᵀφ(xᵢ; w) − rᵢ)²; ``mle`` is the Gaussian negative log-likelihood
of Eq. 14 with predictive variance φᵀA⁻¹φ. Both use θ (and A⁻¹) frozen at the start of the step,
unless θ is trained too (``train_theta``): then θ is one more parameter of the same SGD steps,
starting from the ridge's θ, as the output layer of a network trained end to end (a reward
model's, or the neural-linear baseline of Riquelme et al., 2018). The θ so trained only shapes
φ: the ridge's θ is refitted on the new features afterwards (``refit_on_update``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
from deepbandits.networks.gradients import (
    Gradient,
    backpropagate,
    forward_cache,
    summed_gradients,
)
from deepbandits.networks.history import History
from deepbandits.networks.mlp import MLP, BlockInput, BlockOuterSum, as_input
from deepbandits.networks.optimizer import Optimizer, PlainSGD

LOSSES = ("mse", "mle")
MIN_VARIANCE = 1e-6


def loss_and_grad(
    loss: str,
    phi: torch.Tensor,
    theta: torch.Tensor,
    reward: torch.Tensor,
    A_inv: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss over a minibatch and its gradient with respect to the features ``phi``.

    ``mse`` (Eq. 6): (θᵀφ − r)². ``mle`` (Eq. 14): ½ log(2π v) + (r − θᵀφ)²/(2v) with
    v = φᵀA⁻¹φ (clamped below at 1e-6, where its gradient is zero). ``theta`` is ``[B, d′]`` or
    ``[d′]``; ``A_inv`` is ``[B, d′, d′]`` or ``[d′, d′]``.
    """
    value, grad, _ = loss_and_grads(loss, phi, theta, reward, A_inv)
    return value, grad


def loss_and_grads(
    loss: str,
    phi: torch.Tensor,
    theta: torch.Tensor,
    reward: torch.Tensor,
    A_inv: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`loss_and_grad`, and each sample's gradient with respect to θ (``[B, d′]``).

    θ enters either loss only through the mean θᵀφ, so a sample's θ-gradient is the loss's
    derivative in the mean times φ: 2(θᵀφ − r)/B · φ (Eq. 6), (θᵀφ − r)/(vB) · φ (Eq. 14).
    """
    B = phi.shape[0]
    mean = (phi * theta).sum(dim=1)
    res = mean - reward
    if loss == "mse":
        value = (res * res).mean()
        dmean = (2.0 / B) * res[:, None]
        return value, dmean * theta, dmean * phi
    assert A_inv is not None
    Aphi = torch.einsum("bij,bj->bi", A_inv, phi) if A_inv.dim() == 3 else phi @ A_inv
    v_raw = (phi * Aphi).sum(dim=1)
    v = v_raw.clamp_min(MIN_VARIANCE)
    value = (0.5 * torch.log(2 * math.pi * v) + res * res / (2 * v)).mean()
    dv = (0.5 / v - res * res / (2 * v * v)) * (v_raw > MIN_VARIANCE)
    grad = ((res / v)[:, None] * theta + (2.0 * dv)[:, None] * Aphi) / B
    return value, grad, (res / v)[:, None] * phi / B


def theta_gradient(
    per_sample: torch.Tensor, heads: torch.Tensor | None, n_heads: int
) -> torch.Tensor:
    """The minibatch gradient of each head's θ (``[n_heads, d′]``): the samples' θ-gradients
    summed by head (``heads`` None: one shared θ)."""
    if heads is None:
        return per_sample.sum(dim=0, keepdim=True)
    out = torch.zeros(
        n_heads, per_sample.shape[1], dtype=per_sample.dtype, device=per_sample.device
    )
    return out.index_add_(0, heads, per_sample)


def gradient_norm(grads: list[Gradient]) -> torch.Tensor:
    """Global L2 norm of a list of gradients (dense or :class:`BlockOuterSum`)."""
    dense = [g for g in grads if isinstance(g, torch.Tensor)]
    norms = [torch.linalg.vector_norm(torch.stack(torch._foreach_norm(dense)))] if dense else []
    norms += [g.squared_norm().sqrt() for g in grads if isinstance(g, BlockOuterSum)]
    return norms[0] if len(norms) == 1 else torch.linalg.vector_norm(torch.stack(norms))


def clip_scale(grads: list[Gradient], max_norm: float | None) -> float:
    """The factor min(1, max_norm / ‖grads‖) that clips the global gradient norm."""
    if max_norm is None:
        return 1.0
    norm = float(gradient_norm(grads))
    return max_norm / norm if norm > max_norm else 1.0


def clip_to_norm(grads: list[torch.Tensor], max_norm: float) -> None:
    """In place, scale ``grads`` so that their global L2 norm is at most ``max_norm``."""
    scale = clip_scale(list(grads), max_norm)
    if scale < 1.0:
        torch._foreach_mul_(grads, scale)


def sgd_step_(params: list[torch.Tensor], grads: list[Gradient], lr: float) -> None:
    """In place, ``p -= lr · g`` for each parameter (a factored gradient touches only the
    blocks its rows occupy)."""
    dense = [(p, g) for p, g in zip(params, grads, strict=True) if isinstance(g, torch.Tensor)]
    if dense:
        torch._foreach_add_([p for p, _ in dense], [g for _, g in dense], alpha=-lr)
    for p, g in zip(params, grads, strict=True):
        if isinstance(g, BlockOuterSum):
            g.add_to_(p, alpha=-lr)


def block_sorted(batches: torch.Tensor, slots: NDArray[np.int64]) -> torch.Tensor:
    """Each row of ``batches`` (sample indices) reordered so that its samples' blocks are
    non-decreasing: a minibatch's samples of one block are then contiguous."""
    idx = batches.cpu().numpy()
    order = np.argsort(slots[idx], axis=1, kind="stable")
    return torch.as_tensor(np.take_along_axis(idx, order, axis=1)).to(batches.device)


def autograd_gradients(
    net: torch.nn.Module,
    params: list[torch.Tensor],
    x: Any,
    loss: str,
    theta: torch.Tensor,
    reward: torch.Tensor,
    A_inv: torch.Tensor | None,
) -> tuple[torch.Tensor, list[Gradient], torch.Tensor]:
    """The minibatch loss, its gradient for each of ``params`` and each sample's θ-gradient
    (:func:`loss_and_grads`), by autograd: the path of a network other than
    :class:`~deepbandits.networks.mlp.MLP` (a convolutional trunk)."""
    with torch.enable_grad():
        out = net(x)
        value, g, g_theta = loss_and_grads(loss, out.detach(), theta, reward, A_inv)
        grads = torch.autograd.grad(out, params, g)
    return value, list(grads), g_theta


def train_feature_map(
    net: torch.nn.Module,
    history: History,
    theta: NDArray[np.float64],
    A_inv: NDArray[np.float64],
    *,
    loss: str,
    steps: int,
    batch_size: int,
    optimizer: Optimizer,
    generator: torch.Generator,
    max_grad_norm: float | None = None,
    train_theta: bool = False,
) -> float:
    """Run ``steps`` minibatch steps on the whole history with θ (and A⁻¹) fixed, or with θ
    trained too (``train_theta``: a copy of ``theta``, by the same steps; ``theta`` itself is
    left as it is).

    ``theta`` is ``[n_heads, d′]`` and ``A_inv`` ``[n_heads, d′, d′]``; each sample uses its own
    head. Minibatches are drawn uniformly with replacement from all rounds played so far.
    The gradient of the ReLU network is computed by an explicit backward pass
    (:func:`loss_and_grad`, then :mod:`deepbandits.networks.gradients`), about three times faster
    than autograd for networks this small (a :class:`~deepbandits.networks.conv.ConvNet` uses
    autograd: :func:`autograd_gradients`); plain SGD is applied in place, other optimizers
    through their ``step``. With ``max_grad_norm``, a minibatch gradient whose global L2 norm
    exceeds it is scaled down to that norm before the step (θ's gradient counted in, when
    trained). Returns the mean loss of the last minibatch.

    On block-encoded contexts each minibatch is sorted by block, and plain SGD without weight
    decay keeps the first layer's gradient as its factors (:class:`BlockOuterSum`): its norm
    comes from per-block Gram matrices and the step updates only the occupied blocks of W₁, so
    no dense ``[m, K·D]`` gradient is formed (on MNIST, twice as fast per step; the same result
    up to rounding, which ``tests/test_encoding.py`` checks).
    """
    if steps == 0 or history.size == 0:
        return math.nan
    device = next(net.parameters()).device
    X_np, r_np, _, h_np = history.view()
    X = as_input(X_np, device)
    r = torch.as_tensor(r_np, dtype=torch.float32, device=device)
    shared = theta.shape[0] == 1
    theta_t = torch.as_tensor(theta, dtype=torch.float32, device=device)
    A_inv_t = torch.as_tensor(A_inv, dtype=torch.float32, device=device) if loss == "mle" else None
    heads = torch.as_tensor(h_np, device=device)
    n = X.shape[0]
    batches = torch.randint(0, n, (steps, min(batch_size, n)), generator=generator).to(device)
    if isinstance(X, BlockInput):
        batches = block_sorted(batches, X.slots)
    params = list(net.parameters())
    explicit = isinstance(net, MLP)
    buffers = [torch.empty_like(p) for p in params] if explicit else []
    group = optimizer.param_groups[0]
    manual_sgd = isinstance(optimizer, PlainSGD)
    if train_theta and not manual_sgd:
        raise InputValueError(
            "train_theta=True steps θ by plain SGD with the network; expected optimizer='sgd', "
            f"got {type(optimizer).__name__}"
        )
    thetas = theta_t.clone() if train_theta else theta_t
    stepped = [*params, thetas] if train_theta else params  # what each SGD step moves
    lr, wd = group["lr"], group["weight_decay"]
    factored = explicit and manual_sgd and not wd and isinstance(X, BlockInput)
    value = torch.tensor(math.nan)
    with torch.no_grad():
        for s in range(steps):
            idx = batches[s]
            xb = X.take(idx) if isinstance(X, BlockInput) else X[idx]
            hb = None if shared else heads[idx]
            if hb is None:
                th, Ai = thetas[0], (A_inv_t[0] if A_inv_t is not None else None)
            else:
                th, Ai = thetas[hb], (A_inv_t[hb] if A_inv_t is not None else None)
            if not explicit:
                value, grads, g_theta = autograd_gradients(net, params, xb, loss, th, r[idx], Ai)
            else:
                pres, acts = forward_cache(net, xb)
                value, g, g_theta = loss_and_grads(loss, acts[-1], th, r[idx], Ai)
                grads = summed_gradients(backpropagate(net, pres, g), acts, buffers, factored)
            if train_theta:
                grads = [*grads, theta_gradient(g_theta, hb, thetas.shape[0])]
            if factored:
                sgd_step_(stepped, grads, lr * clip_scale(grads, max_grad_norm))
                continue
            dense = [gp.dense() if isinstance(gp, BlockOuterSum) else gp for gp in grads]
            if max_grad_norm is not None:
                clip_to_norm(dense, max_grad_norm)
            if manual_sgd:
                if wd:
                    torch._foreach_add_(dense, stepped, alpha=wd)
                torch._foreach_add_(stepped, dense, alpha=-lr)
            else:
                for p, gp in zip(params, dense, strict=True):
                    p.grad = gp
                optimizer.step()
    return float(value)
