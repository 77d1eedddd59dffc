"""Training off the request path: the service keeps answering while a network trains, the new
version is swapped in and logged, and decisions made before the swap are learned with the
features they were made with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

import deepbandits as db
from deepbandits.policies.parts.trainer import run_training
from deepbandits.serve import state as state_module
from deepbandits.serve import trainer_process, training
from deepbandits.serve.state import ServiceState
from serve_support import contexts_stream, running, wait_idle

# unit weights (no variance source): a reward adds exactly w·φφᵀ with w = 1 to A;
# one training, due after the 5th reward, long enough (about a second) to decide during it
SLOW = (
    "neural-linucb:hidden=8,feature_dim=4,train_start=5,train_every=100000,warmup_every=0,"
    "train_steps=15000,batch_size=8,seed=0"
)


def test_decisions_are_answered_while_the_network_trains_and_learned_with_their_features(
    tmp_path,
):
    stream = contexts_stream(5, 12)
    with running(tmp_path / "s", SLOW) as (state, client):
        for X in stream[:4]:
            client.learn(client.decide(X), 0.5)
        d = client.decide(stream[4])
        start = time.perf_counter()
        client.learn(d, 0.5)  # the 5th reward: a training is due
        answered = time.perf_counter() - start
        assert state.training, "the training should run after the reward was answered"
        during = []
        for X in stream[5:9]:
            during.append(client.decide(X))
            # answered while the training still runs: the decision did not wait for it
            assert state.training, "the decisions should have been answered during the training"
        assert all(x.model_version == 0 for x in during)
        old = state.policy.pending_.lookup(during[0].id, state.policy.pending_.n_decided, 0.0)
        started = time.perf_counter()
        wait_idle(state)
        assert time.perf_counter() - started > answered  # it trained after answering
        health = client.health()
        assert health["model_version"] == 1 and health["trainings"] == 1
        after = client.decide(stream[9])
        assert after.model_version == 1
        new_features = state.policy.features.transform(stream[5])[0][during[0].arm]
        assert not np.allclose(new_features, old.features)  # the network did change
        A = state.policy.ridge_.A[0].copy()
        client.learn(during[0], 1.0)  # made before the swap: learned with its own features
        np.testing.assert_allclose(
            state.policy.ridge_.A[0] - A, np.outer(old.features, old.features), atol=1e-12
        )
        text = client.metrics()
        assert "deepbandits_trainings_total 1.0" in text
        assert "deepbandits_training_seconds_count 1.0" in text
        assert "deepbandits_model_version 1.0" in text
        versions = [e.model_version for e in state.log.read() if e.kind in ("decision", "network")]
        assert versions == [0] * 9 + [1, 1]  # the swap is logged between the decisions
        before = state.policy.ridge_.A.copy()
    with ServiceState(tmp_path / "s") as restarted:
        assert restarted.model_version == 1
        assert np.array_equal(restarted.policy.ridge_.A, before)


def test_a_training_due_when_the_service_stops_runs_after_the_restart(tmp_path):
    stream = contexts_stream(6, 5)
    folder = tmp_path / "s"
    with running(folder, SLOW) as (state, client):
        for X in stream:
            client.learn(client.decide(X), 0.5)
        assert state.training
    # closing waited for the training in flight (at most CLOSE_WAIT seconds) and swapped it in
    with ServiceState(folder) as restarted:
        assert restarted.model_version in (0, 1)
        if restarted.model_version == 0:  # dropped on the way out: due again, started again
            assert restarted.training
        wait_idle(restarted)
        assert restarted.model_version == 1


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no scheduling priorities here")
def test_the_network_trains_in_a_process_of_lower_priority(tmp_path):
    with running(tmp_path / "s", SLOW) as (state, client):
        for X in contexts_stream(7, 5):
            client.learn(client.decide(X), 0.5)
        assert state.training
        wait_idle(state)
        assert state.model_version == 1
    pid = training.PROCESS.call(os.getpid)
    assert pid == training.PROCESS.pid and pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(
        19, os.getpriority(os.PRIO_PROCESS, 0) + trainer_process.NICE
    )


def test_what_the_training_process_raises_is_raised_and_a_dead_one_is_replaced():
    process = trainer_process.TrainingProcess()
    try:
        with pytest.raises(ZeroDivisionError):
            process.call(divmod, 1, 0)
        first = process.call(os.getpid)
        with pytest.raises(db.ServiceError, match="training process ended"):
            process.call(os._exit, 3)
        assert process.call(os.getpid) != first  # a new process
        assert process.call(divmod, 7, 2) == (3, 1)
    finally:
        process.close()


def test_a_script_without_a_main_guard_serves_and_trains(tmp_path):
    """The training process never imports the user's script again (``spawn`` would: the
    script, without ``if __name__ == "__main__":``, would run from the top in the child)."""
    # a short training, waited for before close() (which waits CLOSE_WAIT seconds only: the
    # child's start alone can take more on a loaded 2-core machine)
    quick = SLOW.replace("train_steps=15000", "train_steps=300")
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import time
            import numpy as np
            from deepbandits.serve.state import ServiceState
            print("started", flush=True)
            state = ServiceState({str(tmp_path / "s")!r}, policy={quick!r})
            rng = np.random.default_rng(0)
            for _ in range(5):
                decision, _ = state.decide(rng.standard_normal((3, 5)))
                state.learn(decision.id, 0.5)[1].result()
            # close() drops a training still running after CLOSE_WAIT: wait for it here
            deadline = time.monotonic() + 90
            while state.health()["training"] and time.monotonic() < deadline:
                time.sleep(0.05)
            state.close()
            print("version", state.model_version, flush=True)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.split() == ["started", "version", "1"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_training_process_exits_when_its_server_is_killed():
    code = (
        "import os, time\n"
        "from deepbandits.serve import training\n"
        "print(training.PROCESS.call(os.getpid), flush=True)\n"
        "time.sleep(60)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    child = int(server.stdout.readline())
    os.kill(server.pid, signal.SIGKILL)
    server.wait(30)
    deadline = time.monotonic() + 30
    while _alive(child):
        assert time.monotonic() < deadline, "the training process outlived its server"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # an unreaped zombie is not running
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_training_off_the_request_path_trains_theta_as_one_in_learn_does():
    """With train_theta, the copy the service trains steps θ with the network, as ``learn``'s
    own training does: the same weights and, after the refit, the same A."""
    params = dict(
        hidden=8,
        feature_dim=4,
        train_start=5,
        train_every=100000,
        warmup_every=0,
        train_steps=40,
        batch_size=4,
        refit_on_update=True,
        seed=0,
    )
    rng = np.random.default_rng(0)
    rounds = [(rng.standard_normal((3, 5)), float(rng.random())) for _ in range(5)]
    inline, deferred, fixed = (
        db.make_policy("neural-linucb", train_theta=t, **params) for t in (True, True, False)
    )
    training.trainer_of(deferred).defer()
    for policy in (inline, deferred, fixed):
        for X, reward in rounds:
            policy.update(X, policy.select(X), reward)
    assert training.trainer_of(deferred).due_ == 5
    deferred.apply_training(run_training(deferred.prepare_training()))
    weights = [
        training.trainer_of(p).learner_.network.state_dict() for p in (inline, deferred, fixed)
    ]
    for key, value in weights[0].items():
        assert torch.equal(value, weights[1][key])
    assert not all(torch.equal(value, weights[2][key]) for key, value in weights[0].items())
    np.testing.assert_array_equal(inline.ridge_.A, deferred.ridge_.A)


def test_a_call_past_its_timeout_kills_the_process_and_close_never_waits_on_a_busy_one():
    process = trainer_process.TrainingProcess()
    try:
        first = process.call(os.getpid)
        start = time.monotonic()
        with pytest.raises(db.ServiceError, match="did not answer within 1 s"):
            process.call(time.sleep, 60, timeout=1.0)
        assert time.monotonic() - start < 10
        assert not _alive(first)  # killed, not left behind
        assert process.call(os.getpid, timeout=60.0) != first  # a new process answers
        with pytest.raises(db.InputValueError, match="timeout must be > 0 seconds or None"):
            process.call(os.getpid, timeout=0)
        hung = process.pid
        os.kill(hung, signal.SIGSTOP)  # a call on a stopped child blocks on its pipes
        errors = []

        def call() -> None:
            try:
                process.call(os.getpid)
            except db.ServiceError as exc:
                errors.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        time.sleep(0.2)
        start = time.monotonic()
        process.close()  # before: closing stdin under the blocked writer never returned
        caller.join(10)
        assert time.monotonic() - start < 5 and not caller.is_alive()
        assert errors and "ended" in str(errors[0]) and not _alive(hung)
    finally:
        process.close()


# the training after a failure: short, so that it fits the test's time limit
QUICK = SLOW.replace("train_steps=15000", "train_steps=300")


def _due_with_a_stopped_process(state: ServiceState) -> int:
    """Four rewards, a ready training process stopped (SIGSTOP: it hangs), then the fifth
    reward, which starts the training due; returns the stopped process's id."""
    stream = contexts_stream(8, 5)
    for X in stream[:4]:
        decision, _ = state.decide(X)
        state.learn(decision.id, 0.5)[1].result()
    hung = training.PROCESS.call(os.getpid)  # started and ready
    os.kill(hung, signal.SIGSTOP)
    decision, _ = state.decide(stream[4])
    state.learn(decision.id, 0.5)[1].result()
    assert state.training
    return hung


