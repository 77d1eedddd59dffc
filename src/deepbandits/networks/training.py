"""Training of the feature network with θ held fixed (Algorithm 1, lines 14–19).

Losses: ``mse`` is Eq. 6, Σ (θᵀφ(xᵢ; w) − rᵢ)²; ``mle`` is the Gaussian negative log-likelihood
of Eq. 14 with predictive variance φᵀA⁻¹φ. Both use θ (and A⁻¹) frozen at the start of the step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.networks.mlp import MLP

LOSSES = ("mse", "mle")
OPTIMIZERS = ("sgd", "adam")
MIN_VARIANCE = 1e-6


class History:
    """Every played round's context, reward, ridge weight and head; grows by doubling.

    The buffer receives each round as it is played (never only on training rounds), so the
    network always trains on the whole history.
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.size = 0
        self.contexts = np.empty((capacity, dim), dtype=np.float64)
        self.rewards = np.empty(capacity, dtype=np.float64)
        self.weights = np.empty(capacity, dtype=np.float64)
        self.heads = np.empty(capacity, dtype=np.int64)

    def append(self, context: NDArray[np.float64], reward: float, weight: float, head: int) -> None:
        if self.size == len(self.rewards):
            new = 2 * len(self.rewards)
            self.contexts = np.resize(self.contexts, (new, self.dim))
            for name in ("rewards", "weights", "heads"):
                setattr(self, name, np.resize(getattr(self, name), new))
        i = self.size
        self.contexts[i] = context
        self.rewards[i] = reward
        self.weights[i] = weight
        self.heads[i] = head
        self.size += 1

    def view(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        n = self.size
        return self.contexts[:n], self.rewards[:n], self.weights[:n], self.heads[:n]

    def state_dict(self) -> dict[str, Any]:
        X, r, w, h = self.view()
        return {"contexts": X.copy(), "rewards": r.copy(), "weights": w.copy(), "heads": h.copy()}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> History:
        X = np.asarray(state["contexts"], dtype=np.float64)
        hist = cls(X.shape[1], capacity=max(1024, len(X)))
        n = len(X)
        hist.contexts[:n] = X
        hist.rewards[:n] = state["rewards"]
        hist.weights[:n] = state["weights"]
        hist.heads[:n] = state["heads"]
        hist.size = n
        return hist


def make_optimizer(name: str, params: Any, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)


def train_feature_map(
    net: MLP,
    history: History,
    theta: NDArray[np.float64],
    A_inv: NDArray[np.float64],
    *,
    loss: str,
    steps: int,
    batch_size: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> float:
    """Run ``steps`` minibatch steps on the whole history with θ (and A⁻¹) fixed.

    ``theta`` is ``[n_heads, d′]`` and ``A_inv`` ``[n_heads, d′, d′]``; each sample uses its own
    head. Minibatches are drawn uniformly with replacement from all rounds played so far.
    Returns the mean loss of the last step.
    """
    device = next(net.parameters()).device
    X_np, r_np, _, h_np = history.view()
    X = torch.as_tensor(X_np, dtype=torch.float32, device=device)
    r = torch.as_tensor(r_np, dtype=torch.float32, device=device)
    heads = torch.as_tensor(h_np, device=device)
    theta_t = torch.as_tensor(theta, dtype=torch.float32, device=device)[heads]
    A_inv_t = torch.as_tensor(A_inv, dtype=torch.float32, device=device) if loss == "mle" else None
    n = X.shape[0]
    batch_loss = torch.tensor(math.nan)
    net.train()
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=generator).to(device)
        phi = net(X[idx])
        mean = (phi * theta_t[idx]).sum(dim=1)
        if loss == "mse":
            batch_loss = ((mean - r[idx]) ** 2).mean()
        else:
            var = torch.einsum("bi,bij,bj->b", phi, A_inv_t[heads[idx]], phi).clamp_min(MIN_VARIANCE)
            batch_loss = (0.5 * torch.log(2 * math.pi * var) + (r[idx] - mean) ** 2 / (2 * var)).mean()
        optimizer.zero_grad(set_to_none=True)
        batch_loss.backward()
        optimizer.step()
    net.eval()
    return float(batch_loss.detach())
