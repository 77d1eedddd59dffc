"""Bad input × every policy × every entry point, generated: each is refused with one of the
library's errors, and a refused call changes nothing (the all-or-nothing property)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepbandits as db
from conftest import POLICY_CASES, assert_matches_recording, play

K, D = 3, 4

BAD_CONTEXTS: list[Any] = [
    "abc",
    [["a", "b", "c", "d"]] * K,
    np.ones((K, D)) * 1j,
    np.array([[0.0, np.nan, 0.0, 0.0]] * K),
    np.array([[0.0, np.inf, 0.0, 0.0]] * K),
    np.full((K, D), 1e300),
    np.full((K, D), -1e19),
    np.ones(D),
    np.ones((K, D, 1)),
    np.ones((0, D)),
    [[1.0, 2.0], [1.0]],
    None,
    {"a": 1},
]
BAD_ARMS: list[Any] = [-1, K, 1.5, "0", True, None, np.float64(0.0)]
BAD_REWARDS: list[Any] = [
    "1",
    None,
    math.nan,
    math.inf,
    1e300,
    1j,
    True,
    [1.0, 2.0],
    np.array([1.0, 2.0]),
]
BAD_SIGMA2: list[Any] = [-1.0, "1", math.nan, True, 1e300]
BAD_RANGES: list[Any] = [(1.0, 1.0), (2.0, 1.0), "ab", (0.0,), (math.nan, 1.0), (0.0, 1e300), 5]


def same(a: Any, b: Any) -> bool:
    """Deep equality of two state dicts: arrays and tensors by value (NaN equal to NaN)."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    if isinstance(b, torch.Tensor):
        b = b.detach().cpu().numpy()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, np.ndarray):
        b = np.asarray(b)
        nan_ok = a.dtype.kind in "fc" and b.dtype.kind in "fc"
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=nan_ok))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def fitted(name: str, params: dict[str, Any], rounds: int = 70) -> db.Policy:
    policy = db.make_policy(name, seed=0, **params)
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=1), rounds)
    return policy


#: masks of K arms that are refused: none available, wrong length, not booleans
BAD_MASKS = [np.zeros(K, dtype=bool), np.ones(K + 1, dtype=bool), np.ones(K), [1] * K]


def bad_calls() -> list[tuple[str, str, dict[str, Any]]]:
    """(label, method, keyword arguments) of every generated bad call."""
    X = np.random.default_rng(0).standard_normal((K, D))
    calls = []
    for i, bad in enumerate(BAD_CONTEXTS):
        calls += [(f"select-contexts{i}", "select", {"contexts": bad})]
        calls += [(f"predict-contexts{i}", "predict", {"contexts": bad})]
        calls += [(f"update-contexts{i}", "update", {"contexts": bad, "arm": 0, "reward": 0.5})]
        calls += [(f"decide-contexts{i}", "decide", {"contexts": bad})]
    for i, bad in enumerate(BAD_MASKS):
        calls += [(f"decide-mask{i}", "decide", {"contexts": X, "mask": bad})]
        calls += [(f"select-mask{i}", "select", {"contexts": X, "mask": bad})]
    calls += [("learn-unknown", "learn", {"decision": "0" * 32, "reward": 0.5})]
    calls += [("learn-type", "learn", {"decision": 3, "reward": 0.5})]
    for i, bad in enumerate(BAD_ARMS):
        calls += [(f"update-arm{i}", "update", {"contexts": X, "arm": bad, "reward": 0.5})]
    for i, bad in enumerate(BAD_REWARDS):
        calls += [(f"update-reward{i}", "update", {"contexts": X, "arm": 0, "reward": bad})]
    for i, bad in enumerate(BAD_SIGMA2):
        calls += [
            (f"update-sigma2{i}", "update", {"contexts": X, "arm": 0, "reward": 0.5, "sigma2": bad})
        ]
    for i, bad in enumerate(BAD_RANGES):
        call = {"contexts": X, "arm": 0, "reward": 0.5, "reward_range": bad}
        calls += [(f"update-range{i}", "update", call)]
    calls += [
        (
            "update-outside",
            "update",
            {"contexts": X, "arm": 0, "reward": 5.0, "reward_range": (0, 1)},
        )
    ]
    return calls


