"""Starting a service on its state folder: creating the folder, or loading the newest good
checkpoint and replaying the events logged after it.

Replaying an event does what the live service did when it logged it:

* a decision goes back into the pending table as logged (same id, arm, propensity, features),
  and expires what its arrival expired; a batch event puts back each of its decisions, as
  ``decide_batch`` kept them; the policy's generator ends in the state the last logged
  decision left it in;
* a reward is learned by ``policy.learn`` with the logged values, so the ridge statistics are
  those of the uninterrupted process, bit for bit (the features come from the decisions);
* a network event loads the network version file at that point, as the live swap did.

Rewards of policies whose timeout is in seconds are replayed with the timeout off (each was
accepted when it was logged); decisions past their timeout expire once the replay ends.

Damaged rows of the log were set aside when it was opened (:mod:`deepbandits.serve.log`), so the
replay goes on past them. An event that cannot be applied without one of them (a reward whose
decision was damaged) is set aside too, with a note naming both; an event that does not fit
the policy for any other reason raises :class:`~deepbandits.errors.EventLogError`.

A state folder has an id (``service.json``'s ``id``, a UUID4), which its log records with the
policy it serves (:class:`~deepbandits.serve.logfile.Owner`): :func:`open_log` refuses the log of
another folder. A folder made by an older version, without an id, takes one once: it is first
written to ``service.json`` marked ``adopting``, then into the log, then the mark is removed, so
that a start stopped halfway takes it up again.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import (
    CheckpointError,
    CheckpointNotFoundError,
    DeepBanditsError,
    EventLogError,
    InputValueError,
)
from deepbandits.policies import Decision, Policy, load_policy, make_policy
from deepbandits.serve import batches
from deepbandits.serve.events import Event, decision_of, is_control
from deepbandits.serve.experiment import Experiment
from deepbandits.serve.experiment_files import experiment_bytes, experiment_of
from deepbandits.serve.log import EventLog
from deepbandits.serve.logfile import Owner, numbers
from deepbandits.serve.scale import largest_value
from deepbandits.serve.store import StateFolder, policy_bytes, sha256
from deepbandits.specs import parse_spec

LOG = logging.getLogger("deepbandits.serve")
FORMAT = 1


def create(
    folder: StateFolder,
    spec: str | None,
    checkpoint: Path | None,
    experiment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Make a new state folder for the policy of ``spec`` (seeded, so that it can be rebuilt)
    or of the file ``checkpoint``, with the ``experiment`` settings (a control group:
    :func:`~deepbandits.serve.experiment_files.settings_of`); returns its description
    (``service.json``)."""
    if (spec is None) == (checkpoint is None):
        raise InputValueError(
            f"a new state folder {folder.root} needs a policy: give --policy SPEC or "
            "--checkpoint FILE (one of them)"
        )
    info: dict[str, Any] = {"format": FORMAT, "created": time.time(), "id": uuid.uuid4().hex}
    folder.id = info["id"]
    if spec is not None:
        name, params = parse_spec(spec)
        if params.get("seed") is None:
            params["seed"] = int.from_bytes(os.urandom(7), "big")  # fixed now: rebuildable
        policy = make_policy(name, **params)
        info.update(source="spec", policy=spec, name=name, params=params)
    else:
        assert checkpoint is not None
        policy = load_policy(checkpoint)
        name = policy.registry_name() or type(policy).__name__
        info.update(
            source="checkpoint",
            policy=name,
            checkpoint=str(checkpoint),
            sha256=sha256(Path(checkpoint).read_bytes()),
        )
    if experiment is not None:
        info["experiment"] = experiment
    meta = {"seq": 0, "model_version": 0, "training_due": None, "time": time.time()}
    saved = None
    if experiment is not None:  # the control as made now (a file it came from may go)
        saved = experiment_bytes(experiment_of(info, None, policy.pending_.max_pending))
    folder.save_checkpoint(policy_bytes(policy), meta, base=True, experiment=saved)
    folder.write_service(info)
    return info


def identity(info: dict[str, Any]) -> str:
    """What the folder of ``info`` serves, as its log records it: the policy spec, or the
    source checkpoint's name and checksum."""
    if info["source"] == "spec":
        return str(info["policy"])
    return f"{info['policy']} (checkpoint sha256 {info['sha256']})"


def open_log(
    folder: StateFolder, info: dict[str, Any], durability: str, notes: list[str]
) -> EventLog:
    """The log of ``folder`` (described by ``info``), refused if it is another folder's; a
    folder without an id takes one (module notes), said in ``notes``."""
    adopting = "id" not in info or bool(info.get("adopting"))
    if adopting:
        info.update(id=info.get("id") or uuid.uuid4().hex, adopting=True)
        folder.write_service(info)
    folder.id = info["id"]
    log = EventLog(folder.log_path, durability, Owner(info["id"], identity(info), adopting))
    if adopting:
        del info["adopting"]
        folder.write_service(info)
        note = (
            f"the state folder had no id (made by an older version of deepbandits): it now has "
            f"id {info['id']}, in {folder.root.name}/service.json and its log"
        )
        notes.append(note)
        LOG.warning(note)
    return log


