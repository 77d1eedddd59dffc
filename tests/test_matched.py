"""The matched protocol: equal budgets, equal tuning, paired comparisons, resuming, CLI."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from deepbandits.cli import main
from deepbandits.envs import make_env
from deepbandits.experiments import MatchedProtocol, run_matched
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.matched import (
    MATCHED,
    QUICK_MATCHED,
    matched_protocol,
    training_budget,
)
from deepbandits.experiments.runner import RunResult
from deepbandits.metrics import mean_std, paired_difference

POLICIES = ["neural-lingreedy", "neural-sigma2-linucb", "neural-ucb"]
TINY = {"hidden": 8, "train_steps": 5, "feature_dim": 4}
SETTINGS = dict(
    envs=["h1"],
    policies=POLICIES,
    T=150,
    n_trials=2,
    tuning_seeds=[100],
    eval_seeds=[0, 1, 2],
    budget=TINY,
    progress=False,
)


def _snapshot(out):
    """Bytes of every tuning's tune.json and trials.csv."""
    return {
        p.relative_to(out): p.read_bytes()
        for name in ("tune.json", "trials.csv")
        for p in sorted(out.glob(f"*/*/{name}"))
    }


@pytest.fixture(scope="module")
def matched(tmp_path_factory):
    out = tmp_path_factory.mktemp("matched")
    table = run_matched(out, **SETTINGS)
    return out, table


def _finals(out, row, spec_column):
    stem = out / "h1" / label_of(row["policy"]) / "eval" / label_of(row[spec_column])
    return np.array([RunResult.load(stem / f"seed_{s}").final_regret for s in (0, 1, 2)])


def test_one_row_per_policy_with_the_budget_applied_to_all(matched):
    out, _ = matched
    csv = pd.read_csv(out / "matched.csv")
    assert list(csv["policy"]) == POLICIES and list(csv["env"]) == ["h1"] * 3
    assert (csv["T"] == 150).all() and (csv["n_eval"] == 3).all()
    assert (csv["trials_complete"] + csv["trials_pruned"] + csv["trials_failed"] == 2).all()
    spec = dict(zip(csv["policy"], csv["spec"], strict=True))
    # MATCHED_BUDGET (the "default" schedule, no weight decay) with the keys given over it
    shared = "train_schedule=default,weight_decay=0.0,hidden=8,train_steps=5"
    assert spec["neural-sigma2-linucb"] == f"neural-sigma2-linucb:{shared},feature_dim=4"
    assert spec["neural-ucb"] == f"neural-ucb:{shared}"  # no feature layer
    searched = dict(zip(csv["policy"], csv["searched"], strict=True))
    assert searched == {
        "neural-lingreedy": "lam,lr",  # alpha is fixed at 0
        "neural-sigma2-linucb": "alpha,lam,lr",
        "neural-ucb": "alpha,lam,lr",
    }
    for row in csv.itertuples():
        assert set(json.loads(row.best_params)) == set(row.searched.split(","))
        assert row.tuned_spec.startswith(row.spec + ",")
    md = (out / "matched.md").read_text()
    for text in ("h1 150", "tuning seeds 100", "2 trials", "0-2 (3 seeds", "hidden 8 × 2 layers"):
        assert text in md, text
    assert "5 steps of batch 64" in md and "d′ = 4" in md
    assert "| neural-ucb |" in md and "## h1 (T = 150)" in md
    settings = json.loads((out / "matched.json").read_text())
    budget = settings["training_budgets"]["h1"]
    assert budget["train_steps"] == 5 and budget["trainings"] == 3  # rounds 50, 100, 150


def test_paired_differences_match_the_runs_on_disk(matched):
    out, table = matched
    csv = pd.read_csv(out / "matched.csv")
    ref = csv[csv["policy"] == "neural-sigma2-linucb"].iloc[0]
    assert ref[["diff_mean", "diff_low", "diff_high", "untuned_diff_mean"]].isna().all()
    assert pd.isna(ref["diff_significant"])
    ref_tuned, ref_untuned = _finals(out, ref, "tuned_spec"), _finals(out, ref, "spec")
    for _, row in csv.iterrows():
        tuned, untuned = _finals(out, row, "tuned_spec"), _finals(out, row, "spec")
        assert np.allclose([row["tuned_mean"], row["tuned_std"]], mean_std(tuned))
        assert np.allclose([row["untuned_mean"], row["untuned_std"]], mean_std(untuned))
        if row["policy"] == ref["policy"]:
            continue
        for prefix, a, b in (("diff", tuned, ref_tuned), ("untuned_diff", untuned, ref_untuned)):
            d = paired_difference(a, b)
            got = row[[f"{prefix}_mean", f"{prefix}_se", f"{prefix}_low", f"{prefix}_high"]]
            assert np.allclose(got.astype(float), [d.mean, d.std_error, d.low, d.high])
            assert bool(row[f"{prefix}_significant"]) == (d.low > 0 or d.high < 0)
    # the returned table is the CSV
    pd.testing.assert_frame_equal(
        table.drop(columns=["diff_significant", "untuned_diff_significant"]),
        csv.drop(columns=["diff_significant", "untuned_diff_significant"]),
        check_dtype=False,
    )


