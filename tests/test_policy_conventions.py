"""A policy behaves like the scientific-Python objects it imitates (issue 47).

scikit-learn's estimator conventions that apply to an online learner, for every registry name
and for compositions built by hand: parameters kept as given, learned state only in attributes
ending with ``_``, ``clone`` and ``type(p)(**p.get_params(deep=False))`` give an equal policy
that has learned nothing, ``set_params`` takes every key ``get_params(deep=True)`` returns, and
``repr`` is code that builds an equal policy. The public calls are methods defined in the
package; an exploration rule's hooks are declared and see every reward of a batch; ``db.run``
never throws away what a policy learned; a decision runs torch on the policy's ``threads``.
"""

from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest
import torch
from sklearn.base import clone

import deepbandits as db
import deepbandits.policies as P
from deepbandits._threads import per_round_threads, training_threads
from deepbandits.policies import (
    Exploration,
    NetworkFeatures,
    RangeBound,
    RidgeHead,
    RidgeUCB,
    Trainer,
)
from deepbandits.policies.policy import Policy

NAMES = db.policy_names()
#: Keywords that keep a neural network small, for the names that have them.
SMALL = {"hidden": 8, "feature_dim": 4, "train_start": 10**6, "warmup_every": 0}


def small(name: str, **params: object) -> db.Policy:
    specs = P.policy_info(name).specs
    extra = {k: v for k, v in SMALL.items() if k in specs}
    if "horizon" in specs:
        extra["horizon"] = 50
    return db.make_policy(name, **extra, **params)


def play(policy: db.Policy, rounds: int = 3) -> None:
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        X = rng.normal(size=(3, 5))
        d = policy.decide(X)
        policy.learn(d, float(rng.uniform()), sigma2=0.1, reward_range=(0.0, 1.0))


def hand_composed() -> list[RidgeUCB]:
    neural = RidgeUCB(
        features=NetworkFeatures(dim=4, hidden=8),
        head=RidgeHead(lam=2.0),
        variance=RangeBound(),
        trainer=Trainer(train_start=10**6, warmup_every=0),
        reward_range=(0.0, 1.0),
        seed=3,
    )
    linear = RidgeUCB(head=RidgeHead("per_arm", lam=0.5), explore=P.UCB(alpha=0.3), seed=1)
    return [linear, neural]


ALL = [pytest.param(lambda n=n: small(n, seed=0), id=n) for n in NAMES] + [
    pytest.param(lambda i=i: hand_composed()[i], id=f"hand-composed-{i}") for i in range(2)
]


def same(a: db.Policy, b: db.Policy) -> bool:
    """Equal parameters, parts included (their repr spells every parameter)."""
    return type(a) is type(b) and repr(a) == repr(b)


@pytest.mark.parametrize("build", ALL)
def test_clone_gives_an_equal_policy_that_has_learned_nothing(build):
    policy = build()
    play(policy)
    assert policy.t_ == 3
    for copy in (clone(policy), type(policy)(**policy.get_params(deep=False))):
        assert same(copy, policy)
        assert copy.t_ == 0 and copy.n_features_in_ is None and len(copy.pending_) == 0
    for name, part in clone(policy).parts.items():
        assert part is not policy.parts[name]  # a clone shares no learned state


@pytest.mark.parametrize("build", ALL)
def test_repr_is_code_that_builds_an_equal_policy(build):
    policy = build()
    assert "from_recipe" not in repr(policy)
    rebuilt = eval(repr(policy), {"np": np, **vars(P)})  # the repr names only these
    assert same(rebuilt, policy)


@pytest.mark.parametrize("build", ALL)
def test_every_key_of_get_params_is_accepted_by_set_params_and_round_trips(build):
    policy = build()
    before = policy.get_params(deep=True)
    for key, value in before.items():
        policy.set_params(**{key: value})
    assert same(policy, build()) and policy.get_params(deep=True).keys() == before.keys()


