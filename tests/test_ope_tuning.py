"""Switch-DR's τ and DRos's λ chosen by SLOPE (issue 48): the acceptance rule on a hand example,
the deviation, the choice being one of the fixed estimators, and what it buys on simulated logs
whose true values are known."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import InputValueError
from deepbandits.ope import DRos, DRosSlope, SwitchDR, SwitchDRSlope, Terms, evaluate
from deepbandits.ope.estimator import make_estimator
from deepbandits.ope.simulate import logging_distribution, simulate_log, true_value
from deepbandits.ope.tuning import SLOPE_C, slope_index, student_t_deviation


def test_slope_accepts_while_each_estimate_lies_within_the_deviations_and_stops_at_the_first_gap():
    """Widths 1, 0.5, 0.1: the third is within 0.1 + c·1 of the first and 0.1 + c·0.5 of the
    second when it is 0.1 + 0.8 away from the second (0.8 ≤ 0.8247), not when 0.85."""
    assert SLOPE_C == pytest.approx(np.sqrt(6) - 1)
    assert slope_index([0.0, 0.1, 0.9], [1.0, 0.5, 0.1]) == 2
    assert slope_index([0.0, 0.1, 0.95], [1.0, 0.5, 0.1]) == 1
    # the order is by width, not by position in the grid
    assert slope_index([0.95, 0.0, 0.1], [0.1, 1.0, 0.5]) == 2
    with pytest.raises(InputValueError, match="at least one candidate"):
        slope_index([], [])


def test_the_deviation_is_the_student_t_half_width_of_the_mean():
    column = np.tile([0.0, 1.0], 50)  # n = 100, variance 1/4: 1.6604 · √(0.25 / 99)
    assert student_t_deviation(column, 0.05) == pytest.approx(0.08344, abs=1e-4)
    assert student_t_deviation(np.ones(1), 0.05) == float("inf")


def simulated(seed: int, n: int = 400, exact_model: bool = False):
    env = db.make_env("linear", d=5, n_arms=4, noise="fixed", noise_std=0.5, seed=0)
    sim = simulate_log(env, n, logging="softmax", weakness=1.0, seed=seed)
    target = logging_distribution(3.0 * sim.expected_rewards, "softmax", 0.0, 1.0)
    truth = true_value(target, sim.expected_rewards)
    q = sim.expected_rewards if exact_model else 0.5 * sim.expected_rewards + 0.3
    return sim.log, target, q, truth


@pytest.mark.parametrize("tuned, fixed", [(SwitchDRSlope(), SwitchDR), (DRosSlope(), DRos)])
def test_the_tuned_estimate_is_the_chosen_fixed_one_and_the_table_says_which(tuned, fixed):
    log, target, q, _ = simulated(0)
    result = evaluate(log, target, estimators=[tuned], q_hat=q, n_bootstrap=200, seed=2)
    w = target[np.arange(len(log)), log.actions] / log.propensities
    terms = Terms(log.rewards, w, (target * q).sum(axis=1), q[np.arange(len(log)), log.actions])
    chosen = tuned.choose(terms)
    assert type(chosen) is fixed and getattr(chosen, tuned.param) in tuned.values
    assert result.estimate(tuned.short) == pytest.approx(chosen.estimate(terms), rel=1e-12)
    assert f"SLOPE chose {tuned.param}={getattr(chosen, tuned.param):g}" in result.table["name"][0]
    # its interval resamples the chosen estimator's column (the choice is made once)
    alone = evaluate(log, target, estimators=[chosen], q_hat=q, n_bootstrap=200, seed=2)
    np.testing.assert_allclose(result.samples, alone.samples, rtol=1e-5)


def test_a_tuned_estimator_is_specified_like_any_other():
    tuned = make_estimator("dr-os-slope:grid=[1,10,inf],delta=0.1")
    assert tuned == DRosSlope(grid=(1.0, 10.0, float("inf")), delta=0.1)
    assert make_estimator(tuned.label) == tuned
    assert DRosSlope().label == "dr-os-slope"
    with pytest.raises(InputValueError, match="distinct"):
        DRosSlope(grid=(1.0, 1.0))
    with pytest.raises(InputValueError, match=r"grid\[1\]"):
        SwitchDRSlope(grid=(1.0, -3.0))
    with pytest.raises(InputValueError, match="delta"):
        SwitchDRSlope(delta=1.5)


def rmse(estimator, seeds, exact_model):
    errors = []
    for seed in seeds:
        log, target, q, truth = simulated(seed, exact_model=exact_model)
        res = evaluate(log, target, estimators=[estimator], q_hat=q, n_bootstrap=0, warn=False)
        errors.append(res.table["estimate"][0] - truth)
    return float(np.sqrt(np.mean(np.square(errors))))


def test_slope_finds_the_direct_method_when_the_model_is_exact_and_avoids_the_worst_when_not():
    """40 logs of 400 rounds. With the exact model the best λ is 0 (DM, no error): SLOPE's RMSE
    is below a tenth of the fixed λ = 100's. With a wrong model (0.5·h + 0.3) DM is the worst
    candidate (RMSE 0.135 over 60 logs, measured) and SLOPE stays under 0.7 of it (0.076
    measured), though above the best fixed λ in hindsight (0.033): the test states the first two,
    the docs all three."""
    seeds = range(40)
    assert rmse(DRosSlope(), seeds, True) < 0.1 * rmse(DRos(), seeds, True)
    worst = rmse(DRos(lam=0.0), seeds, False)
    assert rmse(DRosSlope(), seeds, False) < 0.7 * worst
    assert rmse(SwitchDRSlope(), seeds, False) < 0.7 * rmse(SwitchDR(tau=0.0), seeds, False)


def test_the_sub_gaussian_estimators_follow_their_definition_and_their_ends():
    """w / (1 − λ + λw) (Metelli et al. 2021): λ = 0 is IPS and DR, λ = 1 the logged rewards'
    mean, and in between every weight stays below 1/λ."""
    rng = np.random.default_rng(0)
    n = 300
    r, w = rng.random(n), rng.exponential(2.0, n)
    dm, q = rng.random(n), rng.random(n)
    terms = Terms(r, w, dm, q)
    lam = 0.1
    shrunk = w / (1 - lam + lam * w)
    sg_ips, sg_dr = make_estimator("sg-ips:lam=0.1"), make_estimator("sg-dr:lam=0.1")
    assert sg_ips.estimate(terms) == pytest.approx(np.mean(shrunk * r), rel=1e-12)
    assert sg_dr.estimate(terms) == pytest.approx(np.mean(dm + shrunk * (r - q)), rel=1e-12)
    assert shrunk.max() < 1 / lam
    assert make_estimator("sg-ips").estimate(terms) == pytest.approx(np.mean(w * r), rel=1e-12)
    assert make_estimator("sg-ips:lam=1").estimate(terms) == pytest.approx(r.mean(), rel=1e-12)
    with pytest.raises(InputValueError, match=r"lam must be in \[0, 1\]"):
        make_estimator("sg-dr:lam=2")
    with pytest.raises(InputValueError, match=r"grid\[0\]: lam must be in \[0, 1\]"):
        make_estimator("sg-ips-slope:grid=[5]")


def test_slope_keeps_sub_gaussian_ips_well_inside_its_most_biased_candidate():
    """40 logs of 400 rounds. SLOPE accepts a candidate whose estimate lies within about (1 + c)
    deviations of the wider ones, so here it often picks λ = 0.3 or 1 and is biased: on 20 logs
    its RMSE was 0.091 against IPS's 0.038 and 0.164 for λ = 1 (the logged rewards' mean). The
    test states the margin to the worst candidate; the docs say it costs against IPS here."""
    seeds = range(40)
    tuned = make_estimator("sg-ips-slope")
    assert rmse(tuned, seeds, False) < 0.8 * rmse(make_estimator("sg-ips:lam=1"), seeds, False)


def test_the_ends_of_the_grids_give_numbers_where_a_weight_is_zero():
    """DRos at λ = 0 and sub-Gaussian IPS at λ = 1 are 0/0 where wₜ = 0 (a round whose logged
    action π never plays): the weight's limit, 0, not NaN and not a numpy warning."""
    w = np.array([0.0, 0.5, 2.0])
    terms = Terms(np.array([1.0, 0.0, 1.0]), w, np.zeros(3), np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make_estimator("dr-os:lam=0").estimate(terms) == 0.0
        assert make_estimator("sg-ips:lam=1").estimate(terms) == pytest.approx(1 / 3)