def test_a_second_call_resumes_without_new_trials(matched):
    out, table = matched
    before = _snapshot(out)
    assert len(before) == 2 * len(POLICIES)
    again = run_matched(out, **SETTINGS)
    assert _snapshot(out) == before
    pd.testing.assert_frame_equal(again, table)


def test_seeds_must_be_disjoint(tmp_path):
    with pytest.raises(ValueError, match="disjoint"):
        run_matched(tmp_path / "m", **{**SETTINGS, "tuning_seeds": [0, 5], "eval_seeds": [5, 6]})
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"reference": "neural-linucb", "policies": ("neural-ucb",)}, "reference policy"),
        ({"budget": {"lr": 0.1}}, "which the protocol searches"),
        ({"budget": {"nope": 1}}, "no policy takes"),
        (
            {"policies": ("neural-ucb:hidden=8", "neural-sigma2-linucb"), "budget": {"hidden": 9}},
            "fixes",
        ),
        ({"search": ("alpha", "momentum")}, "no policy searches momentum"),
        ({"policies": ("neural-ucb", "neural-ucb", "neural-sigma2-linucb")}, "given twice"),
        ({"n_trials": 0}, "n_trials"),
        ({"envs": ()}, "no environment"),
    ],
)
def test_protocol_refuses_bad_settings(changes, message):
    with pytest.raises(ValueError, match=message):
        replace(MATCHED, **changes).check()


def test_unequal_training_budgets_are_refused(tmp_path):
    policies = ["neural-linucb:train_steps=7", "neural-sigma2-linucb"]
    with pytest.raises(ValueError, match=r"unequal training budget on h1.*train_steps"):
        run_matched(tmp_path / "m", **{**SETTINGS, "policies": policies, "budget": {}})


def test_protocols_as_documented():
    MATCHED.check()
    QUICK_MATCHED.check()
    assert MATCHED.horizon("h1") == 5000 and MATCHED.horizon("covertype") == 5000
    assert MATCHED.horizon("mnist") == 2000 == MATCHED.horizon("mnist:encoding=dense")
    assert MATCHED.eval_seeds == tuple(range(10)) and MATCHED.tuning_seeds == (100, 101)
    assert MATCHED.envs == ("h1", "h2", "h3", "shuttle", "covertype", "mnist")
    assert QUICK_MATCHED.envs == ("h1", "shuttle") and QUICK_MATCHED.horizon("shuttle") == 1000
    quick = matched_protocol(quick=True, T=300, envs=["h2"])
    assert (
        quick.horizon("h2") == 300 and quick.n_trials == 3 and quick.budget == QUICK_MATCHED.budget
    )
    assert matched_protocol(T={"h1": 7}).horizon("h1") == 7
    assert matched_protocol(T={"h1": 7}).horizon("mnist") == 2000
    assert isinstance(MATCHED, MatchedProtocol)


def test_default_budget_is_the_same_for_every_policy():
    env = make_env("h1", horizon=5000)
    budgets = [training_budget(MATCHED.policy_spec(p), env, 5000) for p in MATCHED.policies]
    shared = [{k: v for k, v in b.items() if k != "feature_dim"} for b in budgets]
    assert all(b == shared[0] for b in shared)
    assert shared[0]["hidden"] == 100 and shared[0]["train_steps"] == 1000
    assert shared[0]["trainings"] == 70  # every 50 rounds before 2000, every 100 from 2000


def test_cli_matched_options_only_for_matched(capsys):
    assert main(["reproduce", "demo-h1", "--envs", "h1", "--trials", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: --envs, --trials are options of")
    assert "reproduce matched" in err and "Traceback" not in err
    assert main(["list"]) == 0
    assert "  matched: The matched protocol" in capsys.readouterr().out


def test_cli_matched_runs_and_refuses_overlapping_seeds(tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["reproduce", "matched", "--envs", "h1", "--T", "40", "--trials", "1"]
    args += ["--tuning-seeds", "100", "--out", str(out), "--no-progress"]
    assert main([*args, "--seeds", "100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: tuning seeds and evaluation seeds must be disjoint")
    assert main([*args, "--seeds", "0"]) == 0
    printed = capsys.readouterr().out
    assert "## h1 (T = 40)" in printed and "| neural-sigma2-linucb:variance=oracle |" in printed
    assert len(pd.read_csv(out / "matched.csv")) == 5