def check_same(
    info: dict[str, Any],
    root: Path,
    spec: str | None,
    checkpoint: Path | None,
    experiment: dict[str, Any] | None = None,
) -> None:
    """Refuse a ``spec``, ``checkpoint`` or control group other than the one the folder was
    created with."""
    if experiment is not None:
        saved = info.get("experiment")
        same = ("control", "share", "window")
        if saved is None or any(saved.get(k) != experiment[k] for k in same):
            was = (
                "no control group"
                if saved is None
                else (
                    f"the control {saved['control']!r} on a share of {saved['share']:g} "
                    f"(lift window {saved['window']})"
                )
            )
            raise InputValueError(
                f"the state folder {root} was created with {was}: a control group is set when "
                "a folder is created; leave out --control, --control-share and --lift-window to "
                "resume it, or use another --state folder"
            )
    if spec is not None:
        name, params = parse_spec(spec)
        saved = dict(info.get("params", {}))
        if params.get("seed") is None:
            saved.pop("seed", None)
        if info["source"] != "spec" or name != info.get("name") or params != saved:
            raise InputValueError(
                f"the state folder {root} serves {info['policy']!r}, not {spec!r}: leave out "
                "--policy to resume it, or use another --state folder"
            )
    if checkpoint is not None:
        if not Path(checkpoint).is_file():
            raise CheckpointNotFoundError(f"no saved policy at {checkpoint}")
        given = sha256(Path(checkpoint).read_bytes())
        if info["source"] != "checkpoint" or given != info.get("sha256"):
            raise InputValueError(
                f"the state folder {root} was not created from {checkpoint}: leave out "
                "--checkpoint to resume it, or use another --state folder"
            )


def load(
    folder: StateFolder, info: dict[str, Any], notes: list[str]
) -> tuple[Policy, dict[str, Any]]:
    """The newest checkpoint that loads, else the base, else (a folder made from a spec) the
    policy rebuilt from its spec, with the sidecar (the last event it includes)."""
    loaded = folder.load_newest(notes)
    if loaded is not None:
        return loaded
    if info["source"] == "spec":
        note = "no checkpoint loads: the policy is rebuilt from its spec and the whole log replayed"
        notes.append(note)
        LOG.warning(note)
        policy = make_policy(info["name"], **info["params"])
        return policy, {"seq": 0, "model_version": 0, "training_due": None}
    raise CheckpointError(
        f"no checkpoint of {folder.root} loads ({'; '.join(notes)}), and the folder was created "
        f"from {info.get('checkpoint')}, which cannot be rebuilt: restore base.pt or a "
        "checkpoint from a backup"
    )


def load_experiment(
    folder: StateFolder, info: dict[str, Any], meta: dict[str, Any], policy: Policy
) -> Experiment:
    """The service's experiment as the loaded checkpoint (sidecar ``meta``) left it, or as
    the folder was created when the checkpoint has none."""
    return experiment_of(info, folder.read_experiment(meta), policy.pending_.max_pending)


