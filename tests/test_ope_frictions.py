"""The frictions of ``deepbandits ope`` that issue 49 §3 names, each pinned by a test that failed
before its fix: an exported service log carries what the service knew about its policy (§3.1),
long OPE work shows progress and the linear reward models skip the n × K design (§3.2), a log
that cannot support the evaluated policy says so (§3.4), and warnings reach the command line's
user as one-line messages (§3.5)."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

from deepbandits.cli import main
from deepbandits.logs import make_log
from deepbandits.ope import evaluate
from deepbandits.ope.support import SupportWarning
from ope_fixtures import write_obd, write_service_log
from serve_support import contexts_stream, reward_of, running

SIGMA2 = "sigma2-linucb:reward_range=[0,1],seed=0"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A σ² LinUCB service's log (reward range [0, 1] in its spec), exported as Parquet and CSV."""
    root = tmp_path_factory.mktemp("service")
    stream = contexts_stream(3, 80, K=3, d=2)
    with running(root / "state", SIGMA2) as (_, client):
        for X in stream:
            decision = client.decide(X)
            client.learn(decision, reward_of(X, decision.arm))
    paths = {}
    for fmt in ("parquet", "csv"):
        paths[fmt] = root / f"log.{fmt}"
        assert (
            main(["export-log", str(root / "state"), "--format", fmt, "--out", str(paths[fmt])])
            == 0
        )
    return root, paths


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_export_carries_what_the_service_knew_about_its_policy(exported, fmt):
    from deepbandits.logs.service import read_logging_policy

    root, paths = exported
    logged = read_logging_policy(paths[fmt])
    assert logged is not None
    assert logged.spec == SIGMA2 and logged.name == "sigma2-linucb"
    assert logged.reward_range == (0.0, 1.0)
    assert (logged.n_features, logged.n_arms) == (2, 3)
    from deepbandits.serve.export import read_logging_policy as of_state

    assert of_state(root / "state") == logged  # the state folder says the same


def test_a_file_without_the_service_columns_has_no_logging_policy(tmp_path):
    from deepbandits.logs.service import read_logging_policy

    path = tmp_path / "log.parquet"
    write_service_log(path, n=30, pending=0)
    assert read_logging_policy(path) is None


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_ope_takes_the_reward_range_of_the_logging_service(exported, fmt, tmp_path, capsys):
    """The guide's own command: a σ² policy named without its reward range."""
    paths = exported[1]
    argv = ["ope", "--log", str(paths[fmt]), "--estimators", "ips", "--n-bootstrap", "0"]
    assert main([*argv, "--policy", "sigma2-linucb", "--out", str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    assert f"logged by {SIGMA2}" in printed
    assert "sigma2-linucb takes the reward range [0, 1] of the logging service" in printed
    # the user's own range wins
    spec = "sigma2-linucb:reward_range=[-1,2]"
    assert main([*argv, "--policy", spec, "--out", str(tmp_path / "b")]) == 0
    assert "takes the reward range" not in capsys.readouterr().out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("extra", "tty", "shown"),
    [([], True, True), (["--no-progress"], True, False), ([], False, False)],
    ids=["terminal", "no-progress", "not-a-terminal"],
)
def test_long_ope_work_shows_progress_on_a_terminal(tmp_path, monkeypatch, extra, tty, shown):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=120, pending=0)
    err = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    argv = ["ope", "--log", str(path), "--policy", "linucb", "--replay", "--estimators", "dr"]
    assert main([*argv, "--n-bootstrap", "0", "--out", str(tmp_path / "out"), *extra]) == 0
    text = err.getvalue()
    for bar in ("learning", "reward model", "replay"):
        assert (f"{bar}: 100%" in text) is shown, (bar, text)


def test_ground_truth_shows_its_bootstrap_runs(tmp_path, monkeypatch):
    write_obd(tmp_path / "data", n=300)
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    argv = ["ope", "--log", "obd", "--data-dir", str(tmp_path / "data"), "--runs", "2"]
    assert main([*argv, "--n-bootstrap", "10", "--out", str(tmp_path / "out")]) == 0
    assert "OBP's bootstrap runs: 100%" in err.getvalue() and "2/2" in err.getvalue()