BAD_CALLS = bad_calls()
#: calls that are bad only once a policy has fixed its context dimension D
WRONG_DIMENSION = [
    ("select-dim", "select", {"contexts": np.ones((K, D + 1))}),
    ("decide-dim", "decide", {"contexts": np.ones((K, D + 1))}),
    ("update-dim", "update", {"contexts": np.ones((K, D + 1)), "arm": 0, "reward": 0.5}),
]


@pytest.mark.parametrize(("name", "params"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_every_bad_call_is_refused_and_changes_nothing(name, params):
    """Fresh and fitted policies alike: a library error naming the argument, and the state,
    the generator and the diagnostics exactly as before the call."""
    fresh = db.make_policy(name, seed=0, **params)
    for policy, calls in ((fresh, BAD_CALLS), (fitted(name, params), BAD_CALLS + WRONG_DIMENSION)):
        for label, method, kwargs in calls:
            before = policy.state_dict()
            with pytest.raises(db.DeepBanditsError) as err:
                getattr(policy, method)(**kwargs)
                pytest.fail(f"{label} was accepted")
            named = {"contexts", "arm", "reward", "sigma2", "reward_range", "mask", "decision"}
            named &= set(kwargs)
            assert any(word in str(err.value) for word in named), (label, str(err.value))
            assert same(policy.state_dict(), before), (name, label)
        # and it still works
        play(policy, db.make_env("h1", d=D, n_arms=K, seed=5), 3)


#: Attributes a user may read of any policy (getters and fitted attributes).
GETTERS = ("n_features_in_", "t_", "n_trainings_", "ridge_", "network_", "parts")


def read_only_calls(policy: db.Policy, d: int) -> list[tuple[str, Any]]:
    """(label, call) of every call that only reads: predict, parameters, state, getters."""
    X = np.random.default_rng(7).standard_normal((K, d))
    calls: list[tuple[str, Any]] = [
        ("predict", lambda: policy.predict(X)),
        ("get_params", policy.get_params),
        ("get_params-deep", lambda: policy.get_params(deep=True)),
        ("state_dict", policy.state_dict),
        ("repr", lambda: repr(policy)),
        ("pending", policy.pending_.counts),
    ]
    calls += [(name, lambda name=name: getattr(policy, name, None)) for name in GETTERS]
    return calls


@pytest.mark.parametrize(("name", "params"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_read_only_calls_change_nothing_on_fresh_and_fitted_policies(name, params):
    """predict, the getters and the state of a fresh policy leave it fresh (any context
    dimension still accepted next); on a fitted one they leave state and generator as they
    were, so the trajectory goes on as if they had not been made."""
    fresh = db.make_policy(name, seed=0, **params)
    for label, call in read_only_calls(fresh, D + 3):
        before = fresh.state_dict()
        call()
        assert fresh.n_features_in_ is None, (name, label)
        assert same(fresh.state_dict(), before), (name, label)
    fresh.decide(np.ones((K, D)))  # the dimension predict saw is not fixed
    assert fresh.n_features_in_ == D
    policy, twin = fitted(name, params), fitted(name, params)
    for label, call in read_only_calls(policy, D):
        before = policy.state_dict()
        call()
        assert same(policy.state_dict(), before), (name, label)
    env = db.make_env("h1", d=D, n_arms=K, seed=5)
    twin_env = db.make_env("h1", d=D, n_arms=K, seed=5)
    np.testing.assert_array_equal(play(policy, env, 5), play(twin, twin_env, 5))


def _param_cases() -> list[tuple[str, str, Any]]:
    """(policy, parameter, bad value) for every numeric or flag parameter of every policy."""
    cases = []
    for name in db.policy_names():
        for key, default in db.make_policy(name).get_params().items():
            if isinstance(default, bool):
                bad = ["yes", 1, None]
            elif isinstance(default, int | float) and key != "seed":
                bad = ["1", True, 1j, math.nan, [1.0]]
            else:
                continue
            cases += [(name, key, value) for value in bad]
    for name in ("linucb", "neural-linucb", "neural-ucb", "kernel-ucb", "bootstrapped-nn"):
        cases += [(name, "seed", value) for value in (-1, "0", 1.5, True, 2**70)]
    return cases


@pytest.mark.parametrize(("name", "key", "value"), _param_cases())
def test_parameters_of_the_wrong_type_are_refused(name, key, value):
    """A string, a bool or a complex value is never taken as a number (``alpha="1"``)."""
    with pytest.raises(db.DeepBanditsError, match=key):
        db.make_policy(name, **{key: value})
    policy = db.make_policy(name)
    params = policy.get_params()
    with pytest.raises(db.DeepBanditsError, match=key):
        policy.set_params(**{key: value})
    assert policy.get_params() == params


@pytest.mark.parametrize(
    "name", ["linucb", "neural-ucb", "kernel-ucb", "bootstrapped-nn", "save-neural-linucb"]
)
def test_reward_range_is_checked_by_every_policy(name):
    """An empty or reversed range, and a reward outside the range in force, are refused."""
    extra = {"horizon": 100} if name == "save-neural-linucb" else {}
    policy = db.make_policy(name, seed=0, **extra)
    for bad in ((1.0, 1.0), (1.0, 0.0)):
        if "reward_range" in policy.get_params():
            with pytest.raises(db.InputValueError, match="a < b"):
                db.make_policy(name, reward_range=bad, **extra)
        with pytest.raises(db.InputValueError, match="a < b"):
            policy.update(np.eye(3), 0, 0.5, reward_range=bad)
    with pytest.raises(db.InputValueError, match="outside the reward range"):
        policy.update(np.eye(3), 0, 2.0, reward_range=(0.0, 1.0))
    assert policy.n_features_in_ is None and policy.t_ == 0


# ---------------------------------------------------------------------------- all or nothing
STATEFUL = [
    c
    for c in POLICY_CASES
    if c[0]
    in {
        "linucb",
        "neural-sigma2-linucb",
        "neural-ucb",
        "kernel-ucb",
        "save-neural-linucb",
        "bootstrapped-nn",
    }
]


@st.composite
def call_sequences(draw: st.DrawFn) -> list[tuple[bool, int, int]]:
    """A sequence of (valid?, which bad call, seed of the round)."""
    n = draw(st.integers(5, 25))
    return [
        (draw(st.booleans()), draw(st.integers(0, len(BAD_CALLS) - 1)), draw(st.integers(0, 99)))
        for _ in range(n)
    ]


@pytest.mark.parametrize(("name", "params"), STATEFUL, ids=[c[0] for c in STATEFUL])
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=call_sequences())
def test_rejected_calls_interleaved_with_valid_ones_leave_no_trace(name, params, calls):
    """Valid and invalid calls interleaved at random: the policy ends exactly where the same
    policy fed only the valid calls ends."""
    if "train_start" in params:  # train often, so that rejected calls meet trained networks
        params = {**params, "train_start": 5, "train_every": 3, "warmup_every": 3}
    mixed = db.make_policy(name, seed=0, **params)
    clean = db.make_policy(name, seed=0, **params)
    for valid, which, seed in calls:
        rng = np.random.default_rng(seed)
        X, reward = rng.standard_normal((K, D)), float(rng.uniform(-1, 1))
        if valid:
            for policy in (mixed, clean):
                policy.update(X, policy.select(X), reward, reward_range=(-1.0, 1.0))
        else:
            before = mixed.state_dict()
            _, method, kwargs = BAD_CALLS[which]
            with pytest.raises(db.DeepBanditsError):
                getattr(mixed, method)(**kwargs)
            assert same(mixed.state_dict(), before)
    assert same(mixed.state_dict(), clean.state_dict())


# ---------------------------------------------------------------------------- checkpoints
def _damage(state: dict[str, Any], how: str) -> dict[str, Any]:
    state = dict(state)
    if how == "missing-key":
        del state["rng"]
    elif how == "wrong-type":
        state["t"] = "70"
    elif how == "bad-json":
        state["params"] = "{not json"
    elif how == "future-format":
        state["format"] = 99
    elif how == "negative-t":
        state["t"] = -1
    elif how == "bad-rng":
        state["rng"] = json.dumps({"bit_generator": "Nope"})
    elif how == "truncated-state":
        state["state"] = {}
    elif how == "not-a-dict":
        return ["format", 1]  # type: ignore[return-value]
    return state


DAMAGES = [
    "missing-key",
    "wrong-type",
    "bad-json",
    "future-format",
    "negative-t",
    "bad-rng",
    "truncated-state",
    "not-a-dict",
]


@pytest.mark.parametrize(("name", "params"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_damaged_checkpoints_are_refused_and_change_nothing(name, params, tmp_path):
    source = fitted(name, params)
    target = fitted(name, params, rounds=20)
    before = target.state_dict()
    for how in DAMAGES:
        with pytest.raises(db.CheckpointError):
            target.load_state_dict(_damage(source.state_dict(), how))
        assert same(target.state_dict(), before), how
        path = tmp_path / f"{how}.pt"
        torch.save(_damage(source.state_dict(), how), path)
        with pytest.raises(db.CheckpointError):
            db.load_policy(path)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00not a checkpoint")
    with pytest.raises(db.CheckpointError, match="not a deepbandits policy file"):
        db.load_policy(garbage)
    with pytest.raises(db.CheckpointNotFoundError):
        db.load_policy(tmp_path / "missing.pt")


@pytest.mark.parametrize(
    ("name", "saved", "receiver"),
    [
        ("neural-linucb", {"feature_dim": 8}, {"feature_dim": 6}),
        ("neural-linucb", {"hidden": 16}, {"hidden": 12}),
        ("neural-linucb", {"n_layers": 2}, {"n_layers": 3}),
        ("linucb", {"per_arm": False}, {"per_arm": True}),
        ("linucb", {"lam": 1.0}, {"lam": 2.0}),
        ("neural-ucb", {"mode": "diag"}, {"mode": "full"}),
        ("bootstrapped-nn", {"n_models": 3}, {"n_models": 2}),
        ("kernel-ucb", {"max_history": 60}, {"max_history": 50}),
    ],
)
def test_a_state_saved_with_other_parameters_is_refused(name, saved, receiver):
    small = {"hidden": 16, "train_start": 20, "train_every": 10, "warmup_every": 10}
    small = {} if name in {"linucb", "kernel-ucb"} else small
    source = db.make_policy(name, seed=0, **{**small, **saved})
    play(source, db.make_env("h1", d=D, n_arms=K, seed=1), 30)
    target = db.make_policy(name, seed=0, **{**small, **receiver})
    before = target.state_dict()
    key = next(iter(saved))
    with pytest.raises(db.CheckpointError, match=f"{key}: saved"):
        target.load_state_dict(source.state_dict())
    assert same(target.state_dict(), before)


def test_a_failed_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    policy = fitted("linucb", {})
    path = tmp_path / "p.pt"
    policy.save(path)
    good = path.read_bytes()
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=2), 5)

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        policy.save(path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["p.pt"]  # no temporary file left


# ---------------------------------------------------------------------------- environments
SYNTHETIC = ["h1", "h2", "h3", "linear"]


def _env_cases() -> list[tuple[str, str, Any]]:
    cases = []
    for name in SYNTHETIC:
        for key, default in db.make_env(name).get_params().items():
            if key != "seed" and isinstance(default, int | float) and not isinstance(default, bool):
                cases += [(name, key, value) for value in ("1", True, 1j, math.nan, -1)]
    return cases


@pytest.mark.parametrize(("name", "key", "value"), _env_cases())
def test_environment_parameters_are_checked(name, key, value):
    with pytest.raises(db.DeepBanditsError, match=key):
        db.make_env(name, **{key: value})


@pytest.mark.parametrize("seed", [-1, "0", 1.5, True, 2**70])
def test_bad_seeds_are_refused_everywhere(seed):
    X, y = np.random.default_rng(0).standard_normal((8, 2)), [0, 1] * 4
    for make in (
        lambda: db.make_env("h1", seed=seed),
        lambda: db.make_env("h1").reset(seed=seed),
        lambda: db.make_env("classification", X=X, y=y, seed=seed),
        lambda: db.make_policy("linucb").reset(seed=seed),
    ):
        with pytest.raises(db.DeepBanditsError, match="seed"):
            make()


def test_environment_calls_out_of_order_or_out_of_range():
    X, y = np.random.default_rng(0).standard_normal((8, 2)), [0, 1] * 4
    for env in (db.make_env("h1"), db.make_env("classification", X=X, y=y)):
        with pytest.raises(db.CallOrderError, match="next_round"):
            env.reward(0)
        env.next_round()
        for arm in (-1, 99, "0", 1.0):
            with pytest.raises(db.DeepBanditsError, match="arm"):
                env.reward(arm)
    with pytest.raises(db.InputValueError, match="noise_std"):
        db.make_env("h1", noise_std=-1.0)
    for bad in ([["a", "b"]] * 8, np.ones((8, 2)) * 1j):
        with pytest.raises(db.InputTypeError, match="X must be"):
            db.make_env("classification", X=bad, y=y)


@pytest.mark.parametrize(
    "name", ["neural-linucb", "neural-sigma2-linucb", "neural-ucb", "bootstrapped-nn"]
)
def test_a_diverging_training_is_undone_and_never_poisons_the_policy(name):
    """Contexts and rewards of scale 1e12, no gradient clipping: the first trainings blow up;
    each is undone with a warning, and the policy keeps scoring every arm with finite numbers."""
    small = {"hidden": 16, "train_start": 10, "train_every": 5, "warmup_every": 5}
    extra = {"n_models": 2} if name == "bootstrapped-nn" else {}
    policy = db.make_policy(name, seed=0, max_grad_norm=None, train_steps=10, **small, **extra)
    rng = np.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match="diverged"):
        for _ in range(30):
            X = rng.standard_normal((K, D)) * 1e12
            arm = policy.select(X)
            policy.update(X, arm, float(rng.standard_normal()) * 1e12, reward_range=(-1e13, 1e13))
    mean, width = policy.predict(rng.standard_normal((K, D)))
    assert np.isfinite(mean).all() and np.isfinite(width).all()
    learners = getattr(policy, "members_", None) or [policy.learner_]
    assert sum(learner.n_diverged for learner in learners) > 0


RELEASED = Path(__file__).parent / "data" / "checkpoints-0.1.0"
RELEASED_CASES = {
    "linucb": {},
    # the ridge family's network defaults of that release ("default" schedule, no weight decay)
    "neural-sigma2-linucb": {
        "hidden": 8,
        "feature_dim": 4,
        "train_steps": 5,
        "train_schedule": "default",
        "weight_decay": 0.0,
    },
    "neural-ucb": {"hidden": 8, "train_steps": 5},
}


@pytest.mark.parametrize("name", sorted(RELEASED_CASES))
def test_checkpoints_of_the_previous_release_load_and_continue_identically(name):
    """A file saved before ``max_history`` and the schema check existed loads (a parameter added
    since takes its default) and the policy continues exactly as that release did."""
    policy = db.load_policy(RELEASED / f"{name}.pt")
    expected = np.load(RELEASED / f"{name}.after.npz")
    env = db.make_env("h1", d=3, n_arms=3, seed=0)
    for _ in range(30):
        env.next_round()
    np.testing.assert_array_equal(play(policy, env, 30), expected["arms"])
    mean, width = policy.predict(expected["contexts"])
    # recorded on another machine: floats at the tolerance of another BLAS kernel (conftest)
    network = policy._uses_torch
    assert_matches_recording(mean, expected["mean"], "mean", network)
    assert_matches_recording(width, expected["width"], "width", network)
    # the same state loads into a policy built with the same settings
    if name != "linucb":
        small = {"train_start": 10, "train_every": 10, "warmup_every": 10}
        fresh = db.make_policy(name, seed=0, **RELEASED_CASES[name], **small)
        fresh.load_state_dict(torch.load(RELEASED / f"{name}.pt", weights_only=True))
        assert fresh.t_ == 30
