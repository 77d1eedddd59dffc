"""Decisions as values: ids, delayed and out-of-order rewards, the pending table, batches, masks,
propensities, merging replicas and discounting (issue 17)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepbandits as db
from conftest import SMALL_NET, SMALL_REWARD_NET, play
from deepbandits.envs.classification import ClassificationEnv
from deepbandits.errors import DecisionError, InputValueError
from deepbandits.experiments.delayed import run_delayed
from deepbandits.policies.decision import Decision

K, D = 4, 5


def contexts(seed: int = 0, k: int = K) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((k, D))


# ---------------------------------------------------------------- the decision and the table
def test_a_decision_is_an_immutable_value_with_what_the_update_needs():
    policy = db.make_policy("neural-sigma2-linucb", seed=0, **SMALL_NET)
    X = contexts()
    d = policy.decide(X)
    assert isinstance(d, Decision) and len(d.id) == 32 and 0 <= d.arm < K
    assert d.propensity == 1.0 and d.model_version == 0 and d.round == 0
    assert d.mean.shape == d.width.shape == (K,)
    assert d.features is not None and d.features.shape == (SMALL_NET["feature_dim"],)
    np.testing.assert_array_equal(d.context, X[d.arm])
    with pytest.raises(AttributeError):
        d.arm = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(d)).id == d.id
    with pytest.raises(ValueError):
        d.mean[0] = 5.0
    X[d.arm] = 99.0  # the caller's array may change: the decision keeps what was shown
    assert d.context.max() < 99.0
    assert policy.pending_.ids() == [d.id]


def test_learn_by_decision_or_id_and_a_second_reward_is_refused():
    policy = db.make_policy("linucb", seed=0)
    first, second = policy.decide(contexts(0)), policy.decide(contexts(1))
    assert second.round == 1 and first.id != second.id
    policy.learn(second.id, 1.0)  # out of order, by id
    policy.learn(first, 0.0)
    assert policy.t_ == 2 and len(policy.pending_) == 0
    before = policy.state_dict()
    with pytest.raises(DecisionError, match="already learned"):
        policy.learn(first, 1.0)
    with pytest.raises(DecisionError, match="not pending"):
        policy.learn("f" * 32, 1.0)
    assert policy.state_dict()["t"] == before["t"] == 2
    np.testing.assert_array_equal(policy.ridge_.A, before["state"]["head"]["ridge"]["A"])


def test_learning_uses_what_the_policy_saw_when_it_decided():
    """Features are those of the network at decision time, whatever it learned since."""
    policy = db.make_policy(
        "neural-linucb", seed=0, **{**SMALL_NET, "train_start": 0, "train_every": 1}
    )
    waiting = policy.decide(contexts(0))
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=0), 5)  # trains 5 times meanwhile
    phi_now = policy.features.transform(contexts(0))[0][waiting.arm]
    assert not np.allclose(phi_now, waiting.features)
    A = policy.ridge_.A[0].copy()
    weight = 1.0  # neural-linucb: unweighted ridge
    policy.learn(waiting, 0.5)
    np.testing.assert_allclose(
        policy.ridge_.A[0] - A, weight * np.outer(waiting.features, waiting.features), atol=1e-9
    )


def test_decisions_expire_after_the_timeout_in_decisions_or_seconds():
    policy = db.make_policy("linucb", seed=0, reward_timeout=2)
    old = policy.decide(contexts(0))
    policy.decide(contexts(1))
    policy.decide(contexts(2))  # two decisions after `old`: still pending
    assert old.id in policy.pending_
    policy.decide(contexts(3))
    assert old.id not in policy.pending_
    with pytest.raises(DecisionError, match="expired"):
        policy.learn(old, 1.0)
    assert policy.pending_.counts() == {"decided": 4, "pending": 3, "learned": 0, "expired": 1}

    timed = db.make_policy("linucb", seed=0, reward_timeout=60, timeout_unit="seconds")
    d = timed.decide(contexts(0))
    late = d._replace(time=d.time - 61)  # as if made 61 s ago
    timed.pending_._pending[d.id] = late
    with pytest.raises(DecisionError, match="expired"):
        timed.learn(d.id, 1.0)
    assert timed.t_ == 0


def test_a_full_table_expires_its_oldest_or_refuses():
    policy = db.make_policy("linucb", seed=0, max_pending=2)
    ds = [policy.decide(contexts(i)) for i in range(3)]
    assert policy.pending_.ids() == [ds[1].id, ds[2].id]
    with pytest.raises(DecisionError, match="expired"):
        policy.learn(ds[0], 0.0)
    strict = db.make_policy("linucb", seed=0, max_pending=2, when_full="refuse")
    strict.decide(contexts(0))
    strict.decide(contexts(1))
    before = pickle.dumps(strict.state_dict())
    with pytest.raises(DecisionError, match="max_pending=2"):
        strict.decide(contexts(2))
    assert pickle.dumps(strict.state_dict()) == before


def test_pending_decisions_survive_save_and_load(tmp_path):
    policy = db.make_policy("neural-sigma2-linucb", seed=0, **SMALL_NET)
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=0), 10)
    waiting = policy.decide(contexts(0))
    policy.save(tmp_path / "p.pt")
    restored = db.load_policy(tmp_path / "p.pt")
    assert restored.pending_.ids() == [waiting.id]
    policy.learn(waiting, 0.3, reward_range=(0, 1))
    restored.learn(waiting.id, 0.3, reward_range=(0, 1))
    np.testing.assert_array_equal(restored.ridge_.A, policy.ridge_.A)
    np.testing.assert_array_equal(restored.predict(contexts(5))[0], policy.predict(contexts(5))[0])


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("linucb", {"per_arm": True}),
        ("neural-sigma2-linucb", SMALL_NET),
        ("neural-ts", SMALL_REWARD_NET),
        ("save-neural-linucb", {**SMALL_NET, "horizon": 200}),
        ("bootstrapped-nn", {**SMALL_REWARD_NET, "n_models": 2}),
        ("kernel-ucb", {}),
    ],
)
def test_decide_and_learn_in_order_is_select_and_update(name, params):
    a = db.make_policy(name, seed=4, **params)
    b = db.make_policy(name, seed=4, **params)
    env_a, env_b = (db.make_env("h1", d=D, n_arms=K, seed=2) for _ in range(2))
    arms_a = play(a, env_a, 90)
    arms_b = []
    for _ in range(90):
        rnd = env_b.next_round()
        d = b.decide(rnd.contexts)
        b.learn(d, env_b.reward(d.arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range)
        arms_b.append(d.arm)
    np.testing.assert_array_equal(arms_a, arms_b)
    X = contexts(9)
    np.testing.assert_array_equal(a.predict(X)[0], b.predict(X)[0])


# ---------------------------------------------------------------- delayed rewards
def shuttle_shaped(seed: int) -> ClassificationEnv:
    """A stream shaped like UCI shuttle: 9 features, 7 classes, one class ~80 % of samples."""
    rng = np.random.default_rng(100 + seed)
    centres = rng.normal(scale=2.0, size=(7, 9))
    y = rng.choice(7, size=3000, p=[0.78, 0.08, 0.05, 0.04, 0.03, 0.015, 0.005])
    X = centres[y] + rng.normal(size=(3000, 9))
    return ClassificationEnv(X, y, seed=seed)


def delayed_regret(
    name: str,
    params: dict,
    env: db.Environment,
    T: int,
    delay: int,
    seed: int,
    missing: float = 0.0,
) -> float:
    """Final regret with rewards up to ``delay`` rounds late, shuffled, a share lost."""
    policy = db.make_policy(name, **params)
    run = run_delayed(policy, env, T, delay=delay, missing=missing, seed=seed)
    counts = policy.pending_.counts()
    assert counts["decided"] == T == counts["learned"] + counts["pending"] + counts["expired"]
    assert counts["learned"] == run.learned == policy.t_ and run.lost <= T - run.learned
    return run.final_regret


@pytest.mark.parametrize("env_name", ["h1", "shuttle"])
def test_rewards_delayed_and_shuffled_cost_little_regret(env_name):
    """Rewards up to 20 rounds late, in random order: over 3 seeds the mean regret stays
    within 25 % (+10) of the undelayed policy's."""
    params = {**SMALL_NET, "train_start": 100, "train_every": 50}
    T = 500
    make = (
        (lambda s: db.make_env("h1", d=D, n_arms=K, seed=s)) if env_name == "h1" else shuttle_shaped
    )
    now = [delayed_regret("neural-sigma2-linucb", params, make(s), T, 0, s) for s in range(3)]
    late = [delayed_regret("neural-sigma2-linucb", params, make(s), T, 20, s) for s in range(3)]
    assert np.mean(late) <= 1.25 * np.mean(now) + 10, (now, late)


