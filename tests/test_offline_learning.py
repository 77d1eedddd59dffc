"""Learning a policy from a log (``deepbandits.ope.offline_learning``) and ``deepbandits
learn-log``: weighted learning against unweighted on skewed logs, the DR pseudo-rewards against
the true values, refusals that change nothing, the split by time, and the command end to end."""

import json

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.errors import InputValueError
from deepbandits.ope import cross_fitted_rewards, policy_probabilities, simulate_log, true_value
from deepbandits.ope.offline_learning import dr_pseudo_rewards, learn_from_log, split_log_by_time
from ope_fixtures import write_service_log

K = 4


def env_of(seed):
    return db.make_env("linear", d=5, n_arms=K, noise="fixed", noise_std=0.3, seed=seed)


def test_weighted_learning_is_at_least_as_good_as_unweighted_on_a_skewed_log():
    """Stated margin: on 5 ε-greedy logs (ε = 0.1: the weak model's arm 92.5 % of the time),
    greedy LinUCB learned from the first 400 rounds by IPS or DR has a true value on the last
    400 no more than 0.01 below the unweighted one's, averaged over the seeds (a linear model is
    well specified here, so the weights cannot do much better), and all three beat the logging
    policy."""
    values = {"none": [], "ips": [], "dr": []}
    logged = []
    for s in range(5):
        sim = simulate_log(env_of(s), 800, logging="epsilon-greedy", epsilon=0.1, seed=s)
        train, test = split_log_by_time(sim.log, fraction=0.5)
        logged.append(test.rewards.mean())
        for weighting, found in values.items():
            policy = db.make_policy("linucb", alpha=0.0, seed=0)
            done = learn_from_log(policy, train, weighting=weighting, reward_model="ridge")
            assert done.policy is policy and done.n_rounds == 400
            assert done.n_updates == (400 * K if weighting == "dr" else 400)
            found.append(true_value(policy_probabilities(policy, test), sim.expected_rewards[400:]))
    mean = {k: float(np.mean(v)) for k, v in values.items()}
    assert mean["ips"] >= mean["none"] - 0.01, mean
    assert mean["dr"] >= mean["none"] - 0.01, mean
    assert min(mean.values()) > np.mean(logged) + 0.1, (mean, np.mean(logged))


@pytest.mark.parametrize("model", ["ridge", "zero"])
def test_dr_pseudo_rewards_average_to_the_true_value_of_every_arm(model):
    """Tolerance: on 3 ε-greedy logs of 2,000 rounds (ε = 0.3, so 1/π₀ ≤ 13.4 < clip: nothing
    clipped), each arm's mean pseudo-reward is within 4 standard errors (its pseudo-rewards' own)
    of the arm's true mean reward on those rounds, with a cross-fitted q̂ and with q̂ = 0 (DR's
    unbiasedness does not depend on q̂)."""
    for s in range(3):
        sim = simulate_log(env_of(s), 2000, logging="epsilon-greedy", epsilon=0.3, seed=s)
        log = sim.log
        q = cross_fitted_rewards(log, "ridge", seed=s) if model == "ridge" else np.zeros((2000, K))
        gamma, w, n_clipped = dr_pseudo_rewards(log, q)
        assert n_clipped == 0 and w.max() < 20
        se = gamma.std(axis=0, ddof=1) / np.sqrt(len(log))
        error = np.abs(gamma.mean(axis=0) - sim.expected_rewards.mean(axis=0))
        assert (error < 4 * se).all(), (s, error, se)
    # the clip bounds the correction's weight and counts the rounds it bounded
    gamma, w, n_clipped = dr_pseudo_rewards(log, q, clip=2.0)
    assert w.max() == 2.0 and n_clipped == int((1 / log.propensities > 2.0).sum()) > 0


