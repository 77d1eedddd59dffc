"""``kill -9`` of a real ``deepbandits serve`` process at random points (under load while group
commits run, while snapshots are written, while a network trains), restarted on the same state
folder each time: every acknowledged decision and reward is in the recovered state, acknowledged
decisions still take their reward after the restarts, and the ridge statistics equal those of one
library policy that handled the logged events without interruption (``np.array_equal``).

The numbers (kills, events acknowledged, events recovered) are printed (``pytest -s``) and
recorded as the test's properties (``--junitxml``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.client import ServiceClient
from deepbandits.errors import ServiceError
from deepbandits.serve import training
from deepbandits.specs import parse_spec
from serve_support import Served, running, wait_idle

LINUCB = "linucb:reward_range=[0,1],seed=3"
# a training every 40 rewards (after 40), each about a third of a second: often in flight
NEURAL = (
    "neural-sigma2-linucb:hidden=8,feature_dim=4,reward_range=[0,1],train_start=40,"
    "train_every=40,warmup_every=0,train_steps=1500,batch_size=16,seed=5"
)
K, D = 4, 6
CLIENTS = 3


def reward_of(contexts: np.ndarray, arm: int) -> float:
    return float(1.0 / (1.0 + np.exp(-contexts[arm].sum())))


class Traffic:
    """Clients deciding and learning against one life of the service, until it dies or is told
    to stop; what was acknowledged (answered 200) is recorded across lives."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.decided: dict[str, int] = {}  # acknowledged decision id -> arm
        self.contexts: dict[str, np.ndarray] = {}
        self.rewarded: set[str] = set()  # rewards acknowledged
        self.unsure: set[str] = set()  # rewards sent without an answer (killed meanwhile)
        self.killed = threading.Event()
        self.early: list[BaseException] = []  # failures while the service was alive
        self.lock = threading.Lock()

    def untouched(self) -> list[str]:
        """Acknowledged decisions whose reward was never sent."""
        with self.lock:
            return [i for i in self.decided if i not in self.rewarded and i not in self.unsure]

    def _reward(self, client: ServiceClient, decision_id: str) -> None:
        with self.lock:
            self.unsure.add(decision_id)
        client.learn(decision_id, reward_of(self.contexts[decision_id], self.decided[decision_id]))
        with self.lock:
            self.unsure.discard(decision_id)
            self.rewarded.add(decision_id)

    def _client(self, url: str, seed: int, stop: threading.Event, old: list[str]) -> None:
        rng = np.random.default_rng(seed)
        try:
            with ServiceClient(url, timeout=20) as client:
                for decision_id in old:  # decided in an earlier life: still pending
                    self._reward(client, decision_id)
                while not stop.is_set():
                    X = rng.standard_normal((K, D))
                    d = client.decide(X)
                    with self.lock:
                        self.decided[d.id], self.contexts[d.id] = d.arm, X
                    if rng.random() < 0.8:
                        self._reward(client, d.id)
        except ServiceError as exc:
            if not self.killed.is_set():
                self.early.append(exc)

    def run(self, url: str, stop: threading.Event) -> list[threading.Thread]:
        """Start the clients; each first sends the rewards of a few untouched decisions of
        earlier lives."""
        self.killed.clear()
        old = self.untouched()[: 6 * CLIENTS]
        threads = [
            threading.Thread(
                target=self._client,
                args=(url, int(self.rng.integers(2**31)), stop, old[i::CLIENTS]),
                daemon=True,
            )
            for i in range(CLIENTS)
        ]
        for thread in threads:
            thread.start()
        return threads


def kill_under_load(service: Served, traffic: Traffic, when: str, rng: np.random.Generator) -> str:
    """One life of the service: traffic, then ``kill -9`` at a random point of ``when``:
    ``commits`` (a random moment under load), ``snapshot`` (while a requested snapshot is
    answered) or ``training`` (while a network trains). Returns what was in flight.

    The life starts by recovering the folder: every event acknowledged so far must be there."""
    url = service.start()
    with ServiceClient(url) as client:
        health = client.health()
    assert health["events"] >= len(traffic.decided) + len(traffic.rewarded)
    assert health["decided"] >= len(traffic.decided)
    assert health["learned"] >= len(traffic.rewarded)
    stop = threading.Event()
    threads = traffic.run(url, stop)
    time.sleep(rng.uniform(0.3, 0.8))
    seen = "commits in flight"
    with ServiceClient(url, timeout=20) as client:
        if when == "snapshot":
            answered: list[dict[str, Any]] = []

            def snapshot() -> None:
                try:
                    answered.append(client.snapshot())
                except ServiceError:
                    pass  # killed first

            shot = threading.Thread(target=snapshot, daemon=True)
            shot.start()
            time.sleep(rng.uniform(0.0, 0.004))
            seen = "a snapshot answered before the kill" if answered else "a snapshot in flight"
        elif when == "training":
            deadline = time.monotonic() + 30
            while not client.health()["training"]:
                assert time.monotonic() < deadline, "no training started"
                time.sleep(0.005)
            seen = "a training in flight"
        traffic.killed.set()
        service.kill()
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not traffic.early, traffic.early  # nothing failed while the service was alive
    return seen


