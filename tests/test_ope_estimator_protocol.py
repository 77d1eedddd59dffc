"""An off-policy estimator is one object (issue 48): its hyperparameters are its fields, its label
reads back as a specification, a new one is one class (a ratio of sums shares the one bootstrap
of them all; any other gets resamples of its own), and ``evaluate`` and the command line take
names, specifications or objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from deepbandits._validation import check_positive
from deepbandits.cli import main
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope import (
    ESTIMATORS,
    IPS,
    Estimator,
    RatioEstimator,
    SwitchDR,
    Terms,
    evaluate,
    make_estimator,
    make_log,
    register_estimator,
)
from deepbandits.ope.bootstrap import bootstrap_intervals, resampled_sums
from deepbandits.ope.estimator import check_estimators
from ope_fixtures import write_service_log


@dataclass(frozen=True)
class CappedIPS(RatioEstimator):
    """Σ min(wₜ, cap) rₜ / n: a ratio estimator written as a user would."""

    cap: float = 5.0
    short = "capped-ips"
    display = "capped IPS"

    def __post_init__(self) -> None:
        object.__setattr__(self, "cap", check_positive(self.cap, "cap"))

    def columns(self, terms: Terms) -> dict[str, np.ndarray]:
        return {f"capped[{self.cap!r}]": np.minimum(terms.w, self.cap) * terms.rewards}

    def ratios(self) -> tuple[tuple[str, str], ...]:
        return ((f"capped[{self.cap!r}]", "one"),)  # "one": 1 on every round, always there


@dataclass(frozen=True)
class SoftMaxIPS(Estimator):
    """log of the weighted mean of exp(wₜ rₜ): not a ratio of sums."""

    short = "softmax-ips"
    display = "log-mean-exp IPS"

    def estimate_weighted(self, terms: Terms, counts: np.ndarray) -> np.ndarray:
        return np.log(counts @ np.exp(terms.w * terms.rewards) / counts.sum(axis=1))


@pytest.fixture
def capped():
    """CappedIPS registered for one test (the registry is global: other tests' "all" must not
    see it)."""
    register_estimator(CappedIPS)
    yield CappedIPS
    del ESTIMATORS["capped-ips"]


def a_log(n=400, K=3, seed=0):
    rng = np.random.default_rng(seed)
    a, p = rng.integers(0, K, n), rng.uniform(0.1, 0.6, n)
    log = make_log(rng.normal(size=(n, 2)), a, rng.random(n), p, n_actions=K)
    return log, rng.dirichlet(np.ones(K), n)


def test_a_label_is_a_specification_that_builds_the_estimator_again():
    tuned = SwitchDR(tau=10.0)
    assert tuned.label == "switch-dr:tau=10.0" and tuned.title == "Switch-DR (tau=10)"
    assert make_estimator(tuned.label) == tuned and tuned.get_params() == {"tau": 10.0}
    assert SwitchDR().label == "switch-dr" and SwitchDR().title == "Switch-DR"
    assert make_estimator("switch-dr:tau=inf").tau == float("inf")


@pytest.mark.parametrize(
    "given, error, match",
    [
        ("ipw", InputValueError, "unknown estimator.*'ipw'.*ips, snips"),
        ("switch-dr:lamb=3", InputValueError, "lamb"),
        ("switch-dr:tau=-1", InputValueError, "tau"),
        ("ips:foo=1", InputValueError, "'ips' takes no settings, but 'foo' given"),
        ("dr-os-slope:grid=[a]", InputValueError, r"grid\[0\]: lam must be a real number"),
        (["dr", "dr"], InputValueError, "'dr' is given twice"),
        ([3.0], InputTypeError, "a float is given"),
        ([], InputValueError, "none given"),
    ],
)
def test_bad_estimators_are_refused_with_what_was_expected(given, error, match):
    with pytest.raises(error, match=match):
        check_estimators(given)


def test_a_new_ratio_estimator_is_one_class_and_shares_the_bootstrap(capped):
    log, pi = a_log()
    res = evaluate(log, pi, estimators=["ips", "capped-ips:cap=2"], n_bootstrap=300, seed=4)
    w = pi[np.arange(len(log)), log.actions] / log.propensities
    assert res.estimate("capped-ips") == pytest.approx(np.mean(np.minimum(w, 2) * log.rewards))
    assert list(res.table["estimator"]) == ["ips", "capped-ips:cap=2.0"]
    # one resample of one table: IPS's and the new estimator's samples are those of the table
    terms = Terms(log.rewards, w)
    table = np.column_stack([w * log.rewards, np.ones(len(log)), np.minimum(w, 2) * log.rewards])
    sums = resampled_sums(table, 300, seed=4)
    # (the sums are float32 products: another column order may round another way, at 1e-7)
    np.testing.assert_allclose(res.samples[:, 0], sums[:, 0] / sums[:, 1], rtol=1e-5)
    np.testing.assert_allclose(res.samples[:, 1], sums[:, 2] / sums[:, 1], rtol=1e-5)
    # IPS's interval does not depend on the company it keeps
    alone = bootstrap_intervals([IPS()], terms, n_resamples=300, seed=4)
    np.testing.assert_allclose(alone.samples[:, 0], res.samples[:, 0], rtol=1e-5)


def test_an_estimator_that_is_not_a_ratio_gets_an_estimate_and_an_interval():
    log, pi = a_log()
    w = pi[np.arange(len(log)), log.actions] / log.propensities
    res = evaluate(log, pi, estimators=["ips", SoftMaxIPS()], n_bootstrap=400, seed=1)
    want = np.log(np.mean(np.exp(w * log.rewards)))
    assert res.estimate("softmax-ips") == pytest.approx(want, rel=1e-12)
    row = res.table.set_index("estimator").loc["softmax-ips"]
    assert row["lower"] < want < row["upper"] and row["name"] == "log-mean-exp IPS"
    # its resamples: Poisson counts, seeded; the same seed gives the same interval
    again = evaluate(log, pi, estimators=["ips", SoftMaxIPS()], n_bootstrap=400, seed=1)
    np.testing.assert_array_equal(res.samples, again.samples)
    e = np.exp(w * log.rewards)  # the delta method's standard error of log(mean(e))
    assert 0.5 < row["std"] / (np.std(e) / (np.mean(e) * np.sqrt(len(log)))) < 2.0
    # and IPS keeps the resamples it has alone
    alone = evaluate(log, pi, estimators="ips", n_bootstrap=400, seed=1)
    np.testing.assert_array_equal(alone.samples[:, 0], res.samples[:, 0])


def test_the_command_line_takes_specifications_and_labels_the_rows(tmp_path, capsys, capped):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=200, pending=0)
    argv = ["ope", "--log", str(path), "--policy", "uniform", "--n-bootstrap", "50"]
    argv += ["--estimators", "ips,switch-dr:tau=2,capped-ips:cap=1.5", "--out", str(tmp_path)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Switch-DR (tau=2)" in text and "capped IPS (cap=1.5)" in text
    code = main([*argv[:-4], "--estimators", "switch-dr:tau=-2", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("deepbandits: error: ") and "tau" in err
    assert "Traceback" not in err
