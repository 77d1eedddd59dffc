"""Your own table file as a classification bandit: ``make_env("table", ...)``, its reader's
errors, the command line, and why standardisation is the default for such data."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.envs import ClassificationEnv, TableError, TableFileNotFoundError, read_table
from deepbandits.specs import parse_spec, parse_value


def frame(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "height": rng.normal(170, 10, n),
            "count": rng.integers(0, 9, n),
            "flag": rng.random(n) < 0.5,
            "colour": rng.choice(["red", "green", "blue"], n),
            "class": rng.choice(["a", "b", "c"], n),
        }
    )


def write(df, path):
    if path.suffix in (".parquet", ".pq"):
        df.to_parquet(path, engine="pyarrow", index=False)
    else:
        sep = "," if ".csv" in path.suffixes else "\t"
        df.to_csv(path, sep=sep, index=False)
    return path


NUMERIC = ["height", "count", "flag"]


@pytest.mark.parametrize("name", ["data.csv", "data.tsv", "data.txt", "data.csv.gz", "data.pq"])
def test_a_file_gives_the_same_env_as_its_arrays(tmp_path, name):
    df = frame()
    path = write(df, tmp_path / name)
    env = db.make_env("table", path=str(path), label="class", features=NUMERIC, seed=4)
    direct = db.make_env(
        "classification", X=df[NUMERIC].to_numpy(dtype=float), y=df["class"].to_numpy(), seed=4
    )
    assert env.classes_.tolist() == ["a", "b", "c"] == direct.classes_.tolist()
    np.testing.assert_array_equal(env.labels, direct.labels)
    for i in range(len(df)):
        np.testing.assert_array_equal(env.sample(i), direct.sample(i))
    for _ in range(5):
        a, b = env.next_round(), direct.next_round()
        np.testing.assert_array_equal(a.contexts.blocks, b.contexts.blocks)
        np.testing.assert_array_equal(a.expected_rewards, b.expected_rewards)
    assert env.get_params()["preprocess_stats"] == direct.get_params()["preprocess_stats"]
    assert env.policy_defaults == {}


def test_parquet_round_trip_matches_csv(tmp_path):
    df = frame(seed=1)
    csv = db.make_env(
        "table", path=write(df, tmp_path / "t.csv"), label="class", categorical=["colour"]
    )
    pq = db.make_env(
        "table", path=write(df, tmp_path / "t.parquet"), label="class", categorical=["colour"]
    )
    np.testing.assert_array_equal(csv.X, pq.X)
    np.testing.assert_array_equal(csv.labels, pq.labels)
    assert csv.get_params()["features"] == pq.get_params()["features"]
    assert csv.get_params()["sha256"] != pq.get_params()["sha256"]


def test_get_params_records_the_file_and_the_columns(tmp_path):
    df = frame()
    path = write(df, tmp_path / "data.csv")
    env = db.make_env(
        "table", path=path, label="class", categorical=["colour"], preprocess="l2", horizon=77
    )
    params = env.get_params()
    assert params["path"] == str(path) and params["label"] == "class"
    assert params["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert params["columns"] == ["height", "count", "flag", "colour"]
    assert params["categorical"] == ["colour"]
    assert params["features"] == [
        "height",
        "count",
        "flag",
        "colour=blue",
        "colour=green",
        "colour=red",
    ]
    assert params["n_features"] == 6 == env.X.shape[1]
    assert params["preprocess"] == "l2" and "preprocess_stats" not in params
    assert params["horizon"] == 77 and params["n_arms"] == 3 and params["n_samples"] == 30
    json.dumps(params)
    same = ClassificationEnv.from_table(path, "class", categorical=["colour"], preprocess="l2")
    np.testing.assert_array_equal(same.X, env.X)
    assert same.get_params()["sha256"] == params["sha256"]
    assert (
        "preprocess_stats"
        in db.make_env("table", path=path, label="class", features=NUMERIC).get_params()
    )


def test_categorical_columns_are_one_hot_in_sorted_order(tmp_path):
    df = frame()
    env = db.make_env(
        "table",
        path=write(df, tmp_path / "d.csv"),
        label="class",
        categorical=["colour"],
        preprocess="none",
    )
    onehot = env.X[:, 3:]
    expected = np.stack([(df["colour"] == c).to_numpy(float) for c in ("blue", "green", "red")], 1)
    np.testing.assert_array_equal(onehot, expected)
    np.testing.assert_array_equal(onehot.sum(axis=1), 1.0)
    np.testing.assert_array_equal(env.X[:, 2], df["flag"].to_numpy(float))  # booleans are 0/1
    # the encoding does not depend on the row order
    shuffled = df.iloc[::-1].reset_index(drop=True)
    again = read_table(write(shuffled, tmp_path / "r.csv"), "class", categorical=["colour"])
    np.testing.assert_array_equal(again.X[::-1], env.X)
    # a numeric column can be one-hot encoded too
    counts = read_table(tmp_path / "d.csv", "class", features=["count"], categorical=["count"])
    assert counts.feature_names == [f"count={v}" for v in sorted(df["count"].unique())]


def test_reader_errors_name_the_problem(tmp_path):
    df = frame()
    path = write(df, tmp_path / "data.csv")
    with pytest.raises(TableFileNotFoundError, match=r"absent.csv") as info:
        db.make_env("table", path=str(tmp_path / "absent.csv"), label="class")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    accepted = r"\.csv, \.tsv, \.txt, \.data, \.dat, \.tra, \.tes, \.trn, \.tst, \.test, \.parquet"
    with pytest.raises(TableError, match=accepted):
        db.make_env("table", path=str(tmp_path / "data.xlsx"), label="class")
    with pytest.raises(TableError, match=r"no label column 'kind'.*'height', 'count'"):
        db.make_env("table", path=path, label="kind")
    with pytest.raises(TableError, match=r"not numeric: 'colour' .*categorical=\[colour\]"):
        db.make_env("table", path=path, label="class")
    with pytest.raises(TableError, match="'weight' not in"):
        db.make_env("table", path=path, label="class", features=["height", "weight"])
    with pytest.raises(TableError, match=r"categorical column.*'shape'.*not feature columns"):
        db.make_env("table", path=path, label="class", categorical=["colour", "shape"])
    with pytest.raises(TableError, match="label column 'class' cannot also be a feature"):
        db.make_env("table", path=path, label="class", features=["height", "class"])
    with pytest.raises(ValueError, match="preprocess="):
        db.make_env("table", path=path, label="class", normalize=True)


def test_missing_values_name_the_column_and_the_row(tmp_path):
    df = frame()
    gaps = df.astype({"count": float})
    gaps.loc[7, "count"] = np.nan
    gaps.loc[9, "count"] = np.nan
    path = write(gaps, tmp_path / "gaps.csv")
    with pytest.raises(TableError, match=r"column 'count'.*2 missing.*row 7 \(0-based data row"):
        db.make_env("table", path=path, label="class", features=NUMERIC)
    unlabelled = df.copy()
    unlabelled.loc[12, "class"] = None
    for name in ("nolabel.csv", "nolabel.parquet"):
        with pytest.raises(TableError, match=r"column 'class'.*row 12"):
            db.make_env(
                "table", path=write(unlabelled, tmp_path / name), label="class", features=NUMERIC
            )
    blank = df.copy()
    blank.loc[3, "colour"] = None
    with pytest.raises(TableError, match=r"column 'colour'.*row 3"):
        read_table(write(blank, tmp_path / "blank.csv"), "class", categorical=["colour"])
    infinite = df.astype({"count": float})
    infinite.loc[5, "count"] = np.inf
    with pytest.raises(TableError, match=r"column 'count'.*infinite value at row 5"):
        read_table(write(infinite, tmp_path / "inf.csv"), "class", features=NUMERIC)


def test_bracketed_bare_words_are_lists_of_strings():
    assert parse_value("[color,shape]") == ["color", "shape"]
    assert parse_value("[0,1]") == [0, 1]
    assert parse_value('["a","b"]') == ["a", "b"]
    assert parse_value("[0,b]") == [0, "b"]
    assert parse_value("[ x , 2.5 ]") == ["x", 2.5]
    assert parse_value("[]") == []
    assert parse_spec("table:path=d.csv,label=class,categorical=[color,shape],seed=3") == (
        "table",
        {"path": "d.csv", "label": "class", "categorical": ["color", "shape"], "seed": 3},
    )
    for bad in ("[a,,b]", "[a", "[a]]"):
        with pytest.raises(ValueError, match="cannot parse list value"):
            parse_value(bad)


def test_cli_compare_on_a_table(tmp_path, capsys):
    path = write(frame(n=60), tmp_path / "data.csv")
    out = tmp_path / "out"
    spec = f"table:path={path},label=class,categorical=[colour]"
    args = ["--policy", "linucb", "--T", "50", "--seeds", "0", "--out", str(out), "--no-progress"]
    assert main(["compare", "--env", spec, *args]) == 0
    assert (out / "summary.csv").read_text().count("\n") == 2
    config = json.loads((out / "linucb" / "seed_0.json").read_text())
    assert config["env"]["params"]["categorical"] == ["colour"]
    assert config["env"]["params"]["horizon"] == 50
    assert config["env"]["params"]["preprocess"] == "standardize"
    capsys.readouterr()
    bad = f"table:path={path},label=class,categorical=[shape]"
    assert main(["compare", "--env", bad, *args]) == 2
    assert "error: categorical column(s) 'shape'" in capsys.readouterr().err
    missing = f"table:path={tmp_path / 'none.csv'},label=class"
    assert main(["compare", "--env", missing, *args]) == 2
    assert "none.csv" in capsys.readouterr().err


def offset_classes(n=300, seed=0):
    """Non-negative features: a large common offset (100) plus a small class-specific shift (2)
    along a different axis for each of 3 classes, two uninformative columns, noise 0.5."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 3)
    X = 100.0 + 0.5 * rng.standard_normal((n, 5))
    X[np.arange(n), y] += 2.0
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(5)]).assign(label=y)


