"""The state of a decision service: one policy, its event log and its state folder.

:class:`ServiceState` is what an HTTP front end (:func:`deepbandits.serve.app.create_app`), a
test or another process's replica drives. Each call that changes the policy
(:meth:`~ServiceState.decide`, :meth:`~ServiceState.decide_batch`, :meth:`~ServiceState.learn`)
runs under the policy's lock and appends its events to the log under the same lock, so the log's
order is the order the policy saw; it returns the events' futures, which resolve once the events
are committed. Answer only then: what was answered is on disk.

Opening the state recovers it (:mod:`deepbandits.serve.recovery`): the newest good checkpoint,
then the events after it. Neural policies of the ridge family train off the request path
(:mod:`deepbandits.serve.training`): a thread sends a copy to the training process, writes
the new version to ``networks/``, then swaps it in and logs it.
:meth:`~ServiceState.snapshot` (and every ``snapshot_every`` events) writes a checkpoint whose
events are all committed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deepbandits._io import folder_lock
from deepbandits.errors import ConcurrentUseError, EventLogError, InputValueError, ServiceError
from deepbandits.policies import Decision, Policy
from deepbandits.policies.choice import request_masks
from deepbandits.policies.evaluation import Learned
from deepbandits.serve import batches, recovery, training
from deepbandits.serve.events import (
    challenger_body,
    decision_body,
    promote_body,
    reward_body,
    rng_json,
)
from deepbandits.serve.experiment_files import experiment_bytes, settings_of
from deepbandits.serve.log import EventLog
from deepbandits.serve.logfile import DURABILITY
from deepbandits.serve.recovery import as_float_array
from deepbandits.serve.reward_range import lacks_reward_range, no_reward_range
from deepbandits.serve.scale import MAX_CONTEXT_RATIO, ContextScale
from deepbandits.serve.store import StateFolder, policy_bytes

LOG = logging.getLogger("deepbandits.serve")
#: The state folders served in this process.
_HELD: set[Path] = set()
_HELD_LOCK = threading.Lock()


def _release(key: Path) -> None:
    with _HELD_LOCK:
        _HELD.discard(key)


def plain_numbers(contexts: Any, ndim: int) -> Any:
    """``contexts`` as one float64 array when they are nested lists of plain numbers with
    ``ndim`` dimensions (what the policy's check makes of them, done once for the policy and
    the log; a batch of equal-shaped requests then takes the policy's stacked path), otherwise
    unchanged, for the policy's own check and message."""
    if not isinstance(contexts, list):
        return contexts
    try:
        array = np.asarray(contexts)
    except (TypeError, ValueError):
        return contexts
    if array.ndim != ndim or array.dtype.kind not in "biuf":
        return contexts
    return array.astype(np.float64, copy=False)


#: Seconds :meth:`ServiceState.close` waits for a training in flight before leaving it. A
#: SIGTERM must end the server within the 10 s an orchestrator usually grants: requests in flight
#: (:data:`~deepbandits.serve.server.GRACEFUL_SECONDS`), this wait, then the checkpoint (about a
#: second per 100,000 pending decisions of 10 arms x 20 features).
CLOSE_WAIT = 2.0


class ServiceState:
    """A policy served from the state folder ``folder`` (created or recovered).

    Parameters
    ----------
    folder : path
        The state folder (:mod:`deepbandits.serve.store`); one process holds it at a time.
    policy : str, optional
        Policy specification (``"linucb:alpha=0.1"``) of a new folder; on an existing folder it
        must be the one it was created with (or be left out).
    checkpoint : path, optional
        A file written by ``policy.save`` to serve instead (a new folder).
    durability : {"normal", "full"}, default="normal"
        SQLite's synchronous setting (:mod:`deepbandits.serve.log`).
    snapshot_every : int, optional
        Write a checkpoint after every so many decisions and rewards.
    training_timeout : float or None, default=600.0
        Seconds a network training may take in the training process; a later one fails (counted
        in :meth:`health`), its process is killed and the next training starts a new one. None:
        no limit.
    max_context_ratio : float or None, default=1e6
        Refuse a request whose contexts reach more than this many times the largest absolute
        value decided on so far (:mod:`deepbandits.serve.scale`); None: no check.
    control : str, optional
        The control group's policy (:mod:`deepbandits.serve.control`: ``"uniform"``,
        ``"arm=K"``, a policy specification or file) of a new folder; on an existing folder it
        must be the one it was created with (or be left out).
    control_share : float, optional
        The share of requests the control decides (default 0.05 with a control).
    lift_window : int, optional
        Rewards in the lift's sliding window (:mod:`deepbandits.serve.lift`; default 10,000).
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        policy: str | None = None,
        checkpoint: str | Path | None = None,
        durability: str = "normal",
        snapshot_every: int | None = None,
        training_timeout: float | None = 600.0,
        max_context_ratio: float | None = MAX_CONTEXT_RATIO,
        control: str | None = None,
        control_share: float | None = None,
        lift_window: int | None = None,
    ) -> None:
        if durability not in DURABILITY:
            raise InputValueError(
                f"durability must be one of {', '.join(DURABILITY)}, but {durability!r} is given"
            )
        if snapshot_every is not None and (type(snapshot_every) is not int or snapshot_every < 1):
            raise InputValueError(
                f"snapshot_every must be an integer >= 1 or None, but {snapshot_every!r} is given"
            )
        if training_timeout is not None and (
            isinstance(training_timeout, bool)
            or not isinstance(training_timeout, int | float)
            or not training_timeout > 0
        ):
            raise InputValueError(
                f"training_timeout must be a number of seconds > 0 or None, but "
                f"{training_timeout!r} is given"
            )
        self.scale = ContextScale(max_context_ratio)
        self.folder = StateFolder(folder)
        self.snapshot_every = snapshot_every
        self.training_timeout = training_timeout
        self.lock = threading.RLock()
        self.notes: list[str] = []
        self.training_listeners: list[Callable[[float], None]] = []
        self._stack = ExitStack()
        experiment = settings_of(control, control_share, lift_window)
        self._hold(self.folder.root)
        self._stack.enter_context(folder_lock(self.folder.root))
        try:
            self._open(
                policy, None if checkpoint is None else Path(checkpoint), durability, experiment
            )
        except BaseException:
            self._stack.close()
            raise

    def _hold(self, root: Path) -> None:
        """Refuse a folder another state of this process serves (the folder lock refuses
        other processes; within one it is shared)."""
        key = root.resolve()
        with _HELD_LOCK:
            if key in _HELD:
                raise ConcurrentUseError(
                    f"the state folder {root} is in use by another service of this process"
                )
            _HELD.add(key)
        self._stack.callback(_release, key)

    def _open(
        self,
        spec: str | None,
        checkpoint: Path | None,
        durability: str,
        experiment: dict[str, Any] | None,
    ) -> None:
        info = self.folder.read_service()
        if info is None:
            info = recovery.create(self.folder, spec, checkpoint, experiment)
        else:
            recovery.check_same(info, self.folder.root, spec, checkpoint, experiment)
        self.info = info
        self.log: EventLog = recovery.open_log(self.folder, info, durability, self.notes)
        self._stack.callback(self.log.close)
        self.notes.extend(self.log.notes)
        policy, meta = recovery.load(self.folder, info, self.notes)
        trainer = training.trainer_of(policy)
        if trainer is not None:
            trainer.defer()
            trainer.due_ = meta.get("training_due")
        if int(meta["seq"]) > self.log.last_seq():
            note = (
                f"the checkpoint includes events up to {meta['seq']} but the log ends at "
                f"{self.log.last_seq()} (lost with the machine's power?); continuing after it"
            )
            self.notes.append(note)
            LOG.warning(note)
            self.log.skip_to(int(meta["seq"]))
        self.experiment = recovery.load_experiment(self.folder, info, meta, policy)
        replay = recovery.Replay(policy, self.folder, int(meta["model_version"]), self.experiment)
        self.last_checkpoint = int(meta["seq"])
        self.replayed_to = replay.run(self.log, self.last_checkpoint, self.notes)
        self.replayed = replay.n
        self.policy: Policy = replay.policy  # a promotion replayed swaps the champion
        self._take_trainer()
        self.scale.seen(max(float(meta.get("context_scale", 0.0)), replay.largest))
        self.model_version = replay.model_version
        self.n_events = recovery.events_before(meta, self.log) + replay.n_events
        self.trainings = training.OffPathTraining(self)
        self._since_snapshot = 0
        self._snapshotting: threading.Thread | None = None
        self._snapshot_lock = threading.Lock()
        self._closed = False
        self.maybe_train()

    def _take_trainer(self) -> None:
        """Train the champion's network off the request path, if it has one."""
        self.trainer = training.trainer_of(self.policy)
        if self.trainer is not None:
            torch.set_num_threads(1)  # the request path and the trainer share the cores
            training.PROCESS.start()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    @property
    def spec(self) -> str:
        """The policy's specification, or its name when it came from a checkpoint."""
        return str(self.info["policy"])

    # ------------------------------------------------------------------ requests
    def _check_open(self) -> None:
        if self._closed:
            raise ServiceError("the service is shutting down")
        if self.log.failure is not None:
            raise EventLogError(f"the event log cannot be written: {self.log.failure}")

    def _log_decisions(
        self, decisions: list[Decision], contexts: Any, control: bool = False
    ) -> Future[int]:
        """Append the events of ``decisions`` (made together from the requests ``contexts``):
        one batch event when they fit its layout, else one decision event each (always, for
        the ``control`` group's, flagged and with the control's generator). Returns the commit
        of the last (the writer commits in order)."""
        decider = self.experiment.control if control else self.policy
        assert decider is not None
        rng = rng_json(decider.random_state())
        version, append = self.model_version, self.log.append
        if not control and isinstance(contexts, np.ndarray) and len(decisions) > 1:
            body = batches.batch_body(decisions, contexts, rng)
            if body is not None:
                return append(batches.KIND, decisions[0].time, None, version, body)[1]
        futures = [
            append(
                "decision", d.time, d.id, version, decision_body(d, as_float_array(X), rng, control)
            )[1]
            for d, X in zip(decisions, contexts, strict=True)
        ]
        return futures[-1]

    def decide(self, contexts: Any, mask: Any = None) -> tuple[Decision, Future[int]]:
        """``policy.decide(contexts, mask)``, logged; returns the decision and its commit. With
        a control group or challengers, the experiment routes it
        (:mod:`deepbandits.serve.experiment`)."""
        contexts = plain_numbers(contexts, 2)
        with self.lock:
            self._check_open()
            largest = self.scale.check(contexts)
            experiment = self.experiment
            if not experiment.active:
                decision = self.policy.decide(contexts, mask)
                control = False
            else:
                decision, control = experiment.decide(self.policy, contexts, mask)
            self.scale.seen(largest)
            future = self._log_decisions([decision], [contexts], control)
            if experiment.active:
                experiment.keep([decision], [as_float_array(contexts)])
            self._count(1)
        return decision, future

    def decide_batch(
        self, contexts: Sequence[Any], masks: Sequence[Any] | None = None
    ) -> tuple[list[Decision], Future[int]]:
        """``policy.decide_batch(contexts, masks)``, logged (requests of one shape as one batch
        event); the decisions and the commit that holds them all."""
        batch = plain_numbers(list(contexts), 3)
        with self.lock:
            self._check_open()
            largest = self.scale.check(batch)
            if not self.experiment.active:
                decisions = self.policy.decide_batch(batch, masks)
                self.scale.seen(largest)
                future = self._log_decisions(decisions, batch)
            else:
                decisions, future = self._decide_routed(batch, masks)
                self.scale.seen(largest)
            self._count(len(decisions))
        return decisions, future

    def _decide_routed(self, batch: Any, masks: Any) -> tuple[list[Decision], Future[int]]:
        """:meth:`decide_batch` through the experiment: the champion's requests as one batch,
        then the control's; the decisions in request order, and the last commit."""
        requests = list(batch)
        if not requests:
            raise InputValueError("decide_batch needs at least one request, but 0 are given")
        mine, ours, theirs, controlled = self.experiment.decide_batch(
            self.policy, requests, request_masks(masks, len(requests))
        )
        future = None
        if ours:
            rows = batch[mine] if isinstance(batch, np.ndarray) else [requests[i] for i in mine]
            future = self._log_decisions(ours, rows)
            self.experiment.keep(ours, [as_float_array(requests[i]) for i in mine])
        if controlled:
            future = self._log_decisions(controlled, [requests[i] for i in theirs], True)
            self.experiment.keep(controlled, [as_float_array(requests[i]) for i in theirs])
        assert future is not None
        out: list[Decision] = [None] * len(requests)  # type: ignore[list-item]
        for i, d in zip([*mine, *theirs], [*ours, *controlled], strict=True):
            out[i] = d
        return out, future

    def learn(
        self,
        decision_id: str,
        reward: Any,
        *,
        reward_range: Any = None,
        sigma2: Any = None,
    ) -> tuple[Learned, Future[int]]:
        """``policy.learn(decision_id, reward, ...)``, logged; returns what learning did and
        the reward's commit. A training the schedule now wants starts in the background."""
        bounds = tuple(reward_range) if isinstance(reward_range, list) else reward_range
        with self.lock:
            self._check_open()
            if bounds is None and lacks_reward_range(self.policy):
                raise InputValueError(no_reward_range(self.spec))
            learned = self.experiment.learn(
                self.policy, decision_id, reward, sigma2=sigma2, reward_range=bounds
            )
            body = reward_body(
                float(reward),
                None if bounds is None else (float(bounds[0]), float(bounds[1])),
                None if sigma2 is None else float(sigma2),
            )
            future = self.log.append("reward", time.time(), decision_id, self.model_version, body)[
                1
            ]
            self._count(1)
        self.maybe_train()
        return learned, future

    # ------------------------------------------------------------------ experiment
    def _log_experiment(self, kind: str, body: str) -> Future[int]:
        """Append an event of the experiment (under the lock); its commit."""
        return self.log.append(kind, time.time(), None, self.model_version, body)[1]

    def add_challenger(self, spec: Any, name: Any = None) -> dict[str, Any]:
        """Register a challenger in shadow (:mod:`deepbandits.serve.shadow`), logged; returns
        its report once the event is committed. ``name`` defaults to ``spec``."""
        with self.lock:
            self._check_open()
            name, spec = self.experiment.check_new(name, spec)
            future = self._log_experiment("challenger", challenger_body("add", name, spec))
            challenger = self.experiment.add(name, spec)
        future.result()
        return challenger.report()

    def remove_challenger(self, name: Any) -> None:
        """Remove a challenger, logged."""
        with self.lock:
            self._check_open()
            self.experiment.challenger(name)
            future = self._log_experiment("challenger", challenger_body("remove", name, None))
            self.experiment.remove(name)
        future.result()

    def promote(self, name: Any) -> dict[str, Any]:
        """Swap challenger ``name`` in as champion (:mod:`deepbandits.serve.experiment`),
        logged; a training of the former champion still running is dropped. Returns the new
        champion's name and version once the event is committed."""
        with self.lock:
            self._check_open()
            self.experiment.challenger(name)
            version = self.experiment.champion_version + 1
            future = self._log_experiment("promote", promote_body(name, version))
            former = self.experiment.champion_name
            self.policy = self.experiment.promote(name, self.policy)
            self.trainings.generation += 1  # a training of the former champion is dropped
            self._take_trainer()
        future.result()
        self.maybe_train()
        return {"champion": name, "champion_version": version, "former": former}

    def challengers(self) -> dict[str, Any]:
        """The champion (its rewards' mean), every challenger's report, and the rewarded rounds
        queued for the challengers' next batch (``queued``: not in their estimates yet)."""
        with self.lock:
            experiment = self.experiment
            lift = experiment.lift.all["policy"]
            return {
                "champion": {
                    "name": experiment.champion_name,
                    "spec": experiment.champion_spec,
                    "champion_version": experiment.champion_version,
                    "rewards": lift.n,
                    "mean_reward": lift.mean if lift.n else None,
                },
                "challengers": [c.report() for c in experiment.challengers.values()],
                "queued": len(experiment.queue),
            }

    def lift(self) -> dict[str, Any]:
        """The lift of the served policy over the control group
        (:mod:`deepbandits.serve.lift`)."""
        with self.lock:
            return self.experiment.report_lift()

    def _count(self, n: int) -> None:
        """Count ``n`` events (under the lock); start a periodic snapshot when one is due."""
        self.n_events += n
        self._since_snapshot += n
        every = self.snapshot_every
        if every is not None and self._since_snapshot >= every and self._snapshotting is None:
            self._since_snapshot = 0
            thread = threading.Thread(target=self._snapshot_quietly, name="deepbandits-snapshot")
            self._snapshotting = thread
            thread.start()

    # ------------------------------------------------------------------ training
    @property
    def training(self) -> bool:
        """Whether a training runs now."""
        return self.trainings.running

    @property
    def training_failures(self) -> int:
        """Trainings that failed since the service opened."""
        return self.trainings.failures

    def maybe_train(self) -> bool:
        """Start a training in the background if one is due and none runs; returns whether
        one started (:class:`~deepbandits.serve.training.OffPathTraining`)."""
        return self.trainings.maybe_start()

    # ------------------------------------------------------------------ checkpoints
    def snapshot(self) -> dict[str, Any]:
        """Write a checkpoint of the policy now (after its events are committed); returns its
        sidecar (``seq``: the last event it includes)."""
        with self._snapshot_lock:
            with self.lock:
                self._check_open()
                data = policy_bytes(self.policy)
                experiment = experiment_bytes(self.experiment)
                meta = {
                    "seq": self.log.seq,
                    "events": self.n_events,
                    "model_version": self.model_version,
                    "training_due": None if self.trainer is None else self.trainer.due_,
                    "time": time.time(),
                    "rewards_learned": self.policy.t_,
                    "counts": self.policy.pending_.counts(),
                    "context_scale": self.scale.largest,
                }
            self.log.flush(meta["seq"])
            self.folder.save_checkpoint(data, meta, experiment=experiment)
            self.last_checkpoint = max(self.last_checkpoint, int(meta["seq"]))
            return meta

    def _snapshot_quietly(self) -> None:
        try:
            self.snapshot()
        except Exception:
            LOG.exception("a periodic snapshot failed")
        finally:
            self._snapshotting = None

    # ------------------------------------------------------------------ status
    def health(self) -> dict[str, Any]:
        """Status, network version, events logged since the folder was created, and the
        pending table's counts."""
        with self.lock:
            counts = self.policy.pending_.counts()
            return {
                "status": "ok" if self.log.failure is None and not self._closed else "degraded",
                "model_version": self.model_version,
                "events": self.n_events,
                "pending": counts["pending"],
                "pending_bytes": self.policy.pending_.n_bytes,
                "decided": counts["decided"],
                "learned": counts["learned"],
                "expired": counts["expired"],
                "rewards_learned": self.policy.t_,
                "training": self.training,
                "trainings": int(getattr(self.policy, "n_trainings_", 0)),
                "training_failures": self.trainings.failures,
                "last_training_error": self.trainings.last_error,
                "last_event": self.log.seq,
                "last_checkpoint": self.last_checkpoint,
                "policy": self.info["policy"],
                "champion": self.experiment.champion_name,
                "champion_version": self.experiment.champion_version,
                "control": self.experiment.control_spec,
                "challengers": list(self.experiment.challengers),
                "durability": self.log.durability,
                "notes": list(self.notes),
            }

    def close(self, *, snapshot: bool = False) -> None:
        """Stop: optionally write a checkpoint, commit what is queued, release the folder. A
        training in flight is waited for up to :data:`CLOSE_WAIT` seconds, then dropped (it
        runs again after a restart, since it is still due): its process is killed, so that a
        hung one never holds the shutdown."""
        if self._closed:
            return
        self.trainings.stop(CLOSE_WAIT)
        if self._snapshotting is not None:
            self._snapshotting.join()
        if snapshot and self.log.failure is None:
            self.snapshot()
        with self.lock:
            self._closed = True
        self._stack.close()

    def __enter__(self) -> ServiceState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
