"""Restarting a service on its state folder gives the state of a process that handled the same
events without interruption; damaged checkpoints and logs are found, said, and recovered from."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, NEURAL, contexts_stream, reward_of, running, wait_idle


def play(client, state, stream, *, learn_every=1, idle=False):
    """Decide each context matrix of ``stream`` and learn the reward of most of them; with
    ``idle``, let each training finish before going on (so that network versions interleave
    with events at known points)."""
    decisions = []
    for i, X in enumerate(stream):
        d = client.decide(X)
        decisions.append(d)
        if i % learn_every == 0:
            client.learn(d, reward_of(X, d.arm))
        if idle:
            wait_idle(state)
    return decisions


def picture(state):
    """What must survive a restart, copied."""
    policy = state.policy
    network = getattr(policy, "network_", None)
    return {
        "A": policy.ridge_.A.copy(),
        "b": policy.ridge_.b.copy(),
        "A_inv": policy.ridge_.A_inv.copy(),
        "t": policy.t_,
        "pending": policy.pending_.ids(),
        "counts": policy.pending_.counts(),
        "rng": policy._rng.bit_generator.state,
        "version": state.model_version,
        "network": None
        if network is None
        else {k: v.clone() for k, v in network.state_dict().items()},
    }


def assert_same(restarted, before):
    after = picture(restarted)
    assert np.array_equal(after["A"], before["A"]) and np.array_equal(after["b"], before["b"])
    assert np.array_equal(after["A_inv"], before["A_inv"])
    for key in ("t", "pending", "counts", "rng", "version"):
        assert after[key] == before[key], key
    if before["network"] is not None:
        for name, tensor in before["network"].items():
            assert torch.equal(after["network"][name], tensor), name


def test_linucb_restarted_equals_uninterrupted_and_the_library(tmp_path):
    stream = contexts_stream(0, 60)
    local = db.make_policy("linucb", reward_range=(0, 1), seed=0)
    for i, X in enumerate(stream):
        d = local.decide(X)
        if i % 3:
            local.learn(d, reward_of(X, d.arm))
    # the same events through the service: every decision, the rewards of i % 3 != 0
    folder = tmp_path / "t"
    with running(folder, LINUCB, snapshot_every=45) as (state, client):
        for i, X in enumerate(stream):
            d = client.decide(X)
            if i % 3:
                client.learn(d, reward_of(X, d.arm))
        before = picture(state)
        assert np.array_equal(before["A"], local.ridge_.A)  # the service is the library
        assert np.array_equal(before["b"], local.ridge_.b)
        assert before["rng"] == local._rng.bit_generator.state
    with ServiceState(folder) as restarted:  # the periodic checkpoint, then the events after it
        assert restarted.last_checkpoint > 0 and restarted.replayed > 0
        assert_same(restarted, before)
        d = restarted.decide(stream[0])[0]
        assert d.arm == local.decide(stream[0]).arm  # the same draws go on


def test_neural_restarted_equals_uninterrupted_with_network_versions(tmp_path):
    stream = contexts_stream(1, 70)
    folder = tmp_path / "s"
    with running(folder, NEURAL) as (state, client):
        play(client, state, stream[:40], idle=True)
        client.snapshot()
        play(client, state, stream[40:], learn_every=2, idle=True)
        assert state.model_version >= 4  # trainings swapped in, before and after the snapshot
        before = picture(state)
    with ServiceState(folder) as restarted:  # from the snapshot, network versions replayed
        assert_same(restarted, before)
        assert restarted.replayed > 0
    for sidecar in (folder / "checkpoints").glob("*.json"):  # both checkpoints gone
        sidecar.with_suffix(".pt").write_bytes(b"damaged")
    with ServiceState(folder) as rebuilt:  # from the base: every event and network replayed
        assert_same(rebuilt, before)
        assert any("damaged" in note for note in rebuilt.health()["notes"])


def test_a_restart_refuses_another_policy_and_a_second_process(tmp_path):
    folder = tmp_path / "s"
    with ServiceState(folder, policy=LINUCB):
        with pytest.raises(db.ConcurrentUseError, match="in use"):
            ServiceState(folder)
    with pytest.raises(db.InputValueError, match="serves 'linucb"):
        ServiceState(folder, policy="neural-linucb")
    with ServiceState(folder, policy=LINUCB) as same:  # the same spec resumes
        assert same.health()["events"] == 0
    with pytest.raises(db.InputValueError, match="needs a policy"):
        ServiceState(tmp_path / "new")


def test_a_checkpoint_file_is_served(tmp_path):
    policy = db.make_policy("linucb", seed=3)
    for X in contexts_stream(2, 5):
        policy.learn(policy.decide(X), 0.5)
    policy.save(tmp_path / "p.pt")
    with ServiceState(tmp_path / "s", checkpoint=tmp_path / "p.pt") as state:
        assert state.policy.t_ == 5 and np.array_equal(state.policy.ridge_.A, policy.ridge_.A)
    db.make_policy("linucb", seed=4).save(tmp_path / "other.pt")
    with pytest.raises(db.InputValueError, match="not created from"):
        ServiceState(tmp_path / "s", checkpoint=tmp_path / "other.pt")
    with pytest.raises(db.CheckpointNotFoundError, match="no saved policy"):
        ServiceState(tmp_path / "new", checkpoint=tmp_path / "missing.pt")


def test_a_damaged_log_is_recovered_without_losing_a_later_event(tmp_path):
    folder = tmp_path / "s"
    with running(folder, LINUCB) as (state, client):
        play(client, state, contexts_stream(3, 30, K=10, d=40))
    log = folder / "events.sqlite"
    with sqlite3.connect(log) as conn:  # one row changed behind the log's back
        conn.execute("UPDATE events SET body = replace(body, '\"arm\":', '\"arm\": ') WHERE seq=41")
    with ServiceState(folder) as state:
        notes = state.health()["notes"]
        assert any("damaged" in n and n.endswith(": 41") for n in notes), notes
        # its reward (event 42) is set aside with it; every later event is replayed
        assert any("event 42" in n and "damaged event 41" in n for n in notes), notes
        assert state.health()["events"] == 58 and state.policy.t_ == 29
    size = log.stat().st_size
    with open(log, "r+b") as f:  # the file cut short
        f.truncate(size * 2 // 3)
    with ServiceState(folder) as state:
        notes = state.health()["notes"]
        assert any("the event log was damaged" in n for n in notes), notes
        assert 0 < state.health()["events"] < 58
    text = log.with_name("garbage.sqlite")
    text.write_bytes(b"not a database at all" * 100)
    text.replace(log)
    with ServiceState(folder) as state:  # nothing readable: the base policy, said so
        assert any("not a database" in n for n in state.health()["notes"])
        assert state.health()["events"] == 0
