"""Learning policies and logs: replay against the online regret curve, and warm starts."""

import numpy as np
import pytest

import deepbandits as db
from deepbandits.errors import InputValueError
from deepbandits.ope import evaluate, policy_probabilities
from deepbandits.ope.replay import replay
from deepbandits.ope.simulate import simulate_log, true_value
from deepbandits.ope.warm import learn_log

K, T = 4, 300


def env_of(seed, reward_fn="linear"):
    return db.make_env(reward_fn, d=5, n_arms=K, noise="fixed", noise_std=0.3, seed=seed)


def play_online(policy, env, rounds):
    """Cumulative regret of ``policy`` played on ``env`` for ``rounds`` rounds."""
    regret = []
    for _ in range(rounds):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(rnd.contexts, arm, env.reward(arm))
        regret.append(rnd.expected_rewards.max() - rnd.expected_rewards[arm])
    return np.cumsum(regret)


@pytest.mark.parametrize("logging", ["uniform", "epsilon-greedy"])
def test_replay_matches_the_online_regret_curve(logging):
    """Tolerance: at rounds 100, 200 and 300 the mean cumulative regret of LinUCB replayed on
    a log lies within 3 combined standard errors of its mean online regret (16 seeds each),
    and within 35 % of it at round 300."""
    # online on the same problem instances (θ) as the logs below
    online = np.array(
        [play_online(db.make_policy("linucb", seed=s), env_of(s + 100), T) for s in range(16)]
    )
    replayed = []
    for s in range(16):
        sim = simulate_log(env_of(s), 8 * K * T, logging=logging, epsilon=0.5, seed=s + 100)
        res = replay(
            db.make_policy("linucb", seed=s),
            sim.log,
            max_accepted=T,
            expected_rewards=sim.expected_rewards,
            seed=s,
        )
        assert res.n_accepted == T
        replayed.append(res.cumulative_regret())
    replayed = np.array(replayed)
    for t in (99, 199, 299):
        a, b = online[:, t], replayed[:, t]
        se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        assert abs(a.mean() - b.mean()) < 3 * se, (t, a.mean(), b.mean(), se)
    assert abs(replayed[:, -1].mean() / online[:, -1].mean() - 1) < 0.35


def test_replay_accepts_about_n_pmin_rounds_and_checks_pmin():
    sim = simulate_log(env_of(0), 2000, logging="uniform", seed=1)
    res = replay(db.make_policy("linucb", seed=0), sim.log, seed=0)
    assert 400 < res.n_accepted < 600  # n / K = 500 on a uniform log
    assert res.value == pytest.approx(sim.log.rewards[res.rounds].mean())
    with pytest.raises(InputValueError, match="p_min"):
        replay(db.make_policy("linucb"), sim.log, p_min=0.5)
    with pytest.raises(InputValueError, match="mean rewards"):
        res.cumulative_regret()


def test_warm_start_lowers_the_first_1000_rounds_regret():
    """Stated margin: LinUCB warm-started on a 2,000-round ε-greedy log (ε = 0.2, weak model)
    has under half the cold policy's regret over its first 1,000 live rounds, averaged over 5
    seeds, with and without importance weights; and OPE on the held-out part of the log ranks
    the warm policy above the cold one, as the true values do."""
    regret = {"cold": [], None: [], "ips": []}
    for s in range(5):
        for kind in regret:
            env = env_of(s)
            sim = simulate_log(env, 2000, logging="epsilon-greedy", epsilon=0.2, seed=s)
            policy = db.make_policy("linucb", seed=s)
            if kind != "cold":
                done = learn_log(policy, sim.log, weights=kind, clip=20.0)
                assert done.n_rounds == 2000
            regret[kind].append(play_online(policy, env, 1000)[-1])  # env continues the log
    cold = np.mean(regret["cold"])
    assert np.mean(regret[None]) < 0.5 * cold, regret
    assert np.mean(regret["ips"]) < 0.5 * cold, regret

    sim = simulate_log(env_of(9), 3000, logging="epsilon-greedy", epsilon=0.2, seed=9)
    train, test = sim.log.split(0.5, seed=None)
    warm, cold_policy = db.make_policy("linucb", seed=0), db.make_policy("linucb", seed=0)
    learn_log(warm, train)
    values, truths = {}, {}
    for name, policy in (("warm", warm), ("cold", cold_policy)):
        res = evaluate(test, policy, estimators="dr", reward_model="ridge", n_bootstrap=0)
        values[name] = res.estimate("dr")
        truths[name] = true_value(policy_probabilities(policy, test), sim.expected_rewards[1500:])
        assert values[name] == pytest.approx(truths[name], abs=0.05), (name, values, truths)
    assert truths["warm"] > truths["cold"] + 0.2 and values["warm"] > values["cold"] + 0.2


def test_ips_weights_are_clipped_normalised_and_enter_the_ridge_exactly():
    sim = simulate_log(env_of(0), 500, logging="softmax", temperature=0.2, seed=0)
    policy = db.make_policy("linucb", lam=1.0)
    done = learn_log(policy, sim.log, weights="ips", clip=5.0)
    assert done.weights.mean() == pytest.approx(1.0)
    assert done.n_clipped == int((1 / sim.log.propensities > 5.0).sum()) > 0
    X = np.stack([sim.log.round_contexts(t)[a] for t, a in enumerate(sim.log.actions)])
    expected = np.eye(X.shape[1]) + (X * done.weights[:, None]).T @ X  # λI + Σ w x xᵀ
    np.testing.assert_allclose(policy.ridge_.A[0], expected, rtol=1e-9)
    with pytest.raises(InputValueError, match="weight"):
        learn_log(db.make_policy("neural-ucb", hidden=8), sim.log, weights="ips")
    with pytest.raises(InputValueError, match="weights"):
        learn_log(db.make_policy("linucb"), sim.log, weights="snips")
    with pytest.raises(InputValueError, match="clip"):
        learn_log(db.make_policy("linucb"), sim.log, weights="ips", clip=0.5)
