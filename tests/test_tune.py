"""Hyperparameter tuning: declared search spaces, db.tune (determinism, resume, refusals), CLI."""

import json

import optuna
import pandas as pd
import pytest

from conftest import SMALL_NET
from deepbandits.cli import main
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.tune import (
    CumulativeMedianPruner,
    TuneResult,
    round_sig,
    search_space,
    tune,
    with_params,
)
from deepbandits.policies import POLICIES, make_policy
from deepbandits.policies.space import Param, categorical, log_float
from deepbandits.specs import parse_spec

T = 200
FAST = dict(T=T, tuning_seeds=[100], eval_seeds=[0], progress=False)


def _values(param: Param) -> list:
    """The ends of a range (and its middle), or every choice."""
    if param.kind == "categorical":
        return list(param.choices)
    mid = (param.low * param.high) ** 0.5 if param.log else (param.low + param.high) / 2
    values = [param.low, mid, param.high]
    return [round(v) for v in values] if param.kind == "int" else values


# ------------------------------------------------------------------------ search spaces
@pytest.mark.parametrize("name", list(POLICIES))
def test_search_space_names_valid_constructor_values(name):
    cls = POLICIES[name]
    declared = cls.search_space
    assert declared, f"{cls.__name__} declares no search space"
    assert all(isinstance(p, Param) for p in declared.values())
    accepted = set(make_policy(name).get_params())
    assert set(declared) <= accepted, set(declared) - accepted
    fixed = getattr(cls, "fixed_params", {})
    for key, param in declared.items():
        if key in fixed:
            continue
        for value in _values(param):
            assert param.contains(value)
            assert make_policy(name, **{key: value}).get_params()[key] == value


@pytest.mark.parametrize("name", list(POLICIES))
def test_search_space_skips_what_the_class_fixes(name):
    cls = POLICIES[name]
    space = search_space(name)
    fixed = getattr(cls, "fixed_params", {})
    assert set(space) == set(cls.search_space) - set(fixed)


def test_search_space_fixed_presets_and_spec_keys():
    assert "alpha" in search_space("neural-linucb")
    assert "alpha" not in search_space("neural-lingreedy")  # fixes alpha=0
    assert "alpha" not in search_space("save-neural-linucb")
    assert "lam" in search_space("neural-lingreedy")
    assert list(search_space("linucb:alpha=0.5")) == ["lam"]
    assert list(search_space("linucb", "lam")) == ["lam"]
    assert list(search_space("range-mle", ["lr", "alpha"])) == ["lr", "alpha"]
    with pytest.raises(ValueError, match="fixes alpha=0"):
        search_space("neural-lingreedy", ["alpha"])
    with pytest.raises(ValueError, match="specification sets alpha"):
        search_space("linucb:alpha=0.5", ["alpha"])
    with pytest.raises(ValueError, match="'beta'"):
        search_space("linucb", ["alpha", "beta"])
    with pytest.raises(ValueError, match="nothing to search"):
        search_space("linucb:alpha=0.5,lam=2")
    with pytest.raises(ValueError, match="unknown policy"):
        search_space("no-such-policy")


def test_param_checks_its_definition():
    assert log_float(1e-3, 10.0).describe() == {
        "kind": "float",
        "low": 1e-3,
        "high": 10.0,
        "log": True,
    }
    assert categorical(16, 32).describe() == {"kind": "categorical", "choices": [16, 32]}
    with pytest.raises(ValueError, match="low > 0"):
        log_float(0.0, 1.0)
    with pytest.raises(ValueError, match="low < high"):
        Param("float", 2.0, 1.0)
    with pytest.raises(ValueError, match="at least one choice"):
        categorical()
    with pytest.raises(ValueError, match="kind"):
        Param("bool")  # type: ignore[arg-type]


def test_best_spec_text_reads_back():
    assert round_sig(0.031234567) == 0.03123
    assert round_sig(123456.0) == 123500.0
    spec = with_params("linucb:reward_range=[0,1]", {"alpha": 10.0, "lam": 1.234e-05})
    assert spec == "linucb:reward_range=[0,1],alpha=10.0,lam=1.234e-05"
    _, params = parse_spec(spec)
    assert params == {"reward_range": [0, 1], "alpha": 10.0, "lam": 1.234e-05}
    assert isinstance(params["alpha"], float)  # "10.0", not "10"
    assert with_params("linucb", {"hidden": 50}) == "linucb:hidden=50"
    assert with_params("linucb:", {}) == "linucb"


