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

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from deepbandits.policies import Policy
from deepbandits.policies.parts.trainer import Trainer, TrainingJob, run_training
from deepbandits.serve.events import network_body
from deepbandits.serve.trainer_process import TrainingProcess

if TYPE_CHECKING:
    from deepbandits.serve.log import EventLog
    from deepbandits.serve.store import StateFolder


class Trained(Protocol):
    """What :class:`OffPathTraining` reads and sets of the service it trains for (a
    :class:`~deepbandits.serve.state.ServiceState`)."""

    lock: threading.RLock
    policy: Policy
    trainer: Trainer | None
    folder: StateFolder
    log: EventLog
    model_version: int
    training_timeout: float | None
    training_listeners: list[Callable[[float], None]]

    @property
    def closed(self) -> bool: ...


LOG = logging.getLogger("deepbandits.serve")


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


class OffPathTraining:
    """The trainings of a service's champion (module notes): at most one at a time, in a thread
    that waits for the training process and then, under the service's lock, swaps the new
    version in and logs it. A training that failed stays due: the next reward starts it again.

    Attributes
    ----------
    count, failures : int
        Trainings swapped in, and failed, since the service opened.
    last_error : str or None
        Why the last training failed.
    generation : int
        One more at each promotion: a training of an earlier champion is not swapped in.
    """

    def __init__(self, state: Trained) -> None:
        self.state = state
        self.thread: threading.Thread | None = None
        self.count = 0
        self.failures = 0
        self.last_error: str | None = None
        self.generation = 0
        self.stopping = False

    @property
    def running(self) -> bool:
        return self.thread is not None

    def maybe_start(self) -> bool:
        """Start a training if one is due and none runs; returns whether one started."""
        state = self.state
        trainer = state.trainer
        if trainer is None or trainer.due_ is None or self.thread is not None or self.stopping:
            return False
        with state.lock:
            if trainer.due_ is None or self.thread is not None or self.stopping:
                return False
            job = state.policy.prepare_training()
            self.thread = threading.Thread(
                target=self._run, args=(job,), name="deepbandits-train", daemon=True
            )
            self.thread.start()
        return True

    def _run(self, job: TrainingJob) -> None:
        state = self.state
        try:
            generation = self.generation
            version_state = run_in_process(job, state.training_timeout)
            version = state.model_version + 1  # only this thread changes it, one at a time
            file, checksum = state.folder.write_network(version, version_state)
            seconds = float(version_state["seconds"])
            with state.lock:
                if state.closed or generation != self.generation:
                    return  # shut down, or the champion it trained was swapped out
                state.policy.apply_training(version_state)
                state.model_version = version
                body = network_body(version, file, checksum, job.snapshot_t, seconds)
                future = state.log.append("network", time.time(), None, version, body)[1]
            future.result()
            self.count += 1
            for listener in state.training_listeners:
                listener(seconds)
        except Exception as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            LOG.exception("a network training failed; the current network stays")
            return  # still due: the next reward retries it (at once, a failing one would spin)
        finally:
            self.thread = None
        self.maybe_start()  # one that fell due meanwhile

    def stop(self, wait: float) -> None:
        """Start no more trainings; wait up to ``wait`` seconds for one in flight, then kill
        its process (it runs again after a restart, since it is still due)."""
        self.stopping = True
        thread = self.thread
        if thread is not None:
            thread.join(wait)
            if thread.is_alive():
                PROCESS.close()
                thread.join()
