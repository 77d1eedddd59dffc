"""Inverse gap weighting (SquareCB, Foster & Rakhlin 2020; issue 50 §1): the probabilities, the
exact propensities a policy reports with them, the floor its log keeps (with ε's), a log of its
decisions that IPS evaluates without bias where a UCB log makes ``evaluate`` warn, and the
keywords that choose it (``explore="igw"``) on the ridge family and on NeuralUCB/NeuralTS."""

import warnings

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import InputValueError
from deepbandits.logs.bandit import make_log
from deepbandits.ope import evaluate
from deepbandits.ope.support import SupportWarning
from deepbandits.policies.choice import guaranteed_min_propensity
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


def _linucb_log(seed: int, n: int = 1500, **options):
    """A log of ``n`` rounds of LinUCB on digits (``options``: its keywords), expected rewards
    logged; IPS reads no context, so the log's contexts are a column of zeros."""
    env = _digits_env(seed)
    policy = db.make_policy("linucb", env=env, seed=seed, **options)
    arms, rewards, propensities = [], [], []
    for _ in range(n):
        r = env.next_round()
        d = policy.decide(r.contexts)
        reward = float(r.expected_rewards[d.arm])
        policy.learn(d.id, reward)
        arms.append(d.arm)
        rewards.append(reward)
        propensities.append(d.propensity)
    return make_log(np.zeros((n, 1)), arms, rewards, propensities, n_actions=10)


def _support_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, SupportWarning)]


def test_ips_on_an_igw_log_is_unbiased_where_a_ucb_log_is_not():
    """IPS of uniform play (true value 1/K on a classification bandit) by ``evaluate`` from logs
    of LinUCB with inverse gap weighting and a floor covers the truth within three standard
    errors on every seed, with no support warning and weights within the floor's bound; from
    UCB's log (propensity 1 for the arm it plays) it misses by more on every seed, and
    ``evaluate`` warns that the logger was deterministic."""
    n = 1500
    uniform = np.full((n, 10), 0.1)
    floor = guaranteed_min_propensity(10, min_propensity=0.02)
    for seed in range(4):
        igw = _linucb_log(seed, n, explore="igw", min_propensity=0.02)
        ucb = _linucb_log(seed, n, explore="ucb")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            on_igw = evaluate(igw, uniform, estimators="ips", n_bootstrap=0)
        assert _support_warnings(caught) == [] and on_igw.messages == []
        assert on_igw.support.n_deterministic == 0
        assert on_igw.support.min_propensity >= floor
        assert on_igw.support.max_weight <= 0.1 / floor  # π(a | x)/π₀(a | x), π = 1/10
        with pytest.warns(SupportWarning, match=r"propensity 1: the logging policy was determ"):
            on_ucb = evaluate(ucb, uniform, estimators="ips", n_bootstrap=0)
        assert on_ucb.support.n_deterministic > n // 2
        for log, result, covers in ((igw, on_igw, True), (ucb, on_ucb, False)):
            terms = log.rewards * 0.1 / log.propensities
            value, se = result.estimate("ips"), terms.std(ddof=1) / np.sqrt(n)
            assert value == pytest.approx(terms.mean())
            # on UCB's log, weights of 0.1 / 1: the arms UCB never tried count 0
            assert (abs(value - 0.1) <= 3 * se) == covers, (seed, covers, value, se)


def test_the_guaranteed_floor_is_epsilon_over_the_arms_and_the_igw_floor():
    """ε/n from the ε floor, p from inverse gap weighting's, (1 − ε)·p + ε/n from both, 0 from
    neither; a floor that cannot hold is refused."""
    assert guaranteed_min_propensity(10) == 0.0  # plain UCB: no floor
    assert guaranteed_min_propensity(10, epsilon=0.2) == pytest.approx(0.02)
    assert guaranteed_min_propensity(4, epsilon=0.2) == pytest.approx(0.05)
    assert guaranteed_min_propensity(10, min_propensity=0.02) == pytest.approx(0.02)
    both = guaranteed_min_propensity(10, epsilon=0.1, min_propensity=0.02)
    assert both == pytest.approx(0.9 * 0.02 + 0.01)
    assert guaranteed_min_propensity(10, epsilon=1.0) == pytest.approx(0.1)
    assert guaranteed_min_propensity(10, min_propensity=0.1) == pytest.approx(0.1)
    with pytest.raises(InputValueError, match=r"min_propensity=0.2 .* 10 available arms"):
        guaranteed_min_propensity(10, min_propensity=0.2)
    with pytest.raises(InputValueError, match="epsilon"):
        guaranteed_min_propensity(10, epsilon=1.5)
    with pytest.raises(InputValueError, match="n_available"):
        guaranteed_min_propensity(0, epsilon=0.1)


