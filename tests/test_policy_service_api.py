"""The public calls a service drives a policy by: its decisions' random state, the context
dimension from a request, and a deferred training in three steps (prepare, run, apply)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.policies.parts.trainer import VERSION_KEYS, TrainingJob, run_training

# one training, due after the 5th reward (as tests/test_serve_training.py's, shorter)
NEURAL = dict(
    hidden=8,
    feature_dim=4,
    train_start=5,
    train_every=100000,
    warmup_every=0,
    train_steps=40,
    batch_size=4,
    seed=0,
)


def rounds(n: int, seed: int = 0) -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((3, 5)), float(rng.random())) for _ in range(n)]


def test_the_random_state_is_json_and_set_replays_the_same_decisions():
    policy = db.make_policy("linucb", seed=0, epsilon=0.5)
    X = np.zeros((6, 4))  # all tied: every choice draws
    policy.decide(X)
    state = policy.random_state()
    assert json.loads(json.dumps(state)) == state
    first = [policy.decide(X).arm for _ in range(20)]
    other = db.make_policy("linucb", seed=1, epsilon=0.5)
    other.decide(X)
    other.set_random_state(json.loads(json.dumps(state)))
    assert [other.decide(X).arm for _ in range(20)] == first
    assert policy.random_state() == other.random_state()
    state["state"]["state"] += 1  # the caller's copy: the policy's is not changed by it
    assert policy.random_state() != state


@pytest.mark.parametrize(
    "state, match",
    [
        ([1, 2], "but a list is given"),
        ({"bit_generator": "MT19937", "state": {}}, "but a state of 'MT19937' is given"),
        ({"bit_generator": "PCG64", "state": "x"}, "does not load"),
    ],
)
def test_set_random_state_refuses_what_is_not_a_state_of_its_generator(state, match):
    policy = db.make_policy("linucb", seed=0)
    before = policy.random_state()
    with pytest.raises(db.InputValueError, match=f"random_state.*{match}"):
        policy.set_random_state(state)
    assert policy.random_state() == before


def test_the_random_state_leaves_the_torch_generator_alone():
    """Deciding never draws from the network's generator: a neural policy's decisions follow
    from its numpy state alone (the torch state moves with trainings, in their versions)."""
    policy = db.make_policy("neural-linucb", **NEURAL)
    X = rounds(1)[0][0]
    policy.decide(X)
    torch_state = policy.state_dict()["state"]["torch_gen"].clone()
    for _ in range(5):
        policy.decide(X)
    assert torch.equal(policy.state_dict()["state"]["torch_gen"], torch_state)
    assert set(policy.random_state()) == {"bit_generator", "state", "has_uint32", "uinteger"}


def test_initialize_fixes_the_dimension_without_drawing():
    policy = db.make_policy("linucb", seed=0)
    before = policy.random_state()
    assert policy.initialize(np.zeros((3, 4))) is policy
    assert policy.n_features_in_ == 4 and policy.ridge_.dim == 4
    assert policy.random_state() == before and policy.pending_.counts()["decided"] == 0
    with pytest.raises(db.InputValueError):
        policy.initialize(np.zeros((3, 5)))  # initialised: the contexts must fit


def test_a_deferred_training_equals_the_training_inside_learn_bit_for_bit():
    inline = db.make_policy("neural-linucb", **NEURAL)
    deferred = db.make_policy("neural-linucb", **NEURAL)
    deferred.trainer.defer()
    for policy in (inline, deferred):
        for X, reward in rounds(5):
            policy.update(X, policy.select(X), reward)
    assert inline.n_trainings_ == 1 and deferred.n_trainings_ == 0
    assert deferred.trainer.due_ == 5
    job = deferred.prepare_training()
    assert isinstance(job, TrainingJob) and job.snapshot_t == 5
    job = pickle.loads(pickle.dumps(job))  # it travels to another process
    version = run_training(job)
    assert set(version) == set(VERSION_KEYS)
    assert deferred.n_trainings_ == 0  # the job is a copy: the live policy is untouched
    deferred.apply_training(version)
    assert deferred.trainer.due_ is None and deferred.n_trainings_ == 1
    mine, theirs = inline.network_.state_dict(), deferred.network_.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert torch.equal(
        inline.state_dict()["state"]["torch_gen"], deferred.state_dict()["state"]["torch_gen"]
    )
    X = rounds(1, seed=9)[0][0]
    np.testing.assert_array_equal(inline.predict(X)[0], deferred.predict(X)[0])


def test_a_version_survives_torch_save_and_load_with_weights_only(tmp_path):
    policy = db.make_policy("neural-linucb", **NEURAL)
    policy.trainer.defer()
    for X, reward in rounds(5):
        policy.update(X, policy.select(X), reward)
    version = run_training(policy.prepare_training())
    torch.save(version, tmp_path / "v.pt")
    policy.apply_training(torch.load(tmp_path / "v.pt", weights_only=True))
    assert policy.n_trainings_ == 1


def test_the_deferred_training_calls_say_what_is_missing():
    with pytest.raises(db.InputValueError, match=r"with a trainer.*has none"):
        db.make_policy("linucb").prepare_training()
    with pytest.raises(db.InputValueError, match="has none"):
        db.make_policy("neural-ucb").apply_training({})  # the base class: no trainer part
    with pytest.raises(db.InputValueError, match="fresh"):
        db.make_policy("neural-linucb", **NEURAL).prepare_training()
    policy = db.make_policy("neural-linucb", **NEURAL)
    policy.decide(rounds(1)[0][0])
    with pytest.raises(db.InputValueError, match=r"version must be a network version.*\['x'\]"):
        policy.apply_training({"x": 1})
