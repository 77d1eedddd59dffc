"""Merge rounds without Ray (deepbandits.serve.replicas): two replicas of a small
Neural-σ²-LinUCB in this process; the coordinator merges them, trains the merged network when
the schedule wants it, and both replicas swap the same version in and keep learning."""

from __future__ import annotations

import numpy as np
import torch

import deepbandits as db
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


def merged_pair(tmp_path, spec: str, sigma2: bool) -> tuple[list, list]:
    """Two replicas of ``spec`` that each learn 15 rewards (with an oracle σ² when ``sigma2``),
    then one merge round; returns them and what each reward was learned with (contexts, arm,
    reward, the σ² that weighted it)."""
    replicas = [ReplicaState(tmp_path / f"replica-{i}", policy=spec) for i in range(2)]
    rounds = MergeRounds((tmp_path / "replica-0" / "base.pt").read_bytes())
    learned = []
    for i, state in enumerate(replicas):
        for X in contexts_stream(i, 15):
            d, _ = state.decide(X)
            noise = 0.05 + 0.2 * abs(float(X[d.arm, 0])) if sigma2 else None
            reward = reward_of(X, d.arm)
            used, future = state.learn(d.id, reward, sigma2=noise)
            future.result()
            learned.append((X, d.arm, reward, used.sigma2))
    snapshots = [merge_snapshot(state) for state in replicas]
    merged = rounds.merge(snapshots)
    for state in replicas:
        absorb(state, merged, rounds.generation)
    return replicas, learned


def one_learner(learned: list, weights: bool) -> db.Policy:
    """One policy that learned every reward: weighted by the σ² each was learned with
    (``weights``), or by its own estimate."""
    params = {"variance": "oracle"} if weights else {}
    policy = db.make_policy("sigma2-linucb", reward_range=(0, 1), seed=3, **params)
    for X, arm, reward, sigma2 in learned:
        policy.update(X, arm, reward, sigma2=sigma2 if weights else None)
    return policy


def test_a_merge_of_sigma2_weighted_replicas_is_exact_for_given_weights(tmp_path):
    """What a merge keeps: each replica's weighted sums ``Σ x xᵀ / σ²`` and ``Σ x r / σ²``, added.
    With the oracle's σ² sent with each reward the weights do not depend on who learned it, so
    both replicas equal one learner that saw every reward."""
    spec = "sigma2-linucb:variance=oracle,reward_range=[0,1],seed=2"
    replicas, learned = merged_pair(tmp_path, spec, sigma2=True)
    try:
        reference = one_learner(learned, weights=True)
        for state in replicas:
            np.testing.assert_allclose(state.policy.ridge_.A, reference.ridge_.A, rtol=1e-10)
            np.testing.assert_allclose(
                state.policy.ridge_.b, reference.ridge_.b, rtol=1e-10, atol=1e-14
            )
    finally:
        for state in replicas:
            state.close()


def test_a_merge_of_estimated_sigma2_keeps_each_replicas_weights_not_one_learners(tmp_path):
    """What a merge approximates: with σ̂² estimated (Eq. 13), each reward is weighted by the
    estimate of the replica that learned it, from what that replica knew then. The merged sums
    are exactly those weights' sums (one learner given the same σ² per reward matches to
    1e-10), but a single learner estimating σ̂² itself from every earlier reward weighs them
    otherwise."""
    replicas, learned = merged_pair(tmp_path, "sigma2-linucb:reward_range=[0,1],seed=3", False)
    try:
        A = replicas[0].policy.ridge_.A
        np.testing.assert_allclose(replicas[1].policy.ridge_.A, A, rtol=1e-10)
        np.testing.assert_allclose(one_learner(learned, weights=True).ridge_.A, A, rtol=1e-10)
        assert not np.allclose(one_learner(learned, weights=False).ridge_.A, A, rtol=1e-6)
    finally:
        for state in replicas:
            state.close()
