"""Which estimator to trust (issue 48): cross-validated OPE's score computed by hand, its choice
where one candidate is known to be best, SLOPE across candidates, determinism, the library's
errors for bad inputs, and ``deepbandits ope --select``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import deepbandits as db
from deepbandits.cli import main
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope import DM, IPS, Selection, select_estimator, simulate_log
from deepbandits.ope.selection import bounded_bias_mse, cross_validated_mse, split_masks
from deepbandits.ope.tuning import slope_index
from ope_fixtures import write_service_log


def simulated(seed: int, logging: str = "softmax", n: int = 800):
    """A log of ``linear`` (K = 4, noise 0.5), the softmax of 3·h as the evaluation policy, and
    the true means h."""
    env = db.make_env("linear", d=5, n_arms=4, noise="fixed", noise_std=0.5, seed=0)
    sim = simulate_log(env, n, logging=logging, seed=seed)
    h = sim.expected_rewards
    z = np.exp(3.0 * (h - h.max(axis=1, keepdims=True)))
    return sim.log, z / z.sum(axis=1, keepdims=True), h


def test_the_cv_score_of_two_candidates_by_hand():
    """Splits (0.04, 0.02) and (0.01, 0.03); σ² 0.001 and 0.004, σ_ref² 0.002; n = 100, |T| =
    |V| = 50: b̂² = mean − 2σ² − 2σ_ref² = 0.03 − 0.002 − 0.004 and 0.02 − 0.008 − 0.004."""
    squared = np.array([[0.04, 0.01], [0.02, 0.03]])
    bias2, mse, stderr = cross_validated_mse(squared, np.array([0.001, 0.004]), 0.002, 100, 50)
    np.testing.assert_allclose(bias2, [0.024, 0.008])
    np.testing.assert_allclose(mse, [0.025, 0.012])
    np.testing.assert_allclose(stderr, [0.01, 0.01])
    # a mean below the variances' share is no bias; NaN splits are left out, all-NaN is never best
    squared = np.array([[0.001, np.nan], [0.003, np.nan]])
    bias2, mse, _ = cross_validated_mse(squared, np.array([0.001, 0.001]), 0.002, 100, 50)
    assert bias2[0] == 0.0 and mse[0] == pytest.approx(0.001) and mse[1] == np.inf


def test_select_estimator_scores_ips_and_dm_as_the_splits_say():
    log, target, h = simulated(0, n=400)
    q = 0.8 * h + 0.1
    sel = select_estimator(log, target, ["ips", "dm"], method="cv", q_hat=q, n_splits=30, seed=3)
    # the same splits, IPS and DM by hand
    masks = split_masks(len(log), 200, 30, 3)
    w = target[np.arange(len(log)), log.actions] / log.propensities
    ips_terms, dm_terms = w * log.rewards, (target * q).sum(axis=1)
    train_dm = masks @ dm_terms / 200
    train_ips, valid_ips = masks @ ips_terms / 200, (1 - masks) @ ips_terms / 200
    std = sel.table["std"].to_numpy()
    squared = np.column_stack([train_ips - valid_ips, train_dm - valid_ips]) ** 2
    bias2, mse, _ = cross_validated_mse(squared, std**2, std[0] ** 2, 400, 200)
    np.testing.assert_allclose(sel.table["mse"], mse, rtol=1e-10)
    np.testing.assert_allclose(sel.table["bias2"], bias2, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(sel.table["estimate"], [ips_terms.mean(), dm_terms.mean()])
    assert sel.label == ["ips", "dm"][int(np.argmin(mse))]
    assert list(sel.table["chosen"]) == [sel.label == "ips", sel.label == "dm"]
    assert isinstance(sel, Selection) and sel.method == "cv" and sel.reason.startswith("cv: ")
    assert sel.estimate == pytest.approx(sel.table.set_index("estimator")["estimate"][sel.label])


@pytest.mark.parametrize("method", ["mse", "cv"])
def test_with_the_exact_model_a_model_based_estimator_is_trusted(method):
    chosen = []
    for seed in range(5):
        log, target, h = simulated(seed)
        candidates = ["ips", "snips", "dm", "dr"]
        sel = select_estimator(log, target, candidates, method=method, q_hat=h, seed=seed)
        chosen.append(sel.estimator)
    assert sum(e.needs_model for e in chosen) >= 4, [e.label for e in chosen]


@pytest.mark.parametrize("method", ["mse", "cv"])
def test_with_a_badly_wrong_model_and_a_uniform_logger_dm_is_not_trusted(method):
    for seed in range(5):
        log, target, h = simulated(seed, logging="uniform")
        wrong = h[:, ::-1]  # the arms' means reversed
        sel = select_estimator(log, target, "all", method=method, q_hat=wrong, seed=seed)
        assert sel.label != "dm", sel.reason
        dm = sel.table.set_index("estimator").loc["dm"]
        assert dm["bias2"] > 10 * dm["variance"]  # the rule sees DM's bias


def test_the_bounded_bias_mse_by_hand():
    """Differences 0.05 and -0.01 with paired standard errors 0.01 and 0.02, z = 2: b̂ = 0.03
    and 0 (inside the band); a NaN candidate is never best."""
    bias2, mse = bounded_bias_mse(
        np.array([0.05, -0.01, np.nan]),
        np.array([0.01, 0.02, 0.01]),
        np.array([1e-4, 4e-4, 1.0]),
        2.0,
    )
    np.testing.assert_allclose(bias2[:2], [0.03**2, 0.0], atol=1e-15)
    np.testing.assert_allclose(mse[:2], [0.03**2 + 1e-4, 4e-4])
    assert mse[2] == np.inf


def test_select_estimator_bounds_each_bias_by_its_paired_difference_to_ips():
    log, target, h = simulated(0, n=400)
    q = 0.8 * h + 0.1
    sel = select_estimator(log, target, ["ips", "dm", "dr"], q_hat=q, seed=3, n_bootstrap=300)
    result = db.ope.evaluate(
        log, target, estimators=["ips", "dm", "dr"], q_hat=q, n_bootstrap=300, seed=3
    )
    table = sel.table.set_index("estimator")
    np.testing.assert_allclose(table["estimate"], result.table["estimate"])
    paired = result.samples - result.samples[:, [0]]
    np.testing.assert_allclose(table["difference_se"], paired.std(axis=0, ddof=1), rtol=1e-12)
    assert table.loc["ips", "difference"] == 0.0 and table.loc["ips", "bias2"] == 0.0
    np.testing.assert_allclose(table["mse"], table["bias2"] + result.table["std"].to_numpy() ** 2)
    assert sel.method == "mse" and sel.label == table["mse"].idxmin()
    assert sel.reason.startswith("mse: trust ") and "paired standard errors" in sel.reason
    wide = select_estimator(
        log, target, ["ips", "dm", "dr"], q_hat=q, seed=3, n_bootstrap=300, z=50.0
    )
    assert (wide.table["bias2"] == 0).all()  # every difference inside a band of 50 errors


def test_slope_chooses_by_lepskis_rule_over_the_deviations():
    log, target, h = simulated(1)
    sel = select_estimator(log, target, ["ips", "dr", "dm"], method="slope", q_hat=0.5 * h)
    table = sel.table
    t = stats.t(len(log) - 1).ppf(0.95)
    np.testing.assert_allclose(table["deviation"], t * table["std"])
    index = slope_index(list(table["estimate"]), list(table["deviation"]))
    assert sel.label == table["estimator"][index] and table["chosen"].sum() == 1
    assert sel.reason.startswith("slope: trust ")
    assert "mse" not in table and sel.method == "slope"


def test_the_same_seed_gives_the_same_selection():
    log, target, h = simulated(2)
    first = select_estimator(log, target, method="cv", q_hat=h + 0.1, seed=7)
    again = select_estimator(log, target, method="cv", q_hat=h + 0.1, seed=7)
    pd.testing.assert_frame_equal(first.table, again.table)
    assert first.label == again.label and first.reason == again.reason
    other = select_estimator(log, target, method="cv", q_hat=h + 0.1, seed=8)
    assert not np.array_equal(other.table["bias2"], first.table["bias2"])  # the splits differ


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"method": "xv"}, InputValueError, "unknown method 'xv'; expected one of 'mse', 'cv'"),
        ({"z": -1.0}, InputValueError, "z must be >= 0"),
        ({"candidates": 3}, InputTypeError, "candidates must be 'all', a name"),
        ({"candidates": ["ips", "ipw"]}, InputValueError, "candidates: unknown estimator(s) 'ipw'"),
        ({"candidates": ["ips", "ips"]}, InputValueError, "candidates: estimator 'ips' is given"),
        ({"n_splits": 1}, InputValueError, "n_splits must be >= 2, but 1 is given"),
        ({"n_splits": 2.5}, InputTypeError, "n_splits must be an integer"),
        ({"train_fraction": 1.0}, InputValueError, "train_fraction must be in (0, 1), but 1.0"),
        ({"train_fraction": "half"}, InputTypeError, "train_fraction must be a number"),
        ({"reference": "snips"}, InputValueError, "unknown reference 'snips'"),
        ({"one_standard_error": "yes"}, InputTypeError, "one_standard_error"),
        ({"delta": 0.0}, InputValueError, "delta must be in (0, 1), but 0.0 is given"),
        ({"n_bootstrap": 1}, InputValueError, "n_bootstrap must be >= 2"),
        ({"q_hat": np.zeros((3, 4))}, InputValueError, "q_hat must be finite, of shape (60, 4)"),
        ({"seed": -1}, InputValueError, "seed must be >= 0"),
    ],
)
def test_bad_inputs_are_library_errors_naming_the_argument(kwargs, error, message):
    log, target, h = simulated(0, n=60)
    options = {"candidates": ["ips", "dm"], "q_hat": h, **kwargs}
    with pytest.raises(error) as caught:
        select_estimator(log, target, **options)
    assert message in str(caught.value)


def test_a_log_too_small_to_split_and_a_log_that_is_none_are_refused():
    log, target, h = simulated(0, n=60)
    with pytest.raises(InputTypeError, match="log must be a LoggedBandit"):
        select_estimator(None, target, ["ips"])
    small = log.subset(np.arange(3))
    with pytest.raises(InputValueError, match=r"train_fraction=0\.5 of the 3 logged rounds"):
        select_estimator(small, target[:3], [IPS(), DM()], q_hat=h[:3])


def test_the_command_line_says_which_estimator_to_trust_and_writes_the_table(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=400)
    out = tmp_path / "out"
    argv = ["ope", "--log", str(path), "--policy", "uniform", "--estimators", "ips,dm,dr"]
    with pytest.warns(UserWarning, match="no reward yet"):
        code = main([*argv, "--n-bootstrap", "50", "--select", "cv", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    line = next(p for p in printed if p.startswith("cv: trust "))
    table = pd.read_csv(out / "selection.csv")
    assert list(table["estimator"]) == ["ips", "dm", "dr"] and table["chosen"].sum() == 1
    assert table.loc[table["chosen"], "name"].iloc[0] in line
    assert (out / "ope.csv").is_file()  # beside the OPE table
    ope = pd.read_csv(out / "ope.csv").set_index("estimator")["estimate"]
    np.testing.assert_allclose(table.set_index("estimator")["estimate"], ope[table["estimator"]])


def test_select_is_refused_for_obd_bts(tmp_path, capsys):
    code = main(["ope", "--log", "obd", "--select", "slope", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "--select needs --policy uniform or a library policy" in err
