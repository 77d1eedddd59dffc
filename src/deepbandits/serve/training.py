"""Training a policy's network off the request path, and swapping the new weights in.

For the ridge family with a trainer (Neural-LinUCB, Neural-σ²-LinUCB, ...), a service calls
:meth:`~deepbandits.policies.parts.trainer.Trainer.defer`: ``learn`` keeps recording the rounds
and notes when the schedule wants a training. Then, in three steps:

1. :func:`prepare`, under the policy's lock: a copy of the network learner (network, optimizer,
   history), of the head's θ and A⁻¹ and of the training generator: what a training inside
   ``learn`` would have read at that moment;
2. :func:`run`, without the lock: the copy trains exactly as ``Trainer.train`` would (same
   loss, schedule and minibatch draws) while the live policy keeps deciding and learning with
   its current network. A service runs it in the training process (:func:`run_in_process`);
   the copy travels there and the new version back;
3. :func:`apply`, under the lock: the new weights, optimizer state, generator state and training
   counters replace the live ones at once (and, with ``refit_on_update``, A and b are refitted
   on the rounds recorded so far). Decisions made before the swap keep the features they were
   made with, and are learned with them.

What :func:`run` returns is what :func:`apply` needs and nothing else, so a service writes it to
a file and a restarted service applies the file at the same point of its event log.

The training process (:data:`PROCESS`, :mod:`deepbandits.serve.trainer_process`) is one per
server process, started when a service whose policy trains opens, with the server's torch
thread count (the same count gives the same weights as a training in the server itself) and a
lower scheduling priority: a training in a thread of the server held Python's global lock for
most of its steps and took the cores from the requests (a decision's p99 went from 12 ms to
34 ms while one ran); in its own process, at a lower priority, it takes only what answering
leaves.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from deepbandits.networks.learner import NetworkLearner
from deepbandits.networks.schedule import TrainSchedule
from deepbandits.policies import Policy
from deepbandits.policies.parts.trainer import Trainer
from deepbandits.serve.trainer_process import TrainingProcess


def trainer_of(policy: Policy) -> Trainer | None:
    """The policy's :class:`Trainer` part, if it has one (the neural ridge family)."""
    trainer = policy.parts.get("trainer")
    return trainer if isinstance(trainer, Trainer) else None


@dataclass
class TrainingJob:
    """What a training reads, copied from the live policy (:func:`prepare`)."""

    learner: NetworkLearner
    theta: NDArray[np.float64]
    A_inv: NDArray[np.float64]
    generator: torch.Generator
    loss: str
    schedule: TrainSchedule
    snapshot_t: int
    train_theta: bool = False


def prepare(policy: Policy) -> TrainingJob:
    """Copy what a training of ``policy``'s network reads (call under the policy's lock)."""
    trainer = trainer_of(policy)
    assert trainer is not None and trainer.learner_ is not None
    ridge = policy.parts["head"].ridge_
    generator = torch.Generator()
    generator.set_state(policy.torch_gen_.get_state())  # type: ignore[attr-defined]
    return TrainingJob(
        learner=copy.deepcopy(trainer.learner_),
        theta=ridge.theta.copy(),
        A_inv=ridge.A_inv.copy(),
        generator=generator,
        loss=trainer.loss,
        schedule=trainer.schedule_,
        snapshot_t=policy.t_,
        train_theta=trainer.train_theta,
    )


def run(job: TrainingJob) -> dict[str, Any]:
    """Train the copy in ``job`` (no lock needed); returns the network version: weights,
    optimizer state, generator state, training counters, the last loss and the seconds."""
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


#: The training process of this server (:mod:`deepbandits.serve.trainer_process`).
PROCESS = TrainingProcess()


def run_in_process(job: TrainingJob) -> dict[str, Any]:
    """:func:`run` of ``job`` in the training process (module notes)."""
    result: dict[str, Any] = PROCESS.call(run, job)
    return result


def apply(policy: Policy, state: dict[str, Any]) -> None:
    """Swap a network version into ``policy`` (call under the policy's lock)."""
    trainer = trainer_of(policy)
    assert trainer is not None and trainer.learner_ is not None
    learner = trainer.learner_
    learner.network.load_state_dict(state["network"])
    learner.optimizer.load_state_dict(state["optimizer"])
    policy.torch_gen_.set_state(state["torch_gen"])  # type: ignore[attr-defined]
    learner.n_trainings = int(state["n_trainings"])
    learner.n_diverged = int(state["n_diverged"])
    learner.last_loss = float(state["last_loss"])
    if trainer.refit_on_update:
        X, r, w, h = learner.history.view()
        policy.parts["head"].ridge_.refit(policy.parts["features"].transform(X)[0], r, w, h)
    if trainer.due_ is not None and trainer.due_ <= int(state["snapshot_t"]):
        trainer.due_ = None  # the training due was this one (one due since runs next)
