"""Hold-out checkpoints, per-run diagnostics, figures and the report (issue 5); the paper's
claims checked (issue 16)."""

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.envs import ClassificationEnv
from deepbandits.experiments.compare import compare
from deepbandits.experiments.report.load import load_comparison, run_stems
from deepbandits.experiments.report.tables import (
    METRICS,
    RUN_METRICS,
    paired_table,
    run_table,
    summary_table,
)
from deepbandits.experiments.sweep import failed_path
from deepbandits.metrics import (
    calibration_error,
    gaussian_pit,
    holdout_calibration,
    mean_std,
    paired_difference,
    run_metrics,
)
from deepbandits.plotting import holdout_reliability_diagrams, regret_curves
from deepbandits.plotting.figures import band_edges
from deepbandits.plotting.style import series_styles
from deepbandits.report import build_report, evaluate_claims

TRAJECTORY = ["arm", "reward", "cum_regret", "mean", "width", "sigma2_hat"]


@pytest.mark.parametrize("name", ["linucb", "neural-sigma2-linucb", "neural-ucb"])
def test_checkpoints_record_holdout_forecasts_without_changing_the_run(name):
    plain = db.run(db.make_policy(name, seed=1), db.make_env("h1", seed=1), 120, seed=1)
    checked = db.run(
        db.make_policy(name, seed=1),
        db.make_env("h1", seed=1),
        120,
        seed=1,
        checkpoints=[0, 60, 120],
        holdout_size=30,
    )
    pd.testing.assert_frame_equal(plain.records[TRAJECTORY], checked.records[TRAJECTORY])
    h = checked.holdout
    assert h is not None and len(h) == 3 * 30 * 4
    assert sorted(h["checkpoint"].unique()) == [0, 60, 120]
    # the forecasts change as the policy learns, and the hold-out set is the same each time
    by_t = {t: g.reset_index(drop=True) for t, g in h.groupby("checkpoint")}
    assert not np.allclose(by_t[0]["mean"], by_t[120]["mean"])
    np.testing.assert_array_equal(by_t[0]["reward"], by_t[120]["reward"])
    assert checked.config["checkpoints"] == [0, 60, 120]
    assert checked.config["env"]["variance_bound"] == 1.0


def test_checkpoints_are_validated():
    with pytest.raises(ValueError, match="checkpoint 50 is after the last round T=10"):
        db.run(db.make_policy("linucb"), db.make_env("h1", seed=0), 10, checkpoints=[5, 50])
    with pytest.raises(ValueError, match="checkpoint"):
        db.run(db.make_policy("linucb"), db.make_env("h1", seed=0), 10, checkpoints=[-1])


def test_synthetic_holdout_is_fixed_by_the_seed_and_matches_the_model():
    env = db.make_env("h1", seed=3)
    a, b = env.holdout(50), db.make_env("h1", seed=3).holdout(50)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert not np.array_equal(a.rewards, db.make_env("h1", seed=4).holdout(50).rewards)
    X = np.stack(a.contexts)
    np.testing.assert_allclose(a.expected_rewards, env.expected_reward(X))
    noise = a.rewards - a.expected_rewards
    assert np.abs(noise).max() <= env.noise_bound() and 0.3 < noise.var() < 0.7  # E[U(0,1)]


def test_classification_holdout_is_never_played():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 3)), rng.integers(0, 3, 60)
    env = ClassificationEnv(X, y, seed=2)
    hold = env.holdout(10)
    held = {tuple(np.round(c.blocks[0], 12)) for c in hold.contexts}
    played = set()
    for _ in range(50):
        played.add(tuple(np.round(env.next_round().contexts.blocks[0], 12)))
    assert not held & played
    np.testing.assert_array_equal(hold.rewards.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="needs more than the 60 samples"):
        env.holdout(60)


