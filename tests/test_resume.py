"""Resuming sweeps: damaged run files are run again, an output folder is used by one sweep at a
time, worker processes die with the sweep, and ``run`` refuses bad arguments up front."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import deepbandits as db
from deepbandits._io import LOCK_NAME, folder_lock
from deepbandits.errors import ConcurrentUseError, InputTypeError, InputValueError
from deepbandits.experiments.compare import compare
from deepbandits.experiments.config import builtin_config
from deepbandits.experiments.executors import LocalExecutor
from deepbandits.experiments.matched import run_matched
from deepbandits.experiments.reproduce import run_experiment
from deepbandits.experiments.runner import (
    RunResult,
    UnfinishedRunError,
    load_finished,
    table_path,
)
from deepbandits.experiments.tune import tune

SRC = Path(db.__file__).parent
SEEDS = [0, 1]
SWEEP = dict(
    policy_specs=["linucb"],
    env_spec="h1:d=4",
    seeds=SEEDS,
    T=40,
    progress=False,
    checkpoints=[0, 40],
    holdout_size=5,
)
#: Columns that differ between two runs of one configuration.
TIMES = ["time_select", "time_update", "time_train"]
#: Configuration entries that differ between two runs of one configuration.
VOLATILE = {"started", "wall_seconds", "files"}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A finished comparison (two seeds, with hold-out forecasts)."""
    out = tmp_path_factory.mktemp("clean")
    compare(out=out, **SWEEP)
    return out


def stem(out, seed):
    return out / "linucb" / f"seed_{seed}"


def files(out, seed):
    s = stem(out, seed)
    return [s.with_suffix(".json"), s.with_suffix(".csv"), table_path(s, "holdout")]


def same_results(out, clean):
    """The runs in ``out`` are those of the clean comparison (timings aside)."""
    for seed in SEEDS:
        got, want = load_finished(stem(out, seed)), load_finished(stem(clean, seed))
        pd.testing.assert_frame_equal(
            got.records.drop(columns=TIMES), want.records.drop(columns=TIMES)
        )
        pd.testing.assert_frame_equal(got.holdout, want.holdout)
        strip = lambda c: {k: v for k, v in c.items() if k not in VOLATILE}  # noqa: E731
        assert strip(got.config) == strip(want.config)


def cut(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def drop_last_row(path):
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))


def edit_json(path, **changes):
    config = json.loads(path.read_text())
    config.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del config[key]
    path.write_text(json.dumps(config))


def without_digests(out):
    """The runs as written before the JSON recorded its files' digests."""
    for seed in SEEDS:
        edit_json(stem(out, seed).with_suffix(".json"), files=None)


