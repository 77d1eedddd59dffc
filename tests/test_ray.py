"""The Ray backend: a local Ray instance computes a sweep exactly as the local executor does."""

import dataclasses

import pandas as pd
import pytest

from deepbandits.errors import InputValueError
from deepbandits.experiments.compare import compare
from deepbandits.experiments.executors import Job, LocalExecutor, RayExecutor, check_device
from deepbandits.experiments.results import load_results
from deepbandits.experiments.sweep import failed_path, run_sweep
from test_sweep import NEURAL, TIMES, make_jobs

try:
    import ray
except ImportError:
    ray = None

pytestmark = pytest.mark.skipif(
    ray is None, reason='Ray is not installed (pip install "deepbandits[ray]")'
)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of 2 CPUs for the module."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_a_sweep_through_ray_equals_the_local_executors(local_ray, tmp_path):
    executor = RayExecutor()  # Ray is initialised: used as it is
    assert executor.capacity == 2
    jobs = make_jobs(tmp_path / "ray")
    bad = dataclasses.replace(jobs[0], policy_spec="linucb:alpha=-1", stem=tmp_path / "ray/bad")
    result = run_sweep([*jobs, bad], executor=executor, progress=False)
    assert sorted(result.done, key=jobs.index) == jobs
    assert [f.job for f in result.failed] == [bad] and "alpha" in result.failed[0].error
    assert "Traceback" in result.failed[0].traceback and failed_path(bad.stem).exists()
    run_sweep(make_jobs(tmp_path / "local"), executor=LocalExecutor(1), progress=False)
    pd.testing.assert_frame_equal(
        load_results(tmp_path / "ray").drop(columns=TIMES),
        load_results(tmp_path / "local").drop(columns=TIMES),
        check_exact=True,
    )


def test_num_cpus_is_refused_with_a_cluster_address():
    with pytest.raises(InputValueError, match="num_cpus sizes a new local Ray instance"):
        RayExecutor("auto", num_cpus=2)


def test_workers_are_the_cpus_of_the_instance_it_starts():
    assert RayExecutor(num_cpus=3).workers == 3
    assert RayExecutor().workers is None  # Ray decides: this machine's or a cluster's CPUs
    with pytest.raises(AttributeError):
        RayExecutor().workers = 2


def test_an_indexed_gpu_is_refused_before_any_job_is_submitted(tmp_path):
    executor = RayExecutor()
    refused = r"device 'cuda:1' names a GPU, but with the Ray backend Ray picks .*'cuda'"
    job = Job(NEURAL, "h1:d=4", 0, 30, tmp_path / "run", device="cuda:1")
    with pytest.raises(InputValueError, match=refused):
        next(executor.map_unordered([job]))
    own = dataclasses.replace(job, policy_spec=NEURAL + ",device=cuda:1", device=None)
    with pytest.raises(InputValueError, match=refused):
        next(executor.map_unordered([own]))
    with pytest.raises(InputValueError, match=refused):
        compare([NEURAL], "h1:d=4", [0], 30, tmp_path, executor=executor, device="cuda:1")
    assert not list(tmp_path.rglob("*.json"))
    check_device("cuda", executor)  # the cluster's GPUs, which this machine need not have
    check_device("cpu", executor)
    with pytest.raises(InputValueError, match="device 'tpu' is not a torch device"):
        check_device("tpu", executor)