def test_run_metrics_follow_the_equations():
    rng = np.random.default_rng(0)
    T = 4000
    mean, width = rng.normal(size=T), rng.uniform(0.5, 2.0, T)
    reward = mean + width * rng.standard_normal(T)  # the forecasts are the true laws
    records = pd.DataFrame(
        {
            "cum_regret": np.arange(T, dtype=float),
            "reward": reward,
            "expected_reward": mean + 0.5,
            "mean": mean,
            "width": width,
            "sigma2_oracle": np.full(T, 0.25),
        }
    )
    m = run_metrics(records)
    assert m["cumulative_reward"] == pytest.approx(reward.sum())
    assert m["final_regret"] == T - 1
    assert m["calibration_error"] == calibration_error(gaussian_pit(reward, mean, width))
    assert m["calibration_error"] < 0.01
    assert m["sharpness"] == pytest.approx(np.sqrt(np.mean(width**2)))
    assert m["mean_error"] == pytest.approx(0.5)
    assert m["variance_error"] == pytest.approx(np.mean(np.abs(width**2 - 0.25)))
    records["width"] = width / 10  # over-confident
    assert run_metrics(records)["calibration_error"] > 1.0


def test_holdout_calibration_per_arm_and_overall():
    rng = np.random.default_rng(1)
    n = 3000
    mean = rng.normal(size=(2, n))
    reward = mean + rng.standard_normal((2, n))
    frame = pd.DataFrame(
        {
            "checkpoint": 7,
            "index": np.tile(np.arange(n), 2),
            "arm": np.repeat([0, 1], n),
            "mean": mean.ravel(),
            "width": np.concatenate([np.ones(n), np.full(n, 0.1)]),  # arm 1 over-confident
            "reward": reward.ravel(),
        }
    )
    cal = holdout_calibration(frame).set_index("arm")["cal2"]
    assert cal["0"] < 0.01 < 1.0 < cal["1"]
    assert cal["0"] < cal["all"] < cal["1"]


def test_figures_have_the_expected_axes_and_lines():
    t = np.arange(1, 101)
    curves = {name: (t, np.cumsum(np.ones((3, 100)) * i, axis=1)) for i, name in enumerate("abc")}
    fig = regret_curves(curves, title="x")
    (ax,) = fig.axes[:1]
    assert len(ax.get_lines()) == 3
    assert ax.get_xlabel() == "round t" and "regret" in ax.get_ylabel()
    assert [text.get_text() for text in ax.get_legend().get_texts()] == [
        "a (n=3)",
        "b (n=3)",
        "c (n=3)",
    ]
    p = np.linspace(0.05, 0.95, 19)
    fig = holdout_reliability_diagrams({0: {"a": p, "b": p**2}, 500: {"a": p, "b": p}}, p)
    panels = [a for a in fig.axes if a.get_title().startswith("t = ")]
    assert [a.get_title() for a in panels] == ["t = 0", "t = 500"]
    assert all(len(a.get_lines()) == 3 for a in panels)  # diagonal + two policies


def test_band_stays_within_the_seeds_range():
    # one seed of three far off: mean - std would be negative, below every seed
    values = np.array([[0.0, 100.0, 200.0], [0.0, 100.0, 200.0], [0.0, 2000.0, 9000.0]])
    mean, low, high = band_edges(values)
    np.testing.assert_allclose(mean, values.mean(axis=0))
    assert (values.mean(axis=0) - values.std(axis=0) < 0)[1:].all()
    np.testing.assert_array_equal(low, values.min(axis=0))
    np.testing.assert_allclose(high, mean + values.std(axis=0))
    assert (low <= mean).all() and (mean <= high).all() and (high <= values.max(axis=0)).all()


def small_results(tmp_path: Path) -> Path:
    out = tmp_path / "results" / "h1"
    compare(
        ["linucb", "neural-sigma2-linucb:train_every=50,train_steps=20"],
        "h1",
        [0, 1],
        160,
        out,
        progress=False,
        checkpoints=[0, 80],
        holdout_size=20,
    )
    return tmp_path / "results"


