"""A service's live experiment (:mod:`deepbandits.serve.experiment`): the control group drawn by
a seeded hash of the decision id, the lift and its interval, challengers in shadow and their
estimates, promotion, and all of it replayed after a restart or a ``kill -9``.

The coverage claims run on simulated traffic with a known truth: a linear mean reward
μ(x, a) = xₐ·θ plus Gaussian noise, so that each policy's value on the requests it saw is known
exactly (Σₐ π(a | x) μ(x, a) with the policy's distribution at that request).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np
import pytest

from deepbandits.errors import (
    DecisionError,
    DeepBanditsError,
    InputValueError,
    RewardAlreadyLearnedError,
)
from deepbandits.policies import make_policy
from deepbandits.serve.control import control_draw, in_control
from deepbandits.serve.events import is_control
from deepbandits.serve.experiment import Experiment
from deepbandits.serve.log import EventLog
from deepbandits.serve.state import ServiceState

K, D = 4, 5
SEEDS = range(20)
CHAMPION = "linucb:explore=igw,min_propensity=0.025"
CHALLENGERS = {"ridge": "linucb:alpha=1", "igw": "linucb:explore=igw,gamma=30"}


def simulate(
    seed: int, T: int = 1500, share: float = 0.1, challengers: dict[str, str] = CHALLENGERS
) -> dict[str, Any]:
    """One run of the experiment on known truth: the lift's interval and true lift, and each
    challenger's estimates and true value (module notes)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=D) / np.sqrt(D)
    experiment = Experiment(CHAMPION, control="uniform", share=share, seed=seed)
    champion = make_policy("linucb", explore="igw", min_propensity=0.025, seed=seed)
    ids = np.random.default_rng([seed, 1])  # seeded decision ids: the groups are reproducible
    champion.pending_.next_ids = lambda n: [  # type: ignore[method-assign]
        f"{v:016x}" for v in ids.integers(0, 2**63, size=n)
    ]
    shadow: dict[str, list[float]] = {}
    for name, spec in challengers.items():
        policy = experiment.add(name, spec).policy
        shadow[name] = []
        policy.probabilities = _spy(policy.probabilities, theta, shadow[name])  # type: ignore[method-assign]
    served, uniform = [], []
    for _ in range(T):
        X = rng.normal(size=(K, D))
        mu = X @ theta
        served.append(float(champion.probabilities(X) @ mu))
        uniform.append(float(mu.mean()))
        decision, _ = experiment.decide(champion, X, None)
        experiment.keep([decision], [X])
        experiment.learn(champion, decision.id, float(mu[decision.arm] + 0.5 * rng.normal()))
    experiment.flush()
    for name, values in shadow.items():
        assert len(values) == experiment.challengers[name].n == T
    lift = experiment.report_lift()["all"]
    reports = {name: c.report() for name, c in experiment.challengers.items()}
    return {
        "lift": lift,
        "true_lift": float(np.mean(served) - np.mean(uniform)),
        "estimates": {
            name: {e["estimator"]: e for e in report["estimates"]}
            for name, report in reports.items()
        },
        "truth": {name: float(np.mean(values)) for name, values in shadow.items()},
        "support": {name: report["support"] for name, report in reports.items()},
    }


def _spy(probabilities: Any, theta: np.ndarray, values: list[float]) -> Any:
    """``probabilities`` that also records Σₐ π(a | x) μ(x, a) of every request it answers
    (the challenger's true value there; μ(x, a) = xₐ·θ)."""

    def spied(contexts: Any, mask: Any = None, **kwargs: Any) -> Any:
        out = probabilities(contexts, mask, **kwargs)
        probs = out[0] if isinstance(out, tuple) else out
        values.extend(np.atleast_1d((probs * (np.asarray(contexts) @ theta)).sum(-1)).tolist())
        return out

    return spied


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return [simulate(seed) for seed in SEEDS]