def test_without_delay_the_delayed_loop_is_the_runner():
    params = {**SMALL_NET, "train_start": 40, "train_every": 20}
    env = db.make_env("h1", d=D, n_arms=K, seed=0)
    run = run_delayed(db.make_policy("neural-sigma2-linucb", **params), env, 120, seed=3)
    ref = db.run(db.make_policy("neural-sigma2-linucb", **params), env, 120, seed=3)
    np.testing.assert_array_equal(run.cum_regret, ref.records["cum_regret"].to_numpy())


def test_missing_rewards_expire_and_cost_little():
    """10 % of the rewards never arrive and the rest come up to 20 rounds late: the lost
    decisions expire after 30 decisions, the table stays small, and the regret stays within
    25 % (+10) of the undelayed policy's over 3 seeds on h1."""
    params = {**SMALL_NET, "train_start": 100, "train_every": 50, "reward_timeout": 30}
    T = 500
    now = [
        delayed_regret(
            "neural-sigma2-linucb", params, db.make_env("h1", d=D, n_arms=K, seed=s), T, 0, s
        )
        for s in range(3)
    ]
    lost = [
        delayed_regret(
            "neural-sigma2-linucb", params, db.make_env("h1", d=D, n_arms=K, seed=s), T, 20, s, 0.1
        )
        for s in range(3)
    ]
    assert np.mean(lost) <= 1.25 * np.mean(now) + 10, (now, lost)
    policy = db.make_policy("linucb", seed=0, reward_timeout=30)
    for t in range(300):
        d = policy.decide(contexts(t))
        if t % 10:  # every tenth reward is lost
            policy.learn(d, 0.5)
    counts = policy.pending_.counts()
    assert counts["learned"] == 270 and counts["expired"] + counts["pending"] == 30
    assert counts["pending"] <= 4 and counts["expired"] >= 26