def test_report_builds_and_references_only_existing_files(tmp_path):
    results = small_results(tmp_path)
    page, md = build_report(results, tmp_path / "report")
    text = page.read_text()
    refs = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert len(refs) >= 2 * 9  # PNG and SVG of 9 figures
    for ref in refs:
        assert (page.parent / ref).is_file(), ref
    for name in ("regret", "reliability", "holdout_arm3", "variance", "mean_error", "latency"):
        assert f"h1/{name}.png" in text
    summary = pd.read_csv(tmp_path / "report" / "h1" / "summary.csv")
    assert list(summary["policy"]) == [
        "linucb",
        "neural-sigma2-linucb:train_every=50,train_steps=20",
    ]
    assert (summary["seeds"] == 2).all()
    readme = md.read_text()
    assert "| policy | seeds | T | final regret ↓ | cumulative reward ↑ | cal₁ ↓" in readme
    # the reliability data behind the figures agree with cal₂: Σ_j (p_j − observed_j)²
    folder = tmp_path / "report" / "h1"
    rel = pd.read_csv(folder / "holdout_reliability.csv")
    cal2 = pd.read_csv(folder / "holdout_cal2.csv")
    cal2 = cal2[cal2["arm"] != "all"].astype({"arm": int})
    assert len(cal2) == 2 * 2 * 2 * 4  # policies × seeds × checkpoints × arms
    keys = ["policy", "seed", "checkpoint", "arm"]
    gaps = rel.assign(sq=(rel["level"] - rel["observed"]) ** 2).groupby(keys)["sq"].sum()
    np.testing.assert_allclose(cal2.set_index(keys)["cal2"].sort_index(), gaps.sort_index())
    in_run = pd.read_csv(folder / "reliability.csv")
    assert (
        in_run.groupby(["policy", "seed"])["observed"].apply(lambda o: o.is_monotonic_increasing)
    ).all()
    assert '"checkpoints": [\n    0,\n    80\n  ]' in readme


def test_summary_and_paired_tables():
    per_run = pd.DataFrame(
        {
            "policy": ["a", "a", "b", "b"],
            "seed": [0, 1, 0, 1],
            "T": 10,
            "final_regret": [10.0, 14.0, 4.0, 5.0],
            "cumulative_reward": 1.0,
            "calibration_error": [0.1, 0.3, np.nan, np.nan],
            "sharpness": 1.0,
            "holdout_cal2": np.nan,
            "wall_seconds": 2.0,
        }
    )
    s = summary_table(per_run).set_index("policy")
    assert s.loc["a", "final_regret_mean"] == 12 and s.loc[
        "a", "final_regret_std"
    ] == pytest.approx(np.std([10, 14], ddof=1))
    assert s.loc["a", "calibration_error_mean"] == pytest.approx(0.2)
    assert np.isnan(s.loc["b", "calibration_error_mean"])
    paired = paired_table(per_run)
    assert list(paired["reference"]) == ["b"] and paired["difference"].iloc[0] == 7.5
    assert mean_std([3.0]) == (3.0, 0.0)


def test_report_without_runs_fails_clearly(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no runs under"):
        build_report(tmp_path / "empty", tmp_path / "report")
    assert main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "r")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_demo_writes_a_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--T", "60", "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
    assert f"{out / 'report' / 'index.html'}" in capsys.readouterr().out
    assert (out / "report" / "demo" / "holdout_arm0.png").is_file()  # checkpoint 0 <= T


def test_a_policy_has_one_style_in_every_figure():
    def key(style):
        return style["color"], style["linestyle"], style["marker"]

    alone = series_styles(["neural-sigma2-linucb"])
    mixed = series_styles(
        ["linucb", "neural-sigma2-linucb:variance=oracle", "neural-sigma2-linucb"]
    )
    assert key(alone[0]) == key(mixed[2])  # the main policy keeps its style
    assert len({key(s) for s in mixed}) == 3  # its variant gets another one
    many = series_styles([f"custom-{i}" for i in range(20)])
    assert len({key(s) for s in many}) == 20