def test_the_lift_interval_covers_the_true_lift_on_at_least_90_percent_of_seeds():
    """On 100 seeds: a 95 % interval covering on 90 % of 20 seeds fails one set of 20 in 13
    by chance (with random decision ids, 285 of 300 seeds covered at T = 1,500)."""
    runs = [simulate(seed, T=600, share=0.1, challengers={}) for seed in range(100)]
    covered = [r["lift"]["low"] <= r["true_lift"] <= r["lift"]["high"] for r in runs]
    assert sum(covered) >= 0.9 * len(runs), covered
    # the interval is informative, not covering by being wide: the lift is found on most seeds
    assert sum(r["lift"]["low"] > 0 for r in runs) >= 0.5 * len(runs)
    # the groups are the drawn share of the traffic
    shares = [r["lift"]["control"]["rewards"] / 600 for r in runs]
    assert 0.08 < float(np.mean(shares)) < 0.12


@pytest.mark.parametrize("name", list(CHALLENGERS))
@pytest.mark.parametrize("estimator", ["ips", "snips", "dr"])
def test_each_challenger_estimate_covers_its_true_value_on_at_least_90_percent_of_seeds(
    runs, name, estimator
):
    covered = [
        r["estimates"][name][estimator]["low"]
        <= r["truth"][name]
        <= r["estimates"][name][estimator]["high"]
        for r in runs
    ]
    assert sum(covered) >= 0.9 * len(runs), covered
    # a log with a floor gives the challenger full support: no deterministic round, no warning
    assert all(r["support"][name]["deterministic_rounds"] == 0 for r in runs)
    assert all(r["support"][name]["min_propensity"] >= 0.025 * 0.9 for r in runs)


def test_a_ucb_champion_log_warns_the_challengers_of_a_deterministic_logger():
    """A plain UCB champion logs propensity 1: a challenger's diagnostics say so."""
    rng = np.random.default_rng(0)
    experiment = Experiment("linucb", seed=0)
    champion = make_policy("linucb", seed=0)
    experiment.add("other", "linucb:alpha=0.01,per_arm=true")
    theta = rng.normal(size=D)
    for _ in range(300):
        X = rng.normal(size=(K, D))
        decision, _ = experiment.decide(champion, X, None)
        experiment.keep([decision], [X])
        experiment.learn(champion, decision.id, float(X[decision.arm] @ theta))
    experiment.flush()
    support = experiment.challengers["other"].report()["support"]
    assert support["deterministic_rounds"] == 300
    assert any("propensity 1" in w for w in support["warnings"])