# ---------------------------------------------------------------- batches
def test_decide_batch_uses_the_model_at_the_call_for_every_request():
    policy = db.make_policy("neural-sigma2-linucb", seed=0, **SMALL_NET)
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=0), 80)
    batch = np.stack([contexts(i) for i in range(6)])
    decisions = policy.decide_batch(batch)
    assert policy.t_ == 80 and len(policy.pending_) == 6
    for X, d in zip(batch, decisions, strict=True):
        mean, width = policy.predict(X)
        np.testing.assert_allclose(d.mean, mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(d.width, width, rtol=1e-5, atol=1e-7)
        assert d.model_version == 80
    ragged = policy.decide_batch([contexts(1, 3), contexts(2, 7)])  # own K per request
    assert [len(d.mean) for d in ragged] == [3, 7]


def test_learn_batch_equals_learning_one_at_a_time():
    a, b = (
        db.make_policy("linucb", seed=0, per_arm=True),
        db.make_policy("linucb", seed=0, per_arm=True),
    )
    batch = [contexts(i) for i in range(40)]
    rewards = np.random.default_rng(1).random(40)
    da, db_ = a.decide_batch(batch), b.decide_batch(batch)
    for d, r in zip(da, rewards, strict=True):
        a.learn(d, r)
    b.learn_batch(db_, rewards)
    assert a.t_ == b.t_ == 40 and len(b.pending_) == 0
    np.testing.assert_allclose(b.ridge_.A, a.ridge_.A, rtol=1e-12)
    np.testing.assert_allclose(b.ridge_.theta, a.ridge_.theta, rtol=1e-9, atol=1e-12)


def test_learn_batch_checks_everything_first():
    policy = db.make_policy("sigma2-linucb", seed=0, reward_range=(0, 1))
    ds = policy.decide_batch([contexts(i) for i in range(3)])
    before = pickle.dumps(policy.state_dict())
    for bad in ([0.1, 0.2, 7.0], [0.1, 0.2]):
        with pytest.raises(InputValueError):
            policy.learn_batch(ds, bad)
    with pytest.raises(DecisionError, match="twice"):
        policy.learn_batch([ds[0], ds[0].id], [0.1, 0.2])
    assert pickle.dumps(policy.state_dict()) == before


# ---------------------------------------------------------------- masks and propensities
@pytest.mark.parametrize("name", ["linucb", "neural-ts", "bootstrapped-nn", "kernel-ucb"])
def test_a_masked_arm_is_never_chosen(name):
    params = {"linucb": {}, "kernel-ucb": {}}.get(name, {**SMALL_REWARD_NET, "epsilon": 0.3})
    policy = db.make_policy(name, seed=0, **params)
    env = db.make_env("h1", d=D, n_arms=K, seed=0)
    mask = np.array([True, False, True, False])
    for _ in range(60):
        rnd = env.next_round()
        d = policy.decide(rnd.contexts, mask=mask)
        assert mask[d.arm] and d.propensity > 0
        policy.learn(d, env.reward(d.arm))
    with pytest.raises(InputValueError, match="no arm"):
        policy.decide(rnd.contexts, mask=np.zeros(K, dtype=bool))


def test_ties_and_the_exploration_floor_give_exact_propensities():
    X = np.ones((K, D))  # identical arms: a K-way tie
    assert db.make_policy("linucb", seed=0).decide(X).propensity == pytest.approx(1 / K)
    mask = np.array([True, True, False, True])
    assert db.make_policy("linucb", seed=0).decide(X, mask).propensity == pytest.approx(1 / 3)
    eps = 0.2
    policy = db.make_policy("linucb", seed=0, epsilon=eps)
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=0), 50)
    X = contexts(3)
    decisions = [policy.decide(X, mask) for _ in range(4000)]
    best = np.argmax(np.where(mask, decisions[0].mean + 0.02 * decisions[0].width, -np.inf))
    for d in decisions[:20]:
        expected = (1 - eps) * (d.arm == best) + eps / 3
        assert d.propensity == pytest.approx(expected, rel=1e-12)
    freq = np.mean([d.arm == best for d in decisions])
    assert abs(freq - (1 - eps + eps / 3)) < 0.03