def test_a_hung_training_fails_after_its_timeout_and_the_next_runs_in_a_new_process(tmp_path):
    state = ServiceState(tmp_path / "s", policy=QUICK, training_timeout=2.0)
    try:
        hung = _due_with_a_stopped_process(state)
        wait_idle(state, timeout=20)  # before: it waited for the stopped process forever
        health = state.health()
        assert health["training_failures"] == 1 and health["model_version"] == 0
        assert "did not answer within 2 s" in health["last_training_error"]
        assert not _alive(hung)
        assert training.PROCESS.call(os.getpid) != hung  # a new process, ready
        # the retry gets time for a real training: 2 s was too little on a loaded 2-core machine
        state.training_timeout = 60.0
        assert state.maybe_train()  # still due: the next reward (or this call) retries it
        wait_idle(state, timeout=60)
        health = state.health()
        assert health["model_version"] == 1 and health["trainings"] == 1
        assert health["training_failures"] == 1
    finally:
        start = time.monotonic()
        state.close()
        assert time.monotonic() - start < 2


def test_close_kills_a_hung_training_process_instead_of_waiting_on_it(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "CLOSE_WAIT", 0.5)
    state = ServiceState(tmp_path / "s", policy=QUICK, training_timeout=None)
    try:
        hung = _due_with_a_stopped_process(state)
    finally:
        start = time.monotonic()
        state.close()
    assert time.monotonic() - start < 3
    assert not _alive(hung) and not state.training
    assert state.training_failures == 1  # dropped: still due after a restart


def test_the_training_timeout_is_checked():
    with pytest.raises(db.InputValueError, match="training_timeout must be a number"):
        ServiceState("unused", policy=QUICK, training_timeout=0)
