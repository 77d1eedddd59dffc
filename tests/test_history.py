"""The neural policies' training history and its cap ``max_history`` (a sliding window)."""

import numpy as np
import pytest
import torch

import deepbandits as db
from conftest import SMALL_NET, SMALL_REWARD_NET, play
from deepbandits.encoding import BlockContexts
from deepbandits.errors import CheckpointError, InputTypeError, InputValueError
from deepbandits.networks.history import History

#: every neural policy (each class of the hierarchy and each preset), for the parameter checks
NEURAL_NAMES = [
    "neural-lingreedy",
    "neural-linucb",
    "neural-sigma2-linucb",
    "save-neural-linucb",
    "neural-ucb",
    "neural-ts",
    "bootstrapped-nn",
]

#: small configurations that train several times in 100 rounds, one per class of learner use
NEURAL_CASES = [
    ("neural-linucb", SMALL_NET),
    ("neural-sigma2-linucb", {**SMALL_NET, "refit_on_update": True}),
    ("save-neural-linucb", {**SMALL_NET, "horizon": 400}),
    ("neural-ts", SMALL_REWARD_NET),
    ("bootstrapped-nn", {**SMALL_REWARD_NET, "n_models": 3}),
]


def histories(policy):
    """The training history of each network of ``policy``."""
    if hasattr(policy, "members_"):
        return [m.history for m in policy.members_]
    return [policy.learner_.history]


def assert_same(a, b, where="state"):
    """Nested states (dicts, lists, tensors, arrays, scalars) equal bit for bit, NaN = NaN."""
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor | np.ndarray):
        u, v = (np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x) for x in (a, b))
        np.testing.assert_array_equal(u, v, err_msg=where)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def learned(policy):
    """The learned part of a policy's state (its parameters left out)."""
    state = policy.state_dict()
    return {k: state[k] for k in ("rng", "t", "state")}


def test_history_never_exceeds_its_cap_and_stops_reallocating():
    cap, d = 50, 3
    hist = History(d, max_history=cap, capacity=4)
    buffer = None
    for t in range(1, 400):
        hist.append(np.full(d, float(t)), float(t), 1.0, 0)
        assert hist.size == min(t, cap) and hist.seen == t
        assert len(hist.rewards) <= cap and len(hist.contexts) <= cap
        if t == cap:
            buffer = hist.contexts
        if t > cap:  # one fixed block, written in place
            assert hist.contexts is buffer and len(buffer) == cap
    X, r, *_ = hist.view()
    assert X.shape == (cap, d) and np.shares_memory(X, hist.contexts)
    np.testing.assert_array_equal(X[:, 0], r)  # each row still holds one round's values
    assert len(np.unique(r)) == cap


def test_uncapped_history_grows_by_doubling():
    hist = History(2, capacity=4)
    sizes = set()
    for t in range(100):
        hist.append(np.zeros(2), float(t), 1.0, 0)
        sizes.add(len(hist.rewards))
    assert sizes == {4, 8, 16, 32, 64, 128} and hist.size == 100


def test_window_keeps_exactly_the_last_rounds_in_a_ring():
    cap = 7
    hist = History(1, max_history=cap)
    for t in range(1, 40):
        hist.append(np.array([float(t)]), float(t), 1.0, 0)
        kept = hist.view()[1]
        np.testing.assert_array_equal(np.sort(kept), np.arange(max(1, t - cap + 1), t + 1))
        assert kept[(t - 1) % cap] == t  # the ring's position is the count of rounds added


def test_window_round_trips_through_its_state_after_turning():
    """save → load → continue equals continuing, the ring's position included."""
    rng = np.random.default_rng(0)
    a = History(3, max_history=5)
    for _ in range(13):
        a.append(rng.standard_normal(3), float(rng.standard_normal()), 1.0, 0)
    b = History(3, max_history=5)
    b.load_state_dict(a.state_dict())
    assert_same(b.state_dict(), a.state_dict())
    for _ in range(4):
        x, r = rng.standard_normal(3), float(rng.standard_normal())
        a.append(x, r, 0.5, 1)
        b.append(x, r, 0.5, 1)
    assert_same(b.state_dict(), a.state_dict())
    with pytest.raises(CheckpointError, match="dropped"):
        History(3, max_history=9).load_state_dict(a.state_dict())


