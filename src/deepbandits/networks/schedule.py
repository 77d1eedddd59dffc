"""When the feature network is trained (Algorithm 1, line 14, and Appendix B).

A :class:`TrainSchedule` trains every ``warmup_every`` rounds before round ``train_start`` (never
if 0) and every ``train_every`` rounds from ``train_start`` on, each time for ``train_steps``
minibatch steps of ``batch_size`` samples.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from deepbandits._validation import check_choice, check_int


@dataclass(frozen=True)
class TrainSchedule:
    train_every: int = 100
    train_start: int = 2000
    warmup_every: int = 0
    train_steps: int = 1000
    batch_size: int = 64

    def __post_init__(self) -> None:
        check_int(self.train_every, "train_every", minimum=1)
        check_int(self.train_start, "train_start", minimum=0)
        check_int(self.warmup_every, "warmup_every", minimum=0)
        check_int(self.train_steps, "train_steps", minimum=0)
        check_int(self.batch_size, "batch_size", minimum=1)

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
