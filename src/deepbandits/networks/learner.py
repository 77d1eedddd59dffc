"""A network together with its optimizer, its training history and its training schedule.

Every neural policy (the neural-linear family, NeuralUCB/NeuralTS, SAVE on neural features,
each member of BootstrappedNN) owns one or more :class:`NetworkLearner`; the constructor
parameters they share are checked once by :func:`check_network_params`.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits._threads import training_threads
from deepbandits._validation import check_choice
from deepbandits.encoding import Contexts
from deepbandits.errors import InputValueError
from deepbandits.networks.conv import ConvNet, build_network
from deepbandits.networks.history import History
from deepbandits.networks.mlp import MLP, as_input
from deepbandits.networks.optimizer import make_optimizer
from deepbandits.networks.schedule import TrainSchedule, resolve_schedule
from deepbandits.networks.training import LOSSES, train_feature_map

#: Rounds a network's training history keeps by default: above the longest run of the paper
#: (T = 30,000), so every experiment of the paper trains on its whole history, bit for bit as
#: without a cap; the README's "Memory per round" gives the memory this bounds.
DEFAULT_MAX_HISTORY = 100_000

#: Parameters every neural policy accepts, with their defaults (documented in
#: :class:`~deepbandits.policies.parts.NetworkFeatures`, the network, and
#: :class:`~deepbandits.policies.parts.Trainer`, its training).
NETWORK_PARAMS: dict[str, Any] = {
    "network": "mlp",
    "hidden": 100,
    "n_layers": 2,
    "train_schedule": "default",
    "train_every": None,
    "train_start": None,
    "warmup_every": None,
    "train_steps": None,
    "batch_size": None,
    "warmup_steps": None,
    "warmup_batch_size": None,
    "warmup_lr": None,
    "optimizer": "sgd",
    "lr": 1e-2,
    "weight_decay": 0.0,
    "max_grad_norm": 10.0,
    "max_history": DEFAULT_MAX_HISTORY,
    "device": "cpu",
}

#: The schedule and weight decay of :data:`NETWORK_PARAMS`: what NeuralUCB, NeuralTS and
#: BootstrappedNN train with, and what the ridge family trained with before its own defaults
#: (:data:`~deepbandits.policies.recipes.NEURAL_DEFAULTS`). The paper datasets' settings, the
#: matched protocol's budget and ``benchmarks/defaults.py``'s old setting pin it.
PLAIN_TRAINING: dict[str, Any] = {k: NETWORK_PARAMS[k] for k in ("train_schedule", "weight_decay")}

_ONE = np.ones((1, 1))
SCHEDULE_FIELDS = (
    "train_every",
    "train_start",
    "warmup_every",
    "train_steps",
    "batch_size",
    "warmup_steps",
    "warmup_batch_size",
    "warmup_lr",
)


def parse_device(device: str) -> torch.device:
    """``device`` as a torch device, or an :class:`InputValueError` naming it."""
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputValueError(
            f"device {device!r} is not a torch device (try 'cpu' or 'cuda')"
        ) from exc


def check_device(device: str) -> torch.device:
    """A torch device that exists here; ``cuda`` without a GPU is an error, not a fallback."""
    dev = parse_device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputValueError(f"device {device!r} was asked for, but CUDA is not available here")
    if dev.type not in ("cpu", "cuda"):
        raise InputValueError(f"device {device!r} is not supported; use 'cpu' or 'cuda'")
    return dev


def check_network_params(p: dict[str, Any]) -> tuple[TrainSchedule, torch.device]:
    """The training schedule and the device that the :data:`NETWORK_PARAMS` entries of ``p``
    define; each entry alone is checked by its spec
    (:data:`~deepbandits.policies.params.NETWORK_SPECS`)."""
    schedule = resolve_schedule(p["train_schedule"], {k: p[k] for k in SCHEDULE_FIELDS})
    return schedule, check_device(p["device"])


def seeded_generator(seed: int | None) -> torch.Generator:
    """A torch generator derived from the policy's seed (fresh entropy when ``seed`` is None)."""
    gen = torch.Generator()
    gen.manual_seed(
        int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is not None else torch.seed()
    )
    return gen


