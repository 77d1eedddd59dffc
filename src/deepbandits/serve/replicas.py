"""Replicas of one policy that decide and log on their own and share what they learn by merge
rounds (the core of ``deepbandits serve --backend ray``; :mod:`deepbandits.serve.ray_app` runs
it on Ray Serve). Nothing here needs Ray.

Each replica is a :class:`ReplicaState`: a :class:`~deepbandits.serve.state.ServiceState` on its
own state folder (its own event log, checkpoints and network versions) that never trains its
network itself. A :class:`MergeRounds` coordinator holds the *base*, the merged state every
replica agreed on last, and runs a round:

1. every replica hands over a copy of its policy (:func:`merge_snapshot`), ``P_i = base + Δ_i``;
2. the copies are merged into one state, ``M = P_0 + Σ_{i>0} (P_i − base)``, by the library's
   ``policy.merge(other, base)`` (ridge statistics are sums: ``A``, ``b`` and the count of
   rewards learned add up; the training history is extended);
3. every replica adds ``M − P_i`` to its live policy (:func:`absorb`: ``policy.merge(M,
   base=P_i)``), which keeps what it learned since step 1, its pending decisions and its
   generator, then writes a checkpoint and, after it, the round's number (``merge.json``);
   ``M`` becomes the base.

After a round in which no replica learned anything between steps 1 and 3, every replica's
ridge statistics equal those of one policy that learned every replica's rewards (up to the
rounding of sums taken in another order). Between rounds each replica decides with what it
learned itself plus the last merge: the shared state is eventually consistent, one period behind.

Neural policies: replicas must see the same features, so only the coordinator trains. When the
schedule wants a training for the merged count of rewards, it trains the merged policy's network
on the merged history (every replica's rounds) and every replica swaps the new version in
(:func:`swap_network`: written to its ``networks/``, logged, applied under its lock), as a
training of a single service does.
"""

from __future__ import annotations

import copy
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from deepbandits._io import write_atomic
from deepbandits.errors import ServiceError
from deepbandits.policies import Policy, load_policy
from deepbandits.policies.parts.trainer import run_training
from deepbandits.serve import training
from deepbandits.serve.events import network_body
from deepbandits.serve.state import ServiceState
from deepbandits.serve.store import policy_bytes

#: A replica's last absorbed merge round, written after the checkpoint that includes it.
MERGE_FILE = "merge.json"


class ReplicaState(ServiceState):
    """A :class:`~deepbandits.serve.state.ServiceState` whose network the merge coordinator
    trains (a replica never trains on its own, so that every replica keeps the same features).

    Attributes
    ----------
    merged_generation : int
        The last merge round absorbed (0: none since this process started).
    """

    _merge_base: Policy | None = None

    def __init__(self, folder: str | Path, **options: Any) -> None:
        super().__init__(folder, **options)
        path = self.folder.root / MERGE_FILE
        self.merged_generation = (
            int(json.loads(path.read_text(encoding="utf-8"))["generation"]) if path.exists() else 0
        )

    def maybe_train(self) -> bool:
        """Never: the coordinator trains (module notes)."""
        return False


def policy_of(data: bytes) -> Policy:
    """The policy of a file's bytes (``policy.save``'s format)."""
    with tempfile.TemporaryDirectory(prefix="deepbandits-merge-") as tmp:
        path = Path(tmp) / "policy.pt"
        path.write_bytes(data)
        return load_policy(path)


def merge_snapshot(state: ReplicaState) -> bytes:
    """Step 1 of a round: the replica's policy as bytes; the replica keeps the same copy as
    the base of :func:`absorb`."""
    with state.lock:
        state._merge_base = copy.deepcopy(state.policy)
        return policy_bytes(state.policy)


def absorb(state: ReplicaState, merged: bytes, generation: int) -> dict[str, Any]:
    """Step 3 of a round: add ``merged − snapshot`` to the replica's live policy, then write a
    checkpoint of it; returns the checkpoint's sidecar."""
    base = state._merge_base
    if base is None:
        raise ServiceError("absorb needs a merge_snapshot of this replica first")
    other = policy_of(merged)
    with state.lock:
        state.policy.merge(other, base)
        state.merged_generation = generation
        state._merge_base = None
    meta = state.snapshot()
    record = {"generation": generation, "checkpoint_seq": meta["seq"]}
    write_atomic(state.folder.root / MERGE_FILE, json.dumps(record) + "\n")
    return meta


def swap_network(state: ReplicaState, version: int, network: dict[str, Any], t: int) -> None:
    """Swap a network version trained by the coordinator into the replica, as a training of
    the replica itself would (written to ``networks/``, then applied and logged under the
    lock); ``t`` is the merged count of rewards it was trained at."""
    file, checksum = state.folder.write_network(version, network)
    with state.lock:
        state.policy.apply_training(network)
        state.model_version = version
        body = network_body(version, file, checksum, t, float(network["seconds"]))
        future = state.log.append("network", time.time(), None, version, body)[1]
    future.result()


class MergeRounds:
    """The coordinator of merge rounds (module notes).

    Parameters
    ----------
    base : bytes
        The policy every replica starts from (their ``base.pt``: one spec, one seed).
    """

    def __init__(self, base: bytes) -> None:
        self.base = policy_of(base)
        self.generation = 0
        self.model_version = 0
        self.trained_at = 0
        self.seconds: list[float] = []

    def merge(self, snapshots: list[bytes]) -> bytes:
        """Step 2: merge the replicas' snapshots since the base into one state, which becomes
        the base; returns it as bytes."""
        policies = [policy_of(data) for data in snapshots]
        merged = policies[0]
        for other in policies[1:]:
            merged.merge(other, self.base)
        self.base = merged
        self.generation += 1
        return policy_bytes(merged)

    def training_due(self) -> bool:
        """Whether the schedule wants a training for a count of rewards reached since the last
        one (the merged count)."""
        trainer = training.trainer_of(self.base)
        if trainer is None or trainer.learner_ is None:
            return False
        schedule = trainer.schedule_
        return any(schedule.should_train(t) for t in range(self.trained_at + 1, self.base.t_ + 1))

    def train(self) -> dict[str, Any]:
        """Train the merged policy's network on the merged history (every replica's rounds);
        returns the new version (:func:`swap_network` applies it to a replica)."""
        network = run_training(self.base.prepare_training())
        self.base.apply_training(network)
        self.model_version += 1
        self.trained_at = self.base.t_
        self.seconds.append(float(network["seconds"]))
        return network
