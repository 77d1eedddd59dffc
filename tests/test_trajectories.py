"""Every policy's trajectory, bit for bit, against the one recorded before the policy redesign.

``tests/data/trajectories-dcadf77.npz`` was written by ``python tests/test_trajectories.py``
at commit dcadf77, before policies became compositions of parts and gained ``decide``/``learn``
(issue 17). Each case runs the runner (``select``/``update`` then, ``decide``/``learn`` now) for
``T`` rounds with hold-out forecasts (``predict``), then ``predict`` on probe contexts. Every
recorded array must come back identical: the arms, the rewards, σ² used and estimated, the mean
and width of each arm played, the forecasts and the final predictions. Same machine type,
same numbers: the recording and CI run on the same CPU build of torch 2.13 with one thread.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import deepbandits as db
from deepbandits.envs.classification import ClassificationEnv
from deepbandits.experiments.runner import run
from deepbandits.policies import CONFIGURATIONS, POLICIES, parameter_names

REFERENCE = Path(__file__).parent / "data" / "trajectories-dcadf77.npz"
T = 160
SMALL = dict(
    hidden=16, feature_dim=6, train_start=40, train_every=20, warmup_every=10, train_steps=8
)
RECORDED = ("arm", "reward", "sigma2_used", "sigma2_hat", "mean", "width", "cum_regret")

#: (case id, policy name, extra parameters, environment)
CASES: list[tuple[str, str, dict, str]] = [
    *[(name, name, {}, "h1") for name in [*POLICIES, *CONFIGURATIONS]],
    ("linucb-per-arm", "linucb", {"per_arm": True}, "h1"),
    ("linucb-theory", "linucb", {"alpha": "theory"}, "h1"),
    ("sigma2-linucb-oracle", "sigma2-linucb", {"variance": "oracle"}, "h1"),
    ("neural-sigma2-mle-theory", "neural-sigma2-linucb", {"loss": "mle", "alpha": "theory"}, "h1"),
    (
        "neural-sigma2-refit-adam",
        "neural-sigma2-linucb",
        {"refit_on_update": True, "optimizer": "adam"},
        "h1",
    ),
    ("neural-sigma2-per-arm", "neural-sigma2-linucb", {"per_arm": True}, "h1"),
    ("neural-ucb-full", "neural-ucb", {"mode": "full"}, "h1"),
    ("neural-ts-full", "neural-ts", {"mode": "full"}, "h1"),
    ("kernel-window", "kernel-ucb", {"max_history": 50}, "h1"),
    ("kernel-linear", "kernel-ucb", {"kernel": "linear"}, "h1"),
    *[
        (f"{name}-blocks", name, {}, "blocks")
        for name in (
            "linucb",
            "sigma2-linucb",
            "neural-linucb",
            "neural-sigma2-linucb",
            "neural-ucb",
            "bootstrapped-nn",
            "save-neural-linucb",
        )
    ],
    ("linucb-dynamic", "sigma2-linucb", {}, "dynamic"),
    ("neural-sigma2-dynamic", "neural-sigma2-linucb", {}, "dynamic"),
]


def make_case_env(kind: str) -> db.Environment:
    if kind == "h1":
        return db.make_env("h1", d=5, n_arms=4, seed=0)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 6))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] + X[:, 2] > 0.5).astype(int)
    return ClassificationEnv(X, y, seed=0, dynamic_range=kind == "dynamic", horizon=T)


def make_case_policy(name: str, params: dict) -> db.Policy:
    base = CONFIGURATIONS[name][0] if name in CONFIGURATIONS else name
    accepted = set(parameter_names(POLICIES[base]))
    small = {k: v for k, v in SMALL.items() if k in accepted}
    if base == "bootstrapped-nn":
        small["n_models"] = 3
    return db.make_policy(name, seed=3, **{**small, **params})


def trajectory(case: tuple[str, str, dict, str]) -> dict[str, np.ndarray]:
    """The arrays a case records."""
    case_id, name, params, kind = case
    env = make_case_env(kind)
    policy = make_case_policy(name, params)
    result = run(policy, env, T, seed=1, checkpoints=(80, T), holdout_size=20)
    out = {f"{case_id}/{k}": result.records[k].to_numpy() for k in RECORDED}
    assert result.holdout is not None
    for k in ("mean", "width"):
        out[f"{case_id}/holdout_{k}"] = result.holdout[k].to_numpy()
    probe = env.next_round().contexts
    mean, width = policy.predict(probe)
    out[f"{case_id}/probe_mean"] = mean
    out[f"{case_id}/probe_width"] = width
    return out


CHECKPOINTS = Path(__file__).parent / "data" / "checkpoints-dcadf77"
#: policies saved at commit dcadf77 after 30 rounds (one per class, plus two layouts)
CHECKPOINT_CASES = [(name, name, {}, "h1") for name in POLICIES] + [
    ("linucb-per-arm", "linucb", {"per_arm": True}, "h1"),
    ("neural-linucb-blocks", "neural-linucb", {}, "blocks"),
]


def continue_checkpoint(policy: db.Policy, kind: str) -> dict[str, np.ndarray]:
    """What a policy saved after 30 rounds does next: 30 more arms, then ``predict``."""
    env = make_case_env(kind)
    env.reset(5)
    for _ in range(30):
        env.next_round()
    arms = []
    for _ in range(30):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(
            rnd.contexts, arm, env.reward(arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range
        )
        arms.append(arm)
    mean, width = policy.predict(env.next_round().contexts)
    return {"arms": np.array(arms), "mean": mean, "width": width}


def record_checkpoint(case: tuple[str, str, dict, str]) -> None:
    case_id, name, params, kind = case
    policy = make_case_policy(name, {**params, "horizon": 100} if "save" in name else params)
    env = make_case_env(kind)
    env.reset(5)
    for _ in range(30):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(
            rnd.contexts, arm, env.reward(arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range
        )
    CHECKPOINTS.mkdir(exist_ok=True)
    policy.save(CHECKPOINTS / f"{case_id}.pt")
    np.savez_compressed(CHECKPOINTS / f"{case_id}.after.npz", **continue_checkpoint(policy, kind))


@pytest.mark.parametrize("case", CHECKPOINT_CASES, ids=[c[0] for c in CHECKPOINT_CASES])
def test_checkpoint_of_the_release_before_the_redesign_continues_identically(case):
    case_id, _, _, kind = case
    policy = db.load_policy(CHECKPOINTS / f"{case_id}.pt")
    expected = np.load(CHECKPOINTS / f"{case_id}.after.npz")
    got = continue_checkpoint(policy, kind)
    for key, value in got.items():
        np.testing.assert_array_equal(value, expected[key], err_msg=f"{case_id}/{key}")


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as data:
        return dict(data)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trajectory_is_unchanged(case, reference):
    got = trajectory(case)
    for key, value in got.items():
        assert key in reference, key
        np.testing.assert_array_equal(value, reference[key], err_msg=key)


if __name__ == "__main__":  # record the reference (only before a change that must not alter it)
    import torch

    torch.set_num_threads(1)
    arrays: dict[str, np.ndarray] = {}
    for case in CASES:
        arrays.update(trajectory(case))
        print(case[0], "final regret", arrays[f"{case[0]}/cum_regret"][-1], file=sys.stderr)
    np.savez_compressed(REFERENCE, **arrays)
    for case in CHECKPOINT_CASES:
        record_checkpoint(case)
