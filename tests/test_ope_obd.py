"""Logged data readers (Open Bandit Dataset, the service's export) and the OBD ground-truth
experiment, on tiny files in the same formats."""

from pathlib import Path

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import DataError, DataNotFoundError, InputValueError
from deepbandits.ope.obd import context_free_policy, ground_truth
from ope_fixtures import write_obd, write_service_log

SHARED_OBD = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_obd_reader_builds_contexts_items_and_positions(tmp_path):
    write_obd(tmp_path)
    log = db.load_logged("obd", behavior="random", campaign="all", data_dir=tmp_path)
    assert len(log) == 600 and log.n_actions == 6 and log.n_positions == 3
    assert set(np.unique(log.positions)) == {0, 1, 2}
    # 2 + 3 + 2 + 2 one-hot user columns, then 6 affinities
    assert log.contexts.shape == (600, 9 + 6)
    assert np.allclose(log.contexts[:, :9].sum(axis=1), 4.0)
    # item_feature_0, then 3 + 2 + 1 one-hot columns
    assert log.action_features.shape == (6, 7)
    codes = db.load_logged("obd", data_dir=tmp_path, user_features="codes", affinity=False)
    assert codes.contexts.shape == (600, 4)
    assert codes.round_contexts(0).shape == (6, 4 + 7)


def test_obd_reader_errors_say_where_and_what(tmp_path, monkeypatch):
    with pytest.raises(DataNotFoundError, match=r"obd/bts/men.*zr-obp"):
        db.load_logged("obd", behavior="bts", campaign="men", data_dir=tmp_path)
    monkeypatch.setenv("DEEPBANDITS_DATA", str(tmp_path / "elsewhere"))
    with pytest.raises(DataNotFoundError, match="from DEEPBANDITS_DATA"):
        db.load_logged("obd")
    with pytest.raises(InputValueError, match="campaign"):
        db.load_logged("obd", campaign="kids", data_dir=tmp_path)
    write_obd(tmp_path)
    path = tmp_path / "obd" / "random" / "all" / "all.csv"
    path.write_text(path.read_text().replace(",click,", ",clicked,", 1))
    with pytest.raises(DataError, match="click"):
        db.load_logged("obd", data_dir=tmp_path)


def test_context_free_policy_recovers_consistent_propensities(tmp_path):
    pi = write_obd(tmp_path, n=3000)
    bts = db.load_logged("obd", behavior="bts", data_dir=tmp_path)
    policy = context_free_policy(bts)
    assert np.allclose(policy.mass_before_normalising, 1.0)  # every item shown at every slot
    assert np.allclose(policy.probs, pi)
    assert policy.propensity_cv == pytest.approx(0.0, abs=1e-12)
    freq = context_free_policy(bts, "frequency").probs
    assert np.abs(freq - pi).max() < 0.05


def test_ground_truth_experiment_on_a_tiny_obd(tmp_path):
    write_obd(tmp_path, n=1500)
    gt = ground_truth("all", data_dir=tmp_path, n_bootstrap=100, n_runs=3)
    table = gt.table
    # every registered estimator but those whose defaults repeat another (sg-ips, sg-dr at λ = 0)
    every = [name for name, cls in db.ope.ESTIMATORS.items() if cls.in_all]
    assert list(table["estimator"]) == every and "sg-ips" not in every
    assert {"truth", "relative_error", "covered", "rel_error_mean", "obp_mean"} <= set(table)
    assert (table["lower"] <= table["estimate"]).all() and (
        table["estimate"] <= table["upper"]
    ).all()
    assert gt.truth_interval[0] < gt.truth < gt.truth_interval[1]
    ips = table.set_index("estimator").loc["ips"]
    assert ips["relative_error"] == pytest.approx(abs(ips["estimate"] - gt.truth) / gt.truth)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_service_log_reader(tmp_path, fmt):
    path = tmp_path / f"log.{fmt}"
    frame = write_service_log(path, fmt=fmt)
    with pytest.warns(UserWarning, match="5 of 300 decisions have no reward"):
        log = db.load_logged(path)
    assert len(log) == 295 and log.per_arm and log.contexts.shape == (295, 3, 2)
    assert np.array_equal(log.actions, frame["action"].to_numpy()[:295])
    uniform = np.full((295, 3), 1 / 3)
    res = db.ope.evaluate(log, uniform, estimators="ips", n_bootstrap=0)
    assert res.estimate("ips") == pytest.approx(log.rewards.mean() * 1.0, rel=0.2)


def test_service_log_reader_errors(tmp_path):
    with pytest.raises(DataNotFoundError):
        db.load_logged(tmp_path / "none.parquet")
    path = tmp_path / "log.parquet"
    frame = write_service_log(path)
    frame.drop(columns=["propensity"]).to_parquet(path)
    with pytest.raises(DataError, match="propensity"):
        db.load_logged(path)
    frame = frame.dropna(subset=["reward"])
    frame.assign(propensity=0.0).to_parquet(path)
    with pytest.raises(DataError, match="propensities"):
        db.load_logged(path)


@pytest.mark.skipif(not (SHARED_OBD / "obd").is_dir(), reason="the OBD sample is not here")
def test_the_real_obd_sample_reads_as_documented():
    log = db.load_logged("obd", behavior="bts", campaign="men", data_dir=SHARED_OBD)
    assert len(log) == 10_000 and log.n_actions == 34
    assert log.rewards.sum() == 69  # MANIFEST: 69 clicks
    policy = context_free_policy(log)
    assert np.allclose(policy.probs.sum(axis=1), 1.0)
    assert (np.abs(policy.mass_before_normalising - 1.0) < 0.2).all()
    assert policy.propensity_cv > 0.5  # BTS's probabilities moved over the week
    # so the arithmetic mean of the propensities shown is biased upwards (size-biased)
    assert (context_free_policy(log, "mean").mass_before_normalising > 1.5).all()


def test_a_state_folder_is_read_by_the_service_not_by_load_logged(tmp_path) -> None:
    """The log readers sit below the service: a folder is refused with the reader to use."""
    with pytest.raises(db.DataError, match=r"deepbandits.serve.export.read_log"):
        db.load_logged(tmp_path)


def test_the_random_log_knows_its_uniform_logging_policy(tmp_path) -> None:
    write_obd(tmp_path)
    random_log = db.load_logged("obd", data_dir=tmp_path)
    assert random_log.logging_dist is not None
    np.testing.assert_allclose(random_log.logging_dist, 1.0 / random_log.n_actions)
    assert db.load_logged("obd", behavior="bts", data_dir=tmp_path).logging_dist is None
