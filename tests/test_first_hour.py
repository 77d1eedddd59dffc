"""The first hour of a new user (issue 27, "The first hour"): each friction found by trying the
project from a fresh clone, as a test that failed before its fix.

The report's frictions (4, 7) are in ``tests/test_first_hour_report.py``."""

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits._version import __version__
from deepbandits.cli import build_parser, main
from deepbandits.cli.runs import DEMO_POLICIES
from deepbandits.encoding import same_contexts
from deepbandits.envs import TableError
from deepbandits.experiments.compare import format_table
from deepbandits.experiments.tune import Verdict, search_space, tune

ROOT = Path(__file__).resolve().parents[1]


def table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A user's table: numeric, boolean and categorical features and a string label."""
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


def csv(df: pd.DataFrame, path: Path) -> str:
    df.to_csv(path, index=False)
    return str(path)


# ------------------------------------------------------------------ --version
def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"deepbandits {__version__}"
    out = subprocess.run(
        [sys.executable, "-m", "deepbandits", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"deepbandits {__version__}"
    # the parser's own --version action (after any other word) prints the same line
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version", "list"])
    assert capsys.readouterr().out.strip() == f"deepbandits {__version__}"


def test_output_into_a_closed_pipe_ends_silently_with_status_141():
    """``deepbandits list | head -1``: the reader goes away; no error paragraph, no traceback,
    and the status a shell's commands give (128 + SIGPIPE)."""
    done = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -m deepbandits list | true; echo ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == ""
    assert done.stdout.strip() == "141"


def cli_in_a_fresh_interpreter(argv: list[str], heavy: tuple[str, ...]) -> list[str]:
    """The output lines of ``main(argv)`` run by a new Python, then its exit status and which
    of the modules ``heavy`` it had loaded."""
    code = (
        "import sys\n"
        "from deepbandits.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit as stop:\n    print(stop.code)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_version_answers_without_loading_torch_or_the_parser():
    """``deepbandits --version`` is answered before the parser's module is imported."""
    lines = cli_in_a_fresh_interpreter(["--version"], ("torch", "pandas", "deepbandits.cli.parser"))
    assert lines == [f"deepbandits {__version__}", "0", "[]"]


def test_help_answers_without_loading_torch_or_any_command():
    """``deepbandits --help`` names the commands without adding their options, which need the
    policy and environment registries and with them torch (about 5 s)."""
    heavy = (
        "torch",
        "pandas",
        "deepbandits.policies",
        "deepbandits.envs",
        "deepbandits.experiments",
        "deepbandits.cli.runs",
    )
    lines = cli_in_a_fresh_interpreter(["--help"], heavy)
    assert lines[-2:] == ["0", "[]"]
    assert any("run one policy over several seeds" in line for line in lines)


def test_a_command_parsed_has_the_options_of_the_complete_parser(capsys):
    """Each command's options, added when it is parsed, are those ``build_parser(complete=True)``
    adds at once: the same ``--help``, and the same defaults."""
    complete = build_parser(complete=True)
    commands = complete._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert len(commands) == 12  # learn-log the twelfth
    for name, parser in commands.items():
        with pytest.raises(SystemExit):
            build_parser().parse_args([name, "--help"])
        assert capsys.readouterr().out == parser.format_help(), name
        assert len(parser._actions) > 1, name  # more than --help
    args = build_parser().parse_args(["run", "--policy", "linucb"])
    assert (args.command, args.policy, args.T, args.seeds, args.env) == (
        "run",
        "linucb",
        10000,
        [0],
        None,
    )


def test_the_changelog_keeps_a_changelog_of_this_version():
    """Keep a Changelog: an Unreleased section first, then releases newest first, the newest
    being the version the package (and ``--version``) says."""
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.M)
    assert headings[0] == ("Unreleased", "")
    released = headings[1:]
    assert released and all(date for _, date in released)
    assert released[0][0] == __version__.split("+")[0]
    assert [d for _, d in released] == sorted((d for _, d in released), reverse=True)
    for section in re.findall(r"^### (.+)$", text, flags=re.M):
        assert section in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


# ------------------------------------------------------------------ friction 1
def test_make_demo_says_how_to_reach_the_command_line(tmp_path):
    """``make demo`` with a stand-in venv (a ``deepbandits`` that only prints): what it prints
    after the demo."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", "exit 1"), ("deepbandits", "echo demo ran")):
        tool = venv / "bin" / name
        tool.write_text(f"#!/bin/sh\n{text}\n")
        tool.chmod(0o755)
    (venv / ".installed").touch()  # newer than pyproject.toml: nothing to install
    out = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "demo", f"VENV={venv}"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "demo ran"
    hint = "\n".join(lines[1:])
    assert f"source {venv}/bin/activate" in hint
    assert f"{venv}/bin/deepbandits list" in hint


def test_the_readme_says_to_activate_the_venv():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## The two commands")
    section = readme[start : readme.index("\n## ", start + 1)]
    assert "source .venv/bin/activate" in section
    assert ".venv/bin/deepbandits list" in section


def test_the_readme_demo_table_is_the_file_the_demo_wrote():
    """Numbers shown to users come from files the code writes: the README's demo table is
    ``benchmarks/results/demo_summary.csv`` (the demo's ``summary.csv``) as the demo prints it."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## The two commands")
    section = readme[start : readme.index("\n## ", start + 1)]
    head = "| policy | seeds | T | final regret (mean ± std) |"
    lines = section[section.index(head) :].splitlines()
    shown = "\n".join(lines[: next(i for i, line in enumerate(lines) if not line.strip())])
    written = pd.read_csv(ROOT / "benchmarks" / "results" / "demo_summary.csv")
    assert shown == format_table(written)
    assert "results/demo/summary.csv" in section and "demo_summary.csv" in section
    assert list(written["policy"]) == DEMO_POLICIES and set(written["T"]) == {10000}


# ------------------------------------------------------------------ friction 2
#: A network small enough for a test; feature_dim is left to the policy's default.
SMALL = "hidden=16,train_start=60,train_every=20,warmup_every=20,train_steps=15"
QUICK_TUNE = dict(T=120, tuning_seeds=[100], eval_seeds=[0], progress=False)


def test_tune_starts_from_a_default_outside_the_declared_space(tmp_path):
    untuned = db.make_policy("neural-linucb").get_params()
    assert not search_space("neural-linucb")["feature_dim"].contains(untuned["feature_dim"])
    result = tune(
        f"neural-linucb:{SMALL}",
        "h1",
        out=tmp_path,
        n_trials=2,
        search=["feature_dim", "alpha"],
        **QUICK_TUNE,
    )
    first = result.study.trials[0]
    assert first.params == {"feature_dim": untuned["feature_dim"], "alpha": untuned["alpha"]}
    assert result.best_value <= first.value
    record = json.loads(result.path.read_text())
    assert record["widened"] == {"feature_dim": untuned["feature_dim"]}
    assert untuned["feature_dim"] in record["search_space"]["feature_dim"]["choices"]


def test_tune_says_when_the_tuned_setting_does_not_beat_the_untuned_one(tmp_path, capsys):
    args = ["tune", "--policy", "linucb", "--env", "h1", "--T", "200", "--tuning-seeds", "100"]
    args += ["--eval-seeds", "0-1", "--no-progress"]
    for trials in ("1", "4"):
        out = tmp_path / trials
        assert main([*args, "--trials", trials, "--out", str(out)]) == 0
        text = capsys.readouterr().out
        record = json.loads((out / "tune.json").read_text())
        means = {row["policy"]: row["final_regret_mean"] for row in record["eval"]}
        verdict = record["verdict"]
        assert verdict["untuned_mean"] == pytest.approx(means["linucb"], rel=1e-9)
        assert verdict["tuned_mean"] == pytest.approx(means[record["best_spec"]], rel=1e-9)
        assert verdict["same_setting"] == (record["best_trial"] == 0)
        beats = not verdict["same_setting"] and verdict["tuned_mean"] < verdict["untuned_mean"]
        assert verdict["beats_untuned"] == beats
        assert verdict["message"] in text
        assert ("note: " in text) == (not beats)
    assert json.loads((tmp_path / "1" / "tune.json").read_text())["verdict"]["same_setting"]
    # the CSV: the best trial scored worse than the default on the evaluation seeds
    worse = Verdict(untuned_mean=267.5, tuned_mean=284.0, same_setting=False)
    assert not worse.beats_untuned and "does NOT beat" in worse.message


# ------------------------------------------------------------------ friction 3
@pytest.mark.parametrize("name", ["h1", "h2", "h3", "linear", "classification", "table"])
def test_every_environment_declares_its_reward_range(tmp_path, name):
    """The README's live snippet, ``reward_range=env.reward_range``, on every environment."""
    df = table()
    params = {
        "classification": {"X": df[["height", "count"]].to_numpy(), "y": df["class"]},
        "table": {"path": csv(df, tmp_path / "t.csv"), "label": "class", "categorical": ["colour"]},
    }.get(name, {})
    env = db.make_env(name, seed=0, **params)
    policy = db.make_policy("linucb", seed=0)
    for _ in range(5):
        rnd = env.next_round()
        assert env.reward_range == rnd.reward_range
        d = policy.decide(rnd.contexts)
        policy.learn(d.id, env.reward(d.arm), reward_range=env.reward_range)


def test_the_reward_range_of_a_dynamic_table_moves_with_the_rounds():
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    env = db.make_env("classification", X=X, y=y, dynamic_range=True, horizon=4, seed=0)
    seen = []
    for _ in range(4):
        seen.append((env.next_round().reward_range, env.reward_range))
    assert [a for a, _ in seen] == [b for _, b in seen] == [(0.0, 1.0)] * 2 + [(1.0, 3.0)] * 2


@pytest.mark.parametrize("encoding", ["block", "dense"])
@pytest.mark.parametrize("preprocess", ["standardize", "l2", "none"])
def test_contexts_for_a_raw_row_are_the_contexts_the_env_made(tmp_path, encoding, preprocess):
    df = table()
    path = csv(df, tmp_path / "t.csv")
    env = db.make_env(
        "table",
        path=path,
        label="class",
        categorical=["colour"],
        encoding=encoding,
        preprocess=preprocess,
        seed=3,
    )
    raw = pd.read_csv(path)  # the user's own copy: "red", "green", "blue" as strings
    rows, played = [], []
    for _ in range(12):
        rnd = env.next_round()
        assert env.row_ is not None
        record = raw.iloc[env.row_]
        for given in (record, record.to_dict(), record.drop("class").to_dict()):
            assert same_contexts(env.contexts_for(given), rnd.contexts)
        rows.append(env.row_)
        played.append(rnd.contexts)
    many = env.contexts_for(raw.iloc[rows])
    assert len(many) == len(played)
    assert all(same_contexts(a, b) for a, b in zip(many, played, strict=True))
    assert isinstance(played[0], np.ndarray) == (encoding == "dense")


def test_contexts_for_refuses_what_the_table_never_had(tmp_path):
    df = table()
    env = db.make_env(
        "table", path=csv(df, tmp_path / "t.csv"), label="class", categorical=["colour"]
    )
    record = df.iloc[0].to_dict()
    with pytest.raises(TableError, match=r"'colour'.*'purple'.*'blue', 'green', 'red'"):
        env.contexts_for({**record, "colour": "purple"})
    with pytest.raises(TableError, match=r"'height'.*missing"):
        env.contexts_for({k: v for k, v in record.items() if k != "height"})
    with pytest.raises(TableError, match=r"'count'.*must hold numbers.*'many'"):
        env.contexts_for({**record, "count": "many"})
    # the encoded width still works, as the rows of X
    assert same_contexts(env.contexts_for(env.X[4]), db.block_encode(env.sample(4), env.n_arms))


def test_contexts_for_arrays_takes_feature_vectors():
    X = np.random.default_rng(0).normal(size=(30, 4))
    env = db.make_env("classification", X=X, y=np.arange(30) % 3, seed=1)
    rnd = env.next_round()
    assert same_contexts(env.contexts_for(X[env.row_]), rnd.contexts)
    assert len(env.contexts_for(X[:5])) == 5
    with pytest.raises(db.InputValueError, match="4 features"):
        env.contexts_for(X[0, :3])
    with pytest.raises(db.InputTypeError, match="not from a table"):
        env.contexts_for({"a": 1.0})


# ------------------------------------------------------------------ friction 5
def test_a_numeric_feature_given_as_the_label_is_refused(tmp_path):
    df = table(n=150)
    path = csv(df, tmp_path / "t.csv")
    with pytest.raises(
        TableError,
        match=r"label column 'height' has 150 distinct values.*"
        r"max_arms=100.*continuous.*max_arms=150.*float_labels=True",
    ):
        db.make_env("table", path=path, label="height", features=["count", "flag"])
    df["id"] = np.arange(150)
    path = csv(df, tmp_path / "ids.csv")
    with pytest.raises(TableError, match=r"label column 'id' has 150 distinct values"):
        db.make_env("table", path=path, label="id", features=["height"])
    assert (
        db.make_env("table", path=path, label="id", features=["height"], max_arms=150).n_arms == 150
    )
    with pytest.raises(db.InputValueError, match=r"y looks continuous.*float_labels=True"):
        db.make_env("classification", X=np.ones((4, 1)), y=[0.5, 1.5, 0.5, 2.25])
    env = db.make_env(
        "classification", X=np.ones((4, 1)), y=[0.5, 1.5, 0.5, 2.25], float_labels=True
    )
    assert env.n_arms == 3
    # whole-number floats are classes (a label column read as float), and few of them are fine
    assert db.make_env("classification", X=np.ones((4, 1)), y=[1.0, 2.0, 1.0, 3.0]).n_arms == 3


def test_the_label_limit_is_reported_on_the_command_line(tmp_path, capsys):
    path = csv(table(n=150), tmp_path / "t.csv")
    args = ["run", "--policy", "linucb", "--T", "20", "--out", str(tmp_path / "out")]
    spec = f"table:path={path},categorical=[colour,class]"
    assert main([*args, "--env", f"{spec},label=count", "--no-progress"]) == 0
    assert main([*args, "--env", f"{spec},label=height", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and "Traceback" not in err
    assert "'height' has 150 distinct values" in err


# ------------------------------------------------------------------ friction 6
def test_missing_values_of_every_column_are_reported_at_once(tmp_path):
    df = table()
    df.loc[[3, 8], "height"] = np.nan
    df.loc[5, "colour"] = None
    df.loc[8, "class"] = None
    path = csv(df, tmp_path / "gaps.csv")
    with pytest.raises(TableError) as info:
        db.make_env("table", path=path, label="class", categorical=["colour"])
    message = str(info.value)
    for column, count, first in (("class", 1, 8), ("height", 2, 3), ("colour", 1, 5)):
        assert re.search(
            rf"column '{column}': {count} missing value\(s\), the first at row {first}", message
        )
    assert "3 of 60 rows" in message and "dropna=True" in message


def test_dropna_drops_the_rows_and_says_how_many(tmp_path):
    df = table()
    df.loc[[3, 8], "height"] = np.nan
    df.loc[5, "colour"] = None
    path = csv(df, tmp_path / "gaps.csv")
    with pytest.warns(UserWarning, match=r"dropped 3 of 60 rows.*'height', 'colour'.*57 rows left"):
        env = db.make_env("table", path=path, label="class", categorical=["colour"], dropna=True)
    params = env.get_params()
    assert params["n_samples"] == 57 and params["dropped_rows"] == 3 and params["dropna"] is True
    kept = df.dropna().reset_index(drop=True)
    direct = db.make_env(
        "table", path=csv(kept, tmp_path / "kept.csv"), label="class", categorical=["colour"]
    )
    np.testing.assert_array_equal(env.X, direct.X)
    # contexts of the kept rows, by their row in the original file
    env.next_round()
    original = df.dropna().index[env.row_]
    assert same_contexts(
        env.contexts_for(df.loc[original]), db.block_encode(env.sample(env.row_), 3)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = db.make_env(
            "table",
            path=csv(table(), tmp_path / "c.csv"),
            label="class",
            categorical=["colour"],
            dropna=True,
        )
    assert clean.get_params()["dropped_rows"] == 0


# ------------------------------------------------------------------ friction 8
@pytest.mark.parametrize("command", ["run", "compare", "demo", "tune"])
def test_help_states_the_default_environment(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert re.search(r"--env ENV environment, .*\(default: h1\b", text)


def test_a_missing_env_is_said_in_the_output(tmp_path, capsys):
    args = ["run", "--policy", "linucb", "--T", "20", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("environment: h1 (the default, as --env was not given")
    assert main([*args, "--env", "h2", "--out", str(tmp_path / "b")]) == 0
    assert "environment: h1" not in capsys.readouterr().out


@pytest.mark.parametrize("name", ["table", "h1", "mnist"])
def test_list_params_names_an_environments_keywords(capsys, name):
    assert main(["list", "--params", name]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"keywords of environment {name} (set as --env {name}:key=value):"
    keywords = {line.split()[0] for line in lines[2:]}
    expected = {
        "table": {"path", "label", "features", "categorical", "dropna", "preprocess", "max_arms"},
        "h1": {"d", "n_arms", "noise", "noise_std", "horizon", "truncate", "seed"},
        "mnist": {"data_dir", "download", "preprocess", "encoding", "seed"},
    }[name]
    assert expected <= keywords
    # each keyword has a default, a type and a meaning
    assert all(len(line.split()) >= 4 for line in lines[2:])
    assert "X" not in keywords and "y" not in keywords


def test_list_params_of_an_unknown_name_lists_policies_and_environments(capsys):
    assert main(["list", "--params", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: unknown policy 'nosuch'")
    assert "or an environment: 'h1'" in err and "'table'" in err
