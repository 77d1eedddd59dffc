"""Off-policy estimators on simulated logs whose true values are known: unbiasedness, interval
coverage, DR against IPS, the estimators' definitions, the vectorised bootstrap and the support
warnings."""

import warnings

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope import (
    SupportWarning,
    cross_fitted_rewards,
    evaluate,
    make_log,
    policy_probabilities,
)
from deepbandits.ope.bootstrap import point_estimates, poisson1_counts, resampled_sums
from deepbandits.ope.estimator import Terms, check_estimators
from deepbandits.ope.estimators import SNIPS, DRos, SwitchDR, effective_sample_size
from deepbandits.ope.simulate import logging_distribution, simulate_log, true_value

ALL = ["ips", "snips", "dm", "dr", "sndr", "switch-dr", "dr-os"]


def linear_env():
    return db.make_env("linear", d=5, n_arms=4, noise="fixed", noise_std=0.5, seed=0)


def target_of(expected):
    """A good evaluation policy: softmax of 3·h (it knows the means; the log does not)."""
    return logging_distribution(3.0 * expected, "softmax", 0.0, 1.0)


@pytest.fixture(scope="module")
def many_logs():
    """200 softmax-logged logs of 400 rounds: (log, target distribution, conditional truth)."""
    env = linear_env()
    out = []
    for seed in range(200):
        sim = simulate_log(env, 400, logging="softmax", weakness=1.0, seed=seed)
        target = target_of(sim.expected_rewards)
        out.append((sim, target, true_value(target, sim.expected_rewards)))
    return out


def test_ips_and_dr_are_unbiased_within_three_standard_errors(many_logs):
    errors = {"ips": [], "dr": [], "dr_biased_model": []}
    for sim, target, truth in many_logs:
        good = evaluate(sim.log, target, q_hat=sim.expected_rewards, n_bootstrap=0, warn=False)
        biased = evaluate(  # a wrong model: DR stays unbiased through its correction
            sim.log, target, q_hat=0.5 * sim.expected_rewards + 0.3, n_bootstrap=0, warn=False
        )
        errors["ips"].append(good.estimate("ips") - truth)
        errors["dr"].append(good.estimate("dr") - truth)
        errors["dr_biased_model"].append(biased.estimate("dr") - truth)
    for name, errs in errors.items():
        e = np.array(errs)
        se = e.std(ddof=1) / np.sqrt(len(e))
        assert abs(e.mean()) < 3 * se, (name, e.mean(), se)
    # while DM with the wrong model is biased far beyond its standard error
    dm = [
        evaluate(
            s.log, t, q_hat=0.5 * s.expected_rewards + 0.3, estimators="dm", n_bootstrap=0
        ).estimate("dm")
        - v
        for s, t, v in many_logs[:50]
    ]
    assert abs(np.mean(dm)) > 10 * np.std(dm, ddof=1) / np.sqrt(50)


def test_bootstrap_intervals_cover_the_truth_90_to_98_percent():
    """95 % intervals against the value over the context distribution (estimated from 200,000
    contexts), over 300 logs."""
    env = linear_env()
    big = simulate_log(env, 200_000, logging="uniform", seed=10_000)
    truth = true_value(target_of(big.expected_rewards), big.expected_rewards)
    covered = {name: 0 for name in ("ips", "snips", "dr")}
    n_logs = 300
    for seed in range(n_logs):
        sim = simulate_log(env, 300, logging="softmax", seed=seed)
        res = evaluate(
            sim.log,
            target_of(sim.expected_rewards),
            q_hat=0.5 * sim.expected_rewards,
            estimators=list(covered),
            n_bootstrap=400,
            seed=seed,
            truth=truth,
        )
        for name, hit in zip(res.table["estimator"], res.table["covered"], strict=True):
            covered[name] += bool(hit)
    for name, hits in covered.items():
        assert 0.90 <= hits / n_logs <= 0.98, (name, hits / n_logs)


