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
from deepbandits.experiments import jobs as job_module
from deepbandits.experiments.compare import compare
from deepbandits.experiments.executors import (
    WORKER_DIED,
    Job,
    LocalExecutor,
    RayExecutor,
    RayUnavailableError,
    applied_device,
    job_device,
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


def test_a_finished_run_whose_specification_now_resolves_to_other_settings_is_refused(
    copy, monkeypatch
):
    """The same specifications, but the environment now recommends another α (as when a
    dataset's recommended settings change): the saved runs are of the old settings, so they
    are refused, naming the parameter, and nothing is run or overwritten."""
    from deepbandits.envs.synthetic import SyntheticEnv

    monkeypatch.setattr(SyntheticEnv, "policy_defaults_for", lambda self, name: {"alpha": 0.5})
    before = stamps(copy)
    with pytest.raises(
        InputValueError, match=r"p0/seed_0 was run with policy alpha 0.02 \(now 0.5\)"
    ):
        run_sweep(make_jobs(copy), executor=Counting(), progress=False)
    assert stamps(copy) == before
    monkeypatch.undo()
    assert not run_sweep(make_jobs(copy), executor=Counting(), progress=False).done


def test_a_finished_run_is_reused_with_a_warning_when_its_environment_cannot_be_built_here(
    copy, monkeypatch
):
    """A sweep planned where the dataset is absent (a cluster's head): the settings cannot be
    compared, the runs are reused and a warning names each."""
    from deepbandits.experiments import sweep

    def missing(spec, T=None):
        raise DataNotFoundError("no data here")

    monkeypatch.setattr(sweep, "build_env", missing)
    with pytest.warns(UserWarning, match=r"seed_0: its settings were not compared.*no data here"):
        result = run_sweep(make_jobs(copy), executor=Counting(), progress=False)
    assert not result.done and len(result.skipped) == 4


def fail_after(monkeypatch, n):
    """Make every job after the first ``n`` raise (in this process)."""
    real, calls = job_module.execute_job, []

    def execute(job, progress=False):
        calls.append(job)
        if len(calls) > n:
            raise RuntimeError(f"injected failure of seed {job.seed}")
        return real(job, progress)

    monkeypatch.setattr(job_module, "execute_job", execute)


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


def names(out):
    return sorted(p.relative_to(out).as_posix() for p in Path(out).rglob("*") if p.is_file())


def in_format(out, fmt):
    """The names of the files of the sweep of :func:`make_jobs` in format ``fmt``."""
    return sorted(f"p{i}/seed_{s}.{ext}" for i in (0, 1) for s in SEEDS for ext in (fmt, "json"))


def test_parquet_and_csv_runs_read_back_as_the_same_table(swept, tmp_path):
    run_sweep(make_jobs(tmp_path), executor=LocalExecutor(1), fmt="parquet", progress=False)
    assert names(tmp_path) == in_format(tmp_path, "parquet")
    pd.testing.assert_frame_equal(records(tmp_path), records(swept), check_exact=True)


@pytest.mark.parametrize(("first", "then"), [("csv", "parquet"), ("parquet", "csv")])
def test_a_sweep_saves_finished_runs_of_the_other_format_in_its_own(swept, copy, first, then):
    run_sweep(make_jobs(copy), executor=LocalExecutor(1), fmt=first, progress=False)
    assert names(copy) == in_format(copy, first)
    counting = Counting()
    result = run_sweep(make_jobs(copy), executor=counting, fmt=then, progress=False)
    assert counting.jobs == [] and len(result.skipped) == 4  # not computed again
    assert names(copy) == in_format(copy, then)
    # the same runs, timings included: saved again, not computed again
    pd.testing.assert_frame_equal(load_results(copy), load_results(swept), check_exact=True)


def test_a_failure_record_is_removed_once_its_run_is_found_finished(copy):
    stale = failed_path(make_jobs(copy)[1].stem)
    stale.write_text("{}")
    result = run_sweep(make_jobs(copy), executor=Counting(), progress=False)
    assert len(result.skipped) == 4 and not stale.exists()


#: :func:`executors.attempt` as imported, before a test replaces it.
ATTEMPT = executors.attempt


def attempt_or_die(job, progress=False):
    """:func:`executors.attempt`, but the worker process dies on seed 1 (run in spawned
    workers, which import this module by name)."""
    if job.seed == 1:
        os._exit(1)
    return ATTEMPT(job, progress)


def test_a_worker_that_dies_fails_its_jobs_and_the_others_go_on(swept, tmp_path, monkeypatch):
    every = make_jobs(tmp_path)
    dying, other = [every[1], every[3]], every[0]  # the two seed-1 jobs start first
    monkeypatch.setattr(executors, "attempt", attempt_or_die)
    result = run_sweep([*dying, other], executor=LocalExecutor(2), progress=False)
    assert sorted((f.job for f in result.failed), key=dying.index) == dying
    assert result.done == [other]  # in a fresh pool: no job ended in the broken one
    for failure in result.failed:
        assert failure.error.startswith(f"BrokenProcessPool: {WORKER_DIED}")
        assert json.loads(failed_path(failure.job.stem).read_text())["error"] == failure.error
    monkeypatch.undo()
    counting = Counting()
    run_sweep([*dying, other], executor=counting, progress=False)
    assert counting.jobs == dying and not any(failed_path(j.stem).exists() for j in dying)
    want = records(swept)
    want = want[want["run"] != "p1/seed_0"].reset_index(drop=True)
    pd.testing.assert_frame_equal(records(tmp_path), want, check_exact=True)


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


def test_device_is_given_only_to_the_policies_that_have_a_network(tmp_path):
    assert applied_device("linucb", "cuda") is None
    assert applied_device("kernel-ucb", "cuda") is None
    assert applied_device(NEURAL, "cuda") == "cuda"
    assert applied_device(NEURAL + ",device=cpu", "cuda") is None  # its own device
    assert applied_device(NEURAL, None) is None
    compare(["linucb", NEURAL], "h1:d=4", [0], 30, tmp_path, progress=False)
    refused = r"seed_0 was run with device None \(now 'cpu'\)"
    with pytest.raises(InputValueError, match=refused) as error:
        compare(["linucb", NEURAL], "h1:d=4", [0], 30, tmp_path, device="cpu", progress=False)
    assert "linucb/seed_0" not in str(error.value)  # only the network's run is refused
    counting = Counting()  # the linear run is the same on any device: nothing to compute
    compare(["linucb"], "h1:d=4", [0], 30, tmp_path, executor=counting, device="cpu")
    assert counting.jobs == []


def test_the_ray_gpu_follows_where_the_networks_run(tmp_path):
    def job(spec, device):
        return Job(spec, "h1:d=4", 0, T, tmp_path / "x", device=device)

    assert job_device(job("linucb", "cuda")) is None
    assert job_device(job(NEURAL, "cuda")) == "cuda"
    assert job_device(job(NEURAL + ",device=cuda", None)) == "cuda"
    assert job_device(job(NEURAL + ",device=cpu", "cuda")) == "cpu"
    assert [executors._gpus(d) for d in (None, "cpu", "cuda", "cuda:0")] == [0, 0, 1, 1]


def test_compare_checks_the_device_before_any_run(tmp_path):
    bad = {"tpu": r"device 'tpu' is not a torch device"}
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        bad[f"cuda:{count}"] = rf"device 'cuda:{count}' was asked for, but this machine has"
    else:
        bad["cuda"] = r"device 'cuda' was asked for, but CUDA is not available"
    for device, message in bad.items():
        counting = Counting()
        with pytest.raises(InputValueError, match=message):
            compare(["linucb"], "h1:d=4", [0], 30, tmp_path, executor=counting, device=device)
        assert counting.jobs == [] and not list(tmp_path.rglob("*.json"))


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
