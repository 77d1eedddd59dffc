"""Classification → bandit environment (Section 5.2) and its use by the runner and the CLI."""

import json

import numpy as np
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.encoding import BlockContexts
from deepbandits.envs import ClassificationEnv
from deepbandits.experiments.compare import build_policy


def labelled(n=40, D=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.array(["cat", "dog", "emu"])[rng.integers(0, 3, n)]
    return X, y


def test_reward_is_one_exactly_for_the_labelled_arm():
    X, y = labelled()
    env = db.make_env("classification", X=X, y=y, seed=0)
    arms = {"cat": 0, "dog": 1, "emu": 2}  # sorted label order
    order = env._order
    for t in range(len(X)):
        rnd = env.next_round()
        label = arms[y[order[t]]]
        assert rnd.reward_range == (0.0, 1.0) and rnd.sigma2 == 0.0
        np.testing.assert_array_equal(rnd.expected_rewards, np.eye(3)[label])
        assert [env.reward(k) for k in range(3)] == list(np.eye(3)[label])
        x = X[order[t]] / np.linalg.norm(X[order[t]])
        assert isinstance(rnd.contexts, BlockContexts)
        np.testing.assert_allclose(rnd.contexts.dense()[label, 6 * label : 6 * label + 6], x)


def test_block_and_dense_encodings_give_the_same_contexts():
    X, y = labelled()
    block = db.make_env("classification", X=X, y=y, seed=1)
    dense = db.make_env("classification", X=X, y=y, seed=1, encoding="dense")
    for _ in range(10):
        rb, rd = block.next_round(), dense.next_round()
        assert isinstance(rd.contexts, np.ndarray) and rd.contexts.shape == (3, 18)
        np.testing.assert_array_equal(rb.contexts.dense(), rd.contexts)


def test_order_is_seeded_and_reshuffled_after_each_pass():
    X, y = labelled(n=10)
    a = db.make_env("classification", X=X, y=y, seed=3)
    b = db.make_env("classification", X=X, y=y, seed=3)
    seen_a = [a.next_round().contexts.blocks[0].tobytes() for _ in range(20)]
    seen_b = [b.next_round().contexts.blocks[0].tobytes() for _ in range(20)]
    assert seen_a == seen_b
    assert sorted(seen_a[:10]) == sorted(seen_a[10:])  # each pass visits every sample once
    assert seen_a[:10] != seen_a[10:]  # in a new order


def test_dynamic_range_switches_at_half_the_horizon():
    X, y = labelled()
    env = db.make_env("classification", X=X, y=y, seed=0, dynamic_range=True, horizon=8)
    ranges, maxima, minima = [], [], []
    for _ in range(8):
        rnd = env.next_round()
        ranges.append(rnd.reward_range)
        maxima.append(rnd.expected_rewards.max())
        minima.append(rnd.expected_rewards.min())
    assert ranges == [(0.0, 1.0)] * 4 + [(1.0, 3.0)] * 4
    assert maxima == [1.0] * 4 + [3.0] * 4 and minima == [0.0] * 4 + [1.0] * 4


def test_bad_data_is_rejected_with_a_clear_message():
    X, y = labelled()
    with pytest.raises(ValueError, match="one label per row"):
        ClassificationEnv(X, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        ClassificationEnv(np.full((3, 2), np.nan), [0, 1, 0])
    with pytest.raises(ValueError, match="distinct label"):
        ClassificationEnv(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="encoding"):
        ClassificationEnv(X, y, encoding="sparse")
    with pytest.raises(ValueError, match="unknown option"):
        db.make_env("shuttle", colour="red")


def test_policies_learn_an_easy_classification_bandit():
    """Separable classes: LinUCB's regret over 600 rounds is far below uniform play's 2/3."""
    rng = np.random.default_rng(4)
    centres = np.eye(3) * 5
    y = rng.integers(0, 3, 300)
    X = centres[y] + rng.normal(size=(300, 3))
    for seed in range(3):
        env = db.make_env("classification", X=X, y=y, seed=seed)
        result = db.run(db.make_policy("linucb", alpha=0.1), env, 600, seed=seed)
        assert result.final_regret < 0.25 * 600 * 2 / 3


def test_real_dataset_env_uses_the_paper_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "shuttle"
    folder.mkdir()
    rows = "\n".join(f"{i} {i % 5} 3 4 5 6 7 8 9 {1 + i % 3}" for i in range(1, 30)) + "\n"
    (folder / "shuttle.trn").write_text(rows)
    (folder / "shuttle.tst").write_text(rows)
    env = db.make_env("shuttle", data_dir=tmp_path, seed=0, download=False)
    assert env.n_arms == 3 and env.get_params()["dataset"] == "shuttle"
    policy = build_policy("neural-linucb", env)
    assert policy.get_params()["feature_dim"] == 64 and policy.get_params()["train_every"] == 100
    assert build_policy("neural-linucb:feature_dim=8", env).get_params()["feature_dim"] == 8
    assert "feature_dim" not in build_policy("neural-ucb", env).get_params()


def test_cli_compare_on_a_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "data" / "shuttle"
    folder.mkdir(parents=True)
    rows = "\n".join(f"{i} {i % 7} 3 4 5 6 7 8 9 {1 + i % 2}" for i in range(1, 40)) + "\n"
    (folder / "shuttle.trn").write_text(rows)
    (folder / "shuttle.tst").write_text(rows)
    monkeypatch.setenv("DEEPBANDITS_DATA", str(tmp_path / "data"))
    out = tmp_path / "out"
    code = main(
        [
            "compare",
            "--env",
            "shuttle",
            "--policy",
            "linucb,sigma2-linucb",
            "--T",
            "50",
            "--seeds",
            "0-1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    config = json.loads((out / "sigma2-linucb" / "seed_1.json").read_text())
    assert config["env"]["params"]["dataset"] == "shuttle"
    assert config["env"]["params"]["horizon"] == 50
    assert (out / "summary.csv").read_text().count("\n") == 3


@pytest.mark.parametrize("name", db.policies.distinct_policy_names())
def test_every_policy_plays_the_same_arms_on_block_and_dense_contexts(name):
    """K·D = 1200 >= 1024, so the networks take their block path; same seed, same arms."""
    rng = np.random.default_rng(5)
    X, y = rng.random((60, 300)), rng.integers(0, 4, 60)
    params = {"seed": 0}
    if name not in ("linucb", "sigma2-linucb", "kernel-ucb"):
        params.update(train_start=0, train_every=10, warmup_every=0, train_steps=5)
    arms = []
    for encoding in ("block", "dense"):
        env = db.make_env("classification", X=X, y=y, seed=0, encoding=encoding)
        policy = db.make_policy(name, **params)
        arms.append(db.run(policy, env, 25, seed=0).records["arm"].tolist())
    assert arms[0] == arms[1]
