"""Training a policy's network off the request path, in the training process of the server.

For the ridge family with a trainer (Neural-LinUCB, Neural-σ²-LinUCB, ...), a service calls
:meth:`~deepbandits.policies.parts.trainer.Trainer.defer`: ``learn`` keeps recording the rounds
and notes when the schedule wants a training. The policy's own calls then train (the three steps
of :mod:`deepbandits.policies.parts.trainer`): ``policy.prepare_training()`` under the service's
lock, :func:`~deepbandits.policies.parts.trainer.run_training` of the job here, in the training
process (:func:`run_in_process`), without the lock while the live policy keeps deciding and
learning with its current network, and ``policy.apply_training(version)`` under the lock.

The training process (:data:`PROCESS`, :mod:`deepbandits.serve.trainer_process`) is one per
server process, started when a service whose policy trains opens, with the server's torch
thread count (the same count gives the same weights as a training in the server itself) and a
lower scheduling priority: a training in a thread of the server held Python's global lock for
most of its steps and took the cores from the requests (a decision's p99 went from 12 ms to
34 ms while one ran); in its own process, at a lower priority, it takes only what answering
leaves. A training that has not finished after its time limit is counted as failed: its child
is killed and the next training starts a new one.
"""

from __future__ import annotations

from typing import Any

from deepbandits.policies import Policy
from deepbandits.policies.parts.trainer import Trainer, TrainingJob, run_training
from deepbandits.serve.trainer_process import TrainingProcess


def trainer_of(policy: Policy) -> Trainer | None:
    """The policy's :class:`Trainer` part, if it has one (the neural ridge family)."""
    trainer = policy.parts.get("trainer")
    return trainer if isinstance(trainer, Trainer) else None


def hand_over(former: Policy, champion: Policy) -> None:
    """A promotion's change of who trains where: the new ``champion`` leaves its trainings to
    the service (deferred, none due), the ``former`` champion, now in shadow, trains inside
    ``learn`` again (a training it had due is dropped: the next one of its schedule comes)."""
    old, new = trainer_of(former), trainer_of(champion)
    if old is not None:
        old.defer(False)
        old.due_ = None
    if new is not None:
        new.defer()
        new.due_ = None


#: The training process of this server (:mod:`deepbandits.serve.trainer_process`).
PROCESS = TrainingProcess()


def run_in_process(job: TrainingJob, timeout: float | None = None) -> dict[str, Any]:
    """:func:`~deepbandits.policies.parts.trainer.run_training` of ``job`` in the training
    process; one that takes longer than ``timeout`` seconds (None: no limit) raises
    :class:`~deepbandits.errors.ServiceError` and its process is replaced."""
    version: dict[str, Any] = PROCESS.call(run_training, job, timeout=timeout)
    return version
