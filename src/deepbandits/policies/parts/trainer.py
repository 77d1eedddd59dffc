"""The trainer: how a feature network learns from the rounds played (Algorithm 1, lines 12–14).

A :class:`Trainer` keeps every round for training (its history, a sliding window of
``max_history`` rounds), trains the feature network of a
:class:`~deepbandits.policies.parts.features.NetworkFeatures` on it with the head's θ fixed when
its schedule says so (Eq. 6, or the likelihood of Eq. 14), optionally refits the head on the new
features, and moves the head's prior during the warm-up (``lam_warmup``,
:func:`~deepbandits.formulas.warmup_prior`).

By default a training runs inside the ``learn`` call whose round the schedule names. A service
that trains off the request path (:mod:`deepbandits.serve.training`) calls :meth:`Trainer.defer`:
``learn`` then still records the rounds and moves the prior, and only notes in
:attr:`Trainer.due_` that a training is due. The deferred training then takes three steps:

1. :meth:`Trainer.prepare_training` (the policy's ``prepare_training``), under the caller's lock:
   a :class:`TrainingJob`, a copy of the network learner (network, optimizer, history), of the
   head's θ and A⁻¹ and of the training generator, what a training inside ``learn`` would have
   read at that moment;
2. :func:`run_training`, without the lock, anywhere (the job pickles: a service runs it in a
   process of its own): the copy trains exactly as :meth:`Trainer.train` would (same loss,
   schedule and minibatch draws) and the network version comes back, a dict of tensors and
   plain values that ``torch.load(weights_only=True)`` reads;
3. :meth:`Trainer.apply_training` (the policy's ``apply_training``), under the lock: the new
   weights, optimizer state, generator state and training counters replace the live ones at
   once (with ``refit_on_update``, A and b are refitted on the rounds recorded so far).
   Decisions made before the swap keep the features they were made with.

A version holds what step 3 needs and nothing else, so a service writes it to a file and a
restarted service applies the file at the same point of its event log.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.errors import InputValueError
from deepbandits.formulas import warmup_prior
from deepbandits.networks.learner import SCHEDULE_FIELDS, NetworkLearner
from deepbandits.networks.mlp import MLP
from deepbandits.networks.schedule import TrainSchedule, resolve_schedule
from deepbandits.networks.training import LOSSES
from deepbandits.policies.params import NETWORK_SPECS, Spec
from deepbandits.policies.parts.features import NetworkFeatures
from deepbandits.policies.parts.heads import RidgeHead
from deepbandits.policies.parts.part import Part, part

#: The keys of a network version (:func:`run_training`), all needed to swap it in.
VERSION_KEYS = (
    "network",
    "optimizer",
    "torch_gen",
    "n_trainings",
    "n_diverged",
    "last_loss",
    "snapshot_t",
    "seconds",
)

_TRAINING = (
    "train_schedule",
    *SCHEDULE_FIELDS,
    "optimizer",
    "lr",
    "weight_decay",
    "max_grad_norm",
    "max_history",
)


@part
class Trainer(Part):
    """Trains a feature network on the rounds played, with the ridge head's θ fixed.

    Parameters
    ----------
    loss : {"mse", "mle"}, default="mse"
        Network loss: Eq. 6 or the Gaussian likelihood of Eq. 14.
    train_schedule : {"default", "paper", "paper-code", "neural-linear"}, default="default"
        Named training schedule (:mod:`deepbandits.networks.schedule`); the five entries below
        override its fields when given. The ridge family's recipes (Neural-LinGreedy to
        Neural-σ²-LinUCB and SAVE) give ``"neural-linear"`` and ``weight_decay=0.005``
        (:data:`~deepbandits.policies.recipes.NEURAL_DEFAULTS`).
    train_every, train_start, warmup_every, train_steps, batch_size : int, optional
        H, t₀, rounds between trainings before t₀ (0 = none), n, and the minibatch size.
    warmup_steps, warmup_batch_size : int, optional
        Steps and minibatch size of the trainings before t₀ (None: ``train_steps``,
        ``batch_size``).
    warmup_lr : float, optional
        Learning rate of the trainings before t₀ (None: ``lr``).
    optimizer : {"sgd", "adam"}, default="sgd"
    lr : float, default=1e-2
    weight_decay : float, default=0.0
    max_grad_norm : float or None, default=10.0
        Clip each minibatch gradient to this global L2 norm (None = no clipping). Without it,
        SGD on large rewards (h2, rewards up to ~60) kills every ReLU of φ in some seeds.
    max_history : int or None, default=100000
        Most rounds the network trains on (None = all): beyond it, the last ``max_history``
        rounds. A run that never exceeds it (every run of the paper, T ≤ 30,000) is bit for bit
        the uncapped run. With ``refit_on_update``, A and b are refitted on the rounds kept.
    refit_on_update : bool, default=False
        Recompute A and b with the new features after each training (False = Algorithm 1,
        where A and b keep the features each round was played with).
    train_theta : bool, default=False
        Train θ with w in each training (starting from the ridge's θ, by the same SGD steps), as
        the output layer of a network trained end to end, instead of holding it fixed (Eq. 6,
        Algorithm 1). The θ so trained only shapes φ: the ridge's θ is refitted on the new
        features after the training, so it needs ``refit_on_update=True`` (and the plain SGD
        optimizer). Where θ is fixed, a feature whose θ-coordinate is near 0 gets no gradient.
        On MNIST and covertype it did not lower the regret, so no dataset's recommended
        settings take it (the Records page, fourteenth round).
    lam_warmup : bool, default=True
        During the warm-up (rounds t ≤ t₀) the head's prior is λₜ = λ·(f + (1 − f)·t/t₀) with
        f = min(1, mean observation weight so far), reaching λ at t₀: the weighted ridge of
        Eq. 10 is the unweighted one with λ·σ̄², so on h1 (σ̂² ≈ 40 at first) a fixed λ = 1
        acts like λ = 40 while the features are young. With unit weights f = 1 and λ never
        moves; ``False`` keeps λ fixed (Algorithm 1).
    """

    specs: ClassVar[dict[str, Spec]] = {
        "loss": Spec("choice", "network loss: MSE (Eq. 6) or likelihood (Eq. 14)", choices=LOSSES),
        **{key: NETWORK_SPECS[key] for key in _TRAINING},
        "refit_on_update": Spec("bool", "refit A and b on the new features after a training"),
        "train_theta": Spec("bool", "train θ with w (then refit), instead of holding it fixed"),
        "lam_warmup": Spec("bool", "scale λ by the mean weight until t₀"),
    }

    loss: str = "mse"
    train_schedule: str = "default"
    train_every: int | None = None
    train_start: int | None = None
    warmup_every: int | None = None
    train_steps: int | None = None
    batch_size: int | None = None
    warmup_steps: int | None = None
    warmup_batch_size: int | None = None
    warmup_lr: float | None = None
    optimizer: str = "sgd"
    lr: float = 1e-2
    weight_decay: float = 0.0
    max_grad_norm: float | None = 10.0
    max_history: int | None = 100_000
    refit_on_update: bool = False
    train_theta: bool = False
    lam_warmup: bool = True

    def __post_init__(self) -> None:
        self.learner_: NetworkLearner | None = None
        self.weight_sum_ = 0.0
        self.deferred_ = False
        self.due_: int | None = None

    def defer(self, deferred: bool = True) -> None:
        """Leave the trainings to the caller (``deferred=True``): a round after which the
        schedule trains is recorded in :attr:`due_` (the latest such round, counted from 1)
        instead of training inside ``learn``. ``False`` restores training in ``learn``."""
        self.deferred_ = bool(deferred)

    def _check(self) -> None:
        if self.train_theta and not self.refit_on_update:
            raise InputValueError(
                "train_theta=True trains a copy of θ that only shapes φ; the ridge's θ must be "
                "refitted on the new features after each training: expected "
                "refit_on_update=True, got refit_on_update=False"
            )
        if self.train_theta and self.optimizer != "sgd":
            raise InputValueError(
                "train_theta=True steps θ by plain SGD with the network: expected "
                f"optimizer='sgd', got optimizer={self.optimizer!r}"
            )
        self.schedule_ = resolve_schedule(
            self.train_schedule, {k: getattr(self, k) for k in SCHEDULE_FIELDS}
        )

    def initialize(self, network: MLP, n_features: int) -> None:
        """A fresh optimizer and history for ``network``."""
        self.learner_ = NetworkLearner(
            network,
            n_features,
            optimizer=self.optimizer,
            lr=self.lr,
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            max_history=self.max_history,
        )
        self.weight_sum_ = 0.0

    @property
    def n_trainings_(self) -> int:
        return self.learner_.n_trainings if self.learner_ is not None else 0

    def after_updates(
        self,
        head: RidgeHead,
        features: NetworkFeatures,
        rounds: tuple[list[Any], list[float], list[float], list[int]],
        t: int,
        generator: torch.Generator,
    ) -> bool:
        """Keep the new rounds (``contexts, rewards, weights, heads``, learned after ``t``
        others), move the warm-up prior, and train φ when the schedule has a training among
        them; returns whether it trained."""
        learner = self.learner_
        assert learner is not None and head.ridge_ is not None
        contexts, rewards, weights, heads = rounds
        for context, reward, weight, h in zip(contexts, rewards, weights, heads, strict=True):
            learner.history.append(context, reward, weight, h)
            self.weight_sum_ += weight
        first, last, t0 = t + 1, t + len(rewards), self.schedule_.train_start
        if self.lam_warmup and first <= t0:  # warmup_prior is λ from t0 on
            lam = warmup_prior(head.lam, self.weight_sum_ / last, last, t0)
            if lam != head.ridge_.lam:
                head.ridge_.set_lam(lam)
        due = [s for s in range(first, last + 1) if self.schedule_.should_train(s)]
        if not due:
            return False
        if self.deferred_:
            self.due_ = due[-1]
            return False
        self.train(head, features, generator)
        return True

    def train(
        self,
        head: RidgeHead,
        features: NetworkFeatures,
        generator: torch.Generator,
        steps: int | None = None,
    ) -> float:
        """Train φ on the whole history with θ (and A⁻¹) fixed, or with θ (``train_theta``);
        returns the last minibatch loss."""
        learner, ridge = self.learner_, head.ridge_
        assert learner is not None and ridge is not None
        loss = learner.train(
            ridge.theta,
            ridge.A_inv,
            loss=self.loss,
            schedule=self.schedule_,
            generator=generator,
            steps=steps,
            train_theta=self.train_theta,
        )
        if self.refit_on_update:
            X, r, w, h = learner.history.view()
            ridge.refit(features.transform(X)[0], r, w, h)
        return loss

    def prepare_training(self, head: RidgeHead, generator: torch.Generator, t: int) -> TrainingJob:
        """Step 1 of a deferred training (module notes): copy what a training reads from the
        live parts, the head ``head`` and the training generator ``generator``, after ``t``
        rewards; the copies share nothing with the live state."""
        learner, ridge = self.learner_, head.ridge_
        if learner is None or ridge is None:
            raise InputValueError(
                "prepare_training needs a policy that has decided once (its network and head "
                "are built then), but this one is fresh"
            )
        copied = torch.Generator()
        copied.set_state(generator.get_state())
        return TrainingJob(
            learner=copy.deepcopy(learner),
            theta=ridge.theta.copy(),
            A_inv=ridge.A_inv.copy(),
            generator=copied,
            loss=self.loss,
            schedule=self.schedule_,
            snapshot_t=int(t),
            train_theta=self.train_theta,
        )

    def apply_training(
        self,
        version: dict[str, Any],
        head: RidgeHead,
        features: NetworkFeatures,
        generator: torch.Generator,
    ) -> None:
        """Step 3 of a deferred training (module notes): swap the network version ``version``
        (of :func:`run_training`) into the live parts and the training generator; a training
        due at or before the rounds it was prepared at is no longer due."""
        learner = self.learner_
        if learner is None:
            raise InputValueError(
                "apply_training needs a policy that has decided once (its network is built "
                "then), but this one is fresh"
            )
        if not isinstance(version, dict) or not set(VERSION_KEYS) <= set(version):
            given = sorted(version) if isinstance(version, dict) else type(version).__name__
            raise InputValueError(
                f"version must be a network version of run_training, a dict with the keys "
                f"{', '.join(VERSION_KEYS)}, but {given} is given"
            )
        learner.network.load_state_dict(version["network"])
        learner.optimizer.load_state_dict(version["optimizer"])
        generator.set_state(version["torch_gen"])
        learner.n_trainings = int(version["n_trainings"])
        learner.n_diverged = int(version["n_diverged"])
        learner.last_loss = float(version["last_loss"])
        if self.refit_on_update:
            assert head.ridge_ is not None
            X, r, w, h = learner.history.view()
            head.ridge_.refit(features.transform(X)[0], r, w, h)
        if self.due_ is not None and self.due_ <= int(version["snapshot_t"]):
            self.due_ = None  # the training due was this one (one due since runs next)

    def merge(self, other: Trainer, base: Trainer | None) -> None:
        """Extend the history by the rounds ``other`` learned since ``base``."""
        mine, theirs = self.learner_, other.learner_
        assert mine is not None and theirs is not None
        done = base.learner_.history.seen if base is not None and base.learner_ else 0
        new = min(theirs.history.seen - done, theirs.history.size)
        X, r, w, h = theirs.history.view()
        for i in range(theirs.history.size - new, theirs.history.size):
            mine.history.append(X[i], float(r[i]), float(w[i]), int(h[i]))
            self.weight_sum_ += float(w[i])

    def state_dict(self) -> dict[str, Any]:
        assert self.learner_ is not None
        learner = {k: v for k, v in self.learner_.state_dict().items() if k != "network"}
        return {"learner": learner, "weight_sum": self.weight_sum_}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        assert self.learner_ is not None
        self.learner_.load_state_dict(state["learner"])
        self.weight_sum_ = float(state.get("weight_sum", 0.0))


@dataclass
class TrainingJob:
    """What a deferred training reads, copied from a live policy
    (:meth:`Trainer.prepare_training`); it pickles, so it can train in another process.

    Attributes
    ----------
    learner : NetworkLearner
        A copy of the network, its optimizer and the training history.
    theta, A_inv : ndarray
        The head's θ and A⁻¹, fixed during the training (Eq. 6).
    generator : torch.Generator
        A copy of the training generator (the minibatch draws).
    loss : str
        The trainer's loss.
    schedule : TrainSchedule
        The trainer's schedule (steps and minibatch size of this training).
    snapshot_t : int
        Rewards the policy had learned when the job was prepared.
    train_theta : bool
        Whether θ trains with the network (:class:`Trainer`'s ``train_theta``).
    """

    learner: NetworkLearner
    theta: NDArray[np.float64]
    A_inv: NDArray[np.float64]
    generator: torch.Generator
    loss: str
    schedule: TrainSchedule
    snapshot_t: int
    train_theta: bool = False


def run_training(job: TrainingJob) -> dict[str, Any]:
    """Step 2 of a deferred training (module notes): train the copy in ``job`` as
    :meth:`Trainer.train` would, and return the network version (:data:`VERSION_KEYS`):
    weights, optimizer state, generator state, training counters, the last loss, the rewards
    learned when the job was prepared and the seconds the training took."""
    start = time.perf_counter()
    learner = job.learner
    learner.train(
        job.theta,
        job.A_inv,
        loss=job.loss,
        schedule=job.schedule,
        generator=job.generator,
        train_theta=job.train_theta,
    )
    return {
        "network": {k: v.detach().cpu().clone() for k, v in learner.network.state_dict().items()},
        "optimizer": learner.optimizer.state_dict(),
        "torch_gen": job.generator.get_state(),
        "n_trainings": learner.n_trainings,
        "n_diverged": learner.n_diverged,
        "last_loss": float(learner.last_loss),
        "snapshot_t": job.snapshot_t,
        "seconds": time.perf_counter() - start,
    }


def check_refit(trainer: Trainer | None, head: RidgeHead) -> None:
    """Refitting rebuilds A and b at full weight, which would undo a discount."""
    if trainer is not None and trainer.refit_on_update and head.discount != 1.0:
        raise InputValueError(
            "refit_on_update=True rebuilds A and b from the whole history at full weight, "
            f"which undoes discount={head.discount}; use one or the other"
        )