@pytest.mark.parametrize("name", ["neural-ts", "bootstrapped-nn"])
def test_sampling_policies_report_the_probability_of_their_choice(name):
    params = {**SMALL_REWARD_NET, "alpha": 3.0} if name == "neural-ts" else {**SMALL_REWARD_NET}
    policy = db.make_policy(name, seed=1, **params)
    play(policy, db.make_env("h1", d=D, n_arms=K, seed=0), 80)
    X = contexts(4)
    decisions = [policy.decide(X) for _ in range(1500)]
    for arm in range(K):
        chosen = [d for d in decisions if d.arm == arm]
        freq = len(chosen) / len(decisions)
        if chosen:
            assert abs(np.mean([d.propensity for d in chosen]) - freq) < 0.06, (arm, freq)


# ---------------------------------------------------------------- merging replicas
def stream(n: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Xs = [rng.standard_normal((K, D)) for _ in range(n)]
    return Xs, rng.integers(0, K, n), rng.random(n)


@pytest.mark.parametrize("params", [{}, {"per_arm": True}])
def test_two_replicas_merged_equal_one_policy_that_learned_everything(params):
    Xs, arms, rewards = stream(60)
    whole, left, right = (db.make_policy("linucb", seed=0, **params) for _ in range(3))
    for i, (X, a, r) in enumerate(zip(Xs, arms, rewards, strict=True)):
        whole.update(X, a, r)
        (left if i % 2 else right).update(X, a, r)
    left.merge(right)
    assert left.t_ == whole.t_ == 60
    np.testing.assert_allclose(left.ridge_.A, whole.ridge_.A, rtol=1e-12)
    np.testing.assert_allclose(left.ridge_.theta, whole.ridge_.theta, rtol=1e-8, atol=1e-12)
    for i in range(3):
        np.testing.assert_allclose(
            left.predict(contexts(i))[1], whole.predict(contexts(i))[1], rtol=1e-9
        )


def test_neural_replicas_with_a_shared_network_merge_their_heads():
    params = {**SMALL_NET, "train_start": 10_000, "warmup_every": 0, "lam_warmup": False}
    base = db.make_policy("neural-linucb", seed=0, **params)
    play(base, db.make_env("h1", d=D, n_arms=K, seed=0), 5)
    whole, left, right = (db.make_policy("neural-linucb", seed=0, **params) for _ in range(3))
    for p in (whole, left, right):
        p.load_state_dict(base.state_dict())
    Xs, arms, rewards = stream(40, seed=3)
    for i, (X, a, r) in enumerate(zip(Xs, arms, rewards, strict=True)):
        whole.update(X, a, r)
        (left if i % 2 else right).update(X, a, r)
    left.merge(right, base=base)
    assert left.t_ == whole.t_ == 45
    assert left.learner_.history.size == whole.learner_.history.size
    np.testing.assert_allclose(left.ridge_.A, whole.ridge_.A, rtol=1e-10)
    np.testing.assert_allclose(
        left.predict(contexts(1))[0], whole.predict(contexts(1))[0], rtol=1e-7, atol=1e-9
    )
    other = db.make_policy("neural-linucb", seed=1, **params)
    play(other, db.make_env("h1", d=D, n_arms=K, seed=0), 5)
    with pytest.raises(InputValueError, match="share the network"):
        left.merge(other)


def test_policies_whose_state_is_not_a_sum_refuse_to_merge():
    a, b = db.make_policy("kernel-ucb", seed=0), db.make_policy("kernel-ucb", seed=0)
    play(b, db.make_env("h1", d=D, n_arms=K, seed=0), 3)
    with pytest.raises(InputValueError, match="cannot merge"):
        a.merge(b)
    with pytest.raises(InputValueError, match="parameters"):
        db.make_policy("linucb", lam=2.0).merge(db.make_policy("linucb"))


# ---------------------------------------------------------------- drift
def best_share_after_switch(discount: float, seed: int) -> float:
    """Share of best-arm plays from 100 rounds after the best arm changes (round 800 of 1200;
    two arms, rewards 0.5 for the best and 0 for the other, noise N(0, 0.1²))."""
    policy = db.make_policy(
        "linucb", seed=seed, per_arm=True, alpha=0.1, discount=discount, discount_every=20
    )
    rng = np.random.default_rng(seed)
    X = np.ones((2, 1))
    best = []
    for t in range(1200):
        good = 0 if t < 800 else 1
        d = policy.decide(X)
        policy.learn(d, 0.5 * (d.arm == good) + 0.1 * rng.standard_normal())
        best.append(d.arm == good)
    return float(np.mean(best[900:]))


def test_discount_recovers_from_a_change_of_best_arm():
    """γ = 0.7 every 20 rewards: from 100 rounds after the switch on, the discounted policy
    plays the new best arm in over 90 % of the rounds, the undiscounted one (whose old arm
    still looks good after 800 rounds of evidence) in under 10 %, on each of 3 seeds."""
    for seed in range(3):
        discounted = best_share_after_switch(0.7, seed)
        plain = best_share_after_switch(1.0, seed)
        assert discounted > 0.9 and plain < 0.1, (seed, discounted, plain)


# ---------------------------------------------------------------- the pending table, any order
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(
                ["decide", "decide_batch", "learn", "learn_batch", "relearn", "unknown"]
            ),
            st.integers(0, 10**6),
        ),
        min_size=1,
        max_size=40,
    ),
    timeout=st.one_of(st.none(), st.integers(1, 6)),
    max_pending=st.integers(1, 8),
    when_full=st.sampled_from(["expire-oldest", "refuse"]),
)
def test_any_interleaving_keeps_counts_and_statistics_consistent(
    ops, timeout, max_pending, when_full
):
    """Decide, decide a batch, learn one or a batch (by id, any pending ones), learn again,
    learn an unknown id, with timeouts and a bounded table: every decision made is pending,
    learned or expired, and the ridge statistics are exactly those of the rewards learned."""
    policy = db.make_policy(
        "linucb",
        seed=0,
        reward_timeout=timeout,
        max_pending=max_pending,
        when_full=when_full,
    )
    learned: list[Decision] = []
    made: dict[str, Decision] = {}
    for op, k in ops:
        try:
            if op == "decide":
                d = policy.decide(contexts(k % 97))
                made[d.id] = d
            elif op == "decide_batch":
                batch = policy.decide_batch(
                    np.stack([contexts(k % 97 + i) for i in range(k % 3 + 1)])
                )
                made.update((d.id, d) for d in batch)
            elif op in ("learn", "learn_batch") and len(policy.pending_):
                ids = policy.pending_.ids()
                chosen = [ids[k % len(ids)]] if op == "learn" else ids[k % 2 :: 2][:3]
                if op == "learn":
                    policy.learn(chosen[0], (k % 7) / 7)
                else:
                    policy.learn_batch(chosen, [(k % 7) / 7] * len(chosen))
                learned += [made[i] for i in chosen]
            elif op == "relearn" and learned:
                with pytest.raises(DecisionError):
                    policy.learn(learned[k % len(learned)], 0.5)
            elif op == "unknown":
                with pytest.raises(DecisionError):
                    policy.learn(f"{k:032x}", 0.5)
        except DecisionError:  # past its timeout, or a refusing table full: nothing changed
            pass
        counts = policy.pending_.counts()
        assert counts["decided"] == len(made)
        assert counts["decided"] == counts["pending"] + counts["learned"] + counts["expired"]
        assert counts["learned"] == len(learned) == policy.t_
        assert counts["pending"] <= max_pending
    if learned:  # the statistics are exactly those of the decisions learned
        Phi = np.stack([d.features for d in learned])
        np.testing.assert_allclose(policy.ridge_.A[0], np.eye(D) + Phi.T @ Phi, rtol=1e-10)
