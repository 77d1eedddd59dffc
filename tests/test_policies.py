import numpy as np
import pytest

import deepbandits as db
from conftest import POLICY_CASES, SMALL_NET, play


class UniformRandom:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def select(self, contexts):
        return int(self.rng.integers(len(contexts)))

    def update(self, *args, **kwargs):
        pass


def regret_of(policy, env, T):
    total, curve = 0.0, []
    for _ in range(T):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(
            rnd.contexts, arm, env.reward(arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range
        )
        total += rnd.expected_rewards.max() - rnd.expected_rewards[arm]
        curve.append(total)
    return np.array(curve)


def test_linucb_sublinear_on_linear_env_and_beats_random():
    T = 1500
    for seed in range(4):
        env = db.make_env("linear", d=5, n_arms=5, seed=seed)
        curve = regret_of(db.LinUCB(alpha=0.5, seed=seed), env, T)
        env.reset()
        rand = regret_of(UniformRandom(seed), env, T)
        # regret of the second half is much smaller than of the first half: sublinear growth
        assert curve[-1] - curve[T // 2] < 0.5 * curve[T // 2]
        assert curve[-1] < 0.25 * rand[-1]


@pytest.mark.parametrize("name", ["neural-linucb", "neural-sigma2-linucb", "neural-lingreedy"])
def test_neural_linear_beats_random_on_h1(name):
    wins = 0
    for seed in range(3):
        env = db.make_env("h1", d=5, seed=seed)
        policy = db.make_policy(name, seed=seed, **SMALL_NET)
        ours = regret_of(policy, env, 400)[-1]
        env.reset()
        rand = regret_of(UniformRandom(seed), env, 400)[-1]
        wins += ours < 0.8 * rand
        assert policy.n_trainings_ > 5
    assert wins >= 2


@pytest.mark.parametrize(("name", "params"), POLICY_CASES)
def test_same_seed_same_trajectory(name, params):
    def trajectory():
        env = db.make_env("h1", d=5, seed=1)
        policy = db.make_policy(name, seed=4, **params)
        result = db.run(policy, env, 150)
        return result.records

    a, b = trajectory(), trajectory()
    for col in ("arm", "reward", "mean", "width", "sigma2_used"):
        np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy())


@pytest.mark.parametrize(("name", "params"), POLICY_CASES)
def test_save_load_continues_identically(name, params, tmp_path):
    env = db.make_env("h1", d=5, seed=2)
    policy = db.make_policy(name, seed=3, **params)
    play(policy, env, 70)
    path = tmp_path / "policy.pt"
    policy.save(path)
    restored = db.load_policy(path)
    assert type(restored) is type(policy)
    assert restored.get_params() == policy.get_params()
    env_state = db.make_env("h1", d=5, seed=2)
    for _ in range(70):
        env_state.next_round()
    arms_a = play(policy, env, 90)
    arms_b = play(restored, env_state, 90)
    np.testing.assert_array_equal(arms_a, arms_b)
    X = env.next_round().contexts
    for u, v in zip(policy.predict(X), restored.predict(X), strict=True):
        np.testing.assert_array_equal(u, v)


def test_unfitted_policy_round_trips(tmp_path):
    p = db.NeuralSigma2LinUCB(seed=1, reward_range=(0, 1))
    p.save(tmp_path / "p.pt")
    q = db.NeuralSigma2LinUCB.load(tmp_path / "p.pt")
    assert q.get_params() == p.get_params() and q.n_features_in_ is None


def test_range_variance_uses_pre_update_mean():
    """σ̂²ₜ of Eq. 13 uses θₜ₋₁ (before adding round t), then the floor R²/d is applied."""
    p = db.Sigma2LinUCB(reward_range=(0.0, 2.0), R=1.0, seed=0)
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    p.select(X)
    learned = p.update(X, 0, 1.5)
    assert learned.sigma2_hat == pytest.approx(0.0)  # θ₀ = 0 → (2 − 0)(0 − 0)
    assert learned.sigma2 == pytest.approx(0.5)  # floor R²/d = 1/2
    mu = float(p.ridge_.theta[0] @ X[0])
    learned = p.update(X, 0, 1.5)
    assert learned.sigma2_hat == pytest.approx((2 - mu) * (mu - 0))
    assert learned.sigma2 == pytest.approx(max((2 - mu) * mu, 0.5))


def test_range_confidence_takes_the_bound_within_c_predictive_stds_of_the_mean():
    """range_confidence=c: σ̂² is the largest (b − μ)(μ − a) for μ within c·√(φᵀA⁻¹φ) of
    θₜ₋₁ᵀφ (both before round t is added); 0 is Eq. 13."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    for c in (0.0, 0.3, 1.0):
        p = db.Sigma2LinUCB(reward_range=(0.0, 1.0), R=0.1, range_confidence=c, seed=0)
        for reward in (1.0, 1.0, 1.0, 0.0, 1.0):
            phi = X[0]
            mu = float(p.ridge_.theta[0] @ phi) if p.ridge_ is not None else 0.0
            var = float(phi @ p.ridge_.A_inv[0] @ phi) if p.ridge_ is not None else 1.0
            nearest = min(max(0.5, mu - c * np.sqrt(var)), mu + c * np.sqrt(var))
            learned = p.update(X, 0, reward)
            assert learned.sigma2_hat == pytest.approx((1 - nearest) * nearest, rel=1e-12)
            assert learned.sigma2_hat >= (1 - mu) * mu - 1e-12
    first = db.Sigma2LinUCB(reward_range=(0.0, 1.0), range_confidence=1.0).update(X, 0, 1.0)
    assert first.sigma2_hat == pytest.approx(0.25)  # θ₀ = 0, φᵀA⁻¹φ = 1: the middle is in reach
    with pytest.raises(db.errors.InputValueError, match="range_confidence"):
        db.make_policy("neural-linucb", range_confidence=1.0)
    with pytest.raises(db.errors.InputValueError, match="range_confidence must be >= 0"):
        db.make_policy("neural-sigma2-linucb", range_confidence=-0.5)


def test_oracle_weights_and_schedule():
    X = np.eye(3)
    p = db.Sigma2LinUCB(variance="oracle", R=1.0)
    assert p.update(X, 1, 0.3, sigma2=2.0).sigma2 == 2.0
    np.testing.assert_allclose(p.ridge_.A[0], np.eye(3) + np.diag([0, 0.5, 0]))
    assert p.update(X, 1, 0.3, sigma2=0.01).sigma2 == pytest.approx(1 / 3)
    s = db.Sigma2LinUCB(variance="schedule", schedule="linear:1:0:3")
    used = []
    for _ in range(3):
        used.append(s.update(X, 0, 0.0).sigma2)
    np.testing.assert_allclose(used, [1.0, 0.5, 1 / 3])
    with pytest.raises(ValueError, match="has 3 values but round 4"):
        s.update(X, 0, 0.0)


def test_varying_number_of_arms_and_per_arm_mismatch():
    p = db.LinUCB(seed=0)
    rng = np.random.default_rng(0)
    for K in (3, 7, 1, 4):
        X = rng.standard_normal((K, 4))
        arm = p.select(X)
        assert 0 <= arm < K
        p.update(X, arm, 0.5)
    q = db.LinUCB(per_arm=True)
    q.select(rng.standard_normal((3, 4)))
    with pytest.raises(ValueError, match=r"fitted with 3 arms, but 5"):
        q.select(rng.standard_normal((5, 4)))


def test_ties_broken_by_seeded_rng():
    X = np.ones((4, 2))
    picks = {db.LinUCB(seed=s).select(X) for s in range(30)}
    assert len(picks) == 4
    assert db.LinUCB(seed=5).select(X) == db.LinUCB(seed=5).select(X)


def test_presets_fix_their_parameters():
    assert db.NeuralLinGreedy().get_params()["alpha"] == 0.0
    assert db.NeuralSigma2LinUCB().get_params()["variance"] == "range"
    assert (
        db.make_policy("neural-sigma2-linucb", variance="oracle").get_params()["variance"]
        == "oracle"
    )
    with pytest.raises(ValueError, match=r"fixes alpha=0\.0"):
        db.NeuralLinGreedy(alpha=1.0)
    with pytest.raises(ValueError, match="does not allow variance='none'"):
        db.NeuralSigma2LinUCB(variance="none")


def test_paper_code_schedule_trains_every_round_before_t0():
    p = db.make_policy("neural-linucb", train_schedule="paper-code")
    s = p.train_schedule_
    assert s.n_trainings(2000) == 2000 and s.n_trainings(10000) == 2000 + 80
    paper = db.make_policy("neural-linucb", train_schedule="paper")
    assert paper.train_schedule_.n_trainings(10000) == 81


def test_run_records_and_saves(tmp_path):
    env = db.make_env("h1", d=5, seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0, **SMALL_NET)
    result = db.run(policy, env, 200, seed=1)
    rec = result.records
    assert list(rec.columns) == list(db.experiments.COLUMNS)
    np.testing.assert_allclose(rec["cum_regret"], np.cumsum(rec["regret"]))
    assert (rec["regret"] >= 0).all() and (rec["time_train"] > 0).sum() == policy.n_trainings_
    assert rec["sigma2_used"].min() >= 1.0 / 8 - 1e-12  # floor R²/d′ with d′ = 8
    result.save(tmp_path / "run")
    back = db.RunResult.load(tmp_path / "run")
    np.testing.assert_allclose(back.records["cum_regret"], rec["cum_regret"])
    assert back.config["policy"]["params"]["feature_dim"] == 8 and back.config["seed"] == 1


def test_mean_gap_column_tells_the_exploring_rounds_apart():
    """A greedy LinUCB (α = 0) never plays below its largest mean; a wide one (α = 50: h1's
    rewards are large) does, and the regret of those rounds is part of the run's regret."""
    from deepbandits.metrics import exploration_split

    env = db.make_env("h1", d=5, seed=0)
    greedy = db.run("linucb:alpha=0", env, 300, seed=0).records
    wide = db.run("linucb:alpha=50", env, 300, seed=0).records
    assert (greedy["mean_gap"] == 0).all()
    assert exploration_split(greedy["regret"], greedy["mean_gap"])["explored_share"] == 0.0
    split = exploration_split(wide["regret"], wide["mean_gap"])
    assert split["explored_share"] > 0.05 and (wide["mean_gap"] >= 0).all()
    assert 0 < split["explored_regret"] <= wide["cum_regret"].iloc[-1]


def test_warmup_prior_follows_the_mean_weight_then_returns_to_lambda():
    """Neural-σ²-LinUCB's prior during the warm-up is warmup_prior(λ, mean 1/σ̄², t, t₀); from
    t₀ on it is λ, and A = λₜI + Σ φφᵀ/σ̄² holds exactly throughout."""
    from deepbandits.formulas import warmup_prior

    env = db.make_env("h1", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0, lam=2.0, **SMALL_NET)
    weights = []
    for t in range(1, 101):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        learned = policy.update(rnd.contexts, arm, env.reward(arm), reward_range=rnd.reward_range)
        weights.append(1.0 / learned.sigma2)
        expected = warmup_prior(2.0, np.mean(weights), t, SMALL_NET["train_start"])
        assert policy.ridge_.lam == pytest.approx(expected, rel=1e-12)
        if t == 5:
            assert policy.ridge_.lam < 0.5  # h1's weights are about 1/40
    assert policy.ridge_.lam == 2.0
    assert policy.ridge_.exact_inverse_error() < 1e-8


def test_warmup_prior_changes_nothing_for_unit_weights():
    """Neural-LinUCB (unit weights): the same trajectory with and without lam_warmup."""
    arms = []
    for warm in (True, False):
        policy = db.make_policy("neural-linucb", seed=1, lam_warmup=warm, **SMALL_NET)
        arms.append(play(policy, db.make_env("h1", seed=1), 120))
    np.testing.assert_array_equal(arms[0], arms[1])


class _SettingsOf:
    """An environment as make_policy reads it: the recommended keywords of a paper dataset."""

    def __init__(self, dataset: str, settings: str) -> None:
        self.dataset, self.settings = dataset, settings

    def policy_defaults_for(self, name: str) -> dict:
        from deepbandits.envs.settings import dataset_settings

        return dataset_settings(self.dataset, self.settings, name)


@pytest.mark.parametrize("name", ["linucb", "neural-linucb", "neural-sigma2-linucb", "neural-ucb"])
@pytest.mark.parametrize("dataset", ["mnist", "covertype"])
def test_make_policy_with_env_is_the_policy_of_its_keywords(name, dataset):
    """make_policy(name, env=...) is the policy built with the environment's keywords given
    (a keyword of the user's wins), and keywords are checked together with the environment's:
    MNIST's refit_on_update=True and a user's discount cannot go together."""
    env = _SettingsOf(dataset, "recommended")
    accepted = db.make_policy(name).get_params()  # "*" also holds keywords of other policies
    given = {k: v for k, v in env.policy_defaults_for(name).items() if k in accepted}
    assert given
    assert db.make_policy(name, env=env).get_params() == db.make_policy(name, **given).get_params()
    mine = db.make_policy(name, env=env, seed=3, lam=2.0).get_params()
    assert (mine["seed"], mine["lam"]) == (3, 2.0)
    if given.get("refit_on_update"):
        with pytest.raises(db.InputValueError, match=r"refit_on_update=True.*discount=0.5"):
            db.make_policy(name, env=env, discount=0.5)


# --- the intercept of the linear policies ---------------------------------------------------


@pytest.mark.parametrize("name", ["linucb", "sigma2-linucb"])
@pytest.mark.parametrize("per_arm", [False, True])
def test_intercept_is_the_ridge_on_each_context_with_a_one_appended(name, per_arm):
    """intercept=True plays, scores and learns exactly as the same policy on samples that carry a
    constant column: one per block on the disjoint encoding (a per-arm intercept)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(80, 3)), rng.integers(0, 3, 80)
    ones = np.hstack([X, np.ones((80, 1))])
    runs = []
    for data, intercept in ((X, True), (ones, False)):
        env = db.make_env("classification", X=data, y=y, seed=1, preprocess="none")
        policy = db.make_policy(name, seed=2, per_arm=per_arm, intercept=intercept)
        runs.append(db.run(policy, env, 120).records)
    for col in ("arm", "mean", "width"):
        np.testing.assert_allclose(runs[0][col], runs[1][col], rtol=1e-12, atol=1e-12)


def test_intercept_on_dense_contexts_is_one_shared_constant_feature():
    policy = db.make_policy("linucb", intercept=True, seed=0)
    X = np.arange(12.0).reshape(3, 4)
    policy.update(X, 1, 1.0)
    assert policy.dim_ == 5
    phi, _ = policy.features.transform(X)
    np.testing.assert_array_equal(phi, np.hstack([X, np.ones((3, 1))]))


def test_intercept_lets_linucb_fit_the_majority_arm_on_centred_features():
    """A class that is 80 % of the samples, on standardised (centred) features that say little:
    without an intercept every arm's fitted mean is 0 at the mean context and LinUCB keeps
    spreading its plays; with one it learns the majority arm. Three seeds, each with a margin."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        y = rng.choice(3, size=2000, p=[0.8, 0.1, 0.1])
        X = rng.normal(size=(2000, 4)) + 0.3 * y[:, None]
        regret = {}
        for intercept in (False, True):
            env = db.make_env("classification", X=X, y=y, seed=seed)
            policy = db.make_policy("linucb", seed=seed, intercept=intercept)
            regret[intercept] = db.run(policy, env, 1500).records["cum_regret"].iloc[-1]
        assert regret[True] < 0.7 * regret[False], (seed, regret)


def test_own_data_recommends_the_intercept_to_linucb_only():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.integers(0, 2, 30)
    env = db.make_env("classification", X=X, y=y, seed=0)
    assert db.make_policy("linucb", env=env).get_params()["intercept"] is True
    assert db.make_policy("sigma2-linucb", env=env).get_params()["intercept"] is False
    assert db.make_policy("linucb", env=env, intercept=False).get_params()["intercept"] is False
    assert "intercept" not in db.make_policy("neural-linucb", env=env).get_params()
    paper = db.make_env("classification", X=X, y=y, seed=0, settings="paper")
    assert db.make_policy("linucb", env=paper).get_params()["intercept"] is False
    with pytest.raises(db.InputValueError, match="intercept"):
        db.make_policy("neural-linucb", intercept=True)
