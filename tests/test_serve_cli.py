"""``deepbandits serve`` as a real process, ``deepbandits export-log``, and the mistakes both
report in one line with exit status 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from deepbandits.cli import main
from deepbandits.client import ServiceClient
from serve_support import LINUCB, NEURAL, contexts_stream, reward_of, running


def test_export_log_round_trip(tmp_path, capsys):
    folder = tmp_path / "s"
    stream = contexts_stream(7, 12, K=4, d=3)
    with running(folder, LINUCB) as (_, client):
        decisions = [client.decide(X, mask=[True, True, False, True]) for X in stream[:6]]
        decisions += client.decide_batch(stream[6:])
        for d, X in list(zip(decisions, stream, strict=True))[::2]:
            client.learn(d, reward_of(X, d.arm))
    for fmt in ("parquet", "csv"):
        out = tmp_path / f"log.{fmt}"
        assert main(["export-log", str(folder), "--format", fmt, "--out", str(out)]) == 0
        assert f"12 decisions (6 with a reward) written to {out}" in capsys.readouterr().out
        table = pd.read_parquet(out) if fmt == "parquet" else pd.read_csv(out)
        assert list(table["decision_id"]) == [d.id for d in decisions]
        assert list(table["action"]) == [d.arm for d in decisions]
        np.testing.assert_array_equal(table["propensity"], [d.propensity for d in decisions])
        assert table["reward"].notna().sum() == 6 and table["time_rewarded"].notna().sum() == 6
        assert table["reward"].iloc[0] == reward_of(stream[0], decisions[0].arm)
        assert (table["time_rewarded"].dropna() >= table["time_decided"][::2]).all()
        contexts = table["contexts"].iloc[3]
        if fmt == "csv":
            contexts = json.loads(contexts)
        np.testing.assert_array_equal(np.array([list(row) for row in contexts]), stream[3])
        mask = table["mask"].iloc[0]
        assert list(json.loads(mask) if fmt == "csv" else mask) == [True, True, False, True]
        assert table["mask"].iloc[7] is None or pd.isna(table["mask"].iloc[7])
        assert (table["model_version"] == 0).all() and (table["n_arms"] == 4).all()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["serve", "--state", "{tmp}/new"], "needs a policy"),
        (["serve", "--policy", "nope", "--state", "{tmp}/a"], "unknown policy 'nope'"),
        (["serve", "--policy", "linucb", "--checkpoint", "x.pt", "--state", "{tmp}/b"], "not"),
        (["serve", "--policy", "linucb", "--state", "{tmp}/c", "--port", "70000"], "65535"),
        (["serve", "--checkpoint", "{tmp}/missing.pt", "--state", "{tmp}/d"], "no saved"),
        (["serve", "--policy", "linucb", "--state", "{tmp}/e", "--durability", "x"], "choice"),
        (["export-log", "{tmp}", "--out", "{tmp}/x.parquet"], "holds no event log"),
        (["export-log", "{tmp}", "--format", "xml", "--out", "x"], "choice"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(tmp_path, capsys, argv, words):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and words in err and "Traceback" not in err


def test_serve_runs_as_a_process_and_stops_with_a_checkpoint(tmp_path):
    folder = tmp_path / "s"
    env = {**os.environ, "DEEPBANDITS_TOKEN": "tok"}
    argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", LINUCB]
    argv += ["--state", str(folder), "--port", "0", "--snapshot-every", "1000"]
    process = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()  # type: ignore[union-attr]
        url = re.search(r"on (http://127\.0\.0\.1:\d+) ", line)
        assert url, line
        with ServiceClient(url[1], token="tok") as client:
            deadline = time.monotonic() + 20
            while True:
                try:
                    health = client.health()
                    break
                except Exception:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            assert health["policy"] == LINUCB and "bearer token required" in line
            for X in contexts_stream(8, 5):
                d = client.decide(X)
                client.learn(d, reward_of(X, d.arm))
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped; checkpoint at event 10" in err
    sidecar = json.loads((folder / "checkpoints" / "ckpt-000000000010.json").read_text())
    assert sidecar["seq"] == 10 and sidecar["rewards_learned"] == 5


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_ctrl_c_stops_a_neural_service_and_its_training_process_without_a_traceback(tmp_path):
    # Ctrl-C at a terminal sends SIGINT to the whole process group: the server and its
    # training process; the child printed a KeyboardInterrupt traceback from its read
    folder = tmp_path / "s"
    argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", NEURAL]
    argv += ["--state", str(folder), "--port", "0"]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = process.stderr.readline()  # type: ignore[union-attr]
        url = re.search(r"on (http://127\.0\.0\.1:\d+) ", line)
        assert url, line
        with ServiceClient(url[1]) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.health()
                    break
                except Exception:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            for X in contexts_stream(8, 20):  # train_start=20: one training
                d = client.decide(X)
                client.learn(d, reward_of(X, d.arm))
            # a training answered: the child's imports are done and it waits on its input
            while client.health()["trainings"] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    stopped = re.search(r"stopped; checkpoint at event (\d+) in ", err)
    assert stopped and int(stopped[1]) >= 40, err  # 40 events, and the trainings'
    sidecar = json.loads((folder / "checkpoints" / f"ckpt-{int(stopped[1]):012d}.json").read_text())
    assert sidecar["rewards_learned"] == 20