# ---------------------------------------------------------------------- the service
def _contexts(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    return [rng.normal(size=(K, D)) for _ in range(n)]


def _serve(state: ServiceState, rng: np.random.Generator, n: int, batch: bool = False) -> list:
    theta = np.linspace(-1, 1, D)
    requests = _contexts(rng, n)
    if batch:
        decisions, commit = state.decide_batch(requests)
        commit.result()
    else:
        decisions = []
        for X in requests:
            decision, commit = state.decide(X)
            commit.result()
            decisions.append(decision)
    for decision, X in zip(decisions, requests, strict=True):
        state.learn(decision.id, float(X[decision.arm] @ theta))[1].result()
    return decisions


def test_the_control_group_is_the_seeded_hash_of_the_decision_id_and_logged(tmp_path):
    folder = tmp_path / "state"
    with ServiceState(folder, policy="linucb:seed=1", control="uniform", control_share=0.3) as s:
        rng = np.random.default_rng(0)
        batch = _serve(s, rng, 150, batch=True)
        decisions = _serve(s, rng, 150) + batch
        report = s.lift()
    seed = json.loads((folder / "service.json").read_text())["experiment"]["seed"]
    flags = {d.id: in_control(d.id, seed, 0.3) for d in decisions}
    assert 0.2 < np.mean(list(flags.values())) < 0.4
    assert report["all"]["control"]["rewards"] == sum(flags.values())
    assert report["all"]["policy"]["rewards"] == 300 - sum(flags.values())
    # uniform play over K arms: every control decision has propensity 1/K
    assert all(d.propensity == pytest.approx(1 / K) for d in decisions if flags[d.id])
    log = EventLog(folder / "events.sqlite")
    try:
        logged = {}
        for event in log.read(0):
            if event.kind == "decision":
                logged[event.decision_id] = is_control(event)
    finally:
        log.close()
    assert {i: logged[i] for i in flags if i in logged} == {i: flags[i] for i in logged}
    # the champion's requests of a batch are one batch event; the control's, one event each
    assert all(flags[d.id] == (d.id in logged) for d in batch)
    # the draw is uniform and fixed by the seed
    draws = [control_draw(f"{i:032x}", 7) for i in range(4000)]
    assert abs(np.mean(draws) - 0.5) < 0.02 and control_draw("a", 7) == control_draw("a", 7)
    assert control_draw("a", 7) != control_draw("a", 8)


def test_a_fixed_arm_control_plays_its_arm_with_propensity_1_and_uniform_without_it(tmp_path):
    with ServiceState(
        tmp_path / "s", policy="linucb:seed=1", control="arm=2", control_share=0.5
    ) as s:
        rng = np.random.default_rng(1)
        seen = []
        for i in range(200):
            mask = None if i % 2 else np.array([True, True, False, True])
            decision, commit = s.decide(rng.normal(size=(K, D)), mask)
            commit.result()
            seen.append((decision, mask))
        seed = s.experiment.seed
    control = [(d, m) for d, m in seen if in_control(d.id, seed, 0.5)]
    assert len(control) > 50
    for decision, mask in control:
        if mask is None:
            assert (decision.arm, decision.propensity) == (2, 1.0)
            assert decision.mask is None
        else:
            assert decision.arm != 2 and decision.propensity == pytest.approx(1 / 3)
            assert decision.mask.tolist() == mask.tolist()


def _fingerprint(state: ServiceState, X: np.ndarray) -> dict[str, Any]:
    """What must be equal between a restarted service and the one it replays."""
    return {
        "lift": state.lift(),
        "challengers": state.challengers(),
        "champion": state.policy.predict(X)[0].tolist(),
        "rng": state.policy.random_state(),
        "control_rng": state.experiment.control.random_state(),
        "rounds": sorted(state.experiment.rounds),
        "queue": len(state.experiment.queue),
        "pending": state.policy.pending_.ids(),
        "health": {
            k: v for k, v in state.health().items() if k not in ("notes", "last_checkpoint")
        },
    }


@pytest.mark.parametrize("snapshot", [False, True], ids=["whole-log", "from-checkpoint"])
def test_a_restart_replays_the_experiment_and_the_promotion_bit_for_bit(tmp_path, snapshot):
    folder = tmp_path / "state"
    rng = np.random.default_rng(3)
    X = rng.normal(size=(K, D))
    with ServiceState(
        folder, policy="linucb:explore=igw,seed=1", control="uniform", control_share=0.5
    ) as s:
        _serve(s, rng, 60)
        s.add_challenger("linucb:alpha=0.5,seed=2", name="half")
        s.add_challenger("linucb:explore=igw,gamma=50,seed=4", name="igw")
        _serve(s, rng, 80, batch=True)
        if snapshot:
            s.snapshot()
        pending = [s.decide(x)[0] for x in _contexts(rng, 14)]  # by the champion or the control
        s.promote("half")
        _serve(s, rng, 40)
        s.remove_challenger("igw")
        before = _fingerprint(s, X)
        assert before["challengers"]["champion"]["name"] == "half"
    with ServiceState(folder) as s:
        after = _fingerprint(s, X)
        assert after == before
        assert s.health()["champion_version"] == 1
        # the rewards of decisions made before the promotion still reach whoever made them
        theta = np.linspace(-1, 1, D)
        former = s.experiment.challengers["linucb:explore=igw,seed=1"].policy
        t_former, t_champion = former.t_, s.policy.t_
        for d in pending:
            s.learn(d.id, float(theta.sum()))[1].result()
        by_former = [d for d in pending if not in_control(d.id, s.experiment.seed, 0.5)]
        assert 0 < len(by_former) < len(pending)
        # the former champion learns its own decisions at once, and in shadow every other
        # round with the next batch; the champion learns its group's
        assert former.t_ == t_former + len(by_former)
        s.experiment.flush()
        assert former.t_ == t_former + len(pending)
        assert s.policy.t_ == t_champion + len(by_former)
        assert not any(d.id in former.pending_ for d in pending)
        with pytest.raises(DecisionError):
            s.learn(pending[0].id, 0.0)


def test_refused_calls_change_nothing(tmp_path):
    with ServiceState(
        tmp_path / "s", policy="linucb:seed=1", control="uniform", control_share=0.5
    ) as s:
        rng = np.random.default_rng(0)
        _serve(s, rng, 20)
        s.add_challenger("linucb:alpha=2", name="two")
        X = rng.normal(size=(K, D))
        before = _fingerprint(s, X)
        events = s.log.seq
        bad_batch = [rng.normal(size=(K, D)) for _ in range(30)] + [rng.normal(size=(K, D + 1))]
        with pytest.raises(InputValueError):
            s.decide_batch(bad_batch)
        with pytest.raises(InputValueError):
            s.decide_batch(_contexts(rng, 3), [np.zeros(K, dtype=bool)] * 3)
        for call in (
            lambda: s.decide_batch([]),
            lambda: s.add_challenger("linucb:alpha=0.5," + "lam=1.0," * 20),  # too long a name
            lambda: s.add_challenger("linucb:alpha=2", name="two"),
            lambda: s.add_challenger("no-such-policy"),
            lambda: s.add_challenger("linucb", name="x" * 65),
            lambda: s.add_challenger(3),
            lambda: s.promote("nobody"),
            lambda: s.remove_challenger(["two"]),
        ):
            with pytest.raises(InputValueError):
                call()
        with pytest.raises(DecisionError):
            s.learn("f" * 32, 1.0)
        assert s.log.seq == events
        assert _fingerprint(s, X) == before


def test_decisions_take_the_callers_ids_and_refuse_ids_in_use():
    policy = make_policy("linucb", seed=0)
    rng = np.random.default_rng(0)
    d = policy.decide(rng.normal(size=(3, 2)), decision_id="order-17")
    assert d.id == "order-17"
    ds = policy.decide_batch(list(rng.normal(size=(2, 3, 2))), decision_ids=["a", "b"])
    assert [x.id for x in ds] == ["a", "b"]
    state = policy.random_state()
    for bad in ("order-17", "", "é", "x" * 129, 5):
        with pytest.raises(InputValueError, match="decision id"):
            policy.decide(rng.normal(size=(3, 2)), decision_id=bad)  # type: ignore[arg-type]
    for bad_ids in (["c", "c"], ["a", "d"], "cd", ["c"]):
        with pytest.raises(InputValueError, match="decision id"):
            policy.decide_batch(list(rng.normal(size=(2, 3, 2))), decision_ids=bad_ids)
    assert policy.random_state() == state and len(policy.pending_) == 3
    policy.learn("order-17", 1.0)
    with pytest.raises(InputValueError, match="in use"):
        policy.decide(rng.normal(size=(3, 2)), decision_id="order-17")


def test_a_control_or_window_on_a_folder_made_without_one_is_refused(tmp_path):
    folder = tmp_path / "s"
    ServiceState(folder, policy="linucb:seed=1").close()
    with pytest.raises(InputValueError, match="control group is set when a folder is created"):
        ServiceState(folder, control="uniform")
    for kwargs, match in (
        ({"control": "uniform", "control_share": 0.9}, "control share"),
        ({"control_share": 0.1}, "needs a control"),
        ({"control": "arm=x"}, "arm index"),
        ({"control": "nonsense-policy"}, "nonsense-policy"),
        ({"control": "uniform", "lift_window": 1}, "lift window"),
    ):
        with pytest.raises(InputValueError, match=match):
            ServiceState(tmp_path / "new", policy="linucb", **kwargs)
        assert not (tmp_path / "new").exists()


# ---------------------------------------------------------------------- kill -9
_DRIVER = textwrap.dedent(
    """
    import sys, numpy as np
    from deepbandits.serve.state import ServiceState
    folder, seed = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(seed)
    theta = np.linspace(-1, 1, 5)
    s = ServiceState(folder, policy="linucb:explore=igw,seed=1", control="uniform",
                     control_share=0.2, snapshot_every=97)
    s.add_challenger("linucb:alpha=0.3,seed=2", name="next")
    def say(*words):
        print(*words, flush=True)
    for i in range(100000):
        X = rng.normal(size=(4, 5))
        d, commit = s.decide(X)
        commit.result()
        say("decided", d.id)
        learned, commit = s.learn(d.id, float(X[d.arm] @ theta))
        commit.result()
        say("rewarded", d.id)
        if i == 150:
            say("promoting")
            s.promote("next")
            say("promoted")
    """
)


@pytest.mark.parametrize("delay", [0.0, 0.003, 0.02, 0.3])
def test_kill_9_mid_promotion_loses_nothing_acknowledged(tmp_path, delay):
    folder = tmp_path / "state"
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        lines.append(line.split())
        if line.startswith("promoting"):
            break
        assert time.monotonic() < deadline
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    rest = proc.stdout.read()
    proc.wait()
    # only whole lines: the kill may cut the last one short (what it says was not seen)
    lines += [line.split() for line in rest.split("\n")[:-1] if line]
    decided = [w[1] for w in lines if len(w) == 2 and w[0] == "decided"]
    rewarded = [w[1] for w in lines if len(w) == 2 and w[0] == "rewarded"]
    promoted = ["promoted"] in lines
    with ServiceState(folder) as s:
        champion = s.experiment.champion_name
        lift = s.lift()["all"]
        learned = lift["policy"]["rewards"] + lift["control"]["rewards"]
        assert learned >= len(rewarded)
        for decision_id in set(decided) - set(rewarded):  # acknowledged: still takes its reward
            try:
                s.learn(decision_id, 0.0)[1].result()
            except RewardAlreadyLearnedError:  # unless its reward was in flight at the kill
                assert decision_id == decided[-1]
        if promoted:
            assert champion == "next"
        fingerprint = _fingerprint(s, np.ones((K, D)))
    # the same state again from the whole log (the checkpoints removed): the swap replays alike
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    shutil.rmtree(copy / "checkpoints", ignore_errors=True)
    (copy / ".lock").unlink(missing_ok=True)
    with ServiceState(copy) as again:
        assert again.experiment.champion_name == champion
        assert _fingerprint(again, np.ones((K, D))) == fingerprint


def test_the_estimates_from_sufficient_statistics_equal_the_delta_method_on_the_rounds():
    """A challenger keeps sums, not rounds: its IPS, SNIPS and DR and their standard errors
    equal those computed from every round's terms (fed in batches of uneven sizes)."""
    from deepbandits.serve.shadow import COLUMNS, Challenger

    rng = np.random.default_rng(5)
    n = 1000
    rows = np.column_stack(
        [
            rng.normal(size=n),  # reward
            rng.exponential(size=n) * (rng.random(n) < 0.4),  # w, zero off the logged arm
            rng.normal(size=n),  # q̂(x, π)
            rng.normal(size=n),  # q̂(x, a)
            rng.uniform(0.05, 1, size=n),  # π₀(a | x)
            np.zeros(n),
        ]
    )
    assert rows.shape[1] == len(COLUMNS)
    challenger = Challenger("c", "linucb", make_policy("linucb"))
    for part in np.split(rows, [7, 300, 301, 650]):
        challenger._keep(part)
    got = {e["estimator"]: (e["value"], e["se"]) for e in challenger.report()["estimates"]}
    r, w, dm, q = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    ips, snips, dr = w * r, (w * r).sum() / w.sum(), dm + w * (r - q)
    expected = {
        "ips": (ips.mean(), ips.std(ddof=1) / np.sqrt(n)),
        "snips": (snips, (w * (r - snips) / w.mean()).std(ddof=1) / np.sqrt(n)),
        "dr": (dr.mean(), dr.std(ddof=1) / np.sqrt(n)),
    }
    for name, (value, se) in expected.items():
        assert got[name][0] == pytest.approx(value, rel=1e-10)
        assert got[name][1] == pytest.approx(se, rel=1e-8)
    support = challenger.report()["support"]
    assert support["ess"] == pytest.approx(w.sum() ** 2 / (w * w).sum())
    assert support["max_weight"] == w.max() and support["matched"] == int((w > 0).sum())


def test_the_lift_interval_is_welchs_and_the_window_holds_the_recent_rewards():
    """Against scipy's Welch t-test on the same rewards, over all time and the window."""
    from scipy import stats

    from deepbandits.serve.lift import LiftTracker

    rng = np.random.default_rng(2)
    tracker = LiftTracker(window=300)
    groups = np.where(rng.random(1000) < 0.2, "control", "policy")
    rewards = rng.normal(np.where(groups == "policy", 0.3, 0.0), np.where(groups == "policy", 1, 2))
    for group, reward in zip(groups, rewards, strict=True):
        tracker.add(str(group), float(reward))
    report = tracker.report()
    for name, rows in (("all", slice(None)), ("window", slice(-300, None))):
        g, r = groups[rows], rewards[rows]
        test = stats.ttest_ind(r[g == "policy"], r[g == "control"], equal_var=False)
        low, high = test.confidence_interval(0.95)
        assert report[name]["lift"] == pytest.approx(
            r[g == "policy"].mean() - r[g == "control"].mean()
        )
        assert (report[name]["low"], report[name]["high"]) == pytest.approx((low, high), rel=1e-9)
        assert report[name]["control"]["rewards"] == int((g == "control").sum())
    state = tracker.state()
    again = LiftTracker(window=300)
    again.load(state)
    assert again.report() == report


def test_update_batch_learns_as_updates_do_and_refuses_what_it_cannot_learn():
    rng = np.random.default_rng(4)
    one, many = make_policy("linucb", seed=0), make_policy("linucb", seed=0)
    Xs = [rng.normal(size=(4, 3)) for _ in range(20)]
    arms = rng.integers(4, size=20).tolist()
    rewards = rng.normal(size=20).tolist()
    for X, arm, r in zip(Xs, arms, rewards, strict=True):
        one.update(X, arm, r)
    assert many.update_batch(Xs, arms, rewards) is not None and many.t_ == one.t_ == 20
    np.testing.assert_allclose(many.predict(Xs[0])[0], one.predict(Xs[0])[0], rtol=1e-10)
    state = many.random_state()
    for bad in (
        lambda: many.update_batch(5, [0], [1.0]),  # type: ignore[arg-type]
        lambda: many.update_batch(Xs[:2], [0], [1.0, 2.0]),
        lambda: many.update_batch(Xs[:2], [0, 9], [1.0, 2.0]),
        lambda: many.update_batch(Xs[:2], [0, 1], [1.0, float("nan")]),
    ):
        with pytest.raises(DeepBanditsError):  # the library's own errors, nothing learned
            bad()
    assert many.t_ == 20 and many.random_state() == state
    assert many.update_batch([], [], []) is None