def test_dr_beats_ips_with_a_good_cross_fitted_reward_model():
    """A well-specified ridge model of h removes the variance that comes from the means: with
    noise 0.1 against means spread over [-1, 1], DR's error is under half of IPS's."""
    env = db.make_env("linear", d=5, n_arms=4, noise="fixed", noise_std=0.1, seed=0)
    ips, dr = [], []
    for seed in range(20):
        sim = simulate_log(env, 1000, logging="epsilon-greedy", epsilon=0.3, seed=seed)
        target = target_of(sim.expected_rewards)
        truth = true_value(target, sim.expected_rewards)
        res = evaluate(
            sim.log, target, estimators=["ips", "dr"], reward_model="ridge", n_bootstrap=0
        )
        ips.append(res.estimate("ips") - truth)
        dr.append(res.estimate("dr") - truth)
    rmse_ips, rmse_dr = np.sqrt(np.mean(np.square(ips))), np.sqrt(np.mean(np.square(dr)))
    assert rmse_dr < 0.5 * rmse_ips, (rmse_dr, rmse_ips)


def test_estimators_follow_their_definitions():
    rng = np.random.default_rng(0)
    n, K = 500, 3
    r, p = rng.random(n), rng.uniform(0.05, 1.0, n)
    pi, q = rng.dirichlet(np.ones(K), n), rng.random((n, K))
    a = rng.integers(0, K, n)
    w = pi[np.arange(n), a] / p
    dm = (pi * q).sum(1)
    res = q[np.arange(n), a]
    estimators = check_estimators(ALL, tau=2.0, lam=3.0)
    assert estimators[-2:] == [SwitchDR(tau=2.0), DRos(lam=3.0)]
    got = dict(zip(ALL, point_estimates(estimators, Terms(r, w, dm, res)), strict=True))
    want = {
        "ips": np.mean(w * r),
        "snips": np.sum(w * r) / np.sum(w),
        "dm": np.mean(dm),
        "dr": np.mean(dm + w * (r - res)),
        "sndr": np.mean(dm) + np.sum(w * (r - res)) / np.sum(w),
        "switch-dr": np.mean(dm + (w <= 2.0) * w * (r - res)),
        "dr-os": np.mean(dm + 3.0 * w / (w**2 + 3.0) * (r - res)),
    }
    for name, estimator in zip(ALL, estimators, strict=True):
        assert got[name] == pytest.approx(want[name], rel=1e-12), name
        # the estimate alone, from the estimator's own columns, is the same number
        assert estimator.estimate(Terms(r, w, dm, res)) == pytest.approx(got[name], rel=1e-12)
    assert effective_sample_size(np.ones(10)) == pytest.approx(10.0)
    assert effective_sample_size(np.array([1.0, 0.0, 0.0])) == pytest.approx(1.0)


def test_resampled_sums_are_count_weighted_sums_and_counts_are_poisson():
    table = np.random.default_rng(1).random((1000, 4))
    sums = resampled_sums(table, 50, seed=7)
    child = np.random.SeedSequence(7).spawn(1)[0]  # one chunk: the seed's first child
    counts = poisson1_counts(np.random.default_rng(child), (50, 1000)).astype(float)
    np.testing.assert_allclose(sums, counts @ table, rtol=1e-5)
    # the same resamples whatever the number of threads and chunks
    big = np.random.default_rng(2).random((30_000, 3))
    one = resampled_sums(big, 400, seed=3, threads=1)
    np.testing.assert_array_equal(one, resampled_sums(big, 400, seed=3, threads=3))
    draws = poisson1_counts(np.random.default_rng(3), (2000, 5000)).ravel()
    assert abs(draws.mean() - 1.0) < 0.003 and abs(draws.var() - 1.0) < 0.005
    assert abs(np.mean(draws == 0) - np.exp(-1.0)) < 0.002
    assert abs(np.mean(draws == 3) - np.exp(-1.0) / 6) < 0.001
    # a resample that gives no weight to any round reads as NaN, not a crash
    nan = SNIPS().from_sums({"[ips]": np.zeros(1), "w": np.zeros(1)})
    assert np.isnan(nan).all()


