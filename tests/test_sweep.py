"""The sweep engine: jobs and their configuration hashes, resuming, failures, executors, formats,
and every run of a folder as one table."""

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from deepbandits.errors import DataNotFoundError, InputValueError
from deepbandits.experiments import executors
from deepbandits.experiments.compare import compare
from deepbandits.experiments.executors import (
    Job,
    LocalExecutor,
    RayExecutor,
    RayUnavailableError,
    make_executor,
)
from deepbandits.experiments.results import RUN_COLUMNS, load_results
from deepbandits.experiments.runner import COLUMNS, load_finished, run_files
from deepbandits.experiments.sweep import SweepFailedError, failed_path, run_sweep

NEURAL = "neural-linucb:hidden=8,train_steps=5,train_start=10,train_every=10"
POLICIES = ["linucb", NEURAL]
SEEDS = [0, 1]
T = 50
TIMES = ["time_select", "time_update", "time_train"]


def make_jobs(out, **changes):
    """2 policies × 2 seeds on h1, one stem each under ``out``."""
    return [
        Job(spec, "h1:d=4", seed, T, Path(out) / f"p{i}" / f"seed_{seed}", **changes)
        for i, spec in enumerate(POLICIES)
        for seed in SEEDS
    ]


class Counting:
    """An in-process executor that records the jobs it is given."""

    capacity = 1

    def __init__(self):
        self.jobs = []

    def map_unordered(self, jobs):
        self.jobs += jobs
        return LocalExecutor(1).map_unordered(jobs)


def stamps(out):
    """Modification time of every file under ``out``."""
    return {p: p.stat().st_mtime_ns for p in Path(out).rglob("*") if p.is_file()}