def test_dr_trains_a_network_head_on_the_pseudo_rewards_of_every_arm():
    sim = simulate_log(env_of(0), 200, logging="softmax", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", hidden=8, train_steps=5, seed=0)
    done = learn_from_log(policy, sim.log, weighting="dr", reward_model="ridge", n_folds=2)
    assert done.n_updates == 200 * K and policy.t_ == 200 * K
    history = policy.trainer.learner_.history
    assert history.size == 200 * K and policy.trainer.n_trainings_ > 0
    assert done.weights.maximum <= 20.0 and done.weights.ess <= 200


def test_weighting_is_refused_where_it_cannot_be_learned_and_a_failed_call_changes_nothing():
    sim = simulate_log(env_of(0), 100, logging="softmax", seed=0)
    policy = db.make_policy("neural-ucb", hidden=8, seed=0)
    with pytest.raises(InputValueError, match=r"weights='ips'.*NeuralUCB"):
        learn_from_log(policy, sim.log, weighting="ips")
    assert policy.t_ == 0 and policy.n_features_in_ is None
    with pytest.raises(InputValueError, match="weighting"):
        learn_from_log(db.make_policy("linucb"), sim.log, weighting="snips")
    # a reward outside the policy's range, at round 60: the 59 updates before it are undone
    ranged = db.make_policy("linucb", reward_range=(-10.0, 10.0), seed=0)
    learn_from_log(ranged, sim.log.subset(np.arange(20)), weighting="none")
    t_before, A_before = ranged.t_, ranged.ridge_.A.copy()
    rewards = sim.log.rewards.copy()
    rewards[60] = 50.0
    bad = db.ope.make_log(sim.log.contexts, sim.log.actions, rewards, sim.log.propensities)
    with pytest.raises(InputValueError, match="outside the reward range"):
        learn_from_log(ranged, bad, weighting="ips")
    assert ranged.t_ == t_before == 20
    np.testing.assert_array_equal(ranged.ridge_.A, A_before)


def test_split_by_time_keeps_log_order_and_refuses_empty_parts():
    sim = simulate_log(env_of(0), 50, seed=0)
    times = np.arange(50.0) * 10
    early, late = split_log_by_time(sim.log, until=245.0, times=times)
    assert len(early) == 25 and len(late) == 25
    np.testing.assert_array_equal(early.actions, sim.log.actions[:25])
    first, rest = split_log_by_time(sim.log, fraction=0.2)
    assert len(first) == 10 and np.array_equal(rest.rewards, sim.log.rewards[10:])
    with pytest.raises(InputValueError, match="empty"):
        split_log_by_time(sim.log, until=1e6, times=times)
    with pytest.raises(InputValueError, match="one of fraction and until"):
        split_log_by_time(sim.log, fraction=0.5, until=3.0, times=times)
    with pytest.raises(InputValueError, match="times"):
        split_log_by_time(sim.log, until=3.0)


def test_learn_log_command_trains_evaluates_decides_and_saves_a_servable_policy(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=300, pending=5)  # time_decided 0..299, uniform logging
    out = tmp_path / "out"
    argv = ["learn-log", "--log", str(path), "--policy", "linucb:alpha=0", "--until", "199"]
    argv += ["--n-bootstrap", "50", "--folds", "2", "--out", str(out)]
    with pytest.warns(UserWarning, match="no reward yet"):
        assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "learned the 200 rounds decided until 1970-01-01T00:03:19" in printed
    assert "evaluated on the 95 rounds after them" in printed
    assert "logging policy's own value" in printed and "\ndecision: " in printed
    table = pd.read_csv(out / "learn-log.csv")
    assert list(table["estimator"]) == ["ips", "snips", "dm", "dr", "sndr"]
    summary = json.loads((out / "learn-log.json").read_text())
    assert summary["trained_rounds"] == 200 and summary["n_updates"] == 600
    assert summary["decision"].split(":")[0] in ("ship", "do not ship", "cannot tell")
    served = db.load_policy(out / "policy.pt")  # what deepbandits serve --checkpoint reads
    assert served.t_ == 600


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--until", "last tuesday"], "--until must be a time"),
        (["--until", "5000"], "leaves a part empty"),
        (["--decide-by", "switch-dr"], "--decide-by must be one of the estimators"),
        (["--policy", "neural-ucb", "--weighting", "ips"], "NeuralUCB"),
    ],
)
def test_learn_log_mistakes_are_one_line_errors(tmp_path, capsys, extra, message):
    path = tmp_path / "log.csv"
    write_service_log(path, n=120, pending=0, fmt="csv")
    argv = ["learn-log", "--log", str(path), "--policy", "linucb", "--out", str(tmp_path / "o")]
    code = main([*argv, "--n-bootstrap", "0", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("deepbandits: error: ") and message in err
    assert "Traceback" not in err


def test_a_service_log_carries_its_decision_times_for_a_split_by_time(tmp_path) -> None:
    frame = write_service_log(tmp_path / "log.parquet", n=60, pending=0)
    log = db.load_logged(tmp_path / "log.parquet")
    np.testing.assert_array_equal(log.times, frame["time_decided"])
    early, late = split_log_by_time(log, until=39.0)
    assert (len(early), len(late)) == (40, 20)
    assert late.times.min() == 40.0
    with pytest.raises(InputValueError, match="this log has none"):
        split_log_by_time(
            db.ope.make_log(log.contexts, log.actions, log.rewards, log.propensities), until=3.0
        )