def test_report_names_a_corrupt_run_file(tmp_path, capsys):
    results = small_results(tmp_path)
    bad = results / "h1" / "linucb" / "seed_1.json"
    bad.write_text('{"seed": 1, "policy": ')  # truncated
    assert main(["report", str(results), "--out", str(tmp_path / "r")]) == 2
    assert "seed_1" in capsys.readouterr().err
    bad.write_text('{"seed": 1, "final_regret": 0.5}')  # a run's JSON, its records damaged
    (results / "h1" / "linucb" / "seed_1.csv").write_text("t,reward\n1,0.5\n")
    with pytest.raises(ValueError, match=r"lacks the columns \['cum_regret', 'mean', 'width'\]"):
        build_report(results, tmp_path / "r")


def test_bootstrapped_nn_forecasts_with_its_members_spread():
    policy = db.make_policy("bootstrapped-nn", seed=0, warmup_every=10, train_steps=20)
    result = db.run(policy, db.make_env("h1", seed=0), 60, seed=0)
    assert (result.records["width"] > 0).all()
    env = db.make_env("h1", seed=5)
    X = env.next_round().contexts
    out = np.stack([m.forward(X)[:, 0] for m in policy.members_])
    np.testing.assert_allclose(policy.predict(X)[1], out.std(axis=0))
    assert np.isfinite(run_metrics(result.records)["calibration_error"])


# --------------------------------------------------------------------------- claims
def claim_runs() -> pd.DataFrame:
    """Final regret per seed: a lowest, b runner-up, c between them on average but without
    seed 3 and wildly spread."""
    regret = {"a": [10, 12, 11, 13], "b": [20, 21, 22, 23], "c": [15, 30, 16]}
    return pd.DataFrame(
        [
            {"policy": p, "seed": s, "final_regret": float(v), "cumulative_reward": -float(v)}
            for p, values in regret.items()
            for s, v in enumerate(values)
        ]
    )


def test_a_lowest_claim_holds_against_the_runner_up():
    got = evaluate_claims(claim_runs(), [{"text": "a wins", "check": "lowest", "policy": "a"}])
    row = got.iloc[0]
    assert (row["claim"], row["policy"], row["than"], row["verdict"]) == (
        "a wins",
        "a",
        "c",
        "holds",
    )
    assert row["policy_mean"] == 11.5 and row["than_mean"] == pytest.approx(61 / 3)
    d = paired_difference([10, 12, 11], [15, 30, 16])  # the seeds both have
    assert row["seeds"] == 3 and row["difference"] == pytest.approx(d.mean)
    assert (row["ci95_low"], row["ci95_high"]) == pytest.approx((d.low, d.high))
    assert row["significant"] == (d.high < 0)
    highest = evaluate_claims(
        claim_runs(),
        [
            {
                "text": "a earns most",
                "check": "highest",
                "policy": "a",
                "metric": "cumulative_reward",
            }
        ],
    )
    assert highest.iloc[0]["verdict"] == "holds" and highest.iloc[0]["than"] == "c"


def test_a_lowest_claim_fails_when_another_policy_is_lower():
    got = evaluate_claims(claim_runs(), [{"text": "b wins", "check": "lowest", "policy": "b"}])
    row = got.iloc[0]
    assert (row["than"], row["verdict"]) == ("a", "does not hold")
    assert row["difference"] == 10.0 and row["seeds"] == 4 and not row["significant"]
    assert row["ci95_low"] > 0  # b is surely worse than a