def records(out):
    """Every run's records under ``out``, timings dropped."""
    return load_results(out).drop(columns=TIMES)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A finished sweep of 2 policies × 2 seeds, computed in this process."""
    out = tmp_path_factory.mktemp("swept")
    result = run_sweep(make_jobs(out), executor=LocalExecutor(1), progress=False)
    assert len(result.done) == 4 and not result.skipped and not result.failed
    return out


@pytest.fixture
def copy(swept, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(swept, out)
    return out


def test_a_sweep_writes_each_run_with_its_config_hash(swept):
    for job in make_jobs(swept):
        run = load_finished(job.stem)
        assert run.config["config_hash"] == job.config_hash
        assert run.config["job"] == job.identity
        assert run.config["policy"]["spec"] == job.policy_spec and len(run.records) == T
    names = sorted(p.relative_to(swept).as_posix() for p in swept.rglob("*") if p.is_file())
    assert names == [
        f"p{i}/seed_{s}.{ext}" for i in (0, 1) for s in SEEDS for ext in ("csv", "json")
    ]


def test_a_second_sweep_skips_every_finished_job(copy):
    before = stamps(copy)
    counting = Counting()
    result = run_sweep(make_jobs(copy), executor=counting, progress=False)
    assert counting.jobs == [] and len(result.skipped) == 4 and not result.done
    assert stamps(copy) == before


def test_force_recomputes_every_job(copy):
    before = stamps(copy)
    counting = Counting()
    result = run_sweep(make_jobs(copy), executor=counting, force=True, progress=False)
    assert counting.jobs == make_jobs(copy) and len(result.done) == 4
    after = stamps(copy)
    assert after.keys() == before.keys() and all(after[p] != before[p] for p in before)


def test_a_finished_run_of_another_configuration_is_refused_unless_forced(copy):
    jobs = [dataclasses.replace(job, T=40) for job in make_jobs(copy)]
    before = stamps(copy)
    with pytest.raises(InputValueError, match=r"p1/seed_1 was run with T 50 \(now 40\)"):
        run_sweep(jobs, executor=Counting(), progress=False)
    assert stamps(copy) == before
    run_sweep(jobs, executor=LocalExecutor(1), force=True, progress=False)
    assert all(len(load_finished(job.stem).records) == 40 for job in jobs)


def fail_after(monkeypatch, n):
    """Make every job after the first ``n`` raise (in this process)."""
    real, calls = executors.execute_job, []

    def execute(job, progress=False):
        calls.append(job)
        if len(calls) > n:
            raise RuntimeError(f"injected failure of seed {job.seed}")
        return real(job, progress)

    monkeypatch.setattr(executors, "execute_job", execute)


def test_failed_jobs_are_recorded_and_the_next_sweep_completes_only_them(
    swept, tmp_path, monkeypatch
):
    jobs = make_jobs(tmp_path)
    fail_after(monkeypatch, 2)
    result = run_sweep(jobs, executor=LocalExecutor(1), progress=False)
    assert result.done == jobs[:2] and [f.job for f in result.failed] == jobs[2:]
    for job in jobs[2:]:
        record = json.loads(failed_path(job.stem).read_text())
        assert record["config_hash"] == job.config_hash and record["job"] == job.identity
        assert record["error"] == f"RuntimeError: injected failure of seed {job.seed}"
        assert "Traceback" in record["traceback"] and "execute_job" in record["traceback"]
        assert not any(p.exists() for p in run_files(job.stem))
    monkeypatch.undo()
    before = stamps(tmp_path)
    counting = Counting()
    result = run_sweep(jobs, executor=counting, progress=False)
    assert counting.jobs == jobs[2:] and result.skipped == jobs[:2]
    assert all(stamps(tmp_path)[p] == t for p, t in before.items() if p.exists())
    assert not any(failed_path(job.stem).exists() for job in jobs)
    pd.testing.assert_frame_equal(records(tmp_path), records(swept), check_exact=True)


def test_compare_summarises_the_finished_runs_then_lists_the_failures(tmp_path, monkeypatch):
    fail_after(monkeypatch, 3)
    with pytest.raises(SweepFailedError, match=r"1 run\(s\) failed") as failed:
        compare(["linucb", "sigma2-linucb"], "h1:d=4", SEEDS, 30, tmp_path, progress=False)
    assert [(f.job.policy_spec, f.job.seed) for f in failed.value.failures] == [
        ("sigma2-linucb", 1)
    ]
    assert str(tmp_path / "sigma2-linucb" / "seed_1.failed.json") in str(failed.value)
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["policy"].tolist() == ["linucb", "sigma2-linucb"]
    assert summary["seeds"].tolist() == [2, 1]
    monkeypatch.undo()
    summary = compare(["linucb", "sigma2-linucb"], "h1:d=4", SEEDS, 30, tmp_path, progress=False)
    assert summary["seeds"].tolist() == [2, 2]


def test_one_and_two_local_workers_give_identical_records(swept, tmp_path):
    result = run_sweep(make_jobs(tmp_path), executor=LocalExecutor(2), progress=False)
    assert len(result.done) == 4
    got, want = records(tmp_path), records(swept)
    assert (got["policy"] == NEURAL).sum() == 2 * T
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_parquet_and_csv_runs_read_back_as_the_same_table(swept, tmp_path):
    run_sweep(make_jobs(tmp_path), executor=LocalExecutor(1), fmt="parquet", progress=False)
    names = sorted(p.name for p in (tmp_path / "p0").iterdir())
    assert names == ["seed_0.json", "seed_0.parquet", "seed_1.json", "seed_1.parquet"]
    pd.testing.assert_frame_equal(records(tmp_path), records(swept), check_exact=True)
    counting = Counting()  # finished in either format
    assert len(run_sweep(make_jobs(tmp_path), executor=counting, progress=False).skipped) == 4


def test_load_results_has_one_row_per_round_and_the_run_columns(swept):
    table = load_results(swept)
    assert list(table.columns) == list(RUN_COLUMNS) + list(COLUMNS)
    assert len(table) == len(POLICIES) * len(SEEDS) * T
    runs = table.drop_duplicates("run").set_index("run")
    jobs = {job.stem.relative_to(swept).as_posix(): job for job in make_jobs(swept)}
    assert sorted(runs.index) == sorted(jobs)
    for name, job in jobs.items():
        row = runs.loc[name]
        assert (row.policy, row.env, row.seed, row["T"]) == (job.policy_spec, "h1:d=4", job.seed, T)
        assert row.config_hash == job.config_hash
    assert table.groupby("run")["t"].agg(list).map(lambda t: t == list(range(1, T + 1))).all()


def test_load_results_leaves_out_what_is_not_a_finished_run(copy):
    (copy / "notes.json").write_text('{"a": 1}')
    (copy / "p0" / "seed_0.failed.json").write_text("{}")
    (copy / "p1" / "seed_1.csv").write_text("t\n1\n")
    with pytest.warns(UserWarning, match=r"p1/seed_1.csv is not the file .*left out"):
        table = load_results(copy)
    assert sorted(table["run"].unique()) == ["p0/seed_0", "p0/seed_1", "p1/seed_0"]


def test_load_results_of_a_folder_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(DataNotFoundError, match="no finished run under"):
        load_results(tmp_path)
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_results(tmp_path / "missing")


def test_the_config_hash_changes_with_every_field_but_the_stem():
    job = Job("linucb", "h1:d=4", 0, 50, Path("a/seed_0"), (0, 50), 100, None)
    changed = {
        "policy_spec": "linucb:alpha=0.5",
        "env_spec": "h2",
        "seed": 1,
        "T": 60,
        "checkpoints": (0,),
        "holdout_size": 99,
        "device": "cuda",
    }
    assert set(changed) | {"stem"} == {f.name for f in dataclasses.fields(Job)}
    hashes = {dataclasses.replace(job, **{k: v}).config_hash for k, v in changed.items()}
    assert len(hashes | {job.config_hash}) == len(changed) + 1
    assert dataclasses.replace(job, stem=Path("b/other")).config_hash == job.config_hash
    # without checkpoints, the hold-out size plays no part
    bare = dataclasses.replace(job, checkpoints=())
    assert dataclasses.replace(bare, holdout_size=99).config_hash == bare.config_hash


def test_device_reaches_only_the_policies_that_have_a_network():
    assert "device" not in executors.build_policy("linucb", None, "cuda").get_params()
    given = executors.build_policy(NEURAL + ",device=cpu", None, "cuda")
    assert given.get_params()["device"] == "cpu"  # the specification's own device wins
    if torch.cuda.is_available():
        assert executors.build_policy(NEURAL, None, "cuda").get_params()["device"] == "cuda"
    else:
        with pytest.raises(InputValueError, match="CUDA is not available"):
            executors.build_policy(NEURAL, None, "cuda")


def test_executors_are_made_by_backend():
    assert LocalExecutor().capacity == (os.cpu_count() or 1)
    assert make_executor(workers=3).capacity == 3
    with pytest.raises(InputValueError, match="backend"):
        make_executor("dask")
    with pytest.raises(InputValueError, match="address is for the Ray backend"):
        make_executor("local", address="auto")
    with pytest.raises(InputValueError, match="workers must be >= 1"):
        LocalExecutor(0)


def test_the_ray_backend_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RayUnavailableError, match=r'pip install "deepbandits\[ray\]"'):
        make_executor("ray")
    assert issubclass(RayUnavailableError, InputValueError)
    with pytest.raises(RayUnavailableError):
        RayExecutor("auto")


def test_jobs_sharing_a_stem_are_refused(tmp_path):
    job = make_jobs(tmp_path)[0]
    with pytest.raises(InputValueError, match="two jobs would write the same run"):
        run_sweep([job, dataclasses.replace(job, seed=5)], progress=False)
    with pytest.raises(InputValueError, match="fmt"):
        run_sweep([job], fmt="xlsx", progress=False)