# Ways a run's files stop being a finished run: (name, damage to seed 1 of a finished folder).
DAMAGE = {
    "json truncated": lambda out: cut(stem(out, 1).with_suffix(".json")),
    "json empty": lambda out: stem(out, 1).with_suffix(".json").write_text(""),
    "json not an object": lambda out: stem(out, 1).with_suffix(".json").write_text("[1]"),
    "json missing": lambda out: stem(out, 1).with_suffix(".json").unlink(),
    "json of another seed": lambda out: shutil.copy(
        stem(out, 0).with_suffix(".json"), stem(out, 1).with_suffix(".json")
    ),
    "json of another T": lambda out: edit_json(stem(out, 1).with_suffix(".json"), T=30),
    "csv truncated": lambda out: cut(stem(out, 1).with_suffix(".csv")),
    "csv one row short": lambda out: drop_last_row(stem(out, 1).with_suffix(".csv")),
    "csv missing": lambda out: stem(out, 1).with_suffix(".csv").unlink(),
    "csv of another seed": lambda out: shutil.copy(
        stem(out, 0).with_suffix(".csv"), stem(out, 1).with_suffix(".csv")
    ),
    "holdout truncated": lambda out: cut(table_path(stem(out, 1), "holdout")),
    "holdout missing": lambda out: table_path(stem(out, 1), "holdout").unlink(),
    "csv one row short, json without digests": lambda out: (
        without_digests(out),
        drop_last_row(stem(out, 1).with_suffix(".csv")),
    ),
    "csv of another seed, json without digests": lambda out: (
        without_digests(out),
        shutil.copy(stem(out, 0).with_suffix(".csv"), stem(out, 1).with_suffix(".csv")),
    ),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_run_files_are_not_a_finished_run(clean, tmp_path, damage):
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    DAMAGE[damage](out)
    with pytest.raises(UnfinishedRunError, match="seed_1"):
        load_finished(stem(out, 1))
    assert isinstance(load_finished(stem(out, 0)), RunResult)


@pytest.mark.parametrize(
    "damage", ["json truncated", "csv truncated", "json of another seed", "holdout missing"]
)
def test_resume_runs_only_the_damaged_run_again(clean, tmp_path, damage):
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    DAMAGE[damage](out)
    kept = {p: p.stat().st_mtime_ns for p in files(out, 0)}
    with pytest.warns(UserWarning, match=r"seed_1.*running it again"):
        compare(out=out, **SWEEP)
    assert {p: p.stat().st_mtime_ns for p in files(out, 0)} == kept
    same_results(out, clean)


def test_runs_written_without_digests_are_reused(clean, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    without_digests(out)
    kept = {p: p.read_bytes() for seed in SEEDS for p in files(out, seed)}
    compare(out=out, **SWEEP)
    assert {p: p.read_bytes() for p in kept} == kept


def test_a_finished_run_of_another_configuration_is_refused_and_kept(clean, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    for src, dst in zip(files(out, 0), files(out, 1), strict=True):
        shutil.copy(src, dst)  # a finished run, but of seed 0
    kept = {p: p.read_bytes() for p in files(out, 1)}
    with pytest.raises(InputValueError, match=r"seed_1 was run with seed 0 \(now 1\)"):
        compare(out=out, **SWEEP)
    assert {p: p.read_bytes() for p in kept} == kept


def test_a_save_that_fails_leaves_no_finished_run(clean, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    other = load_finished(stem(out, 0))
    from deepbandits.experiments import storage as runner

    def fail_on_json(path, data):
        if Path(path).suffix == ".json":
            raise OSError("killed")
        return real(path, data)

    real = runner.write_atomic
    monkeypatch.setattr(runner, "write_atomic", fail_on_json)
    with pytest.raises(OSError, match="killed"):
        other.save(stem(out, 1))  # replaces seed 1's CSV files, then fails
    with pytest.raises(UnfinishedRunError):
        load_finished(stem(out, 1))


# ------------------------------------------------------------------------------ folder lock
# A process that takes a folder and keeps it (it imports only deepbandits._io, not torch).
HOLDER = f"""
import sys, time, types
package = types.ModuleType("deepbandits")
package.__path__ = [{str(SRC)!r}]
sys.modules["deepbandits"] = package
from deepbandits._io import folder_lock
from deepbandits.errors import ConcurrentUseError
try:
    with folder_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(120)
except ConcurrentUseError as exc:
    print(f"refused: {{exc}}", flush=True)
"""


def hold(folder):
    """A process that holds ``folder``, or what it said when it could not take it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    said = holder.stdout.readline()
    if said != "locked\n":
        holder.wait()
        holder.stdout.close()
        return said
    return holder


def release(holder):
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()


def test_a_second_sweep_into_a_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "out"
    holder = hold(out)
    try:
        sweeps = {
            "compare": lambda: compare(out=out, **SWEEP),
            "reproduce": lambda: run_experiment(
                builtin_config("linear"),
                out,
                T=20,
                seeds=[0],
                executor=LocalExecutor(1),
                progress=False,
            ),
            "tune": lambda: tune(
                "linucb", "h1", T=20, tuning_seeds=[1], eval_seeds=[0], out=out, n_trials=1
            ),
            "matched": lambda: run_matched(out, quick=True, envs=["h1"], T=20, progress=False),
        }
        for name, sweep in sweeps.items():
            with pytest.raises(ConcurrentUseError) as refused:
                sweep()
            assert str(out) in str(refused.value) and f"PID {holder.pid}" in str(refused.value), (
                name
            )
        assert sorted(os.listdir(out)) == [LOCK_NAME]  # nothing was written
    finally:
        release(holder)
    compare(out=out, **SWEEP)  # free once the holder is gone, however it ended
    assert (out / "summary.csv").exists()


def test_one_process_may_nest_locks_on_its_folder_and_frees_it(tmp_path):
    out = tmp_path / "out"
    with folder_lock(out):
        compare(out=out, **SWEEP)  # as reproduce does
        said = hold(out)
        assert (
            said.startswith(f"refused: the output folder {out} is in use")
            and str(os.getpid()) in said
        )
    release(hold(out))  # free again


def test_an_output_folder_that_cannot_be_made_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InputValueError, match=r"cannot use .*file/out as an output folder"):
        compare(out=tmp_path / "file" / "out", **SWEEP)


# ------------------------------------------------------------------------------ worker pools
# A sweep that runs a long task in a worker_pool worker (no torch: the spawned worker re-runs
# this file's top, which makes deepbandits a bare package, before it loads the task).
SWEEP_SCRIPT = f"""
import os, sys, time, types
package = types.ModuleType("deepbandits")
package.__path__ = [{str(SRC)!r}]
sys.modules["deepbandits"] = package
from deepbandits._io import worker_pool


def task(path):
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
    while True:
        time.sleep(0.1)


if __name__ == "__main__":
    with worker_pool(1) as pool:
        pool.submit(task, sys.argv[1]).result()
"""


def ended(pid):
    """Whether process ``pid`` has exited (a zombie nobody reaped has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_exit_when_the_sweep_is_killed(tmp_path):
    script, pid_file = tmp_path / "sweep.py", tmp_path / "worker.pid"
    script.write_text(SWEEP_SCRIPT)
    sweep = subprocess.Popen([sys.executable, str(script), str(pid_file)])
    try:
        while not pid_file.exists():
            assert sweep.poll() is None, "the sweep ended before its worker started"
            time.sleep(0.05)
        worker = int(pid_file.read_text())
        assert not ended(worker)
    finally:
        sweep.send_signal(signal.SIGKILL)
        sweep.wait()
    try:
        for _ in range(200):  # the worker checks its parent every PARENT_POLL_SECONDS
            if ended(worker):
                break
            time.sleep(0.05)
        assert ended(worker)
    finally:
        if not ended(worker):
            os.kill(worker, signal.SIGKILL)


# ------------------------------------------------------------------------------ run's arguments
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"policy": 42}, InputTypeError, "policy must be a deepbandits Policy object or a policy"),
        ({"policy": None}, InputTypeError, "but a NoneType is given"),
        ({"env": "h1"}, InputTypeError, "env must be a deepbandits Environment"),
        ({"T": "5"}, InputTypeError, "T must be an integer"),
        ({"T": 2.5}, InputTypeError, "T must be an integer"),
        ({"T": True}, InputTypeError, "T must be an integer"),
        ({"T": 0}, InputValueError, "T must be >= 1"),
        ({"seed": -1}, InputValueError, "seed must be >= 0"),
        ({"seed": "0"}, InputTypeError, "seed must be an integer"),
        ({"threads": 0}, InputValueError, "threads must be >= 1"),
        ({"threads": "2"}, InputTypeError, "threads must be an integer"),
        ({"callback_every": 0}, InputValueError, "callback_every must be >= 1"),
        ({"callback": 5}, InputTypeError, "callback must be a function"),
        ({"checkpoints": "0"}, InputTypeError, "checkpoints must be a sequence"),
        ({"checkpoints": [11]}, InputValueError, "checkpoint 11 is after the last round T=10"),
        ({"checkpoints": [5], "holdout_size": 0}, InputValueError, "holdout_size must be >= 1"),
    ],
)
def test_run_refuses_bad_arguments_before_touching_anything(kwargs, error, match):
    env = db.make_env("h1", d=4, seed=0)
    policy = db.make_policy("linucb", seed=0)
    before = (policy.get_params(), env.get_params())
    args = {"policy": policy, "env": env, "T": 10, "seed": 0, **kwargs}
    with pytest.raises(error, match=match):
        db.run(**args)
    assert (policy.get_params(), env.get_params()) == before  # no horizon given, no reset
    assert policy.get_params()["horizon"] is None


def test_run_builds_a_policy_from_its_specification():
    result = db.run("linucb:alpha=0.5", db.make_env("h1", d=4), 10, seed=0)
    assert result.config["policy"]["params"]["alpha"] == 0.5 and len(result.records) == 10