class Replay:
    """Applies logged events to a policy and its experiment (module notes)."""

    def __init__(
        self,
        policy: Policy,
        folder: StateFolder,
        model_version: int,
        experiment: Experiment,
    ) -> None:
        self.policy = policy
        self.folder = folder
        self.model_version = model_version
        self.experiment = experiment
        self.rng: dict[str, Any] | None = None
        #: The control policy's generator state after its last decision replayed.
        self.control_rng: dict[str, Any] | None = None
        self.n = 0
        #: Decisions and rewards replayed.
        self.n_events = 0
        #: The largest absolute context value of the decisions replayed
        #: (:mod:`deepbandits.serve.scale`).
        self.largest = 0.0

    def _apply(self, event: Event) -> None:
        policy = self.policy
        experiment = self.experiment
        if event.kind == "decision" and is_control(event):
            decision, contexts, self.control_rng = decision_of(event)
            assert experiment.control is not None
            self._keep(experiment.control, [decision], contexts, contexts)
            experiment.keep([decision], [contexts])
        elif event.kind == "decision":
            decision, contexts, self.rng = decision_of(event)
            self._keep(policy, [decision], contexts, contexts)
            experiment.keep([decision], [contexts])
        elif event.kind == batches.KIND:
            assert isinstance(event.body, bytes)
            decisions, stacked, self.rng = batches.batch_decisions(event.body, event.time)
            self._keep(policy, decisions, stacked[0], stacked)
            experiment.keep(decisions, list(stacked))
        elif event.kind == "reward":
            v = event.values()
            bounds = None if v["reward_range"] is None else tuple(v["reward_range"])
            experiment.learn(
                policy, event.decision_id, v["reward"], sigma2=v["sigma2"], reward_range=bounds
            )
            self.n_events += 1
        elif event.kind == "challenger":
            v = event.values()
            if v["action"] == "add":
                experiment.add(v["name"], v["spec"])
            else:
                experiment.remove(v["name"])
        elif event.kind == "promote":
            v = event.values()
            if self.rng is not None:  # the former champion's generator, as it decided last
                policy.set_random_state(self.rng)
                self.rng = None
            self.policy = experiment.promote(v["name"], policy)
        elif event.kind == "network":
            v = event.values()
            policy.apply_training(self.folder.read_network(v["file"], v["sha256"]))
            self.model_version = int(v["version"])
        else:
            raise EventLogError(f"unknown event kind {event.kind!r}")

    def _keep(
        self, policy: Policy, decisions: list[Decision], contexts: Any, every: NDArray[np.float64]
    ) -> None:
        """Put logged decisions back into ``policy``'s pending table, as deciding kept them;
        ``contexts`` (one request's) fix the policy's dimension if no decision did yet;
        ``every`` are all the decisions' contexts (their scale is kept)."""
        self.largest = max(self.largest, largest_value(every) or 0.0)
        if policy.n_features_in_ is None:
            policy.initialize(contexts)  # fixes the dimension and builds the state, as decide did
        policy.pending_.add_many(decisions)
        last = decisions[-1]
        policy.pending_.expire(last.round, last.time)
        self.n_events += len(decisions)

    def run(self, log: EventLog, after: int, notes: list[str]) -> int:
        """Apply every event after ``after``; one that needs a damaged event is set aside
        (module notes). Returns the last event applied."""
        pending = self.policy.pending_
        by_seconds = pending.timeout_unit == "seconds" and pending.reward_timeout is not None
        timeout = pending.reward_timeout
        if by_seconds:
            pending.reward_timeout = None
        damaged = log.damaged()
        last = after
        try:
            for event in log.read(after):
                try:
                    self._apply(event)
                except DeepBanditsError as exc:
                    needed = holders(event, damaged)
                    if not needed:
                        raise EventLogError(
                            f"event {event.seq} ({event.kind}) of the log cannot be replayed on "
                            f"this policy: {exc}"
                        ) from None
                    self._set_aside(log, event, needed, notes)
                    continue
                self.n += 1
                last = event.seq
        finally:
            pending.reward_timeout = timeout
        if by_seconds:
            pending.expire(pending.n_decided - 1, time.time())
        if self.rng is not None:
            self.policy.set_random_state(self.rng)
        if self.control_rng is not None and self.experiment.control is not None:
            self.experiment.control.set_random_state(self.control_rng)
        return last

    @staticmethod
    def _set_aside(log: EventLog, event: Event, needed: list[int], notes: list[str]) -> None:
        """Set aside ``event``, which cannot be applied without the damaged events ``needed``."""
        which = f"event {needed[0]}" if len(needed) == 1 else f"events {numbers(needed)}"
        log.set_aside([(event.seq, f"needs the damaged {which} (its decision)")])
        note = (
            f"event {event.seq} (the reward of decision {event.decision_id}) cannot be replayed "
            f"without the damaged {which} (its decision): set aside in the table damaged_events"
        )
        notes.append(note)
        LOG.warning(note)


def holders(event: Event, damaged: list[Event]) -> list[int]:
    """The damaged events before ``event`` that held the decision it rewards: those that name
    it, else all those that may have (a decision or batch event, or a kind damaged beyond
    reading); none for an event other than a reward."""
    if event.kind != "reward":
        return []
    before = [d for d in damaged if d.seq < event.seq and d.kind not in ("reward", "network")]
    named = [d.seq for d in before if event.decision_id in _ids_of(d)]
    return named or [d.seq for d in before]


def _ids_of(event: Event) -> list[str | None]:
    """The decision ids a damaged decision or batch event names (none that can be read)."""
    if event.kind != batches.KIND:
        return [event.decision_id]
    try:
        return list(batches.batch_ids(event.body))  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError):  # the body is what was damaged
        return []


def events_before(meta: dict[str, Any], log: EventLog) -> int:
    """Decisions and rewards logged up to the checkpoint of sidecar ``meta``: as it counted them,
    or, for a checkpoint written before it did (when the log held one row per decision), its
    decision and reward rows up to it."""
    if "events" in meta:
        return int(meta["events"])
    return log.count_to(int(meta["seq"]), "decision", "reward")


def as_float_array(contexts: Any) -> np.ndarray:  # type: ignore[type-arg]
    """Contexts the policy accepted, as the float64 array it decided on (what the log keeps)."""
    return np.asarray(contexts, dtype=np.float64)
