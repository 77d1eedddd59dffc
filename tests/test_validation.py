import pickle

import numpy as np
import pytest

import deepbandits as db


@pytest.fixture
def fitted():
    p = db.LinUCB(seed=0)
    p.select(np.eye(3))
    return p


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        (np.array([[0.0, np.nan, 1.0]]), "NaN or inf"),
        (np.array([[0.0, np.inf, 1.0]]), "NaN or inf"),
        (np.ones(3), "2-d array"),
        (np.ones((2, 3, 1)), "2-d array"),
        (np.ones((2, 4)), "3 features per arm .*fitted with.*, but 4 are given"),
        (np.ones((0, 3)), "0 arms"),
        ("abc", "array of real numbers"),
        (np.array([["1", "2", "3"]]), "array of real numbers"),
        (np.ones((1, 3)) * 1j, "array of real numbers"),
        (np.array([[1e300, 0.0, 0.0]]), "at most 1e\\+18"),
    ],
)
def test_bad_contexts(fitted, contexts, message):
    with pytest.raises(db.DeepBanditsError, match=message):
        fitted.select(contexts)
    with pytest.raises(db.DeepBanditsError, match=message):
        fitted.update(contexts, 0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"arm": 3, "reward": 1.0}, "arm index 3 is out of range for 3 arms"),
        ({"arm": -1, "reward": 1.0}, "out of range"),
        ({"arm": 1.5, "reward": 1.0}, "integer"),
        ({"arm": 0, "reward": float("nan")}, "reward must be finite"),
        ({"arm": 0, "reward": 1.0, "sigma2": -1.0}, "sigma2 must be >= 0"),
        ({"arm": 0, "reward": 1.0, "reward_range": (1, 1)}, "a < b"),
        ({"arm": 0, "reward": 5.0, "reward_range": (0, 1)}, "outside the reward range"),
    ],
)
def test_bad_update(fitted, kwargs, message):
    with pytest.raises(db.DeepBanditsError, match=message):
        fitted.update(np.eye(3), **kwargs)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("linucb", {"alpha": -1}, "alpha must be >= 0"),
        ("linucb", {"alpha": "big"}, "alpha must be a number"),
        ("linucb", {"lam": 0}, "lam must be > 0"),
        ("linucb", {"variance": "magic"}, "unknown variance 'magic'"),
        ("linucb", {"reward_range": (2, 1)}, "a < b"),
        ("linucb", {"colour": 1}, "unknown option.*'colour'"),
        ("neural-linucb", {"loss": "huber"}, "unknown loss 'huber'"),
        ("neural-linucb", {"train_schedule": "fast"}, "unknown train_schedule 'fast'"),
        ("neural-linucb", {"train_every": 0}, "train_every must be >= 1"),
        ("neural-linucb", {"device": "tpu"}, "device"),
        ("neural-linucb", {"hidden_size": 3}, "unknown option.*'hidden_size'"),
        ("sigma2-linucb", {"variance": "schedule"}, "needs schedule"),
        (
            "sigma2-linucb",
            {"variance": "schedule", "schedule": "cosine"},
            "not understood",
        ),
        ("bandit9000", {}, "unknown policy 'bandit9000'"),
    ],
)
def test_bad_options(name, params, message):
    with pytest.raises(db.DeepBanditsError, match=message):
        db.make_policy(name, **params)


def test_bad_env_options():
    with pytest.raises(db.DeepBanditsError, match="unknown environment 'h9'"):
        db.make_env("h9")
    with pytest.raises(db.DeepBanditsError, match=r"unknown option.*'arms'"):
        db.make_env("h1", arms=3)
    with pytest.raises(db.DeepBanditsError, match="unknown noise 'pink'"):
        db.make_env("h1", noise="pink")


def test_missing_variance_inputs():
    X = np.eye(2)
    with pytest.raises(db.DeepBanditsError, match="needs the oracle"):
        db.Sigma2LinUCB(variance="oracle").update(X, 0, 1.0)
    with pytest.raises(db.DeepBanditsError, match="needs a reward range"):
        db.Sigma2LinUCB().update(X, 0, 1.0)


def test_cuda_without_gpu_is_an_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(db.DeepBanditsError, match="CUDA is not available"):
        db.make_policy("neural-linucb", device="cuda")


class _Exploit:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_loading_never_unpickles_code(tmp_path):
    path = tmp_path / "evil.pt"
    import torch

    torch.save({"format": 1, "payload": _Exploit()}, path)
    with pytest.raises(db.DeepBanditsError, match="not a deepbandits policy file"):
        db.load_policy(path)
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(_Exploit()))
    with pytest.raises(db.DeepBanditsError, match="not a deepbandits policy file"):
        db.load_policy(raw)
    with pytest.raises(db.CheckpointNotFoundError):
        db.load_policy(tmp_path / "missing.pt")


def test_schedule_without_horizon_fails_at_first_round_and_runner_supplies_it():
    policy = db.make_policy("sigma2-linucb", variance="schedule", schedule="linear:1:0")
    with pytest.raises(db.DeepBanditsError, match="needs a horizon"):
        policy.select(np.eye(3))
    result = db.run(policy, db.make_env("linear", d=3, n_arms=3), T=20, seed=0)
    assert policy.get_params()["horizon"] == 20
    # σ² falls linearly from 1 to 0 over the 20 rounds, floored at R²/d = 1/3
    expected = np.maximum(np.linspace(1, 0, 20), 1 / 3)
    np.testing.assert_allclose(result.records["sigma2_used"], expected)


def test_set_params_validates_and_keeps_presets():
    policy = db.make_policy("neural-linucb")
    with pytest.raises(db.DeepBanditsError, match="fixes variance='none'"):
        policy.set_params(variance="range")
    with pytest.raises(db.DeepBanditsError, match="no parameter 'colour'"):
        policy.set_params(colour=1)
    with pytest.raises(db.DeepBanditsError, match="lr must be > 0"):
        policy.set_params(lr=-1.0)
    assert policy.get_params()["lr"] == 1e-2
    policy.set_params(lr=0.5)
    assert policy.get_params()["lr"] == 0.5


@pytest.mark.parametrize(
    "name", ["linucb", "neural-linucb", "neural-ucb", "kernel-ucb", "range-mle"]
)
def test_misspelt_policy_keywords_list_every_parameter(name):
    """The list of valid keywords includes the ridge ones (alpha, lam) and suggests the closest."""
    with pytest.raises(db.DeepBanditsError) as err:
        db.make_policy(name, alph=1.0)
    message = str(err.value)
    assert "did you mean 'alpha' for 'alph'" in message
    assert "alpha" in message.split("valid options:")[1]
    assert "lam" in message.split("valid options:")[1]
