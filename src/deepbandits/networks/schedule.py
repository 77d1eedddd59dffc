"""When the feature network is trained (Algorithm 1, line 14, and Appendix B).

A :class:`TrainSchedule` trains every ``warmup_every`` rounds before round ``train_start`` (never
if 0) and every ``train_every`` rounds from ``train_start`` on, each time for ``train_steps``
minibatch steps of ``batch_size`` samples. The trainings before ``train_start`` (the warm-up) may
take their own number of steps, minibatch size and learning rate (``warmup_steps``,
``warmup_batch_size``, ``warmup_lr``; None: those of the later trainings): on MNIST, single-sample
steps while the history is short and minibatches once it is long did better than either
throughout (:mod:`deepbandits.envs.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from deepbandits._validation import check_choice, check_int, check_positive


@dataclass(frozen=True)
class Training:
    """What one training does: ``steps`` minibatch steps of ``batch_size`` samples, at the
    learning rate ``lr`` (None: the optimizer's own)."""

    steps: int
    batch_size: int
    lr: float | None = None


@dataclass(frozen=True)
class TrainSchedule:
    train_every: int = 100
    train_start: int = 2000
    warmup_every: int = 0
    train_steps: int = 1000
    batch_size: int = 64
    warmup_steps: int | None = None
    warmup_batch_size: int | None = None
    warmup_lr: float | None = None

    def __post_init__(self) -> None:
        check_int(self.train_every, "train_every", minimum=1)
        check_int(self.train_start, "train_start", minimum=0)
        check_int(self.warmup_every, "warmup_every", minimum=0)
        check_int(self.train_steps, "train_steps", minimum=0)
        check_int(self.batch_size, "batch_size", minimum=1)
        if self.warmup_steps is not None:
            check_int(self.warmup_steps, "warmup_steps", minimum=0)
        if self.warmup_batch_size is not None:
            check_int(self.warmup_batch_size, "warmup_batch_size", minimum=1)
        if self.warmup_lr is not None:
            check_positive(self.warmup_lr, "warmup_lr")

    def training(self, t: int) -> Training:
        """The training after the ``t``-th round (1-based): the warm-up's before
        ``train_start``, the regular one from it on."""
        if t >= self.train_start:
            return Training(self.train_steps, self.batch_size)
        return Training(
            self.train_steps if self.warmup_steps is None else self.warmup_steps,
            self.batch_size if self.warmup_batch_size is None else self.warmup_batch_size,
            self.warmup_lr,
        )

    def sample_gradients(self, T: int) -> int:
        """Per-sample gradients that the trainings of a run of ``T`` rounds compute."""
        total = 0
        for t in range(1, T + 1):
            if self.should_train(t):
                training = self.training(t)
                total += training.steps * training.batch_size
        return total

    def should_train(self, t: int) -> bool:
        """Whether to train after the ``t``-th round (1-based)."""
        if t >= self.train_start:
            return (t - self.train_start) % self.train_every == 0
        return self.warmup_every > 0 and t % self.warmup_every == 0

    def n_trainings(self, T: int) -> int:
        """How many trainings a run of ``T`` rounds performs."""
        return sum(self.should_train(t) for t in range(1, T + 1))


#: Named schedules. ``paper``: Appendix B (every H = 100 rounds from t₀ = 2000, n = 1000 steps,
#: nothing before t₀). ``paper-code``: the paper's published code, which also trains after every
#: round before t₀. ``default``: chosen by measurement (manual, "Choosing the default schedule");
#: NeuralUCB, NeuralTS and BootstrappedNN train on it. ``neural-linear``: the default of the
#: ridge-family networks (Neural-LinGreedy to Neural-σ²-LinUCB and SAVE), shorter trainings every
#: 10 rounds before t₀, chosen with their weight decay (:data:`~deepbandits.policies.recipes.
#: NEURAL_DEFAULTS` says how).
SCHEDULES: dict[str, TrainSchedule] = {
    "paper": TrainSchedule(train_every=100, train_start=2000, warmup_every=0, train_steps=1000),
    "paper-code": TrainSchedule(
        train_every=100, train_start=2000, warmup_every=1, train_steps=1000
    ),
    "default": TrainSchedule(train_every=100, train_start=2000, warmup_every=50, train_steps=1000),
    "neural-linear": TrainSchedule(
        train_every=100, train_start=2000, warmup_every=10, train_steps=300
    ),
}


def resolve_schedule(name: str, overrides: dict[str, Any]) -> TrainSchedule:
    """The named schedule with the non-None entries of ``overrides`` replacing its fields."""
    check_choice(name, "train_schedule", SCHEDULES)
    return replace(SCHEDULES[name], **{k: v for k, v in overrides.items() if v is not None})