def test_support_warnings_name_their_numbers():
    rng = np.random.default_rng(0)
    n, K = 2000, 5
    a = rng.integers(0, 3, n)  # arms 3 and 4 never logged
    p = np.where(rng.random(n) < 0.005, 1e-5, 1 / 3)
    log = make_log(rng.random((n, 2)), a, rng.random(n), p, n_actions=K)
    uniform = np.full((n, K), 1 / K)
    with pytest.warns(SupportWarning) as record:
        res = evaluate(log, uniform, estimators="ips", n_bootstrap=0)
    text = " | ".join(str(w.message) for w in record)
    assert "below 0.001" in text and "arms the log never took: 3, 4" in text
    assert "40.0%" in text  # 2 of 5 arms at 1/5 each
    assert "effective sample size" in text
    assert res.support.unseen_arms == (3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-supported log warns nothing
        good = make_log(log.contexts, a, log.rewards, np.full(n, 1 / 3), n_actions=K)
        evaluate(good, np.eye(K)[a], estimators="ips", n_bootstrap=0)


def test_bad_inputs_raise_the_librarys_errors_naming_the_argument():
    rng = np.random.default_rng(0)
    X, a, r = rng.random((10, 2)), rng.integers(0, 2, 10), rng.random(10)
    with pytest.raises(InputValueError, match="propensities"):
        make_log(X, a, r, np.zeros(10))
    with pytest.raises(InputValueError, match="actions"):
        make_log(X, a + 5, r, np.ones(10), n_actions=2)
    with pytest.raises(InputTypeError, match="actions"):
        make_log(X, a.astype(str), r, np.ones(10))
    log = make_log(X, a, r, np.full(10, 0.5), n_actions=2)
    with pytest.raises(InputValueError, match="sum to 1"):
        evaluate(log, np.full((10, 2), 0.3), n_bootstrap=0)
    with pytest.raises(InputValueError, match="unknown estimator"):
        evaluate(log, np.full((10, 2), 0.5), estimators=["ipw"])
    with pytest.raises(InputTypeError, match="policy"):
        evaluate(log, "linucb")
    with pytest.raises(InputValueError, match="q_hat"):
        evaluate(log, np.full((10, 2), 0.5), q_hat=np.zeros((10, 3)))


def test_library_policy_probabilities_are_its_decision_propensities():
    env = linear_env()
    sim = simulate_log(env, 200, logging="uniform", seed=3)
    policy = db.make_policy("linucb", alpha=0.5, epsilon=0.2, seed=0)
    for t in range(100):
        policy.update(sim.log.round_contexts(t), int(sim.log.actions[t]), sim.log.rewards[t])
    state = policy.state_dict()
    probs = policy_probabilities(policy, sim.log)
    assert np.allclose(probs.sum(1), 1.0)
    assert policy.state_dict().keys() == state.keys() and policy.t_ == 100
    for t in range(100, 200):
        d = policy.decide(sim.log.round_contexts(t))
        assert probs[t, d.arm] == pytest.approx(d.propensity, rel=1e-12)


@pytest.mark.parametrize("model", ["ridge", "hgb", "network"])
def test_cross_fitted_reward_models_learn_the_means(model):
    sim = simulate_log(linear_env(), 600, logging="uniform", seed=0)
    q = cross_fitted_rewards(sim.log, model, n_folds=3, seed=0)
    assert q.shape == (600, 4)
    assert np.corrcoef(q.ravel(), sim.expected_rewards.ravel())[0, 1] > 0.8


def test_reward_model_for_clicks_and_bad_models():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    a = rng.integers(0, 2, 400)
    clicks = (rng.random(400) < np.where(a == 1, 0.8, 0.1)).astype(float)
    log = make_log(X, a, clicks, np.full(400, 0.5), n_actions=2)
    q = cross_fitted_rewards(log, "auto", n_folds=2)  # logistic for {0, 1} rewards
    assert ((q >= 0) & (q <= 1)).all() and q[:, 1].mean() > q[:, 0].mean() + 0.5
    with pytest.raises(InputValueError, match="unknown reward_model"):
        cross_fitted_rewards(log, "forest")
    with pytest.raises(InputTypeError, match="reward_model"):
        cross_fitted_rewards(log, object())
    with pytest.raises(InputValueError, match="n_folds"):
        cross_fitted_rewards(log, "ridge", n_folds=401)


def test_neural_policy_probabilities_and_samplers_refused():
    from conftest import SMALL_NET, SMALL_REWARD_NET

    env = linear_env()
    sim = simulate_log(env, 150, logging="uniform", seed=4)
    policy = db.make_policy("neural-sigma2-linucb", seed=0, epsilon=0.1, **SMALL_NET)
    db.ope.learn_log(policy, sim.log.subset(np.arange(100)), reward_range=env.reward_range)
    assert policy.t_ == 100
    probs = policy_probabilities(policy, sim.log)
    for t in range(100, 150):
        d = policy.decide(sim.log.round_contexts(t))
        assert probs[t, d.arm] == pytest.approx(d.propensity, rel=1e-9)
    sampler = db.make_policy("neural-ts", seed=0, **SMALL_REWARD_NET)
    with pytest.raises(InputValueError, match="replay"):
        policy_probabilities(sampler, sim.log)