# ------------------------------------------------------------------------ tune
def test_tune_is_deterministic_and_writes_its_files(tmp_path):
    a = tune("linucb", "h1", out=tmp_path / "a", n_trials=3, seed=3, **FAST)
    b = tune("linucb", "h1", out=tmp_path / "b", n_trials=3, seed=3, **FAST)
    assert isinstance(a, TuneResult)
    assert a.best_params == b.best_params
    assert a.best_value == b.best_value
    assert [t.params for t in a.study.trials] == [t.params for t in b.study.trials]
    assert set(a.best_params) == {"alpha", "lam"}
    assert all(v == round_sig(v) for v in a.best_params.values())
    # the best spec is what compare evaluated, with the rounded values
    assert parse_spec(a.best_spec) == ("linucb", a.best_params)
    assert list(a.summary["policy"]) == ["linucb", a.best_spec]
    run_json = tmp_path / "a" / "eval" / label_of(a.best_spec) / "seed_0.json"
    run_config = json.loads(run_json.read_text())
    assert {k: run_config["policy"]["params"][k] for k in a.best_params} == a.best_params
    assert run_config["seed"] == 0

    trials = pd.read_csv(tmp_path / "a/trials.csv")
    assert list(trials["number"]) == [0, 1, 2]
    assert set(trials["state"]) == {"COMPLETE"}
    assert {"value", "alpha", "lam", "error"} <= set(trials.columns)
    assert trials["value"].min() == pytest.approx(a.best_value)
    record = json.loads(a.path.read_text())
    assert a.path == tmp_path / "a/tune.json"
    assert record["best_spec"] == a.best_spec
    assert record["best_params"] == a.best_params
    assert record["tuning_seeds"] == [100] and record["eval_seeds"] == [0] and record["T"] == T
    assert set(record["search_space"]) == {"alpha", "lam"}
    assert record["n_trials"] == {"complete": 3, "pruned": 0, "failed": 0}
    assert [row["policy"] for row in record["eval"]] == ["linucb", a.best_spec]
    # intermediate reports: T // 10 rounds apart, cumulative regret per seed
    steps = a.study.trials[0].intermediate_values
    assert sorted(steps) == list(range(20, T + 1, 20))
    assert steps[T] == pytest.approx(a.study.trials[0].value)

    c = tune("linucb", "h1", out=tmp_path / "c", n_trials=3, seed=4, **FAST)
    assert [t.params for t in c.study.trials] != [t.params for t in a.study.trials]


def test_tune_resumes_and_counts_earlier_trials(tmp_path):
    first = tune("linucb", "h1", out=tmp_path, n_trials=2, **FAST)
    before = [(t.params, t.value) for t in first.study.trials]
    assert len(before) == 2
    # a process killed mid-trial leaves a RUNNING trial behind
    optuna.load_study(study_name="deepbandits-tune", storage=f"sqlite:///{tmp_path}/study.db").ask()
    again = tune("linucb", "h1", out=tmp_path, n_trials=4, **FAST)
    trials = again.study.trials
    assert [(t.params, t.value) for t in trials[:2]] == before
    assert trials[2].state == optuna.trial.TrialState.FAIL  # the interrupted one, not counted
    finished = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(finished) == 4
    assert all(t.params != trials[0].params for t in finished[2:])  # not replayed
    assert len(pd.read_csv(tmp_path / "trials.csv")) == 5
    # nothing left to do: the same call adds no trial
    assert len(tune("linucb", "h1", out=tmp_path, n_trials=4, **FAST).study.trials) == 5


def test_tune_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"disjoint.*101"):
        tune("linucb", "h1", T=T, tuning_seeds=[100, 101], eval_seeds=[101, 0], out=tmp_path)
    with pytest.raises(ValueError, match="'beta'"):
        tune("linucb", "h1", out=tmp_path, n_trials=1, search=["alpha", "beta"], **FAST)
    with pytest.raises(ValueError, match="n_trials or timeout"):
        tune("linucb", "h1", out=tmp_path, **FAST)
    with pytest.raises(ValueError, match="unknown policy"):
        tune("nosuch", "h1", out=tmp_path, n_trials=1, **FAST)
    with pytest.raises(ValueError, match="alpha"):
        tune("linucb:alpha=-1", "h1", out=tmp_path, n_trials=1, **FAST)
    assert not (tmp_path / "study.db").exists()


