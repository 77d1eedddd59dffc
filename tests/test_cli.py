import json
import re

import pandas as pd
import pytest

from deepbandits.cli import main
from deepbandits.errors import InputValueError
from deepbandits.policies import distinct_policy_names
from deepbandits.specs import format_seeds, parse_seeds, parse_spec


def test_parse_spec_and_seeds():
    assert parse_spec("neural-sigma2-linucb:variance=oracle,loss=mle,alpha=0.1,per_arm=true") == (
        "neural-sigma2-linucb",
        {"variance": "oracle", "loss": "mle", "alpha": 0.1, "per_arm": True},
    )
    assert parse_spec("linucb:reward_range=[0,1],horizon=5") == (
        "linucb",
        {"reward_range": [0, 1], "horizon": 5},
    )
    assert parse_spec("h1") == ("h1", {})
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("1,3,5") == [1, 3, 5]
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("linucb:alpha")
    with pytest.raises(ValueError, match="seeds"):
        parse_seeds("a-b")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,0,1", "seed 0 listed more than once in '0,0,1'"),
        ("0-3,2-5", "seeds 2, 3 listed more than once"),
        ("-2", "'-2' is a negative seed"),
        ("1,,2", "'' is not a seed or range"),
        ("0.5", "'0.5' is not a seed or range"),
        ("4-2", "seed range '4-2' is empty: write it as 2-4"),
    ],
)
def test_bad_seeds_are_refused(text, message):
    with pytest.raises(InputValueError, match=re.escape(message)):
        parse_seeds(text)


def test_a_keyword_given_twice_is_refused():
    with pytest.raises(InputValueError, match="keyword 'alpha' is given twice"):
        parse_spec("linucb:alpha=1,lam=2,alpha=1")
    with pytest.raises(InputValueError, match="keyword 'r' is given twice"):
        parse_spec("linucb:r=[0,1], r =2")


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2, 5], [3, 1, 2], [7, 8, 0, 1, 9], list(range(50))])
def test_format_seeds_reads_back(seeds):
    assert parse_seeds(format_seeds(seeds)) == seeds


def test_compare_writes_table_plot_and_resumes(tmp_path, capsys):
    out = tmp_path / "res"
    args = [
        "compare",
        "--env",
        "h1:d=5",
        "--policy",
        "linucb",
        "sigma2-linucb:variance=oracle",
        "--T",
        "300",
        "--seeds",
        "0-1",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "final regret" in printed and str(out / "regret.png") in printed
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["policy"]) == ["linucb", "sigma2-linucb:variance=oracle"]
    assert (summary["seeds"] == 2).all() and (summary["T"] == 300).all()
    run_csv = out / "linucb" / "seed_1.csv"
    config = json.loads(run_csv.with_suffix(".json").read_text())
    assert config["seed"] == 1 and config["env"]["params"]["d"] == 5
    assert (out / "regret.png").stat().st_size > 1000
    before = run_csv.stat().st_mtime_ns
    assert main(args) == 0  # finished runs are not repeated
    assert run_csv.stat().st_mtime_ns == before


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["run", "--policy", "linucb:alpha=-3", "--T", "5", "--out", str(tmp_path)]) == 2
    assert "alpha must be >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--policy" in capsys.readouterr().out


def test_parallel_jobs_give_the_same_runs(tmp_path):
    common = ["--env", "h1:d=4", "--T", "120", "--seeds", "0-1", "--no-progress", "--policy"]
    spec = "neural-linucb:hidden=8,feature_dim=4,train_start=40,warmup_every=20,train_steps=5"
    assert main(["compare", *common, spec, "--out", str(tmp_path / "a")]) == 0
    assert main(["compare", *common, spec, "--jobs", "2", "--out", str(tmp_path / "b")]) == 0
    for seed in (0, 1):
        name = f"{spec.replace(':', '__').replace(',', '_')}/seed_{seed}.csv"
        a = pd.read_csv(tmp_path / "a" / name)
        b = pd.read_csv(tmp_path / "b" / name)
        pd.testing.assert_frame_equal(
            a.drop(columns=["time_select", "time_update", "time_train"]),
            b.drop(columns=["time_select", "time_update", "time_train"]),
        )


def test_compare_all_runs_every_distinct_policy_and_configuration(tmp_path, capsys):
    out = tmp_path / "all"
    args = ["compare", "--env", "h1:d=4", "--policy", "all", "--T", "30", "--seeds", "0"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["policy"]) == distinct_policy_names()
    assert {"neural-ucb", "save-neural-linucb", "kernel-ucb", "heuristic-1"} <= set(
        summary["policy"]
    )
    config = json.loads((out / "heuristic-1" / "seed_0.json").read_text())
    assert config["policy"]["params"]["horizon"] == 30  # the runner gave the horizon
    assert (out / "regret.png").stat().st_size > 0


def test_resuming_with_other_settings_is_refused(tmp_path, capsys):
    out = str(tmp_path / "cmp")
    args = ["compare", "--env", "h1", "--policy", "linucb", "--seeds", "0", "--out", out]
    assert main([*args, "--T", "50", "--no-progress"]) == 0
    assert main([*args, "--T", "50", "--no-progress"]) == 0  # same settings: resumed
    capsys.readouterr()
    assert main([*args, "--T", "60", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "seed_0 was run with T 50 (now 60)" in err
    assert main([*args, "--T", "50", "--checkpoints", "0", "--no-progress"]) == 2
    assert "checkpoints () (now (0,))" in capsys.readouterr().err