def test_capped_block_history_keeps_each_block_with_its_index():
    K, D, cap = 4, 3, 10
    hist = History(K * D, max_history=cap)
    for t in range(50):
        slot = t % K
        hist.append(BlockContexts(np.full((1, D), float(slot)), np.array([slot]), K), 0.0, 1.0, 0)
    X, *_ = hist.view()
    assert isinstance(X, BlockContexts) and len(X.slots) == cap
    np.testing.assert_array_equal(X.blocks[:, 0], X.slots)


@pytest.mark.parametrize(("name", "params"), NEURAL_CASES)
def test_run_that_never_exceeds_the_cap_is_the_uncapped_run(name, params):
    """With the cap reached exactly but never exceeded, or not reached (the default), a run is
    bit for bit the run without a cap: arms, networks, statistics, generators."""

    def run(max_history):
        policy = db.make_policy(name, seed=3, max_history=max_history, **params)
        arms = play(policy, db.make_env("h1", d=5, seed=2), 100)
        return arms, policy

    arms, free = run(None)
    largest = max(h.seen for h in histories(free))
    assert largest >= 100 and free.n_trainings_ > 0
    for cap in (largest, db.make_policy(name).get_params()["max_history"]):
        capped_arms, capped = run(cap)
        np.testing.assert_array_equal(capped_arms, arms)
        assert_same(learned(capped), learned(free))


@pytest.mark.parametrize(("name", "params"), NEURAL_CASES)
def test_capped_policy_keeps_its_cap_and_saves_and_loads_after_the_cap(name, params, tmp_path):
    """Past the cap every history holds exactly ``max_history`` rounds; save → load → continue
    equals continuing, the ring's position included."""
    cap = 30
    env = db.make_env("h1", d=5, seed=2)
    policy = db.make_policy(name, seed=3, max_history=cap, **params)
    play(policy, env, 70)
    for hist in histories(policy):
        assert hist.size == cap and len(hist.rewards) == cap and hist.seen > cap
    path = tmp_path / "policy.pt"
    policy.save(path)
    restored = db.load_policy(path)
    assert [h.seen for h in histories(restored)] == [h.seen for h in histories(policy)]
    assert_same(learned(restored), learned(policy))
    env_copy = db.make_env("h1", d=5, seed=2)
    for _ in range(70):
        env_copy.next_round()
    np.testing.assert_array_equal(play(policy, env, 60), play(restored, env_copy, 60))
    assert_same(learned(restored), learned(policy))
    assert all(h.size == cap for h in histories(restored))


def test_loading_more_rounds_than_the_cap_is_refused_and_changes_nothing():
    rng = np.random.default_rng(0)
    big = History(2)
    for t in range(20):
        big.append(rng.standard_normal(2), float(t), 1.0, 0)
    small = History(2, max_history=10)
    small.append(np.ones(2), 7.0, 1.0, 0)
    before = small.state_dict()
    with pytest.raises(CheckpointError, match="max_history=10"):
        small.load_state_dict(big.state_dict())
    damaged = {**big.state_dict(), "rewards": np.zeros(3)}
    with pytest.raises(CheckpointError, match="rewards has shape"):
        History(2).load_state_dict(damaged)
    assert_same(small.state_dict(), before)


@pytest.mark.parametrize("name", NEURAL_NAMES)
@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, InputValueError),
        (-1, InputValueError),
        ("10", InputTypeError),
        (1.5, InputTypeError),
        (True, InputTypeError),
    ],
)
def test_bad_max_history_is_refused(name, value, error):
    with pytest.raises(error, match="max_history"):
        db.make_policy(name, max_history=value)
    policy = db.make_policy(name)
    with pytest.raises(error, match="max_history"):
        policy.set_params(max_history=value)
    assert policy.get_params()["max_history"] == 100_000
