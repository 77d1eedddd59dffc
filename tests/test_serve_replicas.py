"""Merge rounds without Ray (deepbandits.serve.replicas): two replicas of a small
Neural-σ²-LinUCB in this process; the coordinator merges them, trains the merged network when
the schedule wants it, and both replicas swap the same version in and keep learning."""

from __future__ import annotations

import numpy as np
import torch

from deepbandits.serve.replicas import (
    MergeRounds,
    ReplicaState,
    absorb,
    merge_snapshot,
    swap_network,
)
from serve_support import contexts_stream, reward_of

NEURAL = (
    "neural-sigma2-linucb:hidden=8,feature_dim=4,reward_range=[0,1],train_start=20,"
    "train_every=20,warmup_every=0,train_steps=10,batch_size=8,lam_warmup=false,seed=4"
)


def play(state: ReplicaState, seed: int, n: int) -> None:
    for X in contexts_stream(seed, n):
        decision, _ = state.decide(X)
        state.learn(decision.id, reward_of(X, decision.arm))[1].result()


def test_a_round_merges_trains_once_and_every_replica_swaps_the_same_network(tmp_path):
    replicas = [ReplicaState(tmp_path / f"replica-{i}", policy=NEURAL) for i in range(2)]
    try:
        rounds = MergeRounds((tmp_path / "replica-0" / "base.pt").read_bytes())
        for i, state in enumerate(replicas):
            play(state, i, 15)  # 30 rewards in all: a training is due at 20, none ran
            assert state.model_version == 0 and not state.training
        snapshots = [merge_snapshot(state) for state in replicas]
        play(replicas[1], 9, 3)  # learned during the round: kept by absorb
        merged = rounds.merge(snapshots)
        assert rounds.base.t_ == 30 and rounds.training_due()
        network = rounds.train()
        for state in replicas:
            absorb(state, merged, rounds.generation)
            swap_network(state, rounds.model_version, network, rounds.trained_at)
        assert [s.policy.t_ for s in replicas] == [30, 33] and not rounds.training_due()
        first, second = (s.policy.network_.state_dict() for s in replicas)
        assert all(torch.equal(first[k], second[k]) for k in first)
        assert all(s.model_version == 1 and s.merged_generation == 1 for s in replicas)
        three = [e for e in replicas[1].log.read() if e.kind == "network"]
        assert len(three) == 1 and three[0].model_version == 1  # logged as a swap
        # the 3 rewards learned during the round are replica 1's own: the rest is shared
        ridge = [s.policy.ridge_ for s in replicas]
        assert not np.allclose(ridge[0].A, ridge[1].A)
        play(replicas[0], 8, 2)
        snapshots = [merge_snapshot(state) for state in replicas]
        merged = rounds.merge(snapshots)
        for state in replicas:
            absorb(state, merged, rounds.generation)
        assert [s.policy.t_ for s in replicas] == [35, 35]
        np.testing.assert_allclose(ridge[0].A, ridge[1].A, rtol=1e-10)
        np.testing.assert_allclose(ridge[0].b, ridge[1].b, rtol=1e-10, atol=1e-14)
    finally:
        for state in replicas:
            state.close()
    with ReplicaState(tmp_path / "replica-1") as again:  # the round's number survives a restart
        assert again.merged_generation == 2 and again.model_version == 1
        assert again.policy.t_ == 35
