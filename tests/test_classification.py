"""Classification → bandit environment (Section 5.2) and its use by the runner and the CLI."""

import json

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.datasets import catalog
from deepbandits.encoding import BlockContexts
from deepbandits.envs import DATASET_PREPROCESS, ClassificationEnv
from deepbandits.envs import preprocessing as preprocessing_module
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import build_policy
from deepbandits.metrics import locked_out_arms, unplayed_arms, window_accuracy


def labelled(n=40, D=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.array(["cat", "dog", "emu"])[rng.integers(0, 3, n)]
    return X, y


def test_reward_is_one_exactly_for_the_labelled_arm():
    X, y = labelled()
    env = db.make_env("classification", X=X, y=y, seed=0, preprocess="l2")
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
    with pytest.raises(ValueError, match="NaN or inf: first at row 0, column 0"):
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


def test_real_dataset_env_gives_recommended_settings_or_the_papers(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})  # made-up files, not the real ones
    folder = tmp_path / "shuttle"
    folder.mkdir()
    rows = "\n".join(f"{i} {i % 5} 3 4 5 6 7 8 9 {1 + i % 3}" for i in range(1, 30)) + "\n"
    (folder / "shuttle.trn").write_text(rows)
    (folder / "shuttle.tst").write_text(rows)
    env = db.make_env("shuttle", data_dir=tmp_path, seed=0, download=False)
    assert env.n_arms == 3 and env.get_params()["dataset"] == "shuttle"
    # the dataset's default (DATASET_PREPROCESS): standardised, statistics in the configuration
    assert DATASET_PREPROCESS["shuttle"] == "standardize"
    assert env.get_params()["preprocess"] == "standardize"
    assert len(env.get_params()["preprocess_stats"]["mean"]) == 9
    np.testing.assert_allclose(env.sample(0), (env.X[0] - env.X.mean(0)) / env.scale_)
    # the paper's setting on request: every sample L2-normalised, no statistics
    paper = db.make_env("shuttle", data_dir=tmp_path, download=False, preprocess="l2")
    assert paper.get_params()["preprocess"] == "l2"
    assert "preprocess_stats" not in paper.get_params()
    np.testing.assert_allclose(np.linalg.norm(paper.sample(0)), 1.0)
    policy = build_policy("neural-linucb", env)  # shuttle's recommended settings
    assert policy.get_params()["feature_dim"] == 64 and policy.get_params()["train_every"] == 50
    paper_policy = build_policy("neural-linucb", paper)  # preprocess given: settings recommended
    assert paper_policy.get_params()["train_every"] == 50
    settings_paper = db.make_env("shuttle", data_dir=tmp_path, download=False, settings="paper")
    assert settings_paper.get_params()["preprocess"] == "l2"
    assert build_policy("neural-linucb", settings_paper).get_params()["train_every"] == 100
    assert build_policy("neural-linucb:feature_dim=8", env).get_params()["feature_dim"] == 8
    assert "feature_dim" not in build_policy("neural-ucb", env).get_params()


def test_cli_compare_on_a_dataset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setitem(catalog.CANONICAL, "shuttle", {})  # made-up files, not the real ones
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
    summary = pd.read_csv(out / "summary.csv")
    # the arms locked out are among the arms never played, and both are counts of arms
    assert (summary["locked_out_arms_mean"] <= summary["unplayed_arms_mean"]).all()
    assert summary["locked_out_arms_mean"].between(0, 7).all()
    assert "of them locked out" in capsys.readouterr().out


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


# --- preprocessing -------------------------------------------------------------------------