def test_a_linear_reward_model_never_builds_the_rounds_by_arms_design(tmp_path, monkeypatch):
    """OBD's all-arm predictions built a 160,000 × 148 design matrix per fold: a third of the
    ground-truth command's time. A linear model's score is the sum of its blocks' scores."""
    from sklearn.linear_model import LogisticRegression, Ridge

    from deepbandits.logs import load_logged
    from deepbandits.ope import reward_model

    write_obd(tmp_path / "data", n=400, n_items=7)
    log = load_logged("obd", data_dir=tmp_path / "data", behavior="random")
    built = []
    design = reward_model.design_rows
    monkeypatch.setattr(
        reward_model, "design_rows", lambda lg, r, a: built.append(len(r)) or design(lg, r, a)
    )
    rng = np.random.default_rng(0)
    per_arm = make_log(
        rng.normal(size=(300, 4, 3)),
        rng.integers(0, 4, 300),
        rng.random(300),
        np.full(300, 0.25),
        n_actions=4,
    )
    for lg, model in ((log, "logistic"), (per_arm, "ridge")):
        built.clear()
        q = reward_model.cross_fitted_rewards(lg, model, n_folds=2, seed=0)
        assert max(built) <= len(lg)  # the training rows only
        folds = np.random.default_rng(0).permutation(len(lg)) % 2
        for k in range(2):  # the design-matrix prediction, fold by fold
            train, test = np.flatnonzero(folds != k), np.flatnonzero(folds == k)
            fitted = LogisticRegression(max_iter=1000) if model == "logistic" else Ridge()
            y = lg.rewards[train]
            fitted.fit(
                design(lg, train, lg.actions[train]), y.astype(int) if model == "logistic" else y
            )
            pairs = design(
                lg, np.repeat(test, lg.n_actions), np.tile(np.arange(lg.n_actions), len(test))
            )
            want = (
                fitted.predict_proba(pairs)[:, 1] if model == "logistic" else fitted.predict(pairs)
            )
            np.testing.assert_allclose(q[test].ravel(), want, rtol=1e-12, atol=1e-14)