@pytest.mark.parametrize("name", NAMES)
def test_parameters_are_kept_as_given_and_learned_state_ends_with_an_underscore(name):
    given = {"seed": 7, "reward_timeout": np.float64(50.0)}
    if "reward_range" in P.policy_info(name).specs:
        given["reward_range"] = [0.0, 1.0]  # a list: kept as given, checked as a tuple for use
    policy = small(name, **given)
    params = policy.get_params(deep=False)
    assert all(params[k] is v for k, v in given.items())
    public = {k for k in vars(policy) if not k.startswith("_")}
    assert all(k.endswith("_") for k in public), public  # no learned state without a "_"
    frozen = {k: v for k, v in vars(policy).items() if not k.startswith("_") and "_" != k[-1]}
    play(policy)
    grown = {k for k in vars(policy) if not k.startswith("_")} - public
    assert all(k.endswith("_") for k in grown), grown
    assert frozen == {k: v for k, v in vars(policy).items() if k in frozen}
    assert policy.get_params(deep=False) == params  # learning changes no parameter


def test_a_bad_parameter_in_set_params_changes_nothing():
    policy = small("neural-sigma2-linucb", seed=0)
    play(policy)
    before = (repr(policy), policy.t_)
    with pytest.raises(db.InputValueError, match="lam"):
        policy.set_params(lam=-1.0)
    with pytest.raises(db.InputValueError, match="no parameter 'head__lam'"):
        policy.set_params(head__lam=2.0)  # a name's parameters are its keywords
    assert (repr(policy), policy.t_) == before
    composed = hand_composed()[1]
    with pytest.raises(db.InputValueError, match="alpha"):
        composed.set_params(head__lam=3.0, explore__alpha=-1.0)
    assert composed.head.lam == 2.0  # the first part was put back


def test_a_registry_name_is_its_class_and_its_keywords_are_the_constructor():
    policy = db.make_policy("range-mle", seed=0)
    assert type(policy) is P.NeuralSigma2LinUCB and isinstance(policy, RidgeUCB)
    assert repr(policy) == "NeuralSigma2LinUCB(seed=0, loss='mle')"
    signature = inspect.signature(P.LinUCB)
    assert list(signature.parameters) == list(P.POLICIES["linucb"].specs)
    assert signature.parameters["alpha"].default == 0.02
    assert "alpha : float >= 0 or 'theory', default=0.02" in P.LinUCB.__doc__


PUBLIC_CALLS = (
    "select",
    "decide",
    "decide_batch",
    "predict",
    "probabilities",
    "update",
    "learn",
    "learn_batch",
    "merge",
    "state_dict",
    "load_state_dict",
    "save",
    "get_params",
    "set_params",
    "reset",
    "initialize",
)


@pytest.mark.parametrize("call", PUBLIC_CALLS)
def test_the_public_calls_are_methods_defined_in_the_package(call):
    method = inspect.unwrap(getattr(Policy, call))
    owner = method.__qualname__.split(".")[0]
    assert method.__qualname__ == f"{owner}.{call}", method.__qualname__  # defined in a class
    module = inspect.getmodule(method)
    assert module is not None and module.__name__.startswith("deepbandits.policies.")
    assert isinstance(vars(module)[owner], type) and issubclass(Policy, vars(module)[owner])
    assert method.__code__.co_varnames[0] == "self"


class Counting(Exploration):
    """UCB that counts, per arm, the rewards it was given by the policy's learn hook."""

    def __init__(self, alpha: float = 0.1) -> None:
        self.alpha = alpha

    def initialize(self, dim: int) -> None:
        self.dim_ = dim
        self.counts_: dict[int, int] = {}

    def index(self, ev, sit):
        return ev.mean + self.alpha * ev.width

    def observe(self, ev, arm, t):
        return {"arm": arm}

    def learn(self, observations, rewards):
        for obs, _ in zip(observations, rewards, strict=True):
            arm = int(obs.extra["arm"])
            self.counts_[arm] = self.counts_.get(arm, 0) + 1