class NetworkLearner:
    """A network, its optimizer and the rounds it trains on.

    Parameters
    ----------
    network : MLP or ConvNet
        The network trained (a feature map's, or a reward model).
    in_dim : int
        Context dimension (of the history's rows).
    optimizer, lr, weight_decay, max_grad_norm, max_history
        As the :data:`NETWORK_PARAMS` of the same names.
    """

    def __init__(
        self,
        network: MLP | ConvNet,
        in_dim: int,
        *,
        optimizer: str,
        lr: float,
        weight_decay: float,
        max_grad_norm: float | None,
        max_history: int | None,
    ) -> None:
        self.network = network
        self.device = next(network.parameters()).device
        self.max_grad_norm = max_grad_norm
        self.optimizer = make_optimizer(optimizer, network.parameters(), lr, weight_decay)
        self.history = History(
            in_dim, max_history=None if max_history is None else int(max_history)
        )
        self.n_trainings = 0
        self.n_diverged = 0
        self.last_loss = math.nan

    @classmethod
    def build(
        cls,
        in_dim: int,
        out_dim: int,
        *,
        output_activation: bool,
        params: dict[str, Any],
        device: torch.device,
        generator: torch.Generator,
        block_dim: int | None = None,
    ) -> NetworkLearner:
        """A new network (``network``, ``hidden``, ``n_layers`` of ``params``, initial weights
        from ``generator``; :func:`~deepbandits.networks.conv.build_network`) with its learner,
        for contexts of ``in_dim`` columns in blocks of ``block_dim``."""
        network = build_network(
            params["network"],
            in_dim,
            params["hidden"],
            params["n_layers"],
            out_dim,
            generator,
            output_activation,
            block_dim,
        )
        network.to(device).eval()
        return cls(
            network,
            in_dim,
            **{k: params[k] for k in ("optimizer", "lr", "weight_decay", "max_grad_norm")},
            max_history=params["max_history"],
        )

    def forward(self, X: Contexts) -> NDArray[np.float64]:
        """Network output for each row of ``X``, as float64 numpy.

        Block-encoded contexts (Section 5.2) skip their zero blocks in the first layer.
        """
        with torch.no_grad():
            out = self.network.forward(as_input(X, self.device))  # no module hooks to run
            return out.to("cpu", torch.float64).numpy()

    def train(
        self,
        theta: NDArray[np.float64],
        A_inv: NDArray[np.float64],
        *,
        loss: str,
        schedule: TrainSchedule,
        generator: torch.Generator,
        steps: int | None = None,
        t: int | None = None,
        train_theta: bool = False,
    ) -> float:
        """Train on the whole history with the head θ (and A⁻¹) fixed, or with a copy of θ
        trained too (``train_theta``); the last minibatch loss.

        The schedule's training after round ``t`` (default: the rounds the history has seen)
        gives the number of steps (unless ``steps``), the minibatch size and the learning rate
        (:meth:`~deepbandits.networks.schedule.TrainSchedule.training`).

        A training that diverges (a non-finite loss or weight: contexts or rewards of a scale the
        learning rate cannot take) is undone: the network and the optimizer go back to their
        state before it, a ``RuntimeWarning`` says so, and :attr:`n_diverged` counts it. One bad
        training never leaves NaN weights behind.
        """
        check_choice(loss, "loss", LOSSES)
        before = copy.deepcopy((self.network.state_dict(), self.optimizer.state_dict()))
        training = schedule.training(self.history.seen if t is None else t)
        groups = self.optimizer.param_groups
        rates = [group["lr"] for group in groups]
        if training.lr is not None:
            for group in groups:
                group["lr"] = training.lr
        try:
            with training_threads():  # the caller's thread count, not a decision's
                self.last_loss = train_feature_map(
                    self.network,
                    self.history,
                    theta,
                    A_inv,
                    loss=loss,
                    steps=training.steps if steps is None else steps,
                    batch_size=training.batch_size,
                    optimizer=self.optimizer,
                    generator=generator,
                    max_grad_norm=self.max_grad_norm,
                    train_theta=train_theta,
                )
        finally:
            for group, lr in zip(groups, rates, strict=True):
                group["lr"] = lr
        self.n_trainings += 1
        finite = math.isfinite(self.last_loss) and all(
            bool(torch.isfinite(w).all()) for w in self.network.parameters()
        )
        if not finite:
            self.network.load_state_dict(before[0])
            self.optimizer.load_state_dict(before[1])
            self.n_diverged += 1
            warnings.warn(
                f"network training {self.n_trainings} diverged (loss {self.last_loss}) and was "
                "undone; standardise the contexts and rewards, lower lr or set max_grad_norm",
                RuntimeWarning,
                stacklevel=3,
            )
        return self.last_loss

    def train_reward_model(
        self, schedule: TrainSchedule, generator: torch.Generator, t: int | None = None
    ) -> float:
        """Train a scalar network f(x; w) on its history by MSE (Eq. 6 with θ = 1), as the
        schedule trains after round ``t`` (default: the rounds the history has seen)."""
        return self.train(_ONE, _ONE[None], loss="mse", schedule=schedule, generator=generator, t=t)

    def state_dict(self) -> dict[str, Any]:
        return {
            "network": {k: v.detach().cpu() for k, v in self.network.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "history": self.history.state_dict(),
            "n_trainings": self.n_trainings,
            "n_diverged": self.n_diverged,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; without ``"network"`` the weights are left as they are
        (a feature map saves its network itself)."""
        if "network" in state:
            self.network.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.history.load_state_dict(state["history"])
        self.n_trainings = int(state["n_trainings"])
        self.n_diverged = int(state.get("n_diverged", 0))
