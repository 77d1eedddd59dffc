"""Inverse gap weighting (SquareCB, Foster & Rakhlin 2020; issue 50 §1): the probabilities, the
exact propensities a policy reports with them, a log of its decisions that IPS evaluates without
bias, and the keywords that choose it (``explore="igw"``) on the ridge family and on
NeuralUCB/NeuralTS."""

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import InputValueError
from deepbandits.policies.parts.explore import inverse_gap_probabilities


def test_the_probabilities_weigh_each_arm_by_its_gap():
    mean = np.array([0.2, 0.9, 0.5, 0.9, -1.0])
    p = inverse_gap_probabilities(mean, gamma=10.0)
    assert p.sum() == pytest.approx(1.0)
    # every arm but the first best: 1 / (K + γ·gap); the best (first of the ties) the rest
    for a, gap in [(0, 0.7), (2, 0.4), (3, 0.0), (4, 1.9)]:
        assert p[a] == pytest.approx(1.0 / (5 + 10.0 * gap))
    assert p[1] == pytest.approx(1.0 - p[[0, 2, 3, 4]].sum()) and p[1] == p.max()
    # γ = 0 is uniform play; a large γ is nearly greedy
    np.testing.assert_allclose(inverse_gap_probabilities(mean, 0.0), np.full(5, 0.2))
    assert inverse_gap_probabilities(mean[:3], 1e9)[1] > 1 - 1e-6
    # masked arms get 0 and the others share the rest, over the available arms only
    mask = np.array([True, False, True, False, True])
    q = inverse_gap_probabilities(mean, 10.0, mask)
    assert q[~mask].tolist() == [0.0, 0.0] and q.sum() == pytest.approx(1.0)
    assert q[0] == pytest.approx(1.0 / (3 + 10.0 * 0.3)) and q[2] == q.max()
    # the floor: every available arm keeps at least p_min
    r = inverse_gap_probabilities(mean, 1e6, mask, min_propensity=0.1)
    assert 0.1 <= r[mask].min() < 0.1001 and r.sum() == pytest.approx(1.0)


def _digits_env(seed: int = 0):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return db.make_env("classification", X=X.astype(float), y=y, seed=seed)


@pytest.mark.parametrize(
    "spec",
    ["linucb", "neural-sigma2-linucb", "neural-ucb", "neural-ts"],
)
def test_a_policy_reports_the_probability_it_draws_with(spec):
    """At a fixed state (no reward learned between the decisions) the arms drawn follow the
    propensities reported, within four standard errors, and masked arms are never drawn."""
    env = _digits_env()
    small = {"linucb": {}, "neural-sigma2-linucb": {"hidden": 16, "feature_dim": 8}}.get(
        spec, {"hidden": 16}
    )
    policy = db.make_policy(spec, env=env, seed=3, explore="igw", gamma=2.0, **small)
    for _ in range(30):  # some state: a few rewards learned
        r = env.next_round()
        d = policy.decide(r.contexts)
        policy.learn(d.id, float(r.expected_rewards[d.arm]), reward_range=env.reward_range)
    contexts = env.next_round().contexts
    mask = np.ones(10, bool)
    mask[[2, 7]] = False
    n = 3000
    decisions = [policy.decide(contexts, mask=mask) for _ in range(n)]
    arms = np.array([d.arm for d in decisions])
    assert not np.isin(arms, [2, 7]).any()
    reported = {d.arm: d.propensity for d in decisions}
    assert len({round(d.propensity, 12) for d in decisions if d.arm == arms[0]}) == 1
    for arm, p in reported.items():
        frequency = np.mean(arms == arm)
        assert abs(frequency - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-9, (arm, frequency, p)
    # every available arm keeps a probability above 1/(8 + γₜ·gap): all eight were drawn, and
    # the propensities reported for them are a distribution
    assert sorted(reported) == [0, 1, 3, 4, 5, 6, 8, 9]
    assert sum(reported.values()) == pytest.approx(1.0, abs=1e-9)


def test_ips_on_an_igw_log_is_unbiased_where_a_ucb_log_is_not():
    """IPS of uniform play (true value 1/K on a classification bandit) from logs of LinUCB with
    inverse gap weighting and a floor covers the truth within three standard errors on every
    seed; from UCB's log (propensity 1 for the arm it plays) it misses by more on every seed."""
    estimates_igw, estimates_ucb = [], []
    for seed in range(4):
        for explore, out in (("igw", estimates_igw), ("ucb", estimates_ucb)):
            env = _digits_env(seed)
            policy = db.make_policy(
                "linucb", env=env, seed=seed, explore=explore, min_propensity=0.02
            )
            terms = []
            for _ in range(1500):
                r = env.next_round()
                d = policy.decide(r.contexts)
                reward = float(r.expected_rewards[d.arm])
                policy.learn(d.id, reward)
                terms.append(reward * 0.1 / d.propensity)
            terms_a = np.asarray(terms)
            out.append((terms_a.mean(), terms_a.std(ddof=1) / np.sqrt(len(terms_a))))
    for value, se in estimates_igw:
        assert abs(value - 0.1) <= 3 * se, (value, se)
    for value, se in estimates_ucb:  # weights of 0.1 / 1: the arms UCB never tried count 0
        assert abs(value - 0.1) > 3 * se, (value, se)


def test_igw_is_chosen_by_name_and_its_mistakes_are_refused():
    env = _digits_env()
    a = db.run("linucb:explore=igw,gamma=5", env, 300, seed=1).records
    b = db.run("linucb:explore=igw,gamma=5", env, 300, seed=1).records
    np.testing.assert_array_equal(a["arm"], b["arm"])  # same seed, same draws
    ucb = db.run("linucb", env, 300, seed=1).records
    assert not np.array_equal(a["arm"], ucb["arm"])
    policy = db.make_policy("linucb", env=env, explore="igw", min_propensity=0.5, seed=0)
    with pytest.raises(InputValueError, match=r"min_propensity=0.5 .* 10 available arms"):
        policy.decide(env.next_round().contexts)
    assert policy.pending_.n_decided == 0  # the refused call changed nothing
    with pytest.raises(db.DeepBanditsError, match="explore"):
        db.make_policy("linucb", explore="thompson")
    with pytest.raises(db.DeepBanditsError, match=r"unknown option.*explore"):
        db.make_policy("save-neural-linucb", explore="igw")
    assert db.make_policy("neural-ts", explore="igw").get_params()["explore"] == "igw"


def test_the_service_serves_igw_by_name_and_logs_its_propensities(tmp_path):
    """``explore=igw`` in a served policy's specification: decisions (one and a batch) carry
    propensities below 1 and above the floor, the masked arm is never played, and the rewards
    are learned."""
    from serve_support import contexts_stream, reward_of, running

    spec = "linucb:explore=igw,gamma=1,min_propensity=0.05"
    with running(tmp_path / "state", spec) as (_, client):
        props = []
        for X in contexts_stream(0, 40):
            d = client.decide(X, mask=[True, True, False])
            assert d.arm != 2
            props.append(d.propensity)
            client.learn(d.id, reward_of(X, d.arm))
        batch = client.decide_batch(np.stack(contexts_stream(1, 8)))
        props += [d.propensity for d in batch]
        health = client.health()
        assert (health["decided"], health["learned"]) == (48, 40)
    assert max(props) < 1.0 and min(props) >= 0.05
