"""The frictions of the command line that issue 49 §3 names beside those of ``ope``
(``test_ope_frictions.py``), each pinned by a test that failed before its fix: ``serve`` refuses
at start a policy that needs a reward range and has none, with the command line's spelling of
the fix (§3.3); a refused command leaves no output folder and no lock file behind (§3.7); the
report has the accuracy and unplayed-arm columns of a classification bandit, and ``tune``'s
follow-up command has an output folder (§3.9). §3.8 (the pages) is ``test_doc_claims.py``."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from deepbandits._io import LOCK_NAME, folder_lock
from deepbandits.cli import main
from deepbandits.errors import InputValueError
from serve_support import running


# ---------------------------------------------------------------- §3.3 serve without a range
@pytest.fixture
def served(monkeypatch):
    """``serve`` returns at once instead of serving until stopped (what it would have served is
    in the list)."""
    import deepbandits.serve.server as server

    calls = []
    monkeypatch.setattr(server, "run", lambda app, sock: calls.append(app))
    return calls


@pytest.mark.parametrize(
    ("spec", "fixed"),
    [
        ("neural-sigma2-linucb", "neural-sigma2-linucb:reward_range=[0,1]"),
        ("sigma2-linucb:alpha=0.5", "sigma2-linucb:alpha=0.5,reward_range=[0,1]"),
        ("range-mse:hidden=8", "range-mse:hidden=8,reward_range=[0,1]"),
    ],
)
def test_serve_refuses_a_policy_without_the_reward_range_it_needs(
    spec, fixed, served, tmp_path, capsys
):
    state = tmp_path / "state"
    assert main(["serve", "--policy", spec, "--state", str(state), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deepbandits: error: --policy {spec} needs the range [a, b]")
    assert f"--policy '{fixed}'" in err and "Traceback" not in err
    assert not served and not state.exists()


def test_serve_refuses_a_checkpoint_saved_without_the_reward_range(served, tmp_path, capsys):
    from deepbandits.policies import make_policy

    make_policy("sigma2-linucb", seed=0).save(tmp_path / "policy.pt")
    argv = ["serve", "--checkpoint", str(tmp_path / "policy.pt"), "--port", "0"]
    assert main([*argv, "--state", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err
    assert "its policy, sigma2-linucb, needs the range [a, b]" in err
    assert "--policy 'sigma2-linucb:reward_range=[0,1]'" in err
    assert not served and not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    "spec",
    [
        "neural-sigma2-linucb:reward_range=[0,1],hidden=8",
        "neural-sigma2-linucb:variance=oracle,hidden=8",  # takes each reward's σ² instead
        "linucb",
    ],
)
def test_serve_starts_a_policy_that_has_or_needs_no_reward_range(spec, served, tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["serve", "--policy", spec, "--state", str(state), "--port", "0"]) == 0
    assert len(served) == 1 and "warning" not in capsys.readouterr().err


def test_an_existing_folder_without_a_range_is_served_with_a_warning(served, tmp_path, capsys):
    """Its specification cannot change: it is served, and told what its rewards need."""
    from deepbandits.serve.state import ServiceState

    ServiceState(tmp_path / "state", policy="sigma2-linucb:seed=0").close()
    assert main(["serve", "--state", str(tmp_path / "state"), "--port", "0"]) == 0
    err = capsys.readouterr().err
    assert len(served) == 1
    assert "deepbandits: warning: this service's policy, sigma2-linucb:seed=0, bounds" in err


def test_a_reward_without_a_range_is_refused_with_the_service_s_advice(tmp_path):
    """The 422 of a service built from Python: what to send, or how to serve it instead."""
    X = np.random.default_rng(0).normal(size=(3, 2))
    with running(tmp_path / "state", "sigma2-linucb:seed=0") as (_, client):
        decision = client.decide(X)
        with pytest.raises(InputValueError) as refused:
            client.learn(decision, 0.5)
        message = str(refused.value)
        assert '"reward_range": [a, b]' in message and "POST /v1/reward" in message
        assert "deepbandits serve --policy 'sigma2-linucb:seed=0,reward_range=[a,b]'" in message
        assert "update()" not in message  # not the advice for a policy in Python
        assert client.learn(decision, 0.5, reward_range=(0.0, 1.0))["rewards_learned"] == 1


def test_the_range_check_leaves_the_folder_of_another_policy_to_the_service(tmp_path):
    from deepbandits.cli.serve import refuse_without_reward_range
    from deepbandits.serve.state import ServiceState

    ServiceState(tmp_path / "state", policy="linucb:seed=0").close()
    args = argparse.Namespace(policy="sigma2-linucb", checkpoint=None, state=tmp_path / "state")
    refuse_without_reward_range(args)  # the service says the folder serves another policy


# ---------------------------------------------------------------- §3.7 nothing left behind

#: Commands refused after their output folder is checked (``--out`` is added to each).
REFUSED = {
    "run, a bad parameter": ["run", "--policy", "linucb:alpha=x", "--T", "5"],
    "compare, an unknown policy": ["compare", "--policy", "nosuch", "--T", "5"],
    "compare, a bad environment": ["compare", "--policy", "linucb", "--env", "h1:d=-1"],
    "tune, an unknown search name": ["tune", "--policy", "linucb", "--search", "bogus"],
    "reproduce, an unknown environment": ["reproduce", "matched", "--quick", "--envs", "nosuch"],
    "ope, a missing log": ["ope", "--log", "nosuch.csv", "--policy", "linucb"],
}


@pytest.mark.parametrize("argv", REFUSED.values(), ids=REFUSED.keys())
def test_a_refused_command_leaves_nothing_behind(argv, tmp_path, capsys):
    out = tmp_path / "new" / "out"
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    assert "deepbandits: error: " in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"  # a folder of the user's own stays, and stays empty
    empty.mkdir()
    assert main([*argv, "--out", str(empty), "--no-progress"]) == 2
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_a_refused_service_leaves_no_state_folder(tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["serve", "--policy", "nosuch", "--state", str(state), "--port", "0"]) == 2
    assert "unknown policy 'nosuch'" in capsys.readouterr().err
    assert not state.exists()


def test_a_lock_left_with_nothing_else_is_removed_with_the_folders_it_made(tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(InputValueError), folder_lock(out):
        assert (out / LOCK_NAME).exists()
        raise InputValueError("refused")
    assert not (tmp_path / "a").exists()
    with folder_lock(out):
        (out / "result.csv").write_text("x\n")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME, "result.csv"]
    with folder_lock(out), folder_lock(out):  # nested: the outer block decides
        pass
    assert (out / LOCK_NAME).exists()


def test_a_lock_file_removed_by_its_holder_is_not_taken(tmp_path, monkeypatch):
    """A process that opened the lock file just before its holder removed it (the folder held
    nothing else) takes the lock of the file now at that path, not of the removed one."""
    import deepbandits._io as io

    out = tmp_path / "out"
    real_open = io._open_lock
    opened = []

    def open_then_removed(folder):
        fd = real_open(folder)
        if not opened:  # the holder leaves at once, removing the file just opened
            (folder / LOCK_NAME).unlink()
        opened.append(fd)
        return fd

    monkeypatch.setattr(io, "_open_lock", open_then_removed)
    with folder_lock(out):
        (out / "result.csv").write_text("x\n")
        assert len(opened) == 2
        assert (out / LOCK_NAME).read_text().strip().isdigit()


# ---------------------------------------------------------------- §3.9 report and tune
@pytest.fixture(scope="module")
def classified(tmp_path_factory):
    """A comparison on a classification bandit (a small table, 3 classes) and its report."""
    import pandas as pd

    from deepbandits.experiments.compare import compare
    from deepbandits.report import build_report

    root = tmp_path_factory.mktemp("classified")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    table = pd.DataFrame(X, columns=list("abcd")).assign(y=np.argmax(X[:, :3], axis=1))
    table.to_csv(root / "table.csv", index=False)
    env = f"table:path={root / 'table.csv'},label=y"
    summary = compare(["linucb", "sigma2-linucb"], env, [0, 1], 80, root / "out", progress=False)
    page, _ = build_report(root / "out", root / "report")
    return summary, page, root / "report" / "out"


def test_the_html_report_has_the_accuracy_and_unplayed_arm_columns(classified):
    import pandas as pd

    summary, page, folder = classified
    html = page.read_text()
    for heading in (
        "accuracy, last 1000",
        "arms never played, last 1000",
        "of them locked out (best in ≥ 1 % of those rounds)",
    ):
        assert f"<th>{heading}" in html
    reported = pd.read_csv(folder / "summary.csv").set_index("policy")
    printed = summary.set_index("policy")
    np.testing.assert_allclose(reported["accuracy_last_mean"], printed["accuracy_last"])
    np.testing.assert_allclose(reported["unplayed_arms_mean"], printed["unplayed_arms_mean"])
    np.testing.assert_allclose(reported["locked_out_arms_mean"], printed["locked_out_arms_mean"])
    runs = pd.read_csv(folder / "runs.csv")
    assert runs["accuracy_last"].between(0, 1).all() and runs["unplayed_arms"].between(0, 3).all()


def test_a_report_without_classification_has_no_such_columns(tmp_path):
    from deepbandits.experiments.compare import compare
    from deepbandits.report import build_report

    compare(["linucb"], "h1", [0], 30, tmp_path / "out", progress=False)
    page, _ = build_report(tmp_path / "out", tmp_path / "report")
    assert "accuracy, last" not in page.read_text()
    assert "accuracy_last_mean" not in (tmp_path / "report" / "out" / "summary.csv").read_text()


def test_tune_prints_a_compare_command_with_an_output_folder(tmp_path, capsys, monkeypatch):
    import shlex

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tuned dir"
    args = ["tune", "--policy", "linucb", "--env", "h1", "--T", "30", "--tuning-seeds", "100"]
    args += ["--eval-seeds", "0", "--trials", "2", "--search", "alpha", "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    line = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("deepbandits ")
    )
    argv = shlex.split(line.partition("#")[0])
    assert argv[argv.index("--out") + 1] == str(out / "best")
    assert main([*argv[1:], "--no-progress"]) == 0  # the command as printed runs
    assert (out / "best" / "summary.csv").exists() and not (tmp_path / "results").exists()
