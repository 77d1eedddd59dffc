"""How low MNIST's regret can go with this network when every label is seen (not a test):
``python benchmarks/records_full_information.py [--network shared|disjoint] [--seeds 1,2,3]
[--T 10000]``.

A bandit policy learns one reward per round, the played arm's. This script plays MNIST's stream
(``make_env("mnist", seed=s)``: the same images in the same order, preprocessed as the recommended
settings do) with full information instead: each round the network predicts a label (its
mistakes are the regret a policy playing that label would pay), then learns the label. The
network has the recommended settings' shape, 784 → 100 → 64 (ReLU) and a linear output, and
trains on the recommended MNIST schedule: every 10 rounds before t₀ = 1,000, 2,000
single-sample SGD steps at learning rate 0.01; from there every 50 rounds, 300 steps on
minibatches of 64 at 0.1, sampled from everything seen.

- ``--network disjoint`` (the default): the policies' network (the shape and initial
  distribution of :class:`deepbandits.networks.mlp.MLP` on the disjoint encoding, K = 10,
  d = 7,840: a first layer per arm, the rest shared) with a linear output, trained by squared
  error on (image, arm, 1 if the arm is the label) for every arm of every round seen: what the
  policies' network learns if it were told every arm's reward. It predicts the arm of the
  largest output.
- ``--network shared``: one first layer for every class and ten outputs, trained by softmax
  cross-entropy on (image, label): the usual classifier of this size.
- ``--network lenet``: the same classifier behind a LeNet trunk on the 28×28 image (5×5
  convolutions of 8 and 16 channels, each with a ReLU and 2×2 max pooling): how much a
  convolution saves over the perceptron on the same stream and schedule (about 1,100 s per seed).

Full information only adds data, so the mistakes are a reference point below what a policy
with this network and schedule reaches: the rest of its regret is the price of bandit feedback.

Appends one row per seed to ``benchmarks/results/records_mnist_full_information.csv``: the
network, the cumulative mistakes at t = 1,000, 2,000, 4,096, 5,000 and T, and the wall time
(about 500 s per seed for the disjoint network, 200 s for the shared one, on one thread).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.specs import parse_seeds

RESULTS = Path(__file__).resolve().parent / "results"
MARKS = (1000, 2000, 4096, 5000)


def stream(seed: int, T: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``T`` images (preprocessed) and labels that ``make_env("mnist", seed=seed)``
    shows, in its order."""
    env = db.make_env("mnist", seed=seed)
    images, labels = [], []
    for _ in range(T):
        r = env.next_round()
        images.append(np.asarray(r.contexts.blocks[0], dtype=np.float32))
        labels.append(int(np.argmax(r.expected_rewards)))
    return np.stack(images), np.asarray(labels)


class Disjoint(nn.Module):
    """The policies' network on the disjoint encoding (the shape and initial distribution of
    :class:`~deepbandits.networks.mlp.MLP` on K blocks of D) with a linear output: f(x, k).

    The first layer is kept as one [100, D] weight per arm, so that a step touches, and SGD
    updates, only the arms it saw (autograd through the [100, K·D] matrix would update all of
    it at every step: 2.8 ms per single-sample step instead of about 0.4).
    """

    def __init__(self, D: int, K: int, generator: torch.Generator) -> None:
        super().__init__()
        bound = (K * D) ** -0.5  # MLP's first layer: PyTorch's default for K·D inputs
        self.first = nn.ParameterList(
            nn.Parameter(torch.empty(100, D).uniform_(-bound, bound, generator=generator))
            for _ in range(K)
        )
        self.bias = nn.Parameter(torch.empty(100).uniform_(-bound, bound, generator=generator))
        self.hidden = nn.Linear(100, 64)
        self.out = nn.Linear(64, 1)
        with torch.no_grad():
            for layer in (self.hidden, self.out):
                b = layer.in_features**-0.5
                layer.weight.uniform_(-b, b, generator=generator)
                layer.bias.uniform_(-b, b, generator=generator)

    def forward(self, images: torch.Tensor, arms: np.ndarray) -> torch.Tensor:
        h = torch.zeros(len(arms), 100)
        for k in np.unique(arms):
            rows = torch.from_numpy(np.flatnonzero(arms == k))
            h = h.index_add(0, rows, images[rows] @ self.first[int(k)].t())
        h = torch.relu(h + self.bias)
        return self.out(torch.relu(self.hidden(h))).squeeze(1)


def full_information_mistakes(seed: int, T: int, network: str) -> dict[str, object]:
    """Cumulative mistakes of ``network`` trained on every label seen (the module's notes)."""
    torch.manual_seed(seed)
    X, y = stream(seed, T)
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
    K = 10
    if network == "disjoint":
        net: nn.Module = Disjoint(X.shape[1], K, torch.Generator().manual_seed(seed))
        all_arms = np.arange(K)

        def predict(t: int) -> int:
            return int(net(X_t[t].expand(K, -1), all_arms).argmax())

        def loss(rows: np.ndarray) -> torch.Tensor:  # rows: pairs t·K + k
            t, k = rows // K, rows % K
            target = (y_t[t] == torch.from_numpy(k)).float()
            return F.mse_loss(net(X_t[t], k), target)

        per_round = K
    else:
        trunk: list[nn.Module] = []
        width = X.shape[1]
        if network == "lenet":
            trunk = [nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2)]
            trunk += [nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()]
            width = 16 * 4 * 4
        net = nn.Sequential(
            *trunk,
            nn.Linear(width, 100),
            nn.ReLU(),
            nn.Linear(100, 64),
            nn.ReLU(),
            nn.Linear(64, K),
        )

        def predict(t: int) -> int:
            return int(net(X_t[t : t + 1]).argmax())

        def loss(rows: np.ndarray) -> torch.Tensor:
            return F.cross_entropy(net(X_t[rows]), y_t[rows])

        per_round = 1
    rng = np.random.default_rng(seed)
    mistakes = np.zeros(T)
    start = time.perf_counter()
    for t in range(T):
        with torch.no_grad():
            mistakes[t] = float(predict(t) != y[t])
        seen = t + 1
        if seen < 1000 and seen % 10 == 0:
            steps, batch, lr = 2000, 1, 0.01
        elif seen >= 1000 and seen % 50 == 0:
            steps, batch, lr = 300, 64, 0.1
        else:
            continue
        for rows in rng.integers(0, seen * per_round, size=(steps, batch)):
            net.zero_grad(set_to_none=True)
            loss(rows).backward()
            with torch.no_grad():
                for p in net.parameters():
                    if p.grad is not None:  # the arms a step did not see
                        p.add_(p.grad, alpha=-lr)
    cum = np.cumsum(mistakes)
    row = {"network": network, "seed": seed}
    row.update({f"mistakes_{m}": float(cum[m - 1]) for m in MARKS if m <= T})
    seconds = round(time.perf_counter() - start, 1)
    return {**row, "T": T, "mistakes": float(cum[-1]), "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", choices=("shared", "disjoint", "lenet"), default="disjoint")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--T", type=int, default=10000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out = RESULTS / "records_mnist_full_information.csv"
    for seed in parse_seeds(args.seeds):
        row = full_information_mistakes(seed, args.T, args.network)
        print(row, flush=True)
        old = pd.read_csv(out) if out.exists() else pd.DataFrame()
        table = pd.concat([old, pd.DataFrame([row])], ignore_index=True)
        write_atomic(out, table.to_csv(index=False).encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