def test_a_below_claim_reports_the_paired_interval():
    claims = [
        {"text": "c below b", "check": "below", "policy": "c", "than": "b"},
        {"text": "b below c", "check": "below", "policy": "b", "than": "c"},
    ]
    got = evaluate_claims(claim_runs(), claims).set_index("claim")
    d = paired_difference([15, 30, 16], [20, 21, 22])
    row = got.loc["c below b"]
    assert row["verdict"] == "holds" and row["seeds"] == 3
    assert (row["difference"], row["ci95_low"], row["ci95_high"]) == pytest.approx(
        (d.mean, d.low, d.high)
    )
    assert row["ci95_low"] < 0 < row["ci95_high"] and not row["significant"]  # 3 noisy seeds
    assert got.loc["b below c", "verdict"] == "does not hold"


def test_a_claim_on_a_policy_that_did_not_run_is_not_run():
    claims = [
        {"text": "x wins", "check": "lowest", "policy": "neural-ucb"},
        {"text": "a below x", "check": "below", "policy": "a", "than": "neural-ts"},
    ]
    got = evaluate_claims(claim_runs(), claims)
    assert list(got["verdict"]) == ["not run", "not run"]
    assert list(got["policy"]) == ["neural-ucb", "a"] and got["seeds"].tolist() == [0, 0]
    assert got["difference"].isna().all()


def test_a_claim_names_the_policy_without_the_quick_budget():
    runs = claim_runs().replace(
        {"policy": {"a": "neural-ucb:train_steps=5", "b": "neural-ucb:loss=mle,train_steps=5"}}
    )
    got = evaluate_claims(runs, [{"text": "t", "check": "lowest", "policy": "neural-ucb"}])
    assert got.iloc[0]["policy"] == "neural-ucb:train_steps=5"
    assert got.iloc[0]["verdict"] == "holds"


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"text": "t", "check": "least", "policy": "a"}, "claims[0].check"),
        ({"text": "t", "check": "below", "policy": "a"}, "key 'than'"),
        ({"text": "t", "check": "lowest", "policy": "a", "metric": "regret"}, "'regret'"),
        ({"text": "t", "check": "lowest", "policy": "a", "polcy": "b"}, "'polcy'"),
        ({"check": "lowest", "policy": "a"}, "key 'text'"),
    ],
)
def test_malformed_claims_are_named(claim, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate_claims(claim_runs(), [claim])


def test_report_shows_the_claims_and_their_verdicts(tmp_path):
    out = tmp_path / "results" / "cmp"
    compare(["linucb", "linucb:alpha=1"], "h1", [0, 1], 30, out, progress=False)
    reference = {
        "claims": [
            {"text": "Tuned <LinUCB> wins", "check": "lowest", "policy": "linucb"},
            {"text": "alpha=1 wins", "check": "lowest", "policy": "linucb:alpha=1"},
            {"text": "NeuralUCB wins", "check": "below", "policy": "neural-ucb", "than": "linucb"},
        ]
    }
    (out / "paper_reference.json").write_text(json.dumps(reference))
    page, md = build_report(out, tmp_path / "report")
    claims = pd.read_csv(tmp_path / "report" / "cmp" / "claims.csv")
    verdicts = list(claims["verdict"])
    assert sorted(verdicts[:2]) == ["does not hold", "holds"] and verdicts[2] == "not run"
    readme, text = md.read_text(), page.read_text()
    assert "The paper's claims, checked" in readme and "Beside the paper" not in readme
    for row in claims.itertuples():
        line = next(x for x in readme.splitlines() if x.startswith(f"| {row.claim} |"))
        assert line.endswith(f"| {row.verdict} |")
        assert f"<td>{html.escape(row.claim)}</td>" in text
        assert f"<td>{row.verdict}</td>" in text
    assert "<LinUCB>" not in text  # escaped


def test_report_reads_a_parquet_sweep(tmp_path):
    out = tmp_path / "pq"
    compare(["linucb"], "h1", [0], 30, out, progress=False, fmt="parquet")
    assert list(out.glob("linucb/seed_0.parquet")) and not list(out.glob("linucb/*.csv"))
    build_report(out, tmp_path / "report")
    assert pd.read_csv(tmp_path / "report" / "pq" / "runs.csv")["T"].tolist() == [30]


def test_a_lowest_claim_never_holds_when_a_competitor_has_no_value():
    claim = [{"text": "a wins", "check": "lowest", "policy": "a"}]
    failed = evaluate_claims(claim_runs(), claim, policies=["a", "b", "c", "d"])
    row = failed.iloc[0]
    assert (row["than"], row["verdict"]) == ("d", "not run")  # d's jobs all failed
    assert row["policy_mean"] == 11.5 and np.isnan(row["than_mean"])
    unmeasured = claim_runs()
    unmeasured.loc[unmeasured["policy"] == "b", "final_regret"] = np.nan
    row = evaluate_claims(unmeasured, claim).iloc[0]
    assert (row["than"], row["verdict"]) == ("b", "not measured")
    below = [{"text": "a below b", "check": "below", "policy": "a", "than": "d"}]
    assert evaluate_claims(claim_runs(), below, policies=["d"]).iloc[0]["verdict"] == "not run"


def _failure_record(stem: Path, policy: str) -> Path:
    path = failed_path(stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"job": {"policy": policy, "seed": 0}, "error": "boom"}))
    return path