def with_constant_column(n=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(3.0, 2.0, size=(n, 4))
    X[:, 1] = 7.5  # constant: scale 1, then 0 after centring
    X[:, 3] = rng.integers(0, 4, n)
    return X, rng.integers(0, 3, n)


def test_standardize_is_the_default_and_uses_only_the_column_statistics():
    X, y = with_constant_column()
    env = db.make_env("classification", X=X, y=y, seed=0)
    assert env.preprocess == "standardize"
    mean = X.sum(axis=0) / len(X)
    std = np.sqrt(((X - mean) ** 2).sum(axis=0) / len(X))  # population std
    scale = np.where(std > 0, std, 1.0)
    for i in range(len(X)):
        x = env.sample(i)
        assert x.dtype == np.float64 and np.isfinite(x).all()
        np.testing.assert_allclose(x, (X[i] - mean) / scale, rtol=1e-12, atol=1e-12)
        assert x[1] == 0.0
    stats = env.get_params()["preprocess_stats"]
    assert env.get_params()["preprocess"] == "standardize"
    assert all(type(v) is float for v in stats["mean"] + stats["scale"])
    np.testing.assert_allclose(stats["mean"], mean, rtol=1e-12)
    np.testing.assert_allclose(stats["scale"], scale, rtol=1e-12)
    assert stats["scale"][1] == 1.0
    json.dumps(env.get_params())  # goes into the run's configuration file
    # every round and the hold-out set use the same standardised samples
    rnd = env.next_round()
    i = int(env._order[0])
    np.testing.assert_array_equal(rnd.contexts.blocks[0], env.sample(i))
    hold = env.holdout(5)
    order = np.random.default_rng(0).permutation(len(X))
    np.testing.assert_array_equal(hold.contexts[-1].blocks[0], env.sample(int(order[-1])))


def test_each_preprocess_option():
    X, y = with_constant_column()
    X = np.abs(X)
    X[4] = 0.0  # an all-zero sample
    envs = {p: ClassificationEnv(X, y, preprocess=p) for p in ("none", "l2", "standardize")}
    both = ClassificationEnv(X, y, preprocess="standardize+l2")
    for i in range(len(X)):
        np.testing.assert_array_equal(envs["none"].sample(i), X[i].astype(np.float64))
        norm = np.linalg.norm(X[i])
        expected = X[i] / norm if norm > 0 else X[i]
        np.testing.assert_allclose(envs["l2"].sample(i), expected, rtol=1e-12)
        z = envs["standardize"].sample(i)
        np.testing.assert_allclose(both.sample(i), z / np.linalg.norm(z), rtol=1e-12)
    np.testing.assert_array_equal(envs["l2"].sample(4), np.zeros(4))
    assert "preprocess_stats" not in envs["l2"].get_params()
    assert "preprocess_stats" not in envs["none"].get_params()
    assert (
        both.get_params()["preprocess_stats"]
        == envs["standardize"].get_params()["preprocess_stats"]
    )
    np.testing.assert_allclose(both.transform(X[:3]), [both.sample(i) for i in range(3)])
    with pytest.raises(ValueError, match="preprocess"):
        ClassificationEnv(X, y, preprocess="minmax")


def test_standardize_global_uses_one_mean_and_scale_for_every_column():
    """The pixels' one mean and std (torchvision's Normalize on MNIST): a column that is almost
    always 0 stays near 0, where the per-column z-score blows it up."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 256, size=(200, 5)).astype(np.uint8)
    X[:, 0] = 0
    X[7, 0] = 255  # a border pixel lit once
    y = rng.integers(0, 3, 200)
    env = ClassificationEnv(X, y, preprocess="standardize-global")
    values = X.astype(np.float64)
    mean, std = values.mean(), values.std()
    for i in (0, 7, 199):
        np.testing.assert_allclose(env.sample(i), (values[i] - mean) / std, rtol=1e-12)
    stats = env.get_params()["preprocess_stats"]
    np.testing.assert_allclose(stats["mean"], [mean] * 5, rtol=1e-12)
    np.testing.assert_allclose(stats["scale"], [std] * 5, rtol=1e-12)
    per_column = ClassificationEnv(X, y, preprocess="standardize")
    assert per_column.sample(7)[0] > 10 > env.sample(7)[0]
    # a constant table never divides by zero
    flat = ClassificationEnv(np.full((6, 3), 4.0), [0, 1] * 3, preprocess="standardize-global")
    np.testing.assert_array_equal(flat.sample(2), 0.0)


def test_standardize_nonbinary_keeps_indicator_columns_as_zero_and_one():
    """Covertype's one-hot columns: a z-score would make a rare indicator ±30 when present; the
    0/1 columns stay as they are, every other column is standardised as "standardize" does."""
    rng = np.random.default_rng(4)
    n = 1000
    X = np.column_stack(
        [
            rng.normal(50.0, 7.0, n),  # measured
            np.zeros(n),  # an indicator never set: binary too
            (np.arange(n) == 3).astype(float),  # a category of one row in 1,000
            rng.integers(0, 2, n).astype(float),  # a flag
            rng.integers(0, 3, n).astype(float),  # 0, 1, 2: not binary
        ]
    )
    y = rng.integers(0, 3, n)
    env = ClassificationEnv(X, y, preprocess="standardize-nonbinary")
    per_column = ClassificationEnv(X, y, preprocess="standardize")
    binary = [False, True, True, True, False]
    for i in (0, 3, 999):
        np.testing.assert_array_equal(env.sample(i)[binary], X[i, binary])
        np.testing.assert_allclose(
            env.sample(i)[~np.array(binary)], per_column.sample(i)[~np.array(binary)], rtol=1e-12
        )
    assert per_column.sample(3)[2] > 30 and env.sample(3)[2] == 1.0
    stats = env.get_params()["preprocess_stats"]
    assert stats["scale"][1:4] == [1.0, 1.0, 1.0] and stats["mean"][1:4] == [0.0, 0.0, 0.0]
    flags = ClassificationEnv(X[:, 1:4].astype(bool), y, preprocess="standardize-nonbinary")
    np.testing.assert_array_equal(flags.sample(3), X[3, 1:4])


def test_constant_columns_never_divide_by_zero():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 30)
    X = np.column_stack(
        [
            np.zeros(30),  # zero column
            np.full(30, 1e9),  # large constant
            np.full(30, 0.1) + np.array([0.0, 1e-17] * 15),  # constant up to rounding
            1e9 + rng.normal(size=30),  # small spread on a large offset: kept
            np.full(30, -3.0, dtype=np.float32),
        ]
    )
    env = ClassificationEnv(X, y, preprocess="standardize+l2")
    np.testing.assert_array_equal(env.scale_[[0, 1, 2, 4]], 1.0)
    np.testing.assert_allclose(env.scale_[3], X[:, 3].std(), rtol=1e-6)
    for i in range(30):
        x = env.sample(i)
        assert np.isfinite(x).all()
        np.testing.assert_array_equal(x[[0, 1, 4]], 0.0)
        assert abs(x[2]) < 1e-15  # the rounding residue, not blown up by a tiny std
    zeros = ClassificationEnv(np.zeros((4, 2)), [0, 1, 0, 1], preprocess="standardize+l2")
    np.testing.assert_array_equal(zeros.sample(0), 0.0)  # all-zero row after centring stays 0


def test_statistics_are_accumulated_in_chunks_of_rows(monkeypatch):
    """Integer X (as covertype's int16) is scanned a few rows at a time, in float64."""
    monkeypatch.setattr(preprocessing_module, "_CHUNK_VALUES", 7)  # 2 rows of 3 per chunk
    rng = np.random.default_rng(2)
    X = rng.integers(-32768, 32767, size=(101, 3)).astype(np.int16)
    X[:, 2] = -32768  # a constant column at the int16 extreme
    env = ClassificationEnv(X, rng.integers(0, 2, 101))
    wide = X.astype(np.float64)
    np.testing.assert_allclose(env.mean_, wide.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(env.scale_[:2], wide.std(axis=0)[:2], rtol=1e-12)
    assert env.scale_[2] == 1.0 and env.X.dtype == np.int16  # X is kept as given


def test_old_normalize_keyword_names_its_replacement():
    X, y = labelled()
    for value, replacement in ((True, "'l2'"), (False, "'none'")):
        with pytest.raises(ValueError, match="preprocess=") as info:
            db.make_env("classification", X=X, y=y, normalize=value)
        assert replacement in str(info.value)
        with pytest.raises(ValueError, match="preprocess="):
            ClassificationEnv(X, y, normalize=value)
    with pytest.raises(ValueError, match="preprocess="):
        db.make_env("shuttle", normalize=True)
    with pytest.raises(ValueError, match=r"valid options: .*preprocess"):
        db.make_env("classification", X=X, y=y, normalise=True)


def test_own_data_has_no_paper_defaults():
    X, y = labelled()
    env = db.make_env("classification", X=X, y=y)
    assert env.policy_defaults == {}
    assert env.reset(3) is env and env.seed == 3


# --- labels and features -----------------------------------------------------------------


@pytest.mark.parametrize(
    "labels",
    [
        [0, 1, None, 1, 0],
        np.array([0.0, 1.0, np.nan, 1.0, 0.0]),
        np.array(["a", "b", None, "b", "a"], dtype=object),
        ["a", "b", float("nan"), "b", "a"],
        pd.Series([0, 1, pd.NA, 1, 0], dtype="Int64"),
        pd.Series(["a", "b", None, "b", "a"]),
    ],
)
def test_missing_labels_are_refused_with_the_row(labels):
    with pytest.raises(ValueError, match=r"missing label.*row 2"):
        ClassificationEnv(np.ones((5, 2)), labels)


def test_labels_of_mixed_types_are_refused_clearly():
    for labels in ([1, "a", 2], np.array([1, "a", 2], dtype=object)):
        with pytest.raises(ValueError, match=r"mixes label types.*int, str"):
            ClassificationEnv(np.ones((3, 2)), labels)
    # int and float do compare (a fractional float label needs float_labels=True)
    env = ClassificationEnv(np.ones((3, 2)), [1, 2.5, 1], float_labels=True)
    assert env.classes_.tolist() == [1, 2.5]


def test_features_with_nan_or_inf_name_the_row_and_column():
    X = np.ones((6, 3), dtype=np.float32)
    X[4, 2] = np.inf
    X[5, 0] = np.nan
    with pytest.raises(ValueError, match="row 4, column 2"):
        ClassificationEnv(X, [0, 1] * 3)
    with pytest.raises(TypeError, match="real numbers"):
        ClassificationEnv(np.array([["a", "b"], ["c", "d"]]), [0, 1])


def offset_classes(n=600, K=6, seed=0):
    """Non-negative rows: a common offset of 100 plus a shift of 2 on the class's own column.
    After L2 normalisation every row points the same way; standardised, the classes separate."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % K)
    X = 100.0 + 0.5 * rng.standard_normal((n, K + 2))
    X[np.arange(n), y] += 2.0
    return X, y


@pytest.mark.parametrize(
    "policy",
    [
        "linucb:alpha=0.02",
        "neural-linucb:hidden=16,feature_dim=8,train_start=100,train_every=50,warmup_every=50,"
        "train_steps=50,epsilon=0.0",
    ],
)
def test_the_default_preprocessing_escapes_a_lock_out(policy):
    """With the old default (rows L2-normalised) 5 of the 6 arms are never played in the last
    300 rounds on every seed; with the default (standardised) every arm is played and most
    rounds are right."""
    X, y = offset_classes()
    for seed in range(3):
        old = db.make_env("classification", X=X, y=y, seed=seed, preprocess="l2")
        new = db.make_env("classification", X=X, y=y, seed=seed)
        locked = db.run(policy, old, 800, seed=seed).records
        free = db.run(policy, new, 800, seed=seed).records
        assert unplayed_arms(locked["arm"], 6, 300) >= 4
        assert unplayed_arms(free["arm"], 6, 300) == 0
        # every class pays in about a sixth of the rounds: each arm never played is locked out
        best = locked["best_arm"]
        assert locked_out_arms(locked["arm"], best, 6, 300) == unplayed_arms(locked["arm"], 6, 300)
        assert locked_out_arms(free["arm"], free["best_arm"], 6, 300) == 0
        assert window_accuracy(free["regret"], 300) >= 0.85


def test_best_arm_is_the_label_and_the_rounds_without_regret_play_it():
    X, y = offset_classes(n=120)
    env = db.make_env("classification", X=X, y=y, seed=3)
    records = db.run("linucb", env, 200, seed=3).records
    env.reset(3)
    labels = [int(np.argmax(env.next_round().expected_rewards)) for _ in range(200)]
    np.testing.assert_array_equal(records["best_arm"], labels)
    assert records["best_arm"].dtype == np.int64
    np.testing.assert_array_equal(records["regret"] == 0, records["arm"] == records["best_arm"])


def test_locked_out_arms_counts_only_arms_that_pay_in_enough_rounds():
    # arm 2 is best in 60 of 200 rounds, arm 3 in 1 (0.5 %), arm 4 never; only 0 and 1 are played
    best = np.array([2] * 60 + [3] + [0] * 139)
    arms = np.array([0, 1] * 100)
    assert unplayed_arms(arms, 5, 200) == 3
    assert locked_out_arms(arms, best, 5, 200) == 1
    assert locked_out_arms(arms, best, 5, 200, min_share=0.0) == 2  # arm 4 never pays
    assert locked_out_arms(arms, best, 5, 200, min_share=0.5) == 0
    # only the window counts: arms 2 and 3 paid in the first 61 rounds, not in the last 100
    assert locked_out_arms(arms, best, 5, 100) == 0
    with pytest.raises(InputValueError, match="same length, but lengths 3 and 2"):
        locked_out_arms([0, 1, 0], [1, 1], 2)


def test_linucb_on_your_own_data_locks_no_arm_out_of_many():
    """Your own data's LinUCB explores at α = 1 (issue 49 §2): on 26 classes (``synth26`` of
    ``benchmarks/defaults.py``) α = 0.02 leaves classes whose arm lost its first rounds never
    played again on every seed; the default leaves none, and loses less."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=8000,
        n_features=16,
        n_informative=12,
        n_redundant=2,
        n_classes=26,
        n_clusters_per_class=1,
        class_sep=2.0,
        random_state=0,
    )
    for seed in range(3):
        env = db.make_env("classification", X=X - X.min(axis=0) + 1.0, y=y, seed=seed)
        default = db.run("linucb", env, 3000, seed=seed).records
        greedy = db.run("linucb:alpha=0.02", env, 3000, seed=seed).records
        assert locked_out_arms(default["arm"], default["best_arm"], 26, 750) == 0, seed
        assert locked_out_arms(greedy["arm"], greedy["best_arm"], 26, 750) >= 1, seed
        assert default["regret"].sum() < greedy["regret"].sum(), seed
