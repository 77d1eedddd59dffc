"""Experiment configs run end to end: ``reproduce NAME``, ``reproduce --all``, ``experiment run``
(issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deepbandits.cli import main
from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.config import builtin_config, builtin_configs, load_config
from deepbandits.experiments.executors import LocalExecutor
from deepbandits.experiments.reproduce import (
    EXPERIMENT_FILE,
    expected_cpu_seconds,
    format_duration,
    reproduce_all,
    run_experiment,
)

ONE = LocalExecutor(1)

#: A user's own experiment: two LinUCB settings on h2, with a claim.
OWN = """
name = "own"
title = "Two alphas on h2"
reproduces = []
description = "LinUCB with alpha 0.02 against alpha 1."

[run]
env = "h2"
policies = ["linucb", "linucb:alpha=1"]
T = 60
seeds = [0, 1]

[quick]
T = 30
seeds = [0]

[[claims]]
text = "A larger alpha explores too much."
check = "below"
policy = "linucb"
than = "linucb:alpha=1"
"""


def test_quantitative_puts_the_paper_and_its_claims_beside_the_measurement(tmp_path):
    config = builtin_config("quantitative")
    outcome = run_experiment(config, tmp_path / "q", seeds=[0], T=120, executor=ONE, progress=False)
    html, md = outcome.reports
    assert html.is_file() and html.parent == md.parent
    readme = md.read_text()
    assert "Table quantitative" in readme
    for policy, paper in (("linucb", "7459.08"), ("neural-sigma2-linucb", "0.1492")):
        row = next(line for line in readme.splitlines() if line.startswith(f"| {policy} |"))
        assert paper in readme and "not run" not in row
    for claim in config.claims:
        assert claim.text.splitlines()[-1][:40] in readme
    verdicts = readme.count("| holds |") + readme.count("| does not hold |")
    assert verdicts == len(config.claims)
    record = json.loads((tmp_path / "q" / EXPERIMENT_FILE).read_text())
    assert record["name"] == "quantitative" and record["T"] == 120 and record["seeds"] == [0]
    assert record["checkpoints"] == [0]  # those after T are dropped


def test_quick_scales_the_run_down_as_the_config_says(tmp_path):
    config = builtin_config("linear")
    outcome = run_experiment(config, tmp_path / "lin", quick=True, executor=ONE, progress=False)
    quick = config.scaled(True)
    assert list(outcome.summary["policy"]) == list(quick.policies)
    assert (outcome.summary["T"] == quick.T).all()
    assert (outcome.summary["seeds"] == len(quick.seeds)).all()
    assert quick.T < config.T


def test_overrides_of_seeds_and_T_are_for_sweeps_only(tmp_path):
    with pytest.raises(InputValueError, match="latency experiment"):
        run_experiment(builtin_config("latency"), tmp_path, T=10, executor=ONE)
    with pytest.raises(InputValueError, match="replaces a matched protocol's settings"):
        run_experiment(builtin_config("linear"), tmp_path, matched={"n_trials": 2}, executor=ONE)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_a_refused_run_leaves_the_folder_as_it_was(tmp_path):
    config = builtin_config("linear")
    run_experiment(config, tmp_path, seeds=[0], T=30, executor=ONE, progress=False)
    record = (tmp_path / EXPERIMENT_FILE).read_text()
    with pytest.raises(InputValueError, match="was run with"):
        run_experiment(config, tmp_path, seeds=[0], T=40, executor=ONE, progress=False)
    assert (tmp_path / EXPERIMENT_FILE).read_text() == record


def test_a_sweep_over_several_environments_runs_one_comparison_each(tmp_path):
    config = builtin_config("noise-fixed")
    outcome = run_experiment(
        config, tmp_path, quick=True, seeds=[0], T=40, executor=ONE, progress=False
    )
    assert sorted(outcome.summary["env"]) == sorted(config.envs)
    for env in config.envs:
        folder = tmp_path / label_of(env)
        assert (folder / "summary.csv").is_file() and (folder / "paper_reference.json").is_file()
    readme = outcome.reports[1].read_text()
    assert all(label_of(env) in readme for env in config.envs)


def test_the_matched_protocol_takes_its_own_overrides(tmp_path):
    outcome = run_experiment(
        builtin_config("matched"),
        tmp_path,
        quick=True,
        T=30,
        seeds=[0],
        matched={"n_trials": 1, "tuning_seeds": [7]},
        executor=ONE,
        progress=False,
    )
    assert set(outcome.summary["n_eval"]) == {1}
    record = json.loads((tmp_path / EXPERIMENT_FILE).read_text())
    assert record["protocol"]["n_trials"] == 1 and record["protocol"]["tuning_seeds"] == [7]
    assert record["protocol"]["eval_seeds"] == [0] and record["quick"] is True


def test_expected_cpu_time_is_summed_from_the_configs():
    configs = list(builtin_configs().values())
    quick, full = expected_cpu_seconds(configs, True), expected_cpu_seconds(configs, False)
    assert quick == pytest.approx(sum(c.quick_cpu_s for c in configs))
    assert 0 < quick < 15 * 60 < full
    assert format_duration(42.4) == "42 s"
    assert format_duration(95) == "1.6 min"
    assert format_duration(3725) == "1 h 2 min"


def test_reproduce_all_goes_on_past_a_failure_and_reports_every_experiment(tmp_path, monkeypatch):
    from deepbandits.experiments import reproduce as module

    real = module.run_experiment

    def failing_latency(config, out, **kwargs):
        if config.kind == "latency":
            raise RuntimeError("injected failure")
        return real(config, out, **kwargs)

    monkeypatch.setattr(module, "run_experiment", failing_latency)
    entries, (page, md) = reproduce_all(
        tmp_path, quick=True, names=["linear", "latency"], executor=ONE, progress=False
    )
    status = {e["name"]: e["status"] for e in entries}
    assert status == {"linear": "done", "latency": "failed"}
    assert "injected failure" in (tmp_path / "latency" / "error.txt").read_text()
    text = md.read_text()
    assert "linear" in text and "latency" in text and "injected failure" in text
    assert page.is_file()
    with pytest.raises(InputValueError, match="unknown experiment"):
        reproduce_all(tmp_path, names=["nope"], executor=ONE)


def test_own_config_runs_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "own.toml"
    path.write_text(OWN)
    assert main(["experiment", "check", str(path)]) == 0
    checked = capsys.readouterr().out
    assert "a valid sweep experiment, 'own'" in checked and "policy linucb:alpha=1" in checked
    out = tmp_path / "out"
    argv = ["experiment", "run", str(path), "--out", str(out), "--jobs", "1", "--no-progress"]
    assert main([*argv, "--format", "parquet"]) == 0
    printed = capsys.readouterr().out
    assert "linucb:alpha=1" in printed and str(out / "report") in printed
    assert sorted(p.name for p in (out / "linucb").iterdir()) == [
        "seed_0.json",
        "seed_0.parquet",
        "seed_1.json",
        "seed_1.parquet",
    ]
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["T"]) == [60, 60]
    assert "A larger alpha explores too much." in (out / "report" / "README.md").read_text()


def test_own_config_errors_name_the_file_and_key(tmp_path, capsys):
    path = tmp_path / "own.toml"
    path.write_text(OWN.replace("T = 60", "T = 0"))
    assert main(["experiment", "run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "run.T" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_list_names_every_experiment_with_its_cost(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for config in builtin_configs().values():
        line = next(line for line in out.splitlines() if line.startswith(config.name + " "))
        assert config.reproduces[0] in line
    assert f"{len(builtin_configs())} experiments" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce"], "give one experiment name or --all"),
        (["reproduce", "demo-h1", "--all"], "give one experiment name or --all"),
        (["reproduce", "--all", "--T", "10"], "--seeds and --T apply to one experiment"),
        (["reproduce", "--all", "--trials", "2"], "--trials is an option of"),
        (["reproduce", "nope"], "unknown experiment 'nope'"),
        (["reproduce", "latency", "--T", "10"], "is a latency experiment"),
        (["reproduce", "demo-h1", "--address", "auto"], "address is for the Ray backend"),
        (["experiment", "run", "missing.toml"], "missing.toml"),
    ],
)
def test_command_line_mistakes_exit_2(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and message in err


def test_every_shipped_config_file_is_the_one_loaded():
    for name, config in builtin_configs().items():
        assert config.path.name == f"{name}.toml"
        assert load_config(config.path) == config
        assert Path(config.path).is_file()


def test_a_sweep_whose_every_job_fails_raises_the_failures(tmp_path, monkeypatch):
    from deepbandits.experiments import executors
    from deepbandits.experiments.sweep import SweepFailedError

    def fail(job, progress=False):
        return executors.Failure(job, "RuntimeError: injected", "traceback")

    monkeypatch.setattr(executors, "attempt", fail)
    with pytest.raises(SweepFailedError, match="injected"):
        run_experiment(
            builtin_config("linear"), tmp_path, seeds=[0], T=20, executor=ONE, progress=False
        )
    assert json.loads((tmp_path / EXPERIMENT_FILE).read_text())["T"] == 20
    assert not (tmp_path / "report").exists()
