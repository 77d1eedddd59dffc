"""The library's network as a reward model: a scikit-learn regressor around
:class:`~deepbandits.networks.MLP` (linear last layer, as the scalar reward model of NeuralUCB),
trained by Adam on the squared error with inputs standardised."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin

from deepbandits.networks import MLP

Array = NDArray[np.float64]


class NetworkRegressor(RegressorMixin, BaseEstimator):
    """f(x; w) fitted by minibatch Adam on ½(f(x) − y)².

    Parameters
    ----------
    hidden : int, default=64
        Width of the hidden layer.
    n_layers : int, default=2
        Weight matrices (2: d → hidden → 1).
    epochs : int, default=20
    batch_size : int, default=256
    lr : float, default=1e-2
    weight_decay : float, default=1e-4
    seed : int, optional
        Seeds the initial weights and the minibatches.
    """

    def __init__(
        self,
        hidden: int = 64,
        n_layers: int = 2,
        epochs: int = 20,
        batch_size: int = 256,
        lr: float = 1e-2,
        weight_decay: float = 1e-4,
        seed: int | None = 0,
    ) -> None:
        self.hidden = hidden
        self.n_layers = n_layers
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.seed = seed

    def fit(self, X: Array, y: Array) -> NetworkRegressor:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0) + 1e-8
        gen = torch.Generator().manual_seed(0 if self.seed is None else int(self.seed))
        net = MLP(X.shape[1], self.hidden, self.n_layers, 1, gen, output_activation=False)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        xt = torch.as_tensor((X - self.mean_) / self.scale_, dtype=torch.float32)
        yt = torch.as_tensor(y, dtype=torch.float32)
        for _ in range(self.epochs):
            order = torch.randperm(len(xt), generator=gen)
            for start in range(0, len(xt), self.batch_size):
                idx = order[start : start + self.batch_size]
                loss = 0.5 * ((net(xt[idx]).squeeze(1) - yt[idx]) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.network_ = net
        return self

    def predict(self, X: Array) -> Array:
        xt = torch.as_tensor((np.asarray(X) - self.mean_) / self.scale_, dtype=torch.float32)
        with torch.no_grad():
            return self.network_(xt).squeeze(1).double().numpy()