def logged(folder: Path) -> list[tuple[int, str, str | None, dict[str, Any]]]:
    """The log's rows, read with plain sqlite3."""
    with closing(sqlite3.connect(f"file:{folder / 'events.sqlite'}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT seq, kind, decision_id, body FROM events ORDER BY seq")
        return [(s, k, i, json.loads(b)) for s, k, i, b in rows]


def uninterrupted(folder: Path, events: list[tuple[int, str, str | None, dict[str, Any]]]) -> Any:
    """One library policy, built as the folder's, that decides and learns the logged requests
    in order (networks swapped in where the log says); each decision must be the logged one."""
    info = json.loads((folder / "service.json").read_text())
    name, params = parse_spec(info["policy"])
    policy = db.make_policy(name, **params)
    trainer = training.trainer_of(policy)
    if trainer is not None:
        trainer.defer()
    made: dict[str, db.Decision] = {}
    for seq, kind, decision_id, v in events:
        if kind == "decision":
            d = policy.decide(np.asarray(v["contexts"]), v["mask"])
            assert (d.arm, d.propensity) == (v["arm"], v["propensity"]), seq
            made[decision_id] = d  # type: ignore[index]
        elif kind == "reward":
            policy.learn(made[decision_id], v["reward"])  # type: ignore[index]
        else:
            state = torch.load(folder / v["file"], weights_only=True)
            policy.apply_training(state)
    return policy


def newest_checkpoint(folder: Path) -> tuple[Any, dict[str, Any]]:
    sidecar = sorted((folder / "checkpoints").glob("ckpt-*.json"))[-1]
    meta = json.loads(sidecar.read_text())
    return db.load_policy(folder / meta["file"]), meta


@pytest.mark.parametrize(
    "spec, plan",
    [
        (LINUCB, ["commits", "snapshot", "commits"]),
        (NEURAL, ["training", "snapshot", "training"]),
    ],
    ids=["linucb", "neural-sigma2-linucb"],
)
def test_kill_9_loses_no_acknowledged_event(tmp_path, record_property, spec, plan):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "big"))
    folder = tmp_path / "state"
    service, traffic = Served(folder, spec), Traffic(int(rng.integers(2**31)))
    seen = []
    for when in plan:
        seen.append(kill_under_load(service, traffic, when, rng))
    # a last life (in this process, to save a start): the untouched decisions of every earlier
    # life take their reward, then a clean stop writes a checkpoint of the live state
    old = traffic.untouched()
    assert old, "some acknowledged decisions should await their reward across the kills"
    with running(folder, snapshot=True) as (state, client):
        assert client.health()["events"] >= len(traffic.decided) + len(traffic.rewarded)
        for decision_id in old:
            traffic._reward(client, decision_id)  # a 404 would mean the decision was lost
        final = client.health()
        wait_idle(state)

    events = logged(folder)
    decisions = {i for _, k, i, _ in events if k == "decision"}
    rewards = {i for _, k, i, _ in events if k == "reward"}
    lost = (set(traffic.decided) - decisions) | (traffic.rewarded - rewards)
    acknowledged = len(traffic.decided) + len(traffic.rewarded)
    recovered = len(decisions) + len(rewards)
    assert not lost, f"{len(lost)} acknowledged events are not in the log"
    assert final["events"] == recovered
    assert recovered - acknowledged <= CLIENTS * len(plan)  # one request in flight per client
    policy = uninterrupted(folder, events)
    served, meta = newest_checkpoint(folder)
    assert meta["seq"] == events[-1][0] and served.t_ == policy.t_ == len(rewards)
    assert np.array_equal(served.ridge_.A, policy.ridge_.A)
    assert np.array_equal(served.ridge_.b, policy.ridge_.b)
    versions = [v["version"] for _, k, _, v in events if k == "network"]
    if training.trainer_of(policy) is not None:
        assert versions == list(range(1, len(versions) + 1)) and len(versions) >= 1
        mine, theirs = policy.network_.state_dict(), served.network_.state_dict()
        assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    record = {
        "kills": len(plan),
        "in flight at the kills": "; ".join(seen),
        "events acknowledged": acknowledged,
        "events recovered": recovered,
        "lost": len(lost),
        "network versions": len(versions),
    }
    for key, value in record.items():
        record_property(key, value)
    print(f"\n{spec.split(':')[0]}: " + ", ".join(f"{k}: {v}" for k, v in record.items()))
