"""The command line never shows a traceback for a user error (issue 15, item 4).

A user error is one paragraph on stderr, ``deepbandits: error: ...`` naming the offending
argument, and exit status 2, before any computation; an internal error says where its traceback
was saved, exit status 1. A few cases run the real console script (concurrently, each start
imports torch); the rest of the matrix calls :func:`main` in-process.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import deepbandits.cli as cli
from deepbandits.cli import experiments as experiment_commands
from deepbandits.cli import main
from deepbandits.cli import runs as run_commands
from deepbandits.envs import env_names
from deepbandits.errors import InputValueError
from deepbandits.policies import policy_names

SCRIPT = Path(sys.executable).parent / "deepbandits"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "deepbandits.cli"]
RUN = ["run", "--policy", "linucb", "--T", "5", "--no-progress"]

#: (command line after ``deepbandits``, what the message must name), one per way an error
#: reaches :func:`main` (argument parser, output probe, library); ``{tmp}`` is a folder holding
#: a regular file ``file`` and an empty data directory ``data``.
SCRIPT_CASES = {
    "duplicate seeds": (["compare", "--policy", "linucb", "--seeds", "0-2,1"], "--seeds"),
    "unwritable out": ([*RUN, "--out", "{tmp}/file/x"], "--out '{tmp}/file/x'"),
    "missing dataset": ([*RUN, "--env", "shuttle:download=false"], "DEEPBANDITS_DATA"),
}


@pytest.fixture(scope="module")
def script_results(tmp_path_factory):
    """Run every case of :data:`SCRIPT_CASES` through the console script, all at once."""
    tmp = tmp_path_factory.mktemp("script")
    (tmp / "file").write_text("a file, not a folder")
    (tmp / "data").mkdir()
    env = {**os.environ, "DEEPBANDITS_DATA": str(tmp / "data")}
    procs = {}
    for name, (args, _) in SCRIPT_CASES.items():
        argv = [a.format(tmp=tmp) for a in args]
        if "--out" not in argv:
            argv += ["--out", str(tmp / "out" / name.replace(" ", "_"))]
        procs[name] = subprocess.Popen(
            [*COMMAND, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    results = {name: (p.wait(timeout=120), p.stderr.read()) for name, p in procs.items()}
    for p in procs.values():
        p.stdout.close()
        p.stderr.close()
    return tmp, results


@pytest.mark.parametrize("case", list(SCRIPT_CASES))
def test_console_script_reports_user_errors_in_one_paragraph(script_results, case):
    tmp, results = script_results
    code, err = results[case]
    assert code == 2, err
    assert err.startswith("deepbandits: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    assert SCRIPT_CASES[case][1].format(tmp=tmp) in err
    assert not (tmp / "out").exists() or not any((tmp / "out").rglob("*.csv"))


#: In-process cases: extra arguments appended to a valid command line, and what the message
#: must name.
CASES = [
    (["run", "--policy", "linucb:alpha=1,alpha=2"], "keyword 'alpha' is given twice"),
    (["run", "--policy", "linucb", "--env", "h1:d=3,d=4"], "keyword 'd' is given twice"),
    (["compare", "--policy", "linucb", "neural-ucb:hidden=8,hidden=9"], "'hidden' is given twice"),
    (["run", "--policy", "linucbx"], "unknown policy 'linucbx'"),
    (["run", "--policy", "linucb", "--env", "h9"], "unknown environment 'h9'"),
    (["run", "--policy", "linucb", "--seeds", "0,0,1"], "--seeds: seed 0 listed more than once"),
    (["run", "--policy", "linucb", "--seeds", "0-2,1-3"], "--seeds: seeds 1, 2 listed"),
    (["run", "--policy", "linucb", "--seeds", "-1"], "--seeds: seeds must look like"),
    (["run", "--policy", "linucb", "--seeds", "1.5"], "'1.5' is not a seed or range"),
    (["run", "--policy", "linucb", "--seeds", "3-1"], "range '3-1' is empty"),
    (["compare", "--policy", "linucb", "--jobs", "-3"], "--jobs: expected an integer >= 1"),
    (["run", "--policy", "linucb", "--T", "0"], "--T: expected an integer >= 1, got '0'"),
    (["run", "--policy", "linucb", "--holdout", "0"], "--holdout: expected an integer >= 1"),
    (["run", "--policy", "linucb", "--checkpoints", "1,x"], "--checkpoints: expected"),
    (["run", "--policy", "linucb", "--env", "table:path=none.csv,label=y"], "none.csv"),
    (["demo", "--T", "ten"], "--T: expected an integer >= 1, got 'ten'"),
    (["tune", "--policy", "linucb", "--trials", "0"], "--trials: expected an integer >= 1"),
    (["tune", "--policy", "linucb", "--timeout-minutes", "nan"], "--timeout-minutes: expected"),
    (["tune", "--policy", "linucb", "--seed", "-1"], "--seed: expected an integer >= 0"),
    (["tune", "--policy", "linucb", "--tuning-seeds", "5,5"], "--tuning-seeds: seed 5"),
    (["tune", "--policy", "linucb", "--eval-seeds", "x"], "--eval-seeds: seeds must look like"),
    (["tune", "--policy", "linucb", "--jobs", "0"], "--jobs: expected an integer >= 1"),
    (["reproduce", "demo-h1", "--T", "0"], "--T: expected an integer >= 1"),
    (["reproduce", "matched", "--trials", "0"], "--trials: expected an integer >= 1"),
    (["reproduce", "matched", "--seeds", "1,1"], "--seeds: seed 1 listed more than once"),
    (["reproduce", "nope"], "unknown experiment 'nope'"),
    (["runn"], "invalid choice: 'runn'"),
    (["run", "--policy", "linucbb"], "did you mean 'linucb'?"),
    (["run", "--policy", "neural-sigma-linucb"], "did you mean 'neural-sigma2-linucb'?"),
    (["run", "--policy", "linucb", "--polcy", "x"], "unrecognized arguments: --polcy x"),
]


@pytest.fixture
def nothing_runs(monkeypatch):
    """Make every computation of the command line fail the test if it starts."""

    def refuse(*args, **kwargs):
        raise AssertionError("a computation started")

    for name in ("compare", "tune", "build_report"):
        monkeypatch.setattr(run_commands, name, refuse)
    for name in ("run_experiment", "reproduce_all"):
        monkeypatch.setattr(experiment_commands, name, refuse)


@pytest.mark.parametrize(("argv", "message"), CASES)
def test_user_errors_exit_2_naming_the_argument(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize("name", policy_names())
def test_unknown_keyword_of_every_policy_is_an_error(tmp_path, capsys, name):
    assert main([*RUN, "--policy", f"{name}:no_such_kw=1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: unknown option(s) 'no_such_kw'"), err


@pytest.mark.parametrize("name", env_names())
def test_unknown_keyword_of_every_env_is_an_error(tmp_path, capsys, name):
    assert main([*RUN, "--env", f"{name}:no_such_kw=1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: unknown option(s) 'no_such_kw'"), err


@pytest.mark.parametrize(
    "argv",
    [
        RUN,
        ["compare", "--policy", "linucb", "--no-progress"],
        ["demo", "--no-progress"],
        ["reproduce", "demo-h1", "--no-progress"],
        ["reproduce", "matched", "--quick", "--no-progress"],
        ["tune", "--policy", "linucb", "--no-progress"],
        ["report", "."],
    ],
    ids=lambda argv: argv[0] if argv[0] != "reproduce" else f"reproduce-{argv[1]}",
)
def test_unwritable_out_is_refused_before_any_computation(tmp_path, capsys, nothing_runs, argv):
    (tmp_path / "file").write_text("")
    for out in (tmp_path / "file", tmp_path / "file" / "sub"):
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"deepbandits: error: --out {str(out)!r} is ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_out_is_refused(tmp_path, capsys, nothing_runs):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert main([*RUN, "--out", str(folder / "sub")]) == 2
    finally:
        folder.chmod(0o700)
    assert "is not a writable folder: Permission denied" in capsys.readouterr().err


def test_writable_out_is_left_clean(tmp_path):
    assert cli.check_writable(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # made to be probed, then removed (issue 49 §3.7)
    (tmp_path / "c").mkdir()
    assert cli.check_writable(tmp_path / "c") == tmp_path / "c"
    assert list((tmp_path / "c").iterdir()) == []


def _raise(exc: BaseException):
    def command(*args, **kwargs):
        raise exc

    return command


def test_library_and_os_errors_are_one_paragraph(tmp_path, capsys, monkeypatch):
    try:
        raise KeyError("inner")
    except KeyError as inner:
        chained = InputValueError("alpha must be >= 0,\n\nbut -1 is given")
        chained.__cause__ = inner
    out = ["--out", str(tmp_path)]
    monkeypatch.setattr(run_commands, "compare", _raise(chained))
    assert main([*RUN, *out]) == 2
    err = capsys.readouterr().err
    assert err == "deepbandits: error: alpha must be >= 0, but -1 is given\n"
    monkeypatch.setattr(
        run_commands, "compare", _raise(PermissionError(13, "Permission denied", "/x"))
    )
    assert main([*RUN, *out]) == 2
    assert capsys.readouterr().err == "deepbandits: error: Permission denied: /x\n"
    monkeypatch.setattr(run_commands, "compare", _raise(KeyboardInterrupt()))
    assert main([*RUN, *out]) == 130
    assert capsys.readouterr().err == "deepbandits: interrupted\n"


def test_internal_error_saves_its_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(run_commands, "compare", _raise(RuntimeError("boom")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = [*RUN, "--out", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: internal error: RuntimeError: boom. This is a bug")
    assert "Traceback" not in err and err.count("\n") == 1
    (crash,) = (tmp_path / "cache" / "deepbandits" / "crash").glob("crash-*.txt")
    assert str(crash) in err and f"-{os.getpid()}.txt" in crash.name
    saved = crash.read_text()
    assert "Traceback (most recent call last)" in saved and "RuntimeError: boom" in saved
    assert "command: deepbandits run --policy linucb" in saved

    # the cache folder cannot be written: the system's temporary folder
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert main(argv) == 1
    (crash,) = (tmp_path / "tmp" / "deepbandits" / "crash").glob("crash-*.txt")
    assert str(crash) in capsys.readouterr().err

    # nowhere to write: the traceback goes to stderr
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "file"))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "its traceback follows" in err and "Traceback (most recent call last)" in err