def deterministic_log(n: int = 200, K: int = 3, seed: int = 0):
    """A log whose logger played the arm of its context's largest first feature, always."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, K, 2))
    arm = X[:, :, 0].argmax(axis=1)
    reward = (rng.random(n) < 0.3 + 0.4 * (arm == 0)).astype(float)
    return make_log(X, arm, reward, np.ones(n), n_actions=K)


def test_a_deterministic_logger_is_said_not_to_support_another_policy():
    log = deterministic_log()
    uniform = np.full((len(log), 3), 1 / 3)
    with pytest.warns(SupportWarning) as record:
        result = evaluate(log, uniform, estimators=["ips", "snips"], n_bootstrap=0)
    text = " | ".join(str(w.message) for w in record)
    assert "200 of 200 logged rounds (100.0%) have propensity 1" in text
    assert "66.7% of its probability on arms the logging policy did not choose" in text
    assert result.support.n_deterministic == 200
    assert result.support.unsupported_mass == pytest.approx(2 / 3)
    assert any("propensity 1" in m for m in result.messages)
    # the logger's own choices are supported: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", SupportWarning)
        own = evaluate(log, np.eye(3)[log.actions], estimators="ips", n_bootstrap=0)
    assert own.support.unsupported_mass == 0.0


def test_arms_never_chosen_in_a_context_count_when_most_rounds_are_deterministic():
    """90 % of the rounds deterministic, the rest uniform: only the deterministic rounds' other
    arms are unsupported (every arm was logged somewhere)."""
    log = deterministic_log(n=200)
    p = np.where(np.arange(200) < 180, 1.0, 1 / 3)
    log = make_log(log.contexts, log.actions, log.rewards, p, n_actions=3)
    with pytest.warns(SupportWarning, match="180 of 200 logged rounds"):
        result = evaluate(log, np.full((200, 3), 1 / 3), estimators="ips", n_bootstrap=0)
    assert result.support.unsupported_mass == pytest.approx(0.9 * 2 / 3)
    assert result.support.unseen_arms == ()


def test_a_tiny_effective_sample_size_is_said_even_on_a_small_log():
    rng = np.random.default_rng(0)
    n = 120
    p = np.where(np.arange(n) < 3, 0.01, 0.99)  # the policy plays what the logger rarely did
    actions = np.where(np.arange(n) < 3, 1, 0)
    log = make_log(rng.normal(size=(n, 2)), actions, rng.random(n), p, n_actions=2)
    target = np.tile([0.05, 0.95], (n, 1))
    with pytest.warns(SupportWarning, match=r"effective sample size is \d\.\d of 120 rounds"):
        result = evaluate(log, target, estimators="ips", n_bootstrap=0)
    assert result.support.ess < 10


def test_ope_says_in_one_line_that_a_deterministic_log_cannot_support_the_policy(tmp_path, capsys):
    frame = write_service_log(tmp_path / "log.parquet", n=120, pending=0)
    contexts = np.array([np.array(c) for c in frame["contexts"]])
    frame["action"] = contexts[:, :, 0].argmax(axis=1)
    frame["propensity"] = 1.0
    frame.to_parquet(tmp_path / "log.parquet")
    argv = ["ope", "--log", str(tmp_path / "log.parquet"), "--policy", "uniform"]
    assert (
        main(
            [*argv, "--estimators", "ips,snips", "--n-bootstrap", "0", "--out", str(tmp_path / "o")]
        )
        == 0
    )
    captured = capsys.readouterr()
    lines = [ln for ln in captured.out.splitlines() if "have propensity 1" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: poor support: 120 of 120 logged")
    assert "poor support" not in captured.err  # said once, in the output


def test_warnings_reach_the_command_line_user_as_one_line_messages(tmp_path):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=60, pending=4)
    argv = ["ope", "--log", str(path), "--policy", "uniform", "--estimators", "ips"]
    argv += ["--n-bootstrap", "0", "--out", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-m", "deepbandits.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    warned = [ln for ln in done.stderr.splitlines() if "no reward yet" in ln]
    assert warned == [
        f"deepbandits: warning: {path}: 4 of 60 decisions have no reward yet (pending); they "
        "are left out"
    ]
    assert "UserWarning" not in done.stderr and "warnings.warn" not in done.stderr


def test_the_command_line_leaves_python_warnings_as_they_were(tmp_path):
    """Called from Python, the library still issues ordinary warnings after ``main``."""
    path = tmp_path / "log.parquet"
    write_service_log(path, n=40, pending=2)
    argv = ["ope", "--log", str(path), "--policy", "uniform", "--estimators", "ips"]
    with pytest.warns(UserWarning, match="no reward yet"):
        assert main([*argv, "--n-bootstrap", "0", "--out", str(tmp_path / "out")]) == 0
    before = warnings.formatwarning
    from deepbandits.logs.service import read_service_log

    with pytest.warns(UserWarning, match="no reward yet"):
        read_service_log(path)
    assert warnings.formatwarning is before
    text = warnings.formatwarning("x", UserWarning, "f.py", 1)
    assert text.startswith("f.py:1: UserWarning: x")


def test_a_service_started_from_a_checkpoint_says_its_policys_reward_range(tmp_path):
    import deepbandits as db
    from deepbandits.logs.service import read_logging_policy
    from deepbandits.serve.export import export_log
    from deepbandits.serve.export import read_logging_policy as of_state
    from deepbandits.serve.state import ServiceState

    db.make_policy("sigma2-linucb", reward_range=(0, 2), seed=0).save(tmp_path / "p.pt")
    with ServiceState(tmp_path / "s", checkpoint=tmp_path / "p.pt") as state:
        empty = of_state(tmp_path / "s")  # no decision yet: what the folder serves
        assert (empty.source, empty.reward_range, empty.n_arms) == ("checkpoint", (0.0, 2.0), None)
        state.decide(np.random.default_rng(0).random((4, 3)))[1].result()
    export_log(tmp_path / "s", tmp_path / "log.csv", "csv")
    logged = read_logging_policy(tmp_path / "log.csv")
    assert (logged.name, logged.n_features, logged.n_arms) == ("sigma2-linucb", 3, 4)
    assert "reward range [0, 2]" in logged.describe()