def _random_masks(rng: np.random.Generator, n: int, K: int) -> np.ndarray:
    """``n`` masks of ``K`` arms with at least two available."""
    masks = rng.random((n, K)) < 0.7
    masks[:, :2] |= masks.sum(axis=1, keepdims=True) < 2
    return masks


def test_the_propensities_logged_keep_the_guaranteed_floor_under_epsilon():
    """LinUCB with ε = 0.3 on random contexts and masks, learning as it goes: every available
    arm's probability (``probabilities``) and every logged propensity are at least ε/n for the
    round's n available arms, and the least available arm's is exactly ε/n (no round ties all
    its arms)."""
    rng = np.random.default_rng(0)
    K, d, epsilon = 6, 5, 0.3
    theta = rng.normal(size=d)
    policy = db.make_policy("linucb", epsilon=epsilon, seed=1)
    masks = _random_masks(rng, 300, K)
    least, floors = [], []
    for mask in masks:
        X = rng.normal(size=(K, d))
        probs = policy.probabilities(X, mask=mask)
        d_ = policy.decide(X, mask=mask)
        floor = guaranteed_min_propensity(int(mask.sum()), epsilon=epsilon)
        assert d_.propensity >= floor - 1e-12 and d_.propensity == pytest.approx(probs[d_.arm])
        assert (probs[~mask] == 0).all() and probs.sum() == pytest.approx(1.0)
        least.append(probs[mask].min())
        floors.append(floor)
        policy.learn(d_.id, float(X[d_.arm] @ theta + 0.1 * rng.normal()))
    np.testing.assert_allclose(least, floors, rtol=1e-12)
    # over the whole log, the floor of the most arms available (here all K)
    assert min(least) == pytest.approx(guaranteed_min_propensity(K, epsilon=epsilon))


@pytest.mark.parametrize("epsilon", [0.0, 0.1])
def test_the_propensities_logged_keep_the_guaranteed_floor_under_igw(epsilon):
    """LinUCB with inverse gap weighting, ``min_propensity=0.05`` and a large γ (nearly greedy,
    so that the arms not drawn most sit near the floor), alone and with ε = 0.1, on random
    contexts and masks: every logged propensity is at least (1 − ε)·p + ε/n for the round's n
    available arms, and the least is within 1 % of the floor of all K arms."""
    rng = np.random.default_rng(2)
    K, d, p = 6, 5, 0.05
    theta = rng.normal(size=d)
    policy = db.make_policy(
        "linucb", explore="igw", gamma=1e4, min_propensity=p, epsilon=epsilon, seed=3
    )
    masks = _random_masks(rng, 600, K)
    masks[::2] = True  # half the rounds with every arm available
    logged = []
    for mask in masks:
        X = rng.normal(size=(K, d))
        d_ = policy.decide(X, mask=mask)
        floor = guaranteed_min_propensity(int(mask.sum()), epsilon=epsilon, min_propensity=p)
        assert mask[d_.arm] and d_.propensity >= floor - 1e-12, (d_.propensity, floor)
        logged.append(d_.propensity)
        policy.learn(d_.id, float(X[d_.arm] @ theta + 0.1 * rng.normal()))
    floor_K = guaranteed_min_propensity(K, epsilon=epsilon, min_propensity=p)
    assert floor_K <= min(logged) <= 1.01 * floor_K, (min(logged), floor_K)


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