def test_standardize_separates_classes_that_l2_rows_collapse(tmp_path):
    df = offset_classes()
    X, y = df.drop(columns="label").to_numpy(), df["label"].to_numpy()
    assert X.min() > 0
    rows = X / np.linalg.norm(X, axis=1, keepdims=True)
    between = (rows @ rows.T)[y[:, None] != y[None, :]]
    assert between.mean() > 0.99  # after L2, rows of different classes point the same way
    path = write(df, tmp_path / "offset.csv")
    z = np.stack([ClassificationEnv(X, y).sample(i) for i in range(len(X))])
    centres = np.stack([z[y == k, :3].mean(axis=0) for k in range(3)])
    assert np.all(np.diag(centres) > 1.0) and np.all(centres[~np.eye(3, dtype=bool)] < -0.3)
    for seed in range(3):
        accuracy = {}
        for preprocess in ("standardize", "l2"):
            env = db.make_env("table", path=path, label="label", seed=seed, preprocess=preprocess)
            result = db.run(db.make_policy("linucb", alpha=1.0), env, 600, seed=seed)
            accuracy[preprocess] = result.records["reward"].to_numpy()[-200:].mean()
        assert accuracy["standardize"] >= 0.8, accuracy
        assert accuracy["standardize"] >= accuracy["l2"] + 0.2, accuracy