def test_an_exploration_rule_with_hooks_sees_every_reward_of_a_batch():
    policy = RidgeUCB(explore=Counting(), seed=0)
    X = np.random.default_rng(0).normal(size=(6, 4, 3))
    decisions = policy.decide_batch(X)
    policy.learn_batch(decisions, np.linspace(0, 1, 6))
    d = policy.decide(X[0])
    policy.learn(d, 0.5)
    assert policy.explore.dim_ == 3
    assert sum(policy.explore.counts_.values()) == 7
    arms = [x.arm for x in decisions] + [d.arm]
    assert policy.explore.counts_ == {a: arms.count(a) for a in set(arms)}


def test_a_rule_without_the_hooks_is_refused_when_composed():
    class Bare:
        samples = False

        def index(self, ev, sit):
            return ev.mean

        def validate(self):
            pass

        def get_params(self, deep=True):
            return {}

    with pytest.raises(db.InputTypeError, match="sequential, initialize, propensity, observe"):
        RidgeUCB(explore=Bare())


def test_a_decision_runs_torch_on_the_policy_threads_and_a_training_on_the_callers():
    seen: list[tuple[str, int]] = []
    policy = small("neural-linucb", seed=0, threads=1)
    forward = policy.features.transform

    def spy(X):
        seen.append(("forward", torch.get_num_threads()))
        return forward(X)

    policy.features.transform = spy
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        policy.decide(np.ones((3, 5)))
        with per_round_threads(1):
            with training_threads():
                seen.append(("training", torch.get_num_threads()))
        db.make_policy("neural-linucb", threads=None, hidden=8, feature_dim=4).decide(
            np.ones((3, 5))
        )
        assert torch.get_num_threads() == 2  # restored after each call
    finally:
        torch.set_num_threads(before)
    assert seen == [("forward", 1), ("training", 2)]


def test_threads_are_each_callers_own_and_restored_when_the_outermost_call_ends():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    inside, leave = threading.Event(), threading.Event()
    other: list[int] = []

    def hold():
        torch.set_num_threads(2)
        with per_round_threads(1):
            other.append(torch.get_num_threads())
            inside.set()
            leave.wait(10)
        other.append(torch.get_num_threads())

    worker = threading.Thread(target=hold)
    try:
        worker.start()
        inside.wait(10)
        assert torch.get_num_threads() == 2  # another thread's call leaves this one alone
        with per_round_threads(1):
            with per_round_threads(3):  # nested: the outermost call's count holds
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        leave.set()
        worker.join(10)
        assert other == [1, 2]
    finally:
        leave.set()
        torch.set_num_threads(before)


@pytest.mark.parametrize("name", ["linucb", "neural-sigma2-linucb"])
def test_run_continues_from_what_a_policy_learned_and_never_resets_it(name, tmp_path):
    env = db.make_env("linear", seed=0)
    cold, warm_total = 0.0, 0.0
    for seed in range(3):
        cold += db.run(small(name, seed=seed), env, 200, seed=seed).final_regret
        warm = small(name, seed=seed)
        db.run(warm, env, 600, seed=seed)  # the same problem (a seed draws θ) played before
        seen = np.trace(warm.ridge_.A[0] if warm.ridge_.A.ndim == 3 else warm.ridge_.A)
        warm_total += db.run(warm, env, 200, seed=seed).final_regret
        assert warm.t_ == 800  # nothing thrown away: the head keeps growing
        assert np.trace(warm.ridge_.A[0] if warm.ridge_.A.ndim == 3 else warm.ridge_.A) > seen
    if name == "linucb":  # the small network never trains here: its features learn nothing
        assert warm_total < 0.5 * cold
    warm.save(tmp_path / "warm.pt")
    loaded = [db.load_policy(tmp_path / "warm.pt") for _ in range(2)]
    runs = [db.run(p, env, 100, seed=2).records["arm"].to_numpy() for p in loaded]
    np.testing.assert_array_equal(runs[0], runs[1])  # same warm state and seed, same run
    fresh = loaded[0].reset()
    assert fresh.t_ == 0 and fresh.n_features_in_ is None  # resetting is the user's call