def test_failure_records_are_not_runs_and_failed_policies_block_claims(tmp_path):
    out = tmp_path / "cmp"
    compare(["linucb", "linucb:alpha=1"], "h1", [0, 1], 30, out, progress=False)
    stale = _failure_record(out / "linucb" / "seed_0", "linucb")  # beside a finished run
    _failure_record(out / "neural-ucb" / "seed_0", "neural-ucb")
    _failure_record(out / "neural-ucb" / "seed_1", "neural-ucb")
    assert stale.with_name("seed_0.csv").is_file()
    assert run_stems(out / "linucb") == [out / "linucb" / "seed_0", out / "linucb" / "seed_1"]
    assert run_stems(out / "neural-ucb") == []
    comp = load_comparison(out, "cmp")
    assert comp.policies == ["linucb", "linucb:alpha=1", "neural-ucb"]
    records = ["seed_0.failed.json", "seed_1.failed.json"]
    assert [p.name for p in comp.failed["neural-ucb"]] == records
    reference = {"claims": [{"text": "LinUCB wins", "check": "lowest", "policy": "linucb"}]}
    (out / "paper_reference.json").write_text(json.dumps(reference))
    _, md = build_report(out, tmp_path / "report")
    claims = pd.read_csv(tmp_path / "report" / "cmp" / "claims.csv")
    assert (claims.loc[0, "than"], claims.loc[0, "verdict"]) == ("neural-ucb", "not run")
    readme = md.read_text()
    assert "Policies without a finished run" in readme
    assert (
        "- neural-ucb: `neural-ucb/seed_0.failed.json`, `neural-ucb/seed_1.failed.json`" in readme
    )
    assert list(pd.read_csv(tmp_path / "report" / "cmp" / "runs.csv")["seed"]) == [0, 1, 0, 1]


def test_run_table_has_the_declared_metric_columns(tmp_path):
    results = tmp_path / "r"
    compare(["linucb"], "h1", [0], 30, results, progress=False)
    per_run = run_table(load_comparison(results, "r"))
    assert list(per_run.columns) == ["policy", "seed", "T", *RUN_METRICS]
    computed = set(run_metrics(load_comparison(results, "r").runs["linucb"][0].records))
    extra = {"holdout_cal2", "wall_seconds", "select_s_per_100", "update_s_per_100"}
    extra |= {"accuracy_last", "unplayed_arms", "locked_out_arms"}  # NaN on h1
    assert computed | extra == set(RUN_METRICS)
    assert {key for key, _ in METRICS} <= set(RUN_METRICS)