def test_tune_refuses_a_study_made_with_other_settings(tmp_path):
    first = tune("linucb", "h1", out=tmp_path, timeout=1e-3, **FAST)
    assert len(first.study.trials) == 1  # the timeout is checked after each trial
    with pytest.raises(ValueError, match="policy 'linucb' \\(now 'linucb:lam=2'\\)"):
        tune("linucb:lam=2", "h1", out=tmp_path, n_trials=2, **FAST)
    with pytest.raises(ValueError, match="env 'h1' \\(now 'h2'\\)"):
        tune("linucb", "h2", out=tmp_path, n_trials=2, **FAST)
    with pytest.raises(ValueError, match="another out folder"):
        tune("linucb", "h1", out=tmp_path, n_trials=2, **{**FAST, "T": T + 1})


def test_tune_a_small_network_keeps_the_spec_keys(tmp_path):
    small = ",".join(f"{k}={v}" for k, v in SMALL_NET.items())
    spec = f"neural-lingreedy:{small}"
    result = tune(spec, "h1", out=tmp_path, n_trials=1, **{**FAST, "T": 120})
    # hidden, feature_dim and train_steps are given, alpha is fixed: lam and lr are searched
    assert set(result.best_params) == {"lam", "lr"}
    name, params = parse_spec(result.best_spec)
    assert name == "neural-lingreedy"
    assert params == {**SMALL_NET, **result.best_params}
    assert make_policy(name, **params).get_params()["hidden"] == SMALL_NET["hidden"]


def test_pruner_compares_the_latest_value():
    study = optuna.create_study(pruner=CumulativeMedianPruner(n_startup_trials=2))
    for slope in (1.0, 2.0, 3.0):
        trial = study.ask()
        for step in (1, 2, 3):
            trial.report(slope * step, step)
        study.tell(trial, slope * 3)
    worse = study.ask()
    worse.report(1.0, 1)
    worse.report(5.0, 2)  # the median at step 2 is 4.0; its best value (1.0) is not
    assert worse.should_prune()
    better = study.ask()
    better.report(3.0, 2)
    assert not better.should_prune()


# ------------------------------------------------------------------------ command line
def test_cli_tune_prints_a_spec_compare_accepts(tmp_path, capsys):
    out = tmp_path / "tuned"
    args = ["tune", "--policy", "linucb", "--env", "h1", "--T", str(T), "--tuning-seeds", "100"]
    args += ["--eval-seeds", "0", "--trials", "2", "--search", "alpha", "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    text = capsys.readouterr().out
    best = [line for line in text.splitlines() if line.startswith("best: ")]
    assert len(best) == 1
    spec = best[0].removeprefix("best: ").strip()
    name, params = parse_spec(spec)
    assert name == "linucb" and set(params) == {"alpha"}
    assert make_policy(name, **params).get_params()["alpha"] == params["alpha"]
    assert f'deepbandits compare --policy "{spec}"' in text
    assert "| linucb |" in text and f"| {spec} |" in text
    assert str(out / "tune.json") in text and str(out / "trials.csv") in text
    assert json.loads((out / "tune.json").read_text())["best_spec"] == spec


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tuning-seeds", "0-2", "--eval-seeds", "2-4"], "disjoint, but 2 is in both"),
        (["--search", "alpha,beta"], "'beta'"),
        (["--policy", "linucb:alpha=oops"], "alpha"),
        (["--tuning-seeds", "1-x"], "seeds must look like"),
    ],
)
def test_cli_tune_user_mistakes_exit_2(tmp_path, capsys, extra, message):
    args = ["tune", "--policy", "linucb", "--T", "50", "--trials", "1", "--out", str(tmp_path)]
    assert main([*args, *extra, "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("deepbandits: error: ")
    assert message in captured.err
    assert "Traceback" not in captured.err
    assert not (tmp_path / "study.db").exists()


def test_first_trial_is_the_untuned_setting(tmp_path):
    """The study starts from the policy's own values (schedule fields resolved), so the best
    setting is never worse than the untuned one on the tuning seeds."""
    small = ",".join(f"{k}={v}" for k, v in SMALL_NET.items() if k != "train_steps")
    result = tune(f"neural-linucb:{small}", "h1", out=tmp_path, n_trials=2, **{**FAST, "T": 120})
    first = result.study.trials[0].params
    policy = make_policy("neural-linucb")
    assert first["alpha"] == policy.get_params()["alpha"]
    assert first["lam"] == policy.get_params()["lam"]
    assert first["lr"] == policy.get_params()["lr"]
    assert first["train_steps"] == policy.train_schedule_.train_steps
    assert result.best_value <= result.study.trials[0].value
