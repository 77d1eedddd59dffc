"""Off-policy evaluation's answers to bad or unhelpful input (issue 48, §4): the library's own
errors naming the argument or the file, row, column and value; a warning when no logged round
can inform the estimate; an interval for replay."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.errors import DataError, InputTypeError
from deepbandits.logs.bandit import make_log
from deepbandits.ope import evaluate
from deepbandits.ope.replay import replay, wilson_interval
from deepbandits.ope.support import SupportWarning
from deepbandits.ope.warm import learn_log
from ope_fixtures import write_obd, write_service_log


def small_log(n: int = 60, K: int = 3, seed: int = 0, actions=None, rewards=None):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, K, n) if actions is None else np.asarray(actions)
    r = rng.random(n) if rewards is None else np.asarray(rewards, dtype=float)
    return make_log(rng.normal(size=(n, 4)), a, r, np.full(n, 1 / K), n_actions=K)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda log: evaluate(None, np.full((len(log), 3), 1 / 3)), id="evaluate"),
        pytest.param(lambda log: learn_log(db.make_policy("linucb"), None), id="learn_log"),
        pytest.param(lambda log: replay(db.make_policy("linucb"), None), id="replay"),
    ],
)
def test_a_log_that_is_not_a_log_is_named_in_the_error(call):
    with pytest.raises(InputTypeError, match=r"log must be a LoggedBandit .* NoneType is given"):
        call(small_log())


@pytest.mark.parametrize("call", [learn_log, replay])
def test_a_policy_that_is_not_a_policy_is_named_in_the_error(call):
    with pytest.raises(InputTypeError, match=r"policy must be a policy of the library"):
        call("linucb", small_log())


def test_no_logged_round_the_policy_would_play_is_said_not_passed_off_as_an_estimate():
    """The policy plays arm 0 on the first half of the rounds and arm 1 on the rest; the log
    took arm 1, then arm 0: every arm was logged, so nothing was unseen, yet no weight is > 0."""
    n = 40
    first = np.arange(n) < n // 2
    log = small_log(n, actions=np.where(first, 1, 0))
    dist = np.zeros((n, 3))
    dist[first, 0] = dist[~first, 1] = 1.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate(log, dist, estimators=["ips", "snips"], n_bootstrap=50)
    # the library's warning, and no numpy warning about the all-NaN resamples of SNIPS
    assert [type(w.message) for w in caught] == [SupportWarning]
    assert "none of the 40 logged rounds took an action" in str(caught[0].message)
    assert result.support.n_matched == 0
    assert any("none of the 40" in m for m in result.messages)
    # a policy the log does support gets no such message
    with warnings.catch_warnings():
        warnings.simplefilter("error", SupportWarning)
        ok = evaluate(log, np.tile([0.5, 0.5, 0.0], (n, 1)), estimators="ips", n_bootstrap=0)
    assert ok.support.n_matched == n


def test_replay_gives_an_interval_wilson_for_clicks_normal_otherwise():
    clicks = small_log(600, rewards=np.random.default_rng(1).random(600) < 0.3)
    res = replay(db.make_policy("linucb", seed=0), clicks, seed=0)
    lower, upper = res.interval(0.05)
    z = 1.959963984540054
    assert (lower, upper) == pytest.approx(
        wilson_interval(float(res.rewards.sum()), res.n_accepted, z)
    )
    assert 0.0 <= lower < res.value < upper <= 1.0
    real = small_log(600, seed=2)
    res = replay(db.make_policy("linucb", seed=0), real, seed=0)
    lower, upper = res.interval(0.1)
    half = 1.6448536269514722 * res.rewards.std(ddof=1) / np.sqrt(res.n_accepted)
    assert (lower, upper) == pytest.approx((res.value - half, res.value + half))
    with pytest.raises(db.errors.InputValueError, match="alpha"):
        res.interval(1.5)


def test_wilson_keeps_a_width_where_the_normal_interval_collapses():
    """No click in 50 rounds: the normal interval is [0, 0]; Wilson's is [0, 0.071]."""
    lower, upper = wilson_interval(0.0, 50, 1.959963984540054)
    # z² / (n + z²) = 3.8415 / 53.8415 at p̂ = 0, and its mirror at p̂ = 1
    assert lower == pytest.approx(0.0, abs=1e-12) and upper == pytest.approx(0.07135, abs=1e-5)
    lower, upper = wilson_interval(50.0, 50, 1.959963984540054)
    assert upper == pytest.approx(1.0) and lower == pytest.approx(1 - 0.07135, abs=1e-5)


def test_an_obd_file_with_a_header_and_no_rows_is_refused_by_name(tmp_path):
    write_obd(tmp_path, n=30)
    path = tmp_path / "obd" / "random" / "all" / "all.csv"
    pd.read_csv(path, index_col=0).iloc[:0].to_csv(path)
    with pytest.raises(DataError, match=r"all\.csv has a header but no rows"):
        db.load_logged("obd", data_dir=tmp_path)


def test_an_obd_cell_that_is_not_a_number_names_file_row_column_and_value(tmp_path):
    write_obd(tmp_path, n=30)
    path = tmp_path / "obd" / "random" / "all" / "all.csv"
    frame = pd.read_csv(path, index_col=0)
    frame["propensity_score"] = frame["propensity_score"].astype(object)
    frame.loc[frame.index[7], "propensity_score"] = "n/a?"
    frame.to_csv(path)
    with pytest.raises(DataError, match=r"all\.csv, row 7, column 'propensity_score'.*'n/a\?'"):
        db.load_logged("obd", data_dir=tmp_path)


@pytest.mark.parametrize(
    "column, value, expected",
    [
        ("propensity", "abc", r"row 4, column 'propensity': expected a number, got 'abc'"),
        ("action", "x", r"row 4, column 'action': expected a number, got 'x'"),
        ("reward", "oops", r"row 4, column 'reward': expected a number, got 'oops'"),
        ("mask", "[tru", r"row 4, column 'mask': expected a JSON list, got '\[tru'"),
        ("mask", "[true]", r"row 4, column 'mask': expected 3 booleans"),
        ("contexts", "[[1, 2], [3", r"row 4, column 'contexts': expected a JSON list"),
    ],
)
def test_a_bad_cell_of_a_service_csv_names_the_file_row_column_and_value(
    tmp_path, column, value, expected
):
    path = tmp_path / "export.csv"
    frame = write_service_log(path, n=20, pending=0, fmt="csv")
    frame[column] = frame[column].astype(object)
    frame.loc[4, column] = value
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"export\.csv, " + expected) as raised:
        db.load_logged(path)
    assert str(raised.value).count("export.csv") == 1, "the file is named once"
